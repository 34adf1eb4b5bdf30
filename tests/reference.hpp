// An independent float64 reference of the d2l attention semantics: plain
// loops, no SIMD, no blocking, nothing shared with the library, so that a
// disagreement points at one side. Shapes in d2l's (batch, queries, keys)
// notation; weights in torch.nn.Linear's (out, in) layout; all row-major.
#ifndef EDGEATTN_TESTS_REFERENCE_HPP
#define EDGEATTN_TESTS_REFERENCE_HPP

#include <cstddef>
#include <cstdint>
#include <vector>

namespace edgeattn_ref {

// d2l's valid_lens: none, (B) per batch element, or (B,Q) per query.
struct ValidLens {
    enum Kind { none, per_batch, per_query } kind = none;
    std::vector<std::int32_t> lens;

    // Valid length of query row (b, i); K (nothing masked) when none.
    std::int64_t of(std::size_t b, std::size_t i, std::size_t Q, std::size_t K) const;
};

// X, Y (B,Q,K): softmax over keys after setting X[b,i,j] = -1e6 for j >= len.
void masked_softmax(std::size_t B, std::size_t Q, std::size_t K, const double *X, const ValidLens &vl, double *Y);

// queries (B,Q,d), keys (B,K,d), values (B,K,v) -> out (B,Q,v), w (B,Q,K).
void dot_product_attention(std::size_t B, std::size_t Q, std::size_t K, std::size_t d, std::size_t v,
                           const double *queries, const double *keys, const double *values, const ValidLens &vl,
                           double *out, double *w);

// score = w_v . tanh(W_q q + W_k k); W_q (h,q), W_k (h,k), w_v (1,h).
// queries (B,Q,q), keys (B,K,k), values (B,K,v) -> out (B,Q,v), w (B,Q,K).
void additive_attention(std::size_t B, std::size_t Q, std::size_t K, std::size_t qs, std::size_t ks, std::size_t vs,
                        std::size_t h, const double *queries, const double *keys, const double *values,
                        const ValidLens &vl, const double *W_q, const double *W_k, const double *w_v, double *out,
                        double *w);

// Multi-head weights; a null bias means none.
struct MhaWeights {
    const double *W_q, *W_k, *W_v, *W_o;     // (h,q), (h,k), (h,v), (h,h)
    const double *b_q, *b_k, *b_v, *b_o;     // (h) or nullptr
};

// d2l's MultiHeadAttention with H heads of h/H features.
// queries (B,Q,q), keys (B,K,k), values (B,K,v) -> out (B,Q,h), w (B,H,Q,K).
void multi_head_attention(std::size_t B, std::size_t Q, std::size_t K, std::size_t qs, std::size_t ks,
                          std::size_t vs, std::size_t h, std::size_t H, const double *queries, const double *keys,
                          const double *values, const ValidLens &vl, const MhaWeights &W, double *out, double *w);

// P (max_len, d): sin in even columns, cos in odd ones, of i / 10000^(2j/d).
void positional_encoding_table(std::size_t max_len, std::size_t d, double *P);

} // namespace edgeattn_ref

#endif
