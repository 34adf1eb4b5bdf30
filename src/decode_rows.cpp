// A decode step's attention over a KV cache (decode_rows.hpp): one query
// token, the query heads sharing a key/value head as the slice's rows,
// each chunk of keys an online softmax of its own, the chunks folded in order.
#include "decode_rows.hpp"

#include <math.h>

#include "linear.hpp"
#include "ring_runs.hpp"

namespace edgeattn {
namespace detail {

const decode_kernel_table *decode_kernels_for(const kernel_table &k, size_t queries, bool weights) {
    if (queries != 1 || weights) return nullptr;
    switch (k.isa) {
#if defined(EDGEATTN_HAVE_SSE2)
        case EDGEATTN_ISA_SSE2: return &sse2_decode_kernels;
#endif
#if defined(EDGEATTN_HAVE_AVX2)
        case EDGEATTN_ISA_AVX2: return &avx2_decode_kernels;
#endif
#if defined(EDGEATTN_HAVE_AVX512)
        case EDGEATTN_ISA_AVX512: return &avx512_decode_kernels;
#endif
#if defined(EDGEATTN_HAVE_NEON)
        case EDGEATTN_ISA_NEON: return &neon_decode_kernels;
#endif
#if defined(EDGEATTN_HAVE_HELIUM)
        case EDGEATTN_ISA_HELIUM: return &helium_decode_kernels;
#endif
        default: return nullptr;
    }
}

namespace {

size_t min_size(size_t a, size_t b) { return a < b ? a : b; }
size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

// A chunk's partial, or the slice's running state: rows of outputs
// `stride` apart, a maximum and a sum per row.
struct softmax_state {
    float *out;
    size_t stride;
    float *max, *sum;
};

softmax_state partial_at(float *partial, size_t rows, size_t dv) {
    return {partial, dv, partial + rows * dv, partial + rows * dv + rows};
}

// The keys the slice's one query token sees (every row: the same token).
key_interval visible_keys(const attention_slice &s, const attention_mask_view &mask) {
    return mask.of_row(s.batch_index, 0, 1, s.num_keys);
}

// The visible keys of chunk c.
key_interval chunk_keys(const attention_slice &s, key_interval visible, size_t c) {
    const size_t per = decode_chunk_keys(s.num_keys);
    const size_t lo = max_size(c * per, visible.lo), hi = min_size(min_size((c + 1) * per, s.num_keys), visible.hi);
    return {lo, hi > lo ? hi : lo};
}

// The rows (fp32, or in their stored type) keys or values are read from.
// A wrapped ring reads through ring_runs; typed rows are *s.typed.
edgeattn_dtype storage_type(const attention_slice &s) {
    const stored_cache_operations *rows = s.ring ? s.ring->rows_stored : s.stored;
    return rows ? s.typed->keys.type : EDGEATTN_DTYPE_F32;
}

// f(physical row, column offset, n) for each run of logical keys
// [key0, key0 + n) that lies contiguously.
template <class F>
void for_each_run(const attention_slice &s, size_t key0, size_t n, F f) {
    if (!s.ring) {
        f(key0, size_t{0}, n);
        return;
    }
    key_run runs[3];
    const size_t count = ring_runs(*s.ring, key0, n, runs);
    for (size_t i = 0; i < count; ++i) f(runs[i].physical, runs[i].logical - key0, runs[i].n);
}

const void *typed_row(const stored_rows &r, size_t row, size_t stride) {
    return static_cast<const unsigned char *>(r.data) + row * stride * element_bytes(r.type);
}

// scores (rows, n), row stride ld = scale * queries . keys [key0, key0 + n)
// (in the int8 arithmetic: integer_scores).
void block_scores_of(const kernel_table &k, const decode_kernel_table &dk, const attention_slice &s, size_t key0,
                     size_t n, float scale, float *scores, size_t ld) {
    const edgeattn_dtype type = storage_type(s);
    const size_t rows = s.num_queries;
    for_each_run(s, key0, n, [&](size_t row, size_t col, size_t m) {
        if (with_int8_arithmetic && type == EDGEATTN_DTYPE_INT8 && s.typed->queries.codes)
            integer_scores(k, s.typed->queries, s.query_stride, 0, rows, s.d, s.typed->keys, s.key_stride, row, m,
                           scale, scores + col, ld);
        else if (type == EDGEATTN_DTYPE_F32)
            dk.f32_scores(rows, m, s.d, scale, s.queries, s.query_stride, s.keys + row * s.key_stride, s.key_stride,
                          nullptr, scores + col, ld);
        else
            (type == EDGEATTN_DTYPE_INT8 ? dk.int8_scores : dk.half_scores)(
                rows, m, s.d, scale, s.queries, s.query_stride, typed_row(s.typed->keys, row, s.key_stride),
                s.key_stride, s.typed->keys.scales ? s.typed->keys.scales + row : nullptr, scores + col, ld);
    });
}

// state.out (rows, dv) += p (rows, n) . values [key0, key0 + n).
void block_values_of(const decode_kernel_table &dk, const attention_slice &s, size_t key0, size_t n,
                     const float *p, size_t ldp, const softmax_state &state) {
    const edgeattn_dtype type = storage_type(s);
    const size_t rows = s.num_queries;
    for_each_run(s, key0, n, [&](size_t row, size_t col, size_t m) {
        if (type == EDGEATTN_DTYPE_F32)
            dk.f32_values(rows, s.dv, m, p + col, ldp, s.values + row * s.value_stride, s.value_stride, nullptr,
                          state.out, state.stride);
        else
            (type == EDGEATTN_DTYPE_INT8 ? dk.int8_values : dk.half_values)(
                rows, s.dv, m, p + col, ldp, typed_row(s.typed->values, row, s.value_stride), s.value_stride,
                s.typed->values.scales ? s.typed->values.scales + row : nullptr, state.out, state.stride);
    });
}

}  // namespace

// What a block of scores (rows, n) for keys [key0, key0 + n), all visible,
// becomes before the softmax, beyond the scale the products applied: the
// softcap, then the mask's additive bias and ALiBi of each row's head.
// Every score transform of a decode step belongs here, on one block at a
// time.
void decode_transform_scores(const kernel_table &k, const attention_slice &s, const attention_mask_view &mask,
                             size_t key0, size_t n, float *scores, size_t ld) {
    if (!mask.caps_scores() && !mask.adds_terms()) return;
    for (size_t r = 0; r < s.num_queries; ++r) {
        float *row = scores + r * ld;
        const size_t head = s.head_index + r % s.group, i = r / s.group;
        if (mask.caps_scores()) k.softcap(row, n, mask.softcap);
        if (const float *bias = mask.bias_row(s.batch_index, head, i)) k.add(row, bias + key0, row, n);
        if (const alibi_term *alibi = mask.alibi_term_of())
            alibi->add(k, mask, s.batch_index, head, i, s.num_queries / s.group, s.num_keys, key0, key0 + n,
                            row, true);
    }
}

namespace {

// The state of no key yet.
void init_state(size_t rows, size_t dv, const softmax_state &state) {
    for (size_t r = 0; r < rows; ++r) {
        state.max[r] = -__builtin_inff();
        state.sum[r] = 0.0f;
        for (size_t c = 0; c < dv; ++c) state.out[r * state.stride + c] = 0.0f;
    }
}

// The online softmax of visible keys [keys.lo, keys.hi) into `state`
// (initialised here).
void chunk_into(const kernel_table &k, const decode_kernel_table &dk, const attention_slice &s,
                const attention_mask_view &mask, key_interval keys, const softmax_state &state,
                const scratch_slot &slot) {
    const size_t rows = s.num_queries, dv = s.dv;
    init_state(rows, dv, state);
    const size_t block = key_block_for(s.num_keys);
    const float scale = mask.scale != 0.0f ? mask.scale : 1.0f / sqrtf(static_cast<float>(s.d));
    for (size_t key0 = keys.lo; key0 < keys.hi; key0 += block) {
        const size_t n = min_size(block, keys.hi - key0);
        block_scores_of(k, dk, s, key0, n, scale, slot.scores, block);
        decode_transform_scores(k, s, mask, key0, n, slot.scores, block);
        for (size_t r = 0; r < rows; ++r) {
            float *p = slot.scores + r * block;
            const float correction = k.online_softmax_block(p, p, n, 0, n, state.max + r, state.sum + r);
            if (correction != 1.0f) k.scale(state.out + r * state.stride, dv, correction);
        }
        block_values_of(dk, s, key0, n, slot.scores, block, state);
    }
}

// state = state (+) part: both rescaled to the larger maximum.
void fold(const kernel_table &k, size_t rows, size_t dv, const softmax_state &state, const softmax_state &part) {
    for (size_t r = 0; r < rows; ++r) {
        const float a = state.max[r], b = part.max[r], m = b > a ? b : a;
        float factors[2] = {a - m, b - m};
        k.exp(factors, factors, 2);
        const float ca = a == m ? 1.0f : factors[0], cb = b == m ? 1.0f : factors[1];
        float *out = state.out + r * state.stride;
        if (ca != 1.0f) k.scale(out, dv, ca);
        k.add_scaled(part.out + r * part.stride, cb, out, dv);
        state.sum[r] = state.sum[r] * ca + part.sum[r] * cb;
        state.max[r] = m;
    }
}

void copy_state(size_t rows, size_t dv, const softmax_state &to, const softmax_state &from) {
    for (size_t r = 0; r < rows; ++r) {
        for (size_t c = 0; c < dv; ++c) to.out[r * to.stride + c] = from.out[r * from.stride + c];
        to.max[r] = from.max[r];
        to.sum[r] = from.sum[r];
    }
}

// The rows' results from the folded state: masked keys join as
// attention_rows.cpp's streaming softmax adds them (d2l's -1e6), or weigh
// nothing (EDGEATTN_MASKING_EXCLUDE: a row that sees no key is zero), then
// the division by the sum. The products read only visible keys, so a row
// that ends NaN or infinite is what recomputing it over its visible keys
// gives.
void finish(const kernel_table &k, const attention_slice &s, const attention_mask_view &mask, key_interval visible,
            const softmax_state &state) {
    const size_t K = s.num_keys, dv = s.dv, seen = visible.hi - visible.lo;
    for (size_t r = 0; r < s.num_queries; ++r) {
        float *out = state.out + r * state.stride;
        float sum = state.sum[r];
        if (mask.excludes() && seen == 0) {
            for (size_t c = 0; c < dv; ++c) out[c] = 0.0f;
            continue;
        }
        if (seen < K && !mask.excludes()) sum = join_masked_keys(k, s, visible, state.max[r], sum, out);
        k.scale_final(out, dv, 1.0f / sum);
    }
}

softmax_state output_state(const attention_slice &s, const scratch_slot &slot) {
    return {s.output, s.output_stride, slot.running_max, slot.running_sum};
}

// A slice with no keys (nothing cached) contributes zeros.
bool zero_if_empty(const attention_slice &s) {
    if (s.num_keys != 0) return false;
    for (size_t r = 0; r < s.num_queries; ++r)
        for (size_t c = 0; c < s.dv; ++c) s.output[r * s.output_stride + c] = 0.0f;
    return true;
}

}  // namespace

void decode_chunk_partial(const kernel_table &k, const decode_kernel_table &dk, const attention_slice &s,
                          const attention_mask_view &mask, size_t c, float *partial, const scratch_slot &slot) {
    const key_interval keys = chunk_keys(s, visible_keys(s, mask), c);
    if (keys.lo < keys.hi) chunk_into(k, dk, s, mask, keys, partial_at(partial, s.num_queries, s.dv), slot);
}

void decode_fold_partials(const kernel_table &k, const attention_slice &s, const attention_mask_view &mask,
                          const float *partials, const scratch_slot &slot) {
    if (zero_if_empty(s)) return;
    const size_t rows = s.num_queries, dv = s.dv, per = decode_partial_floats(rows, dv);
    const key_interval visible = visible_keys(s, mask);
    const softmax_state state = output_state(s, slot);
    bool first = true;
    for (size_t c = 0; c < decode_splits(s.num_keys); ++c) {
        const key_interval keys = chunk_keys(s, visible, c);
        if (keys.lo == keys.hi) continue;
        const softmax_state part = partial_at(const_cast<float *>(partials) + c * per, rows, dv);
        if (first)
            copy_state(rows, dv, state, part);
        else
            fold(k, rows, dv, state, part);
        first = false;
    }
    if (first) init_state(rows, dv, state);  // no key visible
    finish(k, s, mask, visible, state);
}

void decode_slice(const kernel_table &k, const decode_kernel_table &dk, const attention_slice &s,
                  const attention_mask_view &mask, const scratch_slot &slot) {
    if (zero_if_empty(s)) return;
    const size_t rows = s.num_queries, dv = s.dv;
    const key_interval visible = visible_keys(s, mask);
    const softmax_state state = output_state(s, slot);
    // A later chunk's partial: in the packed values' room, which reading
    // in place leaves unused (more than one chunk: a key block of 256
    // rows, and at most grouped_rows_limit rows here).
    const softmax_state part = partial_at(slot.packed_values, rows, dv);
    bool first = true;
    for (size_t c = 0; c < decode_splits(s.num_keys); ++c) {
        const key_interval keys = chunk_keys(s, visible, c);
        if (keys.lo == keys.hi) continue;
        chunk_into(k, dk, s, mask, keys, first ? state : part, slot);
        if (!first) fold(k, rows, dv, state, part);
        first = false;
    }
    if (first) init_state(rows, dv, state);  // no key visible
    finish(k, s, mask, visible, state);
}

}  // namespace detail
}  // namespace edgeattn
