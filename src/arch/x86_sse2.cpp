// The sse2 path: the kernel templates instantiated for xsimd's xsimd::sse2.
// This file alone is compiled with the sse2 flags (see CMakeLists.txt).
#include "../kernels/xsimd_batch.hpp"  // first: the kernels look its helpers up
#include "../kernels/make_kernel_table.hpp"

#if !(defined __SSE2__)
#error "compile this file with the sse2 instruction-set flags"
#endif

namespace edgeattn {
namespace detail {
const kernel_table sse2_kernels =
    make_kernel_table<xsimd::batch<float, xsimd::sse2>>(EDGEATTN_ISA_SSE2);
}
}  // namespace edgeattn
