#include "linear.hpp"

#include "parallel.hpp"

namespace edgeattn {
namespace detail {

void linear(const kernel_table &k, size_t rows, size_t in_features, size_t out_features,
            const float *x, const float *W, const float *b, float *y) {
    // Blocks of 16 rows keep each thread's share of W in cache.
    constexpr size_t block = 16;
    const size_t blocks = (rows + block - 1) / block;
    const double flops_per_block = 2.0 * block * in_features * out_features;
    parallel_for(blocks, blocks, flops_per_block, [&](size_t, size_t begin, size_t end) {
        const size_t r0 = begin * block, r1 = end * block < rows ? end * block : rows;
        k.gemm_nt(r1 - r0, out_features, in_features, 1.0f, x + r0 * in_features, in_features, W,
                  in_features, b, y + r0 * out_features, out_features);
    });
}

}  // namespace detail
}  // namespace edgeattn
