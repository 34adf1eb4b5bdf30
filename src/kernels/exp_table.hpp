// exp(x) for x <= 0 (softmax's x - max) from a table of 2^(j/T), T = the
// batch's lane count, for batch types that can permute their own lanes by
// index in one instruction (AVX-512's and AVX2's vpermps: permute_lanes
// below). exp.hpp's polynomial needs degree 6 for |r| <= ln2/2; with the
// table, |r| <= ln2/(2T) and degree 3 (T = 16) or 4 (T = 8) reach the same
// accuracy, the table lookup runs beside the FMA units and the power of two
// is an integer add: 7 of 14 instructions on the FMA units instead of 10
// (softmax's exponentials of 4096x128 scores: 75 -> 62 us on AVX-512).
//
//   x = (T m + j) ln2/T + r (the whole number n = T m + j rounded from
//   x T/ln2 by adding 1.5 * 2^23, which leaves n in the low mantissa bits);
//   exp(x) = 2^m * 2^(j/T) * e^r, 2^m 2^(j/T) as one integer add (below),
//   and e^r = 1 + r q(r) by Taylor's
//   coefficients (their truncation error, 9e-9 for T = 16 and 1.3e-9 for
//   T = 8, is far below a float's 6e-8), so exp(x) = t + t * r q(r) with
//   t = 2^m 2^(j/T): rounded once at the end, plus the table's own rounding.
//   Measured (tests/test_kernels.cpp, the float line of [-87.33, 0] at
//   relative steps of 1e-5, against std::exp in double): 1.06 ULP at most
//   for T = 16, 0.90 for T = 8; the test's bound is 2.
//
// Below -87.33, as exp.hpp's exp_nonpositive: at most 2^-126 * 1.0; NaN
// stays NaN (the clamp keeps it, and it flows through the arithmetic). A
// positive x, which only a row whose maximum a NaN hid can give, gets a
// meaningless finite value (no undefined conversion: integer arithmetic on
// lanes), and that row's sum is NaN anyway.
#ifndef EDGEATTN_KERNELS_EXP_TABLE_HPP
#define EDGEATTN_KERNELS_EXP_TABLE_HPP

#include <stddef.h>
#include <stdint.h>

#include <utility>

#include <xsimd/xsimd.hpp>

#include "exp.hpp"

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace edgeattn {
namespace detail {
namespace {

// 2^(j/16) for j = 0..15, rounded to float; T = 8 takes every other one.
constexpr float exp2_sixteenths[16] = {1.0f,        1.04427378f, 1.09050773f, 1.13878863f, 1.18920712f, 1.24185781f,
                                       1.29683955f, 1.35425555f, 1.41421356f, 1.47682615f, 1.54221083f, 1.61049033f,
                                       1.68179283f, 1.75625216f, 1.83400809f, 1.91520656f};

constexpr int exp_table_index_bits(size_t T) { return T == 16 ? 4 : 3; }

// Entry j of the table: the bits of 2^(j/T) (T = 16 or 8) less j moved up
// to where n's shift (table_exps_of_nonpositive) leaves it, so that adding
// that shifted n gives 2^(j/T) 2^m with no mask in between:
//   (n << (23 - index_bits)) mod 2^32 = (m << 23) + (j << (23 - index_bits)),
// where the word holds n in its low mantissa bits (n = T m + j, 0 <= j < T).
template <size_t T>
constexpr int32_t exp2_fraction_entry(size_t j) {
    static_assert(T == 16 || T == 8, "a table of 16 or 8 entries");
    return __builtin_bit_cast(int32_t, exp2_sixteenths[j * (16 / T)]) -
           static_cast<int32_t>(j << (23 - exp_table_index_bits(T)));
}

template <class A, size_t... J>
xsimd::batch<float, A> exp2_fraction_entries(std::index_sequence<J...>) {
    alignas(64) static constexpr int32_t table[] = {exp2_fraction_entry<sizeof...(J)>(J)...};
    return xsimd::bitwise_cast<xsimd::batch<float, A>>(xsimd::batch<int32_t, A>::load_aligned(table));
}

// Lane i of the result is lane (index[i] mod size) of v (vpermps).
template <class A>
xsimd::batch<float, A> permute_lanes(const xsimd::batch<float, A> &v, const xsimd::batch<int32_t, A> &index) {
#if defined(__AVX512F__)
    if constexpr (xsimd::batch<float, A>::size == 16) return _mm512_permutexvar_ps(index, v);
#endif
#if defined(__AVX2__)
    if constexpr (xsimd::batch<float, A>::size == 8) return _mm256_permutevar8x32_ps(v, index);
#endif
    return v;  // not reached: table_exps_of_nonpositive is for the two above
}

template <class A>
constexpr bool has_exp_table() {
#if defined(__AVX512F__)
    if (xsimd::batch<float, A>::size == 16) return true;
#endif
#if defined(__AVX2__)
    if (xsimd::batch<float, A>::size == 8) return true;
#endif
    return false;
}

template <class A, size_t N>
EDGEATTN_HOT_INLINE void table_exps_of_nonpositive(xsimd::batch<float, A> (&x)[N]) {
    using B = xsimd::batch<float, A>;
    using ints = xsimd::batch<int32_t, A>;
    constexpr size_t T = B::size;
    constexpr int index_bits = exp_table_index_bits(T);
    constexpr float round_shift = 12582912.0f;  // 1.5 * 2^23
    const B table = exp2_fraction_entries<A>(std::make_index_sequence<T>());
    B r[N], t[N];
#pragma GCC unroll 8
    for (size_t i = 0; i < N; ++i) {
        const B clamped = max(B(exp_flush_below), x[i]);
        const B shifted = fma(clamped, B(static_cast<float>(T) * log2e), B(round_shift));
        const B n = shifted - B(round_shift);
        r[i] = fma(n, B(-0.693359375f / static_cast<float>(T)), clamped);  // ln2_hi/T: n * it is exact
        r[i] = fma(n, B(2.12194440e-4f / static_cast<float>(T)), r[i]);   // minus n * ln2_lo/T
        const ints bits = xsimd::bitwise_cast<ints>(shifted);
        // n moved up so that m = floor(n / T) lands in the exponent field
        // (the round shift's own bits leave the word); its index bits j land
        // below it, and the table entry has them subtracted already
        // (exp2_fraction_entry): no mask (Zen 4: 8.6 -> 7.95 cycles a batch).
        const ints shifted_n = bits << (23 - index_bits);
        t[i] = xsimd::bitwise_cast<B>(xsimd::bitwise_cast<ints>(permute_lanes(table, bits)) + shifted_n);
    }
#pragma GCC unroll 8
    for (size_t i = 0; i < N; ++i) {
        B q = T == 16 ? fma(B(1.0f / 6.0f), r[i], B(0.5f))
                      : fma(fma(B(1.0f / 24.0f), r[i], B(1.0f / 6.0f)), r[i], B(0.5f));
        q = fma(q, r[i], B(1.0f)) * r[i];
        x[i] = fma(t[i], q, t[i]);
    }
}

// exp.hpp's exp_nonpositive_each on xsimd's batches: the table where the
// lanes can be permuted in one instruction, the polynomial elsewhere (SSE2,
// NEON).
template <class A, size_t N>
EDGEATTN_HOT_INLINE void nonpositive_exps(xsimd::batch<float, A> (&x)[N], batch_tag<xsimd::batch<float, A>>) {
    if constexpr (has_exp_table<A>())
        table_exps_of_nonpositive(x);
    else
        polynomial_exps_of_nonpositive(x);
}

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
