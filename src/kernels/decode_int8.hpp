// The scores of a decode step over int8 keys as integer dot products (AVX2
// and AVX-512 paths): each query head's row rounded to int16 with a scale
// of its own (max |q| / 32767), each key's int8 row widened to int16, and
// the sums of products taken exactly in int32 (vpmaddwd), converted once
// per score and scaled by alpha * the query's scale * the key's scale.
//
// Why: widening each key to fp32 costs two instructions per eight
// elements besides the multiply-add (sign extension, conversion); to int16
// it is one per sixteen, and one vpmaddwd multiplies and adds sixteen
// pairs. The query's rounding moves a score by at most
// d * (max |q| / 65534) * max |k| (a relative 1.5e-5 of the largest
// product sum): a hundredth of what the keys' own int8 rounding (1/254 of
// each row's largest element) moves it.
//
// The int32 sums stay exact for head sizes up to 512 (512 * 32767 * 127 <
// 2^31); a larger head, or a query row that is not finite, takes the fp32
// kernel (decode.hpp) for the whole call. Which kernel a call takes depends
// on its inputs alone, never on threads or workspace.
#ifndef EDGEATTN_KERNELS_DECODE_INT8_HPP
#define EDGEATTN_KERNELS_DECODE_INT8_HPP

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "decode.hpp"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace edgeattn {
namespace detail {
namespace {

#if defined(__AVX2__)

// Head sizes whose int32 sums cannot overflow, and the rows a call
// rounds at a time (a tile: its int16 rows live on the stack).
constexpr size_t int8_scores_max_d = 512;
constexpr size_t int8_scores_rows = 4;

// q16 = q (d floats) rounded to int16 at q's own scale, zero-padded to a
// multiple of 16; scale = max |q| / 32767 (0 for a zero row). False when q
// holds NaN or an infinity.
inline bool round_query_int16(const float *q, size_t d, int16_t *q16, float &scale) {
    float largest = 0.0f;
    for (size_t c = 0; c < d; ++c) {
        const float a = q[c] < 0.0f ? -q[c] : q[c];
        if (!(a <= 3.4028235e38f)) return false;  // NaN or +-inf
        largest = a > largest ? a : largest;
    }
    const size_t padded = (d + 15) / 16 * 16;
    if (largest == 0.0f) {
        scale = 0.0f;
        memset(q16, 0, padded * sizeof(int16_t));
        return true;
    }
    scale = largest / 32767.0f;
    const __m256 inverse = _mm256_set1_ps(32767.0f / largest);
    size_t c = 0;
    for (; c + 16 <= d; c += 16) {
        // Round to nearest even (MXCSR's default); |q| * inverse <= 32767.
        const __m256i lo = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(q + c), inverse));
        const __m256i hi = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(q + c + 8), inverse));
        // packs works within 128-bit lanes: restore the order.
        const __m256i packed = _mm256_permute4x64_epi64(_mm256_packs_epi32(lo, hi), 0xD8);
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(q16 + c), packed);
    }
    for (; c < d; ++c) q16[c] = static_cast<int16_t>(_mm_cvtss_si32(_mm_set_ss(q[c] * (32767.0f / largest))));
    for (; c < padded; ++c) q16[c] = 0;
    return true;
}

// Sixteen int8 of a key row widened to int16; past `n` (< 16) zeros, and
// nothing read there.
inline __m256i key_int16(const int8_t *k, size_t n) {
    if (n >= 16) return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i *>(k)));
    alignas(16) int8_t part[16] = {0};
    memcpy(part, k, n);
    return _mm256_cvtepi8_epi16(_mm_load_si128(reinterpret_cast<const __m128i *>(part)));
}

// Lane i of the result: the sum of the eight int32 lanes of v[i].
inline __m256i int32_lane_sums(const __m256i *v) {
    const __m256i s01 = _mm256_hadd_epi32(v[0], v[1]), s23 = _mm256_hadd_epi32(v[2], v[3]);
    const __m256i s45 = _mm256_hadd_epi32(v[4], v[5]), s67 = _mm256_hadd_epi32(v[6], v[7]);
    const __m256i t0 = _mm256_hadd_epi32(s01, s23), t1 = _mm256_hadd_epi32(s45, s67);
    return _mm256_add_epi32(_mm256_permute2x128_si256(t0, t1, 0x20), _mm256_permute2x128_si256(t0, t1, 0x31));
}

