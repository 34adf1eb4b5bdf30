// Horizontal reductions of a batch. xsimd 8.1 has hadd (sum) but no
// reduce_max, so the maximum goes through memory.
#ifndef EDGEATTN_KERNELS_REDUCE_HPP
#define EDGEATTN_KERNELS_REDUCE_HPP

#include <stddef.h>

namespace edgeattn {
namespace detail {
namespace {

template <class B>
float horizontal_max(const B &v) {
    alignas(64) float lanes[B::size];
    v.store_unaligned(lanes);
    float m = lanes[0];
    for (size_t i = 1; i < B::size; ++i) m = lanes[i] > m ? lanes[i] : m;
    return m;
}

// Dot product of two float arrays of length n.
template <class B>
float dot(const float *a, const float *b, size_t n) {
    B acc(0.0f);
    size_t k = 0;
    for (; k + B::size <= n; k += B::size)
        acc = fma(B::load_unaligned(a + k), B::load_unaligned(b + k), acc);
    float sum = hadd(acc);
    for (; k < n; ++k) sum += a[k] * b[k];
    return sum;
}

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
