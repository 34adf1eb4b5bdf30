// Horizontal reductions and partial loads/stores of a batch, lane by lane
// for any batch type; xsimd_batch.hpp has the faster forms of the x86 and
// Arm batches (masked loads, reductions in registers). Tails shorter than a
// batch are loaded into a whole batch, so every element takes the same
// vector code path (the same rounding) wherever it sits in a row.
#ifndef EDGEATTN_KERNELS_REDUCE_HPP
#define EDGEATTN_KERNELS_REDUCE_HPP

#include <stddef.h>

#include "compact.hpp"

namespace edgeattn {
namespace detail {
namespace {

// A tree of maxima (depth log2 of the width, not a chain of width - 1):
// the row softmax waits on this once per row, so its latency is per-row cost.
template <class B>
float horizontal_max(const B &v) {
    alignas(64) float lanes[B::size];
    v.store_unaligned(lanes);
    for (size_t half = B::size / 2; half >= 1; half /= 2)
        for (size_t i = 0; i < half; ++i) lanes[i] = lanes[i + half] > lanes[i] ? lanes[i + half] : lanes[i];
    return lanes[0];
}

template <class B>
float first_lane(const B &v) {
    alignas(64) float lanes[B::size];
    v.store_unaligned(lanes);
    return lanes[0];
}

// Tag for overloads by batch type: a batch type's own faster form
// (xsimd_batch.hpp, scalar_batch.hpp) wins over the lane-by-lane one here by
// overload resolution. A class in this namespace, so the kernels' calls find
// those overloads by argument-dependent lookup wherever they are declared.
template <class B>
struct batch_tag {};

// The vector registers a batch type's kernels may plan for (how many
// batches a loop keeps side by side); Helium's overload says 8.
template <class B>
constexpr size_t vector_registers(batch_tag<B>) {
    return 16;
}

// Whether a load's address may be a base plus an index register at no
// cost (x86, AArch64, the Cortex-M's scalar loads): the products' loops
// then index their rows; Helium's overload says no (its vector loads take
// an immediate offset or step their base).
template <class B>
constexpr bool indexed_addressing(batch_tag<B>) {
    return true;
}

// a * b + c with a float a in every lane: fma with a broadcast, unless the
// batch type has a form that takes the float itself (Helium's VFMA with a
// core register: no broadcast instruction, no vector register).
template <class B>
EDGEATTN_WRAPPER B fma_broadcast(float a, const B &b, const B &c) {
    return fma(B(a), b, c);
}

// a * c with a float c in every lane (Helium: VMUL with a core register,
// no vector register held for c), as fma_broadcast.
template <class B>
EDGEATTN_WRAPPER B times_scalar(const B &a, float c) {
    return a * B(c);
}

// a * b + c with a float c in every lane (Helium: VFMAS with a core
// register), as fma_broadcast.
template <class B>
EDGEATTN_WRAPPER B fma_plus(const B &a, const B &b, float c) {
    return fma(a, b, B(c));
}

// n <= B::size elements, the rest of the batch set to `fill`, lane by lane
// (what every batch type can do; also the fallback of xsimd_batch.hpp's).
template <class B>
B load_lanes(const float *p, size_t n, float fill) {
    alignas(64) float lanes[B::size];
    for (size_t i = 0; i < B::size; ++i) lanes[i] = i < n ? p[i] : fill;
    return B::load_unaligned(lanes);
}

template <class B>
B partial_load(const float *p, size_t n, float fill, batch_tag<B>) {
    return load_lanes<B>(p, n, fill);
}

template <class B>
void partial_store(const B &v, float *p, size_t n, batch_tag<B>) {
    alignas(64) float lanes[B::size];
    v.store_unaligned(lanes);
    for (size_t i = 0; i < n; ++i) p[i] = lanes[i];
}

template <class B>
B sums_of_lanes(const B *v, batch_tag<B>) {
    alignas(64) float sums[B::size];
    for (size_t i = 0; i < B::size; ++i) sums[i] = hadd(v[i]);
    return B::load_unaligned(sums);
}

template <class B>
B maxima_of_lanes(const B *v, batch_tag<B>) {
    alignas(64) float maxima[B::size];
    for (size_t i = 0; i < B::size; ++i) maxima[i] = horizontal_max(v[i]);
    return B::load_unaligned(maxima);
}

template <class B>
float horizontal_sum_of(const B &v, batch_tag<B>) {
    return hadd(v);
}

// The sum of v's lanes, with the bits lane_sums gives v's lane: a row's
// sum must not depend on whether it was reduced alone or in a group (and
// so on how a call's rows were cut into groups, or among threads).
template <class B>
EDGEATTN_WRAPPER float horizontal_sum(const B &v) {
    return horizontal_sum_of(v, batch_tag<B>());
}

// n <= B::size elements, the rest of the batch set to `fill`.
template <class B>
EDGEATTN_WRAPPER B load_partial(const float *p, size_t n, float fill) {
    return partial_load(p, n, fill, batch_tag<B>());
}

template <class B>
EDGEATTN_WRAPPER void store_partial(const B &v, float *p, size_t n) {
    partial_store(v, p, n, batch_tag<B>());
}

// Lane i of the result is the sum of v[i]'s lanes (B::size batches).
template <class B>
EDGEATTN_WRAPPER B lane_sums(const B *v) {
    return sums_of_lanes(v, batch_tag<B>());
}

// Lane i of the result is the maximum of v[i]'s lanes (B::size batches).
template <class B>
EDGEATTN_WRAPPER B lane_maxima(const B *v) {
    return maxima_of_lanes(v, batch_tag<B>());
}

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
