// Elementwise kernels, any batch type: y = x + p (the positional-encoding
// add), y *= a, y += a * x (the streaming softmax's rescaling), and an
// attention row's last scaling.
#ifndef EDGEATTN_KERNELS_ADD_HPP
#define EDGEATTN_KERNELS_ADD_HPP

#include <stddef.h>

#include "reduce.hpp"

namespace edgeattn {
namespace detail {
namespace {

// The pointers step themselves and the trip count is made once: Helium's
// loads and stores take no index register (an add per access otherwise),
// and GCC turns the count into a low-overhead loop.
template <class B>
void add(const float *x, const float *p, float *y, size_t n) {
    for (size_t steps = n / B::size; steps; --steps, x += B::size, p += B::size, y += B::size)
        (B::load_unaligned(x) + B::load_unaligned(p)).store_unaligned(y);
    if (const size_t rest = n % B::size)
        store_partial(load_partial<B>(x, rest, 0.0f) + load_partial<B>(p, rest, 0.0f), y, rest);
}

template <class B>
void scale(float *y, size_t n, float a) {
    const B factor(a);
    size_t i = 0;
    for (; i + B::size <= n; i += B::size) (B::load_unaligned(y + i) * factor).store_unaligned(y + i);
    if (i < n) store_partial(load_partial<B>(y + i, n - i, 0.0f) * factor, y + i, n - i);
}

// y *= a, then + 0, so a zero comes out +0 whichever sign the sums that
// made it had; returns whether every result is finite (y - y is 0 only
// for finite y). An attention row's last step (attention_rows.cpp).
template <class B>
bool scale_final(float *y, size_t n, float a) {
    const B factor(a), zero(0.0f);
    B nonfinite(0.0f);
    size_t i = 0;
    for (; i + B::size <= n; i += B::size) {
        const B r = B::load_unaligned(y + i) * factor + zero;
        nonfinite += r - r;
        r.store_unaligned(y + i);
    }
    if (i < n) {
        const B r = load_partial<B>(y + i, n - i, 0.0f) * factor + zero;
        nonfinite += r - r;
        store_partial(r, y + i, n - i);
    }
    return horizontal_sum(nonfinite) == 0.0f;
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
