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
    const size_t nr = k.panel_width, panels = (out_features + nr - 1) / nr;
    const float flops = 2.0f * rows * in_features * out_features;
    size_t threads = available_threads();
    if (threads > panels) threads = panels;
    if (threads > 1 && flops / threads < min_flops_per_thread) threads = 1;

    // Each thread packs the panels of W^T it multiplies by, then computes
    // all rows of those columns: freshly packed weights never cross between
    // cores (on the 2-vCPU EPYC, splitting rows over shared packed weights
    // made 128x256x256 1.7x slower on 2 threads than on 1). Every output
    // element is computed the same way whatever the split.
    const size_t panels_per_chunk = (panels + threads - 1) / threads;
    const size_t chunks = (panels + panels_per_chunk - 1) / panels_per_chunk;
    parallel_for(chunks, chunks, flops / chunks, [&](size_t, size_t begin, size_t end) {
        for (size_t chunk = begin; chunk < end; ++chunk) {
            const size_t c0 = chunk * panels_per_chunk * nr;
            const size_t c1 = c0 + panels_per_chunk * nr < out_features ? c0 + panels_per_chunk * nr : out_features;
            float *my_packed = packed + c0 * in_features;
            k.pack_transposed(W + c0 * in_features, in_features, c1 - c0, in_features, my_packed);
            k.gemm_packed(rows, c1 - c0, in_features, 1.0f, x, in_features, my_packed, b ? b + c0 : nullptr,
                          y + c0, out_features, false);
        }
    });
}

}  // namespace detail
}  // namespace edgeattn
