/**
 * @file
 * edgeattn C API: masked softmax and the attention ops of d2l's chapters:
 * scaled dot-product, additive and multi-head attention (self-attention is
 * multi-head attention with queries = keys = values), with d2l's valid
 * lengths, causal / key-range / bias masks and grouped-query heads, and the
 * attention weights on request. The rules of edgeattn/types.h hold.
 */
#ifndef EDGEATTN_ATTENTION_H
#define EDGEATTN_ATTENTION_H

#include "edgeattn/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------- sequence mask, softmax */

/**
 * d2l's sequence_mask: Y = X with X[r, j] replaced by `value` for every
 * j >= valid_len[r]. X, Y: (rows, cols); valid_len: (rows).
 * Y may be X (in place); any other overlap is EDGEATTN_ERR_OVERLAP.
 * No workspace.
 * @param rows      rows of X and Y (> 0)
 * @param cols      columns of X and Y (> 0)
 * @param X         input, (rows, cols)
 * @param valid_len (rows): valid columns of each row, >= 0 (>= cols masks nothing)
 * @param value     what masked elements become (d2l: 0)
 * @param Y         output, (rows, cols); may be X
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_ZERO_DIMENSION,
 *         ::EDGEATTN_ERR_SIZE_OVERFLOW, ::EDGEATTN_ERR_MISALIGNED, ::EDGEATTN_ERR_OVERLAP,
 *         ::EDGEATTN_ERR_NEGATIVE_VALID_LEN
 */
edgeattn_status edgeattn_sequence_mask(size_t rows, size_t cols, const float *X,
                                       const int32_t *valid_len, float value, float *Y);

/** Shape of a masked softmax: X and Y are (batch, queries, keys). */
typedef struct edgeattn_softmax_dims {
    size_t batch;   /**< B */
    size_t queries; /**< Q: rows per batch element */
    size_t keys;    /**< K: the softmax axis */
} edgeattn_softmax_dims;

/**
 * d2l's masked_softmax over the last axis. X, Y: (batch, queries, keys).
 * valid_lens: NULL, (batch) or (batch, queries). Y may be X (in place).
 * No workspace; rows are split over OpenMP threads when the build has them.
 * @param dims       (B, Q, K), all > 0
 * @param X          scores, (B, Q, K)
 * @param valid_lens NULL (no mask), or valid lengths per batch element or per query
 * @param Y          weights, (B, Q, K): each row sums to 1; may be X
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_ZERO_DIMENSION,
 *         ::EDGEATTN_ERR_SIZE_OVERFLOW, ::EDGEATTN_ERR_MISALIGNED,
 *         ::EDGEATTN_ERR_BAD_VALID_LENS_KIND, ::EDGEATTN_ERR_NEGATIVE_VALID_LEN,
 *         ::EDGEATTN_ERR_OVERLAP
 */
edgeattn_status edgeattn_masked_softmax(const edgeattn_softmax_dims *dims, const float *X,
                                        const edgeattn_valid_lens *valid_lens, float *Y);

/* ------------------------------------------------------------- attention */

/*
 * Common to the calls below:
 *   options     NULL or a zeroed struct: no mask; else valid lengths, causal,
 *               key ranges, bias (edgeattn_attention_options); tensor_type
 *               EDGEATTN_DTYPE_F16 (edgeattn_sdpa, edgeattn_mha and
 *               _packed): queries, keys, values, output and attention
 *               weights are binary16 (uint16_t arrays, 2-byte aligned,
 *               passed as the float pointers), computed in fp32
 *   workspace   at least edgeattn_workspace_size() bytes for this op and
 *               dims, 4-byte aligned; the call uses as many threads as it
 *               has room for
 *   output      written on success only
 *   attention_weights  NULL, or the softmax weights (or what
 *               options->weights_output asks for), written on success
 * Statuses every call may return: ::EDGEATTN_ERR_NULL_POINTER,
 * ::EDGEATTN_ERR_ZERO_DIMENSION, ::EDGEATTN_ERR_SHAPE_MISMATCH,
 * ::EDGEATTN_ERR_SIZE_OVERFLOW, ::EDGEATTN_ERR_MISALIGNED,
 * ::EDGEATTN_ERR_BAD_VALID_LENS_KIND, ::EDGEATTN_ERR_NEGATIVE_VALID_LEN,
 * ::EDGEATTN_ERR_BAD_KEY_RANGE, ::EDGEATTN_ERR_WORKSPACE_TOO_SMALL,
 * ::EDGEATTN_ERR_OVERLAP, ::EDGEATTN_ERR_OPTION_NOT_SUPPORTED,
 * ::EDGEATTN_ERR_BAD_OPTION (the score options: scale, softcap, masking,
 * weights_output, the mask's alignment, right_window and ALiBi; see
 * edgeattn_attention_options and docs/onnx.md; a tensor_type other than
 * F32 and F16).
 */

