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
    bool prepacked = false;
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

// The sizes the weights depend on: feature sizes and heads non-zero,
// num_hiddens divisible by num_heads, num_heads by num_kv_heads (batch,
// queries and keys not read).
edgeattn_status check_mha_feature_dims(const edgeattn_attention_dims &d);

// Bits of the projections a call reads (bit i: projection i).
constexpr unsigned all_projections = 15u;
constexpr unsigned key_value_projections = 1u << key_projection | 1u << value_projection;
constexpr unsigned query_output_projections = 1u << query_projection | 1u << output_projection;

// Weights as given: checks the matrices `used` names (the others may be
// NULL and are not read): sizes, each type, non-NULL data, and int8 scales
// (aligned, finite and > 0). d's zero fields checked.
edgeattn_status view_typed_mha_weights(const edgeattn_attention_dims &d,
                                       const edgeattn_weights &w, mha_weights_view &view,
                                       unsigned used = all_projections);

// One stored matrix (out, in) as given: its type, data, and int8 scales
// (aligned, finite, > 0); `spans` gets the matrix's and the scales'.
edgeattn_status check_stored_matrix(const edgeattn_weight_matrix &m, size_t out, size_t in,
                                    tensor_span *spans, size_t &num_spans);

// Weights packed once: checks that `packed` holds what edgeattn_mha_pack
// wrote for d's feature sizes and heads.
edgeattn_status view_packed_mha_weights(const edgeattn_attention_dims &d, const void *packed,
                                        size_t packed_bytes, mha_weights_view &view);

// One projection, y (rows, out) = x (rows, in) W^T + b, with the weights in
// whichever form the call has them (packed_scratch: packed_floats(in, out)
// floats, used for unpacked weights only).
void project(const kernel_table &k, const mha_weights_view &w, projection which, size_t rows,
             size_t in_features, size_t out_features, const float *x, float *y,
             float *packed_scratch);

}  // namespace detail
}  // namespace edgeattn

#endif
