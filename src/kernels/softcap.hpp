// The logit softcap of Gemma 2 and ONNX Attention, y = c tanh(x / c), for
// any batch type, with tanh made of exp.hpp's polynomial (no libm tanhf: a
// Cortex-M image that caps its scores links no more than the exp it has).
//
//   |x| > 0.4: tanh|x| = (1 - e) / (1 + e), e = exp(-2 min(|x|, 9)) (from
//   9 on, tanh rounds to 1 in float); 1 - e >= 0.55 there, so the
//   subtraction costs at most a few ULP;
//   |x| <= 0.4: the Taylor series x - x^3/3 + ... + 21844/6081075 x^13
//   (the next term is below 4e-9 of tanh at 0.4), where 1 - e would cancel.
// Error (tests/test_kernels.cpp, against std::tanh in double over every
// 127th float, every path): at most 5 ULP for tanh, 7 for c tanh(x / c)
// (the division and product adding theirs). Measured: 2.25 and 3.34 ULP
// (c = 30) on every x86 path (Zen 4); on NEON, whose division is xsimd's
// refined reciprocal estimate, 3.61 and 5.22 (aarch64) and 3.85 and 5.22
// (ARMv7), both under qemu. NaN stays NaN, +-inf gives +-1 (so an
// infinite score caps to +-c).
#ifndef EDGEATTN_KERNELS_SOFTCAP_HPP
#define EDGEATTN_KERNELS_SOFTCAP_HPP

#include <stddef.h>

#include "exp.hpp"
#include "reduce.hpp"

namespace edgeattn {
namespace detail {
namespace {

template <class B>
B tanh_of_exp(const B &x) {
    const B zero(0.0f), t = max(x, zero - x);
    if constexpr (B::size == 1) {
        // One lane (the plain C++ path): only the branch the select below
        // would keep, the same operations (half the instructions).
        if (t > B(0.4f)) {
            const B e = exp_polynomial(B(-2.0f) * min(t, B(9.0f)));
            const B large = (B(1.0f) - e) / (B(1.0f) + e);
            return x < zero ? zero - large : large;
        }
    }
    const B x2 = x * x;
    B p(3.5921280366e-03f);
    p = fma(p, x2, B(-8.8632355299e-03f));
    p = fma(p, x2, B(2.1869488536e-02f));
    p = fma(p, x2, B(-5.3968253968e-02f));
    p = fma(p, x2, B(1.3333333333e-01f));
    p = fma(p, x2, B(-3.3333333333e-01f));
    const B small = fma(p * x2, x, x);
    const B e = exp_polynomial(B(-2.0f) * min(t, B(9.0f)));  // exp's own clamps: one copy of it in an image
    const B large = (B(1.0f) - e) / (B(1.0f) + e);
    // NaN fails both compares and takes `small`, which is NaN.
    return select(t > B(0.4f), select(x < zero, zero - large, large), small);
}

// x[i] = c tanh(x[i] / c), n floats, c finite and > 0.
template <class B>
void softcap_array(float *x, size_t n, float c) {
    const B cap(c);
    size_t i = 0;
    for (; i + B::size <= n; i += B::size)
        (cap * tanh_of_exp(B::load_unaligned(x + i) / cap)).store_unaligned(x + i);
    if (i < n) store_partial(cap * tanh_of_exp(load_partial<B>(x + i, n - i, 0.0f) / cap), x + i, n - i);
}

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
