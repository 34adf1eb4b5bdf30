#include "linear.hpp"

#include "edgeattn/detail/workspace_layout.hpp"
#include "parallel.hpp"

namespace edgeattn {
namespace detail {
namespace {

// At and below this many rows the projection reads W in place. Measured at
// 8 x 100 x 100 (d2l's shape): packing 3.5 us + product 1.0 us, in place 1.5 us.
constexpr size_t direct_rows_limit = 16;

// Splits the output columns into one chunk per thread (at most
// max_threads), whole panels of `panel` columns each, and calls body(c0, c1)
// for each chunk [c0, c1).
// Each thread computes all rows of its columns: with weights packed per call,
// freshly packed panels never cross between cores (on the 2-vCPU EPYC,
// splitting rows over shared packed weights made 128x256x256 1.7x slower on
// 2 threads than on 1). Every output element is computed the same way
// whatever the split, so results do not depend on the thread count.
template <class Body>
void for_column_chunks(size_t rows, size_t in_features, size_t out_features, size_t panel,
                       size_t max_threads, Body body) {
    const size_t panels = (out_features + panel - 1) / panel;
    const float flops = 2.0f * rows * in_features * out_features;
    size_t threads = available_threads();
#if defined(EDGEATTN_HAVE_OPENMP)
    if (threads > max_threads) threads = max_threads;
#else
    (void)max_threads;  // one thread
#endif
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

namespace {

// Columns [c0, c1) of W (out, in) -> W^T panels of max_panel_width columns
// (c0 a multiple of it) at packed + c0 * in elements, zero-padded; T the
// stored element type.
template <class T>
void pack_columns_transposed(size_t in_features, size_t out_features, const T *W, size_t c0,
                             size_t c1, T *packed) {
    constexpr size_t panel = max_panel_width;
    for (size_t p0 = c0; p0 < c1; p0 += panel) {
        T *dst = packed + p0 * in_features;  // (in_features, panel)
        for (size_t i = 0; i < in_features; ++i)
            for (size_t j = 0; j < panel; ++j)
                dst[i * panel + j] = p0 + j < out_features ? W[(p0 + j) * in_features + i] : T(0);
    }
}

void pack_stored_columns(size_t in_features, size_t out_features, const stored_matrix &W, size_t c0,
                         size_t c1, void *packed) {
    switch (W.type) {
        case EDGEATTN_DTYPE_INT8:
            return pack_columns_transposed(in_features, out_features, static_cast<const int8_t *>(W.data),
                                           c0, c1, static_cast<int8_t *>(packed));
        case EDGEATTN_DTYPE_F16:
            return pack_columns_transposed(in_features, out_features,
                                           static_cast<const uint16_t *>(W.data), c0, c1,
                                           static_cast<uint16_t *>(packed));
        default:
            return pack_columns_transposed(in_features, out_features, static_cast<const float *>(W.data),
                                           c0, c1, static_cast<float *>(packed));
    }
}

// The product over columns [c0, c1) of W^T packed at `packed` (its element 0
// is column 0's first), stored weights of any type.
void packed_columns_product(const kernel_table &k, size_t rows, size_t in_features,
                            size_t out_features, const float *x, const stored_matrix &packed_W,
                            const float *b, float *y, size_t c0, size_t c1) {
    const size_t offset = c0 * in_features * element_bytes(packed_W.type);
    const void *panels = static_cast<const unsigned char *>(packed_W.data) + offset;
    const float *bias = b ? b + c0 : nullptr;
    if (packed_W.type == EDGEATTN_DTYPE_F32 && !packs(k)) {
        // A path that never packs: each panel (in_features, max_panel_width)
        // as a matrix read in place, the bias first.
        for (size_t p0 = c0; p0 < c1; p0 += max_panel_width) {
            const size_t n = c1 - p0 < max_panel_width ? c1 - p0 : max_panel_width;
            for (size_t r = 0; r < rows && b; ++r)
                for (size_t j = 0; j < n; ++j) y[r * out_features + p0 + j] = b[p0 + j];
            k.gemm_nn_direct(rows, n, in_features, x, in_features,
                             static_cast<const float *>(panels) + (p0 - c0) * in_features, max_panel_width,
                             y + p0, out_features, b != nullptr);
        }
    } else if (packed_W.type == EDGEATTN_DTYPE_F32) {
        k.gemm_packed(rows, c1 - c0, in_features, 1.0f, x, in_features, static_cast<const float *>(panels),
                      max_panel_width, bias, y + c0, out_features, false);
    } else {
        stored_kernels(k, packed_W.type)
            .gemm_packed(rows, c1 - c0, in_features, x, in_features, panels,
                         packed_W.scales ? packed_W.scales + c0 : nullptr, bias, y + c0, out_features);
    }
}

}  // namespace

void linear(const kernel_table &k, size_t rows, size_t in_features, size_t out_features,
            const float *x, const stored_matrix &W, const float *b, float *y, float *packed,
            size_t max_threads) {
    const bool fp32 = W.type == EDGEATTN_DTYPE_F32;
    // A few rows: packing W^T would cost more than the product itself; a
    // path that never packs reads W in place whatever the rows.
    if (rows <= direct_rows_limit || !packs(k)) {
        if (fp32)
            k.gemm_nt_direct(rows, out_features, in_features, 1.0f, x, in_features,
                             static_cast<const float *>(W.data), in_features, b, y, out_features);
        else
            stored_kernels(k, W.type).gemm_nt_direct(rows, out_features, in_features, 1.0f, x, in_features,
                                                     W.data, in_features, W.scales, b, y, out_features);
        return;
    }
    if (fp32) {  // panels as wide as this path's tile
        const size_t nr = k.panel_width;
        const float *Wf = static_cast<const float *>(W.data);
        for_column_chunks(rows, in_features, out_features, nr, max_threads, [&](size_t c0, size_t c1) {
            float *my_packed = packed + c0 * in_features;
            k.pack_transposed(Wf + c0 * in_features, in_features, c1 - c0, in_features, my_packed);
            k.gemm_packed(rows, c1 - c0, in_features, 1.0f, x, in_features, my_packed, nr,
                          b ? b + c0 : nullptr, y + c0, out_features, false);
        });
        return;
    }
    // Stored weights: panels of max_panel_width in their own type, the
    // layout of weights packed once, so one kernel reads both.
    const stored_matrix panels = {W.type, packed, W.scales};
    for_column_chunks(rows, in_features, out_features, max_panel_width, max_threads, [&](size_t c0, size_t c1) {
        pack_stored_columns(in_features, out_features, W, c0, c1, packed);
        packed_columns_product(k, rows, in_features, out_features, x, panels, b, y, c0, c1);
    });
}

void linear_prepacked(const kernel_table &k, size_t rows, size_t in_features, size_t out_features,
                      const float *x, const stored_matrix &packed_W, const float *b, float *y,
                      size_t max_threads) {
    for_column_chunks(rows, in_features, out_features, max_panel_width, max_threads, [&](size_t c0, size_t c1) {
        packed_columns_product(k, rows, in_features, out_features, x, packed_W, b, y, c0, c1);
    });
}

void pack_weights_transposed(size_t in_features, size_t out_features, const stored_matrix &W,
                             void *packed) {
    pack_stored_columns(in_features, out_features, W, 0, out_features, packed);
}

}  // namespace detail
}  // namespace edgeattn
