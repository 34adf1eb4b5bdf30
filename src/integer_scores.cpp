// The int8 arithmetic's scores over an int8 KV cache (attention_rows.hpp):
// the path's int32 products of the quantised queries and the stored key
// codes, then each sum times its row's and its key's scales. The products
// are exact and the two roundings are the same fp32 multiplications on
// every target (no sum to fuse), so every path gives the same bits.
#include "attention_rows.hpp"

#include <stdint.h>

namespace edgeattn {
namespace detail {

void integer_scores(const kernel_table &k, const quantised_rows &q, size_t query_stride, size_t row0, size_t rows,
                    size_t d, const stored_rows &keys, size_t key_stride, size_t key0, size_t n, float scale,
                    float *scores, size_t ldc) {
    // The sums are made where their scores go: a float and an int32 are as
    // wide, and each is read before its score is written over it.
    int32_t *sums = reinterpret_cast<int32_t *>(scores);
    const int8_t *key_codes = static_cast<const int8_t *>(keys.data) + key0 * key_stride;
    integer_kernels_of(k).int8_products(rows, n, d, q.codes + row0 * query_stride, query_stride, key_codes,
                                        key_stride, sums, ldc);
    const float *key_scales = keys.scales + key0;
    for (size_t r = 0; r < rows; ++r) {
        const float row_factor = q.scales[(row0 + r) * q.scales_stride] * scale;
        float *row = scores + r * ldc;
        const int32_t *row_sums = sums + r * ldc;
        for (size_t j = 0; j < n; ++j) row[j] = (static_cast<float>(row_sums[j]) * row_factor) * key_scales[j];
    }
}

}  // namespace detail
}  // namespace edgeattn
