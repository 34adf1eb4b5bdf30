// C entry point of scaled dot-product attention (d2l's DotProductAttention).
#include "attention_checks.hpp"
#include "attention_options.hpp"
#include "attention_mask.hpp"
#include "attention_rows.hpp"
#include "edgeattn/detail/workspace_layout.hpp"
#include "edgeattn/attention.h"
#include "op_workspace.hpp"
#include "parallel.hpp"

using namespace edgeattn::detail;

namespace {

// Dims with key_size filled in (0 means "same as query_size"); an error
// when a dimension is zero or the key and query sizes differ.
edgeattn_status normalize_dims(const edgeattn_attention_dims &in, edgeattn_attention_dims &d) {
    d = in;
    if (d.key_size == 0) d.key_size = d.query_size;
    if (d.batch == 0 || d.queries == 0 || d.keys == 0 || d.query_size == 0 || d.value_size == 0)
        return EDGEATTN_ERR_ZERO_DIMENSION;
    if (d.key_size != d.query_size) return EDGEATTN_ERR_SHAPE_MISMATCH;
    return EDGEATTN_OK;
}

}  // namespace

edgeattn_status edgeattn::detail::sdpa_workspace_bytes(const edgeattn_attention_dims &in,
                                                       size_t max_threads, size_t &bytes) {
    edgeattn_attention_dims d;
    if (edgeattn_status st = normalize_dims(in, d)) return st;
    bytes = make_dot_product_layout(d.queries, d.keys, d.query_size, d.value_size, max_threads).bytes;
    return bytes ? EDGEATTN_OK : EDGEATTN_ERR_SIZE_OVERFLOW;
}

namespace {

edgeattn_status dot_product_attention(const edgeattn_attention_dims *dims, const float *queries,
                                      const float *keys, const float *values,
                                      const edgeattn_valid_lens *valid_lens,
                                      const edgeattn_attention_mask *mask_in,
                                      const edgeattn_attention_options *options, void *workspace,
                                      size_t workspace_bytes, float *output,
                                      float *attention_weights) {
    if (!dims || !queries || !keys || !values || !workspace || !output)
        return EDGEATTN_ERR_NULL_POINTER;
    edgeattn_attention_dims d;
    if (edgeattn_status st = normalize_dims(*dims, d)) return st;
    attention_counts counts;
    if (edgeattn_status st = count_attention_tensors(d, d.value_size, 1, counts)) return st;
    const dot_product_layout one = make_dot_product_layout(d.queries, d.keys, d.query_size, d.value_size, 1);
    attention_mask_view mask;
    tensor_span params[2];
    size_t num_params = 0;
    if (edgeattn_status st = check_attention_mask(mask_in, d.batch, d.queries, 1, d.keys, mask,
                                                  params, num_params))
        return st;
    if (edgeattn_status st = read_score_options(options, takes_products, mask)) return st;
    if (edgeattn_status st = check_attention_call(d, counts, params, num_params, queries, keys,
                                                  values, valid_lens, workspace, workspace_bytes,
                                                  one.bytes, output, attention_weights, mask.lens))
        return st;

    const kernel_table &k = active_kernels();
    const size_t slots = scratch_slots(one.bytes, one.scratch.floats_per_slot, workspace_bytes);
    const float flops_per_row = 2.0f * d.keys * (d.query_size + d.value_size);
    parallel_row_blocks(d.batch, d.queries, slots, flops_per_row, static_cast<float *>(workspace),
                        one.scratch, [&](size_t b, size_t row0, size_t rows, const scratch_slot &slot) {
        const attention_slice s{queries + b * d.queries * d.query_size, d.query_size,
                                keys + b * d.keys * d.key_size, d.key_size,
                                values + b * d.keys * d.value_size, d.value_size,
                                output + b * d.queries * d.value_size, d.value_size,
                                attention_weights ? attention_weights + b * d.queries * d.keys : nullptr,
                                d.keys, d.queries, d.keys, d.query_size, d.value_size, b, 0};
        dot_product_attention_block(k, s, row0, rows, mask, slot);
    });
    return EDGEATTN_OK;
}

}  // namespace

extern "C" edgeattn_status edgeattn_sdpa(const edgeattn_attention_dims *dims, const float *queries,
                                         const float *keys, const float *values,
                                         const edgeattn_attention_options *options,
                                         void *workspace, size_t workspace_bytes, float *output,
                                         float *attention_weights) {
    if (edgeattn_status st = refuse_rope(options)) return st;
    return dot_product_attention(dims, queries, keys, values, valid_lens_of(options),
                                 mask_of(options), options, workspace, workspace_bytes, output,
                                 attention_weights);
}