/**
 * Scaled dot-product attention: softmax(Q K^T / sqrt(d)) V, masked as d2l.
 * queries (B,Q,d), keys (B,K,d), values (B,K,v) -> output (B,Q,v).
 * @param dims        batch, queries, keys, query_size = d, key_size (0 or d),
 *                    value_size = v; the other fields are not read
 * @param queries     (B, Q, d)
 * @param keys        (B, K, d)
 * @param values      (B, K, v)
 * @param options     NULL, or valid lengths, a mask (bias_heads 1) and the score
 *                    options but ALiBi (no heads: ::EDGEATTN_ERR_OPTION_NOT_SUPPORTED)
 * @param workspace   edgeattn_workspace_size() bytes for EDGEATTN_OP_SDPA
 * @param workspace_bytes its size in bytes
 * @param output      (B, Q, v)
 * @param attention_weights NULL, or (B, Q, K)
 * @return ::EDGEATTN_OK or one of the common statuses above
 */
edgeattn_status edgeattn_sdpa(const edgeattn_attention_dims *dims, const float *queries,
                              const float *keys, const float *values,
                              const edgeattn_attention_options *options, void *workspace,
                              size_t workspace_bytes, float *output, float *attention_weights);

/**
 * Additive attention: score(q, k) = w_v . tanh(W_q q + W_k k), masked
 * softmax over keys, weighted sum of values.
 * queries (B,Q,q), keys (B,K,k), values (B,K,v) -> output (B,Q,v).
 * @param dims        batch, queries, keys, query_size = q, key_size = k,
 *                    value_size = v, num_hiddens = h
 * @param queries     (B, Q, q)
 * @param keys        (B, K, k)
 * @param values      (B, K, v)
 * @param weights     W_q (h, q), W_k (h, k), W_v = w_v (1, h), each in any
 *                    edgeattn_dtype; W_o and the biases unset
 * @param options     NULL, or valid lengths, a mask (bias_heads 1, no ALiBi),
 *                    masking; scale, softcap and weights_output are not taken
 *                    (its scores are no product: ::EDGEATTN_ERR_OPTION_NOT_SUPPORTED)
 * @param workspace   edgeattn_workspace_size() bytes for EDGEATTN_OP_ADDITIVE
 * @param workspace_bytes its size in bytes
 * @param output      (B, Q, v)
 * @param attention_weights NULL, or (B, Q, K)
 * @return ::EDGEATTN_OK, one of the common statuses above,
 *         ::EDGEATTN_ERR_BAD_WEIGHT_TYPE, ::EDGEATTN_ERR_BAD_SCALE
 */
edgeattn_status edgeattn_additive(const edgeattn_attention_dims *dims, const float *queries,
                                  const float *keys, const float *values,
                                  const edgeattn_weights *weights,
                                  const edgeattn_attention_options *options, void *workspace,
                                  size_t workspace_bytes, float *output, float *attention_weights);

/**
 * d2l's MultiHeadAttention: project queries, keys and values to h features,
 * split them into H heads of h/H, run scaled dot-product attention per head
 * (valid lengths and mask repeated for every head; query head j reads
 * key/value head j / (H / H_kv)), concatenate and project with W_o.
 * queries (B,Q,q), keys (B,K,k), values (B,K,v) -> output (B,Q,h).
 * Value heads may have dv = hv / H features of their own (dims.value_hiddens
 * = hv: W_v (hv_kv, v), W_o (h, hv)), and each matrix may be
 * EDGEATTN_DTYPE_NONE, its rows given as projected: queries (B,Q,h), keys
 * (B,K,h_kv), values (B,K,hv_kv), and without W_o the output is the
 * concatenated heads (B,Q,hv) (ONNX Attention on 3D inputs; a NONE matrix's
 * rows of another width: ::EDGEATTN_ERR_SHAPE_MISMATCH, a bias beside it:
 * ::EDGEATTN_ERR_OPTION_NOT_SUPPORTED).
 * Self-attention passes X (B,n,d) as queries, keys and values with keys =
 * queries = n and q = k = v = d; masked self-attention (d2l's decoder at
 * training time) adds options->mask.causal = 1.
 * @param dims        every field; h % H == 0, hv % H == 0, H % H_kv == 0
 * @param queries     (B, Q, q)
 * @param keys        (B, K, k)
 * @param values      (B, K, v)
 * @param weights     W_q (h, q), W_k (h_kv, k), W_v (hv_kv, v), W_o (h, hv), each
 *                    in any edgeattn_dtype (EDGEATTN_DTYPE_NONE: left out); biases or NULL;
 *                    an int8 matrix may take the int8 arithmetic (its `arithmetic`)
 * @param options     NULL, or valid lengths, a mask (bias_heads 1 or H, ALiBi
 *                    over H heads), every score option and a tensor_type
 * @param workspace   edgeattn_workspace_size() bytes for EDGEATTN_OP_MHA (with
 *                    the int8 arithmetic in the request when a matrix takes it)
 * @param workspace_bytes its size in bytes
 * @param output      (B, Q, h), or (B, Q, hv) when W_o is EDGEATTN_DTYPE_NONE
 * @param attention_weights NULL, or (B, H, Q, K): every head's weights
 * @return ::EDGEATTN_OK, one of the common statuses above,
 *         ::EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE, ::EDGEATTN_ERR_KV_HEADS_DO_NOT_DIVIDE,
 *         ::EDGEATTN_ERR_BAD_WEIGHT_TYPE, ::EDGEATTN_ERR_BAD_SCALE,
 *         ::EDGEATTN_ERR_BAD_OPTION (a matrix's arithmetic outside its enum)
 */
