// exp(x) for x <= 0 (softmax's x - max) from a table of 2^(j/T), for batch
// types that can permute their own lanes by index in one instruction: T =
// 32 on AVX-512 (two registers, vpermt2ps), 8 on AVX2 (vpermps). exp.hpp's
// polynomial needs degree 6 for |r| <= ln2/2; with the table, |r| <=
// ln2/(2T), and degree 2 (T = 32) or 4 (T = 8) is enough, the lookup runs
// beside the FMA units and the power of two is an integer add.
//
//   x = (T m + j) ln2/T + r (the whole number n = T m + j rounded from
//   x T/ln2 by adding 1.5 * 2^23, which leaves n in the low mantissa bits);
//   exp(x) = 2^m * 2^(j/T) * e^r, 2^m 2^(j/T) as one integer add (below),
//   and e^r = 1 + q(r): for T = 8 degree 3 (2.6e-8, see exp_table8_c2),
//   for T = 32 degree 2 with Chebyshev-economised coefficients (5.3e-8, see
//   exp_table_c1), so exp(x) = t + t q(r) with t = 2^m 2^(j/T): rounded
//   once at the end, plus the table's own rounding. Measured
//   (tests/test_kernels.cpp, the float line of [-87.33, 0] at relative
//   steps of 1e-5, against std::exp in double): 1.73 ULP at most for T = 32
//   (degree 3 on 16 entries: 1.06), 1.14 for T = 8 (0.90 with Taylor's
//   degree 4); the test's bound is 2. The degree-2 form takes one FMA of the seven on the FMA
//   pipes off each batch (Zen 4, softmax 4096x128: 116 -> 112 us).
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

// 2^(j/32) for j = 0..31, each rounded to the nearest float (checked
// against 60-digit values); T = 8 takes every fourth.
constexpr float exp2_thirty_seconds[32] = {
    0x1.000000p+0f, 0x1.059b0ep+0f, 0x1.0b5586p+0f, 0x1.11301ep+0f, 0x1.172b84p+0f, 0x1.1d4874p+0f, 0x1.2387a6p+0f,
    0x1.29e9e0p+0f, 0x1.306fe0p+0f, 0x1.371a74p+0f, 0x1.3dea64p+0f, 0x1.44e086p+0f, 0x1.4bfdaep+0f, 0x1.5342b6p+0f,
    0x1.5ab07ep+0f, 0x1.6247ecp+0f, 0x1.6a09e6p+0f, 0x1.71f75ep+0f, 0x1.7a1148p+0f, 0x1.82589ap+0f, 0x1.8ace54p+0f,
    0x1.93737cp+0f, 0x1.9c4918p+0f, 0x1.a5503cp+0f, 0x1.ae89fap+0f, 0x1.b7f770p+0f, 0x1.c199bep+0f, 0x1.cb720ep+0f,
    0x1.d5818ep+0f, 0x1.dfc974p+0f, 0x1.ea4afap+0f, 0x1.f50766p+0f};

constexpr int exp_table_index_bits(size_t T) { return T == 32 ? 5 : 3; }

// Entry j of the table: the bits of 2^(j/T) (T = 32 or 8) less j moved
// up to where n's shift (table_exps_of_nonpositive) leaves it, so that
// adding that shifted n gives 2^(j/T) 2^m with no mask in between:
//   (n << (23 - index_bits)) mod 2^32 = (m << 23) + (j << (23 - index_bits)),
// where the word holds n in its low mantissa bits (n = T m + j, 0 <= j < T).
template <size_t T>
constexpr int32_t exp2_fraction_entry(size_t j) {
    static_assert(T == 32 || T == 8, "a table of 32 or 8 entries");
    return __builtin_bit_cast(int32_t, exp2_thirty_seconds[j * (32 / T)]) -
           static_cast<int32_t>(j << (23 - exp_table_index_bits(T)));
}

