// C entry point of additive attention (d2l's AdditiveAttention).
#include "attention_checks.hpp"
#include "attention_rows.hpp"
#include "edgeattn/detail/workspace_layout.hpp"
#include "edgeattn/edgeattn.h"
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

extern "C" size_t edgeattn_additive_attention_workspace_size(const edgeattn_attention_dims *dims,
                                                             size_t max_threads) {
    if (!dims || has_zero_dimension(*dims)) return 0;
    return make_additive_layout(dims->batch, dims->queries, dims->keys, dims->query_size,
                                dims->key_size, dims->value_size, dims->num_hiddens, max_threads)
        .bytes;
}

namespace {

// The one body of both entry points: W_q, W_k in their stored types, and
// every by-pointer struct already read into locals (the projections may
// overwrite a struct the caller keeps in the workspace or an output).
edgeattn_status additive_attention(const edgeattn_attention_dims *dims, const float *queries,
                                   const float *keys, const float *values,
                                   const edgeattn_valid_lens *valid_lens,
                                   const edgeattn_additive_typed_weights &weights,
                                   void *workspace, size_t workspace_bytes, float *output,
                                   float *attention_weights) {
    const edgeattn_weight_matrix &W_q_given = weights.W_q, &W_k_given = weights.W_k;
    const float *w_v = weights.w_v;
    if (!dims || !queries || !keys || !values || !w_v || !workspace || !output)
        return EDGEATTN_ERR_NULL_POINTER;
    const edgeattn_attention_dims d = *dims;
    if (has_zero_dimension(d)) return EDGEATTN_ERR_ZERO_DIMENSION;
    attention_counts counts;
    if (edgeattn_status st = count_attention_tensors(d, d.value_size, 1, counts)) return st;
    tensor_span params[5];
    size_t num_params = 0;
    if (edgeattn_status st =
            check_stored_matrix(W_q_given, d.num_hiddens, d.query_size, params, num_params))
        return st;
    if (edgeattn_status st = check_stored_matrix(W_k_given, d.num_hiddens, d.key_size, params, num_params))
        return st;
    params[num_params++] = {w_v, d.num_hiddens};
    const additive_layout one = make_additive_layout(d.batch, d.queries, d.keys, d.query_size,
                                                     d.key_size, d.value_size, d.num_hiddens, 1);
    valid_lens_view lens;
    if (edgeattn_status st = check_attention_call(d, counts, params, num_params, queries, keys, values,
                                                  valid_lens, workspace, workspace_bytes,
                                                  one.bytes, output, attention_weights, lens))
        return st;

    const attention_mask_view mask = mask_of_valid_lens(lens);
    const kernel_table &k = active_kernels();
    const additive_kernel_table &additive = additive_kernels_of(k);
    float *ws = static_cast<float *>(workspace);
    float *projected_queries = ws + one.projected_queries;  // (B, Q, h)
    float *projected_keys = ws + one.projected_keys;        // (B, K, h)
    const size_t h = d.num_hiddens;
    float *packed = ws + one.packed_weights;
    const stored_matrix W_q = stored_matrix_of(W_q_given), W_k = stored_matrix_of(W_k_given);
    linear(k, d.batch * d.queries, d.query_size, h, queries, W_q, nullptr, projected_queries, packed);
    linear(k, d.batch * d.keys, d.key_size, h, keys, W_k, nullptr, projected_keys, packed);

    const size_t slots = scratch_slots(one.bytes, one.scratch.floats_per_slot, workspace_bytes);
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

}  // namespace

extern "C" edgeattn_status edgeattn_additive_attention(
    const edgeattn_attention_dims *dims, const float *queries, const float *keys,
    const float *values, const edgeattn_valid_lens *valid_lens,
    const edgeattn_additive_weights *weights, void *workspace, size_t workspace_bytes,
    float *output, float *attention_weights) {
    if (!weights || !weights->W_q || !weights->W_k) return EDGEATTN_ERR_NULL_POINTER;
    const edgeattn_additive_typed_weights typed = {{EDGEATTN_WEIGHTS_F32, weights->W_q, nullptr},
                                                   {EDGEATTN_WEIGHTS_F32, weights->W_k, nullptr},
                                                   weights->w_v};
    return additive_attention(dims, queries, keys, values, valid_lens, typed, workspace, workspace_bytes,
                              output, attention_weights);
}

extern "C" edgeattn_status edgeattn_additive_attention_typed(
    const edgeattn_attention_dims *dims, const float *queries, const float *keys,
    const float *values, const edgeattn_valid_lens *valid_lens,
    const edgeattn_additive_typed_weights *weights, void *workspace, size_t workspace_bytes,
    float *output, float *attention_weights) {
    edgeattn_additive_typed_weights typed;
    if (!read_argument(weights, typed)) return EDGEATTN_ERR_NULL_POINTER;
    return additive_attention(dims, queries, keys, values, valid_lens, typed, workspace, workspace_bytes,
                              output, attention_weights);
}
