#include "linear.hpp"

#include "edgeattn/detail/workspace_layout.hpp"
#include "parallel.hpp"

namespace edgeattn {
namespace detail {
namespace {

// At and below this many rows the projection reads W in place. Measured at
// 8 x 100 x 100 (d2l's shape): packing 3.5 us + product 1.0 us, in place 1.5 us.
constexpr size_t direct_rows_limit = 16;

// Splits the output columns into one chunk per thread, whole panels of
// `panel` columns each, and calls body(c0, c1) for each chunk [c0, c1).
// Each thread computes all rows of its columns: with weights packed per call,
// freshly packed panels never cross between cores (on the 2-vCPU EPYC,
// splitting rows over shared packed weights made 128x256x256 1.7x slower on
// 2 threads than on 1). Every output element is computed the same way
// whatever the split, so results do not depend on the thread count.
template <class Body>
void for_column_chunks(size_t rows, size_t in_features, size_t out_features, size_t panel,
                       Body body) {
    const size_t panels = (out_features + panel - 1) / panel;
    const float flops = 2.0f * rows * in_features * out_features;
    size_t threads = available_threads();
    if (threads > panels) threads = panels;
    if (threads > 1 && flops / threads < min_flops_per_thread) threads = 1;
    const size_t panels_per_chunk = (panels + threads - 1) / threads;
    const size_t chunks = (panels + panels_per_chunk - 1) / panels_per_chunk;
    parallel_for(chunks, chunks, flops / chunks, [&](size_t, size_t begin, size_t end) {
        for (size_t chunk = begin; chunk < end; ++chunk) {
            const size_t c0 = chunk * panels_per_chunk * panel;
            const size_t c1 = c0 + panels_per_chunk * panel;
            body(c0, c1 < out_features ? c1 : out_features);
        }
    });
}

}  // namespace

bool linear_scratch_floats(size_t rows, size_t in_features, size_t out_features, size_t &floats) {
    floats = 0;
    return rows <= direct_rows_limit || packed_floats(in_features, out_features, floats);
}

void linear(const kernel_table &k, size_t rows, size_t in_features, size_t out_features,
            const float *x, const float *W, const float *b, float *y, float *packed) {
    // A few rows: packing W^T would cost more than the product itself.
    if (rows <= direct_rows_limit) {
        k.gemm_nt_direct(rows, out_features, in_features, x, in_features, W, in_features, b, y,
                         out_features);
        return;
    }
    const size_t nr = k.panel_width;
    for_column_chunks(rows, in_features, out_features, nr, [&](size_t c0, size_t c1) {
        float *my_packed = packed + c0 * in_features;
        k.pack_transposed(W + c0 * in_features, in_features, c1 - c0, in_features, my_packed);
        k.gemm_packed(rows, c1 - c0, in_features, 1.0f, x, in_features, my_packed, nr,
                      b ? b + c0 : nullptr, y + c0, out_features, false);
    });
}

void linear_prepacked(const kernel_table &k, size_t rows, size_t in_features, size_t out_features,
                      const float *x, const float *packed_W, const float *b, float *y) {
    const size_t panel = max_panel_width;
    for_column_chunks(rows, in_features, out_features, panel, [&](size_t c0, size_t c1) {
        k.gemm_packed(rows, c1 - c0, in_features, 1.0f, x, in_features,
                      packed_W + c0 * in_features, panel, b ? b + c0 : nullptr, y + c0,
                      out_features, false);
    });
}

void pack_weights_transposed(size_t in_features, size_t out_features, const float *W,
                             float *packed) {
    constexpr size_t panel = max_panel_width;
    for (size_t c0 = 0; c0 < out_features; c0 += panel) {
        float *dst = packed + c0 * in_features;  // (in_features, panel)
        for (size_t i = 0; i < in_features; ++i)
            for (size_t j = 0; j < panel; ++j)
                dst[i * panel + j] = c0 + j < out_features ? W[(c0 + j) * in_features + i] : 0.0f;
    }
}

}  // namespace detail
}  // namespace edgeattn
