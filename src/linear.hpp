// y (rows, out) = x (rows, in) . W^T (+ b), W (out, in) in torch.nn.Linear
// layout: the projections of additive and multi-head attention.
#ifndef EDGEATTN_LINEAR_HPP
#define EDGEATTN_LINEAR_HPP

#include <stddef.h>

#include "kernels/kernel_table.hpp"

namespace edgeattn {
namespace detail {

// Floats of `packed` that linear() needs for these sizes: none for a few
// rows (W is read in place), else W^T packed (packed_floats(in, out)).
// false when the size overflows.
bool linear_scratch_floats(size_t rows, size_t in_features, size_t out_features, size_t &floats);

// W as given: read in place for a few rows, else packed per call into
// `packed` (linear_scratch_floats floats) by the threads that use it.
void linear(const kernel_table &k, size_t rows, size_t in_features, size_t out_features,
            const float *x, const float *W, const float *b, float *y, float *packed);

// W^T packed once (pack_weights_transposed): no packing per call.
void linear_prepacked(const kernel_table &k, size_t rows, size_t in_features, size_t out_features,
                      const float *x, const float *packed_W, const float *b, float *y);

// W (out, in) -> W^T in panels of max_panel_width columns, zero-padded:
// the layout gemm_packed reads on every path (panel_stride = max_panel_width).
// packed_floats(in, out) floats.
void pack_weights_transposed(size_t in_features, size_t out_features, const float *W,
                             float *packed);

}  // namespace detail
}  // namespace edgeattn

#endif
