// Horizontal reductions and partial loads/stores of a batch. xsimd 8.1 has
// hadd (sum) but no reduce_max, so the maximum goes through memory. Tails
// shorter than a batch go through a padded buffer, so every element takes
// the same vector code path (the same rounding) wherever it sits in a row.
#ifndef EDGEATTN_KERNELS_REDUCE_HPP
#define EDGEATTN_KERNELS_REDUCE_HPP

#include <stddef.h>

namespace edgeattn {
namespace detail {
namespace {

// A tree of maxima (depth log2 of the width, not a chain of width - 1):
// the row softmax waits on this once per row, so its latency is per-row cost.
template <class B>
float horizontal_max(const B &v) {
    alignas(64) float lanes[B::size];
    v.store_unaligned(lanes);
    for (size_t half = B::size / 2; half >= 1; half /= 2)
        for (size_t i = 0; i < half; ++i) lanes[i] = lanes[i + half] > lanes[i] ? lanes[i + half] : lanes[i];
    return lanes[0];
}

template <class B>
float first_lane(const B &v) {
    alignas(64) float lanes[B::size];
    v.store_unaligned(lanes);
    return lanes[0];
}

// n < B::size elements, the rest of the batch set to `fill`.
template <class B>
B load_partial(const float *p, size_t n, float fill) {
    alignas(64) float lanes[B::size];
    for (size_t i = 0; i < B::size; ++i) lanes[i] = i < n ? p[i] : fill;
    return B::load_unaligned(lanes);
}

template <class B>
void store_partial(const B &v, float *p, size_t n) {
    alignas(64) float lanes[B::size];
    v.store_unaligned(lanes);
    for (size_t i = 0; i < n; ++i) p[i] = lanes[i];
}

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
