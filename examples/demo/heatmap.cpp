#include "heatmap.hpp"

#include <cstdio>

namespace demo {
namespace {

// " ░▒▓█" spelled as UTF-8 bytes, so the source compiles to the same output
// whatever execution character set a compiler assumes.
const char *const shades[] = {" ", "\xE2\x96\x91", "\xE2\x96\x92", "\xE2\x96\x93",
                              "\xE2\x96\x88"};
constexpr int levels = 4;  // shades after the blank

// Blank only for exactly 0, so a masked key never looks like a small weight.
// Positive weights split [smallest, largest] into `levels` equal parts: at
// initialisation the weights are close to uniform, and a scale from 0 would
// paint every unmasked cell the same.
int shade_of(float weight, float smallest, float largest) {
    if (!(weight > 0.0f)) return 0;
    if (!(largest > smallest)) return levels;
    const int level = 1 + static_cast<int>((weight - smallest) / (largest - smallest) * levels);
    return level > levels ? levels : level;
}

}  // namespace

void print_heatmap(const float *weights, std::size_t queries, std::size_t keys) {
    float smallest = 0.0f, largest = 0.0f;  // over the positive weights
    for (std::size_t i = 0; i < queries * keys; ++i) {
        if (!(weights[i] > 0.0f)) continue;
        if (smallest == 0.0f || weights[i] < smallest) smallest = weights[i];
        if (weights[i] > largest) largest = weights[i];
    }

    // Header: key indices over the cells (three characters wide, about
    // square in a terminal, room for "k0 ") and over the numbers.
    std::printf("            ");
    for (std::size_t k = 0; k < keys; ++k) std::printf("k%-2zu", k);
    std::printf("   ");
    for (std::size_t k = 0; k < keys; ++k) std::printf("  key %zu", k);
    std::printf("\n");

    for (std::size_t q = 0; q < queries; ++q) {
        const float *row = weights + q * keys;
        std::printf("  query %zu  |", q);
        for (std::size_t k = 0; k < keys; ++k) {
            const char *cell = shades[shade_of(row[k], smallest, largest)];
            std::printf("%s%s%s", cell, cell, cell);
        }
        std::printf("|  ");
        for (std::size_t k = 0; k < keys; ++k) std::printf(" %6.4f", row[k]);
        std::printf("\n");
    }
}

void print_heatmap_legend() {
    std::printf("  shades: '%s' = 0 (masked); %s %s %s %s = quarters of the range from the\n"
                "  map's smallest nonzero weight to its largest\n",
                shades[0], shades[1], shades[2], shades[3], shades[4]);
}

}  // namespace demo
