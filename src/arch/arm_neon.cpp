// The neon path: the kernel templates instantiated for xsimd's neon64 (AArch64) or neon (ARMv7).
// This file alone is compiled with the neon flags (see CMakeLists.txt).
#include "../kernels/xsimd_batch.hpp"  // first: the kernels look its helpers up
#include "../kernels/make_kernel_table.hpp"

#if !(defined __ARM_NEON)
#error "compile this file with the neon instruction-set flags"
#endif
#if defined(__aarch64__)
#define EDGEATTN_NEON_ARCH xsimd::neon64
#else
#define EDGEATTN_NEON_ARCH xsimd::neon
#endif

namespace edgeattn {
namespace detail {
const kernel_table neon_kernels =
    make_kernel_table<xsimd::batch<float, EDGEATTN_NEON_ARCH>>(EDGEATTN_ISA_NEON);
}
}  // namespace edgeattn
