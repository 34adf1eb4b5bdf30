// C entry points of the sinusoidal positional encoding. The table uses the
// same constexpr functions as the C++ compile-time table, so both agree bit
// for bit and neither needs libm.
#include "edgeattn/detail/constexpr_math.hpp"
#include "edgeattn/positional.h"
#include "kernels/kernel_table.hpp"
#include "parallel.hpp"
#include "validate.hpp"

using namespace edgeattn::detail;

extern "C" edgeattn_status edgeattn_positional_encoding_table(size_t max_len, size_t d,
                                                              float *P) {
    if (!P) return EDGEATTN_ERR_NULL_POINTER;
    if (max_len == 0 || d == 0) return EDGEATTN_ERR_ZERO_DIMENSION;
    size_t count = 0;
    if (edgeattn_status st = tensor_count(count, max_len, d)) return st;
    if (!is_float_aligned(P)) return EDGEATTN_ERR_MISALIGNED;
    fill_positional_encoding(P, max_len, d);
    return EDGEATTN_OK;
}

extern "C" edgeattn_status edgeattn_positional_encoding_add_at(size_t batch, size_t n, size_t d,
                                                               size_t start, const float *X,
                                                               const float *P, size_t max_len,
                                                               float *Y) {
    if (!X || !P || !Y) return EDGEATTN_ERR_NULL_POINTER;
    if (batch == 0 || n == 0 || d == 0 || max_len == 0) return EDGEATTN_ERR_ZERO_DIMENSION;
    size_t x_count = 0, p_count = 0;
    if (edgeattn_status st = tensor_count(x_count, batch, n, d)) return st;
    if (edgeattn_status st = tensor_count(p_count, max_len, d)) return st;
    if (n > max_len || start > max_len - n) return EDGEATTN_ERR_SEQUENCE_TOO_LONG;
    if (!is_float_aligned(X) || !is_float_aligned(P) || !is_float_aligned(Y))
        return EDGEATTN_ERR_MISALIGNED;
    if (Y != X && spans_overlap(X, x_count * sizeof(float), Y, x_count * sizeof(float)))
        return EDGEATTN_ERR_OVERLAP;
    if (spans_overlap(P, p_count * sizeof(float), Y, x_count * sizeof(float)))
        return EDGEATTN_ERR_OVERLAP;

    // Each batch element adds the same n rows of P from `start`: (n, d)
    // contiguous.
    const add_kernel_table &k = active_add_kernels();
    const size_t slice = n * d;
    P += start * d;
    parallel_for(batch, batch, static_cast<float>(slice), [&](size_t, size_t begin, size_t end) {
        for (size_t b = begin; b < end; ++b) k.add(X + b * slice, P, Y + b * slice, slice);
    });
    return EDGEATTN_OK;
}
