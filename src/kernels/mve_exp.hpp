// exp.hpp's exponentials of x <= 0 (softmax's x - max) on Helium: the same
// clamps, reduction and polynomial, operation for operation (the same bits
// as exp.hpp's template on mve_batch), with the constants as scalar
// operands (VFMA/VFMAS and VCMP with a core register, VMUL by one): as
// vectors, GCC kept the polynomial's seven in Q registers it does not have
// (eight in all) and reloaded them from the stack each step.
#ifndef EDGEATTN_KERNELS_MVE_EXP_HPP
#define EDGEATTN_KERNELS_MVE_EXP_HPP

#include "exp.hpp"
#include "mve_batch.hpp"

namespace edgeattn {
namespace detail {
namespace {

template <size_t N>
EDGEATTN_HOT_INLINE void nonpositive_exps(mve_batch (&x)[N], batch_tag<mve_batch>) {
    float32x4_t r[N], n[N], p[N];
#pragma GCC unroll 4
    for (size_t i = 0; i < N; ++i) {
        // Clamped to [-87.33, 0], NaN kept (exp.hpp's min(0, max(-87.33, x))).
        float32x4_t v = x[i].value;
        // (flush > v, not v < flush: LT holds for NaN on Helium.)
        const float32x4_t flush = vdupq_n_f32(exp_flush_below);
        v = vpselq_f32(flush, v, vcmpgtq_f32(flush, v));
        v = vpselq_f32(vdupq_n_f32(0.0f), v, vcmpgtq_n_f32(v, 0.0f));
        n[i] = vrndnq_f32(vmulq_n_f32(v, log2e));
        r[i] = vfmaq_n_f32(vfmaq_n_f32(v, n[i], ln2_hi_negated), n[i], ln2_lo);
    }
#pragma GCC unroll 4
    for (size_t i = 0; i < N; ++i) p[i] = vfmasq_n_f32(vdupq_n_f32(exp_coefficients[0]), r[i], exp_coefficients[1]);
#pragma GCC unroll 6
    for (size_t k = 2; k <= exp_degree; ++k)
#pragma GCC unroll 4
        for (size_t i = 0; i < N; ++i) p[i] = vfmasq_n_f32(p[i], r[i], exp_coefficients[k]);
#pragma GCC unroll 4
    for (size_t i = 0; i < N; ++i) x[i] = times_pow2(mve_batch(p[i]), mve_batch(n[i]));
}

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
