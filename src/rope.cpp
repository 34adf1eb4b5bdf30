// C entry points of rotary position embedding. The table uses the same
// constexpr functions as the C++ compile-time table (bit-identical, no
// libm); the rotation is rope_rotate.hpp's, which the KV cache calls use.
#include <string.h>

#include "edgeattn/detail/rope_table.hpp"
#include "edgeattn/rope.h"
#include "parallel.hpp"
#include "rope_rotate.hpp"
#include "validate.hpp"

using namespace edgeattn::detail;

extern "C" edgeattn_status edgeattn_rope_table(const edgeattn_rope_table_config *config, float *table,
                                               size_t table_floats) {
    edgeattn_rope_table_config c;
    if (!read_argument(config, c) || !table) return EDGEATTN_ERR_NULL_POINTER;
    if (c.max_positions == 0 || c.rotary_dims == 0) return EDGEATTN_ERR_ZERO_DIMENSION;
    const double theta = rope_theta_or_default(c.theta);
    const double position_scale = rope_scale_or_default(c.position_scale);
    if (!rope_table_arguments_valid(c.max_positions, c.rotary_dims, theta, position_scale))
        return EDGEATTN_ERR_BAD_ROPE;
    size_t count = 0;
    if (edgeattn_status st = tensor_count(count, c.max_positions, c.rotary_dims)) return st;
    if (table_floats < count) return EDGEATTN_ERR_WORKSPACE_TOO_SMALL;
    if (!is_float_aligned(table)) return EDGEATTN_ERR_MISALIGNED;
    fill_rope_table(table, c.max_positions, c.rotary_dims, theta, position_scale);
    return EDGEATTN_OK;
}

extern "C" edgeattn_status edgeattn_rope_apply(const edgeattn_rope_dims *dims, const edgeattn_rope *rope,
                                               const float *X, float *Y) {
    edgeattn_rope_dims d;
    if (!read_argument(dims, d) || !rope || !X || !Y) return EDGEATTN_ERR_NULL_POINTER;
    if (d.batch == 0 || d.tokens == 0 || d.heads == 0 || d.head_size == 0) return EDGEATTN_ERR_ZERO_DIMENSION;
    size_t count = 0;
    if (edgeattn_status st = tensor_count(count, d.batch, d.tokens, d.heads, d.head_size)) return st;
    rope_view v;
    if (edgeattn_status st = read_rope(rope, d.head_size, d.batch, v)) return st;
    if (!v.active) return EDGEATTN_ERR_BAD_ROPE;  // the op itself needs a table
    if (!is_float_aligned(X) || !is_float_aligned(Y)) return EDGEATTN_ERR_MISALIGNED;
    if (edgeattn_status st = check_rope_positions(v, d.tokens, nullptr, 0)) return st;
    // Y may be X; else it is disjoint from X, and always from the table and
    // the positions.
    const tensor_span out{Y, count};
    const tensor_span in[] = {{Y == X ? nullptr : X, count}, v.table_span(), v.positions_span()};
    if (edgeattn_status st = check_disjoint(&out, 1, in, 3)) return st;

    // Rows (b, t) in any split: each is rotated alone, so the bits do not
    // depend on the thread count.
    const size_t row = d.heads * d.head_size;
    const float flops = 3.0f * static_cast<float>(d.heads) * static_cast<float>(v.rotary_dims);
    parallel_for(d.batch * d.tokens, d.batch * d.tokens, flops, [&](size_t, size_t begin, size_t end) {
        while (begin < end) {
            const size_t b = begin / d.tokens, t = begin % d.tokens;
            const size_t n = end - begin < d.tokens - t ? end - begin : d.tokens - t;  // rows of b in the range
            float *rows = Y + begin * row;
            if (Y != X) memcpy(rows, X + begin * row, n * row * sizeof(float));
            rotate_rows(v, rows, n, d.heads, d.head_size, row,
                        rope_first_position(v, b, nullptr, 0) + static_cast<int64_t>(t));
            begin += n;
        }
    });
    return EDGEATTN_OK;
}
