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

// Lane i of swizzle(v, rotation<S>) is lane (i + S) mod size of v.
template <size_t Shift>
struct lane_rotation {
    static constexpr uint32_t get(size_t i, size_t n) { return static_cast<uint32_t>((i + Shift) % n); }
};

template <class A, size_t Shift>
xsimd::batch<float, A> max_over_rotations(const xsimd::batch<float, A> &v) {
    using lanes = xsimd::batch<uint32_t, A>;
    const xsimd::batch<float, A> m =
        xsimd::max(v, xsimd::swizzle(v, xsimd::make_batch_constant<lanes, lane_rotation<Shift>>()));
    if constexpr (Shift > 1)
        return max_over_rotations<A, Shift / 2>(m);
    else
        return m;
}

// The maximum of the lanes in registers (log2(size) rotate-and-max steps):
// no round trip through memory, whose store-to-load forwarding of one wide
// store to narrow loads the row softmax would wait on once per row.
template <class A>
float horizontal_max(const xsimd::batch<float, A> &v) {
    return max_over_rotations<A, xsimd::batch<float, A>::size / 2>(v).get(0);
}

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
