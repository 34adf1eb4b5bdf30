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

// Key j's distance |p - pos_j| from the query at logical position p:
// a wrapped window cache's sinks lie `sinks_behind` further back than
// their index says (its window keys and the query lie at stream position
// index + dropped; the sinks keep theirs).
struct alibi_distances {
    int64_t p, sinks_behind;
    size_t sinks;
    int64_t of(size_t j) const {
        const int64_t d = p - static_cast<int64_t>(j) + (j < sinks ? sinks_behind : 0);
        return d < 0 ? -d : d;
    }
    // The distance of the key of [lo, hi) (lo < hi) whose index is nearest
    // p: the nearest key, as the sinks lie before every window key and
    // query (unless a step longer than the ring left a query below the
    // sinks by index: then a sink, and the window keys' terms as large as
    // measured from the query).
    int64_t near(size_t lo, size_t hi) const {
        const size_t j = p <= static_cast<int64_t>(lo)       ? lo
                         : p >= static_cast<int64_t>(hi - 1) ? hi - 1
                                                             : static_cast<size_t>(p);
        return of(j);
    }
};

// A distance difference (exact in int64) as a float, rounded once. Through
// size_t: a 32-bit target converts it in one instruction, where int64 to
// float is a libgcc call (1.5 KB of Cortex-M4F flash with the soft-float
// additions it brings). It fits: at most the keys plus the stream's
// dropped tokens (int32).
float distance_as_float(int64_t d) {
    return d >= 0 ? static_cast<float>(static_cast<size_t>(d)) : -static_cast<float>(static_cast<size_t>(-d));
}

void add_alibi(const kernel_table &k, const attention_mask_view &mask, size_t b, size_t head, size_t i,
               size_t queries, size_t keys, size_t lo, size_t hi, float *scores, bool relative) {
    const float slope = slope_of(k, mask.alibi_max_bias, head, mask.alibi_heads);
    alibi_distances dist{mask.position(b, i, queries, keys), 0, 0};
    if (mask.stream && mask.alignment != EDGEATTN_ALIGN_TOP_LEFT) {
        const int64_t dropped = mask.stream->dropped(b);
        if (dropped > 0) {
            dist.sinks_behind = dropped;
            dist.sinks = mask.stream->sinks;
        }
    }
    // Far along a stream -m |p - pos_j| is large (m 2^-0.5 at 2^25 tokens:
    // 2.4e7, a float step of 2), and the score differences the softmax
    // sees would be lost in its rounding. Where the softmax cannot tell
    // (every key visible, or the masked ones excluded), each distance is
    // taken relative to the row's visible key nearest the query, an exact
    // integer difference rounded once: the weights are the float64
    // formula's at any position. Under d2l's masking the masked keys' -1e6
    // is absolute, and so are the terms beside it (and in the scores given
    // as weights).
    int64_t nearest = 0;
    if (relative) {
        const key_interval row = mask.of_row(b, i, queries, keys);
        if (row.lo < row.hi && (mask.exclude || (row.lo == 0 && row.hi == keys))) nearest = dist.near(row.lo, row.hi);
    }
    for (size_t j = lo; j < hi; ++j) scores[j - lo] -= slope * distance_as_float(dist.of(j) - nearest);
}

}  // namespace

const alibi_term alibi_scores = {&add_alibi};

}  // namespace detail
}  // namespace edgeattn
