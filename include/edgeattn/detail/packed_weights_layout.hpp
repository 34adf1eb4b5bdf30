// Layout of multi-head attention weights packed once by
// edgeattn_mha_pack_weights, in floats from the start of the buffer:
//   a header (64 bytes: what the weights were packed for, see
//   src/packed_weights.cpp), then W_q^T (query_size, h), W_k^T (key_size, h),
//   W_v^T (value_size, h) and W_o^T (h, h), each in panels of
//   max_panel_width columns (zero-padded), then the four biases (h each).
// The panels are as wide as the widest path's, a multiple of every path's,
// so one packed buffer serves every kernel path (gemm_packed's panel_stride).
#ifndef EDGEATTN_DETAIL_PACKED_WEIGHTS_LAYOUT_HPP
#define EDGEATTN_DETAIL_PACKED_WEIGHTS_LAYOUT_HPP

#include "workspace_layout.hpp"

namespace edgeattn {
namespace detail {

constexpr size_t packed_weights_header_floats = 16;

struct mha_packed_weights_layout {
    size_t weights[4] = {0, 0, 0, 0};  // W_q^T, W_k^T, W_v^T, W_o^T
    size_t biases[4] = {0, 0, 0, 0};   // b_q, b_k, b_v, b_o
    size_t bytes = 0;                  // 0: the sizes overflow size_t
};

constexpr mha_packed_weights_layout make_mha_packed_weights_layout(size_t query_size,
                                                                   size_t key_size,
                                                                   size_t value_size,
                                                                   size_t num_hiddens) {
    layout_builder b;
    mha_packed_weights_layout l;
    b.add(packed_weights_header_floats);
    const size_t inputs[4] = {query_size, key_size, value_size, num_hiddens};
    for (size_t i = 0; i < 4; ++i) {
        size_t floats = 0;
        if (!packed_floats(inputs[i], num_hiddens, floats)) b.overflow = true;
        l.weights[i] = b.add(floats);
    }
    for (size_t i = 0; i < 4; ++i) l.biases[i] = b.add(num_hiddens);
    l.bytes = b.bytes();
    return l;
}

}  // namespace detail
}  // namespace edgeattn

#endif
