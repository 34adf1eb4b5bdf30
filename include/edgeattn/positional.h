/**
 * @file
 * edgeattn C API: d2l's sinusoidal positional encoding, as a table made
 * once (or the C++ constexpr table, in flash) and added at any start
 * position. The rules of edgeattn/types.h hold.
 */
#ifndef EDGEATTN_POSITIONAL_H
#define EDGEATTN_POSITIONAL_H

#include "edgeattn/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The sinusoidal table P (max_len, d): P[i, 2j] = sin(i / 10000^(2j/d)),
 * P[i, 2j+1] = cos(i / 10000^(2j/d)); for odd d the last column is a sine.
 * Computed in double precision and rounded to float (|error| <= 2^-25 + 1e-12).
 * Bit-identical to the C++ edgeattn::positional_encoding_table. No workspace.
 * @param max_len positions (rows of P, > 0)
 * @param d       encoding dimension (columns of P, > 0)
 * @param P       output, (max_len, d)
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_ZERO_DIMENSION,
 *         ::EDGEATTN_ERR_SIZE_OVERFLOW, ::EDGEATTN_ERR_MISALIGNED
 */
edgeattn_status edgeattn_positional_encoding_table(size_t max_len, size_t d, float *P);

/**
 * Y = X + P[start : start + n]: X, Y (B, n, d); P (max_len, d) from the
 * function above or the C++ constexpr table. A prompt passes start 0; a
 * decode step at position p passes start p. start + n > max_len is
 * EDGEATTN_ERR_SEQUENCE_TOO_LONG. Y may be X (in place). No workspace.
 * @param batch   B (> 0)
 * @param n       positions encoded (> 0)
 * @param d       encoding dimension = features of X
 * @param start   position of X's first row
 * @param X       (B, n, d)
 * @param P       (max_len, d)
 * @param max_len rows of P
 * @param Y       (B, n, d); may be X
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_NULL_POINTER, ::EDGEATTN_ERR_ZERO_DIMENSION,
 *         ::EDGEATTN_ERR_SIZE_OVERFLOW, ::EDGEATTN_ERR_SEQUENCE_TOO_LONG,
 *         ::EDGEATTN_ERR_MISALIGNED, ::EDGEATTN_ERR_OVERLAP
 */
edgeattn_status edgeattn_positional_encoding_add_at(size_t batch, size_t n, size_t d, size_t start,
                                                    const float *X, const float *P, size_t max_len,
                                                    float *Y);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* EDGEATTN_POSITIONAL_H */
