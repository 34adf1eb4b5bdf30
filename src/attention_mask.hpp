// Which keys each query row sees: d2l's valid lengths, and the decoder
// masks of edgeattn_attention_mask (causal, key ranges) with its additive
// bias. Every combination leaves one interval [lo, hi) of visible keys per
// row; the kernels compute scores only there and treat the rest as d2l's
// -1e6 (so a row that sees nothing is uniform, 1/K).
#ifndef EDGEATTN_ATTENTION_MASK_HPP
#define EDGEATTN_ATTENTION_MASK_HPP

#include "features.hpp"
#include "kernels/kernel_table.hpp"  // key_interval
#include "validate.hpp"

namespace edgeattn {
namespace detail {

// A window KV cache with sinks: its keys are the sinks (stream positions
// 0 .. sinks - 1) and then the last tokens; batch element b has dropped
// positions[b] - capacity tokens between them once its window wrapped. A
// rule that keeps the keys before a point (causal: up to the query's own
// token; right_window: up to r - 1 past it) keeps the sinks before it by
// stream position: `keys_before` gives one past the last key kept. Reached
// through a pointer, so programs without a window cache do not link it.
struct stream_causal {
    const int32_t *positions;
    size_t sinks, capacity;
    // Tokens of batch element b dropped between the sinks and the window
    // (0 or less: the window has not wrapped); each sink lies this much
    // further back in the stream than its index says.
    int64_t dropped(size_t b) const { return static_cast<int64_t>(positions[b]) - static_cast<int64_t>(capacity); }
    // One past the last key of batch element b that lies before logical
    // position `reach` (a held-key index; a window key j is before it when
    // j < reach), for reach < sinks: the sinks before it by stream position.
    size_t (*keys_before)(const stream_causal &s, size_t b, int64_t reach);
    // The first key a sliding window of w keys leaves to the query at
    // logical position p (its held-key index) whose window starts at `lo`
    // by index: past it, any sinks whose stream positions lie w or more
    // behind the query's.
    size_t (*window_start)(const stream_causal &s, size_t b, int64_t p, size_t w, size_t lo);
};

struct attention_mask_view;

// ALiBi's term of a row (src/alibi.cpp): scores of keys [lo, hi) of row i
// (query head `head`, batch element b, `queries` rows over `keys` keys),
// the first at `scores`, get -m_head |p_i - pos_j| added; `relative`
// (scores bound for the softmax) lets it measure from the row's nearest
// visible key where the softmax cannot tell the difference. Reached through
// a pointer, so programs that never set alibi_max_bias do not link it.
struct alibi_term {
    void (*add)(const kernel_table &k, const attention_mask_view &mask, size_t b, size_t head, size_t i,
                size_t queries, size_t keys, size_t lo, size_t hi, float *scores, bool relative);
};
extern const alibi_term alibi_scores;

struct attention_mask_view {
    valid_lens_view lens;
    const int32_t *ranges = nullptr;  // [start, end) pairs
    size_t ranges_batch_stride = 0;   // in pairs: 1 per batch, Q per query
    size_t ranges_query_stride = 0;   // 0 per batch, 1 per query
    bool causal = false;
    size_t window = 0;                // 0: none; w: keys j > i + K - Q - w
    // Whether ranges, causal, window or right_window is set (found once,
    // by check_attention_mask: a row's keys are asked per row and block).
    bool by_position = false;
    const float *bias = nullptr;      // (bias_batch, bias_heads, Q, bias_keys)
    size_t bias_batch_stride = 0;     // 0 when broadcast over the batch
    size_t bias_head_stride = 0;      // 0 when broadcast over the heads
    size_t bias_row_stride = 0;
    // A window KV cache with sinks (kv_cache_attend.cpp): causal by stream
    // position; nullptr otherwise.
    const struct stream_causal *stream = nullptr;
    int alignment = EDGEATTN_ALIGN_BOTTOM_RIGHT;  // where p_i lies (edgeattn_query_alignment)
    size_t right_window = 0;                     // 0: none; r: keys j < p_i + r
    // ALiBi: the maximum bias and the heads H its slopes spread over; alibi
    // non-null exactly when the bias is set.
    float alibi_max_bias = 0.0f;
    size_t alibi_heads = 1;
    const alibi_term *alibi = nullptr;
    // The options that shape the scores (edgeattn_attention_options).
    float scale = 0.0f;    // 0: 1/sqrt(d)
    float softcap = 0.0f;  // 0: none
    bool exclude = false;  // EDGEATTN_MASKING_EXCLUDE
    int weights_output = EDGEATTN_WEIGHTS_SOFTMAX;
    // No softcap, no EXCLUDE and the softmax's weights (set with them by
    // read_score_options, once a call: the rows ask per slice).
    bool plain_scores = true;

