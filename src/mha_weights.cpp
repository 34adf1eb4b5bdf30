// Multi-head attention weights: checking them as given, and packing them
// once (edgeattn_mha_pack) into the layout of
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
// Value heads of their own width: hv kept at the end (the layout's
// value_hiddens), so a buffer packed for hv = h reads as version 2.
constexpr uint32_t packed_version_own_values = 3;

packed_header header_for(const edgeattn_attention_dims &d, const edgeattn_dtype types[4]) {
    const size_t sizes[6] = {d.query_size, d.key_size, d.value_size, d.num_hiddens, d.num_heads,
                             kv_heads_of(d)};
    const bool own_values = value_hiddens_of(d) != d.num_hiddens;
    packed_header h = make_packed_header(packed_magic, own_values ? packed_version_own_values : packed_version,
                                         sizes, 6);
    h.weight_types = weight_type_bits(types, 4);
    return h;
}

mha_packed_weights_layout packed_layout_for(const edgeattn_attention_dims &d,
                                            const edgeattn_dtype types[4]) {
    stored_element_bytes element;
    for (size_t i = 0; i < 4; ++i) element.of[i] = element_bytes(types[i]);
    return make_mha_packed_weights_layout(d.query_size, d.key_size, d.value_size, d.num_hiddens,
                                          kv_hiddens_of(d), element, value_hiddens_of(d),
                                          kv_value_hiddens_of(d));
}

// The types of typed weights, or false when one is unknown.
bool types_of(const edgeattn_weights &w, edgeattn_dtype types[4]) {
    const edgeattn_weight_matrix *m[4] = {&w.W_q, &w.W_k, &w.W_v, &w.W_o};
    for (size_t i = 0; i < 4; ++i) {
        const int type = enum_as_int(m[i]->type);  // a C caller may store any int there
        // Weights packed once take the fp32 arithmetic only.
        if (stored_type_status(type) != EDGEATTN_OK || enum_as_int(m[i]->arithmetic) != EDGEATTN_ARITHMETIC_FLOAT)
            return false;
        types[i] = static_cast<edgeattn_dtype>(type);
    }
    return true;
}

}  // namespace

