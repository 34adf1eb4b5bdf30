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

// Each path's step: int8_step bytes of A against as many of a W row.
// int8_x is A's step loaded (widened where the path needs it), int8_acc a
// column's running sums; int8_accumulate adds one W row's step of products,
// int8_total sums the lanes. int8_dots4 below runs them for every path.
#if EDGEATTN_INT8_PRODUCTS == EDGEATTN_INT8_AVX2 || EDGEATTN_INT8_PRODUCTS == EDGEATTN_INT8_AVX512
// 32 products a step: VPMADDUBSW multiplies unsigned by signed bytes and
// adds pairs into int16, saturating. |w| as the unsigned side (-128 is 128)
// and a with w's sign as the signed side ([-127, 127]) keep each pair within
// 2 * 128 * 127 = 32512: no saturation. VPMADDWD by ones widens the pairs.
constexpr size_t int8_step = 32;
using int8_acc = __m256i;
using int8_x = __m256i;

inline int8_acc int8_zero() { return _mm256_setzero_si256(); }
inline int8_x int8_load_x(const int8_t *a) { return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(a)); }

inline int8_acc int8_accumulate(int8_acc acc, const int8_x &a, const int8_t *w) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(w));
    const __m256i pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(v), _mm256_sign_epi8(a, v));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

inline int32_t int8_total(int8_acc v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}
#elif EDGEATTN_INT8_PRODUCTS == EDGEATTN_INT8_SSE2
// 16 products a step: both sides widened to int16 (bytes unpacked with
// themselves, then an arithmetic shift), PMADDWD adds pairs into int32.
constexpr size_t int8_step = 16;
using int8_acc = __m128i;
struct int8_x {
    __m128i low, high;  // bytes 0..7 and 8..15 as int16
};

inline __m128i widen_low(__m128i v) { return _mm_srai_epi16(_mm_unpacklo_epi8(v, v), 8); }
inline __m128i widen_high(__m128i v) { return _mm_srai_epi16(_mm_unpackhi_epi8(v, v), 8); }

inline int8_acc int8_zero() { return _mm_setzero_si128(); }
inline int8_x int8_load_x(const int8_t *a) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(a));
    return {widen_low(v), widen_high(v)};
}

inline int8_acc int8_accumulate(int8_acc acc, const int8_x &a, const int8_t *w) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(w));
    return _mm_add_epi32(acc, _mm_add_epi32(_mm_madd_epi16(a.low, widen_low(v)), _mm_madd_epi16(a.high, widen_high(v))));
}

inline int32_t int8_total(int8_acc s) {
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}
#elif EDGEATTN_INT8_PRODUCTS == EDGEATTN_INT8_NEON
// 16 products a step: VMULL and VMLAL of the two halves into int16 lanes
// (two products of at most 128 * 127 each: 32512, no overflow), then
// VPADAL adds neighbouring lanes into int32.
constexpr size_t int8_step = 16;
using int8_acc = int32x4_t;
using int8_x = int8x16_t;

inline int8_acc int8_zero() { return vdupq_n_s32(0); }
inline int8_x int8_load_x(const int8_t *a) { return vld1q_s8(a); }

inline int8_acc int8_accumulate(int8_acc acc, const int8_x &a, const int8_t *w) {
    const int8x16_t v = vld1q_s8(w);
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
constexpr size_t int8_step = 16;
using int8_acc = int32_t;
using int8_x = int8x16_t;

inline int8_acc int8_zero() { return 0; }
inline int8_x int8_load_x(const int8_t *a) { return vld1q_s8(a); }
inline int8_acc int8_accumulate(int8_acc acc, const int8_x &a, const int8_t *w) {
    return vmladavaq_s8(acc, a, vld1q_s8(w));
}
inline int32_t int8_total(int8_acc s) { return s; }
#elif defined(__ARM_FEATURE_DSP) && !defined(__aarch64__)
// Cortex-M4F, ARMv7: SMLAD multiplies two signed halfword pairs and adds
// both; SXTB16 sign-extends bytes 0 and 2 of a word (and, rotated by 8, 1
// and 3). 4 products a step.
constexpr size_t int8_step = 4;
using int8_acc = int32_t;
struct int8_x {
    int32_t even, odd;  // bytes 0, 2 and 1, 3 as halfword pairs
};

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
inline int8_acc int8_accumulate(int8_acc acc, const int8_x &a, const int8_t *w) {
    const uint32_t v = load_word(w);
    return smlad(a.odd, sxtb16_odd(v), smlad(a.even, sxtb16(v), acc));
}
inline int32_t int8_total(int8_acc s) { return s; }
#else
#define EDGEATTN_INT8_LOOPS_ONLY 1  // the plain loop alone
#endif

// sums[c] = A . W_c over K for four rows of W: whole steps through the
// path's primitives, the tail (and a path without them) in the plain loop.
inline void int8_dots4(const int8_t *a, const int8_t *const w[4], size_t K, int32_t sums[4]) {
    size_t i = 0;
#if defined(EDGEATTN_INT8_LOOPS_ONLY)
    sums[0] = sums[1] = sums[2] = sums[3] = 0;
#else
    int8_acc s[4] = {int8_zero(), int8_zero(), int8_zero(), int8_zero()};
    for (; i + int8_step <= K; i += int8_step) {
        const int8_x x = int8_load_x(a + i);
#pragma GCC unroll 4
        for (size_t c = 0; c < 4; ++c) s[c] = int8_accumulate(s[c], x, w[c] + i);
    }
#pragma GCC unroll 4
    for (size_t c = 0; c < 4; ++c) sums[c] = int8_total(s[c]);
#endif
    int8_dots4_from(a, w, i, K, sums);
}
#undef EDGEATTN_INT8_LOOPS_ONLY

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

// Asked on every call: __builtin_cpu_supports reads a word libgcc filled at
// start-up, and a function-local static would need libstdc++'s guards,
// which a C program linking the library does not have.
bool cpu_has_vnni() { return __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni"); }

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
