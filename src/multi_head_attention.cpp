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
#include "half_io.hpp"
#include "integer_linear.hpp"
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
                                  kv_heads_of(d), value_hiddens_of(d));
}

// The int8 arithmetic's scratch: a slot per thread (integer_linear.hpp)
// as large as the largest of the projections `integer` names (bit i:
// projection i) needs, from where the packed W^T starts (the projections
// run before the heads, whose scratch follows it). 0 slot bytes: none in
// the int8 arithmetic. false when a size overflows.
bool integer_slot_bytes(const edgeattn_attention_dims &d, unsigned integer, size_t &slot) {
    size_t in[4], out[4], rows[4], q_rows = 0, kv_rows = 0;
    projection_inputs(d, in);
    projection_outputs(d, out);
    if (mul_overflows(d.batch, d.queries, q_rows) || mul_overflows(d.batch, d.keys, kv_rows)) return false;
    rows[query_projection] = rows[output_projection] = q_rows;
    rows[key_projection] = rows[value_projection] = kv_rows;
    slot = 0;
    for (size_t i = 0; i < 4; ++i) {
        size_t bytes = 0;
        if (!(integer >> i & 1u)) continue;
        if (!integer_linear_slot_bytes(rows[i], in[i], out[i], bytes)) return false;
        if (bytes > slot) slot = bytes;
    }
    return true;
}

// The workspace of `threads` threads laid out as l (layout_for(d, threads)):
// l's, or more where the int8 arithmetic's slots need it (`slot` gets one
// slot's bytes, 0 without integer projections). 0 when a size overflows.
size_t workspace_for(const edgeattn_attention_dims &d, const multi_head_layout &l, size_t threads,
                     unsigned integer, size_t &slot) {
    size_t slots = 0, bytes = 0;
    slot = 0;
    if (!with_int8_arithmetic || !integer) return l.bytes;
    if (l.bytes == 0 || !integer_slot_bytes(d, integer, slot) || mul_overflows(slot, threads > 1 ? threads : 1, slots) ||
        add_overflows(l.packed_weights * sizeof(float), slots, bytes))
        return 0;
    return bytes > l.bytes ? bytes : l.bytes;
}

// The fp32 copies of fp16 tensors: queries, keys, values, the output (as
// wide as the wider of h and hv: the workspace query does not know
// whether W_o is given) and the attention weights (B, H, Q, K).
edgeattn_status staging_for(const edgeattn_attention_dims &d, bool half, half_staging &s) {
    const size_t h = d.num_hiddens, vh = value_hiddens_of(d);
    attention_counts c;
    if (edgeattn_status st = count_attention_tensors(d, h > vh ? h : vh, d.num_heads, c)) return st;
    const size_t counts[5] = {c.queries, c.keys, c.values, c.output, c.weights};
    s = make_half_staging(half, counts);
    return EDGEATTN_OK;
}

// The call's activations as the caller passed them: fp32, or binary16 bits
// (half).
struct attention_io {
    const void *queries, *keys, *values;
    void *output, *weights;
    bool half;
};

