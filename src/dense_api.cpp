// C entry points of the dense layer y = x W^T + b (torch.nn.Linear), with W
// as given or packed once (edgeattn_dense_pack).
#include <stdint.h>
#include <string.h>

#include "edgeattn/detail/packed_weights_layout.hpp"
#include "edgeattn/dense.h"
#include "op_workspace.hpp"
#include "integer_linear.hpp"
#include "linear.hpp"
#include "mha_weights.hpp"
#include "packed_header.hpp"
#include "validate.hpp"

using namespace edgeattn::detail;

namespace {

constexpr uint32_t linear_magic = 0x4E494C45u;  // "ELIN" little-endian
constexpr uint32_t linear_version = 1;

packed_header linear_header(const edgeattn_dense_dims &d, edgeattn_dtype type) {
    const size_t sizes[2] = {d.in_features, d.out_features};
    packed_header h = make_packed_header(linear_magic, linear_version, sizes, 2);
    h.weight_types = weight_type_bits(&type, 1);
    return h;
}

// Counts of x (rows, in), W (out, in) and y (rows, out); zero sizes refused.
struct linear_counts {
    size_t x = 0, W = 0, y = 0;
};

edgeattn_status count_linear(const edgeattn_dense_dims &d, bool rows_read, linear_counts &c) {
    if ((rows_read && d.rows == 0) || d.in_features == 0 || d.out_features == 0)
        return EDGEATTN_ERR_ZERO_DIMENSION;
    if (edgeattn_status st = tensor_count(c.W, d.out_features, d.in_features)) return st;
    if (!rows_read) return EDGEATTN_OK;
    if (edgeattn_status st = tensor_count(c.x, d.rows, d.in_features)) return st;
    return tensor_count(c.y, d.rows, d.out_features);
}

// The dims and W read into locals (the caller may keep either in y, the
// workspace or the packed buffer, which the call overwrites), counted
// (rows only when the call reads x) and W checked; `spans` gets W's, its
// int8 scales' and b's.
edgeattn_status read_dense(const edgeattn_dense_dims *dims, const edgeattn_weight_matrix *W,
                           const float *b, bool rows_read, edgeattn_dense_dims &d,
                           edgeattn_weight_matrix &Wm, linear_counts &c, tensor_span spans[3],
                           size_t &num_spans) {
    d = *dims;
    read_argument(W, Wm);
    if (edgeattn_status st = count_linear(d, rows_read, c)) return st;
    // The int8 arithmetic: edgeattn_dense only (rows_read), not its packing.
    if (edgeattn_status st =
            check_stored_matrix(Wm, d.out_features, d.in_features, spans, num_spans, rows_read))
        return st;
    if (b) spans[num_spans++] = {b, d.out_features};
    return EDGEATTN_OK;
}

// The checks both forms share once the weights' spans are known: alignment
// of x and y, and y disjoint from x, the weights and the workspace.
edgeattn_status check_linear_call(const linear_counts &c, const float *x, const tensor_span *params,
                                  size_t num_params, const void *workspace, size_t workspace_bytes,
                                  float *y) {
    if (!is_float_aligned(x) || !is_float_aligned(y)) return EDGEATTN_ERR_MISALIGNED;
    tensor_span inputs[4] = {{x, c.x}};  // x, W, int8 scales, b
    size_t num_inputs = 1;
    for (size_t i = 0; i < num_params; ++i) {
        if (!is_element_aligned(params[i])) return EDGEATTN_ERR_MISALIGNED;
        inputs[num_inputs++] = params[i];
    }
    const tensor_span outputs[2] = {{y, c.y}, {workspace, workspace_bytes / sizeof(float)}};
    return check_disjoint(outputs, 2, inputs, num_inputs);
}

}  // namespace

edgeattn_status edgeattn::detail::dense_workspace_bytes(const edgeattn_dense_dims &d,
                                                        size_t max_threads, size_t &bytes,
                                                        bool integer) {
    linear_counts c;
    size_t floats = 0, one = 0;
    if (edgeattn_status st = count_linear(d, true, c)) return st;
    if (with_int8_arithmetic && integer) {  // a slot of quantised rows and their sums per thread
        if (!integer_linear_slot_bytes(d.rows, d.in_features, d.out_features, one) ||
            mul_overflows(one, max_threads > 1 ? max_threads : 1, bytes))
            return EDGEATTN_ERR_SIZE_OVERFLOW;
        return EDGEATTN_OK;
    }
    // Threads split the columns of one packed W^T: a cache line each past
    // the first says how many the call may use.
    if (!linear_scratch_floats(d.rows, d.in_features, d.out_features, floats) ||
        mul_overflows(floats < floats_per_cache_line ? floats_per_cache_line : floats, sizeof(float), one) ||
        !add_thread_lines(one, max_threads, bytes))
        return EDGEATTN_ERR_SIZE_OVERFLOW;
    return EDGEATTN_OK;
}

