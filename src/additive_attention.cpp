// C entry point of additive attention (d2l's AdditiveAttention).
#include "attention_checks.hpp"
#include "attention_mask.hpp"
#include "attention_options.hpp"
#include "half_io.hpp"
#include "attention_rows.hpp"
#include "edgeattn/detail/workspace_layout.hpp"
#include "edgeattn/attention.h"
#include "kernels/widen.hpp"
#include "op_workspace.hpp"
#include "linear.hpp"
#include "mha_weights.hpp"
#include "parallel.hpp"

using namespace edgeattn::detail;

namespace {

bool has_zero_dimension(const edgeattn_attention_dims &d) {
    return d.batch == 0 || d.queries == 0 || d.keys == 0 || d.query_size == 0 ||
           d.key_size == 0 || d.value_size == 0 || d.num_hiddens == 0;
}

}  // namespace

edgeattn_status edgeattn::detail::additive_workspace_bytes(const edgeattn_attention_dims &d,
                                                           size_t max_threads, size_t &bytes) {
    if (has_zero_dimension(d)) return EDGEATTN_ERR_ZERO_DIMENSION;
    bytes = make_additive_layout(d.batch, d.queries, d.keys, d.query_size, d.key_size,
                                 d.value_size, d.num_hiddens, max_threads)
                .bytes;
    return bytes ? EDGEATTN_OK : EDGEATTN_ERR_SIZE_OVERFLOW;
}

namespace {

// w_v (1, h) as floats: a float row is read in place, another type is
// widened into `scratch` (h floats), element by element as
// edgeattn_weight_matrix defines it.
const float *scoring_row(const edgeattn_weight_matrix &w_v, size_t h, float *scratch) {
    if (w_v.type == EDGEATTN_DTYPE_F32) return static_cast<const float *>(w_v.data);
    for (size_t i = 0; i < h; ++i)
        scratch[i] = w_v.type == EDGEATTN_DTYPE_F16
                         ? widen(static_cast<const uint16_t *>(w_v.data)[i])
                         : w_v.scales[0] * widen(static_cast<const int8_t *>(w_v.data)[i]);
    return scratch;
}

}  // namespace

// Every by-pointer struct is read before anything is written (the
// projections may overwrite one the caller keeps in the workspace or an
// output): dims and matrices into locals, options into the mask's views.
extern "C" edgeattn_status edgeattn_additive(const edgeattn_attention_dims *dims,
                                             const float *queries, const float *keys,
                                             const float *values, const edgeattn_weights *weights,
                                             const edgeattn_attention_options *options,
                                             void *workspace, size_t workspace_bytes,
                                             float *output, float *attention_weights) {
    if (!dims || !queries || !keys || !values || !weights || !workspace || !output)
        return EDGEATTN_ERR_NULL_POINTER;
    bool half = false;  // fp32 tensors only: fp16 ones are refused, not read as floats
    if (edgeattn_status st = read_tensor_type(options, half)) return st;
    if (half) return EDGEATTN_ERR_OPTION_NOT_SUPPORTED;
    if (edgeattn_status st = refuse_rope(options)) return st;
    const edgeattn_attention_dims d = *dims;
    const edgeattn_weight_matrix W_q_given = weights->W_q, W_k_given = weights->W_k;
    const edgeattn_weight_matrix w_v_given = weights->W_v;
    if (has_zero_dimension(d)) return EDGEATTN_ERR_ZERO_DIMENSION;
    if (weights->W_o.data || weights->b_q || weights->b_k || weights->b_v || weights->b_o)
        return EDGEATTN_ERR_OPTION_NOT_SUPPORTED;
    attention_counts counts;
    if (edgeattn_status st = count_attention_tensors(d, d.value_size, 1, counts)) return st;
    tensor_span params[8];
    size_t num_params = 0;
    if (edgeattn_status st = check_stored_matrix(W_q_given, d.num_hiddens, d.query_size, params, num_params))
        return st;
    if (edgeattn_status st = check_stored_matrix(W_k_given, d.num_hiddens, d.key_size, params, num_params))
        return st;
    if (edgeattn_status st = check_stored_matrix(w_v_given, 1, d.num_hiddens, params, num_params))
        return st;
    attention_mask_view mask;
    size_t num_mask_spans = 0;
    if (edgeattn_status st = check_attention_mask(mask_of(options), d.batch, d.queries, 1, d.keys, mask,
                                                  params + num_params, num_mask_spans))
        return st;
    // Its scores are no product: no scale, softcap, ALiBi or score weights.
    if (edgeattn_status st = read_score_options(options, 0, mask)) return st;
    num_params += num_mask_spans;
    const additive_layout one = make_additive_layout(d.batch, d.queries, d.keys, d.query_size,
                                                     d.key_size, d.value_size, d.num_hiddens, 1);
    if (edgeattn_status st = check_attention_call(d, counts, params, num_params, queries, keys, values,
                                                  valid_lens_of(options), workspace, workspace_bytes,
                                                  one.bytes, output, attention_weights, mask.lens))
        return st;

    const kernel_table &k = active_kernels();
    const additive_kernel_table &additive = additive_kernels_of(k);
    float *ws = static_cast<float *>(workspace);
    float *projected_queries = ws + one.projected_queries;  // (B, Q, h)
    float *projected_keys = ws + one.projected_keys;        // (B, K, h)
    const size_t h = d.num_hiddens;
    float *packed = ws + one.packed_weights;
    const stored_matrix W_q = stored_matrix_of(W_q_given), W_k = stored_matrix_of(W_k_given);
    const size_t slots = scratch_slots(one.bytes, one.scratch.floats_per_slot, workspace_bytes);
    linear(k, d.batch * d.queries, d.query_size, h, queries, W_q, nullptr, projected_queries, packed, slots);
    linear(k, d.batch * d.keys, d.key_size, h, keys, W_k, nullptr, projected_keys, packed, slots);
    // The packed projections are done with: `packed` (>= h floats) is free.
    const float *w_v = scoring_row(w_v_given, h, packed);

    const float flops_per_row = d.keys * (20.0f * h + 2.0f * d.value_size);
    parallel_row_blocks(d.batch, d.queries, slots, flops_per_row, ws, one.scratch,
                        [&](size_t b, size_t row0, size_t rows, const scratch_slot &slot) {
        float *weights_b = attention_weights ? attention_weights + b * d.queries * d.keys : nullptr;
        float *scores = weights_b ? weights_b + row0 * d.keys : slot.scores;  // (rows, K)
        for (size_t r = 0; r < rows; ++r)
            additive.scores_row(projected_queries + (b * d.queries + row0 + r) * h,
                                projected_keys + b * d.keys * h, d.keys, h, w_v, h,
                                scores + r * d.keys);
        const attention_slice s{nullptr, 0, nullptr, 0,
                                values + b * d.keys * d.value_size, d.value_size,
                                output + b * d.queries * d.value_size, d.value_size,
                                weights_b, d.keys, d.queries, d.keys, h, d.value_size, b, 0};
        softmax_and_weighted_sum(k, s, row0, rows, mask, scores, d.keys, slot);
    });
    return EDGEATTN_OK;
}
