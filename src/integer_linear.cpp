// The int8 arithmetic of a projection (integer_linear.hpp). Compiled with
// -ffp-contract=off: the final ((float)sum * row scale) * channel scale + b
// is two roundings of products and one of the sum on every target, never a
// fused multiply-add on one build and not on another.
#include "integer_linear.hpp"

#include <stdint.h>

#include "edgeattn/detail/workspace_layout.hpp"
#include "parallel.hpp"

namespace edgeattn {
namespace detail {
namespace {

// Rows of x a thread quantises and multiplies at a time: W's rows are read
// once per block, and the block's quantised rows stay in L1 (16 x 512 B at
// in = 512).
constexpr size_t integer_rows_per_block = 16;

// A slot: quantised rows (R, in) int8, their scales (R) and sums (R, out)
// int32, each on a cache line (layout_builder); offsets in bytes.
struct slot_layout {
    size_t quantised = 0, scales = 0, sums = 0, bytes = 0;
};

bool make_slot_layout(size_t rows, size_t in_features, size_t out_features, slot_layout &l) {
    const size_t r = rows < integer_rows_per_block ? rows : integer_rows_per_block;
    size_t quantised_bytes = 0;
    if (mul_overflows(r, in_features, quantised_bytes)) return false;
    layout_builder b;
    l.quantised = b.add(floats_for_bytes(quantised_bytes)) * sizeof(float);
    l.scales = b.add(r) * sizeof(float);
    l.sums = b.add(r, out_features) * sizeof(float);  // int32, as wide as a float
    l.bytes = b.bytes();
    return l.bytes != 0;
}

}  // namespace

bool integer_linear_slot_bytes(size_t rows, size_t in_features, size_t out_features, size_t &bytes) {
    slot_layout l;
    if (!make_slot_layout(rows, in_features, out_features, l)) return false;
    bytes = l.bytes;
    return true;
}

void integer_linear(const kernel_table &k, size_t rows, size_t in_features, size_t out_features,
                    const float *x, const stored_matrix &W, const float *b, float *y, void *scratch,
                    size_t slots) {
    slot_layout l;
    make_slot_layout(rows, in_features, out_features, l);  // checked by the caller's sizing
    const integer_kernel_table &ik = integer_kernels_of(k);
    const int8_t *Wq = static_cast<const int8_t *>(W.data);
    const size_t blocks = (rows + integer_rows_per_block - 1) / integer_rows_per_block;
    const float flops = 2.0f * static_cast<float>(integer_rows_per_block) * in_features * out_features;
    // Integer sums are exact and each row's result is its own: any split
    // over threads gives the same bits.
    parallel_for(blocks, slots, flops, [&](size_t slot, size_t begin, size_t end) {
        unsigned char *mine = static_cast<unsigned char *>(scratch) + slot * l.bytes;
        int8_t *q = reinterpret_cast<int8_t *>(mine + l.quantised);
        float *row_scales = reinterpret_cast<float *>(mine + l.scales);
        int32_t *sums = reinterpret_cast<int32_t *>(mine + l.sums);
        for (size_t block = begin; block < end; ++block) {
            const size_t r0 = block * integer_rows_per_block;
            const size_t n = rows - r0 < integer_rows_per_block ? rows - r0 : integer_rows_per_block;
            for (size_t r = 0; r < n; ++r)
                row_scales[r] = ik.quantize_row(x + (r0 + r) * in_features, in_features, q + r * in_features);
            ik.int8_products(n, out_features, in_features, q, in_features, Wq, in_features, sums, out_features);
            for (size_t r = 0; r < n; ++r) {
                float *yr = y + (r0 + r) * out_features;
                const int32_t *sr = sums + r * out_features;
                const float sx = row_scales[r];
                for (size_t j = 0; j < out_features; ++j) yr[j] = (static_cast<float>(sr[j]) * sx) * W.scales[j];
                for (size_t j = 0; j < out_features && b; ++j) yr[j] += b[j];
            }
        }
    });
}

}  // namespace detail
}  // namespace edgeattn