// d is the caller's dims read into a local by the entry point (the
// projections below may overwrite a struct kept in the workspace or an
// output); the mask, valid lengths and weights are read into views before
// anything is written. `none`: the projections given as
// EDGEATTN_DTYPE_NONE (rows as given; W_o: the output is the heads).
edgeattn_status multi_head_attention(const edgeattn_attention_dims &d, const attention_io &io,
                                     const edgeattn_valid_lens *valid_lens,
                                     const edgeattn_attention_mask *mask_in,
                                     const edgeattn_attention_options *options,
                                     const mha_weights_view &w, unsigned none, void *workspace,
                                     size_t workspace_bytes) {
    const size_t h = d.num_hiddens, heads = d.num_heads, head_size = h / heads;
    const size_t vh = value_hiddens_of(d), value_head = vh / heads;
    const size_t kv_h = kv_hiddens_of(d), kv_vh = kv_value_hiddens_of(d), group = heads / kv_heads_of(d);
    const bool project_output = !(none >> output_projection & 1u);
    attention_counts counts;
    if (edgeattn_status st = count_attention_tensors(d, project_output ? h : vh, heads, counts)) return st;
    half_staging staging;
    if (edgeattn_status st = staging_for(d, io.half, staging)) return st;
    const multi_head_layout one = layout_for(d, 1);
    size_t integer_slot = 0;  // bytes of an integer projection's slot (0: none)
    const size_t one_bytes = workspace_for(d, one, 1, w.integer, integer_slot);
    if (one_bytes == 0) return EDGEATTN_ERR_SIZE_OVERFLOW;
    attention_mask_view mask;
    tensor_span params[14];  // the mask's 2, the weights' 12
    size_t num_params = 0;
    if (edgeattn_status st = check_attention_mask(mask_in, d.batch, d.queries, heads, d.keys, mask,
                                                  params, num_params))
        return st;
    if (edgeattn_status st = read_score_options(options, takes_products | takes_alibi, mask)) return st;
    if (edgeattn_status st = check_long_rows(d.keys, io.weights, mask)) return st;
    for (size_t i = 0; i < w.num_spans; ++i) params[num_params++] = w.spans[i];
    if (edgeattn_status st = check_attention_call(d, counts, params, num_params, io.queries, io.keys,
                                                  io.values, valid_lens, workspace, workspace_bytes,
                                                  with_staging(staging, one_bytes), io.output, io.weights,
                                                  mask.lens, io_element_bytes(io.half)))
        return st;

    // fp16 tensors: widened into their fp32 copies before the op's own
    // workspace, which starts after them.
    float *copies = static_cast<float *>(workspace);
    float *ws = copies + staging.floats;
    workspace_bytes -= staging.floats * sizeof(float);
    const float *queries = static_cast<const float *>(io.queries);
    const float *keys = static_cast<const float *>(io.keys);
    const float *values = static_cast<const float *>(io.values);
    float *output = static_cast<float *>(io.output);
    float *attention_weights = static_cast<float *>(io.weights);
    if (with_half && io.half) {
        widen_half(io.queries, counts.queries, copies + staging.offset[0]);
        widen_half(io.keys, counts.keys, copies + staging.offset[1]);
        widen_half(io.values, counts.values, copies + staging.offset[2]);
        queries = copies + staging.offset[0];
        keys = copies + staging.offset[1];
        values = copies + staging.offset[2];
        output = copies + staging.offset[3];
        attention_weights = io.weights ? copies + staging.offset[4] : nullptr;
    }

    // The projected queries (B, Q, h), keys (B, K, h_kv) and values
    // (B, K, hv_kv): in the workspace, or (NONE) the caller's rows as given.
    // The projections, like the heads, use as many threads as the workspace
    // has scratch slots for.
    const kernel_table &k = active_kernels();
    const size_t slots = scratch_slots(one.bytes, one.scratch.floats_per_slot, workspace_bytes);
    // The int8 arithmetic's slots: as many as fit, at most the heads'
    // (a workspace sized for one thread opens no parallel region).
    size_t integer_slots = 0;
    if (integer_slot) {
        integer_slots = (workspace_bytes - one.packed_weights * sizeof(float)) / integer_slot;
        if (integer_slots > slots) integer_slots = slots;
    }
    const float *Q = queries, *K = keys, *V = values;
    float *packed = ws + one.packed_weights;  // each projection's W^T in turn (unpacked weights)
    if (!(none >> query_projection & 1u)) {
        project(k, w, query_projection, d.batch * d.queries, d.query_size, h, queries, ws + one.projected_queries,
                packed, slots, integer_slots);
        Q = ws + one.projected_queries;
    }
    if (!(none >> key_projection & 1u)) {
        project(k, w, key_projection, d.batch * d.keys, d.key_size, kv_h, keys, ws + one.projected_keys, packed,
                slots, integer_slots);
        K = ws + one.projected_keys;
    }
    if (!(none >> value_projection & 1u)) {
        project(k, w, value_projection, d.batch * d.keys, d.value_size, kv_vh, values, ws + one.projected_values,
                packed, slots, integer_slots);
        V = ws + one.projected_values;
    }
    // (B, Q, hv), d2l's transpose_output: in the workspace, or (W_o NONE)
    // straight in the output.
    float *heads_out = project_output ? ws + one.concatenated_heads : output;

    // Heads read strided columns of the projections in place: no copy for
    // d2l's transpose_qkv. Query head j reads key/value head j / group.
    const float flops_per_row = 2.0f * d.keys * (head_size + value_head);
    parallel_row_blocks(d.batch * heads, d.queries, slots, flops_per_row, ws, one.scratch,
                        [&](size_t slice, size_t row0, size_t rows, const scratch_slot &slot) {
        const size_t b = slice / heads, head = slice % heads, column = head * head_size;
        const size_t kv_column = head / group * head_size, value_column = head / group * value_head;
        const attention_slice s{
            Q + b * d.queries * h + column, h, K + b * d.keys * kv_h + kv_column, kv_h,
            V + b * d.keys * kv_vh + value_column, kv_vh, heads_out + b * d.queries * vh + head * value_head, vh,
            attention_weights ? attention_weights + slice * d.queries * d.keys : nullptr, d.keys,
            d.queries, d.keys, head_size, value_head, b, head};
        dot_product_attention_block(k, s, row0, rows, mask, slot);
    });
    if (project_output)
        project(k, w, output_projection, d.batch * d.queries, vh, h, heads_out, output, packed, slots, integer_slots);
    if (with_half && io.half) {
        round_to_half(output, counts.output, io.output);
        if (io.weights) round_to_half(attention_weights, counts.weights, io.weights);
    }
    return EDGEATTN_OK;
}

}  // namespace

