// The C++ example README.md points to: d2l's Transformer input block with
// the fixed-size API. Dimensions are template parameters; the workspace
// lives in the object, the positional table in .rodata. Built and run by
// the tests.
#include <edgeattn/edgeattn.hpp>

#include <cstdio>

constexpr std::size_t batch = 2, tokens = 10, d = 32, heads = 4, max_len = 1000;

static float W_q[d * d], W_k[d * d], W_v[d * d], W_o[d * d];  // (out, in), e.g. from a state_dict
static float X[batch * tokens * d], output[batch * tokens * d];
static float weights[batch * heads * tokens * tokens];

int main() {
    for (std::size_t i = 0; i < d * d; ++i)
        W_q[i] = W_k[i] = W_v[i] = W_o[i] = static_cast<float>(i % 13) / 64.0f - 0.09f;

    // X + P, then 4-head self-attention; sizeof(block) is all the RAM it uses.
    const edgeattn_weights w{{EDGEATTN_DTYPE_F32, W_q, nullptr}, {EDGEATTN_DTYPE_F32, W_k, nullptr},
                             {EDGEATTN_DTYPE_F32, W_v, nullptr}, {EDGEATTN_DTYPE_F32, W_o, nullptr},
                             nullptr, nullptr, nullptr, nullptr};
    static edgeattn::PositionalSelfAttention<batch, tokens, d, heads, max_len> block(w);
    const int32_t lens[batch] = {10, 7};
    const edgeattn::ValidLens valid_lens{EDGEATTN_VALID_LENS_PER_BATCH, lens};
    if (edgeattn::Status st = block.forward(X, &valid_lens, output, weights)) {
        std::fprintf(stderr, "forward: %s\n", edgeattn_status_str(st));
        return 1;
    }
    // P[1, 0] = sin(1), evaluated by the compiler
    static_assert(edgeattn::positional_encoding_table<max_len, d>(0, 1) == 1.0f, "cos(0)");
    std::printf("RAM %zu bytes; output[0] = %.6f; key 9 of batch 1 has weight %.1f\n", sizeof block,
                output[0], weights[(1 * heads) * tokens * tokens + 9]);
    return 0;
}
