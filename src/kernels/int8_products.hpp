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

#if EDGEATTN_INT8_PRODUCTS == EDGEATTN_INT8_AVX2 || EDGEATTN_INT8_PRODUCTS == EDGEATTN_INT8_AVX512
// Horizontal sum of eight int32 lanes.
inline int32_t lane_sum(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

// 32 products a pass: VPMADDUBSW multiplies unsigned by signed bytes and
// adds pairs into int16, saturating. |w| as the unsigned side (-128 is 128)
// and a with w's sign as the signed side ([-127, 127]) keep each pair within
// 2 * 128 * 127 = 32512: no saturation. VPMADDWD by ones widens the pairs.
inline __m256i int8_pair_sums(__m256i a, __m256i w, __m256i ones) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(a, w)), ones);
}

inline void int8_dots4(const int8_t *a, const int8_t *const w[4], size_t K, int32_t sums[4]) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
    size_t i = 0;
    for (; i + 32 <= K; i += 32) {
        const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(a + i));
        s0 = _mm256_add_epi32(s0, int8_pair_sums(x, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(w[0] + i)), ones));
        s1 = _mm256_add_epi32(s1, int8_pair_sums(x, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(w[1] + i)), ones));
        s2 = _mm256_add_epi32(s2, int8_pair_sums(x, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(w[2] + i)), ones));
        s3 = _mm256_add_epi32(s3, int8_pair_sums(x, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(w[3] + i)), ones));
    }
    sums[0] = lane_sum(s0);
    sums[1] = lane_sum(s1);
    sums[2] = lane_sum(s2);
    sums[3] = lane_sum(s3);
    int8_dots4_from(a, w, i, K, sums);
}
#elif EDGEATTN_INT8_PRODUCTS == EDGEATTN_INT8_SSE2
// Bytes 0..7 and 8..15 of v sign-extended to int16 (unpack with itself,
// then an arithmetic shift).
inline __m128i widen_low(__m128i v) { return _mm_srai_epi16(_mm_unpacklo_epi8(v, v), 8); }
inline __m128i widen_high(__m128i v) { return _mm_srai_epi16(_mm_unpackhi_epi8(v, v), 8); }

inline int32_t lane_sum(__m128i s) {
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

// 16 products a pass: both sides widened to int16, PMADDWD adds pairs into int32.
inline __m128i int8_pair_sums(__m128i a_lo, __m128i a_hi, const int8_t *w) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(w));
    return _mm_add_epi32(_mm_madd_epi16(a_lo, widen_low(v)), _mm_madd_epi16(a_hi, widen_high(v)));
}

inline void int8_dots4(const int8_t *a, const int8_t *const w[4], size_t K, int32_t sums[4]) {
    __m128i s0 = _mm_setzero_si128(), s1 = s0, s2 = s0, s3 = s0;
    size_t i = 0;
    for (; i + 16 <= K; i += 16) {
        const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i *>(a + i));
        const __m128i lo = widen_low(x), hi = widen_high(x);
        s0 = _mm_add_epi32(s0, int8_pair_sums(lo, hi, w[0] + i));
        s1 = _mm_add_epi32(s1, int8_pair_sums(lo, hi, w[1] + i));
        s2 = _mm_add_epi32(s2, int8_pair_sums(lo, hi, w[2] + i));
        s3 = _mm_add_epi32(s3, int8_pair_sums(lo, hi, w[3] + i));
    }
    sums[0] = lane_sum(s0);
    sums[1] = lane_sum(s1);
    sums[2] = lane_sum(s2);
    sums[3] = lane_sum(s3);
    int8_dots4_from(a, w, i, K, sums);
}
#elif EDGEATTN_INT8_PRODUCTS == EDGEATTN_INT8_NEON
inline int32_t lane_sum(int32x4_t s) {
    const int32x2_t p = vadd_s32(vget_low_s32(s), vget_high_s32(s));
    return vget_lane_s32(vpadd_s32(p, p), 0);
}

// 16 products a pass: VMULL and VMLAL of the two halves into int16 lanes
// (two products of at most 128 * 127 each: 32512, no overflow), then
// VPADAL adds neighbouring lanes into int32.
inline int32x4_t int8_pair_sums(int32x4_t acc, int8x16_t a, const int8_t *w) {
    const int8x16_t v = vld1q_s8(w);
    int16x8_t p = vmull_s8(vget_low_s8(a), vget_low_s8(v));
    p = vmlal_s8(p, vget_high_s8(a), vget_high_s8(v));
    return vpadalq_s16(acc, p);
}

