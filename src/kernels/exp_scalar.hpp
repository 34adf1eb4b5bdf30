// Softmax's exp for x <= 0 (exp.hpp's exp_nonpositive) on the plain C++
// path: the same polynomial, reduction and power of two, with one clamp.
//
// exp.hpp's form clamps x to [-87.33, 0] with two selects. On the
// Cortex-M4F (no floating-point min or max) GCC made each a compare and a
// branch, and, seeing that a clamped x makes the whole exp a constant,
// moved the exp itself out of line behind them, reloading its ten
// constants from the literal pool for each one: ~40 instructions an exp.
// Here the lower clamp is a select the compiler cannot see through (a
// conditional move), and the upper one is left out: x - max is above 0
// only in a row whose maximum a NaN hid, and that row's sum, and so every
// weight of it, is NaN whatever its exponentials are (a positive x up to
// 88.37 gets its exp; beyond, a meaningless value, as exp_table.hpp's
// form gives; integer arithmetic on the bits, so nothing undefined). Below
// -87.33 and for NaN, as exp.hpp's: at most 2^-126 * 1.0, and NaN.
#ifndef EDGEATTN_KERNELS_EXP_SCALAR_HPP
#define EDGEATTN_KERNELS_EXP_SCALAR_HPP

#include <stddef.h>

#include "exp.hpp"
#include "scalar_batch.hpp"

namespace edgeattn {
namespace detail {
namespace {

// v, hidden from the optimiser (no code): what it computes from v cannot
// be specialised for the values a select may give it.
inline void opaque_float(float &v) {
#if defined(__arm__) && defined(__ARM_FP) && (defined(__GNUC__) || defined(__clang__))
    __asm__("" : "+t"(v));
#else
    (void)v;
#endif
}

// The exponentials of N batches side by side.
template <size_t N>
EDGEATTN_HOT_INLINE void scalar_nonpositive_exps(scalar_batch (&x)[N]) {
    scalar_batch n[N];
#pragma GCC unroll 8
    for (size_t i = 0; i < N; ++i) {
        float v = x[i].value;
        v = v < exp_flush_below ? exp_flush_below : v;  // NaN kept
        opaque_float(v);
        n[i] = round_to_nearest(times_scalar(scalar_batch(v), log2e));
        x[i] = exp_reduction(scalar_batch(v), n[i]);
    }
    exp_of_reduced_each(x, n);
}

// One exponential as one function, its helpers inlined into it (built for
// size, GCC called exp_of_reduced_each from here, both taking their
// arrays through the stack: softmax 10x100 74 -> 57 instructions an element
// on the Cortex-M4F -Os).
__attribute__((noinline, flatten)) inline float scalar_nonpositive_exp(float v) {
    scalar_batch x[1] = {v};
    scalar_nonpositive_exps(x);
    return x[0].value;
}

// exp.hpp's nonpositive_exps for the plain C++ path (more specialised than
// its template, so overload resolution picks this one): built for size, a
// call an exponential.
template <size_t N>
EDGEATTN_HOT_INLINE void nonpositive_exps(scalar_batch (&x)[N], batch_tag<scalar_batch>) {
    if constexpr (compact_kernels<scalar_batch>()) {
        for (size_t i = 0; i < N; ++i) x[i] = scalar_nonpositive_exp(x[i].value);
    } else {
        scalar_nonpositive_exps(x);
    }
}

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
