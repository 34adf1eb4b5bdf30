// d2l's masked softmax of one row, written once for any batch type.
//
// d2l replaces scores at positions >= valid by -1e6 and takes a plain
// softmax. We compute exactly that without touching the masked scores:
// the row maximum is max(max of valid scores, -1e6 if anything is masked),
// and every masked position has the same weight exp(-1e6 - max) / sum, which
// underflows to 0 unless the valid scores are themselves near -1e6. A row
// with valid == 0 is uniform, 1/keys. Three passes over the valid part:
// maximum; exp(x - max) stored and summed; scale by 1/sum.
//
// Non-finite scores (README, "Error handling and numeric edge cases"): the
// softmax is taken as its limit, so an infinite score never makes a NaN by
// itself: +inf scores share the row's weight equally (every other position
// 0), a row whose every score is -inf is uniform, and -inf next to finite
// scores weighs 0. A NaN among the valid scores makes its whole row NaN (and
// nothing else); a NaN at a masked position is never read.
#ifndef EDGEATTN_KERNELS_SOFTMAX_HPP
#define EDGEATTN_KERNELS_SOFTMAX_HPP

#include <stddef.h>

#include "compact.hpp"
#include "exp.hpp"
#include "kernel_table.hpp"
#include "reduce.hpp"

