/**
 * @file
 * edgeattn C API: making reduced-precision weights. int8 with one scale per
 * output channel (symmetric, no zero point) and IEEE binary16 (fp16), in
 * PyTorch's (out, in) layout; every op takes them through an
 * edgeattn_weight_matrix and computes in fp32. The rules of
 * edgeattn/types.h hold.
 */
#ifndef EDGEATTN_CONVERT_H
#define EDGEATTN_CONVERT_H

#include "edgeattn/types.h"

#ifdef __cplusplus
extern "C" {
#endif

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

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* EDGEATTN_CONVERT_H */
