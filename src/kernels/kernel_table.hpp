// The kernels one instruction-set path provides, as a table of function
// pointers. Each src/arch/<isa>.cpp fills one table from the templates in
// this folder, compiled with that ISA's flags; dispatch.cpp picks a table
// once. Kernels never validate and never allocate: the entry points in src/
// have done both.
#ifndef EDGEATTN_KERNELS_KERNEL_TABLE_HPP
#define EDGEATTN_KERNELS_KERNEL_TABLE_HPP

#include <stddef.h>

#include "edgeattn/edgeattn.h"

namespace edgeattn {
namespace detail {

struct kernel_table {
    edgeattn_isa isa;

    // C (M,N) = alpha * A (M,K) . B (N,K)^T (+ bias (N) when not null).
    // A projection x W^T + b (W in torch.nn.Linear layout) and the scores
    // Q K^T / sqrt(d) are both this shape. Rows are lda/ldb/ldc floats apart.
    void (*gemm_nt)(size_t M, size_t N, size_t K, float alpha, const float *A, size_t lda,
                    const float *B, size_t ldb, const float *bias, float *C, size_t ldc);

    // C (M,N) = A (M,K) . B (K,N): attention weights times values.
    void (*gemm_nn)(size_t M, size_t N, size_t K, const float *A, size_t lda, const float *B,
                    size_t ldb, float *C, size_t ldc);

    // d2l's masked softmax of one row of `keys` scores: positions >= valid
    // count as -1e6. y may equal x.
    void (*masked_softmax_row)(const float *x, float *y, size_t keys, size_t valid);

    // Additive attention scores of one query against `keys` keys:
    // scores[j] = sum_h w_v[h] * tanh(query[h] + keys[j * ldk + h]), h < num_hiddens.
    void (*additive_scores_row)(const float *query, const float *keys, size_t num_keys,
                                size_t ldk, const float *w_v, size_t num_hiddens,
                                float *scores);

    // y[i] = x[i] + p[i] for i < n (y may equal x).
    void (*add)(const float *x, const float *p, float *y, size_t n);
};

// The tables that exist in this build (defined in src/arch/*.cpp).
extern const kernel_table scalar_kernels;
#if defined(EDGEATTN_HAVE_SSE2)
extern const kernel_table sse2_kernels;
#endif
#if defined(EDGEATTN_HAVE_AVX2)
extern const kernel_table avx2_kernels;
#endif
#if defined(EDGEATTN_HAVE_AVX512)
extern const kernel_table avx512_kernels;
#endif
#if defined(EDGEATTN_HAVE_NEON)
extern const kernel_table neon_kernels;
#endif

// The table in use (chosen at the first call; see dispatch.cpp).
const kernel_table &active_kernels();

}  // namespace detail
}  // namespace edgeattn

#endif