inline void int8_dots4(const int8_t *a, const int8_t *const w[4], size_t K, int32_t sums[4]) {
    int32x4_t s0 = vdupq_n_s32(0), s1 = s0, s2 = s0, s3 = s0;
    size_t i = 0;
    for (; i + 16 <= K; i += 16) {
        const int8x16_t x = vld1q_s8(a + i);
        s0 = int8_pair_sums(s0, x, w[0] + i);
        s1 = int8_pair_sums(s1, x, w[1] + i);
        s2 = int8_pair_sums(s2, x, w[2] + i);
        s3 = int8_pair_sums(s3, x, w[3] + i);
    }
    sums[0] = lane_sum(s0);
    sums[1] = lane_sum(s1);
    sums[2] = lane_sum(s2);
    sums[3] = lane_sum(s3);
    int8_dots4_from(a, w, i, K, sums);
}
#elif EDGEATTN_INT8_PRODUCTS == EDGEATTN_INT8_HELIUM
// 16 products an instruction: VMLADAVA adds a vector's products into a
// core register.
inline void int8_dots4(const int8_t *a, const int8_t *const w[4], size_t K, int32_t sums[4]) {
    int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0;
    for (; i + 16 <= K; i += 16) {
        const int8x16_t x = vld1q_s8(a + i);
        s0 = vmladavaq_s8(s0, x, vld1q_s8(w[0] + i));
        s1 = vmladavaq_s8(s1, x, vld1q_s8(w[1] + i));
        s2 = vmladavaq_s8(s2, x, vld1q_s8(w[2] + i));
        s3 = vmladavaq_s8(s3, x, vld1q_s8(w[3] + i));
    }
    sums[0] = s0;
    sums[1] = s1;
    sums[2] = s2;
    sums[3] = s3;
    int8_dots4_from(a, w, i, K, sums);
}
#elif defined(__ARM_FEATURE_DSP) && !defined(__aarch64__)
// Cortex-M4F: SMLAD multiplies two signed halfword pairs and adds both;
// SXTB16 sign-extends bytes 0 and 2 of a word (and, rotated by 8, 1 and 3).
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

inline void int8_dots4(const int8_t *a, const int8_t *const w[4], size_t K, int32_t sums[4]) {
    int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0;
    for (; i + 4 <= K; i += 4) {
        const uint32_t x = load_word(a + i);
        const int32_t x02 = sxtb16(x), x13 = sxtb16_odd(x);
        uint32_t v = load_word(w[0] + i);
        s0 = smlad(x13, sxtb16_odd(v), smlad(x02, sxtb16(v), s0));
        v = load_word(w[1] + i);
        s1 = smlad(x13, sxtb16_odd(v), smlad(x02, sxtb16(v), s1));
        v = load_word(w[2] + i);
        s2 = smlad(x13, sxtb16_odd(v), smlad(x02, sxtb16(v), s2));
        v = load_word(w[3] + i);
        s3 = smlad(x13, sxtb16_odd(v), smlad(x02, sxtb16(v), s3));
    }
    sums[0] = s0;
    sums[1] = s1;
    sums[2] = s2;
    sums[3] = s3;
    int8_dots4_from(a, w, i, K, sums);
}
#else
inline void int8_dots4(const int8_t *a, const int8_t *const w[4], size_t K, int32_t sums[4]) {
    sums[0] = sums[1] = sums[2] = sums[3] = 0;
    int8_dots4_from(a, w, 0, K, sums);
}
#endif

// Every row of A against four rows of W at a time; a last group of fewer
// columns repeats its final row (computed, not stored).
void int8_products(size_t M, size_t N, size_t K, const int8_t *A, size_t lda, const int8_t *W,
                   size_t ldw, int32_t *C, size_t ldc) {
    for (size_t j = 0; j < N; j += int8_columns_per_pass) {
        const size_t n = N - j < int8_columns_per_pass ? N - j : int8_columns_per_pass;
        const int8_t *w[int8_columns_per_pass];
        for (size_t c = 0; c < int8_columns_per_pass; ++c) w[c] = W + (j + (c < n ? c : n - 1)) * ldw;
        for (size_t r = 0; r < M; ++r) {
            int32_t sums[int8_columns_per_pass];
            int8_dots4(A + r * lda, w, K, sums);
            for (size_t c = 0; c < n; ++c) C[r * ldc + j + c] = sums[c];
        }
    }
}

