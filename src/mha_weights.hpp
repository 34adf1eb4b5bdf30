// The weights of one multi-head attention call, in either form the C API
// takes: as the caller holds them (torch.nn.Linear layout; the projections
// pack W^T per call) or packed once by edgeattn_mha_pack.
#ifndef EDGEATTN_MHA_WEIGHTS_HPP
#define EDGEATTN_MHA_WEIGHTS_HPP

#include "edgeattn/types.h"
#include "kernels/kernel_table.hpp"
#include "linear.hpp"
#include "validate.hpp"

namespace edgeattn {
namespace detail {

enum projection { query_projection, key_projection, value_projection, output_projection };

struct mha_weights_view {
    stored_matrix W[4];      // (h, in) as given, or W^T in max_panel_width panels
    const float *b[4] = {};  // (h) or nullptr
    // The product that reads W: linear (as given), or the packed form's,
    // set only by view_packed_mha_weights, so an image whose calls never
    // take packed weights does not link that product.
    void (*product)(const kernel_table &k, size_t rows, size_t in_features, size_t out_features,
                    const float *x, const stored_matrix &W, const float *b, float *y, float *packed,
                    size_t max_threads) = &linear;
    // The matrices in the int8 arithmetic (bit i: projection i), and their
    // product (integer_linear), set only by an op that takes it (edgeattn_mha:
    // the cache calls' images do not link it).
    unsigned integer = 0;
    void (*integer_product)(const kernel_table &k, size_t rows, size_t in_features, size_t out_features,
                            const float *x, const stored_matrix &W, const float *b, float *y, void *scratch,
                            size_t slots) = nullptr;
    // What the call reads besides its activations, for the alignment and
    // overlap checks: the matrices, scales and biases given, or the one
    // packed buffer.
    tensor_span spans[12] = {};
    size_t num_spans = 0;
};

// Heads of keys and values (grouped-query attention; 0 in dims means H),
// and their features, H_kv * h / H.
inline size_t kv_heads_of(const edgeattn_attention_dims &d) {
    return d.num_kv_heads ? d.num_kv_heads : d.num_heads;
}
inline size_t kv_hiddens_of(const edgeattn_attention_dims &d) {
    return kv_heads_of(d) * (d.num_hiddens / d.num_heads);
}
// The concatenated value heads hv (0 in dims means h), a value head's
// features hv / H, and the values' features H_kv * hv / H.
inline size_t value_hiddens_of(const edgeattn_attention_dims &d) {
    return d.value_hiddens ? d.value_hiddens : d.num_hiddens;
}
inline size_t value_head_of(const edgeattn_attention_dims &d) {
    return value_hiddens_of(d) / d.num_heads;
}
inline size_t kv_value_hiddens_of(const edgeattn_attention_dims &d) {
    return kv_heads_of(d) * value_head_of(d);
}
// Rows (outputs) and columns (inputs) of W_q, W_k, W_v, W_o (and their
// biases' lengths: the outputs).
inline void projection_outputs(const edgeattn_attention_dims &d, size_t out[4]) {
    out[0] = out[3] = d.num_hiddens;
    out[1] = kv_hiddens_of(d);
    out[2] = kv_value_hiddens_of(d);
}
inline void projection_inputs(const edgeattn_attention_dims &d, size_t in[4]) {
    in[0] = d.query_size;
    in[1] = d.key_size;
    in[2] = d.value_size;
    in[3] = value_hiddens_of(d);
}

// The sizes the weights depend on: feature sizes and heads non-zero,
// num_hiddens and value_hiddens divisible by num_heads, num_heads by num_kv_heads (batch,
// queries and keys not read).
edgeattn_status check_mha_feature_dims(const edgeattn_attention_dims &d);

// Bits of the projections a call reads (bit i: projection i).
constexpr unsigned all_projections = 15u;
constexpr unsigned key_value_projections = 1u << key_projection | 1u << value_projection;
constexpr unsigned query_output_projections = 1u << query_projection | 1u << output_projection;

// Weights as given: checks the matrices `used` names (the others may be
// NULL and are not read): sizes, each type, non-NULL data, int8 scales
// (aligned, finite and > 0), and the arithmetic (the int8 one only where
// the op `takes_integer`: view.integer gets those matrices' bits). d's
// zero fields checked.
edgeattn_status view_typed_mha_weights(const edgeattn_attention_dims &d,
                                       const edgeattn_weights &w, mha_weights_view &view,
                                       unsigned used = all_projections, bool takes_integer = false);

// One stored matrix (out, in) as given: its type, data, int8 scales
// (aligned, finite, > 0) and arithmetic (integer only where the op
// `takes_integer`, on int8 weights, and with int32 sums that cannot
// overflow); `spans` gets the matrix's and the scales'.
edgeattn_status check_stored_matrix(const edgeattn_weight_matrix &m, size_t out, size_t in,
                                    tensor_span *spans, size_t &num_spans, bool takes_integer = false);

// Weights packed once: checks that `packed` holds what edgeattn_mha_pack
// wrote for d's feature sizes and heads.
edgeattn_status view_packed_mha_weights(const edgeattn_attention_dims &d, const void *packed,
                                        size_t packed_bytes, mha_weights_view &view);

// One projection, y (rows, out) = x (rows, in) W^T + b, with the weights in
// whichever form the call has them (packed_scratch: packed_floats(in, out)
// floats, used for unpacked weights only), on at most max_threads threads;
// a matrix in the int8 arithmetic on integer_slots threads, with their
// slots (integer_linear_slot_bytes each) from packed_scratch.
void project(const kernel_table &k, const mha_weights_view &w, projection which, size_t rows,
             size_t in_features, size_t out_features, const float *x, float *y,
             float *packed_scratch, size_t max_threads, size_t integer_slots = 0);

// The caller's weights copied into `w` (the descriptor may sit in the
// workspace), with the type of each matrix `used` names read as an integer
// before anything reads it as the enum. edgeattn_mha and
// the cache calls take EDGEATTN_DTYPE_NONE for each of their matrices (rows
// given already projected): `none` gets their bits.
edgeattn_status copy_typed_weights(const edgeattn_weights *weights, unsigned used,
                                   edgeattn_weights &w, unsigned &none);

// The rules of a call's NONE projections (bits `none`): no bias beside one
// (::EDGEATTN_ERR_OPTION_NOT_SUPPORTED), and rows as wide as the
// projection's output (`in` its input features, `out` its output;
// ::EDGEATTN_ERR_SHAPE_MISMATCH).
edgeattn_status check_unprojected(const edgeattn_weights &w, unsigned none, const size_t in[4],
                                  const size_t out[4]);

}  // namespace detail
}  // namespace edgeattn

#endif
