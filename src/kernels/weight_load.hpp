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

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
