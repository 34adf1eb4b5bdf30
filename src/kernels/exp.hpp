// exp(x) for float batches: a range-reduced polynomial, written once for any
// batch type (xsimd's or scalar_batch).
//
//   x = n ln2 + r, |r| <= ln2/2 (n = round(x / ln2), ln2 split in two parts
//   so n * ln2_hi is exact); exp(r) = 1 + r + r^2 P(r) with Cephes' degree-5
//   minimax P; exp(x) = 2^n exp(r), 2^n built from the exponent bits.
//
// Valid range and error (tests/test_kernels.cpp checks both against
// std::exp in double over every 127th float of the line, on every path):
//   x in [-87.33, 88.37]: at most 2 ULP (1.25 ULP measured on every path);
//   x < -87.33 (exp(x) below FLT_MIN): exactly 0, denormals are flushed;
//   x > 88.37: +inf; NaN: NaN.
// exp_nonpositive, for softmax, differs only below -87.33 (see there).
#ifndef EDGEATTN_KERNELS_EXP_HPP
#define EDGEATTN_KERNELS_EXP_HPP

#include <stddef.h>

#include "reduce.hpp"

namespace edgeattn {
namespace detail {
namespace {

constexpr float exp_flush_below = -87.33654475f;  // ln(FLT_MIN)
constexpr float exp_overflow_above = 88.37626266f; // ln(FLT_MAX)

// exp of x already clamped to [exp_flush_below, exp_overflow_above] (or NaN).
template <class B>
B exp_of_clamped(const B &clamped) {
    const B log2e(1.44269504088896341f);
    // n <= 127 keeps 2^n a normal float; at the top of the range that leaves
    // r up to 0.35 instead of ln2/2 = 0.347, still inside P's accuracy.
    const B n = min(round_to_nearest(clamped * log2e), B(127.0f));
    B r = fma(n, B(-0.693359375f), clamped);  // n * ln2_hi is exact
    r = fma(n, B(2.12194440e-4f), r);        // minus n * ln2_lo
    B p(1.9875691500e-4f);
    p = fma(p, r, B(1.3981999507e-3f));
    p = fma(p, r, B(8.3334519073e-3f));
    p = fma(p, r, B(4.1665795894e-2f));
    p = fma(p, r, B(1.6666665459e-1f));
    p = fma(p, r, B(5.0000001201e-1f));
    const B e = fma(p, r * r, r + B(1.0f));
    return e * pow2n(n);  // n in [-126, 127]
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
template <class B>
B exp_nonpositive(const B &x) {
    return exp_of_clamped(max(B(exp_flush_below), x));
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
