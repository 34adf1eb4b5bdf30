// Attention's reads of an int8 / fp16 KV cache's rows
// (edgeattn_kv_cache_config::storage): the scores against its stored keys, the
// weighted sum of its stored values, a masked key's value row. Reached only
// through attention_slice::stored (set by kv_cache.cpp), so programs without
// a typed cache do not carry this file or its kernels.
#include "attention_rows.hpp"
#include "kernels/widen.hpp"
#include "linear.hpp"

namespace edgeattn {
namespace detail {

namespace {

// Stored rows [row0, row0 + n) of r, each `stride` elements.
const void *stored_at(const stored_rows &r, size_t row0, size_t stride) {
    return static_cast<const unsigned char *>(r.data) + row0 * stride * element_bytes(r.type);
}

const float *stored_scales_at(const stored_rows &r, size_t row0) {
    return r.scales ? r.scales + row0 : nullptr;
}

// Element (row, col) of stored rows, widened (and scaled).
template <class T>
float stored_value(const stored_rows &r, size_t row, size_t col, size_t stride) {
    const float v = widen(static_cast<const T *>(r.data)[row * stride + col]);
    return r.scales ? v * r.scales[row] : v;
}

float stored_value(const stored_rows &r, size_t row, size_t col, size_t stride) {
    return r.type == EDGEATTN_DTYPE_INT8 ? stored_value<int8_t>(r, row, col, stride)
                                           : stored_value<uint16_t>(r, row, col, stride);
}

// The packed forms of pack_transposed / pack for stored rows: widened and
// scaled into the block's fp32 panels of nr columns (the block, not the
// cache), each source row read once, in order.
template <class T>
void pack_stored_transposed(const stored_rows &r, size_t row0, size_t stride, size_t n, size_t d, size_t nr,
                            float *packed) {
    const T *data = static_cast<const T *>(r.data);
    for (size_t j = 0; j < (n + nr - 1) / nr * nr; ++j) {
        float *column = packed + j / nr * nr * d + j % nr;  // column j % nr of panel j / nr
        if (j >= n) {
            for (size_t kk = 0; kk < d; ++kk) column[kk * nr] = 0.0f;
            continue;
        }
        const T *row = data + (row0 + j) * stride;
        const float scale = r.scales ? r.scales[row0 + j] : 1.0f;
        for (size_t kk = 0; kk < d; ++kk) column[kk * nr] = widen(row[kk]) * scale;
    }
}

template <class T>
void pack_stored(const stored_rows &r, size_t row0, size_t stride, size_t n, size_t dv, size_t nr, float *packed) {
    const T *data = static_cast<const T *>(r.data);
    for (size_t kk = 0; kk < n; ++kk) {
        const T *row = data + (row0 + kk) * stride;
        const float scale = r.scales ? r.scales[row0 + kk] : 1.0f;
        for (size_t p0 = 0; p0 < dv; p0 += nr) {
            float *dst = packed + p0 * n + kk * nr;
            for (size_t j = 0; j < nr; ++j) dst[j] = p0 + j < dv ? widen(row[p0 + j]) * scale : 0.0f;
        }
    }
}

void pack_stored_transposed(const stored_rows &r, size_t row0, size_t stride, size_t n, size_t d, size_t nr,
                            float *packed) {
    if (r.type == EDGEATTN_DTYPE_INT8)
        pack_stored_transposed<int8_t>(r, row0, stride, n, d, nr, packed);
    else
        pack_stored_transposed<uint16_t>(r, row0, stride, n, d, nr, packed);
}

void pack_stored(const stored_rows &r, size_t row0, size_t stride, size_t n, size_t dv, size_t nr, float *packed) {
    if (r.type == EDGEATTN_DTYPE_INT8)
        pack_stored<int8_t>(r, row0, stride, n, dv, nr, packed);
    else
        pack_stored<uint16_t>(r, row0, stride, n, dv, nr, packed);
}

// Scores of rows [row0, row0 + rows) against stored keys [key0, key0 + n).
void stored_block_scores(const kernel_table &k, const attention_slice &s, size_t row0, size_t rows,
                         size_t key0, size_t n, float scale, float *scores, size_t ldc,
                         const scratch_slot &slot) {
    const float *queries = s.queries + row0 * s.query_stride;
    const stored_rows &stored = s.typed->keys;
    if (with_int8_arithmetic && s.typed->queries.codes) {
        integer_scores(k, s.typed->queries, s.query_stride, row0, rows, s.d, stored, s.key_stride, key0, n, scale,
                       scores, ldc);
        return;
    }
    if (reads_in_place(k, s)) {
        stored_kernels(k, stored.type)
            .gemm_nt_direct(rows, n, s.d, scale, queries, s.query_stride,
                            stored_at(stored, key0, s.key_stride), s.key_stride,
                            stored_scales_at(stored, key0), nullptr, scores, ldc);
        return;
    }
    pack_stored_transposed(stored, key0, s.key_stride, n, s.d, k.panel_width, slot.packed_keys);
    k.gemm_packed(rows, n, s.d, scale, queries, s.query_stride, slot.packed_keys, k.panel_width,
                  nullptr, scores, ldc, false);
}

// output rows [row0, row0 + rows) (+)= p (rows, n) . stored values [key0, key0 + n).
void stored_block_weighted_sum(const kernel_table &k, const attention_slice &s, size_t row0,
                               size_t rows, size_t key0, size_t n, const float *p, size_t ldp,
                               bool accumulate, const scratch_slot &slot) {
    float *out = s.output + row0 * s.output_stride;
    const stored_rows &stored = s.typed->values;
    if (reads_in_place(k, s)) {
        const cache_kernel_table &cache = cache_kernels_of(k);
        (stored.type == EDGEATTN_DTYPE_INT8 ? cache.int8_values : cache.half_values)(
            rows, s.dv, n, p, ldp, stored_at(stored, key0, s.value_stride), s.value_stride,
            stored_scales_at(stored, key0), out, s.output_stride, accumulate);
        return;
    }
    pack_stored(stored, key0, s.value_stride, n, s.dv, k.panel_width, slot.packed_values);
    k.gemm_packed(rows, s.dv, n, 1.0f, p, ldp, slot.packed_values, k.panel_width, nullptr, out,
                  s.output_stride, accumulate);
}

// out += w * stored value row j.
void stored_add_value_row(const attention_slice &s, size_t j, float w, float *out) {
    for (size_t c = 0; c < s.dv; ++c) out[c] += w * stored_value(s.typed->values, j, c, s.value_stride);
}

}  // namespace

const stored_cache_operations stored_cache_rows{&stored_block_scores, &stored_block_weighted_sum,
                                                &stored_add_value_row};

}  // namespace detail
}  // namespace edgeattn
