// Multi-head attention weights: checking them as given, and packing them
// once (edgeattn_mha_pack_weights) into the layout of
// include/edgeattn/detail/packed_weights_layout.hpp.
#include "mha_weights.hpp"

#include <string.h>

#include "edgeattn/detail/packed_weights_layout.hpp"
#include "linear.hpp"
#include "packed_header.hpp"

using namespace edgeattn::detail;

namespace {

constexpr uint32_t packed_magic = 0x4D484145u;  // "EAHM" little-endian
constexpr uint32_t packed_version = 2;          // 2: num_kv_heads among the sizes

packed_header header_for(const edgeattn_attention_dims &d) {
    const size_t sizes[6] = {d.query_size, d.key_size, d.value_size, d.num_hiddens, d.num_heads,
                             kv_heads_of(d)};
    return make_packed_header(packed_magic, packed_version, sizes, 6);
}

mha_packed_weights_layout packed_layout_for(const edgeattn_attention_dims &d) {
    return make_mha_packed_weights_layout(d.query_size, d.key_size, d.value_size, d.num_hiddens,
                                          kv_hiddens_of(d));
}

// Rows of W_q, W_k, W_v, W_o (and their biases' lengths).
void projection_outputs(const edgeattn_attention_dims &d, size_t out[4]) {
    out[0] = out[3] = d.num_hiddens;
    out[1] = out[2] = kv_hiddens_of(d);
}

}  // namespace

namespace edgeattn {
namespace detail {

edgeattn_status check_mha_feature_dims(const edgeattn_attention_dims &d) {
    if (d.query_size == 0 || d.key_size == 0 || d.value_size == 0 || d.num_hiddens == 0 ||
        d.num_heads == 0)
        return EDGEATTN_ERR_ZERO_DIMENSION;
    if (d.num_hiddens % d.num_heads != 0) return EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE;
    if (d.num_heads % kv_heads_of(d) != 0) return EDGEATTN_ERR_KV_HEADS_DO_NOT_DIVIDE;
    return EDGEATTN_OK;
}

edgeattn_status view_mha_weights(const edgeattn_attention_dims &d, const edgeattn_mha_weights &w,
                                 mha_weights_view &view, unsigned used) {
    const size_t inputs[4] = {d.query_size, d.key_size, d.value_size, d.num_hiddens};
    size_t outputs[4];
    projection_outputs(d, outputs);
    const float *matrices[4] = {w.W_q, w.W_k, w.W_v, w.W_o};
    const float *biases[4] = {w.b_q, w.b_k, w.b_v, w.b_o};
    view = mha_weights_view{};
    for (size_t i = 0; i < 4; ++i) {
        if (!(used >> i & 1u)) continue;
        if (!matrices[i]) return EDGEATTN_ERR_NULL_POINTER;
        size_t count = 0;
        if (edgeattn_status st = tensor_count(count, outputs[i], inputs[i])) return st;
        view.W[i] = matrices[i];
        view.b[i] = biases[i];
        view.spans[view.num_spans++] = {matrices[i], count};
    }
    for (size_t i = 0; i < 4; ++i)
        if (used >> i & 1u && biases[i]) view.spans[view.num_spans++] = {biases[i], outputs[i]};
    return EDGEATTN_OK;
}

edgeattn_status view_packed_mha_weights(const edgeattn_attention_dims &d, const void *packed,
                                        size_t packed_bytes, mha_weights_view &view) {
    view = mha_weights_view{};
    const mha_packed_weights_layout l = packed_layout_for(d);
    if (l.bytes == 0) return EDGEATTN_ERR_SIZE_OVERFLOW;
    if (!is_float_aligned(packed)) return EDGEATTN_ERR_MISALIGNED;
    if (packed_bytes < l.bytes) return EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH;
    uint32_t biases = 0;
    if (!packed_header_matches(packed, header_for(d), 4, biases))
        return EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH;
    const float *floats = static_cast<const float *>(packed);
    for (size_t i = 0; i < 4; ++i) {
        view.W[i] = floats + l.weights[i];
        view.b[i] = biases >> i & 1u ? floats + l.biases[i] : nullptr;
    }
    view.prepacked = true;
    view.spans[view.num_spans++] = {packed, l.bytes / sizeof(float)};
    return EDGEATTN_OK;
}

void project(const kernel_table &k, const mha_weights_view &w, projection which, size_t rows,
             size_t in_features, size_t out_features, const float *x, float *y,
             float *packed_scratch) {
    if (w.prepacked)
        linear_prepacked(k, rows, in_features, out_features, x, w.W[which], w.b[which], y);
    else
        linear(k, rows, in_features, out_features, x, w.W[which], w.b[which], y, packed_scratch);
}

}  // namespace detail
}  // namespace edgeattn

extern "C" size_t edgeattn_mha_packed_weights_size(const edgeattn_attention_dims *dims) {
    if (!dims || check_mha_feature_dims(*dims) != EDGEATTN_OK) return 0;
    return packed_layout_for(*dims).bytes;
}

extern "C" edgeattn_status edgeattn_mha_pack_weights(const edgeattn_attention_dims *dims,
                                                     const edgeattn_mha_weights *weights,
                                                     void *packed, size_t packed_bytes) {
    if (!dims || !weights || !packed) return EDGEATTN_ERR_NULL_POINTER;
    const edgeattn_attention_dims &d = *dims;
    if (edgeattn_status st = check_mha_feature_dims(d)) return st;
    mha_weights_view given;
    if (edgeattn_status st = view_mha_weights(d, *weights, given)) return st;
    const mha_packed_weights_layout l = packed_layout_for(d);
    if (l.bytes == 0) return EDGEATTN_ERR_SIZE_OVERFLOW;
    if (!is_float_aligned(packed)) return EDGEATTN_ERR_MISALIGNED;
    for (size_t i = 0; i < given.num_spans; ++i)
        if (!is_float_aligned(given.spans[i].data)) return EDGEATTN_ERR_MISALIGNED;
    if (packed_bytes < l.bytes) return EDGEATTN_ERR_WORKSPACE_TOO_SMALL;
    const tensor_span out = {packed, l.bytes / sizeof(float)};
    if (edgeattn_status st = check_disjoint(&out, 1, given.spans, given.num_spans)) return st;

    packed_header header = header_for(d);
    float *floats = static_cast<float *>(packed);
    const size_t inputs[4] = {d.query_size, d.key_size, d.value_size, d.num_hiddens};
    size_t outputs[4];
    projection_outputs(d, outputs);
    for (size_t i = 0; i < 4; ++i) {
        pack_weights_transposed(inputs[i], outputs[i], given.W[i], floats + l.weights[i]);
        float *bias = floats + l.biases[i];
        if (given.b[i]) {
            memcpy(bias, given.b[i], outputs[i] * sizeof(float));
            header.biases |= 1u << i;
        } else {
            memset(bias, 0, outputs[i] * sizeof(float));
        }
    }
    write_packed_header(packed, header);
    return EDGEATTN_OK;
}
