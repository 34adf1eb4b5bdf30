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

// The decoder masks of edgeattn_attention_mask, as plain data: key j is
// visible to row (b, i) of a (Q queries, K keys) call when
// start <= j < end (ranges), j < valid length, causal, j <= i + K - Q and,
// window w > 0, j > i + K - Q - w;
// a visible key's score gets bias[b or 0][head or 0][i][j] added, every
// other key scores -1e6 (d2l's rule).
struct Mask {
    bool causal = false;
    std::size_t window = 0;            // 0: none
    enum Ranges { none, per_batch, per_query } ranges_kind = none;
    std::vector<std::int32_t> ranges;  // [start, end) pairs, (B,2) or (B,Q,2)
    std::vector<double> bias;          // (bias_batch, bias_heads, Q, bias_keys), or empty
    std::size_t bias_batch = 1, bias_heads = 1, bias_keys = 0;
    // Causal and window by stream position (a window KV cache, whose keys
    // are the sinks and then the last tokens): key j at key_positions[j],
    // query i at first_query_position + i. Empty: by index, j <= i + K - Q.
    std::vector<std::int64_t> key_positions;
    std::int64_t first_query_position = 0;

    // The score semantics of ONNX Attention (edgeattn_attention_options and
    // the mask's alignment, right_window, alibi_max_bias), by their
    // definitions: query row i sits at key position p_i = i + K - Q
    // (bottom_right), i (top_left) or i + min(valid_len, K) - Q (valid_end);
    // causal sees j <= p_i, window j > p_i - w, right_window j < p_i + r.
    // A score is scale * q.k (scale 0: 1/sqrt(d)), then c tanh(s / c)
    // (softcap c > 0), then + bias - m_h |p_i - pos_j| (ALiBi, BLOOM's
    // slopes over H heads; pos_j = j, or key_positions[j] with the query at
    // first_query_position + i) on visible keys. Masked keys score -1e6
    // (d2l) or weigh exactly 0 (exclude: a row that sees nothing is zero).
    enum Align { bottom_right, top_left, valid_end } alignment = bottom_right;
    std::size_t right_window = 0;
    double alibi_max_bias = 0;
    double scale = 0, softcap = 0;
    bool exclude = false;
    // What w holds: the softmax, the scaled scores, the softcapped ones, or
    // what the softmax takes (masked keys -1e6, or -inf with exclude).
    enum WeightsOut { softmax, scores, softcapped, masked_scores } weights_output = softmax;

    std::int64_t position(std::size_t i, std::size_t Q, std::size_t K, std::int64_t valid_len) const;
    double alibi_slope(std::size_t head, std::size_t H) const;
    bool visible(std::size_t b, std::size_t i, std::size_t j, std::size_t Q, std::size_t K,
                 std::int64_t valid_len) const;
    // One row: dots[j] = q.k_j (unscaled) of row (b, i), query head `head`
    // of H, d features -> probs (the softmax) and w (weights_output).
    void row(std::size_t b, std::size_t head, std::size_t H, std::size_t i, std::size_t Q, std::size_t K,
             std::size_t d, std::int64_t valid_len, const double *dots, double *probs, double *w) const;
    double bias_at(std::size_t b, std::size_t head, std::size_t i, std::size_t j, std::size_t Q) const;
};

// Multi-head attention with grouped-query heads (Hkv dividing H: W_k, W_v
// (Hkv*h/H, in), head n reads key/value head n / (H/Hkv)), valid_lens and
// a mask. out (B,Q,h), w (B,H,Q,K).
void multi_head_attention_masked(std::size_t B, std::size_t Q, std::size_t K, std::size_t qs, std::size_t ks,
                                 std::size_t vs, std::size_t h, std::size_t H, std::size_t Hkv,
                                 const double *queries, const double *keys, const double *values,
                                 const ValidLens &vl, const Mask &mask, const MhaWeights &W, double *out,
                                 double *w);

// Dot-product attention with valid_lens and a mask (bias_heads 1).
void dot_product_attention_masked(std::size_t B, std::size_t Q, std::size_t K, std::size_t d, std::size_t v,
                                  const double *queries, const double *keys, const double *values,
                                  const ValidLens &vl, const Mask &mask, double *out, double *w);

// Additive attention with valid_lens and a mask (bias_heads 1): the bias is
// added to a visible key's score w_v . tanh(W_q q + W_k k).
void additive_attention_masked(std::size_t B, std::size_t Q, std::size_t K, std::size_t qs, std::size_t ks,
                               std::size_t vs, std::size_t h, const double *queries, const double *keys,
                               const double *values, const ValidLens &vl, const Mask &mask, const double *W_q,
                               const double *W_k, const double *w_v, double *out, double *w);

// torch.nn.Linear: x (n, in) W^T (+ bias) -> y (n, out), W (out, in).
void linear(std::size_t n, std::size_t in, std::size_t out, const double *x, const double *W, const double *bias,
            double *y);

// P (max_len, d): sin in even columns, cos in odd ones, of i / 10000^(2j/d).
void positional_encoding_table(std::size_t max_len, std::size_t d, double *P);

// The value of IEEE binary16 bits by the format's definition:
// (-1)^s 2^(e-15) (1 + m/1024), subnormal (-1)^s 2^-14 (m/1024), inf, NaN.
double half_value(std::uint16_t h);

// The sizes of multi_head_attention_general: hv the concatenated value
// heads (0: h), each of dv = hv / H features; Hkv 0 means H.
struct MhaSizes {
    std::size_t B, Q, K, qs, ks, vs, h, H, Hkv, hv;
};

// Multi-head attention in ONNX Attention's general form: grouped-query
// heads, value heads of dv = hv / H features (W_v (Hkv*dv, v), b_v (Hkv*dv),
// W_o (h, hv)), valid_lens and a mask; a null matrix is a projection left
// out, its rows as given: queries (B,Q,h), keys (B,K,Hkv*h/H), values
// (B,K,Hkv*dv), and without W_o out is the concatenated heads (B,Q,hv).
// out (B,Q,h or hv), w (B,H,Q,K) or nullptr.
void multi_head_attention_general(const MhaSizes &z, const double *queries, const double *keys,
                                  const double *values, const ValidLens &vl, const Mask &mask, const MhaWeights &W,
                                  double *out, double *w);

// x rounded to the nearest binary16 value, ties to even (beyond the
// largest, +-inf), by the format's definition.
double round_to_half(double x);

} // namespace edgeattn_ref

#endif
