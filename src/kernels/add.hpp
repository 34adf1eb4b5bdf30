// y = x + p elementwise (the positional-encoding add), any batch type.
#ifndef EDGEATTN_KERNELS_ADD_HPP
#define EDGEATTN_KERNELS_ADD_HPP

#include <stddef.h>

namespace edgeattn {
namespace detail {
namespace {

template <class B>
void add(const float *x, const float *p, float *y, size_t n) {
    size_t i = 0;
    for (; i + B::size <= n; i += B::size)
        (B::load_unaligned(x + i) + B::load_unaligned(p + i)).store_unaligned(y + i);
    for (; i < n; ++i) y[i] = x[i] + p[i];
}

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
