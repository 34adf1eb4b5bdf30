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
#include <string.h>

#include "gemm.hpp"  // gemm_nt_direct_tile: the same sums, in the same order
#include "reduce.hpp"
#include "weight_load.hpp"

namespace edgeattn {
namespace detail {
namespace {

template <class B>
struct decode_tile {
    // Accumulators of a tile: AVX-512's 32 registers hold 4 rows x 4
    // vectors (a head of 64 in one pass) beside the 4 value vectors; the
    // 16-register paths 2 rows x 4 vectors; Helium's 8, one row.
    static constexpr bool few_registers = vector_registers(batch_tag<B>()) <= 8;
    static constexpr size_t rows = B::size >= 16 ? 4 : few_registers ? 1 : 2;
    static constexpr size_t vectors = 4;
    // Vectors a pass of a row left alone (a head's own step): 8, a head of
    // 64 in one pass on AVX2; 4 where 8 accumulators fill the registers.
    static constexpr size_t one_row_vectors = few_registers ? 4 : 8;
};

// acc[u] += p[j] * row j's batch u, for `pairs` pairs of rows from pj and
// row (both then stepped past them; rows ldv apart), by a hand-scheduled
// loop where the batch type has one (mve_asm.hpp: Helium, 4 batches of
// fp32); false here.
template <class B, size_t N, class T>
EDGEATTN_WRAPPER bool value_row_pairs(size_t, const float *&, const T *&, size_t, B (&)[N], batch_tag<B>) {
    return false;
}

// Rows [0, rows) of the tile (rows <= R; the others repeat row 0 and are
// not stored), columns of V vectors and, when Tail, a partial one of
// `tail` floats.
template <class B, size_t R, size_t V, bool Tail, class T>
void decode_values_tile(size_t n, const float *p, size_t ldp, const T *v, size_t ldv, float *c, size_t ldc,
                        size_t rows, size_t tail) {
    constexpr size_t W = B::size;
    const float *pr[R];
    float *cr[R];
    for (size_t i = 0; i < R; ++i) {
        pr[i] = p + (i < rows ? i : 0) * ldp;
        cr[i] = c + (i < rows ? i : 0) * ldc;
    }
    B acc[R][V + 1];
#pragma GCC unroll 8
    for (size_t i = 0; i < R; ++i) {
#pragma GCC unroll 8
        for (size_t u = 0; u < V; ++u) acc[i][u] = B::load_unaligned(cr[i] + u * W);
        acc[i][V] = Tail ? load_partial<B>(cr[i] + V * W, tail, 0.0f) : B(0.0f);
    }
    if constexpr (R == 1 && !indexed_addressing(batch_tag<B>())) {
        // Helium: the weight and the value row step themselves and the
        // trip count is made once (with v + j * ldv and pr[0][j] GCC kept
        // the stride and the weights' pointer on the stack: 17
        // instructions a key for 4 multiply-adds).
        const float *pj = pr[0];
        const T *row = v;
        size_t j = n;
        if (!Tail && value_row_pairs(n / 2, pj, row, ldv, acc[0], batch_tag<B>())) j = n % 2;
        for (; j; --j, row += ldv) {
            const float a = *pj++;
#pragma GCC unroll 8
            for (size_t u = 0; u < V; ++u) acc[0][u] = fma_broadcast(a, load_weights<B>(row + u * W), acc[0][u]);
            if (Tail) acc[0][V] = fma_broadcast(a, load_weights_partial<B>(row + V * W, tail), acc[0][V]);
        }
    } else {
        for (size_t j = 0; j < n; ++j) {
            const T *row = v + j * ldv;
            if (R == 1) {
                // One row: each value vector feeds its multiply-add as
                // soon as it is loaded (gemm_nt_direct_tile says why).
                const float a = pr[0][j];
#pragma GCC unroll 8
                for (size_t u = 0; u < V; ++u) acc[0][u] = fma_broadcast(a, load_weights<B>(row + u * W), acc[0][u]);
                if (Tail) acc[0][V] = fma_broadcast(a, load_weights_partial<B>(row + V * W, tail), acc[0][V]);
                continue;
            }
            B bv[V + 1];
#pragma GCC unroll 8
            for (size_t u = 0; u < V; ++u) {
                bv[u] = load_weights<B>(row + u * W);
                if (R > 1) keep_in_register(bv[u]);
            }
            if (Tail) bv[V] = load_weights_partial<B>(row + V * W, tail);
#pragma GCC unroll 8
            for (size_t i = 0; i < R; ++i) {
                const float a = pr[i][j];
#pragma GCC unroll 8
                for (size_t u = 0; u < V; ++u) acc[i][u] = fma_broadcast(a, bv[u], acc[i][u]);
                if (Tail) acc[i][V] = fma_broadcast(a, bv[V], acc[i][V]);
            }
        }
    }
    for (size_t i = 0; i < rows; ++i) {
#pragma GCC unroll 8
        for (size_t u = 0; u < V; ++u) acc[i][u].store_unaligned(cr[i] + u * W);
        if (Tail) store_partial(acc[i][V], cr[i] + V * W, tail);
    }
}

// The tile for `vectors` (< V) whole vectors and a partial one of `tail`
// floats (if any).
template <class B, size_t R, size_t V, class T>
void decode_values_tail(size_t vectors, size_t n, const float *p, size_t ldp, const T *v, size_t ldv, float *c,
                        size_t ldc, size_t rows, size_t tail) {
    if constexpr (V == 0) {
        (void)vectors, (void)n, (void)p, (void)ldp, (void)v, (void)ldv, (void)c, (void)ldc, (void)rows, (void)tail;
    } else if (vectors == V - 1) {
        if (tail)
            decode_values_tile<B, R, V - 1, true, T>(n, p, ldp, v, ldv, c, ldc, rows, tail);
        else
            decode_values_tile<B, R, V - 1, false, T>(n, p, ldp, v, ldv, c, ldc, rows, 0);
    } else {
        decode_values_tail<B, R, V - 1, T>(vectors, n, p, ldp, v, ldv, c, ldc, rows, tail);
    }
}

// Columns [0, N) of rows [0, rows) through tiles of R rows by up to Most
// vectors.
template <class B, size_t R, size_t Most, class T>
void decode_values_columns(size_t n, const float *p, size_t ldp, const T *v, size_t ldv, float *c, size_t ldc,
                           size_t rows, size_t N) {
    constexpr size_t W = B::size;
    for (size_t n0 = 0; n0 < N; n0 += Most * W) {
        const size_t width = N - n0 < Most * W ? N - n0 : Most * W;
        const size_t vectors = width / W, tail = width % W;
        if (vectors == Most)
            decode_values_tile<B, R, Most, false, T>(n, p, ldp, v + n0, ldv, c + n0, ldc, rows, 0);
        else
            decode_values_tail<B, R, Most, T>(vectors, n, p, ldp, v + n0, ldv, c + n0, ldc, rows, tail);
    }
}

// C (M, N) += P (M, K) . (scales[k] * V[k][:]) (scales nullptr: 1), V (K, N)
// stored rows of T, row stride ldv. Whole tiles of decode_tile<B>::rows
// rows, then the rows left one at a time (a head's own decode step: one
// row, whose value rows feed no other), 8 vectors a pass: a head of 64 in
// one pass over its value rows on AVX2 too (two half-row passes each
// fetch every row of a block anew from memory).
template <class B, class T>
void decode_values_rows(size_t M, size_t N, size_t K, const float *P, size_t ldp, const T *V, size_t ldv, float *C,
                        size_t ldc) {
    constexpr size_t R = decode_tile<B>::rows;
    size_t i0 = 0;
    for (; i0 + R <= M; i0 += R)
        decode_values_columns<B, R, decode_tile<B>::vectors, T>(K, P + i0 * ldp, ldp, V, ldv, C + i0 * ldc, ldc, R,
                                                                N);
    for (; i0 < M; ++i0)
        decode_values_columns<B, 1, decode_tile<B>::one_row_vectors, T>(K, P + i0 * ldp, ldp, V, ldv, C + i0 * ldc,
                                                                         ldc, 1, N);
}

// y[j] = x[j] * s[j], j < n.
template <class B>
void times_scales(const float *x, const float *s, float *y, size_t n) {
    constexpr size_t W = B::size;
    size_t j = 0;
    for (; j + W <= n; j += W) (B::load_unaligned(x + j) * B::load_unaligned(s + j)).store_unaligned(y + j);
    for (; j < n; ++j) y[j] = x[j] * s[j];
}

// Keys per pass of a scaled weighted sum: its weights times the scales go
// through a buffer on the stack, decode_tile<B>::rows rows of this many.
constexpr size_t decode_scaled_keys = 256;

template <class B, class T>
void decode_values(size_t M, size_t N, size_t K, const float *P, size_t ldp, const void *Vm, size_t ldv,
                   const float *scales, float *C, size_t ldc) {
    const T *V = static_cast<const T *>(Vm);
    if (!scales) {
        decode_values_rows<B, T>(M, N, K, P, ldp, V, ldv, C, ldc);
        return;
    }
    // int8 rows: each weight times its position's scale once, not once per
    // tile of columns (the same product, (p * scale) * v, in the same order).
    constexpr size_t R = decode_tile<B>::rows;
    alignas(64) float scaled[R * decode_scaled_keys];
    for (size_t i0 = 0; i0 < M; i0 += R) {
        const size_t rows = M - i0 < R ? M - i0 : R;
        for (size_t k0 = 0; k0 < K; k0 += decode_scaled_keys) {
            const size_t n = K - k0 < decode_scaled_keys ? K - k0 : decode_scaled_keys;
            for (size_t i = 0; i < rows; ++i)
                times_scales<B>(P + (i0 + i) * ldp + k0, scales + k0, scaled + i * decode_scaled_keys, n);
            decode_values_rows<B, T>(rows, N, n, scaled, decode_scaled_keys, V + k0 * ldv, ldv, C + i0 * ldc, ldc);
        }
    }
}

// Scores of a decode step: S (M, N) = alpha * A (M, K) . W (N, K)^T, times
// scales[j] (int8 keys), W stored rows read in place. A tile of TA rows by
// TW keys (TA * TW = B::size) keeps one accumulator per score over K and
// reduces them together (lane_sums: lane t * TW + u is row t, key u); each
// key row loads once per tile and feeds TA rows. A score's bits depend on
// its row and key alone. The tile's setup is made once per TA rows (a head
// of 64 is 4 or 8 steps of the K loop: per-tile setup would cost more than
// the products).
template <class B, size_t TA, class T>
void decode_scores_rows(size_t N, size_t K, float alpha, const float *const *ar, const T *Wm, size_t ldw,
                        float *c, size_t ldc, size_t rows) {
    constexpr size_t W = B::size, TW = W / TA;
    const size_t full = K / W * W, tail = K - full;
    const B alpha_v(alpha);
    for (size_t j0 = 0; j0 < N; j0 += TW) {
        const size_t cols = N - j0 < TW ? N - j0 : TW;
        const T *wr[TW];
#pragma GCC unroll 16
        for (size_t u = 0; u < TW; ++u) wr[u] = Wm + (j0 + (u < cols ? u : 0)) * ldw;
        alignas(64) float sums[W];
        (gemm_nt_direct_tile<B, TA, TW, T>(full, tail, ar, wr) * alpha_v).store_aligned(sums);
        float *out = c + j0;
        if (rows == TA && cols == TW) {
#pragma GCC unroll 16
            for (size_t t = 0; t < TA; ++t) memcpy(out + t * ldc, sums + t * TW, TW * sizeof(float));
        } else {
            for (size_t t = 0; t < rows; ++t)
                for (size_t u = 0; u < cols; ++u) out[t * ldc + u] = sums[t * TW + u];
        }
    }
}

// One row's scores, W keys a step, the tile's loop and reduction inline
// (gemm_nt_direct_tile's one-row form: the same sums in the same order).
// For Helium, whose tile call cost more than its loop on a head of 16: the
// call saved and restored Q4-Q7 and eight core registers, zeroed and
// reduced its accumulators, for 4 steps of 4 multiply-adds (decode of 4
// heads over 256 keys: 120 instructions a tile, 40 of them the products').
template <class B, class T>
void decode_scores_one_row(size_t N, size_t K, float alpha, const float *a, const T *Wm, size_t ldw, float *c) {
    constexpr size_t W = B::size;
    const size_t full = K / W * W, tail = K - full;
    size_t j0 = 0;
    for (; j0 + W <= N; j0 += W) {
        B acc[W];
#pragma GCC unroll 16
        for (size_t u = 0; u < W; ++u) acc[u] = B(0.0f);
        const T *w[W];
#pragma GCC unroll 16
        for (size_t u = 0; u < W; ++u) w[u] = Wm + (j0 + u) * ldw;
        one_row_products_stepping<B, W, T>(full / W, a, w, acc);
        if (tail) {
            const B av = load_partial<B>(a + full, tail, 0.0f);
#pragma GCC unroll 16
            for (size_t u = 0; u < W; ++u) acc[u] = fma(av, load_weights_partial<B>(w[u] + full, tail), acc[u]);
        }
        (lane_sums(acc) * B(alpha)).store_unaligned(c + j0);
    }
    if (j0 < N) {
        const float *ar[1] = {a};
        decode_scores_rows<B, 1, T>(N - j0, K, alpha, ar, Wm + j0 * ldw, ldw, c + j0, 0, 1);
    }
}

// One row's scores against keys of a small head, by a hand-scheduled loop
// where the batch type has one for the key type (mve_asm.hpp: Helium, fp32
// heads of 16); returns the keys done (a prefix of the N), 0 here.
template <class B, class T>
size_t small_head_scores(size_t, size_t, float, const float *, const T *, size_t, float *, batch_tag<B>) {
    return 0;
}

template <class B, size_t TA, class T>
void decode_scores_tiles(size_t M, size_t N, size_t K, float alpha, const float *A, size_t lda, const T *Wm,
                         size_t ldw, const float *scales, float *C, size_t ldc) {
    for (size_t i0 = 0; i0 < M; i0 += TA) {
        const size_t rows = M - i0 < TA ? M - i0 : TA;
        const float *ar[TA];
        for (size_t t = 0; t < TA; ++t) ar[t] = A + (i0 + (t < rows ? t : 0)) * lda;
        decode_scores_rows<B, TA, T>(N, K, alpha, ar, Wm, ldw, C + i0 * ldc, ldc, rows);
        // int8 keys: each score times its key's scale, a row at a time.
        if (scales)
            for (size_t t = 0; t < rows; ++t) times_scales<B>(C + (i0 + t) * ldc, scales, C + (i0 + t) * ldc, N);
    }
}

template <class B, class T>
void small_head_or_one_row(size_t N, size_t K, float alpha, const float *a, const T *w, size_t ldw, float *c) {
    const size_t done = small_head_scores(N, K, alpha, a, w, ldw, c, batch_tag<B>());
    if (done < N) decode_scores_one_row<B, T>(N - done, K, alpha, a, w + done * ldw, ldw, c + done);
}

// Rows per tile: up to 4 (a grouped step's 4 or 8 query heads), fewer
// for fewer rows so no lane computes a copy (one head: TW = B::size keys).
template <class B, class T>
void decode_scores(size_t M, size_t N, size_t K, float alpha, const float *A, size_t lda, const void *Wm,
                   size_t ldw, const float *scales, float *C, size_t ldc) {
    const T *w = static_cast<const T *>(Wm);
    if (M >= 4 && B::size >= 4)
        decode_scores_tiles<B, (B::size >= 4 ? 4 : 1), T>(M, N, K, alpha, A, lda, w, ldw, scales, C, ldc);
    else if (M >= 2 && B::size >= 2)
        decode_scores_tiles<B, (B::size >= 2 ? 2 : 1), T>(M, N, K, alpha, A, lda, w, ldw, scales, C, ldc);
    else if (vector_registers(batch_tag<B>()) <= 8 && M == 1 && !scales)
        small_head_or_one_row<B, T>(N, K, alpha, A, w, ldw, C);
    else
        decode_scores_tiles<B, 1, T>(M, N, K, alpha, A, lda, w, ldw, scales, C, ldc);
}

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
