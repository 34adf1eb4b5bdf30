#include "attention_rows.hpp"

#include <math.h>

namespace edgeattn {
namespace detail {

namespace {

size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

// Scores of rows [row0, row0 + rows) against keys [key0, key0 + n):
// scores (rows, n) at `scores`, row stride ldc.
void block_scores(const kernel_table &k, const attention_slice &s, size_t row0, size_t rows,
                  size_t key0, size_t n, float scale, float *scores, size_t ldc,
                  const scratch_slot &slot) {
    k.pack_transposed(s.keys + key0 * s.key_stride, s.key_stride, n, s.d, slot.packed_keys);
    k.gemm_packed(rows, n, s.d, scale, s.queries + row0 * s.query_stride, s.query_stride,
                  slot.packed_keys, k.panel_width, nullptr, scores, ldc, false);
}

// Scores, softmax and weighted sum with whole rows of weights (rows, K) at
// `weights`: the caller's attention weights, or the slot's scores when one
// key block holds every key.
void attention_with_weights(const kernel_table &k, const attention_slice &s, size_t row0,
                            size_t rows, const valid_lens_view &valid_lens, float *weights,
                            const scratch_slot &slot) {
    const size_t K = s.num_keys;
    size_t max_valid = 0;
    for (size_t r = 0; r < rows; ++r) {
        const size_t v = valid_lens.of_row(s.batch_index, row0 + r, K);
        max_valid = v > max_valid ? v : max_valid;
    }
    // Scores past every row's valid length are never read by the softmax.
    const float scale = 1.0f / sqrtf(static_cast<float>(s.d));
    const size_t key_block = key_block_for(K);
    for (size_t key0 = 0; key0 < max_valid; key0 += key_block)
        block_scores(k, s, row0, rows, key0, min_size(key_block, K - key0), scale, weights + key0,
                     K, slot);
    softmax_and_weighted_sum(k, s, row0, rows, valid_lens, weights, slot);
}

// FlashAttention's online softmax over key blocks; keys past a row's valid
// length are skipped and added back exactly at the end (d2l's -1e6 rule).
void attention_streaming(const kernel_table &k, const attention_slice &s, size_t row0, size_t rows,
                         const valid_lens_view &valid_lens, const scratch_slot &slot) {
    const size_t K = s.num_keys, dv = s.dv;
    size_t valid[rows_per_block];
    size_t max_valid = 0;
    for (size_t r = 0; r < rows; ++r) {
        valid[r] = valid_lens.of_row(s.batch_index, row0 + r, K);
        max_valid = valid[r] > max_valid ? valid[r] : max_valid;
        slot.running_max[r] = -__builtin_inff();
        slot.running_sum[r] = 0.0f;
        float *out = s.output + (row0 + r) * s.output_stride;
        for (size_t c = 0; c < dv; ++c) out[c] = 0.0f;
    }
    const float scale = 1.0f / sqrtf(static_cast<float>(s.d));
    const size_t key_block = key_block_for(K);
    for (size_t key0 = 0; key0 < max_valid; key0 += key_block) {
        const size_t n = min_size(key_block, max_valid - key0);
        block_scores(k, s, row0, rows, key0, n, scale, slot.scores, key_block, slot);
        for (size_t r = 0; r < rows; ++r) {
            float *p = slot.scores + r * key_block;
            const size_t row_valid = valid[r] > key0 ? min_size(valid[r] - key0, n) : 0;
            const float correction = k.online_softmax_block(p, p, n, row_valid, slot.running_max + r,
                                                            slot.running_sum + r);
            if (correction != 1.0f) k.scale(s.output + (row0 + r) * s.output_stride, dv, correction);
        }
        k.pack(s.values + key0 * s.value_stride, s.value_stride, n, dv, slot.packed_values);
        k.gemm_packed(rows, dv, n, 1.0f, slot.scores, key_block, slot.packed_values, k.panel_width, nullptr,
                      s.output + row0 * s.output_stride, s.output_stride, true);
    }
    for (size_t r = 0; r < rows; ++r) {
        float *out = s.output + (row0 + r) * s.output_stride;
        float row_max = slot.running_max[r], sum = slot.running_sum[r];
        if (valid[r] < K) {
            // Masked keys score -1e6: they join the maximum and each weighs
            // exp(-1e6 - max), which is 0 unless the valid scores are near
            // -1e6 or there are none (then the row is uniform).
            const float max_all = row_max > masked_score ? row_max : masked_score;
            const float correction = row_max == max_all ? 1.0f : expf(row_max - max_all);
            const float masked_weight = expf(masked_score - max_all);
            if (correction != 1.0f) k.scale(out, dv, correction);
            sum = sum * correction + static_cast<float>(K - valid[r]) * masked_weight;
            if (masked_weight > 0.0f)
                for (size_t j = valid[r]; j < K; ++j)
                    k.add_scaled(s.values + j * s.value_stride, masked_weight, out, dv);
        }
        k.scale(out, dv, 1.0f / sum);
    }
}

}  // namespace

void softmax_and_weighted_sum(const kernel_table &k, const attention_slice &s, size_t row0,
                              size_t rows, const valid_lens_view &valid_lens, float *weights,
                              const scratch_slot &slot) {
    const size_t K = s.num_keys;
    for (size_t r = 0; r < rows; ++r)
        k.masked_softmax_row(weights + r * K, weights + r * K, K,
                             valid_lens.of_row(s.batch_index, row0 + r, K));
    const size_t key_block = key_block_for(K);
    for (size_t key0 = 0; key0 < K; key0 += key_block) {
        const size_t n = min_size(key_block, K - key0);
        k.pack(s.values + key0 * s.value_stride, s.value_stride, n, s.dv, slot.packed_values);
        k.gemm_packed(rows, s.dv, n, 1.0f, weights + key0, K, slot.packed_values, k.panel_width, nullptr,
                      s.output + row0 * s.output_stride, s.output_stride, key0 > 0);
    }
}

void dot_product_attention_block(const kernel_table &k, const attention_slice &s, size_t row0,
                                 size_t rows, const valid_lens_view &valid_lens,
                                 const scratch_slot &slot) {
    // With a single key block the online softmax has nothing to save and
    // costs a little more (sdpa 1x128x256x4: 133 vs 110 us), so whole rows
    // of scores go to the slot instead.
    if (s.weights)
        attention_with_weights(k, s, row0, rows, valid_lens, s.weights + row0 * s.num_keys, slot);
    else if (s.num_keys <= keys_per_block)
        attention_with_weights(k, s, row0, rows, valid_lens, slot.scores, slot);
    else
        attention_streaming(k, s, row0, rows, valid_lens, slot);
}

}  // namespace detail
}  // namespace edgeattn
