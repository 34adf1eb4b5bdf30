// Flash and RAM of one fixed-size PositionalSelfAttention module on the Cortex-M4F
// (ports/cortex-m4f.cmake), for the footprint table of docs/ports.md. Built once per
// shape by tests/firmware/CMakeLists.txt:
//   FOOTPRINT_BATCH, FOOTPRINT_TOKENS, FOOTPRINT_DIM, FOOTPRINT_HEADS, FOOTPRINT_MAX_LEN
// The weights are const arrays (flash), as a real model's would be; X, the
// output, the attention weights and the module object (its workspace and
// X + P inside) are static RAM. It runs one forward pass under QEMU and
// reports sizeof(module) and the stack the call used (the stack below main's
// frame is painted first); `arm-none-eabi-size` gives the rest. The status
// is printed as its number: edgeattn_status_str's table of messages (1.2 KB)
// is the test's need, not the module's.
#include <edgeattn/edgeattn.hpp>

#include <cstddef>
#include <cstdint>
#include <new>

#include "report.hpp"
#include "stack_probe.hpp"

namespace {

constexpr std::size_t B = FOOTPRINT_BATCH, N = FOOTPRINT_TOKENS, D = FOOTPRINT_DIM, H = FOOTPRINT_HEADS,
                      MaxLen = FOOTPRINT_MAX_LEN;
using Module = edgeattn::PositionalSelfAttention<B, N, D, H, MaxLen>;

// W_q, W_k, W_v, W_o (d, d): in flash. A small non-zero pattern keeps them
// out of .bss whatever the compiler thinks of all-zero constants. With
// FOOTPRINT_INT8 they are int8 with a float scale per row (EDGEATTN_DTYPE_INT8).
#if defined(FOOTPRINT_INT8)
struct Weights {
    std::int8_t w[4][D * D];
    float scales[4][D];
    constexpr Weights() : w{}, scales{} {
        for (std::size_t m = 0; m < 4; ++m) {
            for (std::size_t i = 0; i < D * D; ++i) w[m][i] = static_cast<std::int8_t>(i % 7 == 0 ? m + 1 : 0);
            for (std::size_t o = 0; o < D; ++o) scales[m][o] = 0.01f;
        }
    }
    edgeattn_weights typed() const {
        return {{EDGEATTN_DTYPE_INT8, w[0], scales[0]}, {EDGEATTN_DTYPE_INT8, w[1], scales[1]},
                {EDGEATTN_DTYPE_INT8, w[2], scales[2]}, {EDGEATTN_DTYPE_INT8, w[3], scales[3]},
                nullptr, nullptr, nullptr, nullptr};
    }
};
#else
struct Weights {
    float w[4][D * D];
    constexpr Weights() : w{} {
        for (std::size_t m = 0; m < 4; ++m)
            for (std::size_t i = 0; i < D * D; ++i) w[m][i] = (i % 7 == 0 ? 0.01f : 0.0f) * static_cast<float>(m + 1);
    }
    edgeattn_weights typed() const {
        return {{EDGEATTN_DTYPE_F32, w[0], nullptr, EDGEATTN_ARITHMETIC_FLOAT}, {EDGEATTN_DTYPE_F32, w[1], nullptr, EDGEATTN_ARITHMETIC_FLOAT},
                {EDGEATTN_DTYPE_F32, w[2], nullptr, EDGEATTN_ARITHMETIC_FLOAT}, {EDGEATTN_DTYPE_F32, w[3], nullptr, EDGEATTN_ARITHMETIC_FLOAT},
                nullptr, nullptr, nullptr, nullptr};
    }
};
#endif
constexpr Weights weights{};

alignas(64) unsigned char module_storage[sizeof(Module)];
alignas(64) float X[B * N * D];
alignas(64) float output[B * N * D];
alignas(64) float attention_weights[B * H * N * N];

}  // namespace

int main() {
    Module *module = ::new (static_cast<void *>(module_storage)) Module(weights.typed());
    for (std::size_t i = 0; i < B * N * D; ++i) X[i] = static_cast<float>(i % 13) * 0.1f;
    std::int32_t lens[B];
    for (std::size_t b = 0; b < B; ++b) lens[b] = static_cast<std::int32_t>(N - b);
    const edgeattn::ValidLens valid_lens{EDGEATTN_VALID_LENS_PER_BATCH, lens};
    edgeattn::Status st{};
    const std::size_t stack_bytes =
        firmware::stack_used(16, [&] { st = module->forward(X, &valid_lens, output, attention_weights); });
    firmware::Line() << "PositionalSelfAttention<batch " << B << ", tokens " << N << ", d " << D << ", heads " << H
                     << ", max_len " << MaxLen << ">"
#if defined(FOOTPRINT_INT8)
                     << " with int8 weights"
#endif
                     << ": sizeof " << sizeof(Module) << " bytes (RAM), "
                     << "positional table " << sizeof(Module::positions) << " bytes (flash), weights "
                     << sizeof weights << " bytes (flash), stack " << stack_bytes
                     << " bytes; forward status " << static_cast<int>(st);
    // A call deeper than the probe would not have been measured.
    return st == EDGEATTN_OK && stack_bytes < firmware::stack_probe_words * 4 ? 0 : 1;
}
