// d2l's masked softmax of one row, written once for any batch type.
//
// d2l replaces scores at positions >= valid by -1e6 and takes a plain
// softmax. We compute exactly that without touching the masked scores:
// the row maximum is max(max of valid scores, -1e6 if anything is masked),
// and every masked position has the same weight exp(-1e6 - max) / sum, which
// underflows to 0 unless the valid scores are themselves near -1e6. A row
// with valid == 0 is uniform, 1/keys.
#ifndef EDGEATTN_KERNELS_SOFTMAX_HPP
#define EDGEATTN_KERNELS_SOFTMAX_HPP

#include <math.h>
#include <stddef.h>

#include "reduce.hpp"

namespace edgeattn {
namespace detail {
namespace {

constexpr float masked_score = -1e6f;

template <class B>
void masked_softmax_row(const float *x, float *y, size_t keys, size_t valid) {
    if (valid == 0) {
        const float uniform = 1.0f / static_cast<float>(keys);
        for (size_t j = 0; j < keys; ++j) y[j] = uniform;
        return;
    }
    // (1) maximum of the valid scores
    size_t j = 0;
    float row_max = x[0];
    if (valid >= B::size) {
        B m = B::load_unaligned(x);
        for (j = B::size; j + B::size <= valid; j += B::size) m = max(m, B::load_unaligned(x + j));
        row_max = horizontal_max(m);
    }
    for (; j < valid; ++j) row_max = x[j] > row_max ? x[j] : row_max;
    if (valid < keys && masked_score > row_max) row_max = masked_score;

    // (2) exponentials, stored, and their sum
    const B shift(row_max);
    B sum_lanes(0.0f);
    for (j = 0; j + B::size <= valid; j += B::size) {
        const B e = exp(B::load_unaligned(x + j) - shift);
        e.store_unaligned(y + j);
        sum_lanes += e;
    }
    float sum = hadd(sum_lanes);
    for (; j < valid; ++j) {
        y[j] = expf(x[j] - row_max);
        sum += y[j];
    }
    const float masked_weight = valid < keys ? expf(masked_score - row_max) : 0.0f;
    sum += static_cast<float>(keys - valid) * masked_weight;

    // (3) normalise
    const float inverse_sum = 1.0f / sum;
    const B scale(inverse_sum);
    for (j = 0; j + B::size <= valid; j += B::size)
        (B::load_unaligned(y + j) * scale).store_unaligned(y + j);
    for (; j < valid; ++j) y[j] *= inverse_sum;
    const float masked_value = masked_weight * inverse_sum;
    for (j = valid; j < keys; ++j) y[j] = masked_value;
}

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
