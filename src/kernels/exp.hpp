// exp(x) for float batches: a range-reduced polynomial, written once for any
// batch type (xsimd's or scalar_batch).
//
//   x = n ln2 + r, |r| <= ln2/2 (n = round(x / ln2), ln2 split in two parts
//   so n * ln2_hi is exact); exp(r) by a degree-6 polynomial (6 fma);
//   exp(x) = 2^n exp(r), 2^n from the exponent bits (AVX-512: vscalefps).
//
// Valid range and error (tests/test_kernels.cpp checks both against
// std::exp in double over every 127th float of the line, on every path):
//   x in [-87.33, 88.37]: at most 2 ULP (measured: 1.0 ULP where fma is one
//   instruction, AVX2 and AVX-512; 1.28 ULP on SSE2 and the plain C++ path);
//   x < -87.33 (exp(x) below FLT_MIN): exactly 0, denormals are flushed;
//   x > 88.37: +inf; NaN: NaN.
// exp_nonpositive, for softmax, differs only below -87.33 (see there).
#ifndef EDGEATTN_KERNELS_EXP_HPP
#define EDGEATTN_KERNELS_EXP_HPP

#include <stddef.h>

#include "compact.hpp"
#include "reduce.hpp"

namespace edgeattn {
namespace detail {
namespace {

constexpr float exp_flush_below = -87.33654475f;  // ln(FLT_MIN)
constexpr float exp_overflow_above = 88.37626266f; // ln(FLT_MAX)

// e^r * 2^n for |r| <= 0.3466 (ln2/2, and the top of exp's range): a
// degree-6 polynomial fitted for relative error (1.9e-9 on the interval;
// 0.86 ULP at most evaluated in float by Horner's rule with fma), scaled by
// times_pow2 (the exponent bits, or AVX-512's vscalefps). N batches step by
// step together, each result in r[i]: one batch's steps all wait on each
// other, and N side by side keep the FMA units busy (softmax's exponentials
// of 4096x128 scores: 80 -> 70 us with N = 4).
// The constants go in as floats (fma_plus, fma_broadcast): Helium takes
// them from core registers, where as vectors its 8 registers could not
// hold them and they were reloaded from the stack each step.
template <class B, size_t N>
EDGEATTN_HOT_INLINE void exp_of_reduced_each(B (&r)[N], const B (&n)[N]) {
    constexpr float c[] = {1.3838149607e-3f, 8.3748400211e-3f, 4.1668202728e-2f, 1.6666419804e-1f,
                           4.9999991059e-1f, 1.0f, 1.0f};
    B p[N];
#pragma GCC unroll 8
    for (size_t i = 0; i < N; ++i) p[i] = fma_plus(B(c[0]), r[i], c[1]);
#pragma GCC unroll 5
    for (size_t k = 2; k < sizeof c / sizeof c[0]; ++k)
#pragma GCC unroll 8
        for (size_t i = 0; i < N; ++i) p[i] = fma_plus(p[i], r[i], c[k]);
#pragma GCC unroll 8
    for (size_t i = 0; i < N; ++i) r[i] = times_pow2(p[i], n[i]);
}

template <class B>
B exp_of_reduced(const B &r, const B &n) {
    B each[1] = {r};
    const B n_each[1] = {n};
    exp_of_reduced_each(each, n_each);
    return each[0];
}

// x = n ln2 + r with n = round(x / ln2), ln2 split in two parts so that
// n * ln2_hi is exact.
template <class B>
B exp_reduction(const B &x, const B &n) {
    const B r = fma_broadcast(-0.693359375f, n, x);
    return fma_broadcast(2.12194440e-4f, n, r);  // minus n * ln2_lo
}

constexpr float log2e = 1.44269504088896341f;
// 1.5 * 2^23: adding it rounds a float of magnitude below 2^22 to a whole
// number and leaves that number in the low mantissa bits.
constexpr float exp_round_shift = 12582912.0f;

// exp of x already clamped to [exp_flush_below, exp_overflow_above] (or NaN).
template <class B>
B exp_of_clamped(const B &clamped) {
    // n <= 127 keeps 2^n a normal float; at the top of the range that leaves
    // r = 0.3465707 (88.376 - 127 ln2), just inside ln2/2 = 0.3465736, the
    // polynomial's interval.
    const B n = min(round_to_nearest(times_scalar(clamped, log2e)), B(127.0f));
    return exp_of_reduced(exp_reduction(clamped, n), n);
}

// The clamps keep NaN: max(c, x) and min(c, x) return x when x is NaN on
// every path (x86's maxps/minps return their second operand, NEON and
// scalar_batch propagate NaN), and NaN then flows through the arithmetic.
template <class B>
B exp_polynomial(const B &x) {
    const B clamped = min(B(exp_overflow_above), max(B(exp_flush_below), x));
    return select(x < B(exp_flush_below), B(0.0f),
                  select(x > B(exp_overflow_above), B(__builtin_inff()), exp_of_clamped(clamped)));
}

// exp for x <= 0, softmax's x - max: nothing can overflow, and below
// -87.33 it returns at most 2^-126 * 1.0 (about 1.2e-38) instead of 0, a
// weight no sum can see; two compares and blends cheaper per vector
// (1024x1024 softmax: 529 -> 300 us). Same ULP bound on [-87.33, 0].
// N batches side by side (exp_of_reduced_each), each result in x[i].
template <class B, size_t N>
EDGEATTN_HOT_INLINE void polynomial_exps_of_nonpositive(B (&x)[N]) {
    B n[N];
#pragma GCC unroll 8
    for (size_t i = 0; i < N; ++i) {
        // Clamped to [-87.33, 0] (NaN kept, as exp_polynomial's clamps): a
        // positive x only comes from a row whose maximum a NaN hid, and that
        // row's sum is NaN anyway; the clamp keeps n in [-126, 0].
        const B clamped = min(B(0.0f), max(B(exp_flush_below), x[i]));
        n[i] = round_to_nearest(times_scalar(clamped, log2e));
        x[i] = exp_reduction(clamped, n[i]);
    }
    exp_of_reduced_each(x, n);
}

// The polynomial on every batch type; exp_table.hpp's overload takes
// AVX-512 and AVX2 to the table-driven form.
template <class B, size_t N>
EDGEATTN_HOT_INLINE void nonpositive_exps(B (&x)[N], batch_tag<B>) {
    polynomial_exps_of_nonpositive(x);
}

template <class B, size_t N>
EDGEATTN_HOT_INLINE void exp_nonpositive_each(B (&x)[N]) {
    nonpositive_exps(x, batch_tag<B>());
}

template <class B>
EDGEATTN_HOT_INLINE B exp_nonpositive(const B &x) {
    B each[1] = {x};
    exp_nonpositive_each(each);
    return each[0];
}

template <class B>
void exp_array(const float *x, float *y, size_t n) {
    size_t i = 0;
    for (; i + B::size <= n; i += B::size) exp_polynomial(B::load_unaligned(x + i)).store_unaligned(y + i);
    if (i < n) store_partial(exp_polynomial(load_partial<B>(x + i, n - i, 0.0f)), y + i, n - i);
}

template <class B>
void exp_nonpositive_array(const float *x, float *y, size_t n) {
    size_t i = 0;
    for (; i + B::size <= n; i += B::size) exp_nonpositive(B::load_unaligned(x + i)).store_unaligned(y + i);
    if (i < n) store_partial(exp_nonpositive(load_partial<B>(x + i, n - i, 0.0f)), y + i, n - i);
}

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
