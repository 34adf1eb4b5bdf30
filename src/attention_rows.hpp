// The part of attention every op shares: for a block of query rows whose
// scores are ready, apply d2l's masked softmax and take the weighted sum of
// the values. Also the scaled dot-product scores of such a block.
#ifndef EDGEATTN_ATTENTION_ROWS_HPP
#define EDGEATTN_ATTENTION_ROWS_HPP

#include <stddef.h>

#include "kernels/kernel_table.hpp"
#include "parallel.hpp"
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

// Runs body(slice, row0, rows, scratch) for every block of at most
// rows_per_block query rows of every slice (a batch element, or a batch
// element's head), split over threads; each thread gets its own slot of
// `floats_per_slot` floats at `scratch`.
template <class Body>
void parallel_row_blocks(size_t slices, size_t queries, size_t slots, double flops_per_block,
                         float *scratch, size_t floats_per_slot, Body body) {
    const size_t blocks = (queries + rows_per_block - 1) / rows_per_block;
    parallel_for(slices * blocks, slots, flops_per_block, [&](size_t slot, size_t begin, size_t end) {
        float *my_scratch = scratch + slot * floats_per_slot;
        for (size_t item = begin; item < end; ++item) {
            const size_t row0 = item % blocks * rows_per_block;
            const size_t rows = queries - row0 < rows_per_block ? queries - row0 : rows_per_block;
            body(item / blocks, row0, rows, my_scratch);
        }
    });
}

}  // namespace detail
}  // namespace edgeattn

#endif
