// One stored weight widened to fp32 (float, int8_t, uint16_t = binary16),
// and batches of them lane by lane: what every batch type can do, before a
// batch type's own faster widening (xsimd_batch.hpp) is looked for.
#ifndef EDGEATTN_KERNELS_WIDEN_HPP
#define EDGEATTN_KERNELS_WIDEN_HPP

#include <stddef.h>
#include <stdint.h>

#include "half.hpp"
#include "reduce.hpp"

namespace edgeattn {
namespace detail {
namespace {

inline float widen(float x) { return x; }
inline float widen(int8_t x) { return static_cast<float>(x); }
inline float widen(uint16_t h) { return half_to_float(h); }

// n < B::size weights, the other lanes 0: lane by lane, unless the batch
// type overloads this for its tag (Helium: predicated widening loads).
template <class B, class T>
B partial_weights(const T *p, size_t n, batch_tag<B>) {
    alignas(64) float lanes[B::size];
    for (size_t i = 0; i < B::size; ++i) lanes[i] = i < n ? widen(p[i]) : 0.0f;
    return B::load_unaligned(lanes);
}

// fp32 weights need no widening: the batch type's own partial load.
template <class B>
B partial_weights(const float *p, size_t n, batch_tag<B>) {
    return load_partial<B>(p, n, 0.0f);
}

template <class B, class T>
B load_weights_partial(const T *p, size_t n) {
    return partial_weights(p, n, batch_tag<B>());
}

// The generic widening, lane by lane, for batch types without a faster one.
template <class B, class T>
B widen_lanes(const T *p) {
    alignas(64) float lanes[B::size];
    for (size_t i = 0; i < B::size; ++i) lanes[i] = widen(p[i]);
    return B::load_unaligned(lanes);
}

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
