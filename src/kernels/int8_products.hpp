// Integer products for the int8 arithmetic (edgeattn_arithmetic): C (M,N) =
// A (M,K) . W (N,K)^T in int32, A the quantised rows of an activation (every
// element in [-127, 127]) and W int8 (any value, -128 included), read in
// place. Integer sums are exact, so each path's kernel below gives the same
// int32 as the plain loop whatever order it adds in: path against path, the
// bits agree. The caller keeps K <= integer_max_features (validate.hpp), so
// no sum leaves int32.
//
// Included by each src/arch/<path>.cpp, compiled with that path's flags,
// after it names its instruction set in EDGEATTN_INT8_PRODUCTS (one of the
// values below: the plain path of an x86 build has SSE2 and of a Cortex-M55
// build MVE, and must not use them); the functions have internal linkage,
// one copy per path.
#ifndef EDGEATTN_KERNELS_INT8_PRODUCTS_HPP
#define EDGEATTN_KERNELS_INT8_PRODUCTS_HPP

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "int8_scale.hpp"
#include "kernel_table.hpp"

#define EDGEATTN_INT8_PLAIN 1  // int32 loops; SMLAD where the core has the DSP extension
#define EDGEATTN_INT8_SSE2 2
#define EDGEATTN_INT8_AVX2 3
#define EDGEATTN_INT8_NEON 4
#define EDGEATTN_INT8_HELIUM 5
#define EDGEATTN_INT8_AVX512 6  // AVX2's kernel, or VNNI's where the CPU has AVX512-VNNI
#if !defined(EDGEATTN_INT8_PRODUCTS)
#error "name the path's instruction set in EDGEATTN_INT8_PRODUCTS first"
#elif EDGEATTN_INT8_PRODUCTS == EDGEATTN_INT8_AVX2 || EDGEATTN_INT8_PRODUCTS == EDGEATTN_INT8_AVX512
#include <immintrin.h>
#elif EDGEATTN_INT8_PRODUCTS == EDGEATTN_INT8_SSE2
#include <emmintrin.h>
#elif EDGEATTN_INT8_PRODUCTS == EDGEATTN_INT8_NEON
#include <arm_neon.h>
#if defined(__aarch64__) && defined(__linux__) && !defined(__ARM_FEATURE_DOTPROD)
#include <sys/auxv.h>  // getauxval: whether the CPU has the dot product
#endif
#elif EDGEATTN_INT8_PRODUCTS == EDGEATTN_INT8_HELIUM
#include <arm_mve.h>
#endif

namespace edgeattn {
namespace detail {
namespace {

// Output columns a pass computes: each load of A feeds four rows of W.
constexpr size_t int8_columns_per_pass = 4;

// sums[c] += A[i] * W_c[i] for i in [i0, K), c < 4: the plain loop, and the
// tails of the vector loops.
inline void int8_dots4_from(const int8_t *a, const int8_t *const w[4], size_t i0, size_t K,
                            int32_t sums[4]) {
    for (size_t i = i0; i < K; ++i) {
        const int32_t x = a[i];
        sums[0] += x * w[0][i];
        sums[1] += x * w[1][i];
        sums[2] += x * w[2][i];
        sums[3] += x * w[3][i];
    }
}

#if EDGEATTN_INT8_PRODUCTS == EDGEATTN_INT8_SSE2 || EDGEATTN_INT8_PRODUCTS == EDGEATTN_INT8_AVX2 || \
    EDGEATTN_INT8_PRODUCTS == EDGEATTN_INT8_AVX512
// The sum of a 128-bit vector's four int32 lanes (the x86 paths' totals).
inline int32_t int8_lanes_total(__m128i s) {
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}
#endif

// Each path's step: int8_step bytes of A against as many of a W row.
// int8_x is A's step loaded and int8_w a W row's (each widened or split
// where the path needs it: a W row's step is prepared once for every row of
// A in the pass), int8_acc a column's running sums; int8_accumulate adds
// one W row's step of products, int8_total sums the lanes; int8_rows_per_pass
// rows of A share each prepared W step (where the registers hold them).
// int8_dots below runs them for every path.
#if EDGEATTN_INT8_PRODUCTS == EDGEATTN_INT8_AVX2 || EDGEATTN_INT8_PRODUCTS == EDGEATTN_INT8_AVX512
// 32 products a step: VPMADDUBSW multiplies unsigned by signed bytes and
// adds pairs into int16, saturating. |w| as the unsigned side (-128 is 128)
// and a with w's sign as the signed side ([-127, 127]) keep each pair within
// 2 * 128 * 127 = 32512: no saturation. VPMADDWD by ones widens the pairs.
constexpr size_t int8_step = 32, int8_rows_per_pass = 2;
using int8_acc = __m256i;
using int8_x = __m256i;
struct int8_w {
    __m256i magnitude, sign;  // |w|, and w for its signs
};

inline int8_acc int8_zero() { return _mm256_setzero_si256(); }
inline int8_x int8_load_x(const int8_t *a) { return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(a)); }
inline int8_w int8_load_w(const int8_t *w) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(w));
    return {_mm256_abs_epi8(v), v};
}

