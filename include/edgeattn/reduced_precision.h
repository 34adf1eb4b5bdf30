/**
 * @file
 * edgeattn C API, weights in reduced precision (included by
 * edgeattn/edgeattn.h): projection weights stored as int8 with one scale per
 * output channel, or as IEEE binary16 (fp16), in PyTorch's (out, in) layout.
 * The kernels widen them to fp32 in registers and compute in fp32: no fp32
 * copy of a weight matrix is ever made, so on a microcontroller the weights
 * stay in flash at 1/4 or 1/2 of their fp32 bytes.
 *
 * Element (o, i) of a stored matrix is, exactly:
 *   int8: scales[o] * (float)q[o * in + i]   (symmetric, no zero point)
 *   fp16: the binary16 value of h[o * in + i]
 * and a call computes what the fp32 call computes with those values (the
 * tests hold it to the golden bar, rel. L2 <= 1e-5, against float64
 * attention with the dequantised weights). Activations, biases, the KV cache
 * and outputs stay fp32.
 *
 * Packed once (edgeattn_mha_pack_typed_weights(),
 * edgeattn_linear_pack_typed_weights()), the weights stay in their type
 * and every *_packed entry point takes them as it takes fp32 packed weights:
 * edgeattn_multi_head_attention(_masked)_packed, edgeattn_self_attention_packed,
 * edgeattn_kv_cache_append_packed, edgeattn_kv_cache_attention_packed and
 * edgeattn_linear_packed. The header of the buffer says the types.
 */
#ifndef EDGEATTN_REDUCED_PRECISION_H
#define EDGEATTN_REDUCED_PRECISION_H

#include <stddef.h>
#include <stdint.h>

#include "edgeattn/edgeattn.h"