edgeattn_status edgeattn_mha(const edgeattn_attention_dims *dims, const float *queries,
                             const float *keys, const float *values,
                             const edgeattn_weights *weights,
                             const edgeattn_attention_options *options, void *workspace,
                             size_t workspace_bytes, float *output, float *attention_weights);

/**
 * edgeattn_mha with weights packed once by edgeattn_mha_pack(): same dims,
 * workspace and outputs, results within the golden cases' bar (not
 * bitwise: the unpacked call multiplies a few rows in another order).
 * @param dims        every field, as packed (batch, queries, keys free)
 * @param queries     (B, Q, q)
 * @param keys        (B, K, k)
 * @param values      (B, K, v)
 * @param packed      from edgeattn_mha_pack() for these feature sizes and heads
 * @param packed_bytes its size in bytes, as given to edgeattn_mha_pack()
 * @param options     NULL, or valid lengths, a mask, the score options and a tensor_type, as edgeattn_mha()
 * @param workspace   edgeattn_workspace_size() bytes for EDGEATTN_OP_MHA
 * @param workspace_bytes its size in bytes
 * @param output      (B, Q, h)
 * @param attention_weights NULL, or (B, H, Q, K)
 * @return the statuses of edgeattn_mha(), and ::EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH
 */
edgeattn_status edgeattn_mha_packed(const edgeattn_attention_dims *dims, const float *queries,
                                    const float *keys, const float *values, const void *packed,
                                    size_t packed_bytes, const edgeattn_attention_options *options,
                                    void *workspace, size_t workspace_bytes, float *output,
                                    float *attention_weights);

/**
 * Bytes of multi-head attention weights packed once: only query_size,
 * key_size, value_size, num_hiddens, num_heads, num_kv_heads, value_hiddens
 * and the matrices' types count (EDGEATTN_DTYPE_NONE: 0, nothing to pack). The packed form is the same for every kernel path
 * and thread count; it keeps each matrix in its stored type.
 * @param dims    the feature sizes and heads
 * @param weights the matrices' types are read (data is not)
 * @return bytes of the packed weights, or 0 (invalid dims or type, overflow)
 */
size_t edgeattn_mha_packed_size(const edgeattn_attention_dims *dims,
                                const edgeattn_weights *weights);

/**
 * Packs W_q, W_k, W_v, W_o (transposed, in the panels the matrix kernels
 * read, each in its stored type) and copies the biases into `packed`. Call
 * it once when the model is loaded: edgeattn_mha_packed() and the cache's
 * _packed calls then skip the per-call packing, which at d2l's sizes costs
 * more than the products. `packed` keeps no pointer to `weights`. On a
 * microcontroller, where packing doubles the RAM the weights need and the
 * scalar path packs no faster, call the unpacked entry points instead.
 * @param dims         as for edgeattn_mha_packed_size()
 * @param weights      as for edgeattn_mha()
 * @param packed       output, edgeattn_mha_packed_size() bytes, 4-byte aligned
 *                     (64 is fastest); must not overlap the weights
 * @param packed_bytes size of `packed` in bytes
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_ZERO_DIMENSION,
 *         ::EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE, ::EDGEATTN_ERR_KV_HEADS_DO_NOT_DIVIDE,
 *         ::EDGEATTN_ERR_SIZE_OVERFLOW, ::EDGEATTN_ERR_MISALIGNED,
 *         ::EDGEATTN_ERR_WORKSPACE_TOO_SMALL, ::EDGEATTN_ERR_OVERLAP,
 *         ::EDGEATTN_ERR_BAD_WEIGHT_TYPE, ::EDGEATTN_ERR_BAD_SCALE
 */
edgeattn_status edgeattn_mha_pack(const edgeattn_attention_dims *dims,
                                  const edgeattn_weights *weights, void *packed,
                                  size_t packed_bytes);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* EDGEATTN_ATTENTION_H */