namespace edgeattn {
namespace detail {

edgeattn_status check_mha_feature_dims(const edgeattn_attention_dims &d) {
    if (d.query_size == 0 || d.key_size == 0 || d.value_size == 0 || d.num_hiddens == 0 ||
        d.num_heads == 0)
        return EDGEATTN_ERR_ZERO_DIMENSION;
    if (d.num_hiddens % d.num_heads != 0 || value_hiddens_of(d) % d.num_heads != 0)
        return EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE;
    if (d.num_heads % kv_heads_of(d) != 0) return EDGEATTN_ERR_KV_HEADS_DO_NOT_DIVIDE;
    return EDGEATTN_OK;
}

edgeattn_status check_stored_matrix(const edgeattn_weight_matrix &m, size_t out, size_t in,
                                    tensor_span *spans, size_t &num_spans, bool takes_integer) {
    if (edgeattn_status st = stored_type_status(enum_as_int(m.type))) return st;
    if (edgeattn_status st = arithmetic_status(enum_as_int(m.arithmetic), m.type, in, takes_integer))
        return st;
    if (!m.data) return EDGEATTN_ERR_NULL_POINTER;
    size_t count = 0;
    if (edgeattn_status st = tensor_count(count, out, in)) return st;
    spans[num_spans++] = {m.data, count, element_bytes(m.type)};
    if (m.type != EDGEATTN_DTYPE_INT8) return EDGEATTN_OK;
    if (!m.scales) return EDGEATTN_ERR_NULL_POINTER;
    if (!is_float_aligned(m.scales)) return EDGEATTN_ERR_MISALIGNED;
    // A scale of 0 would zero the channel silently; NaN or inf poison it.
    for (size_t o = 0; o < out; ++o)
        if (!(m.scales[o] > 0.0f && m.scales[o] <= 3.4028234663852886e38f)) return EDGEATTN_ERR_BAD_SCALE;
    spans[num_spans++] = {m.scales, out};
    return EDGEATTN_OK;
}

edgeattn_status view_typed_mha_weights(const edgeattn_attention_dims &d,
                                       const edgeattn_weights &w, mha_weights_view &view,
                                       unsigned used, bool takes_integer) {
    size_t inputs[4], outputs[4];
    projection_inputs(d, inputs);
    projection_outputs(d, outputs);
    const edgeattn_weight_matrix *matrices[4] = {&w.W_q, &w.W_k, &w.W_v, &w.W_o};
    const float *biases[4] = {w.b_q, w.b_k, w.b_v, w.b_o};
    view = mha_weights_view();
    for (size_t i = 0; i < 4; ++i) {
        if (!(used >> i & 1u)) continue;
        const edgeattn_weight_matrix &m = *matrices[i];
        if (edgeattn_status st =
                check_stored_matrix(m, outputs[i], inputs[i], view.spans, view.num_spans, takes_integer))
            return st;
        if (with_int8_arithmetic && m.arithmetic == EDGEATTN_ARITHMETIC_INT8) view.integer |= 1u << i;  // checked
        view.W[i] = stored_matrix_of(m);
        view.b[i] = biases[i];
    }
    for (size_t i = 0; i < 4; ++i)
        if (used >> i & 1u && biases[i]) view.spans[view.num_spans++] = {biases[i], outputs[i]};
    return EDGEATTN_OK;
}

namespace {

// linear_prepacked as a view's product: weights packed once need no scratch.
void prepacked_product(const kernel_table &k, size_t rows, size_t in_features, size_t out_features,
                       const float *x, const stored_matrix &W, const float *b, float *y, float *,
                       size_t max_threads) {
    linear_prepacked(k, rows, in_features, out_features, x, W, b, y, max_threads);
}

}  // namespace

edgeattn_status view_packed_mha_weights(const edgeattn_attention_dims &d, const void *packed,
                                        size_t packed_bytes, mha_weights_view &view) {
    view = mha_weights_view();
    if (!is_float_aligned(packed)) return EDGEATTN_ERR_MISALIGNED;
    edgeattn_dtype types[4];
    if (packed_bytes < packed_weights_header_floats * sizeof(float)) return EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH;
    if (edgeattn_status st = packed_weight_types(packed, 4, types)) return st;
    const mha_packed_weights_layout l = packed_layout_for(d, types);
    if (l.bytes == 0) return EDGEATTN_ERR_SIZE_OVERFLOW;
    if (packed_bytes < l.bytes) return EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH;
    uint32_t biases = 0;
    if (!packed_header_matches(packed, header_for(d, types), 4, biases))
        return EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH;
    if (l.value_hiddens) {  // hv kept past the header (its six sizes are taken)
        uint64_t hv = 0;
        memcpy(&hv, static_cast<const float *>(packed) + l.value_hiddens, sizeof hv);
        if (hv != value_hiddens_of(d)) return EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH;
    }
    const float *floats = static_cast<const float *>(packed);
    for (size_t i = 0; i < 4; ++i) {
        view.W[i] = {types[i], floats + l.weights[i], l.scales[i] ? floats + l.scales[i] : nullptr};
        view.b[i] = biases >> i & 1u ? floats + l.biases[i] : nullptr;
    }
    view.product = &prepacked_product;
    view.spans[view.num_spans++] = {packed, l.bytes / sizeof(float)};
    return EDGEATTN_OK;
}

void project(const kernel_table &k, const mha_weights_view &w, projection which, size_t rows,
             size_t in_features, size_t out_features, const float *x, float *y,
             float *packed_scratch, size_t max_threads, size_t integer_slots) {
    if (with_int8_arithmetic && w.integer >> which & 1u)
        w.integer_product(k, rows, in_features, out_features, x, w.W[which], w.b[which], y, packed_scratch,
                          integer_slots);
    else
        w.product(k, rows, in_features, out_features, x, w.W[which], w.b[which], y, packed_scratch, max_threads);
}

edgeattn_status copy_typed_weights(const edgeattn_weights *weights, unsigned used,
                                   edgeattn_weights &w, unsigned &none) {
    none = 0;
    if (!weights) return EDGEATTN_ERR_NULL_POINTER;
    memcpy(&w, weights, sizeof w);
    const edgeattn_weight_matrix *m[4] = {&w.W_q, &w.W_k, &w.W_v, &w.W_o};
    for (unsigned i = 0; i < 4; ++i) {
        if (!(used >> i & 1u)) continue;
        const int type = enum_as_int(m[i]->type);
        if (type == EDGEATTN_DTYPE_NONE)
            none |= 1u << i;
        else if (edgeattn_status st = stored_type_status(type))
            return st;
    }
    return EDGEATTN_OK;
}

edgeattn_status check_unprojected(const edgeattn_weights &w, unsigned none, const size_t in[4],
                                  const size_t out[4]) {
    const float *biases[4] = {w.b_q, w.b_k, w.b_v, w.b_o};
    for (unsigned i = 0; i < 4; ++i)
        if (none >> i & 1u && biases[i]) return EDGEATTN_ERR_OPTION_NOT_SUPPORTED;
    for (unsigned i = 0; i < 4; ++i)
        if (none >> i & 1u && in[i] != out[i]) return EDGEATTN_ERR_SHAPE_MISMATCH;
    return EDGEATTN_OK;
}

}  // namespace detail
}  // namespace edgeattn

