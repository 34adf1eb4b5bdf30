#include "linear.hpp"

#include "parallel.hpp"

namespace edgeattn {
namespace detail {

// At and below this many rows the projection reads W in place. Measured at
// 8 x 100 x 100 (d2l's shape): packing 3.5 us + product 1.0 us, in place 1.5 us.
constexpr size_t direct_rows_limit = 16;

void linear(const kernel_table &k, size_t rows, size_t in_features, size_t out_features,
            const float *x, const float *W, const float *b, float *y, float *packed) {
    // A few rows: packing W^T would cost more than the product itself.
    if (rows <= direct_rows_limit) {
        k.gemm_nt_direct(rows, out_features, in_features, x, in_features, W, in_features, b, y,
                         out_features);
        return;
    }
    // Pack W^T (in, out) in whole panels, split over threads when big enough.
    const size_t nr = k.panel_width, panels = (out_features + nr - 1) / nr;
    parallel_for(panels, panels, 4.0 * nr * in_features, [&](size_t, size_t begin, size_t end) {
        const size_t c0 = begin * nr, c1 = end * nr < out_features ? end * nr : out_features;
        k.pack_transposed(W + c0 * in_features, in_features, c1 - c0, in_features, packed + c0 * in_features);
    });
    // Items are (48-row block, column chunk): 48 rows is a whole number of
    // micro-tiles on every path (4, 6 and 8 rows); when there are fewer row
    // blocks than threads, the columns are cut too, in whole panels. Every
    // output element is computed the same way whatever the cut.
    constexpr size_t block = 48;
    const size_t row_blocks = (rows + block - 1) / block;
    size_t column_chunks = 1;
    if (row_blocks < available_threads()) {
        const size_t wanted = (available_threads() + row_blocks - 1) / row_blocks;
        column_chunks = wanted < panels ? wanted : panels;
    }
    const size_t panels_per_chunk = (panels + column_chunks - 1) / column_chunks;
    column_chunks = (panels + panels_per_chunk - 1) / panels_per_chunk;
    const size_t chunk = panels_per_chunk * nr;
    const double flops_per_item = 2.0 * (rows < block ? rows : block) * in_features * chunk;
    parallel_for(row_blocks * column_chunks, row_blocks * column_chunks, flops_per_item,
                 [&](size_t, size_t begin, size_t end) {
        for (size_t item = begin; item < end; ++item) {
            const size_t r0 = item / column_chunks * block, c0 = item % column_chunks * chunk;
            const size_t r = rows - r0 < block ? rows - r0 : block;
            const size_t c = out_features - c0 < chunk ? out_features - c0 : chunk;
            k.gemm_packed(r, c, in_features, 1.0f, x + r0 * in_features, in_features,
                          packed + c0 * in_features, b ? b + c0 : nullptr, y + r0 * out_features + c0,
                          out_features, false);
        }
    });
}

}  // namespace detail
}  // namespace edgeattn
