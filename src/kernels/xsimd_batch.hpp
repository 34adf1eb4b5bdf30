// The few operations the kernels need beyond xsimd 8.1's API, spelled as
// scalar_batch spells them. Arch files include this before the kernels so
// the kernel templates find these overloads where they are defined.
#ifndef EDGEATTN_KERNELS_XSIMD_BATCH_HPP
#define EDGEATTN_KERNELS_XSIMD_BATCH_HPP

#include <stdint.h>

#include <string.h>

#include <xsimd/xsimd.hpp>

#include "compact.hpp"
#include "reduce.hpp"
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

// p * 2^n for whole n in [-126, 127]: AVX-512's vscalefps in one
// instruction, else a multiply by pow2n.
template <class A>
xsimd::batch<float, A> times_pow2(const xsimd::batch<float, A> &p, const xsimd::batch<float, A> &n) {
#if defined(__AVX512F__)
    if constexpr (xsimd::batch<float, A>::size == 16) return _mm512_scalef_ps(p, n);
#endif
    return p * pow2n(n);
}

// Lane i of swizzle(v, rotation<S>) is lane (i + S) mod size of v.
template <size_t Shift>
struct lane_rotation {
    static constexpr uint32_t get(size_t i, size_t n) { return static_cast<uint32_t>((i + Shift) % n); }
};

template <class A, size_t Shift>
EDGEATTN_HOT_INLINE xsimd::batch<float, A> max_over_rotations(const xsimd::batch<float, A> &v) {
    using lanes = xsimd::batch<uint32_t, A>;
    const xsimd::batch<float, A> m =
        xsimd::max(v, xsimd::swizzle(v, xsimd::make_batch_constant<lanes, lane_rotation<Shift>>()));
    if constexpr (Shift > 1)
        return max_over_rotations<A, Shift / 2>(m);
    else
        return m;
}

#if defined(__AVX__)
// The maximum of an AVX register's eight lanes, each step at half the width.
EDGEATTN_HOT_INLINE float max_of_eight_lanes(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, _MM_SHUFFLE(1, 1, 1, 1))));
}
#endif

// The maximum of the lanes in registers: no round trip through memory,
// whose store-to-load forwarding of one wide store to narrow loads the row
// softmax would wait on once per row. On AVX-512 and AVX each step takes
// the upper half down and works at half the width: on Zen 4 an operation
// on 512 bits holds its pipes twice as long as one on 256, and the
// pipelined softmax takes a row's maximum once a row (4096x128: 112 ->
// 107.5 us in the harness). A maximum is exact in any order, so the steps'
// order changes no result. Inlined whatever GCC's heuristics say: as a
// call (recursive, it was one) it made the pipelined softmax spill and
// reload its live registers once a row (the SysV ABI keeps no vector
// register across a call).
template <class A>
EDGEATTN_HOT_INLINE float horizontal_max(const xsimd::batch<float, A> &v) {
#if defined(__AVX512F__)
    if constexpr (xsimd::batch<float, A>::size == 16) {
        const __m512 m = v;
        return max_of_eight_lanes(_mm256_max_ps(_mm512_castps512_ps256(m),
                                                _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(m), 1))));
    }
#endif
#if defined(__AVX__)
    if constexpr (xsimd::batch<float, A>::size == 8) return max_of_eight_lanes(v);
#endif
    return max_over_rotations<A, xsimd::batch<float, A>::size / 2>(v).get(0);
}

// Partial loads and stores (reduce.hpp) as masked loads and stores:
// AVX-512's mask registers, AVX2's vmaskmovps (its load only: the masked
// store is microcoded on some AMD cores, so AVX2 stores go lane by lane);
// neither reads or writes past p + n, so a tail at the end of a mapping is
// safe. SSE2 and NEON keep the lane-by-lane forms.
template <class A>
xsimd::batch<float, A> partial_load(const float *p, size_t n, float fill,
                                    batch_tag<xsimd::batch<float, A>>) {
    using B = xsimd::batch<float, A>;
#if defined(__AVX512F__)
    if constexpr (B::size == 16)
        return B(_mm512_mask_loadu_ps(_mm512_set1_ps(fill), static_cast<__mmask16>((1u << n) - 1u), p));
#endif
#if defined(__AVX2__)
    if constexpr (B::size == 8) {
        const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        const __m256i inside = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), lane);
        return B(_mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, inside),
                                  _mm256_castsi256_ps(inside)));
    }
