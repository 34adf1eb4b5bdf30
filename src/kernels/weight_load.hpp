// Weights widened to fp32 as the kernels load them: float as it is, int8_t
// (times a per-output-channel scale applied after the sums) and uint16_t
// holding IEEE binary16. The widening happens in registers; nothing is
// written back. load_weights<B>(p) loads B::size of them; the batch types
// provide widen_int8 / widen_half (scalar_batch.hpp, xsimd_batch.hpp).
#ifndef EDGEATTN_KERNELS_WEIGHT_LOAD_HPP
#define EDGEATTN_KERNELS_WEIGHT_LOAD_HPP

#include <stddef.h>
#include <stdint.h>

#include "reduce.hpp"
#include "widen.hpp"

namespace edgeattn {
namespace detail {
namespace {

template <class B>
B load_weights(const float *p) {
    return B::load_unaligned(p);
}
template <class B>
B load_weights(const int8_t *p) {
    return widen_int8(p, batch_tag<B>());
}
template <class B>
B load_weights(const uint16_t *p) {
    return widen_half(p, batch_tag<B>());
}

// x = the n binary16 values h, widened (exactly, as half_to_float): a
// call's fp16 tensors into their fp32 copies, a batch at a time where the
// path widens in registers (F16C on AVX2 / AVX-512: the scalar loop took
// as long as the attention of an 8 x 128 x 128 x 64 call).
// B::size weights from p, p then past them: a batch type whose loads can
// step their own pointer (Helium's writeback addressing) overloads
// load_and_step for its tag; this is every other's.
template <class B, class T>
EDGEATTN_WRAPPER B load_and_step(const T *&p, batch_tag<B>) {
    const B v = load_weights<B>(p);
    p += B::size;
    return v;
}
template <class B, class T>
EDGEATTN_WRAPPER B load_weights_and_step(const T *&p) {
    return load_and_step(p, batch_tag<B>());
}

template <class B>
void widen_half_array(const uint16_t *h, size_t n, float *x) {
    size_t i = 0;
    for (; i + B::size <= n; i += B::size) load_weights<B>(h + i).store_unaligned(x + i);
    if (i < n) store_partial(load_weights_partial<B>(h + i, n - i), x + i, n - i);
}

// h = the n floats x rounded to binary16 (float_to_half_ieee's bits), a
// batch at a time where the path converts in registers: a call's fp16
// outputs and a cache's fp16 rows (the scalar loop took a quarter of an
// 8 x 128 x 128 x 64 call with fp16 tensors).
template <class B>
void round_half_array(const float *x, size_t n, uint16_t *h) {
    size_t i = 0;
    for (; i + B::size <= n; i += B::size)
        if (!narrow_half(B::load_unaligned(x + i), h + i)) break;
    for (; i < n; ++i) h[i] = float_to_half_ieee(x[i]);
}

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
