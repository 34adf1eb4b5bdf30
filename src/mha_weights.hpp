// The weights of one multi-head attention call, in either form the C API
// takes: as the caller holds them (torch.nn.Linear layout; the projections
// pack W^T per call) or packed once by edgeattn_mha_pack_weights.
#ifndef EDGEATTN_MHA_WEIGHTS_HPP
#define EDGEATTN_MHA_WEIGHTS_HPP

#include "edgeattn/edgeattn.h"
#include "validate.hpp"

namespace edgeattn {
namespace detail {

enum projection { query_projection, key_projection, value_projection, output_projection };

struct mha_weights_view {
    const float *W[4] = {};  // (h, in) as given, or W^T in max_panel_width panels
    const float *b[4] = {};  // (h) or nullptr
    bool prepacked = false;
    // What the call reads besides its activations, for the overlap checks:
    // the matrices and biases given, or the one packed buffer.
    tensor_span spans[8] = {};
    size_t num_spans = 0;
};

// The sizes the weights depend on: feature sizes and heads non-zero,
// num_hiddens divisible by num_heads (batch, queries and keys not read).
edgeattn_status check_mha_feature_dims(const edgeattn_attention_dims &d);

// Weights as given; checks the matrices' sizes (d's zero fields checked).
edgeattn_status view_mha_weights(const edgeattn_attention_dims &d, const edgeattn_mha_weights &w,
                                 mha_weights_view &view);

// Weights packed once: checks that `packed` holds what edgeattn_mha_pack_weights
// wrote for d's feature sizes and heads.
edgeattn_status view_packed_mha_weights(const edgeattn_attention_dims &d, const void *packed,
                                        size_t packed_bytes, mha_weights_view &view);

}  // namespace detail
}  // namespace edgeattn

#endif