inline int8_acc int8_accumulate(int8_acc acc, const int8_x &a, const int8_w &w) {
    const __m256i pairs = _mm256_maddubs_epi16(w.magnitude, _mm256_sign_epi8(a, w.sign));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

inline int32_t int8_total(int8_acc v) {
    return int8_lanes_total(_mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)));
}
#elif EDGEATTN_INT8_PRODUCTS == EDGEATTN_INT8_SSE2
// 16 products a step: both sides widened to int16 (bytes unpacked with
// themselves, then an arithmetic shift), PMADDWD adds pairs into int32.
constexpr size_t int8_step = 16, int8_rows_per_pass = 2;
using int8_acc = __m128i;
struct int8_x {
    __m128i low, high;  // bytes 0..7 and 8..15 as int16
};
using int8_w = int8_x;

inline __m128i widen_low(__m128i v) { return _mm_srai_epi16(_mm_unpacklo_epi8(v, v), 8); }
inline __m128i widen_high(__m128i v) { return _mm_srai_epi16(_mm_unpackhi_epi8(v, v), 8); }

inline int8_acc int8_zero() { return _mm_setzero_si128(); }
inline int8_x int8_load_x(const int8_t *a) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(a));
    return {widen_low(v), widen_high(v)};
}
inline int8_w int8_load_w(const int8_t *w) { return int8_load_x(w); }

inline int8_acc int8_accumulate(int8_acc acc, const int8_x &a, const int8_w &w) {
    return _mm_add_epi32(acc, _mm_add_epi32(_mm_madd_epi16(a.low, w.low), _mm_madd_epi16(a.high, w.high)));
}

inline int32_t int8_total(int8_acc s) { return int8_lanes_total(s); }
#elif EDGEATTN_INT8_PRODUCTS == EDGEATTN_INT8_NEON
// 16 products a step: VMULL and VMLAL of the two halves into int16 lanes
// (two products of at most 128 * 127 each: 32512, no overflow), then
// VPADAL adds neighbouring lanes into int32.
constexpr size_t int8_step = 16, int8_rows_per_pass = 2;
using int8_acc = int32x4_t;
using int8_x = int8x16_t;
using int8_w = int8x16_t;

inline int8_acc int8_zero() { return vdupq_n_s32(0); }
inline int8_x int8_load_x(const int8_t *a) { return vld1q_s8(a); }
inline int8_w int8_load_w(const int8_t *w) { return vld1q_s8(w); }

inline int8_acc int8_accumulate(int8_acc acc, const int8_x &a, const int8_w &v) {
    int16x8_t p = vmull_s8(vget_low_s8(a), vget_low_s8(v));
    p = vmlal_s8(p, vget_high_s8(a), vget_high_s8(v));
    return vpadalq_s16(acc, p);
}

inline int32_t int8_total(int8_acc s) {
    const int32x2_t p = vadd_s32(vget_low_s32(s), vget_high_s32(s));
    return vget_lane_s32(vpadd_s32(p, p), 0);
}
#elif EDGEATTN_INT8_PRODUCTS == EDGEATTN_INT8_HELIUM
// 16 products an instruction: VMLADAVA adds a vector's products into a
// core register.
constexpr size_t int8_step = 16, int8_rows_per_pass = 1;
using int8_acc = int32_t;
using int8_x = int8x16_t;
using int8_w = int8x16_t;

