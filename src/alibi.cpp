// ALiBi (Press et al., "Train Short, Test Long") computed in the kernel: a
// visible score of key j in row i of query head h gets -m_h |p_i - pos_j|,
// with BLOOM's and ggml's slopes. Out of line and reached through
// alibi_scores, so an image that never sets the bias does not carry it.
#include "attention_mask.hpp"

namespace edgeattn {
namespace detail {

namespace {

// 2^e for e <= 0 through the kernels' exp (no libm powf on a
// microcontroller): m0^(h+1) = 2^(-max_bias (h+1) / n), m1^(2(h-n)+1) =
// 2^(-max_bias (2(h-n)+1) / (2n)), n the largest power of 2 <= H.
float slope_of(const kernel_table &k, float max_bias, size_t head, size_t heads) {
    size_t n = 1;
    while (n * 2 <= heads) n *= 2;
    const float exponent = head < n ? -max_bias * static_cast<float>(head + 1) / static_cast<float>(n)
                                    : -max_bias * static_cast<float>(2 * (head - n) + 1) / static_cast<float>(2 * n);
    float x = exponent * 0.693147180559945309f, slope = 0.0f;
    k.exp(&x, &slope, 1);  // 0 below 2^-126
    return slope;
}

void add_alibi(const kernel_table &k, const attention_mask_view &mask, size_t b, size_t head, size_t i,
               size_t queries, size_t keys, size_t lo, size_t hi, float *scores) {
    const float slope = slope_of(k, mask.alibi_max_bias, head, mask.alibi_heads);
    const int64_t p = mask.position(b, i, queries, keys);
    // A wrapped window cache with sinks: its window keys lie at their
    // stream positions, index + dropped, and so does the query; the sinks
    // keep theirs, so they are `dropped` further from it.
    int64_t sinks_behind = 0;
    size_t sinks = 0;
    if (mask.stream && mask.alignment != EDGEATTN_ALIGN_TOP_LEFT) {
        const int64_t dropped = mask.stream->dropped(b);
        if (dropped > 0) {
            sinks_behind = dropped;
            sinks = mask.stream->sinks;
        }
    }
    for (size_t j = lo; j < hi; ++j) {
        int64_t distance = p - static_cast<int64_t>(j) + (j < sinks ? sinks_behind : 0);
        if (distance < 0) distance = -distance;
        // Through size_t: a 32-bit target converts it in one instruction,
        // where int64 to float is a libgcc call (1.5 KB of Cortex-M4F
        // flash with the soft-float additions it brings). A distance
        // fits: at most the keys plus the stream's dropped tokens (int32).
        scores[j - lo] -= slope * static_cast<float>(static_cast<size_t>(distance));
    }
}

}  // namespace

const alibi_term alibi_scores = {&add_alibi};

}  // namespace detail
}  // namespace edgeattn
