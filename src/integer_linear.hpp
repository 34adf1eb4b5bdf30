// y (rows, out) = x (rows, in) . W^T (+ b) in the int8 arithmetic
// (EDGEATTN_ARITHMETIC_INT8): each row of x quantised by the int8 rule
// (kernels/int8_scale.hpp), int32 products with W's int8 rows
// (integer_kernel_table), and y = ((float)sum * row scale) * channel scale
// (+ b), the same bits on every path.
#ifndef EDGEATTN_INTEGER_LINEAR_HPP
#define EDGEATTN_INTEGER_LINEAR_HPP

#include <stddef.h>

#include "linear.hpp"

namespace edgeattn {
namespace detail {

// Bytes of one thread's scratch: a block of rows of x quantised, their
// scales and their int32 sums, in cache lines. false when it overflows.
bool integer_linear_slot_bytes(size_t rows, size_t in_features, size_t out_features, size_t &bytes);

// The product on at most `slots` threads, each with a slot of
// integer_linear_slot_bytes at scratch + slot * that (64-byte multiples).
// W: int8 with per-output scales.
void integer_linear(const kernel_table &k, size_t rows, size_t in_features, size_t out_features,
                    const float *x, const stored_matrix &W, const float *b, float *y, void *scratch,
                    size_t slots);

}  // namespace detail
}  // namespace edgeattn

#endif
