// Whether the kernels keep one shape each instead of several unrolled ones.
//
// The plain C++ path (one lane: the Cortex-M port) compiled for size (-Os
// or -Oz, CMake's MinSizeRel; the compiler then defines __OPTIMIZE_SIZE__)
// keeps one shape of each loop: GEMM tiles of one row, direct products of
// one row of A four rows of W or four columns a pass (not 8 and 16; stored
// weights and cached rows one), one running maximum. On the Cortex-M4F that
// is 2.8 KB less flash, for slower products (each loaded panel value meets
// one row of A, not four). Every other build, SIMD paths included, is
// unaffected.
#ifndef EDGEATTN_KERNELS_COMPACT_HPP
#define EDGEATTN_KERNELS_COMPACT_HPP

// The hot inner helpers of the softmax (exp_table.hpp, softmax.hpp) are
// inlined whatever the compiler's size heuristics say: GCC -O3 left
// row_maximum_lanes, exponentials_and_sum_lanes and the table exp as calls
// once masked_softmax_rows grew, passing four batches through the stack per
// call (softmax 4096x128: 2x slower maximum pass). Builds for size keep the
// compiler's choice.
#if defined(__OPTIMIZE_SIZE__) || !(defined(__GNUC__) || defined(__clang__))
#define EDGEATTN_HOT_INLINE inline
#else
#define EDGEATTN_HOT_INLINE inline __attribute__((always_inline))
#endif

// A one-operation wrapper (a load that steps its pointer, a multiply-add by
// a broadcast float, the forwarding of a reduction to the batch type's
// form): inlined at every optimisation level. Built for size, GCC left
// load_and_step as a call, two calls a multiply-add in the plain C++
// products (d2l's block on the Cortex-M4F, -Os: 2.6 M -> 7.0 M
// instructions), and lane_sums as one, which took the address of Helium's
// accumulators: kept on the stack, stored and reloaded each step.
#if defined(__GNUC__) || defined(__clang__)
#define EDGEATTN_WRAPPER inline __attribute__((always_inline))
#else
#define EDGEATTN_WRAPPER inline
#endif

namespace edgeattn {
namespace detail {
namespace {

// Built for size, whatever the path: the vector paths keep their tile
// shapes but fewer widths of the direct products' passes.
constexpr bool built_for_size() {
#if defined(__OPTIMIZE_SIZE__)
    return true;
#else
    return false;
#endif
}

template <class B>
constexpr bool compact_kernels() {
    return built_for_size() && B::size == 1;
}

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
