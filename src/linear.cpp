#include "linear.hpp"

#include "parallel.hpp"

namespace edgeattn {
namespace detail {

void linear(const kernel_table &k, size_t rows, size_t in_features, size_t out_features,
            const float *x, const float *W, const float *b, float *y, float *packed) {
    k.pack_transposed(W, in_features, out_features, in_features, packed);
    // 48 rows: a whole number of micro-tiles on every path (4, 6 and 8 rows).
    constexpr size_t block = 48;
    const size_t blocks = (rows + block - 1) / block;
    const double flops_per_block = 2.0 * block * in_features * out_features;
    parallel_for(blocks, blocks, flops_per_block, [&](size_t, size_t begin, size_t end) {
        const size_t r0 = begin * block, r1 = end * block < rows ? end * block : rows;
        k.gemm_packed(r1 - r0, out_features, in_features, 1.0f, x + r0 * in_features, in_features,
                      packed, b, y + r0 * out_features, out_features, false);
    });
}

}  // namespace detail
}  // namespace edgeattn
