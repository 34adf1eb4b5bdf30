/**
 * @file
 * edgeattn C API: rotary position embedding (RoPE), table-driven: the
 * cos / sin table made once (in RAM by edgeattn_rope_table(), or in flash
 * by the C++ constexpr edgeattn::rope_table), and the rotation as an op of
 * its own. The KV cache calls apply the same rotation fused, through
 * edgeattn_attention_options::rope. The rules of edgeattn/types.h hold.
 */
#ifndef EDGEATTN_ROPE_H
#define EDGEATTN_ROPE_H

#include "edgeattn/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What a RoPE table holds: the argument of edgeattn_rope_table(). */
typedef struct edgeattn_rope_table_config {
    size_t max_positions;  /**< rows: positions 0 .. max_positions - 1 (> 0) */
    size_t rotary_dims;    /**< rotated features per head: even, > 0 */
    /** the base theta of the frequencies theta^(-2i / rotary_dims); 0
        means 10000 (Llama 2; Llama 3 uses 500000, Qwen 2 1000000) */
    double theta;
    /** linear position scaling (position interpolation): position p
        rotates by the angle of p / position_scale; 0 means 1 */
    double position_scale;
} edgeattn_rope_table_config;

/**
 * Fills the table (max_positions, rotary_dims): row p holds cos(a_p,i) for
 * i < rotary_dims / 2, then sin(a_p,i), with a_p,i = p / position_scale *
 * theta^(-2i / rotary_dims), computed in double precision and rounded to
 * float. Bit-identical to the C++ constexpr edgeattn::rope_table. No
 * workspace.
 * @param config       sizes, theta and scaling
 * @param table        output, max_positions * rotary_dims floats
 * @param table_floats its size in floats
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_ZERO_DIMENSION,
 *         ::EDGEATTN_ERR_BAD_ROPE (rotary_dims odd, theta or position_scale negative
 *         or not finite, or an angle above 2^24 radians: a frequency, or
 *         (max_positions - 1) / position_scale times one, from a tiny
 *         position_scale or theta; past it the angle's reduction loses the
 *         float table's precision), ::EDGEATTN_ERR_SIZE_OVERFLOW,
 *         ::EDGEATTN_ERR_WORKSPACE_TOO_SMALL (table_floats), ::EDGEATTN_ERR_MISALIGNED
 */
edgeattn_status edgeattn_rope_table(const edgeattn_rope_table_config *config, float *table,
                                    size_t table_floats);

/** Shape of edgeattn_rope_apply()'s rows: (batch, tokens, heads, head_size). */
typedef struct edgeattn_rope_dims {
    size_t batch;      /**< B */
    size_t tokens;     /**< T: positions per batch element */
    size_t heads;      /**< heads per token (H for queries, H_kv for keys) */
    size_t head_size;  /**< features per head (>= rope->rotary_dims) */
} edgeattn_rope_dims;

/**
 * Y = RoPE(X): token t of batch element b at position rope->positions[b] + t
 * (or t), every head rotated as edgeattn_rope describes, the features past
 * rotary_dims copied. For queries or keys projected by the caller, before
 * edgeattn_sdpa or a KV cache call given EDGEATTN_DTYPE_NONE projections.
 * No workspace.
 * @param dims  batch, tokens, heads, head_size
 * @param rope  its table (not NULL), layout, rotary_dims and positions
 * @param X     (B, T, heads, head_size)
 * @param Y     (B, T, heads, head_size); may be X (in place), else disjoint from it
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_ZERO_DIMENSION,
 *         ::EDGEATTN_ERR_SIZE_OVERFLOW, ::EDGEATTN_ERR_BAD_ROPE,
 *         ::EDGEATTN_ERR_ROPE_POSITION, ::EDGEATTN_ERR_MISALIGNED, ::EDGEATTN_ERR_OVERLAP
 */
edgeattn_status edgeattn_rope_apply(const edgeattn_rope_dims *dims, const edgeattn_rope *rope,
                                    const float *X, float *Y);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* EDGEATTN_ROPE_H */
