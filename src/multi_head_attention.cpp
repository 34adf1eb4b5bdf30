// C entry points of multi-head attention (d2l's MultiHeadAttention; self-
// attention is its case queries = keys = values).
#include "attention_checks.hpp"
#include "attention_options.hpp"
#include "attention_rows.hpp"
#include "attention_mask.hpp"
#include "edgeattn/detail/workspace_layout.hpp"
#include "edgeattn/attention.h"
#include "op_workspace.hpp"
#include "linear.hpp"
#include "mha_weights.hpp"
#include "parallel.hpp"

using namespace edgeattn::detail;

namespace {

edgeattn_status check_dims(const edgeattn_attention_dims &d) {
    if (d.batch == 0 || d.queries == 0 || d.keys == 0) return EDGEATTN_ERR_ZERO_DIMENSION;
    return check_mha_feature_dims(d);
}

multi_head_layout layout_for(const edgeattn_attention_dims &d, size_t threads) {
    return make_multi_head_layout(d.batch, d.queries, d.keys, d.query_size, d.key_size,
                                  d.value_size, d.num_hiddens, d.num_heads, threads,
                                  kv_heads_of(d));
}

// d is the caller's dims read into a local by the entry point (the
// projections below may overwrite a struct kept in the workspace or an
// output); the mask, valid lengths and weights are read into views before
// anything is written.
edgeattn_status multi_head_attention(const edgeattn_attention_dims &d, const float *queries,
                                     const float *keys, const float *values,
                                     const edgeattn_valid_lens *valid_lens,
                                     const edgeattn_attention_mask *mask_in,
                                     const edgeattn_attention_options *options, const mha_weights_view &w, void *workspace,
                                     size_t workspace_bytes, float *output,
                                     float *attention_weights) {
    const size_t h = d.num_hiddens, heads = d.num_heads, head_size = h / heads;
    const size_t kv_h = kv_hiddens_of(d), group = heads / kv_heads_of(d);
    attention_counts counts;
    if (edgeattn_status st = count_attention_tensors(d, h, heads, counts)) return st;
    const multi_head_layout one = layout_for(d, 1);
    attention_mask_view mask;
    tensor_span params[14];  // the mask's 2, the weights' 12
    size_t num_params = 0;
    if (edgeattn_status st = check_attention_mask(mask_in, d.batch, d.queries, heads, d.keys, mask,
                                                  params, num_params))
        return st;
    if (edgeattn_status st = read_score_options(options, takes_products | takes_alibi, mask)) return st;
    for (size_t i = 0; i < w.num_spans; ++i) params[num_params++] = w.spans[i];
    if (edgeattn_status st = check_attention_call(d, counts, params, num_params, queries, keys,
                                                  values, valid_lens, workspace, workspace_bytes,
                                                  one.bytes, output, attention_weights, mask.lens))
        return st;

    const kernel_table &k = active_kernels();
    float *ws = static_cast<float *>(workspace);
    float *Q = ws + one.projected_queries;        // (B, Q, h): head j is columns j*h/H ...
    float *K = ws + one.projected_keys;           // (B, K, h_kv): head g is columns g*h/H ...
    float *V = ws + one.projected_values;         // (B, K, h_kv)
    float *heads_out = ws + one.concatenated_heads;  // (B, Q, h), d2l's transpose_output
    float *packed = ws + one.packed_weights;  // each projection's W^T in turn (unpacked weights)
    project(k, w, query_projection, d.batch * d.queries, d.query_size, h, queries, Q, packed);
    project(k, w, key_projection, d.batch * d.keys, d.key_size, kv_h, keys, K, packed);
    project(k, w, value_projection, d.batch * d.keys, d.value_size, kv_h, values, V, packed);

    // Heads read strided columns of the projections in place: no copy for
    // d2l's transpose_qkv. Query head j reads key/value head j / group.
    const size_t slots = scratch_slots(one.bytes, one.scratch.floats_per_slot, workspace_bytes);
    const float flops_per_row = 4.0f * d.keys * head_size;
    parallel_row_blocks(d.batch * heads, d.queries, slots, flops_per_row, ws, one.scratch,
                        [&](size_t slice, size_t row0, size_t rows, const scratch_slot &slot) {
        const size_t b = slice / heads, head = slice % heads, column = head * head_size;
        const size_t kv_column = head / group * head_size;
        const attention_slice s{
            Q + b * d.queries * h + column, h, K + b * d.keys * kv_h + kv_column, kv_h,
            V + b * d.keys * kv_h + kv_column, kv_h, heads_out + b * d.queries * h + column, h,
            attention_weights ? attention_weights + slice * d.queries * d.keys : nullptr, d.keys,
            d.queries, d.keys, head_size, head_size, b, head};
        dot_product_attention_block(k, s, row0, rows, mask, slot);
    });
    project(k, w, output_projection, d.batch * d.queries, h, h, heads_out, output, packed);
    return EDGEATTN_OK;
}

}  // namespace

edgeattn_status edgeattn::detail::mha_workspace_bytes(const edgeattn_attention_dims &d,
                                                      size_t max_threads, size_t &bytes) {
    if (edgeattn_status st = check_dims(d)) return st;
    bytes = layout_for(d, max_threads).bytes;
    return bytes ? EDGEATTN_OK : EDGEATTN_ERR_SIZE_OVERFLOW;
}

extern "C" edgeattn_status edgeattn_mha(const edgeattn_attention_dims *dims, const float *queries,
                                        const float *keys, const float *values,
                                        const edgeattn_weights *weights,
                                        const edgeattn_attention_options *options, void *workspace,
                                        size_t workspace_bytes, float *output,
                                        float *attention_weights) {
    if (!dims || !queries || !keys || !values || !weights || !workspace || !output)
        return EDGEATTN_ERR_NULL_POINTER;
    if (edgeattn_status st = refuse_rope(options)) return st;
    const edgeattn_attention_dims d = *dims;
    if (edgeattn_status st = check_dims(d)) return st;
    mha_weights_view w;  // the weights' descriptor read into the view
    if (edgeattn_status st = view_typed_mha_weights(d, *weights, w)) return st;
    return multi_head_attention(d, queries, keys, values, valid_lens_of(options), mask_of(options), options, w,
                                workspace, workspace_bytes, output, attention_weights);
}

extern "C" edgeattn_status edgeattn_mha_packed(const edgeattn_attention_dims *dims,
                                               const float *queries, const float *keys,
                                               const float *values, const void *packed,
                                               size_t packed_bytes,
                                               const edgeattn_attention_options *options,
                                               void *workspace, size_t workspace_bytes,
                                               float *output, float *attention_weights) {
    if (!dims || !queries || !keys || !values || !packed || !workspace || !output)
        return EDGEATTN_ERR_NULL_POINTER;
    if (edgeattn_status st = refuse_rope(options)) return st;
    const edgeattn_attention_dims d = *dims;
    if (edgeattn_status st = check_dims(d)) return st;
    mha_weights_view w;
    if (edgeattn_status st = view_packed_mha_weights(d, packed, packed_bytes, w)) return st;
    return multi_head_attention(d, queries, keys, values, valid_lens_of(options), mask_of(options), options, w,
                                workspace, workspace_bytes, output, attention_weights);
}
