// The sse2 path: the kernel templates instantiated for xsimd's xsimd::sse2.
// This file alone is compiled with the sse2 flags (see CMakeLists.txt).
#include "../kernels/xsimd_batch.hpp"  // first: the kernels look its helpers up
#include "../kernels/make_kernel_table.hpp"
#define EDGEATTN_INT8_PRODUCTS EDGEATTN_INT8_SSE2
#include "../kernels/int8_products.hpp"

#if !(defined __SSE2__)
#error "compile this file with the sse2 instruction-set flags"
#endif

namespace edgeattn {
namespace detail {
using sse2_batch = xsimd::batch<float, xsimd::sse2>;
const kernel_table sse2_kernels = make_kernel_table<sse2_batch>(EDGEATTN_ISA_SSE2);
const softmax_kernel_table sse2_softmax_kernels = make_softmax_kernel_table<sse2_batch>();
const add_kernel_table sse2_add_kernels = make_add_kernel_table<sse2_batch>();
const stored_weight_table sse2_stored_weight_kernels = make_stored_weight_table<sse2_batch>();
const additive_kernel_table sse2_additive_kernels = make_additive_kernel_table<sse2_batch>();
const cache_kernel_table sse2_cache_kernels = make_cache_kernel_table<sse2_batch>();
const integer_kernel_table sse2_integer_kernels = make_integer_kernel_table();
const decode_kernel_table sse2_decode_kernels = make_decode_kernel_table<sse2_batch>();
}
}  // namespace edgeattn
