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

// Four batches at a time (exp_nonpositive_each), one when compact.hpp asks
// for size.
template <class B>
float exponentials_and_sum(const float *x, float *y, size_t n, float shift) {
    constexpr size_t W = B::size, N = compact_kernels<B>() ? 1 : 4;
    const size_t full = n / W * W;
    const B shift_b(shift);
    B sum_lanes(0.0f);
    size_t j = 0;
    if (N > 1) {
        B sums[N];
#pragma GCC unroll 4
        for (size_t i = 0; i < N; ++i) sums[i] = B(0.0f);
        for (; j + N * W <= full; j += N * W) {
            B e[N];
#pragma GCC unroll 4
            for (size_t i = 0; i < N; ++i) e[i] = B::load_unaligned(x + j + i * W) - shift_b;
            exp_nonpositive_each(e);
#pragma GCC unroll 4
            for (size_t i = 0; i < N; ++i) {
                e[i].store_unaligned(y + j + i * W);
                sums[i] += e[i];
            }
        }
#pragma GCC unroll 4
        for (size_t i = 0; i < N; ++i) sum_lanes += sums[i];
    }
    for (; j < full; j += W) {
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

// Rows of d2l's masked softmax go through three steps, each done for a
// group of rows before the next (masked_softmax_rows): one row's steps
// depend on each other (maximum -> exponentials -> their sum -> 1/sum), so
// a row of 128 scores alone waits on that chain most of the time (softmax
// 4096x128 took 2.5x the time of its exponentials alone); the rows of a group
// are independent, and the processor overlaps their chains.
template <class B>
struct softmax_row {
    const float *x;
    float *y;
    size_t lo, hi;  // the visible part; the rest of the `keys` count as -1e6
    bool done;      // written already: nothing visible, or an infinite maximum
    bool one_batch; // the visible part fits one batch: `exps` holds it
    float row_max, sum, masked_weight;
    B exps;
};

// (1) the maximum of the visible scores, and -1e6 if anything is masked.
// Rows that see nothing (uniform, 1/keys) or whose maximum is infinite are
// written here (`done`).
template <class B>
void softmax_row_maximum(softmax_row<B> &row, size_t keys) {
    constexpr size_t W = B::size;
    const size_t lo = row.lo, hi = row.hi;
    float *y = row.y;
    row.done = hi <= lo;
    if (row.done) {
        const float uniform = 1.0f / static_cast<float>(keys);
        for (size_t j = 0; j < keys; ++j) y[j] = uniform;
        return;
    }
    const size_t valid = hi - lo;
    const float *xv = row.x + lo;
    // A visible part of at most one batch (the short rows of small heads)
    // stays in a register through all three steps: the same operations on
    // the same lanes as the loops, without storing and reloading y.
    row.one_batch = W > 1 && !compact_kernels<B>() && valid <= W;
    if (row.one_batch) {
        row.exps = load_partial<B>(xv, valid, -__builtin_inff());
        row.row_max = horizontal_max(row.exps);
    } else {
        row.row_max = row_maximum<B>(xv, valid);
    }
    if (valid < keys && masked_score > row.row_max) row.row_max = masked_score;
    if (is_infinite(row.row_max)) {  // +inf among the scores, or every score -inf
        float *yv = y + lo;
        const float sum = infinite_row_weights(xv, yv, valid, row.row_max);
        const float rest = sum != sum ? sum : 0.0f;
        for (size_t j = 0; j < valid; ++j) yv[j] /= sum;
        for (size_t j = 0; j < lo; ++j) y[j] = rest;
        for (size_t j = hi; j < keys; ++j) y[j] = rest;
        row.done = true;
    }
}

// (2) exponentials (stored in y, or kept in `exps`) and their sum; every
// masked position weighs exp(-1e6 - max), exactly 0 unless the visible
// scores are near -1e6.
template <class B>
void softmax_row_exponentials(softmax_row<B> &row, size_t keys) {
    if (row.done) return;
    const size_t valid = row.hi - row.lo, masked = keys - valid;
    if (row.one_batch) {
        row.exps = exp_nonpositive(row.exps - B(row.row_max));
        row.sum = hadd(row.exps);
    } else {
        row.sum = exponentials_and_sum<B>(row.x + row.lo, row.y + row.lo, valid, row.row_max);
    }
    row.masked_weight = masked && masked_score - row.row_max >= exp_flush_below
                            ? first_lane(exp_polynomial(B(masked_score - row.row_max)))
                            : 0.0f;
    row.sum += static_cast<float>(masked) * row.masked_weight;
}

// (3) normalise, and write the masked positions' common weight.
template <class B>
void softmax_row_normalise(const softmax_row<B> &row, size_t keys) {
    if (row.done) return;
    constexpr size_t W = B::size;
    const size_t lo = row.lo, hi = row.hi, valid = hi - lo;
    const size_t full = valid / W * W, tail = valid - full;
    float *y = row.y, *yv = y + lo;
    const B scale(1.0f / row.sum);
    if (row.one_batch) {
        store_partial(row.exps * scale, yv, valid);
    } else {
        for (size_t j = 0; j < full; j += W) (B::load_unaligned(yv + j) * scale).store_unaligned(yv + j);
        if (tail) store_partial(load_partial<B>(yv + full, tail, 0.0f) * scale, yv + full, tail);
    }
    const float masked_value = row.masked_weight / row.sum;
    const B masked_values(masked_value);
    size_t j = 0;
    for (; j + W <= lo; j += W) masked_values.store_unaligned(y + j);
    for (; j < lo; ++j) y[j] = masked_value;
    j = hi;
    for (; j + W <= keys; j += W) masked_values.store_unaligned(y + j);
    for (; j < keys; ++j) y[j] = masked_value;
}

// d2l's masked softmax of `rows` rows of `keys` scores, row r at x + r * ld
// (y + r * ld, y may equal x), visible part visible[r] (valid_lens give
// [0, valid length), masks any interval; every other position counts as
// -1e6). Groups of four rows step by step (one when compact.hpp asks for
// size).
template <class B>
void masked_softmax_rows(const float *x, float *y, size_t ld, size_t rows, size_t keys,
                         const key_interval *visible) {
    constexpr size_t group = compact_kernels<B>() ? 1 : 4;
    for (size_t r0 = 0; r0 < rows; r0 += group) {
        const size_t count = rows - r0 < group ? rows - r0 : group;
        softmax_row<B> row[group];
        for (size_t r = 0; r < count; ++r) {
            row[r].x = x + (r0 + r) * ld;
            row[r].y = y + (r0 + r) * ld;
            row[r].lo = visible[r0 + r].lo;
            row[r].hi = visible[r0 + r].hi;
            softmax_row_maximum(row[r], keys);
        }
        for (size_t r = 0; r < count; ++r) softmax_row_exponentials(row[r], keys);
        for (size_t r = 0; r < count; ++r) softmax_row_normalise(row[r], keys);
    }
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
