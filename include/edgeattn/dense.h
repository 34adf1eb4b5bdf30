/**
 * @file
 * edgeattn C API: dense layers, torch.nn.Linear's y = x W^T (+ b) with W
 * (out_features, in_features) as PyTorch stores it, in any edgeattn_dtype:
 * the rest of a Transformer block (feed-forward layers, logits). The rules
 * of edgeattn/types.h hold.
 */
#ifndef EDGEATTN_DENSE_H
#define EDGEATTN_DENSE_H

#include "edgeattn/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * y = x W^T (+ b).
 * @param dims      rows, in_features, out_features (> 0)
 * @param x         (rows, in_features)
 * @param W         (out_features, in_features) in any edgeattn_dtype
 * @param b         (out_features) or NULL
 * @param workspace edgeattn_workspace_size() bytes for EDGEATTN_OP_DENSE (W^T
 *                  is packed per call in panels; the size serves every type);
 *                  with W in the int8 arithmetic (W->arithmetic), sized with
 *                  that arithmetic in the request (it holds blocks of rows
 *                  of x quantised, and their int32 sums; W is read in place)
 * @param workspace_bytes its size
 * @param y         (rows, out_features)
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_ZERO_DIMENSION,
 *         ::EDGEATTN_ERR_SIZE_OVERFLOW, ::EDGEATTN_ERR_MISALIGNED,
 *         ::EDGEATTN_ERR_WORKSPACE_TOO_SMALL, ::EDGEATTN_ERR_OVERLAP,
 *         ::EDGEATTN_ERR_BAD_WEIGHT_TYPE, ::EDGEATTN_ERR_BAD_SCALE,
 *         ::EDGEATTN_ERR_BAD_OPTION (W->arithmetic outside its enum),
 *         ::EDGEATTN_ERR_OPTION_NOT_SUPPORTED (the int8 arithmetic on weights
 *         that are not int8)
 */
edgeattn_status edgeattn_dense(const edgeattn_dense_dims *dims, const float *x,
                               const edgeattn_weight_matrix *W, const float *b, void *workspace,
                               size_t workspace_bytes, float *y);

/**
 * edgeattn_dense with weights packed once by edgeattn_dense_pack(); no workspace.
 * @param dims         rows, in_features, out_features as packed
 * @param x            (rows, in_features)
 * @param packed       from edgeattn_dense_pack()
 * @param packed_bytes its size
 * @param y            (rows, out_features)
 * @return the statuses of edgeattn_dense(), and ::EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH
 */
edgeattn_status edgeattn_dense_packed(const edgeattn_dense_dims *dims, const float *x,
                                      const void *packed, size_t packed_bytes, float *y);

/**
 * Bytes of a dense layer's weights packed once (rows is not read).
 * @param dims in_features, out_features
 * @param W    its type and arithmetic are read (data is not)
 * @return bytes, or 0 for a NULL pointer, a zero size, an unknown type,
 *         the int8 arithmetic (weights packed once are fp32 arithmetic) or overflow
 */
size_t edgeattn_dense_packed_size(const edgeattn_dense_dims *dims,
                                  const edgeattn_weight_matrix *W);

/**
 * Packs W^T (keeping its type and scales) and copies b once, for
 * edgeattn_dense_packed().
 * @param dims         in_features, out_features (rows is not read)
 * @param W            (out_features, in_features) in any edgeattn_dtype
 * @param b            (out_features) or NULL
 * @param packed       edgeattn_dense_packed_size() bytes, 4-byte aligned
 * @param packed_bytes its size
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_ZERO_DIMENSION,
 *         ::EDGEATTN_ERR_SIZE_OVERFLOW, ::EDGEATTN_ERR_MISALIGNED,
 *         ::EDGEATTN_ERR_WORKSPACE_TOO_SMALL, ::EDGEATTN_ERR_OVERLAP,
 *         ::EDGEATTN_ERR_BAD_WEIGHT_TYPE, ::EDGEATTN_ERR_BAD_SCALE,
 *         ::EDGEATTN_ERR_OPTION_NOT_SUPPORTED (the int8 arithmetic: W is read
 *         in place by edgeattn_dense() then, with nothing to pack)
 */
edgeattn_status edgeattn_dense_pack(const edgeattn_dense_dims *dims,
                                    const edgeattn_weight_matrix *W, const float *b, void *packed,
                                    size_t packed_bytes);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* EDGEATTN_DENSE_H */
