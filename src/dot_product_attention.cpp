// C entry point of scaled dot-product attention (d2l's DotProductAttention).
#include "attention_checks.hpp"
#include "attention_options.hpp"
#include "attention_mask.hpp"
#include "attention_rows.hpp"
#include "edgeattn/detail/workspace_layout.hpp"
#include "edgeattn/attention.h"
#include "half_io.hpp"
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

// The fp32 copies of fp16 tensors: queries, keys, values, output,
// attention weights.
edgeattn_status staging_for(const edgeattn_attention_dims &d, bool half, attention_counts &c,
                            half_staging &s) {
    if (edgeattn_status st = count_attention_tensors(d, d.value_size, 1, c)) return st;
    const size_t counts[5] = {c.queries, c.keys, c.values, c.output, c.weights};
    s = make_half_staging(half, counts);
    return EDGEATTN_OK;
}

}  // namespace

edgeattn_status edgeattn::detail::sdpa_workspace_bytes(const edgeattn_attention_dims &in,
                                                       size_t max_threads, bool half, size_t &bytes) {
    edgeattn_attention_dims d;
    if (edgeattn_status st = normalize_dims(in, d)) return st;
    attention_counts counts;
    half_staging staging;
    if (edgeattn_status st = staging_for(d, half, counts, staging)) return st;
    bytes = with_staging(staging,
                         make_dot_product_layout(d.queries, d.keys, d.query_size, d.value_size, max_threads).bytes);
    return bytes ? EDGEATTN_OK : EDGEATTN_ERR_SIZE_OVERFLOW;
}

namespace {

edgeattn_status dot_product_attention(const edgeattn_attention_dims *dims, const void *queries_in,
                                      const void *keys_in, const void *values_in,
                                      const edgeattn_valid_lens *valid_lens,
                                      const edgeattn_attention_mask *mask_in,
                                      const edgeattn_attention_options *options, void *workspace,
                                      size_t workspace_bytes, void *output_out,
                                      void *weights_out, bool half) {
    if (!dims || !queries_in || !keys_in || !values_in || !workspace || !output_out)
        return EDGEATTN_ERR_NULL_POINTER;
    edgeattn_attention_dims d;
    if (edgeattn_status st = normalize_dims(*dims, d)) return st;
    attention_counts counts;
    half_staging staging;
    if (edgeattn_status st = staging_for(d, half, counts, staging)) return st;
    const dot_product_layout one = make_dot_product_layout(d.queries, d.keys, d.query_size, d.value_size, 1);
    attention_mask_view mask;
    tensor_span params[2];
    size_t num_params = 0;
    if (edgeattn_status st = check_attention_mask(mask_in, d.batch, d.queries, 1, d.keys, mask,
                                                  params, num_params))
        return st;
    if (edgeattn_status st = read_score_options(options, takes_products, mask)) return st;
    if (edgeattn_status st = check_long_rows(d.keys, weights_out, mask)) return st;
    if (edgeattn_status st = check_attention_call(d, counts, params, num_params, queries_in, keys_in,
                                                  values_in, valid_lens, workspace, workspace_bytes,
                                                  with_staging(staging, one.bytes), output_out, weights_out,
                                                  mask.lens, io_element_bytes(half)))
        return st;

    // fp16 tensors: widened into their fp32 copies before the op's own
    // workspace, which starts after them.
    float *copies = static_cast<float *>(workspace);
    float *ws = copies + staging.floats;
    workspace_bytes -= staging.floats * sizeof(float);
    const float *queries = static_cast<const float *>(queries_in);
    const float *keys = static_cast<const float *>(keys_in);
    const float *values = static_cast<const float *>(values_in);
    float *output = static_cast<float *>(output_out);
    float *attention_weights = static_cast<float *>(weights_out);
    if (with_half && half) {
        widen_half(queries_in, counts.queries, copies + staging.offset[0]);
        widen_half(keys_in, counts.keys, copies + staging.offset[1]);
        widen_half(values_in, counts.values, copies + staging.offset[2]);
        queries = copies + staging.offset[0];
        keys = copies + staging.offset[1];
        values = copies + staging.offset[2];
        output = copies + staging.offset[3];
        attention_weights = weights_out ? copies + staging.offset[4] : nullptr;
    }

    const kernel_table &k = active_kernels();
    const size_t slots = scratch_slots(one.bytes, one.scratch.floats_per_slot, workspace_bytes);
    const float flops_per_row = 2.0f * d.keys * (d.query_size + d.value_size);
    parallel_row_blocks(d.batch, d.queries, slots, flops_per_row, ws,
                        one.scratch, [&](size_t b, size_t row0, size_t rows, const scratch_slot &slot) {
        const attention_slice s{queries + b * d.queries * d.query_size, d.query_size,
                                keys + b * d.keys * d.key_size, d.key_size,
                                values + b * d.keys * d.value_size, d.value_size,
                                output + b * d.queries * d.value_size, d.value_size,
                                attention_weights ? attention_weights + b * d.queries * d.keys : nullptr,
                                d.keys, d.queries, d.keys, d.query_size, d.value_size, b, 0};
        dot_product_attention_block(k, s, row0, rows, mask, slot);
    });
    if (with_half && half) {
        round_to_half(output, counts.output, output_out);
        if (weights_out) round_to_half(attention_weights, counts.weights, weights_out);
    }
    return EDGEATTN_OK;
}

}  // namespace

extern "C" edgeattn_status edgeattn_sdpa(const edgeattn_attention_dims *dims, const float *queries,
                                         const float *keys, const float *values,
                                         const edgeattn_attention_options *options,
                                         void *workspace, size_t workspace_bytes, float *output,
                                         float *attention_weights) {
    bool half = false;
    if (edgeattn_status st = read_tensor_type(options, half)) return st;
    if (edgeattn_status st = refuse_rope(options)) return st;
    return dot_product_attention(dims, queries, keys, values, valid_lens_of(options),
                                 mask_of(options), options, workspace, workspace_bytes, output,
                                 attention_weights, half);
}