#endif
    return load_lanes<B>(p, n, fill);
}

// Keeps x in a register from here on. A vector loaded once and fed to
// several fused multiply-adds is otherwise folded by GCC into each of them
// as a memory operand: loaded once per use, so the load ports, not the
// multiply-adds, bound the loop. The empty asm changes no value.
template <class A>
inline void keep_in_register(xsimd::batch<float, A> &x) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    typename xsimd::batch<float, A>::register_type r = x;
#if defined(__AVX512F__)
    __asm__("" : "+v"(r));
#else
    __asm__("" : "+x"(r));
#endif
    x = xsimd::batch<float, A>(r);
#else
    (void)x;
#endif
}

#if defined(__AVX512F__)
// xsimd 8.1 has no AVX-512 fma of its own: its generic one is x * y + z,
// which GCC fuses or not depending on the code it is inlined into, so the
// same sum could round differently in two kernels (a row tile and a wide
// tile of the same columns). One fused instruction, always, as on AVX2.
inline xsimd::batch<float, xsimd::avx512f> fma(const xsimd::batch<float, xsimd::avx512f> &x,
                                               const xsimd::batch<float, xsimd::avx512f> &y,
                                               const xsimd::batch<float, xsimd::avx512f> &z) {
    return _mm512_fmadd_ps(x, y, z);
}

inline void partial_store(const xsimd::batch<float, xsimd::avx512f> &v, float *p, size_t n,
                          batch_tag<xsimd::batch<float, xsimd::avx512f>>) {
    _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1u), v);
}

// Lane i = v[i]'s lanes combined (added, or their maximum): a
// transpose-and-combine tree (30 shuffles, 15 combines) instead of 16
// separate reductions (~130 instructions). Each level halves the vectors:
// pairs of 32-bit lanes, of 64-bit lanes, then of 128-bit blocks twice,
// after which lane 4j + k holds v[4j + k]'s result.
template <class V, class Combine>
EDGEATTN_HOT_INLINE __m512 combine_lanes_512(const V *v, Combine combine) {  // V: a batch that converts to __m512
    __m512 pairs[8], quads[4], halves[2];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i)
        pairs[i] = combine(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]), _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
        const __m512d a = _mm512_castps_pd(pairs[2 * i]), b = _mm512_castps_pd(pairs[2 * i + 1]);
        quads[i] = combine(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)), _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
    }