// The table's size for batch type A: two registers of 16 (AVX-512's
// two-source vpermt2ps), one of 8 (AVX2's vpermps), 0 where no instruction
// permutes lanes by index (SSE2, NEON: exp.hpp's polynomial instead).
template <class A>
constexpr size_t exp_table_size() {
#if defined(__AVX512F__)
    if (xsimd::batch<float, A>::size == 16) return 32;
#endif
#if defined(__AVX2__)
    if (xsimd::batch<float, A>::size == 8) return 8;
#endif
    return 0;
}

template <class A>
constexpr bool has_exp_table() {
    return exp_table_size<A>() != 0;
}

// The table's entries `first`, first + 1, ... as one register.
template <class A, size_t T, size_t first, size_t... J>
xsimd::batch<float, A> exp2_fraction_entries(std::index_sequence<J...>) {
    alignas(64) static constexpr int32_t entries[] = {exp2_fraction_entry<T>(first + J)...};
    return xsimd::bitwise_cast<xsimd::batch<float, A>>(xsimd::batch<int32_t, A>::load_aligned(entries));
}

// The table in registers, and entry (index mod T) for each lane.
template <class A>
struct exp2_fraction_table {
    using B = xsimd::batch<float, A>;
    static constexpr size_t T = exp_table_size<A>(), registers = T / B::size;
    B part[registers];

    exp2_fraction_table() {
        part[0] = exp2_fraction_entries<A, T, 0>(std::make_index_sequence<B::size>());
        if constexpr (registers == 2) part[1] = exp2_fraction_entries<A, T, B::size>(std::make_index_sequence<B::size>());
    }

    EDGEATTN_HOT_INLINE B lookup(const xsimd::batch<int32_t, A> &index) const {
#if defined(__AVX512F__)
        if constexpr (B::size == 16) return _mm512_permutex2var_ps(part[0], index, part[1]);
#endif
#if defined(__AVX2__)
        if constexpr (B::size == 8) return _mm256_permutevar8x32_ps(part[0], index);
#endif
        return part[0];  // not reached: has_exp_table() is false elsewhere
    }
};

// e^r - 1 ~ r (c1 + c2 r) for |r| <= ln2/64 (T = 32): Taylor's r^3/6 and
// r^4/24 folded into the lower terms as Chebyshev's economisation does
// (r^3 ~ (3/4) h^2 r, r^4 ~ h^2 r^2 on [-h, h], h = ln2/64), which leaves
// h^3/24 = 5.3e-8 of truncation instead of Taylor's h^3/6.
constexpr float exp_table_c1 = 1.0000146622f, exp_table_c2 = 0.50000488742f;

// e^r - 1 ~ r (1 + c2 r + c3 r^2) for |r| <= ln2/16 (T = 8): degree 3, its
// r^2 coefficient tuned for the least largest relative error over the
// interval (2.6e-8, against Taylor's degree 3 at 1.5e-7), where Taylor's
// degree 4 took one FMA more a batch (1.3e-9).
constexpr float exp_table8_c2 = 0.50006473064f, exp_table8_c3 = 1.0f / 6.0f;

