// The weighted sum of a decode step (one query token, the `rows` query heads
// that share a key/value head): out (rows, dv) += p (rows, n) . V (n, dv),
// V a KV cache's rows read in place, in fp32, int8 (times a scale per
// position) or binary16, widened in registers.
//
// gemm_nn_direct reads a value row once per query row; here a tile of
// decode_tile<B>::rows query rows by `vectors` column vectors stays in
// registers over the block of keys, so each value row is loaded once per
// tile and feeds rows * vectors fused multiply-adds. Each output element's
// sum runs over the keys in order whatever rows share its tile, so a row's
// bits never depend on its neighbours.
#ifndef EDGEATTN_KERNELS_DECODE_HPP
#define EDGEATTN_KERNELS_DECODE_HPP

#include <stddef.h>

#include "reduce.hpp"
#include "weight_load.hpp"

namespace edgeattn {
namespace detail {
namespace {

template <class B>
struct decode_tile {
    // Accumulators of a tile: AVX-512's 32 registers hold 4 rows x 4
    // vectors (a head of 64 in one pass) beside the 4 value vectors; the
    // 16-register paths 2 rows x 4 vectors.
    static constexpr size_t rows = B::size >= 16 ? 4 : 2;
    static constexpr size_t vectors = 4;
};

// Rows [0, rows) of the tile (rows <= R; the others repeat row 0 and are
// not stored), columns of V vectors and a partial one of `tail` floats.
template <class B, size_t R, size_t V, class T>
void decode_values_tile(size_t n, const float *const *p, const T *v, size_t ldv, const float *scales,
                        float *const *c, size_t rows, size_t tail) {
    constexpr size_t W = B::size;
    B acc[R][V + 1];
#pragma GCC unroll 8
    for (size_t i = 0; i < R; ++i) {
#pragma GCC unroll 8
        for (size_t u = 0; u < V; ++u) acc[i][u] = B::load_unaligned(c[i] + u * W);
        acc[i][V] = tail ? load_partial<B>(c[i] + V * W, tail, 0.0f) : B(0.0f);
    }
    for (size_t j = 0; j < n; ++j) {
        const T *row = v + j * ldv;
        B bv[V + 1];
#pragma GCC unroll 8
        for (size_t u = 0; u < V; ++u) bv[u] = load_weights<B>(row + u * W);
        if (tail) bv[V] = load_weights_partial<B>(row + V * W, tail);
#pragma GCC unroll 8
        for (size_t i = 0; i < R; ++i) {
            const B a(scales ? p[i][j] * scales[j] : p[i][j]);
#pragma GCC unroll 8
            for (size_t u = 0; u < V; ++u) acc[i][u] = fma(a, bv[u], acc[i][u]);
            if (tail) acc[i][V] = fma(a, bv[V], acc[i][V]);
        }
    }
    for (size_t i = 0; i < rows; ++i) {
#pragma GCC unroll 8
        for (size_t u = 0; u < V; ++u) acc[i][u].store_unaligned(c[i] + u * W);
        if (tail) store_partial(acc[i][V], c[i] + V * W, tail);
    }
}

// C (M, N) += P (M, K) . (scales[k] * V[k][:]) (scales nullptr: 1), V (K, N)
// stored rows of T, row stride ldv.
template <class B, class T>
void decode_values(size_t M, size_t N, size_t K, const float *P, size_t ldp, const void *Vm, size_t ldv,
                   const float *scales, float *C, size_t ldc) {
    constexpr size_t W = B::size, R = decode_tile<B>::rows, most = decode_tile<B>::vectors;
    const T *V = static_cast<const T *>(Vm);
    for (size_t i0 = 0; i0 < M; i0 += R) {
        const size_t rows = M - i0 < R ? M - i0 : R;
        for (size_t n0 = 0; n0 < N; n0 += most * W) {
            const size_t width = N - n0 < most * W ? N - n0 : most * W;
            const size_t vectors = width / W, tail = width % W;
            const float *p[R];
            float *c[R];
            for (size_t i = 0; i < R; ++i) {
                const size_t r = i0 + (i < rows ? i : 0);
                p[i] = P + r * ldp;
                c[i] = C + r * ldc + n0;
            }
            switch (vectors) {
                case 0: decode_values_tile<B, R, 0, T>(K, p, V + n0, ldv, scales, c, rows, tail); break;
                case 1: decode_values_tile<B, R, 1, T>(K, p, V + n0, ldv, scales, c, rows, tail); break;
                case 2: decode_values_tile<B, R, 2, T>(K, p, V + n0, ldv, scales, c, rows, tail); break;
                case 3: decode_values_tile<B, R, 3, T>(K, p, V + n0, ldv, scales, c, rows, tail); break;
                default: decode_values_tile<B, R, most, T>(K, p, V + n0, ldv, scales, c, rows, 0); break;
            }
        }
    }
}

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
