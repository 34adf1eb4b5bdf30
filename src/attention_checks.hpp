// Checks every attention entry point makes, in one place: shapes, sizes,
// pointers, alignment, valid lengths, workspace size and overlaps.
#ifndef EDGEATTN_ATTENTION_CHECKS_HPP
#define EDGEATTN_ATTENTION_CHECKS_HPP

#include "validate.hpp"

namespace edgeattn {
namespace detail {

// Element counts of the tensors of an attention call.
struct attention_counts {
    size_t queries = 0;  // (B, Q, query_size)
    size_t keys = 0;     // (B, K, key_size)
    size_t values = 0;   // (B, K, value_size)
    size_t output = 0;   // (B, Q, output_features)
    size_t weights = 0;  // (B, heads, Q, K)
};

// Size checks of the activations; dims must have no zero field the op uses.
inline edgeattn_status count_attention_tensors(const edgeattn_attention_dims &d,
                                               size_t output_features, size_t heads,
                                               attention_counts &c) {
    if (edgeattn_status st = tensor_count(c.queries, d.batch, d.queries, d.query_size)) return st;
    if (edgeattn_status st = tensor_count(c.keys, d.batch, d.keys, d.key_size)) return st;
    if (edgeattn_status st = tensor_count(c.values, d.batch, d.keys, d.value_size)) return st;
    if (edgeattn_status st = tensor_count(c.output, d.batch, d.queries, output_features)) return st;
    return tensor_count(c.weights, d.batch, heads, d.queries, d.keys);
}

// The rest, once the op has counted its tensors and parameters:
// `inputs` are every array the op reads (activations, parameters).
// io_bytes: bytes of an element of the activations, output and weights
// (4 fp32, 2 binary16 tensors); the workspace is always floats.
inline edgeattn_status check_attention_call(const edgeattn_attention_dims &d,
                                            const attention_counts &c,
                                            const tensor_span *params, size_t num_params,
                                            const void *queries, const void *keys,
                                            const void *values,
                                            const edgeattn_valid_lens *valid_lens,
                                            const void *workspace, size_t workspace_bytes,
                                            size_t required_workspace_bytes, const void *output,
                                            const void *weights, valid_lens_view &lens,
                                            size_t io_bytes = sizeof(float)) {
    if (required_workspace_bytes == 0) return EDGEATTN_ERR_SIZE_OVERFLOW;
    const void *tensors[] = {queries, keys, values, output, weights};
    for (const void *p : tensors)
        if (p && reinterpret_cast<uintptr_t>(p) % io_bytes != 0) return EDGEATTN_ERR_MISALIGNED;
    if (!is_float_aligned(workspace)) return EDGEATTN_ERR_MISALIGNED;
    for (size_t i = 0; i < num_params; ++i)
        if (!is_element_aligned(params[i])) return EDGEATTN_ERR_MISALIGNED;
    if (edgeattn_status st = check_valid_lens(valid_lens, d.batch, d.queries, lens)) return st;
    if (workspace_bytes < required_workspace_bytes) return EDGEATTN_ERR_WORKSPACE_TOO_SMALL;

    // Outputs and workspace must not touch any input or each other. Spans of
    // inputs: activations, valid lengths (in floats, rounded up), parameters.
    const tensor_span inputs[] = {{queries, c.queries, io_bytes}, {keys, c.keys, io_bytes},
                                  {values, c.values, io_bytes},
                                  {lens.lens, (valid_lens_bytes(lens, d.batch, d.queries) + 3) / 4}};
    const tensor_span outputs[] = {{output, c.output, io_bytes},
                                   {weights, weights ? c.weights : 0, io_bytes},
                                   {workspace, workspace_bytes / sizeof(float)}};
    return check_disjoint(outputs, 3, inputs, 4, params, num_params);
}

}  // namespace detail
}  // namespace edgeattn

#endif
