// The part of attention every op shares: for a block of query rows whose
// scores are ready, apply d2l's masked softmax and take the weighted sum of
// the values. Also the scaled dot-product scores of such a block.
#ifndef EDGEATTN_ATTENTION_ROWS_HPP
#define EDGEATTN_ATTENTION_ROWS_HPP

#include <stddef.h>

#include "kernels/kernel_table.hpp"
#include "validate.hpp"

namespace edgeattn {
namespace detail {

// One (batch, head) slice of scaled dot-product attention, in the caller's
// memory: queries (Q, d), keys (K, d), values (K, dv), output (Q, dv), each
// row `*_stride` floats after the last, and optional weights (Q, K).
struct attention_slice {
    const float *queries;
    size_t query_stride;
    const float *keys;
    size_t key_stride;
    const float *values;
    size_t value_stride;
    float *output;
    size_t output_stride;
    float *weights;  // (Q, K) contiguous, or nullptr
    size_t num_queries, num_keys, d, dv;
    size_t batch_index;  // which valid lengths apply
};

// scores (rows, K), row r holding query row0 + r: softmax in place, masked by
// the valid lengths of batch b, then output rows = scores . values.
void softmax_and_weighted_sum(const kernel_table &k, const attention_slice &s, size_t row0,
                              size_t rows, const valid_lens_view &valid_lens, float *scores);

// Rows [row0, row0 + rows) of a slice, rows <= rows_per_block: scores
// Q K^T / sqrt(d) into the weights (if requested) or `scratch`
// (rows_per_block, K), then softmax_and_weighted_sum.
void dot_product_attention_block(const kernel_table &k, const attention_slice &s, size_t row0,
                                 size_t rows, const valid_lens_view &valid_lens, float *scratch);

// Number of row blocks of `queries` rows.
inline size_t row_blocks(size_t queries) {
    return (queries + rows_per_block - 1) / rows_per_block;
}

}  // namespace detail
}  // namespace edgeattn

#endif
