// The few operations the kernels need beyond xsimd 8.1's API, spelled as
// scalar_batch spells them. Arch files include this before the kernels so
// the kernel templates find these overloads where they are defined.
#ifndef EDGEATTN_KERNELS_XSIMD_BATCH_HPP
#define EDGEATTN_KERNELS_XSIMD_BATCH_HPP

#include <stdint.h>

#include <string.h>

#include <xsimd/xsimd.hpp>

#include "widen.hpp"

#if defined(__SSE2__)
#include <immintrin.h>
#endif
#if defined(__ARM_NEON)
#include <arm_neon.h>
#endif

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

// B::size int8 weights widened in registers (weight_load.hpp): sign-extend
// to int32, convert. The batch width tells the path apart (16: AVX-512,
// 8: AVX2, 4: SSE2 or NEON); each file is compiled with its own flags.
template <class A>
xsimd::batch<float, A> widen_int8(const int8_t *p, const xsimd::batch<float, A> *) {
    using B = xsimd::batch<float, A>;
#if defined(__AVX512F__)
    if constexpr (B::size == 16)
        return B(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)))));
#endif
#if defined(__AVX2__)
    if constexpr (B::size == 8)
        return B(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(p)))));
#endif
#if defined(__SSE2__)
    if constexpr (B::size == 4) {
        int32_t four;
        memcpy(&four, p, sizeof four);
        __m128i v = _mm_cvtsi32_si128(four);
        v = _mm_unpacklo_epi8(v, v);  // each byte to the top of a 32-bit lane,
        v = _mm_unpacklo_epi16(v, v);
        return B(_mm_cvtepi32_ps(_mm_srai_epi32(v, 24)));  // then shifted down with its sign
    }
#endif
#if defined(__ARM_NEON)
    if constexpr (B::size == 4) {
        int32_t four;
        memcpy(&four, p, sizeof four);
        const int16x8_t wide = vmovl_s8(vreinterpret_s8_s32(vdup_n_s32(four)));
        return B(vcvtq_f32_s32(vmovl_s16(vget_low_s16(wide))));
    }
#endif
    return widen_lanes<B>(p);
}

// B::size binary16 weights: F16C / AVX-512 conversion, AArch64's fcvtl;
// SSE2 and 32-bit NEON (whose fp16 conversion is an optional extension)
// widen lane by lane.
template <class A>
xsimd::batch<float, A> widen_half(const uint16_t *p, const xsimd::batch<float, A> *) {
    using B = xsimd::batch<float, A>;
#if defined(__AVX512F__)
    if constexpr (B::size == 16)
        return B(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p))));
#endif
#if defined(__F16C__)
    if constexpr (B::size == 8)
        return B(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p))));
#endif
#if defined(__ARM_NEON) && defined(__aarch64__)
    if constexpr (B::size == 4) return B(vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))));
#endif
    return widen_lanes<B>(p);
}

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
