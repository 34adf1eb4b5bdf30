// Whether the kernels keep one shape each instead of several unrolled ones.
//
// The plain C++ path (one lane: the Cortex-M port) compiled for size (-Os
// or -Oz, CMake's MinSizeRel; the compiler then defines __OPTIMIZE_SIZE__)
// keeps one shape of each loop: GEMM tiles of one row, direct products one
// column wide, one running maximum. On the Cortex-M4F that is 2.8 KB less
// flash, for slower products (each loaded panel value meets one row of A,
// not four). Every other build, SIMD paths included, is unaffected.
#ifndef EDGEATTN_KERNELS_COMPACT_HPP
#define EDGEATTN_KERNELS_COMPACT_HPP

namespace edgeattn {
namespace detail {
namespace {

template <class B>
constexpr bool compact_kernels() {
#if defined(__OPTIMIZE_SIZE__)
    return B::size == 1;
#else
    return false;
#endif
}

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