// A tile of TA query rows by TW keys (TA * TW = 8 int32 lanes: lane t * TW
// + u is row t, key u): the exact dot products of the int16 rows q[t] and
// the int8 keys k[u] over d elements.
template <size_t TA, size_t TW>
__m256i int8_score_tile(size_t d, const int16_t *const *q, const int8_t *const *k) {
    static_assert(TA * TW == 8, "one int32 lane per score");
    __m256i acc[8];
#pragma GCC unroll 8
    for (size_t i = 0; i < 8; ++i) acc[i] = _mm256_setzero_si256();
    const size_t full = d / 16 * 16;
    for (size_t c = 0; c < d; c += 16) {
        const size_t n = c < full ? 16 : d - full;
        if (TA == 1) {
            // One row: each key feeds its product as soon as it is
            // widened (all TW widened first would spill an accumulator).
            const __m256i qv = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(q[0] + c));
#pragma GCC unroll 8
            for (size_t u = 0; u < TW; ++u)
                acc[u] = _mm256_add_epi32(acc[u], _mm256_madd_epi16(qv, key_int16(k[u] + c, n)));
            continue;
        }
        __m256i kv[TW];
#pragma GCC unroll 8
        for (size_t u = 0; u < TW; ++u) kv[u] = key_int16(k[u] + c, n);
#pragma GCC unroll 4
        for (size_t t = 0; t < TA; ++t) {
            const __m256i qv = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(q[t] + c));
#pragma GCC unroll 8
            for (size_t u = 0; u < TW; ++u)
                acc[t * TW + u] = _mm256_add_epi32(acc[t * TW + u], _mm256_madd_epi16(qv, kv[u]));
        }
    }
    return int32_lane_sums(acc);
}

// Rows [i0, i0 + rows) (rows <= TA) of the scores against all N keys.
template <size_t TA>
void int8_score_rows(size_t N, size_t d, const int16_t *q16, size_t ldq, const float *row_factor,
                     const int8_t *Km, size_t ldk, float *c, size_t ldc, size_t rows) {
    constexpr size_t TW = 8 / TA;
    const int16_t *qr[TA];
    alignas(32) float factor[8];
    for (size_t t = 0; t < TA; ++t) {
        qr[t] = q16 + (t < rows ? t : 0) * ldq;
        for (size_t u = 0; u < TW; ++u) factor[t * TW + u] = row_factor[t < rows ? t : 0];
    }
    const __m256 factors = _mm256_load_ps(factor);
    for (size_t j0 = 0; j0 < N; j0 += TW) {
        const size_t cols = N - j0 < TW ? N - j0 : TW;
        const int8_t *kr[TW];
        for (size_t u = 0; u < TW; ++u) kr[u] = Km + (j0 + (u < cols ? u : 0)) * ldk;
        const __m256 scores = _mm256_mul_ps(_mm256_cvtepi32_ps(int8_score_tile<TA, TW>(d, qr, kr)), factors);
        if (TA == 1 && cols == TW) {
            _mm256_storeu_ps(c + j0, scores);
            continue;
        }
        alignas(32) float sums[8];
        _mm256_store_ps(sums, scores);
        for (size_t t = 0; t < rows; ++t)
            for (size_t u = 0; u < cols; ++u) c[t * ldc + j0 + u] = sums[t * TW + u];
    }
}

template <class B>
void decode_scores_int8(size_t M, size_t N, size_t K, float alpha, const float *A, size_t lda, const void *Wm,
                        size_t ldw, const float *scales, float *C, size_t ldc) {
    const int8_t *keys = static_cast<const int8_t *>(Wm);
    constexpr size_t R = int8_scores_rows, D = int8_scores_max_d;
    alignas(32) int16_t q16[R * D];
    float factor[R];
    bool exact = K <= D;
    for (size_t i0 = 0; exact && i0 < M; i0 += R) {
        const size_t rows = M - i0 < R ? M - i0 : R;
        for (size_t t = 0; t < rows && exact; ++t) {
            float s = 0.0f;
            exact = round_query_int16(A + (i0 + t) * lda, K, q16 + t * D, s);
            factor[t] = alpha * s;
        }
        if (!exact) break;
        float *c = C + i0 * ldc;
        // Tiles as the fp32 kernel's: 4 rows, else 2, else 1 (so no lane
        // computes a copy of another).
        for (size_t t0 = 0; t0 < rows;) {
            const size_t left = rows - t0;
            const int16_t *q = q16 + t0 * D;
            if (left >= 4) {
                int8_score_rows<4>(N, K, q, D, factor + t0, keys, ldw, c + t0 * ldc, ldc, 4);
                t0 += 4;
            } else if (left >= 2) {
                int8_score_rows<2>(N, K, q, D, factor + t0, keys, ldw, c + t0 * ldc, ldc, 2);
                t0 += 2;
            } else {
                int8_score_rows<1>(N, K, q, D, factor + t0, keys, ldw, c + t0 * ldc, ldc, 1);
                t0 += 1;
            }
        }
        if (scales)
            for (size_t t = 0; t < rows; ++t) times_scales<B>(c + t * ldc, scales, c + t * ldc, N);
    }
    // A query row that is not finite (its NaN or infinity reaches every
    // score), or a head past 512: the fp32 kernel, for every row.
    if (!exact) decode_scores<B, int8_t>(M, N, K, alpha, A, lda, Wm, ldw, scales, C, ldc);
}

#else

// Paths without AVX2: the fp32 kernel.
template <class B>
void decode_scores_int8(size_t M, size_t N, size_t K, float alpha, const float *A, size_t lda, const void *Wm,
                        size_t ldw, const float *scales, float *C, size_t ldc) {
    decode_scores<B, int8_t>(M, N, K, alpha, A, lda, Wm, ldw, scales, C, ldc);
}

#endif

}  // namespace
}  // namespace detail
}  // namespace edgeattn

#endif
