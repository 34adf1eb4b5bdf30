#include "attention_rows.hpp"

#include "linear.hpp"

#include <math.h>

namespace edgeattn {
namespace detail {

namespace {

size_t min_size(size_t a, size_t b) { return a < b ? a : b; }
size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

// Out of line: the kernels ask per row and key block (flash on Cortex-M).
// Without a mask every row sees every key, and with valid lengths alone
// it sees its length: answered at once, before the divisions (sdpa of 128
// keys asks ~400 times a head: 5% of it on Zen 4; d2l's sdpa example on
// the Cortex-M4F -O3, one call fewer a row); builds for size leave both to
// of_row, which answers valid lengths (or no mask) without the row's
// position.
__attribute__((noinline)) key_interval row_keys(const attention_slice &s, const attention_mask_view &mask,
                                                size_t row) {
#if !defined(__OPTIMIZE_SIZE__)
    if (!mask.positioned()) return {0, mask.lens.of_row(s.batch_index, row / s.group, s.num_keys)};
#endif
    return mask.of_row(s.batch_index, row / s.group, s.num_queries / s.group, s.num_keys);
}

// The union [lo, hi) of the visible keys of rows [row0, row0 + rows).
key_interval block_keys(const attention_slice &s, const attention_mask_view &mask, size_t row0,
                        size_t rows) {
    key_interval all{s.num_keys, 0};
    for (size_t r = 0; r < rows; ++r) {
        const key_interval iv = row_keys(s, mask, row0 + r);
        if (iv.lo == iv.hi) continue;
        all.lo = min_size(all.lo, iv.lo);
        all.hi = max_size(all.hi, iv.hi);
    }
    if (all.hi < all.lo) all.hi = all.lo = 0;
    return all;
}

// The rows [first, last) of a block that see any of keys [key0, key0 + n):
// a causal block's rows above the diagonal skip the products.
key_interval rows_seeing(const attention_slice &s, const attention_mask_view &mask, size_t row0,
                         size_t rows, size_t key0, size_t n) {
    key_interval r{rows, 0};
    for (size_t i = 0; i < rows; ++i) {
        const key_interval iv = row_keys(s, mask, row0 + i);
        if (iv.lo < key0 + n && iv.hi > key0 && iv.lo < iv.hi) {
            r.lo = min_size(r.lo, i);
            r.hi = i + 1;
        }
    }
    if (r.hi < r.lo) r.hi = r.lo = 0;
    return r;
}

constexpr size_t diagonal_step = keys_per_block / 4;

// out += w * value row j (a masked key's share of a row's weighted sum).
void add_value_row(const kernel_table &k, const attention_slice &s, size_t j, float w, float *out) {
    if (s.stored) {
        s.stored->add_value_row(s, j, w, out);
        return;
    }
    k.add_scaled(s.values + j * s.value_stride, w, out, s.dv);
}

}  // namespace

float join_masked_keys(const kernel_table &k, const attention_slice &s, key_interval iv, float row_max, float sum,
                       float *out) {
    const size_t K = s.num_keys, dv = s.dv;
    const float max_all = row_max > masked_score ? row_max : masked_score;
    // The kernels' exp, not libm's: no expf in a firmware image.
    float factors[2] = {row_max - max_all, masked_score - max_all};
    k.exp(factors, factors, 2);  // 0 below -87.33, as the NaN test after the division needs
    const float correction = row_max == max_all ? 1.0f : factors[0];
    const float masked_weight = factors[1];
    if (correction != 1.0f) k.scale(out, dv, correction);
    if (masked_weight > 0.0f) {
        for (size_t j = 0; j < iv.lo; ++j) add_value_row(k, s, j, masked_weight, out);
        for (size_t j = iv.hi; j < K; ++j) add_value_row(k, s, j, masked_weight, out);
    }
    return sum * correction + static_cast<float>(K - (iv.hi - iv.lo)) * masked_weight;
}

void block_scores(const kernel_table &k, const attention_slice &s, size_t row0, size_t rows,
                  size_t key0, size_t n, float scale, float *scores, size_t ldc,
                  const scratch_slot &slot) {
    const float *queries = s.queries + row0 * s.query_stride;
    if (s.stored) {
        s.stored->block_scores(k, s, row0, rows, key0, n, scale, scores, ldc, slot);
        return;
    }
    const float *keys = s.keys + key0 * s.key_stride;
    if (reads_in_place(k, s)) {
        k.gemm_nt_direct(rows, n, s.d, scale, queries, s.query_stride, keys, s.key_stride, nullptr,
                         scores, ldc);
        return;
    }
    k.pack_transposed(keys, s.key_stride, n, s.d, slot.packed_keys);
    k.gemm_packed(rows, n, s.d, scale, queries, s.query_stride, slot.packed_keys, k.panel_width,
                  nullptr, scores, ldc, false);
}

void block_weighted_sum(const kernel_table &k, const attention_slice &s, size_t row0, size_t rows,
                        size_t key0, size_t n, const float *p, size_t ldp, bool accumulate,
                        const scratch_slot &slot) {
    float *out = s.output + row0 * s.output_stride;
    if (s.stored) {
        s.stored->block_weighted_sum(k, s, row0, rows, key0, n, p, ldp, accumulate, slot);
        return;
    }
    const float *values = s.values + key0 * s.value_stride;
    if (reads_in_place(k, s)) {
        k.gemm_nn_direct(rows, s.dv, n, p, ldp, values, s.value_stride, out, s.output_stride,
                         accumulate);
        return;
    }
    k.pack(values, s.value_stride, n, s.dv, slot.packed_values);
    k.gemm_packed(rows, s.dv, n, 1.0f, p, ldp, slot.packed_values, k.panel_width, nullptr, out,
                  s.output_stride, accumulate);
}

namespace {

// Adds the bias and ALiBi (if any) to the visible scores [lo, hi) of row
// `row`, whose scores for keys [key0, ...) start at `scores`; for_softmax:
// they go on to the softmax (not out as the attention weights).
void add_bias(const kernel_table &k, const attention_slice &s, const attention_mask_view &mask,
              size_t row, size_t key0, size_t lo, size_t hi, float *scores, bool for_softmax = true) {
    const size_t head = s.head_index + row % s.group, i = row / s.group;
    const float *bias = mask.bias_row(s.batch_index, head, i);
    if (bias && lo < hi) k.add(scores + lo - key0, bias + lo, scores + lo - key0, hi - lo);
    if (const alibi_term *alibi = mask.alibi_term_of(); alibi && lo < hi)
        alibi->add(k, mask, s.batch_index, head, i, s.num_queries / s.group, s.num_keys, lo, hi,
                        scores + lo - key0, for_softmax);
}

// The factor of Q K^T: the option's, else 1/sqrt(d).
float score_scale(const attention_mask_view &mask, size_t d) {
    return mask.scale != 0.0f ? mask.scale : 1.0f / sqrtf(static_cast<float>(d));
}

// The softcap (if any) of `rows` rows of n scores, ld apart. Out of line:
// once per block of scores.
__attribute__((noinline)) void cap_scores(const kernel_table &k, const attention_mask_view &mask, float *scores,
                                          size_t rows, size_t n, size_t ld) {
    for (size_t r = 0; r < rows; ++r) k.softcap(scores + r * ld, n, mask.softcap);
}

// Scores, softmax and weighted sum with whole rows of weights (rows, K) at
// `weights` (rows ldw apart): the caller's attention weights, or the slot's
// scores when one key block holds every key.
void attention_with_weights(const kernel_table &k, const attention_slice &s, size_t row0,
                            size_t rows, const attention_mask_view &mask, float *weights,
                            size_t ldw, const scratch_slot &slot) {
    // Scores outside every row's visible keys are never read by the softmax.
    const key_interval keys = block_keys(s, mask, row0, rows);
    const float scale = score_scale(mask, s.d);
    const size_t key_block = key_block_for(s.num_keys);
    for (size_t key0 = keys.lo; key0 < keys.hi; key0 += key_block) {
        const size_t n = min_size(key_block, keys.hi - key0);
        const key_interval seeing = rows_seeing(s, mask, row0, rows, key0, n);
        if (seeing.lo < seeing.hi) {
            float *scores = weights + seeing.lo * ldw + key0;
            block_scores(k, s, row0 + seeing.lo, seeing.hi - seeing.lo, key0, n, scale, scores, ldw, slot);
            if (mask.caps_scores()) cap_scores(k, mask, scores, seeing.hi - seeing.lo, n, ldw);
        }
    }
    softmax_and_weighted_sum(k, s, row0, rows, mask, weights, ldw, slot);
}

// How a row takes one chunk [key0, key0 + n) of the streaming key grid:
// not at all (it sees none of it), in one online-softmax step (it sees all
// of it, or the chunk is a quarter or less), or in quarters (it sees part
// of it: the diagonal of a causal mask, a window's edge), so that rows above
// a quarter's diagonal skip it: causal attention at 2048 keys does 52% of
// the full products instead of 56%. A property of the row alone, so a row's
// steps, and so its bits, never depend on which rows share its block.
enum class chunk_steps { none, whole, quarters };

chunk_steps steps_of(key_interval iv, size_t key0, size_t n) {
    if (iv.lo >= iv.hi || iv.lo >= key0 + n || iv.hi <= key0) return chunk_steps::none;
    if (n <= diagonal_step || (iv.lo <= key0 && iv.hi >= key0 + n)) return chunk_steps::whole;
    return chunk_steps::quarters;
}

// One online-softmax step of rows [first, last) of the block over keys
// [key0, key0 + n), whose scores go to column `col` of the slot's rows.
// only_visible: one row, whose weighted sum reads only the values it sees.
void streaming_step(const kernel_table &k, const attention_slice &s, size_t row0, size_t first, size_t last,
                    const attention_mask_view &mask, size_t key0, size_t n, size_t col,
                    const scratch_slot &slot, bool only_visible) {
    const size_t ld = key_block_for(s.num_keys);
    const float scale = score_scale(mask, s.d);
    float *scores = slot.scores + first * ld + col;
    block_scores(k, s, row0 + first, last - first, key0, n, scale, scores, ld, slot);
    if (mask.caps_scores()) cap_scores(k, mask, scores, last - first, n, ld);
    size_t lo = 0, hi = 0;
    for (size_t r = first; r < last; ++r) {
        float *p = slot.scores + r * ld + col;
        const key_interval iv = row_keys(s, mask, row0 + r);
        lo = min_size(max_size(iv.lo, key0), key0 + n) - key0;
        hi = max_size(min_size(iv.hi, key0 + n), key0) - key0;
        hi = max_size(hi, lo);
        add_bias(k, s, mask, row0 + r, key0, lo + key0, hi + key0, p);
        const float correction =
            k.online_softmax_block(p, p, n, lo, hi, slot.running_max + r, slot.running_sum + r);
        if (correction != 1.0f) k.scale(s.output + (row0 + r) * s.output_stride, s.dv, correction);
    }
    if (!only_visible)
        block_weighted_sum(k, s, row0 + first, last - first, key0, n, scores, ld, true, slot);
    else if (lo < hi)
        block_weighted_sum(k, s, row0 + first, 1, key0 + lo, hi - lo, scores + lo, ld, true, slot);
}

// Rows [first, last) of the block, which all take chunk [key0, key0 + n)
// in `steps`.
void streaming_chunk(const kernel_table &k, const attention_slice &s, size_t row0, size_t first, size_t last,
                     const attention_mask_view &mask, size_t key0, size_t n, chunk_steps steps,
                     const scratch_slot &slot, bool only_visible) {
    const size_t step = steps == chunk_steps::whole ? n : diagonal_step;
    for (size_t q0 = key0; q0 < key0 + n; q0 += step) {
        const size_t m = min_size(step, key0 + n - q0);
        const key_interval seeing = rows_seeing(s, mask, row0 + first, last - first, q0, m);
        if (seeing.lo < seeing.hi)
            streaming_step(k, s, row0, first + seeing.lo, first + seeing.hi, mask, q0, m, q0 - key0, slot,
                           only_visible);
    }
}

// Output rows [row0, row0 + rows) = weights (rows, K) . values over keys
// [keys.lo, keys.hi), in chunks on the key grid (multiples of the key block
// from key 0), so a row's sums split at the same keys whatever other rows
// share the call; keys outside a row's own add exact zeros. `keys` is never
// empty: a row that sees no key is uniform, so its masked keys weigh.
void weighted_sum(const kernel_table &k, const attention_slice &s, size_t row0, size_t rows, key_interval keys,
                  const float *weights, size_t ldw, const scratch_slot &slot) {
    const size_t key_block = key_block_for(s.num_keys);
    bool accumulate = false;
    for (size_t key0 = keys.lo / key_block * key_block; key0 < keys.hi; key0 += key_block) {
        const size_t lo = max_size(key0, keys.lo), hi = min_size(key0 + key_block, keys.hi);
        block_weighted_sum(k, s, row0, rows, lo, hi - lo, weights + lo, ldw, accumulate, slot);
        accumulate = true;
    }
}

// FlashAttention's online softmax over key blocks; keys a row does not see
// are skipped and added back exactly at the end (d2l's -1e6 rule). The key
// chunks lie on one grid (multiples of the key block from key 0) and each
// row's steps are its own (steps_of), so a row's bits are the same in any
// block of rows. Rows of a block that take a chunk the same way share its
// products; a row between them that sees none of it adds exact zeros.
// A row whose result is NaN or infinite may have met a non-finite value at
// a key it does not see (a zero weight times NaN): it is computed again
// alone, reading only the values it sees (masked positions are never read).
void attention_streaming(const kernel_table &k, const attention_slice &s, size_t row0, size_t rows,
                         const attention_mask_view &mask, const scratch_slot &slot, bool only_visible) {
    const size_t K = s.num_keys, dv = s.dv;
    for (size_t r = 0; r < rows; ++r) {
        slot.running_max[r] = -__builtin_inff();
        slot.running_sum[r] = 0.0f;
        float *out = s.output + (row0 + r) * s.output_stride;
        for (size_t c = 0; c < dv; ++c) out[c] = 0.0f;
    }
    const key_interval keys = block_keys(s, mask, row0, rows);
    const size_t key_block = key_block_for(K);
    for (size_t key0 = keys.lo / key_block * key_block; key0 < keys.hi; key0 += key_block) {
        const size_t n = min_size(key_block, K - key0);
        // Runs of rows that take the chunk the same way (a row that skips
        // it joins the run it sits in).
        chunk_steps run = chunk_steps::none;
        size_t first = 0, last = 0;
        for (size_t r = 0; r <= rows; ++r) {
            const chunk_steps steps = r < rows ? steps_of(row_keys(s, mask, row0 + r), key0, n) : chunk_steps::none;
            if (r < rows && steps == chunk_steps::none) continue;
            if (r < rows && steps == run) {
                last = r + 1;
                continue;
            }
            if (run != chunk_steps::none)
                streaming_chunk(k, s, row0, first, last, mask, key0, n, run, slot, only_visible);
            run = steps;
            first = r;
            last = r + 1;
        }
    }
    for (size_t r = 0; r < rows; ++r) {
        float *out = s.output + (row0 + r) * s.output_stride;
        float row_max = slot.running_max[r], sum = slot.running_sum[r];
        const key_interval iv = row_keys(s, mask, row0 + r);
        const size_t visible = iv.hi - iv.lo;
        if (mask.excludes() && visible == 0) {  // a row that sees nothing is zero
            for (size_t c = 0; c < dv; ++c) out[c] = 0.0f;
            continue;
        }
        if (visible < K && !mask.excludes()) sum = join_masked_keys(k, s, iv, row_max, sum, out);
        // Computed again alone, the row uses the slot's first row of
        // scratch, which rows before this one have finished with.
        if (!k.scale_final(out, dv, 1.0f / sum) && visible < K && !only_visible)
            attention_streaming(k, s, row0 + r, 1, mask, slot, true);
    }
}

// EDGEATTN_MASKING_EXCLUDE's softmax: each row over its visible keys alone
// (the others weigh exactly 0; a row that sees none is all zeros).
__attribute__((noinline)) void exclusive_softmax(const kernel_table &k, const attention_slice &s, size_t row0,
                                                 size_t rows, const attention_mask_view &mask, float *weights,
                                                 size_t ldw) {
    for (size_t r = 0; r < rows; ++r) {
        const key_interval iv = row_keys(s, mask, row0 + r);
        float *w = weights + r * ldw;
        if (iv.lo < iv.hi) k.masked_softmax_rows(w + iv.lo, w + iv.lo, ldw, 1, iv.hi - iv.lo, nullptr);
        for (size_t j = 0; j < iv.lo; ++j) w[j] = 0.0f;
        for (size_t j = iv.hi; j < s.num_keys; ++j) w[j] = 0.0f;
    }
}

// EDGEATTN_MASKING_EXCLUDE: the output rows that see no key are zero
// (whatever the block's weighted sum left there).
__attribute__((noinline)) void zero_unseeing_rows(const attention_slice &s, size_t row0, size_t rows,
                                                  const attention_mask_view &mask) {
    for (size_t r = 0; r < rows; ++r) {
        const key_interval iv = row_keys(s, mask, row0 + r);
        if (iv.lo < iv.hi) continue;
        float *out = s.output + (row0 + r) * s.output_stride;
        for (size_t c = 0; c < s.dv; ++c) out[c] = 0.0f;
    }
}

// The attention weights of an ONNX qk_matmul_output mode other than the
// softmax (EDGEATTN_WEIGHTS_SCORES, _SOFTCAPPED, _MASKED) for rows [row0,
// row0 + rows): every key's scaled score, then the softcap, then the bias
// and ALiBi on the visible keys with the masked ones at -1e6 (d2l) or -inf
// (exclude). The output was computed without them.
__attribute__((noinline)) void score_weights(const kernel_table &k, const attention_slice &s, size_t row0,
                                             size_t rows, const attention_mask_view &mask,
                                             const scratch_slot &slot) {
    const size_t K = s.num_keys, ldw = s.weights_stride, key_block = key_block_for(K);
    float *weights = s.weights + row0 * ldw;
    for (size_t key0 = 0; key0 < K; key0 += key_block)
        block_scores(k, s, row0, rows, key0, min_size(key_block, K - key0), score_scale(mask, s.d),
                     weights + key0, ldw, slot);
    if (mask.weights_output == EDGEATTN_WEIGHTS_SCORES) return;
    if (mask.caps_scores()) cap_scores(k, mask, weights, rows, K, ldw);
    if (mask.weights_output == EDGEATTN_WEIGHTS_SOFTCAPPED) return;
    const float masked = mask.excludes() ? -__builtin_inff() : masked_score;
    for (size_t r = 0; r < rows; ++r) {
        const key_interval iv = row_keys(s, mask, row0 + r);
        float *w = weights + r * ldw;
        add_bias(k, s, mask, row0 + r, 0, iv.lo, iv.hi, w, false);
        for (size_t j = 0; j < iv.lo; ++j) w[j] = masked;
        for (size_t j = iv.hi; j < K; ++j) w[j] = masked;
    }
}

}  // namespace

void softmax_and_weighted_sum(const kernel_table &k, const attention_slice &s, size_t row0,
                              size_t rows, const attention_mask_view &mask, float *weights,
                              size_t ldw, const scratch_slot &slot) {
    const size_t K = s.num_keys;
    if (mask.adds_terms())
        for (size_t r = 0; r < rows; ++r) {
            const key_interval iv = row_keys(s, mask, row0 + r);
            add_bias(k, s, mask, row0 + r, 0, iv.lo, iv.hi, weights + r * ldw);
        }
    // Whether row r's masked keys weigh something (every masked key of a row
    // weighs the same: rows near -1e6, or uniform ones); then its weighted
    // sum needs every key, else only those it sees.
    auto masked_weigh = [&](size_t r, key_interval iv) {
        const size_t masked_at = iv.lo > 0 ? 0 : iv.hi;
        return masked_at < K && weights[r * ldw + masked_at] != 0.0f;
    };
    // When no row's masked keys weigh anything, only the keys some row
    // sees enter the weighted sum (half the products of a causal block).
    bool masked_keys_weigh = false;
    if (mask.excludes())
        exclusive_softmax(k, s, row0, rows, mask, weights, ldw);
    else
        masked_softmax_in_chunks(
            k, weights, weights, ldw, rows, K, [&](size_t r) { return row_keys(s, mask, row0 + r); },
            [&](size_t r, key_interval iv) { masked_keys_weigh = masked_keys_weigh || masked_weigh(r, iv); });
    const key_interval keys = masked_keys_weigh ? key_interval{0, K} : block_keys(s, mask, row0, rows);
    if (keys.lo < keys.hi) weighted_sum(k, s, row0, rows, keys, weights, ldw, slot);
    // A row that sees every key sums over the same keys whatever its block.
    // Any other row's zeros leave as +0 (the keys its sum spans, and so the
    // sign of an exact zero, depend on the rows beside it), and if its sum
    // met a NaN or infinite value at a key it does not need (zero weight
    // times NaN), it is summed again over its own keys alone.
    for (size_t r = 0; r < rows && !mask.masks_nothing(); ++r) {
        const key_interval iv = row_keys(s, mask, row0 + r);
        if (sees_every_key(iv, K)) continue;
        float *out = s.output + (row0 + r) * s.output_stride;
        if (k.scale_final(out, s.dv, 1.0f)) continue;
        weighted_sum(k, s, row0 + r, 1, masked_weigh(r, iv) ? key_interval{0, K} : iv, weights + r * ldw, ldw,
                     slot);
        k.scale_final(out, s.dv, 1.0f);
    }
    if (mask.excludes()) zero_unseeing_rows(s, row0, rows, mask);
}

namespace {

// A row of at most this many multiply-adds (keys times d + dv) and keys
// (d2l's examples: 10 keys of 2 features, values of 4; a head of 20 over 6
// keys): the block path's setup (key blocks, the rows' intervals asked per
// step, the masked softmax's row groups, a final pass for the rows that do
// not see every key) costs more than its products, so such rows go one at
// a time through small_row. Chosen by the call's shape and options, never
// by the block a row sits in, so a row's bits do not depend on the split.
// (Cortex-M4F -Os, d2l's sdpa example: 5,830 -> 3,015 instructions.)
constexpr size_t small_row_products = 256, small_row_keys = 32;
// At most one vector's width of features (4 floats: SSE2, NEON, Helium)
// the vector products gain nothing over loops and cost their setup; such
// scores and weighted sums go through plain loops (d2l's sdpa example,
// d = 2 and values of 4, on Helium -Os: 3,262 -> 2,871 instructions).
constexpr size_t small_row_features = 4;

// Rows one at a time pay on the Cortex-M paths (plain C++, Helium: d2l's
// block 2.4-4.9% fewer instructions); the x86 and NEON vectors run a few
// rows faster together (AVX-512: sdpa of 4-row heads of 20, 1.19x slower
// one at a time), and take single rows alone (a decode step, d2l's sdpa
// example).
bool takes_small_rows(const kernel_table &k, const attention_slice &s, const attention_mask_view &mask) {
    if (s.num_queries > 1 && k.isa != EDGEATTN_ISA_SCALAR && k.isa != EDGEATTN_ISA_HELIUM) return false;
    return !s.stored && !mask.adds_terms() && mask.scores_plain() && s.num_keys <= small_row_keys &&
           s.num_keys * (s.d + s.dv) <= small_row_products;
}

// y[i] = alpha * sum over t < terms of a[t] * b[i * b_step + t * term_step],
// i < outputs (both at least 1), each sum in t's order: the scores of a
// small row (the keys as b) and its weighted sum (the values as b, alpha
// 1), in one loop nest. Pointers stepped, not indices multiplied (GCC -Os
// keeps the multiplications: d2l's sdpa example on the Cortex-M4F 3,040 ->
// 2,990 instructions), each only to an element read next (never past the
// caller's array).
void strided_dots(size_t outputs, size_t terms, const float *a, const float *b, size_t b_step, size_t term_step,
                  float alpha, float *y) {
    for (size_t i = 0;;) {
        float sum = 0.0f;
        const float *term = b;
        for (size_t t = 0;;) {
            sum += a[t] * *term;
            if (++t == terms) break;
            term += term_step;
        }
        y[i] = sum * alpha;
        if (++i == outputs) break;
        b += b_step;
    }
}

#if !defined(__OPTIMIZE_SIZE__)
// strided_dots with the features a compile-time count F (1 to
// small_row_features), the same sums in the same order: the scores (the
// query's F features in registers, one key a step) and the weighted sum (F
// running sums, one value row a step). The loop over features unrolled,
// d2l's sdpa example (d = 2, values of 4) on the Cortex-M4F -O3 executes
// 2,065 instructions, not 2,240; builds for size keep strided_dots alone.
// Its scores also give their maximum and whether all are finite (the
// product of 0 and every score: NaN if one is NaN or infinite).
template <size_t F>
float small_scores(size_t n, const float *q, const float *keys, size_t key_stride, float scale, float *p,
                   float &finite) {
    float query[F];
    for (size_t t = 0; t < F; ++t) query[t] = q[t];
    float row_max = -__builtin_inff(), zero = 0.0f;
    for (size_t j = 0; j < n; ++j) {
        const float *key = keys + j * key_stride;
        float sum = 0.0f;
        for (size_t t = 0; t < F; ++t) sum += query[t] * key[t];
        const float score = sum * scale;
        p[j] = score;
        zero *= score;
        row_max = score > row_max ? score : row_max;
    }
    finite = zero;
    return row_max;
}

// out = sum over j of (p[j] * factor) * value row j: the weights p
// normalised already (factor 1), or exponentials and the inverse of their
// sum, each weight then formed as the step takes it (the same product as
// the normalised weight: the same bits, and as the weights never exceed 1,
// no sum past the values' largest).
template <size_t F>
void small_weighted_sum(size_t n, const float *p, float factor, const float *values, size_t value_stride,
                        float *out) {
    float sums[F] = {};
    for (size_t j = 0; j < n; ++j) {
        const float w = p[j] * factor, *value = values + j * value_stride;
        for (size_t i = 0; i < F; ++i) sums[i] += w * value[i];
    }
    for (size_t i = 0; i < F; ++i) out[i] = sums[i];
}

// The softmax's division and the weighted sum of n exponentials e in one
// pass over them, for values of dv <= small_row_features (false for wider
// ones): without the weights output, they are never stored normalised.
bool small_row_normalised_sum(size_t n, size_t dv, const float *e, const float *values, size_t value_stride,
                              float *out) {
    if (dv > small_row_features) return false;
    float sum = 0.0f;
    for (size_t j = 0; j < n; ++j) sum += e[j];
    const float inverse = 1.0f / sum;
    switch (dv) {
        case 1: return small_weighted_sum<1>(n, e, inverse, values, value_stride, out), true;
        case 2: return small_weighted_sum<2>(n, e, inverse, values, value_stride, out), true;
        case 3: return small_weighted_sum<3>(n, e, inverse, values, value_stride, out), true;
        default: return small_weighted_sum<4>(n, e, inverse, values, value_stride, out), true;
    }
}
#endif

// The maximum of n scores; finite: 0 if all are finite, else NaN.
float max_of_scores(const float *p, size_t n, float &finite) {
    float row_max = -__builtin_inff(), zero = 0.0f;
    for (size_t j = 0; j < n; ++j) {
        zero *= p[j];
        row_max = p[j] > row_max ? p[j] : row_max;
    }
    finite = zero;
    return row_max;
}

// The scores of a small row's n visible keys, their maximum and whether
// they are finite (as max_of_scores).
float small_row_scores(const kernel_table &k, size_t n, size_t d, const float *q, const float *keys,
                       size_t key_stride, float scale, float *p, float &finite) {
#if !defined(__OPTIMIZE_SIZE__)
    switch (d) {
        case 1: return small_scores<1>(n, q, keys, key_stride, scale, p, finite);
        case 2: return small_scores<2>(n, q, keys, key_stride, scale, p, finite);
        case 3: return small_scores<3>(n, q, keys, key_stride, scale, p, finite);
        case 4: return small_scores<4>(n, q, keys, key_stride, scale, p, finite);
    }
#endif
    if (d <= small_row_features)
        strided_dots(n, d, q, keys, key_stride, 1, scale, p);
    else
        k.gemm_nt_direct(1, n, d, scale, q, d, keys, key_stride, nullptr, p, n);
    return max_of_scores(p, n, finite);
}

// The weighted sum of n value rows of dv <= small_row_features.
void small_row_sum(size_t n, size_t dv, const float *p, const float *values, size_t value_stride, float *out) {
#if !defined(__OPTIMIZE_SIZE__)
    switch (dv) {
        case 1: return small_weighted_sum<1>(n, p, 1.0f, values, value_stride, out);
        case 2: return small_weighted_sum<2>(n, p, 1.0f, values, value_stride, out);
        case 3: return small_weighted_sum<3>(n, p, 1.0f, values, value_stride, out);
        case 4: return small_weighted_sum<4>(n, p, 1.0f, values, value_stride, out);
    }
#endif
    strided_dots(dv, n, p, values, 1, value_stride, 1.0f, out);
}

// One row of a small call: the scores of the keys it sees, their softmax
// over those keys alone, and their weighted sum of the values (loops up to
// small_row_features, else the path's products for one row); masked keys
// are never read. They weigh
// exactly 0 when the row's maximum lies more than 104 above d2l's -1e6
// (exp below -104 is 0 in binary32); a row below that, one that sees no
// key (uniform) or one with a non-finite score returns false, having
// written nothing, and takes the block path, whose rules cover it.
// scale: the factor of its scores (score_scale), found once for the slice.
bool small_row(const kernel_table &k, const attention_slice &s, size_t row, const attention_mask_view &mask,
               float scale) {
    const key_interval iv = row_keys(s, mask, row);
    const size_t K = s.num_keys, n = iv.hi - iv.lo, d = s.d, dv = s.dv;
    if (n == 0) return false;
    const float *q = s.queries + row * s.query_stride;
    float p[small_row_keys];
    const float *keys = s.keys + iv.lo * s.key_stride, *values = s.values + iv.lo * s.value_stride;
    float finite;
    const float row_max = small_row_scores(k, n, d, q, keys, s.key_stride, scale, p, finite);
    if (finite != 0.0f || (n < K && !(row_max > masked_score + 104.0f))) return false;
    // The softmax of n visible scores written out, its maximum already at
    // hand: the softmax kernel (k.masked_softmax_rows over the n) gives the
    // same up to rounding but sets up row groups for its long rows (d2l's
    // sdpa example, Cortex-M4F -O3: 2,485 instructions through it, 2,205
    // so).
    for (size_t j = 0; j < n; ++j) p[j] -= row_max;
    k.exp_nonpositive(p, p, n);
    float *out = s.output + row * s.output_stride;
#if !defined(__OPTIMIZE_SIZE__)
    // The weights not asked for, they are normalised with the weighted sum.
    if (!s.weights && small_row_normalised_sum(n, dv, p, values, s.value_stride, out)) return true;
#endif
    float sum = 0.0f;
    for (size_t j = 0; j < n; ++j) sum += p[j];
    const float inverse = 1.0f / sum;
    for (size_t j = 0; j < n; ++j) p[j] *= inverse;
    if (s.weights) {
        float *w = s.weights + row * s.weights_stride;
        for (size_t j = 0; j < K; ++j) w[j] = 0.0f;
        for (size_t j = 0; j < n; ++j) w[iv.lo + j] = p[j];
    }
    if (dv <= small_row_features) {
        small_row_sum(n, dv, p, values, s.value_stride, out);
    } else {
        k.gemm_nn_direct(1, dv, n, p, n, values, s.value_stride, out, s.output_stride, false);
    }
    return true;
}

void attention_in_blocks(const kernel_table &k, const attention_slice &s, size_t row0, size_t rows,
                         const attention_mask_view &mask, const scratch_slot &slot);

}  // namespace

void dot_product_attention_block(const kernel_table &k, const attention_slice &s, size_t row0,
                                 size_t rows, const attention_mask_view &mask,
                                 const scratch_slot &slot) {
    if (!takes_small_rows(k, s, mask)) {
        attention_in_blocks(k, s, row0, rows, mask, slot);
        return;
    }
    const float scale = score_scale(mask, s.d);
    for (size_t r = row0; r < row0 + rows; ++r)
        if (!small_row(k, s, r, mask, scale)) attention_in_blocks(k, s, r, 1, mask, slot);
}

namespace {

void attention_in_blocks(const kernel_table &k, const attention_slice &s, size_t row0, size_t rows,
                         const attention_mask_view &mask, const scratch_slot &slot) {
    // With a single key block the online softmax has nothing to save and
    // costs a little more (sdpa 1x128x256x4: 133 vs 110 us), so whole rows
    // of scores go to the slot instead.
    if (s.weights && !mask.weighs_softmax()) {
        attention_slice without = s;
        without.weights = nullptr;
        attention_in_blocks(k, without, row0, rows, mask, slot);
        score_weights(k, s, row0, rows, mask, slot);
    } else if (s.weights)
        attention_with_weights(k, s, row0, rows, mask, s.weights + row0 * s.weights_stride,
                               s.weights_stride, slot);
    else if (s.num_keys <= keys_per_block)
        attention_with_weights(k, s, row0, rows, mask, slot.scores, s.num_keys, slot);
    else if (with_long_rows)  // else refused by check_long_rows
        attention_streaming(k, s, row0, rows, mask, slot, false);
}

}  // namespace

}  // namespace detail
}  // namespace edgeattn
