// RoPE on the board: a table made at run time (edgeattn_rope_table, soft
// double precision) and a constexpr one in flash (edgeattn::rope_table),
// bit-identical; both against float64 cos / sin (newlib's libm), and
// edgeattn_rope_apply, NeoX and GPT-J, partial rotary and negative
// positions, against the float64 rotation, in place giving the same bits.
// The bounds are the hosted test's (tests/test_rope.cpp): float rounding of
// the table (2^-25 near 1, plus the angles' double error), 3 float
// roundings of a pair's |x| + |y| for the rotation.
#include "rope_checks.hpp"

#include <edgeattn/edgeattn.h>
#include <edgeattn/rope.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "report.hpp"

namespace firmware {
namespace {

constexpr std::size_t kPositions = 64, kDims = 16;
constexpr double kTheta = 500000.0, kScale = 2.0;

// In flash (.rodata); the check below reads its address.
constexpr auto flash_table = edgeattn::rope_table<kPositions, kDims>(kTheta, kScale);

float ram_table[kPositions * kDims];
// (B, T, heads, head_size) = (2, 5, 2, 20): 16 rotary features of 20.
constexpr std::size_t B = 2, T = 5, H = 2, D = 20;
float X[B * T * H * D], Y[B * T * H * D], Z[B * T * H * D];

double angle(double p, std::size_t i) {
    return p / kScale * (1.0 / std::pow(kTheta, 2.0 * static_cast<double>(i) / static_cast<double>(kDims)));
}

struct Result {
    const char *what;
    bool ok = true;
    double worst = 0;  // error over its bound
    void check(double err, double bound) {
        if (!(err <= bound)) ok = false;
        if (err / bound > worst) worst = err / bound;
    }
};

void report(const Result &r, std::size_t &passed, std::size_t &failed) {
    if (r.ok) {
        ++passed;
        Line() << "ok     RoPE " << r.what << " (worst " << r.worst << " of its bound)";
    } else {
        ++failed;
        Line() << "FAIL   RoPE " << r.what << " (worst " << r.worst << " of its bound)";
    }
}

Result tables() {
    Result r{"table: runtime == constexpr in flash, vs float64"};
    edgeattn_rope_table_config c{};
    c.max_positions = kPositions;
    c.rotary_dims = kDims;
    c.theta = kTheta;
    c.position_scale = kScale;
    if (edgeattn_rope_table(&c, ram_table, kPositions * kDims) != EDGEATTN_OK) r.ok = false;
    if (std::memcmp(ram_table, flash_table.data(), sizeof ram_table) != 0) r.ok = false;
    // Flash: below the RAM of the board's memory map (its linker script's).
    if (reinterpret_cast<std::uintptr_t>(flash_table.data()) >= EDGEATTN_FIRMWARE_RAM_START) r.ok = false;
    for (std::size_t p = 0; p < kPositions; ++p)
        for (std::size_t i = 0; i < kDims / 2; ++i) {
            const double a = angle(static_cast<double>(p), i), bound = 0x1p-25 + 1e-14;
            r.check(std::fabs(ram_table[p * kDims + i] - std::cos(a)), bound);
            r.check(std::fabs(ram_table[p * kDims + kDims / 2 + i] - std::sin(a)), bound);
        }
    return r;
}

Result apply(edgeattn_rope_layout layout, const char *what) {
    Result r{what};
    static const std::int32_t positions[B] = {-3, 50};  // left padding, a late start
    const edgeattn_rope rope = flash_table.rope(layout, positions);
    const edgeattn_rope_dims dims{B, T, H, D};
    for (std::size_t k = 0; k < B * T * H * D; ++k)
        X[k] = static_cast<float>(static_cast<int>((k * 37) % 101) - 50) / 16.0f;
    if (edgeattn_rope_apply(&dims, &rope, X, Y) != EDGEATTN_OK) r.ok = false;
    std::memcpy(Z, X, sizeof Z);
    if (edgeattn_rope_apply(&dims, &rope, Z, Z) != EDGEATTN_OK) r.ok = false;
    if (std::memcmp(Y, Z, sizeof Y) != 0) r.ok = false;
    const std::size_t half = kDims / 2;
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t h = 0; h < H; ++h) {
                const std::size_t base = ((b * T + t) * H + h) * D;
                const double p = positions[b] + static_cast<double>(t);
                for (std::size_t i = 0; i < half; ++i) {
                    const std::size_t a = base + (layout == EDGEATTN_ROPE_NEOX ? i : 2 * i);
                    const std::size_t e = base + (layout == EDGEATTN_ROPE_NEOX ? i + half : 2 * i + 1);
                    const double c = std::cos(angle(p, i)), s = std::sin(angle(p, i)), x = X[a], y = X[e];
                    const double bound = 3.0 * 0x1p-24 * (std::fabs(x) + std::fabs(y)) + 1e-30;
                    r.check(std::fabs(Y[a] - (x * c - y * s)), bound);
                    r.check(std::fabs(Y[e] - (y * c + x * s)), bound);
                }
                if (std::memcmp(Y + base + kDims, X + base + kDims, (D - kDims) * sizeof(float)) != 0) r.ok = false;
            }
    return r;
}

}  // namespace

void run_rope_checks(std::size_t &passed, std::size_t &failed) {
    report(tables(), passed, failed);
    report(apply(EDGEATTN_ROPE_NEOX, "apply NeoX (rotate_half), partial, negative positions"), passed, failed);
    report(apply(EDGEATTN_ROPE_GPTJ, "apply GPT-J (rotate_every_two), partial, negative positions"), passed, failed);
}

}  // namespace firmware
