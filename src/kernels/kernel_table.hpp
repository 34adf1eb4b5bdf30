// The kernels one instruction-set path provides, as a table of function
// pointers. Each src/arch/<isa>.cpp fills one table from the templates in
// this folder, compiled with that ISA's flags; dispatch.cpp picks a table
// once. Kernels never validate and never allocate: the entry points in src/
// have done both.
#ifndef EDGEATTN_KERNELS_KERNEL_TABLE_HPP
#define EDGEATTN_KERNELS_KERNEL_TABLE_HPP

#include <stddef.h>

#include "../features.hpp"
#include "edgeattn/edgeattn.h"

namespace edgeattn {
namespace detail {

// d2l's score for masked positions (sequence_mask's value in masked_softmax).
constexpr float masked_score = -1e6f;

// The keys [lo, hi) a row of scores sees (lo <= hi <= keys); the others
// count as masked.
struct key_interval {
    size_t lo, hi;
};

// Whether v is every one of `keys` keys: nothing masked.
inline bool sees_every_key(key_interval v, size_t keys) { return v.lo == 0 && v.hi == keys; }

// Products with stored (int8 or binary16) weights W (N, K), widened in
// registers: C (M,N) = A (M,K) . W^T, times scales[j] per output column
// (int8's per-channel scales; nullptr for binary16), plus bias (or nullptr).
struct stored_weight_kernels {
    // W^T packed in max_panel_width panels of the stored type
    // (pack_stored_weights_transposed), once or per call.
    void (*gemm_packed)(size_t M, size_t N, size_t K, const float *A, size_t lda, const void *packed,
                        const float *scales, const float *bias, float *C, size_t ldc);
    // W (N, K), row stride ldw, read in place: for few rows; the sums are
    // multiplied by scales[j] and then alpha (attention's 1/sqrt(d)).
    void (*gemm_nt_direct)(size_t M, size_t N, size_t K, float alpha, const float *A, size_t lda,
                           const void *W, size_t ldw, const float *scales, const float *bias, float *C,
                           size_t ldc);
};

struct kernel_table {
    edgeattn_isa isa;
    size_t panel_width;  // NR: columns per packed panel (<= max_panel_width)

    // Matrix products go through a packed right-hand side (see gemm.hpp);
    // the three are null on a path that never packs (make_kernel_table.hpp),
    // whose products read their operands in place: ask packs().
    // pack_transposed: b (n, k) -> packed b^T, for x W^T and Q K^T.
    void (*pack_transposed)(const float *b, size_t ldb, size_t n, size_t k, float *packed);
    // pack: b (k, n) -> packed b, for weights . V.
    void (*pack)(const float *b, size_t ldb, size_t k, size_t n, float *packed);
    // C (M,N) = alpha * A (M,K) . packed (+ bias (N)), or C += alpha * A . packed;
    // panel_stride: panel_width for pack / pack_transposed, max_panel_width
    // for weights packed once (edgeattn_mha_pack, edgeattn_dense_pack).
    void (*gemm_packed)(size_t M, size_t N, size_t K, float alpha, const float *A, size_t lda,
                        const float *packed, size_t panel_stride, const float *bias, float *C,
                        size_t ldc, bool accumulate);

    // C (M,N) = alpha * A (M,K) . W (N,K)^T (+ bias), W read in place: for
    // few rows.
    void (*gemm_nt_direct)(size_t M, size_t N, size_t K, float alpha, const float *A, size_t lda,
                           const float *W, size_t ldw, const float *bias, float *C, size_t ldc);
    // C (M,N) = A (M,K) . Bm (K,N), or C += it, Bm read in place: a few rows
    // of weights times the values of a KV cache, each value row read once.
    void (*gemm_nn_direct)(size_t M, size_t N, size_t K, const float *A, size_t lda,
                           const float *Bm, size_t ldb, float *C, size_t ldc, bool accumulate);

    // d2l's masked softmax of `rows` rows of `keys` scores, row r at x + r * ld
    // (y + r * ld; y may equal x): positions outside visible[r] count as -1e6;
    // visible null: every row sees every key.
    void (*masked_softmax_rows)(const float *x, float *y, size_t ld, size_t rows, size_t keys,
                                const key_interval *visible);

    // One key block of a streaming softmax row, visible part [lo, hi)
    // (softmax.hpp); returns the factor for what was accumulated before.
    float (*online_softmax_block)(const float *s, float *p, size_t n, size_t lo, size_t hi,
                                  float *running_max, float *running_sum);

    // y[i] = exp(x[i]) with exp.hpp's polynomial (its error bound is tested
    // through this entry; the streaming softmax's masked-key factors use it,
    // so no image links libm's expf).
    void (*exp)(const float *x, float *y, size_t n);
    void (*exp_nonpositive)(const float *x, float *y, size_t n);  // softmax's variant

    // x[i] = c tanh(x[i] / c), the scores' softcap (softcap.hpp: tanh from
    // the exp polynomial, its error bound tested through this entry).
    void (*softcap)(float *x, size_t n, float c);

