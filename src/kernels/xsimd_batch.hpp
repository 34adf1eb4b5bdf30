// The few operations the kernels need beyond xsimd 8.1's API, spelled as
// scalar_batch spells them. Arch files include this before the kernels so
// the kernel templates find these overloads where they are defined.
#ifndef EDGEATTN_KERNELS_XSIMD_BATCH_HPP
#define EDGEATTN_KERNELS_XSIMD_BATCH_HPP

#include <stdint.h>

#include <xsimd/xsimd.hpp>

namespace edgeattn {
namespace detail {
namespace {

template <class A>
xsimd::batch<float, A> round_to_nearest(const xsimd::batch<float, A> &x) {
    return xsimd::nearbyint(x);
}

// 2^n for whole n in [-126, 127], from the exponent bits.
template <class A>
xsimd::batch<float, A> pow2n(const xsimd::batch<float, A> &n) {
    using ints = xsimd::batch<int32_t, A>;
    const ints bits = (xsimd::to_int(n) + ints(127)) << 23;
    return xsimd::bitwise_cast<xsimd::batch<float, A>>(bits);
}

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