    // The position p_i of row i of batch element b (alignment), signed: a
    // row of VALID_END over fewer valid keys than queries lies before key 0.
    // Out of line, as of_row.
    int64_t position(size_t b, size_t i, size_t queries, size_t keys) const;

    // The keys row i of batch element b sees, among `keys`, in a call of
    // `queries` rows (causal puts the queries at the last key positions).
    // Out of line: the kernels ask per row and key block, and inlined in
    // every loop it grew the Cortex-M image by kilobytes.
    key_interval of_row(size_t b, size_t i, size_t queries, size_t keys) const;
    // of_row's rule for ranges, causal and windows, which need the position.
    __attribute__((noinline)) key_interval of_positioned_row(size_t b, size_t i, size_t queries,
                                                             size_t keys) const;

    // Whether a row's keys depend on its position (ranges, causal or a
    // window; of_row's rule beyond valid lengths).
    bool positioned() const { return by_position; }
    // Whether every row sees every key (no valid lengths either).
    bool masks_nothing() const { return !lens.lens && !positioned(); }

    // The options as the kernels test them: false in a build without the
    // feature (features.hpp), whose calls refuse it, so its code drops out.
    // Whether visible scores get terms added: the bias, ALiBi.
    bool adds_terms() const { return (with_mask_bias && bias) || alibi_term_of(); }
    const alibi_term *alibi_term_of() const { return with_alibi ? alibi : nullptr; }
    bool caps_scores() const { return with_score_options && softcap != 0.0f; }
    bool excludes() const { return with_score_options && exclude; }
    // Whether the attention weights asked for are the softmax's.
    bool weighs_softmax() const { return !with_score_options || weights_output == EDGEATTN_WEIGHTS_SOFTMAX; }
    // !caps_scores() && !excludes() && weighs_softmax(), found once.
    bool scores_plain() const { return plain_scores; }

    // Row i of the bias for batch element b and head `head`, or nullptr.
    const float *bias_row(size_t b, size_t head, size_t i) const {
        return with_mask_bias && bias ? bias + b * bias_batch_stride + head * bias_head_stride + i * bias_row_stride
                                      : nullptr;
    }
};

// A mask view of valid lengths alone (d2l's ops).
inline attention_mask_view mask_of_valid_lens(const valid_lens_view &lens) {
    attention_mask_view m;
    m.lens = lens;
    return m;
}

// Checks `mask` (NULL: none) for a call of (batch, queries) rows, `heads`
// heads and bias rows of at least `keys` floats (bias_keys 0 means `keys`);
// fills `view` (valid lengths untouched) and the spans the mask reads, for
// the overlap checks (num_spans of them, at most 2).
edgeattn_status check_attention_mask(const edgeattn_attention_mask *mask, size_t batch,
                                     size_t queries, size_t heads, size_t keys,
                                     attention_mask_view &view, tensor_span spans[2],
                                     size_t &num_spans);

}  // namespace detail
}  // namespace edgeattn

#endif
