// C entry points of the projection y = x W^T + b (torch.nn.Linear), with W
// as given or packed once (edgeattn_linear_pack_weights).
#include <string.h>

#include "edgeattn/detail/packed_weights_layout.hpp"
#include "edgeattn/edgeattn.h"
#include "linear.hpp"
#include "packed_header.hpp"
#include "validate.hpp"

using namespace edgeattn::detail;

namespace {

constexpr uint32_t linear_magic = 0x4E494C45u;  // "ELIN" little-endian
constexpr uint32_t linear_version = 1;

packed_header linear_header(const edgeattn_linear_dims &d) {
    const size_t sizes[2] = {d.in_features, d.out_features};
    return make_packed_header(linear_magic, linear_version, sizes, 2);
}

// Counts of x (rows, in), W (out, in) and y (rows, out); zero sizes refused.
struct linear_counts {
    size_t x = 0, W = 0, y = 0;
};

edgeattn_status count_linear(const edgeattn_linear_dims &d, bool rows_read, linear_counts &c) {
    if ((rows_read && d.rows == 0) || d.in_features == 0 || d.out_features == 0)
        return EDGEATTN_ERR_ZERO_DIMENSION;
    if (edgeattn_status st = tensor_count(c.W, d.out_features, d.in_features)) return st;
    if (!rows_read) return EDGEATTN_OK;
    if (edgeattn_status st = tensor_count(c.x, d.rows, d.in_features)) return st;
    return tensor_count(c.y, d.rows, d.out_features);
}

// The checks both forms share once the weights' spans are known: alignment
// of x and y, and y disjoint from x, the weights and the workspace.
edgeattn_status check_linear_call(const linear_counts &c, const float *x, const tensor_span *params,
                                  size_t num_params, const void *workspace, size_t workspace_bytes,
                                  float *y) {
    if (!is_float_aligned(x) || !is_float_aligned(y)) return EDGEATTN_ERR_MISALIGNED;
    tensor_span inputs[3] = {{x, c.x}};
    size_t num_inputs = 1;
    for (size_t i = 0; i < num_params; ++i) {
        if (!is_float_aligned(params[i].data)) return EDGEATTN_ERR_MISALIGNED;
        inputs[num_inputs++] = params[i];
    }
    const tensor_span outputs[2] = {{y, c.y}, {workspace, workspace_bytes / sizeof(float)}};
    return check_disjoint(outputs, 2, inputs, num_inputs);
}

}  // namespace

extern "C" size_t edgeattn_linear_workspace_size(const edgeattn_linear_dims *dims,
                                                 size_t max_threads) {
    (void)max_threads;  // threads split the columns of one packed W^T: no per-thread scratch
    linear_counts c;
    size_t floats = 0, bytes = 0;
    if (!dims || count_linear(*dims, true, c) != EDGEATTN_OK ||
        !linear_scratch_floats(dims->rows, dims->in_features, dims->out_features, floats) ||
        mul_overflows(floats < floats_per_cache_line ? floats_per_cache_line : floats,
                      sizeof(float), bytes))
        return 0;
    return bytes;
}

extern "C" edgeattn_status edgeattn_linear(const edgeattn_linear_dims *dims, const float *x,
                                           const float *W, const float *b, void *workspace,
                                           size_t workspace_bytes, float *y) {
    if (!dims || !x || !W || !workspace || !y) return EDGEATTN_ERR_NULL_POINTER;
    const edgeattn_linear_dims d = *dims;
    linear_counts c;
    if (edgeattn_status st = count_linear(d, true, c)) return st;
    const size_t need = edgeattn_linear_workspace_size(&d, 1);
    if (need == 0) return EDGEATTN_ERR_SIZE_OVERFLOW;
    if (!is_float_aligned(workspace)) return EDGEATTN_ERR_MISALIGNED;
    if (workspace_bytes < need) return EDGEATTN_ERR_WORKSPACE_TOO_SMALL;
    const tensor_span params[2] = {{W, c.W}, {b, b ? d.out_features : 0}};
    if (edgeattn_status st = check_linear_call(c, x, params, b ? 2 : 1, workspace, workspace_bytes, y))
        return st;
    linear(active_kernels(), d.rows, d.in_features, d.out_features, x, W, b, y,
           static_cast<float *>(workspace));
    return EDGEATTN_OK;
}

extern "C" size_t edgeattn_linear_packed_weights_size(const edgeattn_linear_dims *dims) {
    linear_counts c;
    if (!dims || count_linear(*dims, false, c) != EDGEATTN_OK) return 0;
    return make_linear_packed_weights_layout(dims->in_features, dims->out_features).bytes;
}

extern "C" edgeattn_status edgeattn_linear_pack_weights(const edgeattn_linear_dims *dims,
                                                        const float *W, const float *b,
                                                        void *packed, size_t packed_bytes) {
    if (!dims || !W || !packed) return EDGEATTN_ERR_NULL_POINTER;
    const edgeattn_linear_dims d = *dims;
    linear_counts c;
    if (edgeattn_status st = count_linear(d, false, c)) return st;
    const linear_packed_weights_layout l = make_linear_packed_weights_layout(d.in_features, d.out_features);
    if (l.bytes == 0) return EDGEATTN_ERR_SIZE_OVERFLOW;
    if (!is_float_aligned(packed) || !is_float_aligned(W) || (b && !is_float_aligned(b)))
        return EDGEATTN_ERR_MISALIGNED;
    if (packed_bytes < l.bytes) return EDGEATTN_ERR_WORKSPACE_TOO_SMALL;
    const tensor_span out = {packed, l.bytes / sizeof(float)};
    const tensor_span in[2] = {{W, c.W}, {b, b ? d.out_features : 0}};
    if (edgeattn_status st = check_disjoint(&out, 1, in, 2)) return st;

    float *floats = static_cast<float *>(packed);
    pack_weights_transposed(d.in_features, d.out_features, W, floats + l.weights);
    packed_header header = linear_header(d);
    if (b) {
        memcpy(floats + l.bias, b, d.out_features * sizeof(float));
        header.biases = 1;
    } else {
        memset(floats + l.bias, 0, d.out_features * sizeof(float));
    }
    write_packed_header(packed, header);
    return EDGEATTN_OK;
}

extern "C" edgeattn_status edgeattn_linear_packed(const edgeattn_linear_dims *dims, const float *x,
                                                  const void *packed, size_t packed_bytes, float *y) {
    if (!dims || !x || !packed || !y) return EDGEATTN_ERR_NULL_POINTER;
    const edgeattn_linear_dims d = *dims;
    linear_counts c;
    if (edgeattn_status st = count_linear(d, true, c)) return st;
    const linear_packed_weights_layout l = make_linear_packed_weights_layout(d.in_features, d.out_features);
    if (l.bytes == 0) return EDGEATTN_ERR_SIZE_OVERFLOW;
    if (!is_float_aligned(packed)) return EDGEATTN_ERR_MISALIGNED;
    uint32_t biases = 0;
    if (packed_bytes < l.bytes || !packed_header_matches(packed, linear_header(d), 1, biases))
        return EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH;
    const tensor_span params[1] = {{packed, l.bytes / sizeof(float)}};
    if (edgeattn_status st = check_linear_call(c, x, params, 1, nullptr, 0, y)) return st;
    const float *floats = static_cast<const float *>(packed);
    linear_prepacked(active_kernels(), d.rows, d.in_features, d.out_features, x,
                     floats + l.weights, biases ? floats + l.bias : nullptr, y);
    return EDGEATTN_OK;
}
