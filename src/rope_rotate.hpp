// The rotation of rotary position embedding (edgeattn/rope.h), shared by
// edgeattn_rope_apply() and the KV cache calls (options->rope): reading and
// checking an edgeattn_rope, checking the positions a call rotates, and
// rotating rows in place. One implementation, plain C++ compiled once (no
// kernel table), so every dispatch path and the scalar build give the same
// bits: x' = x c - y s and y' = y c + x s, each product rounded to float,
// no fused multiply-add.
#ifndef EDGEATTN_ROPE_ROTATE_HPP
#define EDGEATTN_ROPE_ROTATE_HPP

#include <stddef.h>
#include <stdint.h>

#include "validate.hpp"

namespace edgeattn {
namespace detail {

// An edgeattn_rope as read and checked by read_rope(). Inactive (no
// rotation): every other field zero.
struct rope_view {
    bool active = false;
    const float *table = nullptr;        // (max_positions, rotary_dims)
    size_t max_positions = 0;
    size_t rotary_dims = 0;
    int layout = EDGEATTN_ROPE_NEOX;     // EDGEATTN_ROPE_NEOX or EDGEATTN_ROPE_GPTJ
    const int32_t *positions = nullptr;  // (batch) first positions, or NULL
    size_t batch = 0;

    // The inputs a call reads through the rope, for its overlap checks
    // (count 0 when inactive or without positions).
    tensor_span table_span() const { return {table, max_positions * rotary_dims}; }
    tensor_span positions_span() const { return {positions, positions ? batch : 0, sizeof(int32_t)}; }
};

// Copies *rope (NULL: inactive) and checks it for heads of head_size
// features and `batch` batch elements: EDGEATTN_OK with v.active false when
// table is NULL and every other field zero; EDGEATTN_ERR_BAD_ROPE when the
// table is NULL but a field is set, rotary_dims is odd, 0 or above
// head_size, max_positions is 0 or the layout (read as an int) is outside
// the enum; EDGEATTN_ERR_SIZE_OVERFLOW when the table's bytes overflow
// size_t; EDGEATTN_ERR_MISALIGNED for a misaligned table or positions
// array. Reads no table entry and no position.
edgeattn_status read_rope(const edgeattn_rope *rope, size_t head_size, size_t batch, rope_view &v);

// Batch element b's first position: rope positions[b] when the rope has
// them, else default_first[b] + default_offset (default_first NULL: 0 +
// default_offset). A KV cache store passes its positions and 0, an attend
// its positions and -Q, edgeattn_rope_apply() NULL and 0.
int64_t rope_first_position(const rope_view &v, size_t b, const int32_t *default_first, int64_t default_offset);

// EDGEATTN_ERR_ROPE_POSITION unless every position rotated, first(b) + t
// for b < v.batch and t < tokens, has |position| < max_positions (64-bit
// arithmetic, no overflow for any int32 positions, offset or tokens).
// EDGEATTN_OK for an inactive rope.
edgeattn_status check_rope_positions(const rope_view &v, size_t tokens, const int32_t *default_first,
                                     int64_t default_offset);

// Rotates in place one batch element's rows: token t's `heads` heads of
// head_size features, head h at rows + t * row_stride + h * head_size, at
// position first_position + t (checked by check_rope_positions). Features
// from rotary_dims on are left as they are. Nothing for an inactive rope.
void rotate_rows(const rope_view &v, float *rows, size_t tokens, size_t heads, size_t head_size, size_t row_stride,
                 int64_t first_position);

// The fused rotation of the KV cache calls: rows (batch, tokens, heads,
// head_size) rotated at their positions (as rope_first_position) into
// `out`, copied there first unless they are there already. Returns out, or
// rows themselves for an inactive rope (nothing copied).
const float *rotate_batch(const rope_view &v, const float *rows, float *out, size_t batch, size_t tokens,
                          size_t heads, size_t head_size, const int32_t *default_first, int64_t default_offset);

}  // namespace detail
}  // namespace edgeattn

#endif
