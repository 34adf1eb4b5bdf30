// The neon path: the kernel templates instantiated for xsimd's neon64 (AArch64) or neon (ARMv7).
// This file alone is compiled with the neon flags (see CMakeLists.txt).
#include "../kernels/xsimd_batch.hpp"  // first: the kernels look its helpers up
#include "../kernels/make_kernel_table.hpp"
#define EDGEATTN_INT8_PRODUCTS EDGEATTN_INT8_NEON
#include "../kernels/int8_products.hpp"

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
using neon_batch = xsimd::batch<float, EDGEATTN_NEON_ARCH>;
const kernel_table neon_kernels = make_kernel_table<neon_batch>(EDGEATTN_ISA_NEON);
const softmax_kernel_table neon_softmax_kernels = make_softmax_kernel_table<neon_batch>();
const add_kernel_table neon_add_kernels = make_add_kernel_table<neon_batch>();
const stored_weight_table neon_stored_weight_kernels = make_stored_weight_table<neon_batch>();
const additive_kernel_table neon_additive_kernels = make_additive_kernel_table<neon_batch>();
const cache_kernel_table neon_cache_kernels = make_cache_kernel_table<neon_batch>();
const integer_kernel_table neon_integer_kernels = make_integer_kernel_table();
const decode_kernel_table neon_decode_kernels = make_decode_kernel_table<neon_batch>();
}
}  // namespace edgeattn
