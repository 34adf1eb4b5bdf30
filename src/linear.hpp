// y (rows, out) = x (rows, in) . W^T (+ b), W (out, in) in torch.nn.Linear
// layout: the projections of additive and multi-head attention. W^T is
// packed once into `packed` (packed_floats(in, out) floats), then row blocks
// of x are split over threads.
#ifndef EDGEATTN_LINEAR_HPP
#define EDGEATTN_LINEAR_HPP

#include <stddef.h>

#include "kernels/kernel_table.hpp"

namespace edgeattn {
namespace detail {

void linear(const kernel_table &k, size_t rows, size_t in_features, size_t out_features,
            const float *x, const float *W, const float *b, float *y, float *packed);

}  // namespace detail
}  // namespace edgeattn

#endif
