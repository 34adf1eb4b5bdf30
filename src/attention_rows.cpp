#include "attention_rows.hpp"

#include <math.h>

namespace edgeattn {
namespace detail {

void softmax_and_weighted_sum(const kernel_table &k, const attention_slice &s, size_t row0,
                              size_t rows, const valid_lens_view &valid_lens, float *scores) {
    for (size_t r = 0; r < rows; ++r) {
        float *row = scores + r * s.num_keys;
        k.masked_softmax_row(row, row, s.num_keys,
                             valid_lens.of_row(s.batch_index, row0 + r, s.num_keys));
    }
    k.gemm_nn(rows, s.dv, s.num_keys, scores, s.num_keys, s.values, s.value_stride,
              s.output + row0 * s.output_stride, s.output_stride);
}

void dot_product_attention_block(const kernel_table &k, const attention_slice &s, size_t row0,
                                 size_t rows, const valid_lens_view &valid_lens, float *scratch) {
    float *scores = s.weights ? s.weights + row0 * s.num_keys : scratch;
    const float scale = 1.0f / sqrtf(static_cast<float>(s.d));
    k.gemm_nt(rows, s.num_keys, s.d, scale, s.queries + row0 * s.query_stride, s.query_stride,
              s.keys, s.key_stride, nullptr, scores, s.num_keys);
    softmax_and_weighted_sum(k, s, row0, rows, valid_lens, scores);
}

}  // namespace detail
}  // namespace edgeattn
