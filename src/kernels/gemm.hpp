// Matrix products of attention, written once for any batch type.
//
// gemm_nt: C (M,N) = alpha * A (M,K) . B (N,K)^T (+ bias). Both operands are
//   read along K, so each output is a dot product; four columns of B share
//   each load of A's row.
// gemm_nn: C (M,N) = A (M,K) . B (K,N). Each output row is a sum of rows of
//   B scaled by A's entries, accumulated in registers a batch of columns at
//   a time.
#ifndef EDGEATTN_KERNELS_GEMM_HPP
#define EDGEATTN_KERNELS_GEMM_HPP

#include <stddef.h>

#include "reduce.hpp"

namespace edgeattn {
namespace detail {
namespace {

template <class B>
void gemm_nt(size_t M, size_t N, size_t K, float alpha, const float *A, size_t lda,
             const float *Bm, size_t ldb, const float *bias, float *C, size_t ldc) {
    for (size_t i = 0; i < M; ++i) {
        const float *a = A + i * lda;
        float *c = C + i * ldc;
        size_t j = 0;
        for (; j + 4 <= N; j += 4) {
            const float *b0 = Bm + j * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
            B acc0(0.0f), acc1(0.0f), acc2(0.0f), acc3(0.0f);
            size_t k = 0;
            for (; k + B::size <= K; k += B::size) {
                const B av = B::load_unaligned(a + k);
                acc0 = fma(av, B::load_unaligned(b0 + k), acc0);
                acc1 = fma(av, B::load_unaligned(b1 + k), acc1);
                acc2 = fma(av, B::load_unaligned(b2 + k), acc2);
                acc3 = fma(av, B::load_unaligned(b3 + k), acc3);
            }
            float s0 = hadd(acc0), s1 = hadd(acc1), s2 = hadd(acc2), s3 = hadd(acc3);
            for (; k < K; ++k) {
                s0 += a[k] * b0[k];
                s1 += a[k] * b1[k];
                s2 += a[k] * b2[k];
                s3 += a[k] * b3[k];
            }
            c[j] = alpha * s0 + (bias ? bias[j] : 0.0f);
            c[j + 1] = alpha * s1 + (bias ? bias[j + 1] : 0.0f);
            c[j + 2] = alpha * s2 + (bias ? bias[j + 2] : 0.0f);
            c[j + 3] = alpha * s3 + (bias ? bias[j + 3] : 0.0f);
        }
        for (; j < N; ++j) c[j] = alpha * dot<B>(a, Bm + j * ldb, K) + (bias ? bias[j] : 0.0f);
    }
}

template <class B>
void gemm_nn(size_t M, size_t N, size_t K, const float *A, size_t lda, const float *Bm,
             size_t ldb, float *C, size_t ldc) {
    for (size_t i = 0; i < M; ++i) {
        const float *a = A + i * lda;
        float *c = C + i * ldc;
        size_t n = 0;
        for (; n + B::size <= N; n += B::size) {
            B acc(0.0f);
            for (size_t k = 0; k < K; ++k) acc = fma(B(a[k]), B::load_unaligned(Bm + k * ldb + n), acc);
            acc.store_unaligned(c + n);
        }
        for (; n < N; ++n) {
            float acc = 0.0f;
            for (size_t k = 0; k < K; ++k) acc += a[k] * Bm[k * ldb + n];
            c[n] = acc;
        }
    }
}

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