#ifdef __cplusplus
extern "C" {
#endif

/** How a weight matrix is stored. */
typedef enum edgeattn_weight_type {
    EDGEATTN_WEIGHTS_F32 = 0,  /**< float */
    EDGEATTN_WEIGHTS_F16 = 1,  /**< IEEE binary16 bits in uint16_t, 2-byte aligned */
    EDGEATTN_WEIGHTS_INT8 = 2, /**< int8_t, times a float scale per output channel (row) */
    EDGEATTN_WEIGHT_TYPE_FORCE_INT = 0x7FFFFFFF /**< keeps the enum int-sized; not a type */
} edgeattn_weight_type;

/** One weight matrix W (out, in), torch.nn.Linear layout, in any stored type. */
typedef struct edgeattn_weight_matrix {
    edgeattn_weight_type type; /**< how `data` is stored */
    const void *data;          /**< (out, in): float, uint16_t (binary16) or int8_t */
    const float *scales;       /**< INT8: (out), each finite and > 0 (else ::EDGEATTN_ERR_BAD_SCALE);
                                    other types: not read */
} edgeattn_weight_matrix;

/** Multi-head attention weights, each matrix in its own stored type (they
 *  may differ); biases fp32 as in edgeattn_mha_weights. Shapes as there:
 *  W_q (h, q), W_k (h_kv, k), W_v (h_kv, v), W_o (h, h). */
typedef struct edgeattn_mha_typed_weights {
    edgeattn_weight_matrix W_q; /**< (h, q) */
    edgeattn_weight_matrix W_k; /**< (h_kv, k) */
    edgeattn_weight_matrix W_v; /**< (h_kv, v) */
    edgeattn_weight_matrix W_o; /**< (h, h) */
    const float *b_q; /**< (h) or NULL */
    const float *b_k; /**< (h_kv) or NULL */
    const float *b_v; /**< (h_kv) or NULL */
    const float *b_o; /**< (h) or NULL */
} edgeattn_mha_typed_weights;

/* ---------------------------------------------------- making the weights */

/**
 * Symmetric per-output-channel int8 quantisation, as CMSIS-NN and PyTorch's
 * per-channel qint8 weights: scales[o] = max_i |W[o,i]| / 127 in float (1 for
 * an all-zero row; 2^-149, the smallest subnormal, for a row whose max / 127
 * underflows to 0, i.e. |W| <= 63 * 2^-149: such a row is stored exactly),
 * q[o,i] = the exact quotient W[o,i] / scales[o] rounded to nearest, ties to
 * even, in [-127, 127]. Deterministic: the same bits on every path and port.
 * An int8 KV cache stores its rows by the same rule.
 * @param out_features rows of W (> 0)
 * @param in_features  columns of W (> 0)
 * @param W      (out_features, in_features) fp32, 4-byte aligned
 * @param q      (out_features, in_features) int8 output
 * @param scales (out_features) output, 4-byte aligned
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_ZERO_DIMENSION,
 *         ::EDGEATTN_ERR_SIZE_OVERFLOW, ::EDGEATTN_ERR_MISALIGNED, ::EDGEATTN_ERR_OVERLAP,
 *         ::EDGEATTN_ERR_NOT_REPRESENTABLE (a weight NaN or infinite)
 */
edgeattn_status edgeattn_quantize_int8(size_t out_features, size_t in_features, const float *W,
                                       int8_t *q, float *scales);

/**
 * fp32 -> binary16, round to nearest even (subnormal halves kept).
 * @param count elements (> 0)
 * @param x     (count) fp32, 4-byte aligned
 * @param h     (count) binary16 bits, 2-byte aligned
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_ZERO_DIMENSION,
 *         ::EDGEATTN_ERR_SIZE_OVERFLOW, ::EDGEATTN_ERR_MISALIGNED, ::EDGEATTN_ERR_OVERLAP,
 *         ::EDGEATTN_ERR_NOT_REPRESENTABLE (NaN, infinite, or rounds past 65504)
 */
edgeattn_status edgeattn_float_to_half(size_t count, const float *x, uint16_t *h);

/**
 * binary16 -> fp32, exact (every binary16 value is a float; NaN stays NaN).
 * @param count elements (> 0)
 * @param h     (count) binary16 bits, 2-byte aligned
 * @param x     (count) fp32 output, 4-byte aligned
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_ZERO_DIMENSION,
 *         ::EDGEATTN_ERR_SIZE_OVERFLOW, ::EDGEATTN_ERR_MISALIGNED, ::EDGEATTN_ERR_OVERLAP
 */
edgeattn_status edgeattn_half_to_float(size_t count, const uint16_t *h, float *x);

/* ------------------------------------------------------------ projection */

/**
 * edgeattn_linear() with W in any stored type. Same workspace
 * (edgeattn_linear_workspace_size(): large enough for every type).
 * @param dims      rows, in_features, out_features (> 0)
 * @param x         (rows, in_features)
 * @param W         (out_features, in_features) as stored
 * @param b         (out_features) or NULL
 * @param workspace edgeattn_linear_workspace_size() bytes
 * @param workspace_bytes its size
 * @param y         (rows, out_features)
 * @return the statuses of edgeattn_linear(), and ::EDGEATTN_ERR_BAD_WEIGHT_TYPE,
 *         ::EDGEATTN_ERR_BAD_SCALE
 */
edgeattn_status edgeattn_linear_typed(const edgeattn_linear_dims *dims, const float *x,
                                      const edgeattn_weight_matrix *W, const float *b,
                                      void *workspace, size_t workspace_bytes, float *y);

/**
 * Bytes of a projection packed once with W of this type (rows not read).
 * @param dims in_features, out_features
 * @param type how W is stored
 * @return bytes, or 0 for a zero size, an unknown type or overflow
 */
size_t edgeattn_linear_typed_packed_weights_size(const edgeattn_linear_dims *dims,
                                                 edgeattn_weight_type type);

/**
 * Packs W (keeping its type and scales) and b once, for edgeattn_linear_packed().
 * @param dims         in_features, out_features (rows is not read)
 * @param W            (out_features, in_features) as stored
 * @param b            (out_features) or NULL
 * @param packed       edgeattn_linear_typed_packed_weights_size() bytes, 4-byte aligned
 * @param packed_bytes its size
 * @return the statuses of edgeattn_linear_pack_weights(), and
 *         ::EDGEATTN_ERR_BAD_WEIGHT_TYPE, ::EDGEATTN_ERR_BAD_SCALE
 */
edgeattn_status edgeattn_linear_pack_typed_weights(const edgeattn_linear_dims *dims,
                                                   const edgeattn_weight_matrix *W, const float *b,
                                                   void *packed, size_t packed_bytes);

/* --------------------------------------------------- multi-head attention */

/**
 * edgeattn_multi_head_attention_masked() with typed weights read in place
 * (a few rows read them directly; more rows pack panels of them, in their
 * type, in the workspace). Workspace: edgeattn_multi_head_attention_workspace_size().
 * @param dims       as edgeattn_multi_head_attention_masked()
 * @param queries    (B, Q, q)
 * @param keys       (B, K, k)
 * @param values     (B, K, v)
 * @param valid_lens NULL, or (B) or (B, Q) valid lengths
 * @param mask       NULL (none) or the decoder mask
 * @param weights    the four matrices in their types, fp32 biases or NULL
 * @param workspace  edgeattn_multi_head_attention_workspace_size() bytes
 * @param workspace_bytes its size
 * @param output     (B, Q, h)
 * @param attention_weights NULL, or (B, H, Q, K)
 * @return the statuses of edgeattn_multi_head_attention_masked(), and
 *         ::EDGEATTN_ERR_BAD_WEIGHT_TYPE, ::EDGEATTN_ERR_BAD_SCALE
 */
edgeattn_status edgeattn_multi_head_attention_typed(
    const edgeattn_attention_dims *dims, const float *queries, const float *keys,
    const float *values, const edgeattn_valid_lens *valid_lens, const edgeattn_attention_mask *mask,
    const edgeattn_mha_typed_weights *weights, void *workspace, size_t workspace_bytes,
    float *output, float *attention_weights);

/**
 * Bytes of multi-head attention weights packed once in the types of `weights`
 * (only the types are read, not the pointers).
 * @param dims    the feature sizes and heads (batch, queries, keys not read)
 * @param weights the types
 * @return bytes, or 0 for invalid dims, an unknown type or overflow
 */
size_t edgeattn_mha_typed_packed_weights_size(const edgeattn_attention_dims *dims,
                                              const edgeattn_mha_typed_weights *weights);

/**
 * Packs typed weights once, each matrix in its type (int8 with its scales),
 * for every *_packed multi-head entry point.
 * @param dims         the feature sizes and heads
 * @param weights      the four matrices in their types, fp32 biases or NULL
 * @param packed       edgeattn_mha_typed_packed_weights_size() bytes, 4-byte aligned
 * @param packed_bytes its size
 * @return the statuses of edgeattn_mha_pack_weights(), and
 *         ::EDGEATTN_ERR_BAD_WEIGHT_TYPE, ::EDGEATTN_ERR_BAD_SCALE
 */
edgeattn_status edgeattn_mha_pack_typed_weights(const edgeattn_attention_dims *dims,
                                                const edgeattn_mha_typed_weights *weights,
                                                void *packed, size_t packed_bytes);

/* ---------------------------------------------------- additive attention */

/** Additive attention's parameters with W_q, W_k in stored types; w_v stays fp32 (h floats). */
typedef struct edgeattn_additive_typed_weights {
    edgeattn_weight_matrix W_q; /**< (h, query_size) */
    edgeattn_weight_matrix W_k; /**< (h, key_size) */
    const float *w_v;           /**< (1, h) */
} edgeattn_additive_typed_weights;

/**
 * edgeattn_additive_attention() with W_q, W_k in stored types. Same workspace
 * (edgeattn_additive_attention_workspace_size()).
 * @param dims       as edgeattn_additive_attention()
 * @param queries    (B, Q, q)
 * @param keys       (B, K, k)
 * @param values     (B, K, v)
 * @param valid_lens NULL, or (B) or (B, Q) valid lengths
 * @param weights    W_q, W_k in their types, w_v
 * @param workspace  edgeattn_additive_attention_workspace_size() bytes
 * @param workspace_bytes its size
 * @param output     (B, Q, v)
 * @param attention_weights NULL, or (B, Q, K)
 * @return the statuses of edgeattn_additive_attention(), and
 *         ::EDGEATTN_ERR_BAD_WEIGHT_TYPE, ::EDGEATTN_ERR_BAD_SCALE
 */
edgeattn_status edgeattn_additive_attention_typed(
    const edgeattn_attention_dims *dims, const float *queries, const float *keys,
    const float *values, const edgeattn_valid_lens *valid_lens,
    const edgeattn_additive_typed_weights *weights, void *workspace, size_t workspace_bytes,
    float *output, float *attention_weights);

/* ---------------------------------------------------------------- KV cache */

/**
 * Bytes of a KV cache whose keys and values are stored as `storage`
 * (edgeattn_kv_cache_size() for fp32): binary16 halves the keys' and values'
 * bytes; int8 quarters them and adds one float scale per cached key row and
 * per value row (head_size elements), so it saves most for large heads.
 * @param batch        B
 * @param num_kv_heads H_kv
 * @param head_size    h / H
 * @param capacity     positions per batch element
 * @param storage      ::EDGEATTN_WEIGHTS_F32, ::EDGEATTN_WEIGHTS_F16 or ::EDGEATTN_WEIGHTS_INT8
 * @return bytes, or 0 for a zero size, an unknown type, capacity > INT32_MAX or overflow
 */
size_t edgeattn_kv_cache_typed_size(size_t batch, size_t num_kv_heads, size_t head_size,
                                    size_t capacity, edgeattn_weight_type storage);

/**
 * edgeattn_kv_cache_init() for a cache stored in a reduced type. Appends
 * convert each projected key and value row as they write it: binary16
 * rounded to nearest even (beyond +-65504: +-inf; NaN stays NaN); int8 with
 * its own scale per (position, head) row by the rule of
 * edgeattn_quantize_int8() (max |x| / 127, the exact quotient rounded to
 * nearest, ties to even). An int8 row cannot hold an infinity beside finite
 * numbers: a row with a NaN or +-inf is stored with scale NaN (and q 0), so
 * attention reads NaN wherever it reads that row, as the fp32 cache does for
 * a NaN (for +-inf the fp32 and fp16 caches give the softmax's limits
 * instead; never a finite stand-in for it). Every cache call (append,
 * attention, reset, truncate; packed or typed weights) takes such a cache;
 * attention widens the stored rows in registers.
 * @param cache        the struct to fill (not in `memory`)
 * @param batch        B
 * @param num_kv_heads H_kv
 * @param head_size    h / H
 * @param capacity     positions per batch element
 * @param storage      the type of keys and values (any other int: ::EDGEATTN_ERR_BAD_WEIGHT_TYPE)
 * @param memory       edgeattn_kv_cache_typed_size() bytes, 4-byte aligned
 * @param memory_bytes its size
 * @return the statuses of edgeattn_kv_cache_init(), and ::EDGEATTN_ERR_BAD_WEIGHT_TYPE
 */
edgeattn_status edgeattn_kv_cache_init_typed(edgeattn_kv_cache *cache, size_t batch,
                                             size_t num_kv_heads, size_t head_size,
                                             size_t capacity, edgeattn_weight_type storage,
                                             void *memory, size_t memory_bytes);

/**
 * edgeattn_kv_cache_append() with W_k, W_v in stored types (W_q, W_o not read).
 * @param cache     from edgeattn_kv_cache_init()
 * @param dims      as edgeattn_kv_cache_append()
 * @param tokens    T new tokens per batch element
 * @param keys      (B, T, k)
 * @param values    (B, T, v)
 * @param weights   W_k, W_v (and b_k, b_v) in their types
 * @param workspace edgeattn_kv_cache_append_workspace_size() bytes
 * @param workspace_bytes its size
 * @return the statuses of edgeattn_kv_cache_append(), and
 *         ::EDGEATTN_ERR_BAD_WEIGHT_TYPE, ::EDGEATTN_ERR_BAD_SCALE
 */
edgeattn_status edgeattn_kv_cache_append_typed(edgeattn_kv_cache *cache,
                                               const edgeattn_attention_dims *dims, size_t tokens,
                                               const float *keys, const float *values,
                                               const edgeattn_mha_typed_weights *weights,
                                               void *workspace, size_t workspace_bytes);

/**
 * edgeattn_kv_cache_attention() with W_q, W_o in stored types (W_k, W_v not read).
 * @param cache     from edgeattn_kv_cache_init()
 * @param dims      as edgeattn_kv_cache_attention()
 * @param queries   (B, Q, q)
 * @param mask      NULL or the decoder mask (columns: cache positions)
 * @param weights   W_q, W_o (and b_q, b_o) in their types
 * @param workspace edgeattn_kv_cache_attention_workspace_size() bytes
 * @param workspace_bytes its size
 * @param output    (B, Q, h)
 * @param attention_weights NULL, or (B, H, Q, capacity)
 * @return the statuses of edgeattn_kv_cache_attention(), and
 *         ::EDGEATTN_ERR_BAD_WEIGHT_TYPE, ::EDGEATTN_ERR_BAD_SCALE
 */
edgeattn_status edgeattn_kv_cache_attention_typed(
    const edgeattn_kv_cache *cache, const edgeattn_attention_dims *dims, const float *queries,
    const edgeattn_attention_mask *mask, const edgeattn_mha_typed_weights *weights,
    void *workspace, size_t workspace_bytes, float *output, float *attention_weights);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* EDGEATTN_REDUCED_PRECISION_H */
