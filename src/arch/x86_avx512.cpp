// The avx512 path: the kernel templates instantiated for xsimd's xsimd::avx512f.
// This file alone is compiled with the avx512 flags (see CMakeLists.txt).
#include "../kernels/xsimd_batch.hpp"  // first: the kernels look its helpers up
#include "../kernels/make_kernel_table.hpp"
#define EDGEATTN_INT8_PRODUCTS EDGEATTN_INT8_AVX512
#include "../kernels/int8_products.hpp"

#if !(defined __AVX512F__ && defined __AVX512DQ__)
#error "compile this file with the avx512 instruction-set flags"
#endif

namespace edgeattn {
namespace detail {
using avx512_batch = xsimd::batch<float, xsimd::avx512f>;
const kernel_table avx512_kernels = make_kernel_table<avx512_batch>(EDGEATTN_ISA_AVX512);
const softmax_kernel_table avx512_softmax_kernels = make_softmax_kernel_table<avx512_batch>();
const add_kernel_table avx512_add_kernels = make_add_kernel_table<avx512_batch>();
const stored_weight_table avx512_stored_weight_kernels = make_stored_weight_table<avx512_batch>();
const additive_kernel_table avx512_additive_kernels = make_additive_kernel_table<avx512_batch>();
const cache_kernel_table avx512_cache_kernels = make_cache_kernel_table<avx512_batch>();
const integer_kernel_table avx512_integer_kernels = make_integer_kernel_table();
const decode_kernel_table avx512_decode_kernels = make_decode_kernel_table<avx512_batch>();
}
}  // namespace edgeattn