#if EDGEATTN_INT8_PRODUCTS == EDGEATTN_INT8_AVX512
// AVX512-VNNI (Ice Lake, Zen 4): VPDPBUSD adds four products of unsigned by
// signed bytes into each int32 lane, 64 products an instruction, without
// saturation. A's rows go in as unsigned q + 128 (q xor 0x80), and
// 128 * sum(W row) comes off each sum afterwards, in modular int32
// arithmetic, whose true result fits. Tiles of 4 rows x 4 columns: 16
// accumulators fed by 8 loads a step. Compiled for these instructions
// alone (a target attribute): the path's other code keeps its flags, and
// the kernel runs only where the CPU reports them.
#define EDGEATTN_VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vnni")))

EDGEATTN_VNNI_TARGET void int8_products_vnni(size_t M, size_t N, size_t K, const int8_t *A, size_t lda,
                                             const int8_t *W, size_t ldw, int32_t *C, size_t ldc) {
    constexpr size_t tile = 4;
    const __m512i flip = _mm512_set1_epi8(-128), ones = _mm512_set1_epi8(1);
    const size_t full = K / 64 * 64;
    const __mmask64 tail = K == full ? 0 : ~0ull >> (64 - (K - full));
    for (size_t j = 0; j < N; j += tile) {
        const size_t n = N - j < tile ? N - j : tile;
        const int8_t *w[tile];
        uint32_t correction[tile];
        for (size_t c = 0; c < tile; ++c) {
            w[c] = W + (j + (c < n ? c : n - 1)) * ldw;
            __m512i s = _mm512_setzero_si512();
            for (size_t i = 0; i < full; i += 64) s = _mm512_dpbusd_epi32(s, ones, _mm512_loadu_si512(w[c] + i));
            if (tail) s = _mm512_dpbusd_epi32(s, ones, _mm512_maskz_loadu_epi8(tail, w[c] + full));
            correction[c] = 128u * static_cast<uint32_t>(_mm512_reduce_add_epi32(s));
        }
        for (size_t r = 0; r < M; r += tile) {
            const size_t m = M - r < tile ? M - r : tile;
            const int8_t *a[tile];
            for (size_t k = 0; k < tile; ++k) a[k] = A + (r + (k < m ? k : m - 1)) * lda;
            __m512i acc[tile][tile];
            for (size_t k = 0; k < tile; ++k)
                for (size_t c = 0; c < tile; ++c) acc[k][c] = _mm512_setzero_si512();
            for (size_t i = 0; i < K; i += 64) {
                const __mmask64 lanes = i < full ? ~0ull : tail;
                __m512i x[tile], v[tile];
                for (size_t k = 0; k < tile; ++k)
                    x[k] = _mm512_xor_si512(_mm512_maskz_loadu_epi8(lanes, a[k] + i), flip);
                for (size_t c = 0; c < tile; ++c) v[c] = _mm512_maskz_loadu_epi8(lanes, w[c] + i);
                for (size_t k = 0; k < tile; ++k)
                    for (size_t c = 0; c < tile; ++c) acc[k][c] = _mm512_dpbusd_epi32(acc[k][c], x[k], v[c]);
            }
            for (size_t k = 0; k < m; ++k)
                for (size_t c = 0; c < n; ++c)
                    C[(r + k) * ldc + j + c] =
                        static_cast<int32_t>(static_cast<uint32_t>(_mm512_reduce_add_epi32(acc[k][c])) - correction[c]);
        }
    }
}

bool cpu_has_vnni() {
    static const bool has = __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni");
    return has;
}

void int8_products_of_path(size_t M, size_t N, size_t K, const int8_t *A, size_t lda, const int8_t *W,
                           size_t ldw, int32_t *C, size_t ldc) {
    if (cpu_has_vnni()) return int8_products_vnni(M, N, K, A, lda, W, ldw, C, ldc);
    int8_products(M, N, K, A, lda, W, ldw, C, ldc);
}

constexpr integer_kernel_table make_integer_kernel_table() { return {int8_products_of_path}; }
#else
constexpr integer_kernel_table make_integer_kernel_table() { return {int8_products}; }
#endif

}  // namespace

}  // namespace detail
}  // namespace edgeattn

#endif