inline int8_acc int8_zero() { return 0; }
inline int8_x int8_load_x(const int8_t *a) { return vld1q_s8(a); }
inline int8_w int8_load_w(const int8_t *w) { return vld1q_s8(w); }
inline int8_acc int8_accumulate(int8_acc acc, const int8_x &a, const int8_w &w) { return vmladavaq_s8(acc, a, w); }
// The last n < 16 bytes as one more step: predicated loads zero the rest
// (tail predication), so no byte goes through the plain loop.
#define EDGEATTN_INT8_PREDICATED_TAIL 1
inline int8x16_t int8_load_tail(const int8_t *p, size_t n) { return vld1q_z_s8(p, vctp8q(static_cast<uint32_t>(n))); }
inline int32_t int8_total(int8_acc s) { return s; }
#elif defined(__ARM_FEATURE_DSP) && !defined(__aarch64__)
// Cortex-M4F, ARMv7: SMLAD multiplies two signed halfword pairs and adds
// both; SXTB16 sign-extends bytes 0 and 2 of a word (and, rotated by 8, 1
// and 3). 4 products a step.
constexpr size_t int8_step = 4, int8_rows_per_pass = 1;
using int8_acc = int32_t;
struct int8_x {
    int32_t even, odd;  // bytes 0, 2 and 1, 3 as halfword pairs
};
using int8_w = int8_x;

inline uint32_t load_word(const int8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

inline int32_t sxtb16(uint32_t v) {
    int32_t r;
    __asm__("sxtb16 %0, %1" : "=r"(r) : "r"(v));
    return r;
}

inline int32_t sxtb16_odd(uint32_t v) {
    int32_t r;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(v));
    return r;
}

