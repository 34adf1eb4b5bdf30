// Multi-head attention weights: checking them as given, and packing them
// once (edgeattn_mha_pack_weights) into the layout of
// include/edgeattn/detail/packed_weights_layout.hpp.
#include "mha_weights.hpp"

#include <string.h>

#include "edgeattn/detail/packed_weights_layout.hpp"
#include "linear.hpp"

using namespace edgeattn::detail;

namespace {

// What a packed buffer was packed for, in its first 64 bytes. The magic and
// version catch a buffer that was never packed (or by another layout); the
// sizes catch weights packed for another model.
struct packed_header {
    uint32_t magic;
    uint32_t version;
    uint64_t sizes[5];  // query_size, key_size, value_size, num_hiddens, num_heads
    uint32_t biases;    // bit i: bias i (b_q, b_k, b_v, b_o) was given
    uint32_t reserved;
};
static_assert(sizeof(packed_header) <= packed_weights_header_floats * sizeof(float),
              "the header must fit its slot in the layout");

constexpr uint32_t packed_magic = 0x4D484145u;  // "EAHM" little-endian
constexpr uint32_t packed_version = 1;

packed_header header_for(const edgeattn_attention_dims &d) {
    packed_header h;
    memset(&h, 0, sizeof h);
    h.magic = packed_magic;
    h.version = packed_version;
    const size_t sizes[5] = {d.query_size, d.key_size, d.value_size, d.num_hiddens, d.num_heads};
    for (size_t i = 0; i < 5; ++i) h.sizes[i] = sizes[i];
    return h;
}

mha_packed_weights_layout packed_layout_for(const edgeattn_attention_dims &d) {
    return make_mha_packed_weights_layout(d.query_size, d.key_size, d.value_size, d.num_hiddens);
}

}  // namespace

namespace edgeattn {
namespace detail {

edgeattn_status check_mha_feature_dims(const edgeattn_attention_dims &d) {
    if (d.query_size == 0 || d.key_size == 0 || d.value_size == 0 || d.num_hiddens == 0 ||
        d.num_heads == 0)
        return EDGEATTN_ERR_ZERO_DIMENSION;
    if (d.num_hiddens % d.num_heads != 0) return EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE;
    return EDGEATTN_OK;
}

edgeattn_status view_mha_weights(const edgeattn_attention_dims &d, const edgeattn_mha_weights &w,
                                 mha_weights_view &view) {
    const size_t h = d.num_hiddens;
    const size_t inputs[4] = {d.query_size, d.key_size, d.value_size, h};
    const float *matrices[4] = {w.W_q, w.W_k, w.W_v, w.W_o};
    const float *biases[4] = {w.b_q, w.b_k, w.b_v, w.b_o};
    view = mha_weights_view{};
    for (size_t i = 0; i < 4; ++i) {
        if (!matrices[i]) return EDGEATTN_ERR_NULL_POINTER;
        size_t count = 0;
        if (edgeattn_status st = tensor_count(count, h, inputs[i])) return st;
        view.W[i] = matrices[i];
        view.b[i] = biases[i];
        view.spans[view.num_spans++] = {matrices[i], count};
    }
    for (size_t i = 0; i < 4; ++i)
        if (biases[i]) view.spans[view.num_spans++] = {biases[i], h};
    return EDGEATTN_OK;
}

edgeattn_status view_packed_mha_weights(const edgeattn_attention_dims &d, const void *packed,
                                        size_t packed_bytes, mha_weights_view &view) {
    view = mha_weights_view{};
    const mha_packed_weights_layout l = packed_layout_for(d);
    if (l.bytes == 0) return EDGEATTN_ERR_SIZE_OVERFLOW;
    if (!is_float_aligned(packed)) return EDGEATTN_ERR_MISALIGNED;
    if (packed_bytes < l.bytes) return EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH;
    packed_header have, want = header_for(d);
    memcpy(&have, packed, sizeof have);
    want.biases = have.biases;
    if (have.biases > 15u || memcmp(&have, &want, sizeof have) != 0)
        return EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH;
    const float *floats = static_cast<const float *>(packed);
    for (size_t i = 0; i < 4; ++i) {
        view.W[i] = floats + l.weights[i];
        view.b[i] = have.biases >> i & 1u ? floats + l.biases[i] : nullptr;
    }
    view.prepacked = true;
    view.spans[view.num_spans++] = {packed, l.bytes / sizeof(float)};
    return EDGEATTN_OK;
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
    const size_t h = d.num_hiddens, inputs[4] = {d.query_size, d.key_size, d.value_size, h};
    for (size_t i = 0; i < 4; ++i) {
        pack_weights_transposed(inputs[i], h, given.W[i], floats + l.weights[i]);
        float *bias = floats + l.biases[i];
        if (given.b[i]) {
            memcpy(bias, given.b[i], h * sizeof(float));
            header.biases |= 1u << i;
        } else {
            memset(bias, 0, h * sizeof(float));
        }
    }
    memset(packed, 0, packed_weights_header_floats * sizeof(float));
    memcpy(packed, &header, sizeof header);
    return EDGEATTN_OK;
}