extern "C" size_t edgeattn_mha_packed_size(const edgeattn_attention_dims *dims,
                                           const edgeattn_weights *weights) {
    edgeattn_dtype types[4];
    edgeattn_weights w;
    if (!dims || !read_argument(weights, w) || check_mha_feature_dims(*dims) != EDGEATTN_OK ||
        !types_of(w, types))
        return 0;
    return packed_layout_for(*dims, types).bytes;
}

extern "C" edgeattn_status edgeattn_mha_pack(const edgeattn_attention_dims *dims,
                                             const edgeattn_weights *weights, void *packed,
                                             size_t packed_bytes) {
    if (!dims || !weights || !packed) return EDGEATTN_ERR_NULL_POINTER;
    // Both structs are read into locals here: the memset below may clear
    // them when the caller keeps them inside `packed`.
    const edgeattn_attention_dims d = *dims;
    edgeattn_weights w;
    read_argument(weights, w);
    if (edgeattn_status st = check_mha_feature_dims(d)) return st;
    mha_weights_view given;
    if (edgeattn_status st = view_typed_mha_weights(d, w, given)) return st;
    edgeattn_dtype types[4];
    for (size_t i = 0; i < 4; ++i) types[i] = given.W[i].type;
    const mha_packed_weights_layout l = packed_layout_for(d, types);
    if (l.bytes == 0) return EDGEATTN_ERR_SIZE_OVERFLOW;
    if (!is_float_aligned(packed)) return EDGEATTN_ERR_MISALIGNED;
    for (size_t i = 0; i < given.num_spans; ++i)
        if (!is_element_aligned(given.spans[i])) return EDGEATTN_ERR_MISALIGNED;
    if (packed_bytes < l.bytes) return EDGEATTN_ERR_WORKSPACE_TOO_SMALL;
    const tensor_span out = {packed, l.bytes / sizeof(float)};
    if (edgeattn_status st = check_disjoint(&out, 1, given.spans, given.num_spans)) return st;

    // Zeroed first: the padding between the regions is then the same bytes
    // on every call (a packed buffer can be hashed or compared).
    memset(packed, 0, l.bytes);
    packed_header header = header_for(d, types);
    float *floats = static_cast<float *>(packed);
    size_t inputs[4], outputs[4];
    projection_inputs(d, inputs);
    projection_outputs(d, outputs);
    for (size_t i = 0; i < 4; ++i) {
        pack_weights_transposed(inputs[i], outputs[i], given.W[i], floats + l.weights[i]);
        if (l.scales[i]) memcpy(floats + l.scales[i], given.W[i].scales, outputs[i] * sizeof(float));
        if (given.b[i]) {
            memcpy(floats + l.biases[i], given.b[i], outputs[i] * sizeof(float));
            header.biases |= 1u << i;
        }
    }
    write_packed_header(packed, header);
    if (l.value_hiddens) {
        const uint64_t hv = value_hiddens_of(d);
        memcpy(floats + l.value_hiddens, &hv, sizeof hv);
    }
    return EDGEATTN_OK;
}