inline int32_t smlad(int32_t a, int32_t b, int32_t acc) {
    int32_t r;
    __asm__("smlad %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(acc));
    return r;
}

inline int8_acc int8_zero() { return 0; }
inline int8_x int8_load_x(const int8_t *a) {
    const uint32_t v = load_word(a);
    return {sxtb16(v), sxtb16_odd(v)};
}
inline int8_w int8_load_w(const int8_t *w) { return int8_load_x(w); }
inline int8_acc int8_accumulate(int8_acc acc, const int8_x &a, const int8_w &w) {
    return smlad(a.odd, w.odd, smlad(a.even, w.even, acc));
}
inline int32_t int8_total(int8_acc s) { return s; }
#else
#define EDGEATTN_INT8_LOOPS_ONLY 1  // the plain loop alone
constexpr size_t int8_rows_per_pass = 1;
#endif

// sums[r][c] = A_r . W_c over K for R rows of A and four rows of W: whole
// steps through the path's primitives (each W step prepared once for the R
// rows), the tail (and a path without them) in the plain loop.
template <size_t R>
inline void int8_dots(const int8_t *const a[R], const int8_t *const w[4], size_t K, int32_t sums[R][4]) {
    size_t i = 0;
#if defined(EDGEATTN_INT8_LOOPS_ONLY)
    for (size_t r = 0; r < R; ++r) sums[r][0] = sums[r][1] = sums[r][2] = sums[r][3] = 0;
#else
    int8_acc s[R][4];
    for (size_t r = 0; r < R; ++r)
        for (size_t c = 0; c < 4; ++c) s[r][c] = int8_zero();
    for (; i + int8_step <= K; i += int8_step) {
        int8_x x[R];
        for (size_t r = 0; r < R; ++r) x[r] = int8_load_x(a[r] + i);
#pragma GCC unroll 4
        for (size_t c = 0; c < 4; ++c) {
            const int8_w v = int8_load_w(w[c] + i);
            for (size_t r = 0; r < R; ++r) s[r][c] = int8_accumulate(s[r][c], x[r], v);
        }
    }
#if defined(EDGEATTN_INT8_PREDICATED_TAIL)
    if (i < K) {
        int8_x x[R];
        for (size_t r = 0; r < R; ++r) x[r] = int8_load_tail(a[r] + i, K - i);
        for (size_t c = 0; c < 4; ++c) {
            const int8_w v = int8_load_tail(w[c] + i, K - i);
            for (size_t r = 0; r < R; ++r) s[r][c] = int8_accumulate(s[r][c], x[r], v);
        }
        i = K;
    }
#endif
    for (size_t r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (size_t c = 0; c < 4; ++c) sums[r][c] = int8_total(s[r][c]);
#endif
    for (size_t r = 0; r < R; ++r) int8_dots4_from(a[r], w, i, K, sums[r]);
}
#undef EDGEATTN_INT8_LOOPS_ONLY
#undef EDGEATTN_INT8_PREDICATED_TAIL

// Every row of A against four rows of W at a time, int8_rows_per_pass rows
// of A together (then one at a time); a last group of fewer columns
// repeats its final row (computed, not stored).
void int8_products(size_t M, size_t N, size_t K, const int8_t *A, size_t lda, const int8_t *W,
                   size_t ldw, int32_t *C, size_t ldc) {
    constexpr size_t R = int8_rows_per_pass;
    for (size_t j = 0; j < N; j += int8_columns_per_pass) {
        const size_t n = N - j < int8_columns_per_pass ? N - j : int8_columns_per_pass;
        const int8_t *w[int8_columns_per_pass];
        for (size_t c = 0; c < int8_columns_per_pass; ++c) w[c] = W + (j + (c < n ? c : n - 1)) * ldw;
        size_t r = 0;
        for (; R > 1 && r + R <= M; r += R) {
            const int8_t *a[R];
            int32_t sums[R][int8_columns_per_pass];
            for (size_t k = 0; k < R; ++k) a[k] = A + (r + k) * lda;
            int8_dots<R>(a, w, K, sums);
            for (size_t k = 0; k < R; ++k)
                for (size_t c = 0; c < n; ++c) C[(r + k) * ldc + j + c] = sums[k][c];
        }
        for (; r < M; ++r) {
            const int8_t *a[1] = {A + r * lda};
            int32_t sums[1][int8_columns_per_pass];
            int8_dots<1>(a, w, K, sums);
            for (size_t c = 0; c < n; ++c) C[r * ldc + j + c] = sums[0][c];
        }
    }
}

#if EDGEATTN_INT8_PRODUCTS == EDGEATTN_INT8_AVX2 || EDGEATTN_INT8_PRODUCTS == EDGEATTN_INT8_AVX512
// Short products (a decode step's query heads against a block of cached
// keys of a head's 64 features; a token's projection): a row of A against
// eight rows of W at a time, the eight accumulators summed together into
// one vector of the eight sums by horizontal adds, 7 instructions where
// int8_total takes 6 for each sum (at K = 64, two steps of products a sum:
// the totals were a third of the work).
constexpr size_t int8_short_columns = 8;

// The eight sums of eight accumulators, sum c in element c.
inline __m256i int8_eight_totals(const __m256i s[8]) {
    const __m256i t0 = _mm256_hadd_epi32(s[0], s[1]), t1 = _mm256_hadd_epi32(s[2], s[3]);
    const __m256i t2 = _mm256_hadd_epi32(s[4], s[5]), t3 = _mm256_hadd_epi32(s[6], s[7]);
    // Element c (c < 4) of each 128-bit lane: that lane's part of sum c (u0)
    // and of sum c + 4 (u1).
    const __m256i u0 = _mm256_hadd_epi32(t0, t1), u1 = _mm256_hadd_epi32(t2, t3);
    return _mm256_add_epi32(_mm256_permute2x128_si256(u0, u1, 0x20), _mm256_permute2x128_si256(u0, u1, 0x31));
}

void int8_products_short(size_t M, size_t N, size_t K, const int8_t *A, size_t lda, const int8_t *W, size_t ldw,
                         int32_t *C, size_t ldc) {
    constexpr size_t cols = int8_short_columns;
    const size_t full = K / int8_step * int8_step;
    for (size_t r = 0; r < M; ++r) {
        const int8_t *a = A + r * lda;
        for (size_t j = 0; j < N; j += cols) {
            const size_t n = N - j < cols ? N - j : cols;
            const int8_t *w[cols];
            for (size_t c = 0; c < cols; ++c) w[c] = W + (j + (c < n ? c : n - 1)) * ldw;
            __m256i s[cols];
            for (size_t c = 0; c < cols; ++c) s[c] = int8_zero();
            for (size_t i = 0; i < full; i += int8_step) {
                const int8_x x = int8_load_x(a + i);
#pragma GCC unroll 8
                for (size_t c = 0; c < cols; ++c) s[c] = int8_accumulate(s[c], x, int8_load_w(w[c] + i));
            }
            alignas(32) int32_t sums[cols];
            _mm256_store_si256(reinterpret_cast<__m256i *>(sums), int8_eight_totals(s));
            int8_dots4_from(a, w, full, K, sums);
            int8_dots4_from(a, w + 4, full, K, sums + 4);
            for (size_t c = 0; c < n; ++c) C[r * ldc + j + c] = sums[c];
        }
    }
}

// Where the short kernel beats the tiles of two rows, which prepare each W
// step once for both but total each sum on its own: fewer rows than 4 (at 8
// rows of 100, d2l's block, the tiles were faster: 15.1 against 16.4 us).
inline bool int8_takes_short(size_t M) { return M < 4; }

// AVX2's products: the short kernel or the tiles of two rows.
void int8_products_avx2(size_t M, size_t N, size_t K, const int8_t *A, size_t lda, const int8_t *W, size_t ldw,
                        int32_t *C, size_t ldc) {
    (int8_takes_short(M) ? int8_products_short : int8_products)(M, N, K, A, lda, W, ldw, C, ldc);
}
#endif

// The row rule with this path's flags (the compiler vectorises its loops).
float quantize_row_of_path(const float *x, size_t n, int8_t *q) { return quantize_int8_row(x, n, q); }

#if EDGEATTN_INT8_PRODUCTS == EDGEATTN_INT8_AVX512
// AVX512-VNNI (Ice Lake, Zen 4): VPDPBUSD adds four products of unsigned by
// signed bytes into each int32 lane, 64 products an instruction, without
// saturation. W's rows go in as the unsigned side, w + 128 (w xor 0x80: -128
// is 0), A's rows as the signed side, and 128 * sum(A row), one number per
// row, comes off each sum afterwards, in modular int32 arithmetic, whose
// true result fits (|128 * sum| <= 128 * 127 * K, within int32 by
// integer_max_features). Compiled for these instructions alone (a target
// attribute): the path's other code keeps its flags, and the kernels run
// only where the CPU reports them.
#define EDGEATTN_VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vnni")))

// The four columns' sums of four accumulators (each lane a partial sum of
// its column), one per 32-bit element of each 128-bit lane: (4 columns) x
// (4 lane groups), each lane group summing its own four lanes.
EDGEATTN_VNNI_TARGET inline __m512i vnni_columns(__m512i a0, __m512i a1, __m512i a2, __m512i a3) {
    const __m512i t0 = _mm512_add_epi32(_mm512_unpacklo_epi32(a0, a1), _mm512_unpackhi_epi32(a0, a1));
    const __m512i t1 = _mm512_add_epi32(_mm512_unpacklo_epi32(a2, a3), _mm512_unpackhi_epi32(a2, a3));
    return _mm512_add_epi32(_mm512_unpacklo_epi64(t0, t1), _mm512_unpackhi_epi64(t0, t1));
}

// Sums the four lane groups of vnni_columns' results for four rows: 128-bit
// lane k of the answer holds row k's four column sums.
EDGEATTN_VNNI_TARGET inline __m512i vnni_rows(__m512i r0, __m512i r1, __m512i r2, __m512i r3) {
    const __m512i v01 = _mm512_add_epi32(_mm512_shuffle_i32x4(r0, r1, _MM_SHUFFLE(2, 0, 2, 0)),
                                         _mm512_shuffle_i32x4(r0, r1, _MM_SHUFFLE(3, 1, 3, 1)));
    const __m512i v23 = _mm512_add_epi32(_mm512_shuffle_i32x4(r2, r3, _MM_SHUFFLE(2, 0, 2, 0)),
                                         _mm512_shuffle_i32x4(r2, r3, _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_add_epi32(_mm512_shuffle_i32x4(v01, v23, _MM_SHUFFLE(2, 0, 2, 0)),
                            _mm512_shuffle_i32x4(v01, v23, _MM_SHUFFLE(3, 1, 3, 1)));
}

// Tiles of 4 rows x 4 columns (M a multiple of 4): 16 accumulators fed by
// 8 loads a step, their 256 lanes summed into one vector of the tile's 16
// sums by shuffles. corrections[r]: 128 * sum(A row r); M <= 64.
EDGEATTN_VNNI_TARGET void int8_products_vnni_tiles(size_t M, size_t N, size_t K, const int8_t *A, size_t lda,
                                                   const int8_t *W, size_t ldw, const int32_t *corrections,
                                                   int32_t *C, size_t ldc) {
    constexpr size_t tile = 4;
    const __m512i flip = _mm512_set1_epi8(-128);
    const size_t full = K / 64 * 64;
    const __mmask64 tail = K == full ? 0 : ~0ull >> (64 - (K - full));
    // 128-bit lane k: row r + k's correction (M <= 64: at most 16 tiles).
    __m512i tile_corrections[16];
    for (size_t r = 0; r < M; r += tile) {
        const __m128i four = _mm_loadu_si128(reinterpret_cast<const __m128i *>(corrections + r));
        tile_corrections[r / tile] = _mm512_permutexvar_epi32(
            _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3), _mm512_castsi128_si512(four));
    }
    for (size_t j = 0; j < N; j += tile) {
        const size_t n = N - j < tile ? N - j : tile;
        const int8_t *w[tile];
        for (size_t c = 0; c < tile; ++c) w[c] = W + (j + (c < n ? c : n - 1)) * ldw;
        for (size_t r = 0; r < M; r += tile) {
            const int8_t *a[tile];
            for (size_t k = 0; k < tile; ++k) a[k] = A + (r + k) * lda;
            __m512i acc[tile][tile];
            for (size_t k = 0; k < tile; ++k)
                for (size_t c = 0; c < tile; ++c) acc[k][c] = _mm512_setzero_si512();
            for (size_t i = 0; i < K; i += 64) {
                __m512i x[tile], v[tile];
                if (i < full) {
                    for (size_t k = 0; k < tile; ++k) x[k] = _mm512_loadu_si512(a[k] + i);
                    for (size_t c = 0; c < tile; ++c) v[c] = _mm512_xor_si512(_mm512_loadu_si512(w[c] + i), flip);
                } else {  // the tail: absent bytes are 0 in A, so W's 128 there adds nothing
                    for (size_t k = 0; k < tile; ++k) x[k] = _mm512_maskz_loadu_epi8(tail, a[k] + i);
                    for (size_t c = 0; c < tile; ++c)
                        v[c] = _mm512_xor_si512(_mm512_maskz_loadu_epi8(tail, w[c] + i), flip);
                }
                for (size_t k = 0; k < tile; ++k)
                    for (size_t c = 0; c < tile; ++c) acc[k][c] = _mm512_dpbusd_epi32(acc[k][c], v[c], x[k]);
            }
            // 128-bit lane k: row k's four sums, less its correction.
            const __m512i sums = _mm512_sub_epi32(
                vnni_rows(vnni_columns(acc[0][0], acc[0][1], acc[0][2], acc[0][3]),
                          vnni_columns(acc[1][0], acc[1][1], acc[1][2], acc[1][3]),
                          vnni_columns(acc[2][0], acc[2][1], acc[2][2], acc[2][3]),
                          vnni_columns(acc[3][0], acc[3][1], acc[3][2], acc[3][3])),
                tile_corrections[r / tile]);
            int32_t *out = C + r * ldc + j;
            if (n == tile) {
                _mm_storeu_si128(reinterpret_cast<__m128i *>(out), _mm512_castsi512_si128(sums));
                _mm_storeu_si128(reinterpret_cast<__m128i *>(out + ldc), _mm512_extracti32x4_epi32(sums, 1));
                _mm_storeu_si128(reinterpret_cast<__m128i *>(out + 2 * ldc), _mm512_extracti32x4_epi32(sums, 2));
                _mm_storeu_si128(reinterpret_cast<__m128i *>(out + 3 * ldc), _mm512_extracti32x4_epi32(sums, 3));
            } else {
                alignas(64) int32_t lanes[tile * tile];
                _mm512_store_si512(lanes, sums);
                for (size_t k = 0; k < tile; ++k)
                    for (size_t c = 0; c < n; ++c) out[k * ldc + c] = lanes[k * tile + c];
            }
        }
    }
}

// One row against 16 rows of W at a time (rows fewer than a tile: a decode
// step's query head against cached keys): 16 accumulators, a load, an xor
// and a VPDPBUSD per W row's 64 bytes, summed into one vector of the 16
// sums by shuffles.
EDGEATTN_VNNI_TARGET void int8_products_vnni_short(size_t M, size_t N, size_t K, const int8_t *A, size_t lda,
                                                   const int8_t *W, size_t ldw, const int32_t *corrections,
                                                   int32_t *C, size_t ldc) {
    constexpr size_t cols = 16;
    const __m512i flip = _mm512_set1_epi8(-128);
    const size_t full = K / 64 * 64;
    const __mmask64 tail = K == full ? 0 : ~0ull >> (64 - (K - full));
    for (size_t r = 0; r < M; ++r) {
        const int8_t *a = A + r * lda;
        const __m512i correction = _mm512_set1_epi32(corrections[r]);
        for (size_t j = 0; j < N; j += cols) {
            const size_t n = N - j < cols ? N - j : cols;
            const int8_t *w[cols];
            __m512i s[cols];
            for (size_t c = 0; c < cols; ++c) {
                w[c] = W + (j + (c < n ? c : n - 1)) * ldw;
                s[c] = _mm512_setzero_si512();
            }
            for (size_t i = 0; i < full; i += 64) {
                const __m512i x = _mm512_loadu_si512(a + i);
#pragma GCC unroll 16
                for (size_t c = 0; c < cols; ++c)
                    s[c] = _mm512_dpbusd_epi32(s[c], _mm512_xor_si512(_mm512_loadu_si512(w[c] + i), flip), x);
            }
            if (tail) {  // absent bytes: 0 in the row, so W's 128 there adds nothing
                const __m512i x = _mm512_maskz_loadu_epi8(tail, a + full);
                for (size_t c = 0; c < cols; ++c)
                    s[c] = _mm512_dpbusd_epi32(
                        s[c], _mm512_xor_si512(_mm512_maskz_loadu_epi8(tail, w[c] + full), flip), x);
            }
            const __m512i sums = _mm512_sub_epi32(vnni_rows(vnni_columns(s[0], s[1], s[2], s[3]),
                                                            vnni_columns(s[4], s[5], s[6], s[7]),
                                                            vnni_columns(s[8], s[9], s[10], s[11]),
                                                            vnni_columns(s[12], s[13], s[14], s[15])),
                                                  correction);
            if (n == cols) {
                _mm512_storeu_si512(C + r * ldc + j, sums);
            } else {
                alignas(64) int32_t out[cols];
                _mm512_store_si512(out, sums);
                for (size_t c = 0; c < n; ++c) C[r * ldc + j + c] = out[c];
            }
        }
    }
}

// Up to 64 rows at a time: their corrections first (on the stack), then
// the tiles over whole groups of four and the short kernel over the rest.
EDGEATTN_VNNI_TARGET void int8_products_vnni(size_t M, size_t N, size_t K, const int8_t *A, size_t lda,
                                             const int8_t *W, size_t ldw, int32_t *C, size_t ldc) {
    constexpr size_t chunk = 64;
    int32_t corrections[chunk];
    for (size_t r0 = 0; r0 < M; r0 += chunk) {
        const size_t m = M - r0 < chunk ? M - r0 : chunk, tiled = m / 4 * 4;
        const int8_t *a = A + r0 * lda;
        for (size_t r = 0; r < m; ++r) {
            int32_t sum = 0;
            for (size_t i = 0; i < K; ++i) sum += a[r * lda + i];
            corrections[r] = sum * 128;
        }
        if (tiled) int8_products_vnni_tiles(tiled, N, K, a, lda, W, ldw, corrections, C + r0 * ldc, ldc);
        if (tiled < m)
            int8_products_vnni_short(m - tiled, N, K, a + tiled * lda, lda, W, ldw, corrections + tiled,
                                     C + (r0 + tiled) * ldc, ldc);
    }
}

// Asked on every call: __builtin_cpu_supports reads a word libgcc filled at
// start-up, and a function-local static would need libstdc++'s guards,
// which a C program linking the library does not have.
bool cpu_has_vnni() { return __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni"); }

// VNNI's kernels where the CPU has them, else AVX2's.
void int8_products_of_path(size_t M, size_t N, size_t K, const int8_t *A, size_t lda, const int8_t *W,
                           size_t ldw, int32_t *C, size_t ldc) {
    (cpu_has_vnni() ? int8_products_vnni : int8_products_avx2)(M, N, K, A, lda, W, ldw, C, ldc);
}

constexpr integer_kernel_table make_integer_kernel_table() { return {int8_products_of_path, quantize_row_of_path}; }
#elif EDGEATTN_INT8_PRODUCTS == EDGEATTN_INT8_NEON && defined(__aarch64__)
// Armv8.2's dot product (SDOT, FEAT_DotProd: Cortex-A55/A76 and later):
// four products of signed bytes into each int32 lane, 16 an instruction,
// no widening steps. Compiled for it alone (a target attribute) unless the
// build's flags have it, and run where the CPU reports it (Linux's
// HWCAP_ASIMDDP); elsewhere VMULL/VMLAL above. 2 rows x 4 columns a pass.
#if defined(__ARM_FEATURE_DOTPROD)
#define EDGEATTN_SDOT_TARGET
#else
#define EDGEATTN_SDOT_TARGET __attribute__((target("arch=armv8.2-a+dotprod")))
#endif

EDGEATTN_SDOT_TARGET void int8_products_sdot(size_t M, size_t N, size_t K, const int8_t *A, size_t lda,
                                             const int8_t *W, size_t ldw, int32_t *C, size_t ldc) {
    constexpr size_t rows = 2, cols = int8_columns_per_pass;
    const size_t full = K / 16 * 16;
    for (size_t j = 0; j < N; j += cols) {
        const size_t n = N - j < cols ? N - j : cols;
        const int8_t *w[cols];
        for (size_t c = 0; c < cols; ++c) w[c] = W + (j + (c < n ? c : n - 1)) * ldw;
        for (size_t r = 0; r < M; r += rows) {
            const size_t m = M - r < rows ? M - r : rows;  // a last single row is computed twice
            const int8_t *a[rows] = {A + r * lda, A + (r + m - 1) * lda};
            int32x4_t acc[rows][cols];
            for (size_t k = 0; k < rows; ++k)
                for (size_t c = 0; c < cols; ++c) acc[k][c] = vdupq_n_s32(0);
            for (size_t i = 0; i < full; i += 16) {
                const int8x16_t x0 = vld1q_s8(a[0] + i), x1 = vld1q_s8(a[1] + i);
                for (size_t c = 0; c < cols; ++c) {
                    const int8x16_t v = vld1q_s8(w[c] + i);
                    acc[0][c] = vdotq_s32(acc[0][c], x0, v);
                    acc[1][c] = vdotq_s32(acc[1][c], x1, v);
                }
            }
            for (size_t k = 0; k < m; ++k) {
                int32_t sums[cols];
                for (size_t c = 0; c < cols; ++c) sums[c] = vaddvq_s32(acc[k][c]);
                int8_dots4_from(a[k], w, full, K, sums);
                for (size_t c = 0; c < n; ++c) C[(r + k) * ldc + j + c] = sums[c];
            }
        }
    }
}

bool cpu_has_dotprod() {
#if defined(__ARM_FEATURE_DOTPROD)
    return true;
#elif defined(__linux__)
    return (getauxval(AT_HWCAP) & (1ul << 20)) != 0;  // HWCAP_ASIMDDP
#else
    return false;
#endif
}

void int8_products_of_path(size_t M, size_t N, size_t K, const int8_t *A, size_t lda, const int8_t *W,
                           size_t ldw, int32_t *C, size_t ldc) {
    if (cpu_has_dotprod()) return int8_products_sdot(M, N, K, A, lda, W, ldw, C, ldc);
    int8_products(M, N, K, A, lda, W, ldw, C, ldc);
}

constexpr integer_kernel_table make_integer_kernel_table() { return {int8_products_of_path, quantize_row_of_path}; }
#elif EDGEATTN_INT8_PRODUCTS == EDGEATTN_INT8_AVX2
constexpr integer_kernel_table make_integer_kernel_table() { return {int8_products_avx2, quantize_row_of_path}; }
#else
constexpr integer_kernel_table make_integer_kernel_table() { return {int8_products, quantize_row_of_path}; }
#endif

}  // namespace

}  // namespace detail
}  // namespace edgeattn

#endif
