// A C++17 program on edgeattn's fixed-size API: d2l's self-attention shapes
// (batch 2, 4 tokens, num_hiddens 100, 5 heads, valid lengths 3 and 2) with
// positional encoding; the attention weights of every head must be a
// distribution over the valid keys. Prints "consumer_cpp: ok".
#include <edgeattn/edgeattn.hpp>

// Built without OpenMP: the package passes on OpenMP's runtime (link) only,
// never -fopenmp (find_package, add_subdirectory and pkg-config alike).
#ifdef _OPENMP
#error "_OPENMP is defined: the edgeattn package put -fopenmp on a consumer's compile"
#endif

#include <cmath>
#include <cstdint>
#include <cstdio>

namespace {

constexpr std::size_t batch = 2, tokens = 4, d = 100, heads = 5;
float W[4][d * d];
float X[batch * tokens * d], output[batch * tokens * d];
float weights[batch * heads * tokens * tokens];
edgeattn::PositionalSelfAttention<batch, tokens, d, heads> block(edgeattn_weights{
    {EDGEATTN_DTYPE_F32, W[0], nullptr}, {EDGEATTN_DTYPE_F32, W[1], nullptr},
    {EDGEATTN_DTYPE_F32, W[2], nullptr}, {EDGEATTN_DTYPE_F32, W[3], nullptr},
    nullptr, nullptr, nullptr, nullptr});

}  // namespace

int main() {
    for (std::size_t m = 0; m < 4; ++m)
        for (std::size_t i = 0; i < d * d; ++i) W[m][i] = std::sin(0.37f * static_cast<float>(i + 11 * m)) * 0.1f;
    for (std::size_t i = 0; i < batch * tokens * d; ++i) X[i] = std::cos(0.11f * static_cast<float>(i));
    const std::int32_t lens[batch] = {3, 2};
    const edgeattn::ValidLens valid_lens{EDGEATTN_VALID_LENS_PER_BATCH, lens};
    if (edgeattn::Status st = block.forward(X, &valid_lens, output, weights)) {
        std::fprintf(stderr, "consumer_cpp: forward: %s\n", edgeattn_status_str(st));
        return 1;
    }
    for (std::size_t row = 0; row < batch * heads * tokens; ++row) {
        const std::size_t b = row / (heads * tokens);
        double sum = 0;
        for (std::size_t k = 0; k < tokens; ++k) {
            const float w = weights[row * tokens + k];
            if (!std::isfinite(w) || (k >= static_cast<std::size_t>(lens[b]) && w != 0.0f)) {
                std::fprintf(stderr, "consumer_cpp: weight %g at row %zu key %zu\n", w, row, k);
                return 1;
            }
            sum += w;
        }
        if (std::fabs(sum - 1.0) > 1e-5) {
            std::fprintf(stderr, "consumer_cpp: row %zu sums to %g\n", row, sum);
            return 1;
        }
    }
    std::printf("consumer_cpp: sizeof(PositionalSelfAttention<2, 4, 100, 5>) = %zu bytes, ok\n", sizeof block);
    return 0;
}
