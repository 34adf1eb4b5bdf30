// The Helium path (Armv8.1-M MVE with floating point: Cortex-M55, M85): the
// kernel templates instantiated for mve_batch. Built where the target's
// flags enable MVE floating point; needs no xsimd (which has no Helium).
#include "../kernels/mve_batch.hpp"  // first: the kernels look its helpers up
#include "../kernels/mve_asm.hpp"
#include "../kernels/make_kernel_table.hpp"
#define EDGEATTN_INT8_PRODUCTS EDGEATTN_INT8_HELIUM
#include "../kernels/int8_products.hpp"

namespace edgeattn {
namespace detail {
const kernel_table helium_kernels = make_kernel_table<mve_batch>(EDGEATTN_ISA_HELIUM);
const softmax_kernel_table helium_softmax_kernels = make_softmax_kernel_table<mve_batch>();
const add_kernel_table helium_add_kernels = make_add_kernel_table<mve_batch>();
const stored_weight_table helium_stored_weight_kernels = make_stored_weight_table<mve_batch>();
const additive_kernel_table helium_additive_kernels = make_additive_kernel_table<mve_batch>();
const cache_kernel_table helium_cache_kernels = make_cache_kernel_table<mve_batch>();
const integer_kernel_table helium_integer_kernels = make_integer_kernel_table();
const decode_kernel_table helium_decode_kernels = make_decode_kernel_table<mve_batch>();
}
}  // namespace edgeattn
