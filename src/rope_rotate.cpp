// The RoPE rotation and its checks (rope_rotate.hpp). The loops are plain
// C++ the compiler vectorises (NeoX: two contiguous halves; GPT-J: even
// and odd features); each product is its own statement, Clang's
// contraction is off here and the build compiles this file with
// -ffp-contract=off (GCC fuses by default for C++), so no compiler fuses
// x c - y s into a multiply-add, and the bits are those of the formula on
// every target.
#include "rope_rotate.hpp"

#include <string.h>

namespace edgeattn {
namespace detail {

edgeattn_status read_rope(const edgeattn_rope *rope, size_t head_size, size_t batch, rope_view &v) {
    v = rope_view{};
    edgeattn_rope r;
    if (!read_argument(rope, r)) return EDGEATTN_OK;
    const int layout = enum_as_int(r.layout);  // a C caller may store any int there
    if (!r.table) {
        if (r.max_positions == 0 && r.rotary_dims == 0 && layout == 0 && !r.positions) return EDGEATTN_OK;
        return EDGEATTN_ERR_BAD_ROPE;
    }
    if (r.rotary_dims == 0 || r.rotary_dims % 2 != 0 || r.rotary_dims > head_size || r.max_positions == 0 ||
        (layout != EDGEATTN_ROPE_NEOX && layout != EDGEATTN_ROPE_GPTJ))
        return EDGEATTN_ERR_BAD_ROPE;
    size_t table_count = 0;
    if (edgeattn_status st = tensor_count(table_count, r.max_positions, r.rotary_dims)) return st;
    if (!is_float_aligned(r.table)) return EDGEATTN_ERR_MISALIGNED;
    if (reinterpret_cast<uintptr_t>(r.positions) % alignof(int32_t) != 0) return EDGEATTN_ERR_MISALIGNED;
    v.active = true;
    v.table = r.table;
    v.max_positions = r.max_positions;
    v.rotary_dims = r.rotary_dims;
    v.layout = layout;
    v.positions = r.positions;
    v.batch = batch;
    return EDGEATTN_OK;
}

int64_t rope_first_position(const rope_view &v, size_t b, const int32_t *default_first, int64_t default_offset) {
    if (v.positions) return v.positions[b];
    return (default_first ? static_cast<int64_t>(default_first[b]) : 0) + default_offset;
}

namespace {

// Whether first + t, t < count, all lie in (-limit, limit). limit < 2^62
// (the table's bytes fit in size_t), so limit - first cannot overflow once
// first is inside the range.
bool positions_in_range(int64_t first, uint64_t count, uint64_t limit) {
    const int64_t bound = static_cast<int64_t>(limit);
    if (first <= -bound || first >= bound) return false;
    return count <= static_cast<uint64_t>(bound - first);
}

// Pair i of a NeoX head: (lo[i], hi[i]), hi = lo + rotary_dims / 2.
// Negative positions rotate by -angle: x c - y (-s) = x c + y s exactly.
template <bool Negative>
void rotate_half_split(float *__restrict lo, float *__restrict hi, const float *__restrict c,
                       const float *__restrict s, size_t half) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
    for (size_t i = 0; i < half; ++i) {
        const float x = lo[i], y = hi[i];
        const float xc = x * c[i], ys = y * s[i];
        const float yc = y * c[i], xs = x * s[i];
        lo[i] = Negative ? xc + ys : xc - ys;
        hi[i] = Negative ? yc - xs : yc + xs;
    }
}

// Pair i of a GPT-J head: (head[2i], head[2i + 1]).
template <bool Negative>
void rotate_interleaved(float *__restrict head, const float *__restrict c, const float *__restrict s,
                        size_t half) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
    for (size_t i = 0; i < half; ++i) {
        const float x = head[2 * i], y = head[2 * i + 1];
        const float xc = x * c[i], ys = y * s[i];
        const float yc = y * c[i], xs = x * s[i];
        head[2 * i] = Negative ? xc + ys : xc - ys;
        head[2 * i + 1] = Negative ? yc - xs : yc + xs;
    }
}

template <bool Negative>
void rotate_token(const rope_view &v, float *token, size_t heads, size_t head_size, const float *c) {
    const size_t half = v.rotary_dims / 2;
    const float *s = c + half;
    for (size_t h = 0; h < heads; ++h) {
        float *head = token + h * head_size;
        if (v.layout == EDGEATTN_ROPE_NEOX) rotate_half_split<Negative>(head, head + half, c, s, half);
        else rotate_interleaved<Negative>(head, c, s, half);
    }
}

}  // namespace

edgeattn_status check_rope_positions(const rope_view &v, size_t tokens, const int32_t *default_first,
                                     int64_t default_offset) {
    if (!v.active) return EDGEATTN_OK;
    for (size_t b = 0; b < v.batch; ++b)
        if (!positions_in_range(rope_first_position(v, b, default_first, default_offset), tokens, v.max_positions))
            return EDGEATTN_ERR_ROPE_POSITION;
    return EDGEATTN_OK;
}

void rotate_rows(const rope_view &v, float *rows, size_t tokens, size_t heads, size_t head_size, size_t row_stride,
                 int64_t first_position) {
    if (!v.active) return;
    for (size_t t = 0; t < tokens; ++t) {
        const int64_t p = first_position + static_cast<int64_t>(t);
        const size_t row = static_cast<size_t>(p < 0 ? -p : p);
        const float *c = v.table + row * v.rotary_dims;
        if (p < 0) rotate_token<true>(v, rows + t * row_stride, heads, head_size, c);
        else rotate_token<false>(v, rows + t * row_stride, heads, head_size, c);
    }
}

const float *rotate_batch(const rope_view &v, const float *rows, float *out, size_t batch, size_t tokens,
                          size_t heads, size_t head_size, const int32_t *default_first, int64_t default_offset) {
    if (!v.active) return rows;
    const size_t row = heads * head_size;
    if (rows != out) memcpy(out, rows, batch * tokens * row * sizeof(float));
    for (size_t b = 0; b < batch; ++b)
        rotate_rows(v, out + b * tokens * row, tokens, heads, head_size, row,
                    rope_first_position(v, b, default_first, default_offset));
    return out;
}

}  // namespace detail
}  // namespace edgeattn