// exp(x) 2^(-k/T) for the lanes of x, in place, with every lane first
// raised to at least `lowest` (which keeps NaN), for a whole number k given
// as round_shift_less_k = exp_round_shift - k. With k = 0 and lowest =
// -87.33 this is exp of x <= 0 (table_exps_of_nonpositive). The pipelined
// softmax passes a row's scores unshifted with k = its maximum m times T/ln2,
// rounded, and lowest = m - 87.33: it skips the subtraction x - m (one
// instruction of ~20 a batch), and the row's exponentials all carry the
// same factor 2^(-k/T) = e^(-m) e^(delta), |delta| <= ln2/(2T), which the
// normalisation divides out (softmax_pipeline says when it applies).
//
// The whole number n = round(x T/ln2) lands in the rounded word as n - k,
// so the table index j and the power m' of 2^(-k/T) 2^(n/T) = 2^m' 2^(j/T)
// come from the word while r = x - n ln2/T is reduced from x itself:
// n ln2_hi/T is exact while |n| * 355 < 2^24 (ln2_hi = 355/512), so for
// |x| < 2^24 ln2 / (355 T) (1023 for T = 32); the lower part's
// representation error adds |n ln2_lo/T| 2^-24, under 0.3 ULP there.
template <class A, size_t N>
EDGEATTN_HOT_INLINE void table_exps_scaled(xsimd::batch<float, A> (&x)[N], const xsimd::batch<float, A> &lowest,
                                           const xsimd::batch<float, A> &round_shift_less_k) {
    using B = xsimd::batch<float, A>;
    using ints = xsimd::batch<int32_t, A>;
    constexpr size_t T = exp_table_size<A>();
    constexpr int index_bits = exp_table_index_bits(T);
    const exp2_fraction_table<A> table;
    B r[N], t[N];
#pragma GCC unroll 8
    for (size_t i = 0; i < N; ++i) {
        const B clamped = max(lowest, x[i]);
        const B shifted = fma(clamped, B(static_cast<float>(T) * log2e), round_shift_less_k);
        const B n = shifted - round_shift_less_k;
        r[i] = fma(n, B(-0.693359375f / static_cast<float>(T)), clamped);  // ln2_hi/T: n * it is exact
        r[i] = fma(n, B(2.12194440e-4f / static_cast<float>(T)), r[i]);   // minus n * ln2_lo/T
        const ints bits = xsimd::bitwise_cast<ints>(shifted);
        // n - k moved up so that m' = floor((n - k) / T) lands in the
        // exponent field (the round shift's own bits leave the word); its
        // index bits j land below it, and the table entry has them
        // subtracted already (exp2_fraction_entry): no mask (Zen 4: 8.6 ->
        // 7.95 cycles a batch).
        const ints shifted_n = bits << (23 - index_bits);
        t[i] = xsimd::bitwise_cast<B>(xsimd::bitwise_cast<ints>(table.lookup(bits)) + shifted_n);
    }
#pragma GCC unroll 8
    for (size_t i = 0; i < N; ++i) {
        B q;  // e^r - 1
        if constexpr (T == 32)
            q = fma(B(exp_table_c2), r[i], B(exp_table_c1)) * r[i];
        else
            q = fma(fma(B(exp_table8_c3), r[i], B(exp_table8_c2)), r[i], B(1.0f)) * r[i];
        x[i] = fma(t[i], q, t[i]);
    }
}

template <class A, size_t N>
EDGEATTN_HOT_INLINE void table_exps_of_nonpositive(xsimd::batch<float, A> (&x)[N]) {
    using B = xsimd::batch<float, A>;
    table_exps_scaled(x, B(exp_flush_below), B(exp_round_shift));
}

// What the pipelined softmax (softmax.hpp, row_exponentials) asks of
// table_exps_scaled, reached through the batch tag so that the paths
// without a table need not define them: whether a row whose maximum is m
// keeps the reduction exact (its scores lie in [m - 87.33, m] after the
// floor, and |x| < 2^24 ln2 / (355 T) keeps n ln2_hi/T exact: |m| <= 936
// for T = 32, 4006 for T = 8), and the k of that row (m T/ln2, rounded).
template <class A>
bool scaled_exps_exact_for(float m, batch_tag<xsimd::batch<float, A>>) {
    constexpr float exact_below = 16777216.0f / 355.0f * 0.693147181f / static_cast<float>(exp_table_size<A>());
    return __builtin_fabsf(m) <= exact_below + exp_flush_below;
}

template <class A>
float scaled_exps_power(float m, batch_tag<xsimd::batch<float, A>>) {
    return __builtin_nearbyintf(m * (static_cast<float>(exp_table_size<A>()) * log2e));
}

template <class A, size_t N>
EDGEATTN_HOT_INLINE void scaled_exps(xsimd::batch<float, A> (&x)[N], const xsimd::batch<float, A> &lowest,
                                     const xsimd::batch<float, A> &round_shift_less_k,
                                     batch_tag<xsimd::batch<float, A>>) {
    table_exps_scaled(x, lowest, round_shift_less_k);
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