edgeattn_status edgeattn::detail::mha_workspace_bytes(const edgeattn_attention_dims &d,
                                                      size_t max_threads, bool half, size_t &bytes,
                                                      bool integer) {
    if (edgeattn_status st = check_dims(d)) return st;
    half_staging staging;
    if (edgeattn_status st = staging_for(d, half, staging)) return st;
    // The request has one arithmetic: any of the four matrices may take it.
    size_t slot = 0;
    bytes = with_staging(staging, workspace_for(d, layout_for(d, max_threads), max_threads,
                                                integer ? all_projections : 0u, slot));
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
    attention_io io{queries, keys, values, output, attention_weights, false};
    if (edgeattn_status st = read_tensor_type(options, io.half)) return st;
    if (edgeattn_status st = refuse_rope(options)) return st;
    const edgeattn_attention_dims d = *dims;
    if (edgeattn_status st = check_dims(d)) return st;
    // Each matrix may be NONE (rows given as projected; W_o: the output is
    // the heads), with no bias beside it and rows as wide as its output.
    edgeattn_weights typed;
    unsigned none = 0;
    if (edgeattn_status st = copy_typed_weights(weights, all_projections, typed, none)) return st;
    size_t in[4], out[4];
    projection_inputs(d, in);
    projection_outputs(d, out);
    out[output_projection] = in[output_projection];
    if (edgeattn_status st = check_unprojected(typed, none, in, out)) return st;
    mha_weights_view w;  // the weights' descriptor read into the view
    if (edgeattn_status st = view_typed_mha_weights(d, typed, w, all_projections & ~none, with_int8_arithmetic))
        return st;
    if (with_int8_arithmetic && w.integer) w.integer_product = &integer_linear;
    return multi_head_attention(d, io, valid_lens_of(options), mask_of(options), options, w, none, workspace,
                                workspace_bytes);
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
    attention_io io{queries, keys, values, output, attention_weights, false};
    if (edgeattn_status st = read_tensor_type(options, io.half)) return st;
    if (edgeattn_status st = refuse_rope(options)) return st;
    const edgeattn_attention_dims d = *dims;
    if (edgeattn_status st = check_dims(d)) return st;
    mha_weights_view w;
    if (edgeattn_status st = view_packed_mha_weights(d, packed, packed_bytes, w)) return st;
    return multi_head_attention(d, io, valid_lens_of(options), mask_of(options), options, w, 0, workspace,
                                workspace_bytes);
}
