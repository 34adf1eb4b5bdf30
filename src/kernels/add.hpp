// Elementwise kernels, any batch type: y = x + p (the positional-encoding
// add), y *= a, and y += a * x (the streaming softmax's rescaling).
#ifndef EDGEATTN_KERNELS_ADD_HPP
#define EDGEATTN_KERNELS_ADD_HPP

#include <stddef.h>

#include "reduce.hpp"

namespace edgeattn {
namespace detail {
namespace {

template <class B>
void add(const float *x, const float *p, float *y, size_t n) {
    size_t i = 0;
    for (; i + B::size <= n; i += B::size)
        (B::load_unaligned(x + i) + B::load_unaligned(p + i)).store_unaligned(y + i);
    if (i < n) store_partial(load_partial<B>(x + i, n - i, 0.0f) + load_partial<B>(p + i, n - i, 0.0f), y + i, n - i);
}

template <class B>
void scale(float *y, size_t n, float a) {
    const B factor(a);
    size_t i = 0;
    for (; i + B::size <= n; i += B::size) (B::load_unaligned(y + i) * factor).store_unaligned(y + i);
    if (i < n) store_partial(load_partial<B>(y + i, n - i, 0.0f) * factor, y + i, n - i);
}

template <class B>
void add_scaled(const float *x, float a, float *y, size_t n) {
    const B factor(a);
    size_t i = 0;
    for (; i + B::size <= n; i += B::size)
        fma(factor, B::load_unaligned(x + i), B::load_unaligned(y + i)).store_unaligned(y + i);
    if (i < n)
        store_partial(fma(factor, load_partial<B>(x + i, n - i, 0.0f), load_partial<B>(y + i, n - i, 0.0f)),
                      y + i, n - i);
}

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