#pragma GCC unroll 2
    for (int i = 0; i < 2; ++i)
        halves[i] = combine(_mm512_shuffle_f32x4(quads[2 * i], quads[2 * i + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                            _mm512_shuffle_f32x4(quads[2 * i], quads[2 * i + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    return combine(_mm512_shuffle_f32x4(halves[0], halves[1], _MM_SHUFFLE(2, 0, 2, 0)),
                   _mm512_shuffle_f32x4(halves[0], halves[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

inline xsimd::batch<float, xsimd::avx512f> sums_of_lanes(const xsimd::batch<float, xsimd::avx512f> *v,
                                                         batch_tag<xsimd::batch<float, xsimd::avx512f>>) {
    return combine_lanes_512(v, [](__m512 a, __m512 b) { return _mm512_add_ps(a, b); });
}

// One batch's sum in sums_of_lanes' order: lanes i and i + 2 of each
// 128-bit block, then neighbours, then blocks 0 + 1 and 2 + 3, then the
// halves (xsimd's hadd adds in another order and differs in the last bit
// for about a third of rows).
inline float horizontal_sum_of(const xsimd::batch<float, xsimd::avx512f> &v,
                               batch_tag<xsimd::batch<float, xsimd::avx512f>>) {
    __m512 s = _mm512_add_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm512_add_ps(s, _mm512_permute_ps(s, _MM_SHUFFLE(2, 3, 0, 1)));
    s = _mm512_add_ps(s, _mm512_shuffle_f32x4(s, s, _MM_SHUFFLE(2, 3, 0, 1)));
    // The halves' sum at half the width (horizontal_max says why); the
    // order is still the tree's.
    return _mm256_cvtss_f32(_mm256_add_ps(_mm512_castps512_ps256(s),
                                          _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1))));
}

inline xsimd::batch<float, xsimd::avx512f> maxima_of_lanes(const xsimd::batch<float, xsimd::avx512f> *v,
                                                           batch_tag<xsimd::batch<float, xsimd::avx512f>>) {
    return combine_lanes_512(v, [](__m512 a, __m512 b) { return _mm512_max_ps(a, b); });
}
#endif

#if defined(__AVX2__) && !defined(__AVX512F__)
// The same trees for 8 lanes.
template <class V, class Combine>
EDGEATTN_HOT_INLINE __m256 combine_lanes_256(const V *v, Combine combine) {
    __m256 pairs[4], quads[2];
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i)
        pairs[i] = combine(_mm256_unpacklo_ps(v[2 * i], v[2 * i + 1]), _mm256_unpackhi_ps(v[2 * i], v[2 * i + 1]));
#pragma GCC unroll 2
    for (int i = 0; i < 2; ++i) {
        const __m256d a = _mm256_castps_pd(pairs[2 * i]), b = _mm256_castps_pd(pairs[2 * i + 1]);
        quads[i] = combine(_mm256_castpd_ps(_mm256_unpacklo_pd(a, b)), _mm256_castpd_ps(_mm256_unpackhi_pd(a, b)));
    }
    return combine(_mm256_permute2f128_ps(quads[0], quads[1], 0x20), _mm256_permute2f128_ps(quads[0], quads[1], 0x31));
}

using avx2_batch_type = xsimd::batch<float, xsimd::fma3<xsimd::avx2>>;

inline avx2_batch_type sums_of_lanes(const avx2_batch_type *v, batch_tag<avx2_batch_type>) {
    return combine_lanes_256(v, [](__m256 a, __m256 b) { return _mm256_add_ps(a, b); });
}

// One batch's sum in sums_of_lanes' order (as the AVX-512 one above; xsimd's
// hadd pairs neighbours first).
inline float horizontal_sum_of(const avx2_batch_type &v, batch_tag<avx2_batch_type>) {
    __m256 s = _mm256_add_ps(v, _mm256_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm256_add_ps(s, _mm256_permute_ps(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtss_f32(_mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1)));  // halves, at half the width
}

inline avx2_batch_type maxima_of_lanes(const avx2_batch_type *v, batch_tag<avx2_batch_type>) {
    return combine_lanes_256(v, [](__m256 a, __m256 b) { return _mm256_max_ps(a, b); });
}
#endif

// xsimd's vector tanh (additive attention's features): 1.2-1.3x faster
// than the exp polynomial's on AVX-512, AVX2 and SSE2 (Zen 4, additive
// 4x32x128 h64).
template <class A>
xsimd::batch<float, A> feature_tanh(const xsimd::batch<float, A> &x, batch_tag<xsimd::batch<float, A>>) {
    return xsimd::tanh(x);
}

// B::size int8 weights widened in registers (weight_load.hpp): sign-extend
// to int32, convert. The batch width tells the path apart (16: AVX-512,
// 8: AVX2, 4: SSE2 or NEON); each file is compiled with its own flags.
template <class A>
xsimd::batch<float, A> widen_int8(const int8_t *p, batch_tag<xsimd::batch<float, A>>) {
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
xsimd::batch<float, A> widen_half(const uint16_t *p, batch_tag<xsimd::batch<float, A>>) {
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

// x rounded to binary16 (float_to_half_ieee's bits: nearest even, beyond
// +-65504 +-inf, NaN quiet with its upper payload) into h[0, B::size):
// F16C / AVX-512 / AArch64 conversion. False where the path has none (SSE2,
// 32-bit NEON): the caller rounds lane by lane.
template <class A>
bool narrow_half(const xsimd::batch<float, A> &x, uint16_t *h) {
    constexpr size_t lanes = xsimd::batch<float, A>::size;
#if defined(__AVX512F__)
    if constexpr (lanes == 16) {
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(h),
                            _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        return true;
    }
#endif
#if defined(__F16C__)
    if constexpr (lanes == 8) {
        _mm_storeu_si128(reinterpret_cast<__m128i *>(h), _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
        return true;
    }
#endif
#if defined(__ARM_NEON) && defined(__aarch64__)
    if constexpr (lanes == 4) {
        vst1_u16(h, vreinterpret_u16_f16(vcvt_f16_f32(x)));
        return true;
    }
#endif
    (void)x, (void)h, (void)lanes;
    return false;
}

}  // namespace
}  // namespace detail
}  // namespace edgeattn

// Last: exp.hpp's templates look up the helpers above where they are
// defined.
#include "exp_table.hpp"  // IWYU pragma: export

#endif
