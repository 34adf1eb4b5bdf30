// Matrix products of attention, written once for any batch type: a packed,
// register-blocked micro-kernel in the manner of GotoBLAS / BLIS.
//
// The right-hand matrix is packed into panels of `panel_width` columns
// (NR), each panel K rows of NR contiguous floats (zero-padded past N), so
// the micro-kernel streams it with aligned vector loads. The left-hand
// matrix is read in place, MR rows at a time, one broadcast per row and k.
// An MR x NR tile of C lives in MR * NR / W vector registers:
//   scalar 4x4, SSE2/NEON 4x8, AVX2 6x16, AVX-512 8x32.
// K is walked in chunks of gemm_depth_block so a chunk of a panel stays in
// L1 while MR rows of A stream past it.
#ifndef EDGEATTN_KERNELS_GEMM_HPP
#define EDGEATTN_KERNELS_GEMM_HPP

#include <stddef.h>

#include <type_traits>
#include <utility>

#include "compact.hpp"
#include "edgeattn/detail/workspace_layout.hpp"
#include "reduce.hpp"
#include "weight_load.hpp"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace edgeattn {
namespace detail {
namespace {

// MR x NR accumulators: 8 x 32 on AVX-512, 6 x 16 on AVX2, 4 x 8 on SSE2
// and NEON, 4 x 4 scalars on the plain C++ path (one row when compact);
// Helium's 8 registers hold 3 x 8 with the loads (4 x 8 spilled, and
// each row count is a kernel of its own).
template <class B>
struct gemm_tile {
    static constexpr size_t vectors = B::size == 1 ? 4 : 2;
    static constexpr size_t width = vectors * B::size;  // NR
    static constexpr size_t rows = B::size >= 16                                ? 8
                                   : B::size == 8                               ? 6
                                   : compact_kernels<B>()                       ? 1
                                   : vector_registers(batch_tag<B>()) <= 8 ? 3
                                                                                : 4;  // MR
    static_assert(width <= max_panel_width, "workspace sizes assume panels of at most 64 columns");
};

constexpr size_t gemm_depth_block = 256;

// b (n, k), row stride ldb -> panels of b^T: packed[p][kk][j] = b[p*NR + j][kk].
// A transpose: eight k at a time, so the reads of each row stay sequential
// and the writes stay within eight rows of the panel (1.6-2x faster than
// either plain loop order, measured at 100..512 square).
#if defined(__AVX2__)
// dst[kk * NR + j] = rows[j][kk] for an 8 x 8 block (j, kk < 8): eight
// loads, the usual unpack / shuffle / lane-permute tree, eight stores,
// where the scalar loops take 64 loads and 64 stores (sdpa of 128 keys at
// d 64 spent 5% of its time packing keys).
template <size_t NR>
inline void transpose_eight_by_eight(const float *b, size_t ldb, float *dst) {
    __m256 r[8], t[8];
    for (size_t j = 0; j < 8; ++j) r[j] = _mm256_loadu_ps(b + j * ldb);
    for (size_t j = 0; j < 8; j += 2) {
        t[j] = _mm256_unpacklo_ps(r[j], r[j + 1]);
        t[j + 1] = _mm256_unpackhi_ps(r[j], r[j + 1]);
    }
    for (size_t j = 0; j < 8; j += 4) {
        r[j] = _mm256_shuffle_ps(t[j], t[j + 2], 0x44);
        r[j + 1] = _mm256_shuffle_ps(t[j], t[j + 2], 0xEE);
        r[j + 2] = _mm256_shuffle_ps(t[j + 1], t[j + 3], 0x44);
        r[j + 3] = _mm256_shuffle_ps(t[j + 1], t[j + 3], 0xEE);
    }
    for (size_t j = 0; j < 4; ++j) {
        _mm256_storeu_ps(dst + j * NR, _mm256_permute2f128_ps(r[j], r[j + 4], 0x20));
        _mm256_storeu_ps(dst + (j + 4) * NR, _mm256_permute2f128_ps(r[j], r[j + 4], 0x31));
    }
}
#endif

template <class B>
void pack_transposed(const float *b, size_t ldb, size_t n, size_t k, float *packed) {
    constexpr size_t NR = gemm_tile<B>::width, depth = 8;
    for (size_t p0 = 0; p0 < n; p0 += NR) {
        float *panel = packed + p0 * k;
        const size_t cols = n - p0 < NR ? n - p0 : NR;
        for (size_t k0 = 0; k0 < k; k0 += depth) {
            const size_t kn = k - k0 < depth ? k - k0 : depth;
            float *dst = panel + k0 * NR;
#if defined(__AVX2__)
            if constexpr (B::size >= 8) {
                if (cols == NR && kn == depth) {
                    for (size_t j = 0; j < NR; j += 8)
                        transpose_eight_by_eight<NR>(b + (p0 + j) * ldb + k0, ldb, dst + j);
                    continue;
                }
            }
#endif
            for (size_t j = 0; j < cols; ++j) {
                const float *row = b + (p0 + j) * ldb + k0;
                for (size_t kk = 0; kk < kn; ++kk) dst[kk * NR + j] = row[kk];
            }
            for (size_t j = cols; j < NR; ++j)
                for (size_t kk = 0; kk < kn; ++kk) dst[kk * NR + j] = 0.0f;
        }
    }
}

// b (k, n), row stride ldb -> panels: packed[p][kk][j] = b[kk][p*NR + j].
template <class B>
void pack(const float *b, size_t ldb, size_t k, size_t n, float *packed) {
    constexpr size_t NR = gemm_tile<B>::width;
    for (size_t p0 = 0; p0 < n; p0 += NR) {
        float *panel = packed + p0 * k;
        const size_t cols = n - p0 < NR ? n - p0 : NR;
        for (size_t kk = 0; kk < k; ++kk) {
            const float *row = b + kk * ldb + p0;
            float *dst = panel + kk * NR;
            for (size_t j = 0; j < cols; ++j) dst[j] = row[j];
            for (size_t j = cols; j < NR; ++j) dst[j] = 0.0f;
        }
    }
}

// One row of a tile leaves its accumulators for its first `cols` columns
// (NR in a full tile): c = acc * (col_scale * alpha) (+ bias), or
// c += acc * (col_scale * alpha). The multiply-add is one fma, never a
// product and a sum the compiler may or may not fuse depending on where
// this is inlined, and a partial tile takes the same operations through
// partial loads and stores: the row tiles, the wide tiles and the edge
// tiles then give the same bits, so a column's result does not depend on
// which tile the split of columns over threads, or the keys a block of
// query rows sees, put it in (with depth blocks, each adds to c).
template <class B>
inline void store_tile_row(const B *acc, float *c, B alpha_b, const float *col_scale, const float *bias,
                           bool accumulate, size_t cols) {
    constexpr size_t W = B::size, NV = gemm_tile<B>::vectors;
    for (size_t v = 0; v < NV && v * W < cols; ++v) {
        const size_t n = cols - v * W < W ? cols - v * W : W;
        auto load = [n](const float *p) { return n == W ? B::load_unaligned(p) : load_partial<B>(p, n, 0.0f); };
        const B factor = col_scale ? load(col_scale + v * W) * alpha_b : alpha_b;
        const float *addend = accumulate ? c + v * W : bias ? bias + v * W : nullptr;
        const B r = addend ? fma(acc[v], factor, load(addend)) : acc[v] * factor;
        if (n == W)
            r.store_unaligned(c + v * W);
        else
            store_partial(r, c + v * W, n);
    }
}

// acc[i][v] += a[i][k] * panel[k][v] for `pairs` pairs of k from ap[i]
// and panel (both then stepped past them), Stride the panel's row stride:
// a batch type with a hand-scheduled form of this loop overloads it for
// its tag and returns true (mve_asm.hpp); this is every other's.
template <class B, size_t Rows, size_t Stride, size_t NV, class T>
EDGEATTN_WRAPPER bool tile_pairs(size_t, const float *(&)[Rows], const T *&, B (&)[Rows][NV],
                                 std::integral_constant<size_t, Stride>, batch_tag<B>) {
    return false;
}

// acc[i][v] += a[i][k] * panel[k][v] over kc values of k, for batch types
// whose loads take no index register (Helium): every pointer steps itself,
// each a[i][k] is a scalar load fed to the multiply-add as a core register
// (VFMA Qd, Qn, Rm: no broadcast), and each panel vector meets its rows as
// soon as it is loaded (at 3 x 8 the 6 accumulators and 2 loads are
// Q0-Q7): 14 instructions a k for 24 multiply-adds as GCC schedules it,
// fewer where the batch type has tile_pairs. Always inlined: as a call,
// the accumulators would live in memory.
template <class B, size_t Rows, size_t Stride, size_t NV, class T>
EDGEATTN_WRAPPER void tile_products_stepping(size_t kc, const float *const *a, const T *panel,
                                             B (&acc)[Rows][NV]) {
    constexpr size_t W = B::size;
    const float *ap[Rows];
#pragma GCC unroll 16
    for (size_t i = 0; i < Rows; ++i) ap[i] = a[i];
    size_t k = kc;
    if (tile_pairs(kc / 2, ap, panel, acc, std::integral_constant<size_t, Stride>(), batch_tag<B>())) k = kc % 2;
    for (; k; --k) {
        B bv[NV];
#pragma GCC unroll 4
        for (size_t v = 0; v < NV; ++v) bv[v] = load_weights<B>(panel + v * W);
        panel += Stride;
#pragma GCC unroll 16
        for (size_t i = 0; i < Rows; ++i) {
            const float ai = *ap[i]++;
#pragma GCC unroll 4
            for (size_t v = 0; v < NV; ++v) acc[i][v] = fma_broadcast(ai, bv[v], acc[i][v]);
        }
    }
}

// One Rows x NR tile (Rows <= MR): c = alpha * a . panel (+ bias), or
// c += alpha * a . panel. Row k of the panel starts at panel + k *
// panel_stride (NR, or a multiple of it for weights packed once in
// max_panel_width-wide panels). A panel of int8 or binary16 weights (T) is
// widened as it is loaded; col_scale (NR floats, or nullptr) multiplies
// each column's sums: int8's per-output-channel scales.
template <class B, size_t Rows, class T>
void gemm_tile_kernel(size_t kc, const float *const *a, const T *panel, size_t panel_stride,
                      float *c, size_t ldc, size_t cols, float alpha, const float *col_scale,
                      const float *bias, bool accumulate) {
    constexpr size_t W = B::size, NV = gemm_tile<B>::vectors, NR = NV * W;
    B acc[Rows][NV];
#pragma GCC unroll 16
    for (size_t i = 0; i < Rows; ++i)
#pragma GCC unroll 4
        for (size_t v = 0; v < NV; ++v) acc[i][v] = B(0.0f);
    if constexpr (!indexed_addressing(batch_tag<B>())) {
        // The panel's row stride as a constant (the loads' immediate
        // offsets): NR for panels packed per call, max_panel_width for
        // weights packed once.
        if (panel_stride == NR)
            tile_products_stepping<B, Rows, NR>(kc, a, panel, acc);
        else
            tile_products_stepping<B, Rows, max_panel_width>(kc, a, panel, acc);
    } else {
        for (size_t k = 0; k < kc; ++k) {
            B bv[NV];
#pragma GCC unroll 4
            for (size_t v = 0; v < NV; ++v) bv[v] = load_weights<B>(panel + k * panel_stride + v * W);
#pragma GCC unroll 16
            for (size_t i = 0; i < Rows; ++i) {
                const B ai(a[i][k]);
#pragma GCC unroll 4
                for (size_t v = 0; v < NV; ++v) acc[i][v] = fma(ai, bv[v], acc[i][v]);
            }
        }
    }
    // The sums leave through a copy: passing acc itself by address kept it
    // in memory for the whole loop (GCC stored every accumulator each k).
    const B alpha_b(alpha);
    auto store_rows = [&](size_t n) {
#pragma GCC unroll 16
        for (size_t i = 0; i < Rows; ++i) {
            B row[NV];
#pragma GCC unroll 4
            for (size_t v = 0; v < NV; ++v) row[v] = acc[i][v];
            store_tile_row<B>(row, c + i * ldc, alpha_b, col_scale, bias, accumulate, n);
        }
    };
    if (cols == NR && !compact_kernels<B>())  // full tiles with their width known (one copy when compact)
        store_rows(NR);
    else
        store_rows(cols);
}

template <class T>
using gemm_tile_fn = void (*)(size_t, const float *const *, const T *, size_t, float *, size_t,
                              size_t, float, const float *, const float *, bool);

// The tile kernel for `rows` (1..MR) rows of A: one per row count, so a
// remainder of 2 rows on AVX2 (MR 6) costs 2 rows' work, not 6.
template <class B, class T, size_t... R>
gemm_tile_fn<T> tile_kernel_for_rows(size_t rows, std::index_sequence<R...>) {
    static constexpr gemm_tile_fn<T> kernels[] = {&gemm_tile_kernel<B, R + 1, T>...};
    return kernels[rows - 1];
}

// Rows x (G * NR) of full panels for a block of one or two rows (a decode
// token's projections): an Rows x NR tile has only Rows * NV independent
// sums, too few to hide the multiply-add latency (a one-row tile on AVX2:
// 2 chains, a quarter of the FMA throughput; packed weights ran 1.3-2x
// slower than the same weights read in place). G panels side by side give
// Rows * G * NV chains. Each column's sum is the same chain of fma over k
// as in gemm_tile_kernel, so the bits do not depend on which kernel ran.
template <class B, size_t Rows, size_t G, class T>
void gemm_wide_tile_kernel(size_t kc, const float *const *a, const T *const *panels, size_t panel_stride,
                           float *c, size_t ldc, float alpha, const float *col_scale, const float *bias,
                           bool accumulate) {
    constexpr size_t W = B::size, NV = gemm_tile<B>::vectors, NR = NV * W;
    B acc[Rows][G][NV];
#pragma GCC unroll 16
    for (size_t i = 0; i < Rows; ++i)
#pragma GCC unroll 16
        for (size_t g = 0; g < G; ++g)
#pragma GCC unroll 16
            for (size_t v = 0; v < NV; ++v) acc[i][g][v] = B(0.0f);
    for (size_t k = 0; k < kc; ++k) {
#pragma GCC unroll 16
        for (size_t g = 0; g < G; ++g) {
            B bv[NV];
#pragma GCC unroll 16
            for (size_t v = 0; v < NV; ++v) bv[v] = load_weights<B>(panels[g] + k * panel_stride + v * W);
#pragma GCC unroll 16
            for (size_t i = 0; i < Rows; ++i) {
                const B ai(a[i][k]);
#pragma GCC unroll 16
                for (size_t v = 0; v < NV; ++v) acc[i][g][v] = fma(ai, bv[v], acc[i][g][v]);
            }
        }
    }
    const B alpha_b(alpha);
#pragma GCC unroll 16
    for (size_t g = 0; g < G; ++g)
#pragma GCC unroll 16
        for (size_t i = 0; i < Rows; ++i)
            store_tile_row<B>(acc[i][g], c + i * ldc + g * NR, alpha_b, col_scale ? col_scale + g * NR : nullptr,
                              bias ? bias + g * NR : nullptr, accumulate, NR);
}

// Panels side by side for a block of `rows` rows in gemm_wide_tile_kernel:
// 0 where the tile kernel is used (more rows; the plain C++ path, whose
// flash the extra kernels would cost). Up to 16 sums: AVX2's 16 registers
// hold 8 and the loads, AVX-512's 32 hold 16 (4 rows of int8 / binary16
// weights widened per k ran 1.15-1.2x slower as a 4-row tile than read in
// place).
// Helium (loads without an index register, 8 vector registers) keeps the
// tiles, whose loops step their pointers: the wide tile's 8 accumulators
// and indexed loads took 1.7x the instructions of two tiles of 1 x 8.
template <class B>
constexpr size_t wide_tile_panels(size_t rows) {
    return B::size == 1 || !indexed_addressing(batch_tag<B>()) ? 0
           : rows == 1                                        ? 4
           : rows == 2                                        ? 2
           : rows <= 4 && B::size >= 16                       ? 2
                                                              : 0;
}

// The wide tile for a block of `rows` rows (wide_tile_panels<B>(rows) > 0).
template <class B, class T>
void gemm_wide_tile(size_t rows, size_t kc, const float *const *a, const T *const *panels,
                    size_t panel_stride, float *c, size_t ldc, float alpha, const float *col_scale,
                    const float *bias, bool accumulate) {
    switch (rows) {
        case 1:
            return gemm_wide_tile_kernel<B, 1, wide_tile_panels<B>(1), T>(kc, a, panels, panel_stride, c, ldc,
                                                                          alpha, col_scale, bias, accumulate);
        case 2:
            return gemm_wide_tile_kernel<B, 2, wide_tile_panels<B>(2), T>(kc, a, panels, panel_stride, c, ldc,
                                                                          alpha, col_scale, bias, accumulate);
        default:
            if constexpr (wide_tile_panels<B>(4) > 0) {
                if (rows == 3)
                    return gemm_wide_tile_kernel<B, 3, wide_tile_panels<B>(3), T>(
                        kc, a, panels, panel_stride, c, ldc, alpha, col_scale, bias, accumulate);
                return gemm_wide_tile_kernel<B, 4, wide_tile_panels<B>(4), T>(
                    kc, a, panels, panel_stride, c, ldc, alpha, col_scale, bias, accumulate);
            }
    }
}

// C (M,N) = alpha * A (M,K) . P (+ bias (N)), or C += alpha * A . P when
// accumulate; P is the packed form of a (K, N) in panels of `panel_stride`
// columns: pack or pack_transposed (panel_stride = NR), or weights packed
// once for any path (panel_stride = max_panel_width, a multiple of every NR),
// whose panels the tile walks NR columns at a time.
// With T int8_t or uint16_t (binary16) the panels hold stored weights and
// col_scales (N, or nullptr) multiplies column j's sums.
// The plain C++ path (Cortex-M) keeps one row per tile for stored weights
// at any optimisation level: their tile kernels per row count would cost
// ~10 KB of flash in every image, for a speed-up the microcontroller's few
// registers mostly lose.
template <class B, class T>
constexpr size_t typed_tile_rows() {
    return B::size == 1 && !std::is_same<T, float>::value ? 1 : gemm_tile<B>::rows;
}

template <class B, class T>
void gemm_packed_typed(size_t M, size_t N, size_t K, float alpha, const float *A, size_t lda,
                       const T *packed, size_t panel_stride, const float *col_scales,
                       const float *bias, float *C, size_t ldc, bool accumulate) {
    constexpr size_t MR = typed_tile_rows<B, T>(), NR = gemm_tile<B>::width;
    for (size_t k0 = 0; k0 < K; k0 += gemm_depth_block) {
        const size_t kc = K - k0 < gemm_depth_block ? K - k0 : gemm_depth_block;
        const bool add_to_c = accumulate || k0 > 0;
        for (size_t i0 = 0, rows = 0; i0 < M; i0 += rows) {
            rows = M - i0 < MR ? M - i0 : MR;
            // Helium: 4 rows left of 3-row tiles go as 2 + 2, not 3 + 1
            // (a row alone costs 0.63 instructions a multiply-add, two
            // 0.47).
            if constexpr (!indexed_addressing(batch_tag<B>()) && MR == 3)
                if (M - i0 == 4) rows = 2;
            const gemm_tile_fn<T> tile = tile_kernel_for_rows<B, T>(rows, std::make_index_sequence<MR>());
            const float *a[MR];
            for (size_t i = 0; i < rows; ++i) a[i] = A + (i0 + i) * lda + k0;
            auto panel_at = [&](size_t p0) {
                return packed + p0 / panel_stride * panel_stride * K + k0 * panel_stride + p0 % panel_stride;
            };
            size_t p0 = 0;
            if constexpr (wide_tile_panels<B>(1) > 0) {
                const size_t G = wide_tile_panels<B>(rows);
                for (; G && N - p0 >= G * NR; p0 += G * NR) {
                    const T *panels[4];
                    for (size_t g = 0; g < G; ++g) panels[g] = panel_at(p0 + g * NR);
                    gemm_wide_tile<B, T>(rows, kc, a, panels, panel_stride, C + i0 * ldc + p0, ldc, alpha,
                                         col_scales ? col_scales + p0 : nullptr,
                                         bias && !add_to_c ? bias + p0 : nullptr, add_to_c);
                }
            }
            for (; p0 < N; p0 += NR)
                tile(kc, a,
                     panel_at(p0),
                     panel_stride, C + i0 * ldc + p0, ldc, N - p0 < NR ? N - p0 : NR, alpha,
                     col_scales ? col_scales + p0 : nullptr, bias && !add_to_c ? bias + p0 : nullptr,
                     add_to_c);
        }
    }
}

template <class B>
void gemm_packed(size_t M, size_t N, size_t K, float alpha, const float *A, size_t lda,
                 const float *packed, size_t panel_stride, const float *bias, float *C, size_t ldc,
                 bool accumulate) {
    gemm_packed_typed<B, float>(M, N, K, alpha, A, lda, packed, panel_stride, nullptr, bias, C, ldc,
                                accumulate);
}

// Stored weights packed once or per call (pack_typed_weights_transposed:
// max_panel_width panels): C (M,N) = A (M,K) . W^T * col_scales (+ bias).
template <class B, class T>
void gemm_packed_weights(size_t M, size_t N, size_t K, const float *A, size_t lda, const void *packed,
                         const float *col_scales, const float *bias, float *C, size_t ldc) {
    gemm_packed_typed<B, T>(M, N, K, 1.0f, A, lda, static_cast<const T *>(packed), max_panel_width,
                            col_scales, bias, C, ldc, false);
}

// One row of gemm_nt_direct: c (N) = a (K) . W (N,K)^T (+ bias), eight rows
// of W at a time, one reduction per output. A decode step's scores (one
// query against a cache's keys) would otherwise fill the TA-row tile with
// copies of its one row: 4x the multiplies on AVX-512 (measured: 8 heads of
// 64 against 1024 cached keys took 95 us, 65 of them outside the projections).
template <class B, size_t TW, class T>
void gemm_nt_direct_row_tile(size_t K, const float *a, const T *const *w, float *sums) {
    constexpr size_t W = B::size;
    const size_t full = K / W * W, tail = K - full;
    B acc[TW];
#pragma GCC unroll 8
    for (size_t u = 0; u < TW; ++u) acc[u] = B(0.0f);
    for (size_t k = 0; k < full; k += W) {
        const B av = B::load_unaligned(a + k);
#pragma GCC unroll 8
        for (size_t u = 0; u < TW; ++u) acc[u] = fma(av, load_weights<B>(w[u] + k), acc[u]);
    }
    if (tail) {
        const B av = load_partial<B>(a + full, tail, 0.0f);
        for (size_t u = 0; u < TW; ++u) acc[u] = fma(av, load_weights_partial<B>(w[u] + full, tail), acc[u]);
    }
#pragma GCC unroll 8
    for (size_t u = 0; u < TW; ++u) sums[u] = horizontal_sum(acc[u]);  // lane_sums' order: the tile path's bits
}

// c[j] = sum * (row_scales ? row_scales[j] : 1) * alpha + bias[j]: the
// scale of int8 row j of W, applied once to its sum, then alpha (attention's
// 1/sqrt(d), 1 for projections: exact).
inline float scaled_sum(float sum, const float *row_scales, float alpha, const float *bias, size_t j) {
    return (row_scales ? sum * row_scales[j] : sum) * alpha + (bias ? bias[j] : 0.0f);
}

template <class B, class T = float>
void gemm_nt_direct_row(size_t N, size_t K, const float *a, const T *Wm, size_t ldw, float alpha,
                        const float *bias, float *c, const float *row_scales) {
    constexpr size_t TW = compact_kernels<B>() ? 1 : 8;
    float sums[TW];
    size_t j0 = 0;
    for (; j0 + TW <= N; j0 += TW) {
        const T *w[TW];
        for (size_t u = 0; u < TW; ++u) w[u] = Wm + (j0 + u) * ldw;
        gemm_nt_direct_row_tile<B, TW>(K, a, w, sums);
        for (size_t u = 0; u < TW; ++u) c[j0 + u] = scaled_sum(sums[u], row_scales, alpha, bias, j0 + u);
    }
    for (; j0 < N; ++j0) {
        const T *w[1] = {Wm + j0 * ldw};
        gemm_nt_direct_row_tile<B, 1>(K, a, w, sums);
        c[j0] = scaled_sum(sums[0], row_scales, alpha, bias, j0);
    }
}

// acc[u] += a . w[u] over `steps` whole batches, one row of A against TW
// rows of W, the pointers stepping themselves: for batch types whose loads
// take no index register (Helium's take a load with writeback, where
// base + k cost an add a load, 16 instructions a step for 4
// multiply-adds). Each key vector feeds its multiply-add as soon as it is
// loaded (gemm_nt_direct_tile says why). Always inlined: as a call its
// accumulators would live in memory. The one-row score tiles and Helium's
// decode scores (decode.hpp) share it.
template <class B, size_t TW, class T>
EDGEATTN_WRAPPER void one_row_products_stepping(size_t steps, const float *a, const T *const *w, B (&acc)[TW]) {
    const T *wp[TW];
#pragma GCC unroll 16
    for (size_t u = 0; u < TW; ++u) wp[u] = w[u];
    for (size_t step = steps; step; --step) {  // the trip count once
        const B av = load_weights_and_step<B>(a);
#pragma GCC unroll 16
        for (size_t u = 0; u < TW; ++u) acc[u] = fma(av, load_weights_and_step<B>(wp[u]), acc[u]);
    }
}

// C (M,N) = A (M,K) . W (N,K)^T (+ bias) without packing, for a few rows
// of A (d2l's 8-row projections), where packing W would cost 3x the product.
// Both operands are read along K; a tile of TA rows of A by TW rows of W
// keeps TA * TW = W (the batch width) accumulators, all in registers (every
// loop here is unrolled), reduced together at the end by lane_sums (one
// transpose-and-add tree, not W reductions): lane t * TW + u of the result
// is a[t] . w[u] over K = full + tail (tail < W).
template <class B, size_t TA, size_t TW, class T>
B gemm_nt_direct_tile(size_t full, size_t tail, const float *const *a, const T *const *w) {
    constexpr size_t W = B::size;
    static_assert(TA * TW == W, "one accumulator per lane of the sums");
    B acc[W];
#pragma GCC unroll 16
    for (size_t i = 0; i < W; ++i) acc[i] = B(0.0f);
    if constexpr (TA == 1 && !indexed_addressing(batch_tag<B>())) {
        one_row_products_stepping<B, TW, T>(full / W, a[0], w, acc);
    } else if constexpr (TA == 1) {
        for (size_t k = 0; k < full; k += W) {
            // One row: each key vector feeds one multiply-add as soon as it
            // is loaded. Loading (widening) all TW first held TW + TW
            // registers, past AVX2's 16: GCC spilled an accumulator, and its
            // store and reload each step bounded the loop. (Stepping TW
            // pointers instead of one index cost AVX-512 one add a load: 8
            // kv heads over 1024 keys 2.7% slower.)
            const B av = B::load_unaligned(a[0] + k);
#pragma GCC unroll 16
            for (size_t u = 0; u < TW; ++u) acc[u] = fma(av, load_weights<B>(w[u] + k), acc[u]);
        }
    }
    for (size_t k = 0; TA > 1 && k < full; k += W) {
        B wv[TW];
#pragma GCC unroll 16
        for (size_t u = 0; u < TW; ++u) wv[u] = load_weights<B>(w[u] + k);
#pragma GCC unroll 16
        for (size_t t = 0; t < TA; ++t) {
            B av = B::load_unaligned(a[t] + k);
            if (TW > 1) keep_in_register(av);
#pragma GCC unroll 16
            for (size_t u = 0; u < TW; ++u) acc[t * TW + u] = fma(av, wv[u], acc[t * TW + u]);
        }
    }
    if (tail) {
        B wv[TW];
#pragma GCC unroll 16
        for (size_t u = 0; u < TW; ++u) wv[u] = load_weights_partial<B>(w[u] + full, tail);
#pragma GCC unroll 16
        for (size_t t = 0; t < TA; ++t) {
            const B av = load_partial<B>(a[t] + full, tail, 0.0f);
#pragma GCC unroll 16
            for (size_t u = 0; u < TW; ++u) acc[t * TW + u] = fma(av, wv[u], acc[t * TW + u]);
        }
    }
    return lane_sums(acc);
}

// The plain C++ path's tile (one lane, fp32 weights, not compact): TA rows
// of A by TW rows of W, one scalar accumulator each, so each loaded element
// meets TW (or TA) others: 6 loads for 8 multiply-adds, where a tile of one
// took 2 loads for each (on the Cortex-M4F the d2l block's projections ran
// at 7.4 instructions a multiply-add, more than naive loops). Each sum is
// the 1 x 1 tile's chain over k, so the bits are the same.
constexpr size_t scalar_direct_rows = 2, scalar_direct_cols = 4;

// f(i0, rows, a, j0, cols, w) for each tile of TA rows of A (M, K) by TW
// rows of W (N, K): the rows' and weight rows' pointers, those past the
// edge repeating the first (their results are not stored).
template <size_t TA, size_t TW, class T, class F>
void for_each_direct_tile(size_t M, size_t N, const float *A, size_t lda, const T *Wm, size_t ldw, F f) {
    for (size_t i0 = 0; i0 < M; i0 += TA) {
        const size_t rows = M - i0 < TA ? M - i0 : TA;
        const float *a[TA];
        for (size_t t = 0; t < TA; ++t) a[t] = A + (i0 + (t < rows ? t : 0)) * lda;
        for (size_t j0 = 0; j0 < N; j0 += TW) {
            const size_t cols = N - j0 < TW ? N - j0 : TW;
            const T *w[TW];
            for (size_t u = 0; u < TW; ++u) w[u] = Wm + (j0 + (u < cols ? u : 0)) * ldw;
            f(i0, rows, static_cast<const float *const *>(a), j0, cols, static_cast<const T *const *>(w));
        }
    }
}

template <class B>
void gemm_nt_direct_scalar_tiles(size_t M, size_t N, size_t K, float alpha, const float *A, size_t lda,
                                 const float *Wm, size_t ldw, const float *bias, float *C, size_t ldc) {
    constexpr size_t TA = scalar_direct_rows, TW = scalar_direct_cols;
    for_each_direct_tile<TA, TW>(M, N, A, lda, Wm, ldw,
                                 [&](size_t i0, size_t rows, const float *const *a, size_t j0, size_t cols,
                                     const float *const *w) {
        B acc[TA][TW];
#pragma GCC unroll 8
        for (size_t t = 0; t < TA; ++t)
#pragma GCC unroll 8
            for (size_t u = 0; u < TW; ++u) acc[t][u] = B(0.0f);
        for (size_t k = 0; k < K; ++k) {
            B wv[TW];
#pragma GCC unroll 8
            for (size_t u = 0; u < TW; ++u) wv[u] = B::load_unaligned(w[u] + k);
#pragma GCC unroll 8
            for (size_t t = 0; t < TA; ++t) {
                const B av = B::load_unaligned(a[t] + k);
#pragma GCC unroll 8
                for (size_t u = 0; u < TW; ++u) acc[t][u] = fma(av, wv[u], acc[t][u]);
            }
        }
        for (size_t t = 0; t < rows; ++t)
            for (size_t u = 0; u < cols; ++u)
                C[(i0 + t) * ldc + j0 + u] = scaled_sum(horizontal_sum(acc[t][u]), nullptr, alpha, bias, j0 + u);
    });
}

// scaled_sum as one function (built for size: inlined in each weight
// type's one-row product, it took 40 B more flash).
__attribute__((noinline)) inline float scaled_sum_out_of_line(float sum, const float *row_scales, float alpha,
                                                             const float *bias, size_t j) {
    return scaled_sum(sum, row_scales, alpha, bias, j);
}

// Rows of W a pass of the plain C++ path's one-row product: 8, each
// loaded element of the row of A meeting that many; when compact 4 for
// fp32 weights and one for stored ones (each type's pass is a kernel of
// its own: 4 rows of int8 and of binary16 cost ~500 B more flash).
template <class B, class T>
constexpr size_t scalar_row_weight_rows() {
    return !compact_kernels<B>() ? 8 : std::is_same<T, float>::value ? 4 : 1;
}

// c[j0, j0 + cols) of c (N) = alpha * a (K) . W (N,K)^T (+ bias,
// row_scales), one lane: a decode step's scores (one query against a
// head's keys) and one token's projections. TW rows of W a pass, every
// pointer stepping itself: the Cortex-M4F's floating-point loads take an
// immediate offset only, so a[k] and w[u] + k cost an address add a load
// (the 1 x 1 tile took 5 instructions a multiply-add, this 2.4). Rows
// past cols repeat the pass's first (their sums are not stored). Each sum
// is the 1 x 1 tile's chain over k, so the bits are the same.
template <class B, size_t TW, class T>
void gemm_nt_direct_scalar_pass(size_t j0, size_t cols, size_t K, float alpha, const float *a, const T *Wm,
                                size_t ldw, const float *row_scales, const float *bias, float *c) {
    const T *w[TW];
    w[0] = Wm + j0 * ldw;
    // Each row from the one before (built for size: 16 B less than the
    // products, and GCC -O3 schedules those better).
#pragma GCC unroll 8
    for (size_t u = 1; u < TW; ++u)
        w[u] = compact_kernels<B>() ? (u < cols ? w[u - 1] + ldw : w[0]) : Wm + (j0 + (u < cols ? u : 0)) * ldw;
    float acc[TW];
#pragma GCC unroll 8
    for (size_t u = 0; u < TW; ++u) acc[u] = 0.0f;
    // The trip count tested once at the bottom (as a while loop GCC -Os
    // tested it at the top and branched back: 3 instructions a pass).
    const float *ap = a;
    if (size_t k = K) {
        do {
            const float av = *ap++;
#pragma GCC unroll 8
            for (size_t u = 0; u < TW; ++u) acc[u] = fma(B(av), load_weights_and_step<B>(w[u]), B(acc[u])).value;
        } while (--k);
    }
    if constexpr (compact_kernels<B>()) {
        // The sums leave their registers once and the outputs are one
        // loop (unrolled, with the edge's tests: 200 B more flash).
        float sums[TW];
#pragma GCC unroll 8
        for (size_t u = 0; u < TW; ++u) sums[u] = acc[u];
        for (size_t u = 0; u < cols; ++u) c[j0 + u] = scaled_sum_out_of_line(sums[u], row_scales, alpha, bias, j0 + u);
    } else {
#pragma GCC unroll 8
        for (size_t u = 0; u < TW; ++u)
            if (u < cols) c[j0 + u] = scaled_sum(acc[u], row_scales, alpha, bias, j0 + u);
    }
}

// Not compact, the last rows of W (N mod 8 of them) go 4 a pass: 10 keys
// take 8 + 4 rows' work, not 16.
template <class B, class T>
void gemm_nt_direct_scalar_row(size_t N, size_t K, float alpha, const float *a, const T *Wm, size_t ldw,
                               const float *row_scales, const float *bias, float *c) {
    constexpr size_t TW = scalar_row_weight_rows<B, T>(), edge = TW > 4 ? 4 : TW;
    size_t j0 = 0;
    for (; j0 < N && (TW == edge || N - j0 > edge); j0 += TW)
        gemm_nt_direct_scalar_pass<B, TW, T>(j0, N - j0 < TW ? N - j0 : TW, K, alpha, a, Wm, ldw, row_scales,
                                             bias, c);
    if constexpr (TW > edge)
        if (j0 < N) gemm_nt_direct_scalar_pass<B, edge, T>(j0, N - j0, K, alpha, a, Wm, ldw, row_scales, bias, c);
}

// C = alpha * A . W^T (+ bias), W of stored weights T (int8: row_scales (N)
// multiply each output column).
template <class B, class T>
void gemm_nt_direct_typed(size_t M, size_t N, size_t K, float alpha, const float *A, size_t lda,
                          const T *Wm, size_t ldw, const float *row_scales, const float *bias, float *C,
                          size_t ldc) {
    if constexpr (B::size == 1 && std::is_same<T, float>::value && !compact_kernels<B>()) {
        if (M >= scalar_direct_rows) {
            gemm_nt_direct_scalar_tiles<B>(M, N, K, alpha, A, lda, Wm, ldw, bias, C, ldc);
            return;
        }
    }
    constexpr size_t W = B::size, TW = W < 4 ? W : 4, TA = W / TW;
    if (M < TA) {  // fewer rows than the tile: one row at a time
        for (size_t i = 0; i < M; ++i)
            gemm_nt_direct_row<B, T>(N, K, A + i * lda, Wm, ldw, alpha, bias, C + i * ldc, row_scales);
        return;
    }
    const size_t full = K / W * W, tail = K - full;
    for_each_direct_tile<TA, TW>(M, N, A, lda, Wm, ldw,
                                 [&](size_t i0, size_t rows, const float *const *a, size_t j0, size_t cols,
                                     const T *const *w) {
        alignas(64) float sums[W];
        gemm_nt_direct_tile<B, TA, TW, T>(full, tail, a, w).store_unaligned(sums);
        for (size_t t = 0; t < rows; ++t)
            for (size_t u = 0; u < cols; ++u)
                C[(i0 + t) * ldc + j0 + u] = scaled_sum(sums[t * TW + u], row_scales, alpha, bias, j0 + u);
    });
}

// gemm_nt_direct_typed, out of line: the plain C++ path's tiles (below)
// compiled apart from its one-row products, as they were before those
// existed (inlined beside them, GCC -O3 compiled the tiles' loop for the
// Cortex-M55 differently: d2l's projections of 8 rows 2% slower).
template <class B, class T>
__attribute__((noinline)) void gemm_nt_direct_tiles_apart(size_t M, size_t N, size_t K, float alpha, const float *A,
                                                          size_t lda, const T *Wm, size_t ldw,
                                                          const float *row_scales, const float *bias, float *C,
                                                          size_t ldc) {
    gemm_nt_direct_typed<B, T>(M, N, K, alpha, A, lda, Wm, ldw, row_scales, bias, C, ldc);
}

// The plain C++ path's C = alpha * A . W^T: one row of A at a time
// (gemm_nt_direct_scalar_row), but for fp32 weights' scalar tiles (rows of
// A two at a time) when not compact.
template <class B, class T>
void gemm_nt_direct_plain(size_t M, size_t N, size_t K, float alpha, const float *A, size_t lda, const T *Wm,
                          size_t ldw, const float *row_scales, const float *bias, float *C, size_t ldc) {
    if constexpr (std::is_same<T, float>::value && !compact_kernels<B>()) {
        if (M >= scalar_direct_rows) {
            gemm_nt_direct_tiles_apart<B, T>(M, N, K, alpha, A, lda, Wm, ldw, row_scales, bias, C, ldc);
            return;
        }
    }
    for (size_t i = 0; i < M; ++i)
        gemm_nt_direct_scalar_row<B, T>(N, K, alpha, A + i * lda, Wm, ldw, row_scales, bias, C + i * ldc);
}

template <class B>
void gemm_nt_direct(size_t M, size_t N, size_t K, float alpha, const float *A, size_t lda, const float *Wm,
                    size_t ldw, const float *bias, float *C, size_t ldc) {
    if constexpr (B::size == 1)
        gemm_nt_direct_plain<B, float>(M, N, K, alpha, A, lda, Wm, ldw, nullptr, bias, C, ldc);
    else
        gemm_nt_direct_typed<B, float>(M, N, K, alpha, A, lda, Wm, ldw, nullptr, bias, C, ldc);
}

template <class B, class T>
void gemm_nt_direct_weights(size_t M, size_t N, size_t K, float alpha, const float *A, size_t lda,
                            const void *Wm, size_t ldw, const float *row_scales, const float *bias, float *C,
                            size_t ldc) {
    if constexpr (B::size == 1)
        gemm_nt_direct_plain<B, T>(M, N, K, alpha, A, lda, static_cast<const T *>(Wm), ldw, row_scales, bias, C,
                                   ldc);
    else
        gemm_nt_direct_typed<B, T>(M, N, K, alpha, A, lda, static_cast<const T *>(Wm), ldw, row_scales, bias, C,
                                   ldc);
}

// One row of C (+)= a (K) . Bm (K, columns): V whole vectors and a partial
// one of `tail` columns, kept in registers for the whole pass over K.
// With stored rows of Bm (T int8_t / uint16_t), k_scales (K, or nullptr)
// scales row k: a KV cache's per-position value scales.
template <class B, size_t V, class T>
void gemm_nn_direct_columns(size_t K, const float *a, const T *Bm, size_t ldb, float *c,
                            size_t tail, bool accumulate, const float *k_scales) {
    constexpr size_t W = B::size;
    B acc[V + 1];
#pragma GCC unroll 9
    for (size_t v = 0; v < V; ++v) acc[v] = accumulate ? B::load_unaligned(c + v * W) : B(0.0f);
    acc[V] = accumulate && tail ? load_partial<B>(c + V * W, tail, 0.0f) : B(0.0f);
    for (size_t k = 0; k < K; ++k) {
        const float av = k_scales ? a[k] * k_scales[k] : a[k];
        const T *b = Bm + k * ldb;
#pragma GCC unroll 9
        for (size_t v = 0; v < V; ++v) acc[v] = fma_broadcast(av, load_weights<B>(b + v * W), acc[v]);
        if (tail) acc[V] = fma_broadcast(av, load_weights_partial<B>(b + V * W, tail), acc[V]);
    }
#pragma GCC unroll 9
    for (size_t v = 0; v < V; ++v) acc[v].store_unaligned(c + v * W);
    if (tail) store_partial(acc[V], c + V * W, tail);
}

// gemm_nn_direct_columns of `vectors` whole vectors (at most V; V of them
// leave no tail), the count chosen at run time.
template <class B, class T, size_t V>
void direct_columns_pass(size_t vectors, size_t K, const float *a, const T *Bm, size_t ldb, float *c,
                         size_t tail, bool accumulate, const float *k_scales) {
    if constexpr (V > 0)
        if (vectors < V)
            return direct_columns_pass<B, T, V - 1>(vectors, K, a, Bm, ldb, c, tail, accumulate, k_scales);
    gemm_nn_direct_columns<B, V, T>(K, a, Bm, ldb, c, tail, accumulate, k_scales);
}

// gemm_nn_direct_columns on the plain C++ path: CW columns of one row of
// C, the row of A, its scales and the rows of Bm stepping themselves (the
// Cortex-M4F's floating-point loads take an immediate offset only: a[k]
// and Bm + k * ldb cost an address add a load), the trip count tested
// once at the bottom. The same chain over k per column: the same bits.
template <class B, size_t CW, class T>
void gemm_nn_direct_scalar_pass(size_t K, const float *a, const T *b, size_t ldb, float *c, bool accumulate,
                                const float *k_scales) {
    float acc[CW];
#pragma GCC unroll 16
    for (size_t v = 0; v < CW; ++v) acc[v] = accumulate ? c[v] : 0.0f;
    if (K) {
        size_t k = K;
        do {
            float av = *a++;
            if constexpr (!std::is_same<T, float>::value) {
                if (k_scales) av *= *k_scales++;
            }
#pragma GCC unroll 16
            for (size_t v = 0; v < CW; ++v) acc[v] = fma_broadcast(av, load_weights<B>(b + v), B(acc[v])).value;
            b += ldb;
        } while (--k);
    }
#pragma GCC unroll 16
    for (size_t v = 0; v < CW; ++v) c[v] = acc[v];
}

// Columns a pass of the plain C++ path's gemm_nn_direct: 16 (a head of 16
// values in one pass over the keys, each loaded weight meeting 16 values),
// 4 when compact; one for stored rows (flash, as for their tiles).
template <class B, class T>
constexpr size_t scalar_direct_columns() {
    return !std::is_same<T, float>::value ? 1 : compact_kernels<B>() ? 4 : 16;
}

// C (M,N) = A (M,K) . Bm (K,N), or C += it, with Bm read in place: a few
// rows of attention weights times a KV cache's values, where packing the
// values would read and write every value once more than the product reads
// it. Columns go in chunks of up to 8 vectors, so a head of 64 values is
// one pass over K on AVX2 and AVX-512.
template <class B, class T>
void gemm_nn_direct_typed(size_t M, size_t N, size_t K, const float *A, size_t lda, const T *Bm,
                          size_t ldb, const float *k_scales, float *C, size_t ldc, bool accumulate) {
    if constexpr (B::size == 1) {
        constexpr size_t CW = scalar_direct_columns<B, T>();
        for (size_t i = 0; i < M; ++i) {
            const float *a = A + i * lda;
            float *c = C + i * ldc;
            size_t n0 = 0;
            for (; n0 + CW <= N; n0 += CW)
                gemm_nn_direct_scalar_pass<B, CW, T>(K, a, Bm + n0, ldb, c + n0, accumulate, k_scales);
            if constexpr (CW > 4)
                for (; n0 + 4 <= N; n0 += 4)
                    gemm_nn_direct_scalar_pass<B, 4, T>(K, a, Bm + n0, ldb, c + n0, accumulate, k_scales);
            if constexpr (CW > 1)
                for (; n0 < N; ++n0)
                    gemm_nn_direct_scalar_pass<B, 1, T>(K, a, Bm + n0, ldb, c + n0, accumulate, k_scales);
        }
    } else {
        // Built for size, passes of at most 4 vectors (Helium -Os: half the
        // instantiations; a wider head takes two passes over K).
        constexpr size_t W = B::size, most = built_for_size() ? 4 : 8;
        for (size_t i = 0; i < M; ++i) {
            for (size_t n0 = 0; n0 < N; n0 += most * W) {
                const size_t width = N - n0 < most * W ? N - n0 : most * W;
                const size_t vectors = width / W, tail = width % W;
                const float *a = A + i * lda;
                const T *b = Bm + n0;
                float *c = C + i * ldc + n0;
                direct_columns_pass<B, T, most>(vectors, K, a, b, ldb, c, tail, accumulate, k_scales);
            }
        }
    }
}

template <class B>
void gemm_nn_direct(size_t M, size_t N, size_t K, const float *A, size_t lda, const float *Bm,
                    size_t ldb, float *C, size_t ldc, bool accumulate) {
    gemm_nn_direct_typed<B, float>(M, N, K, A, lda, Bm, ldb, nullptr, C, ldc, accumulate);
}

template <class B, class T>
void gemm_nn_direct_stored(size_t M, size_t N, size_t K, const float *A, size_t lda, const void *Bm,
                           size_t ldb, const float *k_scales, float *C, size_t ldc, bool accumulate) {
    gemm_nn_direct_typed<B, T>(M, N, K, A, lda, static_cast<const T *>(Bm), ldb, k_scales, C, ldc, accumulate);
}

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
