// Layout of multi-head attention weights packed once by
// edgeattn_mha_pack, in floats from the start of the buffer:
//   a header (64 bytes: what the weights were packed for, see
//   src/packed_weights.cpp), then W_q^T (query_size, h), W_k^T (key_size, h),
//   W_v^T (value_size, h) and W_o^T (h, h) (W_k, W_v with H_kv * h / H
//   columns under grouped-query heads), each in panels of
//   max_panel_width columns (zero-padded), then the four biases (h each).
// Value heads of their own width (value_hiddens hv != h): W_v^T has
//   H_kv * hv / H columns, W_o^T is (hv, h), and one more 64-byte block at
//   the end holds hv (the header's six sizes are taken).
// The panels are as wide as the widest path's, a multiple of every path's,
// so one packed buffer serves every kernel path (gemm_packed's panel_stride).
#ifndef EDGEATTN_DETAIL_PACKED_WEIGHTS_LAYOUT_HPP
#define EDGEATTN_DETAIL_PACKED_WEIGHTS_LAYOUT_HPP

#include "workspace_layout.hpp"

namespace edgeattn {
namespace detail {

constexpr size_t packed_weights_header_floats = 16;

// Bytes of one element of each stored matrix: 4 (fp32), 2 (binary16) or
// 1 (int8, which also keeps one float scale per output channel).
struct stored_element_bytes {
    size_t of[4] = {4, 4, 4, 4};
};

// Floats that hold W^T (in, out) packed in panels of `bytes`-byte elements
// (rounded up to whole floats, so what follows stays 4-byte aligned).
constexpr bool packed_stored_floats(size_t in, size_t out, size_t bytes, size_t &floats) {
    size_t elements = 0, total = 0;
    if (!packed_floats(in, out, elements) || mul_overflows(elements, bytes, total)) return false;
    floats = floats_for_bytes(total);
    return true;
}

struct mha_packed_weights_layout {
    size_t weights[4] = {0, 0, 0, 0};  // W_q^T, W_k^T, W_v^T, W_o^T
    size_t biases[4] = {0, 0, 0, 0};   // b_q, b_k, b_v, b_o
    size_t scales[4] = {0, 0, 0, 0};   // int8 matrices' per-channel scales (else 0: none)
    size_t value_hiddens = 0;          // hv != h: where hv is kept (else 0: none)
    size_t bytes = 0;                  // 0: the sizes overflow size_t
};

// kv_hiddens: rows of W_k and W_v (num_kv_heads * head_size; num_hiddens
// without grouped-query heads).
// value_hiddens, kv_value_hiddens: hv and the rows of W_v, when hv != h
// (0: the value heads are as wide as the key heads).
constexpr mha_packed_weights_layout make_mha_packed_weights_layout(
    size_t query_size, size_t key_size, size_t value_size, size_t num_hiddens, size_t kv_hiddens,
    stored_element_bytes element = stored_element_bytes{}, size_t value_hiddens = 0,
    size_t kv_value_hiddens = 0) {
    layout_builder b;
    mha_packed_weights_layout l;
    b.add(packed_weights_header_floats);
    const bool own_values = value_hiddens != 0 && value_hiddens != num_hiddens;
    const size_t inputs[4] = {query_size, key_size, value_size, own_values ? value_hiddens : num_hiddens};
    const size_t outputs[4] = {num_hiddens, kv_hiddens, own_values ? kv_value_hiddens : kv_hiddens,
                               num_hiddens};
    for (size_t i = 0; i < 4; ++i) {
        size_t floats = 0;
        if (!packed_stored_floats(inputs[i], outputs[i], element.of[i], floats)) b.overflow = true;
        l.weights[i] = b.add(floats);
    }
    for (size_t i = 0; i < 4; ++i) l.biases[i] = b.add(outputs[i]);
    for (size_t i = 0; i < 4; ++i)
        if (element.of[i] == 1) l.scales[i] = b.add(outputs[i]);
    if (own_values) l.value_hiddens = b.add(packed_weights_header_floats);
    l.bytes = b.bytes();
    return l;
}

// A projection's weights packed once (edgeattn_dense_pack): the
// header, W^T (in, out) in panels, the bias (out), int8's scales (out).
struct linear_packed_weights_layout {
    size_t weights = 0;
    size_t bias = 0;
    size_t scales = 0;  // 0: none
    size_t bytes = 0;
};

constexpr linear_packed_weights_layout make_linear_packed_weights_layout(size_t in_features,
                                                                         size_t out_features,
                                                                         size_t element_bytes = 4) {
    layout_builder b;
    linear_packed_weights_layout l;
    size_t floats = 0;
    if (!packed_stored_floats(in_features, out_features, element_bytes, floats)) b.overflow = true;
    b.add(packed_weights_header_floats);
    l.weights = b.add(floats);
    l.bias = b.add(out_features);
    if (element_bytes == 1) l.scales = b.add(out_features);
    l.bytes = b.bytes();
    return l;
}

}  // namespace detail
}  // namespace edgeattn

#endif
