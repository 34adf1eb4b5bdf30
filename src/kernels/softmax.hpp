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
// Non-finite scores (docs/contract.md): the
// softmax is taken as its limit, so an infinite score never makes a NaN by
// itself: +inf scores share the row's weight equally (every other position
// 0), a row whose every score is -inf is uniform, and -inf next to finite
// scores weighs 0. A NaN among the valid scores makes its whole row NaN (and
// nothing else); a NaN at a masked position is never read.
#ifndef EDGEATTN_KERNELS_SOFTMAX_HPP
#define EDGEATTN_KERNELS_SOFTMAX_HPP

#include <stddef.h>
#include <stdint.h>

#include "compact.hpp"
#include "exp.hpp"
#include "kernel_table.hpp"
#include "reduce.hpp"

namespace edgeattn {
namespace detail {
namespace {

// The two passes both softmax kernels share, over x[0, n): the maximum,
// and y = exp(x - shift) with the sum of y. Each returns a batch of lanes
// still to be reduced: masked_softmax_rows reduces a group's rows in one
// tree (lane_maxima, lane_sums), the one-row forms below each alone.
template <class B>
EDGEATTN_HOT_INLINE B row_maximum_lanes(const float *x, size_t n) {
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
    if constexpr (chains == 4) {
        m[0] = max(m[0], m[1]);
        m[2] = max(m[2], m[3]);
        m[0] = max(m[0], m[2]);
    }
    return m[0];
}

template <class B>
float row_maximum(const float *x, size_t n) {
    return horizontal_max(row_maximum_lanes<B>(x, n));
}

// y[j..] = exp(x[j..] - shift) for N batches side by side, added to `sums`.
template <class B, size_t N>
EDGEATTN_HOT_INLINE void exponentials_side_by_side(const float *x, float *y, const B &shift, B &sums) {
    B e[N];
#pragma GCC unroll 8
    for (size_t i = 0; i < N; ++i) e[i] = B::load_unaligned(x + i * B::size) - shift;
    exp_nonpositive_each(e);
#pragma GCC unroll 8
    for (size_t i = 0; i < N; ++i) {
        e[i].store_unaligned(y + i * B::size);
        sums += e[i];
    }
}

// Eight batches at a time, then four, then one (exp_nonpositive_each: the
// steps of one exp wait on each other; eight side by side keep the units
// busy, and a row of 128 scores on AVX-512 takes no loop at all); one at a
// time when compact.hpp asks for size.
template <class B>
EDGEATTN_HOT_INLINE B exponentials_and_sum_lanes(const float *x, float *y, size_t n, float shift) {
    constexpr size_t W = B::size;
    constexpr bool wide = !compact_kernels<B>();
    const size_t full = n / W * W;
    const B shift_b(shift);
    B sums[2] = {B(0.0f), B(0.0f)};
    size_t j = 0;
    if constexpr (wide && vector_registers(batch_tag<B>()) <= 8) {
        // Helium's 8 registers hold two exponentials' steps, not eight.
        for (; j + 2 * W <= full; j += 2 * W) exponentials_side_by_side<B, 2>(x + j, y + j, shift_b, sums[0]);
    } else if (wide) {
        for (; j + 8 * W <= full; j += 8 * W) exponentials_side_by_side<B, 8>(x + j, y + j, shift_b, sums[0]);
        if (j + 4 * W <= full) {
            exponentials_side_by_side<B, 4>(x + j, y + j, shift_b, sums[1]);
            j += 4 * W;
        }
    }
    for (; j < full; j += W) exponentials_side_by_side<B, 1>(x + j, y + j, shift_b, sums[0]);
    if (full < n) {
        const B e = exp_nonpositive(load_partial<B>(x + full, n - full, -__builtin_inff()) - shift_b);
        store_partial(e, y + full, n - full);
        sums[1] += e;
    }
    return sums[0] + sums[1];
}

template <class B>
float exponentials_and_sum(const float *x, float *y, size_t n, float shift) {
    return hadd(exponentials_and_sum_lanes<B>(x, y, n, shift));
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
// group of B::size rows before the next (masked_softmax_rows). One row's
// steps wait on each other (maximum -> exponentials -> their sum -> 1/sum),
// and each ends in a reduction across the lanes: alone, a row of 128
// scores spent most of its time on those chains (softmax 4096x128 took 2.5x
// the time of its exponentials). The rows of a group are independent: the
// processor overlaps their loops, the group's maxima and sums are reduced
// by one transpose tree each (lane_maxima, lane_sums) and its 1/sum by one
// division (softmax 4096x128, with exp_table.hpp's exp: 157 -> 115 us).
struct softmax_row {
    const float *x;
    float *y;
    size_t lo, hi;        // the visible part; the rest of the `keys` count as -1e6
    bool done;            // written already: nothing visible, or an infinite maximum
    float masked_weight;  // exp(-1e6 - max), each masked position's
};

// (1), after the maximum of the visible scores: -1e6 joins it if anything
// is masked. Rows that see nothing (uniform, 1/keys) or whose maximum is
// infinite are written here (`done`).
inline void softmax_row_maximum(softmax_row &row, float &row_max, size_t keys) {
    const size_t lo = row.lo, hi = row.hi;
    float *y = row.y;
    row.done = hi <= lo;
    if (row.done) {
        const float uniform = 1.0f / static_cast<float>(keys);
        for (size_t j = 0; j < keys; ++j) y[j] = uniform;
        return;
    }
    const size_t valid = hi - lo;
    if (valid < keys && masked_score > row_max) row_max = masked_score;
    if (is_infinite(row_max)) {  // +inf among the scores, or every score -inf
        const float *xv = row.x + lo;
        float *yv = y + lo;
        const float sum = infinite_row_weights(xv, yv, valid, row_max);
        const float rest = sum != sum ? sum : 0.0f;
        for (size_t j = 0; j < valid; ++j) yv[j] /= sum;
        for (size_t j = 0; j < lo; ++j) y[j] = rest;
        for (size_t j = hi; j < keys; ++j) y[j] = rest;
        row.done = true;
    }
}

// (2), after the exponentials (stored in y) and their sum: every masked
// position weighs exp(-1e6 - max), exactly 0 unless the visible scores are
// near -1e6; it joins the sum.
template <class B>
void softmax_row_masked_weight(softmax_row &row, float row_max, float &sum, size_t keys) {
    const size_t masked = keys - (row.hi - row.lo);
    row.masked_weight = masked && masked_score - row_max >= exp_flush_below
                            ? first_lane(exp_polynomial(B(masked_score - row_max)))
                            : 0.0f;
    sum += static_cast<float>(masked) * row.masked_weight;
}

// (3) normalise by `scale` (1/sum): the visible part, either in y or kept
// in a register (`kept`, a visible part of at most one batch), and the
// masked positions' common weight.
template <class B>
EDGEATTN_HOT_INLINE void softmax_row_normalise(const softmax_row &row, const B *kept, float scale, size_t keys) {
    constexpr size_t W = B::size;
    const size_t lo = row.lo, hi = row.hi, valid = hi - lo;
    const size_t full = valid / W * W, tail = valid - full;
    float *y = row.y, *yv = y + lo;
    const B scale_b(scale);
    if (kept) {
        store_partial(*kept * scale_b, yv, valid);
    } else {
        size_t j = 0;
        if (!compact_kernels<B>())  // four at a time: a row of 128 scores is two steps, not eight
            for (; j + 4 * W <= full; j += 4 * W)
#pragma GCC unroll 4
                for (size_t i = 0; i < 4; ++i)
                    (B::load_unaligned(yv + j + i * W) * scale_b).store_unaligned(yv + j + i * W);
        for (; j < full; j += W) (B::load_unaligned(yv + j) * scale_b).store_unaligned(yv + j);
        if (tail) store_partial(load_partial<B>(yv + full, tail, 0.0f) * scale_b, yv + full, tail);
    }
    if (sees_every_key(key_interval{lo, hi}, keys)) return;
    const float masked_value = row.masked_weight * scale;
    const B masked_values(masked_value);
    size_t j = 0;
    for (; j + W <= lo; j += W) masked_values.store_unaligned(y + j);
    for (; j < lo; ++j) y[j] = masked_value;
    j = hi;
    for (; j + W <= keys; j += W) masked_values.store_unaligned(y + j);
    for (; j < keys; ++j) y[j] = masked_value;
}

// out[r] = the maximum (or the sum) of lanes[r]'s lanes for the group's
// `count` rows: one tree for the whole group when `tree` (lanes past
// `count` filled with `unused`, so every lane of out is written), else one
// reduction each.
template <class B>
void reduce_softmax_lanes(B *lanes, size_t count, bool tree, float *out, bool maximum, float unused) {
    if (!tree) {
        for (size_t r = 0; r < count; ++r) out[r] = maximum ? horizontal_max(lanes[r]) : horizontal_sum(lanes[r]);
        return;
    }
    for (size_t r = count; r < B::size; ++r) lanes[r] = B(unused);
    (maximum ? lane_maxima(lanes) : lane_sums(lanes)).store_unaligned(out);
}

// masked_softmax_rows (below) for rows of short visible parts, and every
// row on the plain C++ path: groups of B::size rows step by step (one row
// on the plain C++ path). A visible part of at most one batch (the short
// rows of small heads) stays in a register from its load to its store: the
// same operations on the same lanes as the loops, without storing and
// reloading y.
template <class B>
void masked_softmax_row_groups(const float *x, float *y, size_t ld, size_t rows, size_t keys,
                               const key_interval *visible) {
    constexpr size_t W = B::size, group = B::size;
    constexpr float lowest = -__builtin_inff();
    for (size_t r0 = 0; r0 < rows; r0 += group) {
        const size_t count = rows - r0 < group ? rows - r0 : group;
        // A few rows (attention of a handful of queries) are reduced one by
        // one: fewer instructions than a tree over mostly unused rows.
        const bool tree = count * 4 > group;
        softmax_row row[group];
        bool one_batch[group];
        B lanes[group];  // each row's maximum, then its sum, not yet reduced
        B kept[group];   // the visible part, where one_batch
        float row_max[group], scale[group];
        for (size_t r = 0; r < count; ++r) {
            const key_interval v = visible ? visible[r0 + r] : key_interval{0, keys};
            row[r] = softmax_row{x + (r0 + r) * ld, y + (r0 + r) * ld, v.lo, v.hi, false, 0.0f};
            const size_t valid = v.hi > v.lo ? v.hi - v.lo : 0;
            one_batch[r] = W > 1 && valid > 0 && valid <= W;
            if (one_batch[r]) {
                kept[r] = load_partial<B>(row[r].x + v.lo, valid, lowest);
                lanes[r] = kept[r];
            } else {
                lanes[r] = valid ? row_maximum_lanes<B>(row[r].x + v.lo, valid) : B(lowest);
            }
        }
        reduce_softmax_lanes<B>(lanes, count, tree, row_max, true, 0.0f);
        for (size_t r = 0; r < count; ++r) {
            softmax_row_maximum(row[r], row_max[r], keys);
            if (row[r].done) {
                lanes[r] = B(1.0f);
            } else if (one_batch[r]) {
                kept[r] = exp_nonpositive(kept[r] - B(row_max[r]));
                lanes[r] = kept[r];
            } else {
                lanes[r] = exponentials_and_sum_lanes<B>(row[r].x + row[r].lo, row[r].y + row[r].lo,
                                                         row[r].hi - row[r].lo, row_max[r]);
            }
        }
        reduce_softmax_lanes<B>(lanes, count, tree, scale, false, 1.0f);
        for (size_t r = 0; r < count; ++r)  // rare: only rows with masked positions
            if (!row[r].done && row[r].hi - row[r].lo < keys)
                softmax_row_masked_weight<B>(row[r], row_max[r], scale[r], keys);
        // One division for the group, however many rows it has: xsimd's NEON
        // division is a refined reciprocal estimate, not always the scalar
        // 1 / sum, and a row's bits must not depend on its group.
        for (size_t r = count; r < group; ++r) scale[r] = 1.0f;
        (B(1.0f) / B::load_unaligned(scale)).store_unaligned(scale);
        for (size_t r = 0; r < count; ++r)
            if (!row[r].done) softmax_row_normalise<B>(row[r], one_batch[r] ? &kept[r] : nullptr, scale[r], keys);
    }
}

// The pipeline's one rare case, out of line (a call in its loop would make
// GCC keep no vector across it: the SysV ABI saves none): a row whose
// maximum is infinite, written here as its limit (softmax_row_maximum).
inline __attribute__((noinline)) void pipelined_infinite_row(const float *x, float *y, float row_max, size_t keys) {
    softmax_row row{x, y, 0, keys, false, 0.0f};
    softmax_row_maximum(row, row_max, keys);
}

// How the pipeline (below) takes a row's exponentials: exp(x - m) times a
// factor common to the row, which its normalisation divides out.
// `unshifted`: the scores go to table_exps_scaled as they are, with k =
// m T/ln2 rounded and the floor m - 87.33 (no subtraction: one vector
// instruction fewer a batch of the pipeline's ~20, 4096x128: 108 -> 104 us
// on Zen 4), which is exact while the scores' size stays under
// scaled_exps_exact_for; otherwise, or for a NaN maximum, x - m with k = 0
// and the floor -87.33, as the group kernel takes them. Either way a row's
// choice depends on that row alone.
template <class B>
struct row_exponentials {
    // A row's numbers as floats, found once its maximum m is (kept in the
    // pipeline's ring of rows until the exponentials' stage takes them).
    struct of_row {
        float row_max, lowest, round_shift_less_k;
        bool unshifted;
    };
    static of_row of(float m) {
        if (!scaled_exps_exact_for(m, batch_tag<B>())) return {m, exp_flush_below, exp_round_shift, false};
        return {m, m + exp_flush_below, exp_round_shift - scaled_exps_power(m, batch_tag<B>()), true};
    }

    B row_max, lowest, round_shift_less_k;
    explicit row_exponentials(const of_row &f)
        : row_max(f.row_max), lowest(f.lowest), round_shift_less_k(f.round_shift_less_k) {}

    // N batches of a row's exponentials from x, stored in y; returns their
    // sum, a pair's as e0 + e1 (N = 0: the n < B::size scores left, the
    // lanes past them read as -inf and at most 2^-126 in the sum).
    template <size_t N, bool unshifted>
    EDGEATTN_HOT_INLINE B side_by_side(const float *x, float *y, size_t n = 0) const {
        constexpr size_t count = N == 0 ? 1 : N;
        B e[count];
#pragma GCC unroll 8
        for (size_t i = 0; i < count; ++i) {
            e[i] = N == 0 ? load_partial<B>(x, n, -__builtin_inff()) : B::load_unaligned(x + i * B::size);
            if constexpr (!unshifted) e[i] = e[i] - row_max;
        }
        scaled_exps(e, lowest, round_shift_less_k, batch_tag<B>());
        if constexpr (N == 0)
            store_partial(e[0], y, n);
        else
#pragma GCC unroll 8
            for (size_t i = 0; i < N; ++i) e[i].store_unaligned(y + i * B::size);
        if constexpr (N == 2)
            return e[0] + e[1];
        else
            return e[0];
    }
};

// masked_softmax_rows (below) for rows visible whole (no mask: a plain
// softmax, attention without valid lengths) and longer than a batch, on the
// AVX-512 and AVX2 paths: a pipeline of stages, each on a row of its own,
// side by side: the maximum of row r, the exponentials of row r - 2 (stored
// in y), the sum of row r - 4 (read back from y), the normalisation of row
// r - 6. Done a pass at a time (the group kernel), the maximum and the
// normalisation are bound by the loads and the stores (Zen 4: 2 cycles a
// batch each, the FMA units idle) and the exponentials by the FMA units;
// side by side, the memory work runs under the arithmetic. Each row's
// maximum and sum are reduced across its lanes on their own, two rows before
// they are needed, so the reductions' latency overlaps other rows' work
// (distances 1 and 2 instead of 2 and 4: 8% slower at 128 keys). The sum as
// a stage of its own (an added load a batch, the exponentials' chain one
// add shorter): 4096x128 107 -> 96 us, 1024x512 91 -> 85; it also makes a
// row's sum independent of the order the exponentials walk it in
// (step_order). Rows of a page or more keep the sum in the exponentials'
// stage and the normalisation at r - 4: the stage of its own made them
// slower (1024x1024 172 -> 190 us, 64x4096 43.4 -> 53). All rows have the
// same length, so the stages go side by side to the end: two batches a step,
// one, and the tail.
//
// Why whole rows only: with masks, rows of one call differ in length, a
// stage that finishes its row alone runs without the others beside it, and
// the masked positions and weights add per-row work; measured (Zen 4, rows
// of 128 keys): 32 or 48 visible keys a row 25% and 50% slower than the
// group kernel, 1000 of 1024 the same (bench/NOTES.md). Per-row work is
// what short rows pay for (a row of 128 scores is four steps): the state
// is a few floats in rings indexed by row, and the iterations between the
// pipeline's filling and draining, where every stage has a row, are
// compiled apart with that known. A row whose maximum is infinite (its
// limit written at once) ends the pipeline there: the rows before it
// drain, and a new pipeline starts after it, so no stage tests a per-row
// flag (a flag tested by the later stages cost 5% at 128 keys).
template <class B>
struct softmax_pipeline {
    static constexpr size_t W = B::size, ring = 8;  // ring: more than the 7 rows in flight
    static constexpr size_t to_exponentials = 2, to_sum = 4;
    // The maximum's running maxima: two side by side on AVX-512; one on
    // AVX2, whose 16 registers did not hold a second beside the
    // exponentials' (GCC kept it on the stack, a store and a reload every
    // step). One chain of max is far shorter than a step's exponentials.
    // Either way a row's maximum is the same number (max is exact), so
    // its bits do not change.
    static constexpr size_t maximum_chains = B::size >= 16 ? 2 : 1;
    static constexpr size_t to_normalisation(int order) { return order == mirrored ? 4 : 6; }
    const float *x;
    float *y;
    size_t ld, rows, keys;
    // The order in which the stages walk their rows, chosen per call from
    // the row length and where y lies from x. A load whose address matches
    // an earlier store's low 12 bits is held as if it depended on it (4K
    // aliasing), so (Zen 4, one thread):
    // - `mirrored`: a row of 1024 floats or more covers a whole 4 KiB page,
    //   and in one order every stream would meet at the same page offsets:
    //   the maximum and the normalisation walk from the row's end, the
    //   exponentials from its start (1024x1024, y 64 bytes past x's page
    //   offset: 268 us in one order, 220 apart, 242 by groups);
    // - `reversed`: in a shorter row, the exponentials' loads of x meet
    //   their own stores to y a few steps back when y lies 64 to ~512 bytes
    //   past x modulo 4 KiB (two buffers of one size from malloc, one after
    //   the other: Google Benchmark's lie 128 bytes apart): the stages then
    //   walk from the row's end (tail, last batch, pairs), so each store
    //   follows the loads it could match (4096x128 at 128 bytes apart: 117
    //   -> 97 us, 1024x512 116 -> 84); `in_order` elsewhere (reversed at 0,
    //   1024 and 2048 bytes apart: +6-11% at 4096x128).
    // The sum stage walks every row from its start, pairs as e0 + e1, so
    // where y lies changes no bit of the result. (The exponentials' stage
    // summing in its own order, each pair's sum kept in a slot and added
    // after the row: +10%, one store a pair.) A template argument of the
    // iterations: the steps test nothing for it.
    static constexpr int in_order = 0, mirrored = 1, reversed = 2;
    static int step_order(const float *x, const float *y, size_t keys) {
        if (keys * sizeof(float) >= 4096) return mirrored;
        const size_t apart = static_cast<size_t>(reinterpret_cast<uintptr_t>(y) - reinterpret_cast<uintptr_t>(x)) % 4096;
        return apart >= 64 && apart < 576 ? reversed : in_order;
    }
    // The rows in flight, by row mod ring: how the exponentials' stage takes
    // them (found with the maximum, as floats, which the stage broadcasts
    // from memory) and 1 / their sum.
    typename row_exponentials<B>::of_row found[ring];
    float scale[ring];

    // N batches of each stage's row: the exponentials' from position j on,
    // the maximum's and the normalisation's from j_other (N = 0: the tail,
    // a partial batch of keys - j, where j_other = j).
    // `b_sums`: the exponentials add their sum to `sums` (the mirrored order).
    template <size_t N, bool unshifted, bool b_sums>
    EDGEATTN_HOT_INLINE void step(size_t j, size_t j_other, bool a, bool b, bool c, const float *xa,
                                  const float *xb, float *yb, float *yc, const row_exponentials<B> &ex,
                                  const B &scale_c, B (&maxima)[2], B &sums) const {
        constexpr float lowest = -__builtin_inff();
        if constexpr (N == 0) {
            const size_t n = keys - j;
            if (a) maxima[0] = max(maxima[0], load_partial<B>(xa + j, n, lowest));
            if (b) {
                const B e = ex.template side_by_side<0, unshifted>(xb + j, yb + j, n);
                if constexpr (b_sums) sums += e;
            }
            if (c) store_partial(load_partial<B>(yc + j, n, 0.0f) * scale_c, yc + j, n);
        } else {
            if (a)
#pragma GCC unroll 2
                for (size_t i = 0; i < N; ++i)
                    maxima[i % maximum_chains] = max(maxima[i % maximum_chains], B::load_unaligned(xa + j_other + i * W));
            if (b) {
                const B e = ex.template side_by_side<N, unshifted>(xb + j, yb + j);
                if constexpr (b_sums) sums += e;
            }
            if (c)
#pragma GCC unroll 2
                for (size_t i = 0; i < N; ++i)
                    (B::load_unaligned(yc + j_other + i * W) * scale_c).store_unaligned(yc + j_other + i * W);
        }
    }

    // The summing stage's part of a step: N batches of its row's stored
    // exponentials from ys added to `sums` (N = 2: as one pair's sum e0 + e1;
    // N = 0: the tail, keys - j of them).
    template <size_t N>
    EDGEATTN_HOT_INLINE void add_stored(const float *ys, size_t j, B &sums) const {
        if constexpr (N == 2)
            sums += B::load_unaligned(ys + j) + B::load_unaligned(ys + j + W);
        else if constexpr (N == 1)
            sums += B::load_unaligned(ys + j);
        else
            sums += load_partial<B>(ys + j, keys - j, 0.0f);
    }

    // Row r's maximum, row r - 2's exponentials, row r - 4's sum, row r - 6's
    // normalisation (mirrored: row r - 2's exponentials and sum, row r - 4's
    // normalisation), each where that row exists (`every_stage`: all do). A
    // row whose maximum is infinite is written as its limit and becomes the
    // end of `rows`, so its later stages do not run.
    template <bool every_stage, int order>
    EDGEATTN_HOT_INLINE void iteration(size_t r) {
        const size_t rb = r - to_exponentials;  // wraps below 0: not used then
        const bool b = every_stage || (r >= to_exponentials && rb < rows);
        if (!b || found[rb % ring].unshifted)
            iteration_taking<every_stage, order, true>(r, b);
        else
            iteration_taking<every_stage, order, false>(r, b);
    }

    // The iteration with row r - 2's exponentials taken `unshifted` or not
    // (row_exponentials); b: that row exists.
    template <bool every_stage, int order, bool unshifted>
    EDGEATTN_HOT_INLINE void iteration_taking(size_t r, bool b) {
        constexpr float lowest = -__builtin_inff();
        constexpr bool b_sums = order == mirrored;
        constexpr size_t to_c = to_normalisation(order);
        const size_t rb = r - to_exponentials, rs = r - to_sum, rc = r - to_c;  // wrap below 0: not used then
        const bool a = every_stage || r < rows;
        const bool s = !b_sums && (every_stage || (r >= to_sum && rs < rows));
        const bool c = every_stage || (r >= to_c && rc < rows);
        // Only the rows that exist: a stage without one would point outside x and y.
        const float *xa = a ? x + r * ld : x, *xb = b ? x + rb * ld : x;
        float *yb = b ? y + rb * ld : y, *yc = c ? y + rc * ld : y;
        const float *ys = s ? y + rs * ld : y;
        const row_exponentials<B> ex(found[rb % ring]);  // not used without row rb
        const B scale_c(c ? scale[rc % ring] : 0.0f);
        B maxima[2] = {B(lowest), B(lowest)}, sums(0.0f);
        const size_t pairs = keys / (2 * W) * (2 * W);
        const bool single = pairs + W <= keys;
        const size_t tail = single ? pairs + W : pairs;  // where the tail starts, if keys > tail
        if constexpr (order == reversed) {
            // The row's end first; the sum's last terms wait in registers.
            B last(0.0f), after_last(0.0f);
            if (tail < keys) {
                step<0, unshifted, false>(tail, tail, a, b, c, xa, xb, yb, yc, ex, scale_c, maxima, sums);
                if (s) add_stored<0>(ys, tail, after_last);
            }
            if (single) {
                step<1, unshifted, false>(pairs, pairs, a, b, c, xa, xb, yb, yc, ex, scale_c, maxima, sums);
                if (s) add_stored<1>(ys, pairs, last);
            }
            for (size_t j = 0; j < pairs; j += 2 * W) {
                const size_t back = pairs - 2 * W - j;
                step<2, unshifted, false>(back, back, a, b, c, xa, xb, yb, yc, ex, scale_c, maxima, sums);
                if (s) add_stored<2>(ys, j, sums);
            }
            if (single) sums += last;
            if (tail < keys) sums += after_last;
        } else {
            for (size_t j = 0; j < pairs; j += 2 * W) {
                step<2, unshifted, b_sums>(j, order == mirrored ? pairs - 2 * W - j : j, a, b, c, xa, xb, yb, yc,
                                           ex, scale_c, maxima, sums);
                if (s) add_stored<2>(ys, j, sums);
            }
            if (single) {
                step<1, unshifted, b_sums>(pairs, pairs, a, b, c, xa, xb, yb, yc, ex, scale_c, maxima, sums);
                if (s) add_stored<1>(ys, pairs, sums);
            }
            if (tail < keys) {
                step<0, unshifted, b_sums>(tail, tail, a, b, c, xa, xb, yb, yc, ex, scale_c, maxima, sums);
                if (s) add_stored<0>(ys, tail, sums);
            }
        }
        if (b_sums ? b : s) scale[(b_sums ? rb : rs) % ring] = 1.0f / horizontal_sum(sums);
        if (a) {
            const float m = horizontal_max(max(maxima[0], maxima[1]));
            found[r % ring] = row_exponentials<B>::of(m);
            if (is_infinite(m)) {
                pipelined_infinite_row(xa, y + r * ld, m, keys);
                rows = r;  // the rows before r drain; r is done
            }
        }
    }

    // Runs the pipeline; returns the rows done: all, or up to and with the
    // first row whose maximum is infinite.
    size_t run() {
        switch (step_order(x, y, keys)) {
            case in_order: return run_in<in_order>();
            case mirrored: return run_in<mirrored>();
            default: return run_in<reversed>();
        }
    }

    template <int order>
    size_t run_in() {
        const size_t all = rows;
        size_t r = 0;
        constexpr size_t to_c = to_normalisation(order);
        for (; r < rows + to_c && r < to_c; ++r) iteration<false, order>(r);  // filling
        for (; r < rows; ++r) iteration<true, order>(r);
        for (; r < rows + to_c; ++r) iteration<false, order>(r);  // draining
        return rows < all ? rows + 1 : all;
    }
};

template <class B>
void masked_softmax_rows_pipelined(const float *x, float *y, size_t ld, size_t rows, size_t keys) {
    for (size_t r0 = 0; r0 < rows;) {
        softmax_pipeline<B> p{x + r0 * ld, y + r0 * ld, ld, rows - r0, keys, {}, {}};
        r0 += p.run();
    }
}

// The paths whose rows visible whole go through the pipeline: AVX-512 and
// AVX2 (Zen 4, one thread, softmax 4096x128 / 1024x1024 / 64x4096: AVX-512
// 147 -> 129, 259 -> 215, 61 -> 47 us; AVX2 197 -> 166, 331 -> 299,
// 79 -> 72 us). SSE2 lost 30-45% (16 registers of 4 lanes, exp.hpp's
// longer polynomial: 615 -> 817 us at 4096x128); NEON, as wide, is not
// measured (no board here) and keeps the groups too; the plain C++ path
// keeps one row a group.
template <class B>
constexpr bool pipelined_softmax() {
    return B::size >= 8;
}

// d2l's masked softmax of `rows` rows of `keys` scores, row r at x + r * ld
// (y + r * ld, y may equal x), visible part visible[r] (valid_lens give
// [0, valid length), masks any interval; every other position counts as
// -1e6), every key where visible is null. Rows visible whole and longer
// than a batch go through the pipeline where it pays (above) and the others
// by groups, a run of consecutive rows of one kind at a time: the choice is
// the row's own, so its bits do not depend on the rows beside it.
template <class B>
void masked_softmax_rows(const float *x, float *y, size_t ld, size_t rows, size_t keys,
                         const key_interval *visible) {
    if constexpr (pipelined_softmax<B>()) {
        const auto pipelined = [&](size_t r) {
            return keys > B::size && (!visible || sees_every_key(visible[r], keys));
        };
        for (size_t r0 = 0, r1; r0 < rows; r0 = r1) {
            const bool whole = pipelined(r0);
            for (r1 = r0 + 1; r1 < rows && pipelined(r1) == whole;) ++r1;
            if (whole)
                masked_softmax_rows_pipelined<B>(x + r0 * ld, y + r0 * ld, ld, r1 - r0, keys);
            else
                masked_softmax_row_groups<B>(x + r0 * ld, y + r0 * ld, ld, r1 - r0, keys,
                                             visible ? visible + r0 : nullptr);
        }
    } else {
        masked_softmax_row_groups<B>(x, y, ld, rows, keys, visible);
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