extern "C" edgeattn_status edgeattn_dense(const edgeattn_dense_dims *dims, const float *x,
                                          const edgeattn_weight_matrix *W, const float *b,
                                          void *workspace, size_t workspace_bytes, float *y) {
    if (!dims || !x || !W || !workspace || !y) return EDGEATTN_ERR_NULL_POINTER;
    edgeattn_dense_dims d;
    edgeattn_weight_matrix Wm;
    linear_counts c;
    tensor_span params[3];
    size_t num_params = 0;
    if (edgeattn_status st = read_dense(dims, W, b, true, d, Wm, c, params, num_params)) return st;
    const bool integer = with_int8_arithmetic && Wm.arithmetic == EDGEATTN_ARITHMETIC_INT8;
    size_t need = 0;
    if (edgeattn_status st = dense_workspace_bytes(d, 1, need, integer)) return st;
    if (!is_float_aligned(workspace)) return EDGEATTN_ERR_MISALIGNED;
    if (workspace_bytes < need) return EDGEATTN_ERR_WORKSPACE_TOO_SMALL;
    if (edgeattn_status st = check_linear_call(c, x, params, num_params, workspace, workspace_bytes, y))
        return st;
    if (integer) {
        integer_linear(active_kernels(), d.rows, d.in_features, d.out_features, x, stored_matrix_of(Wm), b,
                       y, workspace, workspace_bytes / need);
        return EDGEATTN_OK;
    }
    linear(active_kernels(), d.rows, d.in_features, d.out_features, x, stored_matrix_of(Wm), b, y,
           static_cast<float *>(workspace), scratch_slots(need, floats_per_cache_line, workspace_bytes));
    return EDGEATTN_OK;
}

extern "C" size_t edgeattn_dense_packed_size(const edgeattn_dense_dims *dims,
                                             const edgeattn_weight_matrix *W) {
    linear_counts c;
    if (!dims || !W || count_linear(*dims, false, c) != EDGEATTN_OK) return 0;
    // The type as an int first: a C caller may store any int there.
    const int type = enum_as_int(W->type);
    if (stored_type_status(type) != EDGEATTN_OK || enum_as_int(W->arithmetic) != EDGEATTN_ARITHMETIC_FLOAT)
        return 0;
    return make_linear_packed_weights_layout(dims->in_features, dims->out_features,
                                             element_bytes(static_cast<edgeattn_dtype>(type)))
        .bytes;
}

extern "C" edgeattn_status edgeattn_dense_pack(const edgeattn_dense_dims *dims,
                                               const edgeattn_weight_matrix *W, const float *b,
                                               void *packed, size_t packed_bytes) {
    if (!dims || !W || !packed) return EDGEATTN_ERR_NULL_POINTER;
    edgeattn_dense_dims d;
    edgeattn_weight_matrix Wm;
    linear_counts c;
    tensor_span in[3];
    size_t num_in = 0;
    if (edgeattn_status st = read_dense(dims, W, b, false, d, Wm, c, in, num_in)) return st;
    const linear_packed_weights_layout l =
        make_linear_packed_weights_layout(d.in_features, d.out_features, element_bytes(Wm.type));
    if (l.bytes == 0) return EDGEATTN_ERR_SIZE_OVERFLOW;
    if (!is_float_aligned(packed)) return EDGEATTN_ERR_MISALIGNED;
    for (size_t i = 0; i < num_in; ++i)
        if (!is_element_aligned(in[i])) return EDGEATTN_ERR_MISALIGNED;
    if (packed_bytes < l.bytes) return EDGEATTN_ERR_WORKSPACE_TOO_SMALL;
    const tensor_span out = {packed, l.bytes / sizeof(float)};
    if (edgeattn_status st = check_disjoint(&out, 1, in, num_in)) return st;

    memset(packed, 0, l.bytes);  // padding included: the same bytes every time
    float *floats = static_cast<float *>(packed);
    pack_weights_transposed(d.in_features, d.out_features, stored_matrix_of(Wm), floats + l.weights);
    if (l.scales) memcpy(floats + l.scales, Wm.scales, d.out_features * sizeof(float));
    packed_header header = linear_header(d, Wm.type);
    if (b) {
        memcpy(floats + l.bias, b, d.out_features * sizeof(float));
        header.biases = 1;
    }
    write_packed_header(packed, header);
    return EDGEATTN_OK;
}

extern "C" edgeattn_status edgeattn_dense_packed(const edgeattn_dense_dims *dims, const float *x,
                                                  const void *packed, size_t packed_bytes, float *y) {
    if (!dims || !x || !packed || !y) return EDGEATTN_ERR_NULL_POINTER;
    const edgeattn_dense_dims d = *dims;
    linear_counts c;
    if (edgeattn_status st = count_linear(d, true, c)) return st;
    if (!is_float_aligned(packed)) return EDGEATTN_ERR_MISALIGNED;
    edgeattn_dtype type;
    if (packed_bytes < packed_weights_header_floats * sizeof(float)) return EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH;
    if (edgeattn_status st = packed_weight_types(packed, 1, &type)) return st;
    const linear_packed_weights_layout l =
        make_linear_packed_weights_layout(d.in_features, d.out_features, element_bytes(type));
    if (l.bytes == 0) return EDGEATTN_ERR_SIZE_OVERFLOW;
    uint32_t biases = 0;
    if (packed_bytes < l.bytes || !packed_header_matches(packed, linear_header(d, type), 1, biases))
        return EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH;
    const tensor_span params[1] = {{packed, l.bytes / sizeof(float)}};
    if (edgeattn_status st = check_linear_call(c, x, params, 1, nullptr, 0, y)) return st;
    const float *floats = static_cast<const float *>(packed);
    const stored_matrix Wm = {type, floats + l.weights, l.scales ? floats + l.scales : nullptr};
    // No workspace: as many threads as OpenMP gives.
    linear_prepacked(active_kernels(), d.rows, d.in_features, d.out_features, x, Wm,
                     biases ? floats + l.bias : nullptr, y, SIZE_MAX);
    return EDGEATTN_OK;
}
