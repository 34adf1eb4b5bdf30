// y (rows, out) = x (rows, in) . W^T (+ b), W (out, in) in torch.nn.Linear
// layout: the projections of additive and multi-head attention.
#ifndef EDGEATTN_LINEAR_HPP
#define EDGEATTN_LINEAR_HPP

#include <stddef.h>
#include <string.h>

#include "kernels/kernel_table.hpp"

namespace edgeattn {
namespace detail {

// A weight matrix W (out, in) in its stored type: as the caller gave it, or
// W^T packed in max_panel_width panels of that type (pack_weights_transposed).
struct stored_matrix {
    edgeattn_dtype type = EDGEATTN_DTYPE_F32;
    const void *data = nullptr;
    const float *scales = nullptr;  // int8: (out) per-output-channel scales
};

// A caller's matrix as the kernels take it (scales only for int8).
inline stored_matrix stored_matrix_of(const edgeattn_weight_matrix &m) {
    return {m.type, m.data, m.type == EDGEATTN_DTYPE_INT8 ? m.scales : nullptr};
}

// Bytes of one stored element (0 for a type outside the enum).
inline size_t element_bytes(edgeattn_dtype type) {
    return type == EDGEATTN_DTYPE_F32 ? 4 : type == EDGEATTN_DTYPE_F16 ? 2
           : type == EDGEATTN_DTYPE_INT8 ? 1 : 0;
}

// Floats of `packed` that linear() needs for these sizes: none for a few
// rows (W is read in place), else W^T packed (packed_floats(in, out)).
// false when the size overflows.
bool linear_scratch_floats(size_t rows, size_t in_features, size_t out_features, size_t &floats);

// W as given: read in place for a few rows, else packed per call into
// `packed` (linear_scratch_floats floats; stored weights keep their type
// there, so they take less) by the threads that use it: at most
// max_threads of them (the call's workspace has room for that many).
void linear(const kernel_table &k, size_t rows, size_t in_features, size_t out_features,
            const float *x, const stored_matrix &W, const float *b, float *y, float *packed,
            size_t max_threads);

// W^T packed once (pack_weights_transposed): no packing per call.
void linear_prepacked(const kernel_table &k, size_t rows, size_t in_features, size_t out_features,
                      const float *x, const stored_matrix &packed_W, const float *b, float *y,
                      size_t max_threads);

// W (out, in) -> W^T in panels of max_panel_width columns, zero-padded, in
// W's type: the layout gemm_packed reads on every path (panel_stride =
// max_panel_width). packed_floats(in, out) elements of the type.
void pack_weights_transposed(size_t in_features, size_t out_features, const stored_matrix &W,
                             void *packed);

}  // namespace detail
}  // namespace edgeattn

#endif
