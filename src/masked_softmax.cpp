// C entry points of d2l's sequence_mask and masked_softmax.
#include "edgeattn/edgeattn.h"
#include "kernels/kernel_table.hpp"
#include "parallel.hpp"
#include "validate.hpp"

using namespace edgeattn::detail;

extern "C" edgeattn_status edgeattn_sequence_mask(size_t rows, size_t cols, const float *X,
                                                  const int32_t *valid_len, float value,
                                                  float *Y) {
    if (!X || !valid_len || !Y) return EDGEATTN_ERR_NULL_POINTER;
    if (rows == 0 || cols == 0) return EDGEATTN_ERR_ZERO_DIMENSION;
    size_t count = 0;
    if (edgeattn_status st = tensor_count(count, rows, cols)) return st;
    if (!is_float_aligned(X) || !is_float_aligned(Y) || !is_float_aligned(valid_len))
        return EDGEATTN_ERR_MISALIGNED;
    // In place (Y == X) works row by row; a shifted overlap would not.
    if (Y != X && spans_overlap(X, count * sizeof(float), Y, count * sizeof(float)))
        return EDGEATTN_ERR_OVERLAP;
    if (spans_overlap(valid_len, rows * sizeof(int32_t), Y, count * sizeof(float)))
        return EDGEATTN_ERR_OVERLAP;
    for (size_t r = 0; r < rows; ++r)
        if (valid_len[r] < 0) return EDGEATTN_ERR_NEGATIVE_VALID_LEN;

    for (size_t r = 0; r < rows; ++r) {
        const size_t valid = static_cast<size_t>(valid_len[r]) < cols ? static_cast<size_t>(valid_len[r]) : cols;
        for (size_t j = 0; j < cols; ++j) Y[r * cols + j] = j < valid ? X[r * cols + j] : value;
    }
    return EDGEATTN_OK;
}

extern "C" edgeattn_status edgeattn_masked_softmax(const edgeattn_softmax_dims *dims,
                                                   const float *X,
                                                   const edgeattn_valid_lens *valid_lens,
                                                   float *Y) {
    if (!dims || !X || !Y) return EDGEATTN_ERR_NULL_POINTER;
    const size_t batch = dims->batch, queries = dims->queries, keys = dims->keys;
    if (batch == 0 || queries == 0 || keys == 0) return EDGEATTN_ERR_ZERO_DIMENSION;
    size_t count = 0;
    if (edgeattn_status st = tensor_count(count, batch, queries, keys)) return st;
    if (!is_float_aligned(X) || !is_float_aligned(Y)) return EDGEATTN_ERR_MISALIGNED;
    valid_lens_view lens;
    if (edgeattn_status st = check_valid_lens(valid_lens, batch, queries, lens)) return st;
    if (Y != X && spans_overlap(X, count * sizeof(float), Y, count * sizeof(float)))
        return EDGEATTN_ERR_OVERLAP;
    if (spans_overlap(lens.lens, valid_lens_bytes(lens, batch, queries), Y, count * sizeof(float)))
        return EDGEATTN_ERR_OVERLAP;

    const softmax_kernel_table &k = active_softmax_kernels();
    const size_t rows = batch * queries;
    parallel_for(rows, rows, 8.0 * keys, [&](size_t, size_t begin, size_t end) {
        masked_softmax_in_chunks(
            k, X + begin * keys, Y + begin * keys, keys, end - begin, keys,
            [&](size_t r) {
                return key_interval{0, lens.of_row((begin + r) / queries, (begin + r) % queries, keys)};
            },
            [](size_t, key_interval) {});
    });
    return EDGEATTN_OK;
}