namespace edgeattn {
namespace detail {
namespace {

// The two passes both softmax kernels share, over x[0, n):
// the maximum, and y = exp(x - shift) with the sum of y.
template <class B>
float row_maximum(const float *x, size_t n) {
    constexpr size_t W = B::size;
    const float lowest = -__builtin_inff();
    const size_t full = n / W * W;
    // Four running maxima, so consecutive vectors do not wait on each other
    // (one when compact.hpp asks for size), joined as a tree.
    constexpr size_t chains = compact_kernels<B>() ? 1 : 4;
    B m[chains];
#pragma GCC unroll 4
    for (size_t c = 0; c < chains; ++c) m[c] = B(lowest);
    size_t j = 0;
    for (; j + chains * W <= full; j += chains * W)
#pragma GCC unroll 4
        for (size_t c = 0; c < chains; ++c) m[c] = max(m[c], B::load_unaligned(x + j + c * W));
    for (; j < full; j += W) m[0] = max(m[0], B::load_unaligned(x + j));
    if (full < n) m[0] = max(m[0], load_partial<B>(x + full, n - full, lowest));
    for (size_t step = 1; step < chains; step *= 2)
        for (size_t c = 0; c + step < chains; c += 2 * step) m[c] = max(m[c], m[c + step]);
    return horizontal_max(m[0]);
}

template <class B>
float exponentials_and_sum(const float *x, float *y, size_t n, float shift) {
    constexpr size_t W = B::size;
    const size_t full = n / W * W;
    const B shift_b(shift);
    B sum_lanes(0.0f);
    for (size_t j = 0; j < full; j += W) {
        const B e = exp_nonpositive(B::load_unaligned(x + j) - shift_b);
        e.store_unaligned(y + j);
        sum_lanes += e;
    }
    if (full < n) {
        const B e = exp_nonpositive(load_partial<B>(x + full, n - full, -__builtin_inff()) - shift_b);
        store_partial(e, y + full, n - full);
        sum_lanes += e;
    }
    return hadd(sum_lanes);
}

// The limit of the softmax of a row whose maximum is +inf or -inf: weight
// 1/count on the positions equal to `row_max`, 0 on the others (masked ones
// too), all NaN if any valid score is NaN. Scalar: a rare path.
inline float infinite_row_weights(const float *x, float *y, size_t n, float row_max) {
    float count = 0.0f;
    bool nan = false;
    for (size_t j = 0; j < n; ++j) {
        nan = nan || x[j] != x[j];
        count += x[j] == row_max ? 1.0f : 0.0f;
    }
    const float hit = nan ? __builtin_nanf("") : 1.0f, miss = nan ? __builtin_nanf("") : 0.0f;
    for (size_t j = 0; j < n; ++j) y[j] = x[j] == row_max ? hit : miss;
    return nan ? miss : count;  // the sum of what was written
}

inline bool is_infinite(float v) { return v == __builtin_inff() || v == -__builtin_inff(); }

// d2l's masked softmax of one row of `keys` scores whose visible part is
// [lo, hi): every other position counts as -1e6 (valid_lens give lo = 0,
// hi = valid length; masks give any interval). y may equal x.
template <class B>
void masked_softmax_row(const float *x, float *y, size_t keys, size_t lo, size_t hi) {
    if (hi <= lo) {
        const float uniform = 1.0f / static_cast<float>(keys);
        for (size_t j = 0; j < keys; ++j) y[j] = uniform;
        return;
    }
    constexpr size_t W = B::size;
    const size_t valid = hi - lo, masked = keys - valid;
    const float *xv = x + lo;
    float *yv = y + lo;
    const size_t full = valid / W * W, tail = valid - full;

    // (1) maximum of the visible scores, and -1e6 if anything is masked
    float row_max = row_maximum<B>(xv, valid);
    if (masked && masked_score > row_max) row_max = masked_score;
    if (is_infinite(row_max)) {  // +inf among the scores, or every score -inf
        const float sum = infinite_row_weights(xv, yv, valid, row_max);
        const float rest = sum != sum ? sum : 0.0f;
        for (size_t j = 0; j < valid; ++j) yv[j] /= sum;
        for (size_t j = 0; j < lo; ++j) y[j] = rest;
        for (size_t j = hi; j < keys; ++j) y[j] = rest;
        return;
    }

    // (2) exponentials, stored, and their sum; exp(-1e6 - max) is exactly 0
    // unless the visible scores are near -1e6
    float sum = exponentials_and_sum<B>(xv, yv, valid, row_max);
    const float masked_weight = masked && masked_score - row_max >= exp_flush_below
                                    ? first_lane(exp_polynomial(B(masked_score - row_max)))
                                    : 0.0f;
    sum += static_cast<float>(masked) * masked_weight;

    // (3) normalise
    const B scale(1.0f / sum);
    for (size_t j = 0; j < full; j += W) (B::load_unaligned(yv + j) * scale).store_unaligned(yv + j);
    if (tail) store_partial(load_partial<B>(yv + full, tail, 0.0f) * scale, yv + full, tail);
    const float masked_value = masked_weight / sum;
    const B masked_values(masked_value);
    size_t j = 0;
    for (; j + W <= lo; j += W) masked_values.store_unaligned(y + j);
    for (; j < lo; ++j) y[j] = masked_value;
    j = hi;
    for (; j + W <= keys; j += W) masked_values.store_unaligned(y + j);
    for (; j < keys; ++j) y[j] = masked_value;
}

// One key block of a streaming (online) softmax row, as in FlashAttention:
// s holds n scores of which [lo, hi) are visible. Updates the row's running
// maximum and sum, writes p[j] = exp(s[j] - new max) for lo <= j < hi and 0
// elsewhere, and returns exp(old max - new max), the factor by which
// everything accumulated so far must be scaled.
template <class B>
float online_softmax_block(const float *s, float *p, size_t n, size_t lo, size_t hi,
                           float *running_max, float *running_sum) {
    if (hi < lo) hi = lo;
    const size_t valid = hi - lo;
    const float old_max = *running_max, block_max = row_maximum<B>(s + lo, valid);
    const float new_max = block_max > old_max ? block_max : old_max;
    // With an infinite maximum, exp(s - max) is the limit: 1 where s equals
    // it, 0 elsewhere (the old sum then scales by 0 or 1), NaN for NaN.
    const float block_sum = is_infinite(new_max)
                                ? infinite_row_weights(s + lo, p + lo, valid, new_max)
                                : exponentials_and_sum<B>(s + lo, p + lo, valid, new_max);
    for (size_t j = 0; j < lo; ++j) p[j] = 0.0f;
    for (size_t j = hi; j < n; ++j) p[j] = 0.0f;
    const float correction =
        old_max == new_max ? 1.0f : first_lane(exp_polynomial(B(old_max - new_max)));
    *running_max = new_max;
    *running_sum = *running_sum * correction + block_sum;
    return correction;
}

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