    // y = x + p; y *= a; y += a * x (n floats; y may equal x).
    void (*add)(const float *x, const float *p, float *y, size_t n);
    void (*scale)(float *y, size_t n, float a);
    void (*add_scaled)(const float *x, float a, float *y, size_t n);
    // y *= a with every zero +0; returns whether all n results are finite.
    bool (*scale_final)(float *y, size_t n, float a);
    // x = the n binary16 values h, widened (exactly): a call's fp16
    // tensors (options.tensor_type) into their fp32 copies.
    void (*widen_half)(const uint16_t *h, size_t n, float *x);
    // h = the n floats x rounded to binary16 (nearest even, beyond +-65504
    // +-inf, NaN quiet): a call's fp16 outputs, a cache's fp16 rows.
    void (*round_half)(const float *x, size_t n, uint16_t *h);
};

// Whether path k packs fp32 operands; a build none of whose paths packs
// tests a constant, and its packing branches are not compiled in. The
// library's own: with_packing reads the library's private path macros, so
// a test asks k.gemm_packed (internal linkage: no other definition merges).
namespace {
inline bool packs(const kernel_table &k) { return with_packing && k.gemm_packed; }
}  // namespace

// Kernels that only some operations call live in tables of their own,
// reached only through those operations, so a firmware image without them
// does not carry them (--gc-sections drops what nothing references; a
// pointer in kernel_table would keep them in every image).

// Additive attention's scores (they bring tanhf and expm1f: ~1 KB of
// Cortex-M4F flash).
struct additive_kernel_table {
    // Scores of one query against `keys` keys:
    // scores[j] = sum_h w_v[h] * tanh(query[h] + keys[j * ldk + h]), h < num_hiddens.
    void (*scores_row)(const float *query, const float *keys, size_t num_keys, size_t ldk,
                       const float *w_v, size_t num_hiddens, float *scores);
};

// Products with stored weights, for the ops with projections (an image
// of fp32 attention alone, sdpa, links none of them: 1.1 KB of
// Cortex-M4F flash).
struct stored_weight_table {
    stored_weight_kernels int8_weights;  // int8_t
    stored_weight_kernels half_weights;  // uint16_t holding binary16
};

// d2l's masked softmax as an op of its own (edgeattn_masked_softmax): the
// kernel_table's entry, in a table an image that calls only the softmax
// links instead of every kernel of the path.
struct softmax_kernel_table {
    void (*masked_softmax_rows)(const float *x, float *y, size_t ld, size_t rows, size_t keys,
                                const key_interval *visible);
};

// y = x + p as an op of its own (the positional encoding's), likewise.
struct add_kernel_table {
    void (*add)(const float *x, const float *p, float *y, size_t n);
};

// The int8 arithmetic (edgeattn_arithmetic, kernels/int8_products.hpp):
// C (M,N) = A (M,K) . W (N,K)^T in int32, exact, A an activation's rows
// quantised to [-127, 127], W int8 read in place; quantize_row is
// kernels/int8_scale.hpp's rule for a row, compiled with the path's flags
// (the same bits on every path: each element's answer is its own).
struct integer_kernel_table {
    void (*int8_products)(size_t M, size_t N, size_t K, const int8_t *A, size_t lda, const int8_t *W,
                          size_t ldw, int32_t *C, size_t ldc);
    float (*quantize_row)(const float *x, size_t n, int8_t *q);
};

// Attention over an int8 / fp16 KV cache (src/stored_cache_rows.cpp):
// C (M,N) (+)= A (M,K) . (k_scales[k] * Bm[k][:]) with Bm (K, N) stored
// rows read in place, attention weights times the cached values (k_scales:
// int8's per-position scales, or nullptr).
struct cache_kernel_table {
    using values_product = void (*)(size_t M, size_t N, size_t K, const float *A, size_t lda,
                                    const void *Bm, size_t ldb, const float *k_scales, float *C,
                                    size_t ldc, bool accumulate);
    values_product int8_values;  // int8_t
    values_product half_values;  // uint16_t holding binary16
};

// A decode step's scores and weighted sum over a KV cache's rows
// (src/decode_rows.cpp, kernels/decode.hpp): C (M,N) += P (M,K) . (scales[k] * V[k][:]), V (K, N)
// rows of fp32, int8 (scales per position) or binary16 read in place,
// scales nullptr for 1. Only the vector paths have one: the plain C++ path
// (the Cortex-M port) keeps the row-at-a-time kernels and their flash size.
struct decode_kernel_table {
    using values_product = void (*)(size_t M, size_t N, size_t K, const float *P, size_t ldp, const void *V,
                                    size_t ldv, const float *scales, float *C, size_t ldc);
    values_product f32_values;
    values_product int8_values;  // int8_t
    values_product half_values;  // uint16_t holding binary16
    // S (M,N) = alpha * A (M,K) . W (N,K)^T, times scales[j] (or nullptr):
    // the scores of M query heads against N keys stored as W.
    using scores_product = void (*)(size_t M, size_t N, size_t K, float alpha, const float *A, size_t lda,
                                    const void *W, size_t ldw, const float *scales, float *C, size_t ldc);
    scores_product f32_scores;
    scores_product int8_scores;
    scores_product half_scores;
};
#if defined(EDGEATTN_HAVE_SSE2) || defined(EDGEATTN_HAVE_AVX2) || defined(EDGEATTN_HAVE_AVX512) || \
    defined(EDGEATTN_HAVE_NEON) || defined(EDGEATTN_HAVE_HELIUM)
#define EDGEATTN_HAVE_DECODE_KERNELS 1
#endif
#if defined(EDGEATTN_HAVE_SSE2)
extern const decode_kernel_table sse2_decode_kernels;
#endif
#if defined(EDGEATTN_HAVE_AVX2)
extern const decode_kernel_table avx2_decode_kernels;
#endif
#if defined(EDGEATTN_HAVE_AVX512)
extern const decode_kernel_table avx512_decode_kernels;
#endif
#if defined(EDGEATTN_HAVE_NEON)
extern const decode_kernel_table neon_decode_kernels;
#endif
#if defined(EDGEATTN_HAVE_HELIUM)
extern const decode_kernel_table helium_decode_kernels;
#endif

// The tables that exist in this build (defined in src/arch/*.cpp): for each
// path, its kernel_table and one table of each family above.
#define EDGEATTN_DECLARE_PATH_TABLES(path)                     \
    extern const kernel_table path##_kernels;                  \
    extern const softmax_kernel_table path##_softmax_kernels;  \
    extern const add_kernel_table path##_add_kernels;          \
    extern const stored_weight_table path##_stored_weight_kernels; \
    extern const additive_kernel_table path##_additive_kernels; \
    extern const cache_kernel_table path##_cache_kernels;      \
    extern const integer_kernel_table path##_integer_kernels;
EDGEATTN_DECLARE_PATH_TABLES(scalar)
#if defined(EDGEATTN_HAVE_SSE2)
EDGEATTN_DECLARE_PATH_TABLES(sse2)
#endif
#if defined(EDGEATTN_HAVE_AVX2)
EDGEATTN_DECLARE_PATH_TABLES(avx2)
#endif
#if defined(EDGEATTN_HAVE_AVX512)
EDGEATTN_DECLARE_PATH_TABLES(avx512)
#endif
#if defined(EDGEATTN_HAVE_NEON)
EDGEATTN_DECLARE_PATH_TABLES(neon)
#endif
#if defined(EDGEATTN_HAVE_HELIUM)
EDGEATTN_DECLARE_PATH_TABLES(helium)
#endif
#undef EDGEATTN_DECLARE_PATH_TABLES

// d2l's masked softmax of `rows` rows (row r at x + r * ld, y + r * ld)
// through k.masked_softmax_rows; row r sees visible_of(r), and seen(r, its
// interval) follows each row's softmax. A run of rows that see every key
// goes in one call without intervals (the AVX paths' pipeline, softmax.hpp,
// fills and drains once a call: Zen 4, softmax 4096x128 in calls of 16 rows
// 133 us, of 64 126 us, in one 123 us); other rows go sixteen a call, their
// intervals on the stack (a multiple of every path's row group, B::size).
template <class Table, class VisibleOf, class Seen>
void masked_softmax_in_chunks(const Table &k, const float *x, float *y, size_t ld, size_t rows,
                              size_t keys, VisibleOf visible_of, Seen seen) {
    constexpr size_t per_call = 16;
    for (size_t r0 = 0; r0 < rows;) {
        size_t end = r0;
        while (end < rows && sees_every_key(visible_of(end), keys)) ++end;
        if (end > r0) {
            k.masked_softmax_rows(x + r0 * ld, y + r0 * ld, ld, end - r0, keys, nullptr);
            for (; r0 < end; ++r0) seen(r0, key_interval{0, keys});
            continue;
        }
        const size_t count = rows - r0 < per_call ? rows - r0 : per_call;
        key_interval visible[per_call];
        for (size_t r = 0; r < count; ++r) visible[r] = visible_of(r0 + r);
        k.masked_softmax_rows(x + r0 * ld, y + r0 * ld, ld, count, keys, visible);
        for (size_t r = 0; r < count; ++r) seen(r0 + r, visible[r]);
        r0 += count;
    }
}

// The path in use (chosen at the first call; see dispatch.cpp), its
// kernel_table, and the tables of the ops with one of their own.
edgeattn_isa active_path();
const kernel_table &active_kernels();
const softmax_kernel_table &active_softmax_kernels();
const add_kernel_table &active_add_kernels();
// The other families' tables of the path whose kernel_table is k (the one
// a call runs on, so a call never mixes paths).
const additive_kernel_table &additive_kernels_of(const kernel_table &k);
// The kernels of int8 (else binary16) weights or cached rows.
const stored_weight_kernels &stored_kernels(const kernel_table &k, edgeattn_dtype type);
const cache_kernel_table &cache_kernels_of(const kernel_table &k);
const integer_kernel_table &integer_kernels_of(const kernel_table &k);

}  // namespace detail
}  // namespace edgeattn

#endif
