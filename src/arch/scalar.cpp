// The plain C++ path: always built, needs neither xsimd nor OpenMP. It is
// the Cortex-M port and the fallback on every other target.
#include "../kernels/scalar_batch.hpp"
#include "../kernels/exp_scalar.hpp"
#include "../kernels/make_kernel_table.hpp"
#define EDGEATTN_INT8_PRODUCTS EDGEATTN_INT8_PLAIN
#include "../kernels/int8_products.hpp"

namespace edgeattn {
namespace detail {
using scalar_batch = scalar_batch;
const kernel_table scalar_kernels = make_kernel_table<scalar_batch>(EDGEATTN_ISA_SCALAR);
const softmax_kernel_table scalar_softmax_kernels = make_softmax_kernel_table<scalar_batch>();
const add_kernel_table scalar_add_kernels = make_add_kernel_table<scalar_batch>();
const stored_weight_table scalar_stored_weight_kernels = make_stored_weight_table<scalar_batch>();
const additive_kernel_table scalar_additive_kernels = make_additive_kernel_table<scalar_batch>();
const cache_kernel_table scalar_cache_kernels = make_cache_kernel_table<scalar_batch>();
const integer_kernel_table scalar_integer_kernels = make_integer_kernel_table();
}
}  // namespace edgeattn
