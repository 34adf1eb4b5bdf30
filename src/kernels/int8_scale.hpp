// The one int8 rule of the library, for weights (per output channel,
// edgeattn_quantize_int8) and for a KV cache (per cached row):
//   scale = max |x| / 127 in float, so the largest element maps to +-127;
//           1 for a row of zeros; 2^-149, the smallest subnormal, when the
//           division underflows to 0 (max |x| <= 63 * 2^-149: such a row
//           is then stored exactly) -- never a scale of 0, which the
//           attention calls refuse and which would lose the row;
//   q     = x / scale rounded to nearest, ties to even, in [-127, 127].
// The rounding is decided on the exact quotient, in float arithmetic only
// (the Cortex-M4F has no double unit): the float quotient can round onto a
// tie -- 0.665428519 / (24.1455498 / 127) rounds to 3.5 (then 4), while the
// exact quotient is below 3.5 (3) -- so on a tie the sign of
// x - (k + 1/2) * scale, one FMA, decides.
// A row with a NaN or an infinity (only a cache's: the quantiser refuses
// them first) is stored with scale NaN and q 0, so every element reads
// back as NaN: int8 cannot hold an infinity beside finite numbers, and a
// non-finite row must not come back as finite numbers.
#ifndef EDGEATTN_KERNELS_INT8_SCALE_HPP
#define EDGEATTN_KERNELS_INT8_SCALE_HPP

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

namespace edgeattn {
namespace detail {

// The bits of max |x| over a row, as an int32. With the sign bit cleared,
// the order of floats' bit patterns is the order of their values, and an
// infinity's or a NaN's pattern lies above every finite one: one integer
// pass, which vectorises (no NaN rules, no float compares), gives both
// the scale and whether the row is finite.
constexpr int32_t int8_infinity_bits = 0x7f800000;
inline int32_t largest_magnitude_bits(const float *x, size_t n) {
    int32_t largest = 0;
    for (size_t i = 0; i < n; ++i) {
        int32_t bits;
        memcpy(&bits, x + i, sizeof bits);
        bits &= 0x7fffffff;
        largest = bits > largest ? bits : largest;
    }
    return largest;
}

// The scale of a row whose max |x| has the (finite) bits `largest`.
inline float int8_scale_of_largest(int32_t largest) {
    float m;
    memcpy(&m, &largest, sizeof m);
    if (m == 0.0f) return 1.0f;
    const float scale = m / 127.0f;
    return scale > 0.0f ? scale : 1.40129846e-45f;  // 2^-149
}

// The scale of a row of finite floats.
inline float int8_row_scale(const float *x, size_t n) { return int8_scale_of_largest(largest_magnitude_bits(x, n)); }

// x / scale rounded to nearest, ties to even, clamped to [-127, 127]
// (finite x, scale > 0). Rounding is monotonic, so the float quotient t
// lies on the same side of every half h = k + 1/2 as the exact one, or on
// h itself; only then can they round apart, and x - h * scale decides,
// which an FMA gives with its exact sign: x and scale are multiples of
// 2^-149 and h * scale of 2^-150, so a nonzero difference is at least
// 2^-150 -- at least 2^-86 once tiny rows are scaled by 2^64 (exact), far
// from rounding to 0.
inline int8_t quantize_int8(float x, float scale) {
    if (scale < 0x1p-100f) {
        x *= 0x1p64f;
        scale *= 0x1p64f;
    }
    const float t = x / scale;
    if (!(t < 127.0f)) return 127;
    if (!(t > -127.0f)) return -127;
    int below = static_cast<int>(t);  // floor(t), without libm's floorf
    if (static_cast<float>(below) > t) --below;
    const float h = static_cast<float>(below) + 0.5f;
    bool up = t > h;
    if (t == h) {
        const float e = fmaf(-h, scale, x);
        up = e > 0.0f || (e == 0.0f && below % 2 != 0);  // a true tie goes to the even neighbour
    }
    const int q = up ? below + 1 : below;
    return static_cast<int8_t>(q > 127 ? 127 : q < -127 ? -127 : q);
}

// Whether r = t rounded (by (t + 1.5 * 2^23) - 1.5 * 2^23) lies within
// 2^-14 of half a unit from t: |r - t| >= 0.5 - 2^-14, compared as bits (an
// integer compare: the loop below then has no float compare, which GCC,
// keeping float compares' exceptions, would not vectorise).
inline bool int8_near_a_half(float t, float r) {
    const float d = r - t;
    int32_t bits;
    memcpy(&bits, &d, sizeof bits);
    return (bits & 0x7fffffff) >= 0x3efff800;  // the bits of 0.5 - 2^-14
}

// quantize_int8 over a row, in two passes. The first multiplies by the
// scale's reciprocal, t = x * (1 / scale): within |x / scale| * 2^-23 <
// 2^-16 of the exact quotient (two roundings, |x / scale| <= 127.5), so
// its rounding r (the 1.5 * 2^23 trick, exact for |t| < 2^22), clamped to
// [-127, 127] as an integer, is quantize_int8's answer unless a half lies
// within 2^-16 of t; the second sends those elements (and any nearer
// than 2^-14) through quantize_int8, whose division and exact tie rule
// decide. No division and no float compare: the first loop vectorises on
// every path (Helium has no vector division). Tiny scales (rescaled
// there) take quantize_int8 throughout.
inline void quantize_int8_values(const float *x, size_t n, float scale, int8_t *q) {
    if (scale < 0x1p-100f) {
        for (size_t i = 0; i < n; ++i) q[i] = quantize_int8(x[i], scale);
        return;
    }
    constexpr float round_constant = 12582912.0f;  // 1.5 * 2^23
    const float inverse = 1.0f / scale;
    int32_t near = 0;
    for (size_t i = 0; i < n; ++i) {
        const float t = x[i] * inverse;
        const float r = (t + round_constant) - round_constant;
        near |= int8_near_a_half(t, r);
        int32_t v = static_cast<int32_t>(r);
        v = v < 127 ? v : 127;
        v = v > -127 ? v : -127;
        q[i] = static_cast<int8_t>(v);
    }
    for (size_t i = 0; near && i < n; ++i) {
        const float t = x[i] * inverse;
        if (int8_near_a_half(t, (t + round_constant) - round_constant)) q[i] = quantize_int8(x[i], scale);
    }
}

// Stores a row of n floats as q (n int8) and returns its scale.
inline float quantize_int8_row(const float *x, size_t n, int8_t *q) {
    const int32_t largest = largest_magnitude_bits(x, n);
    if (largest >= int8_infinity_bits) {  // a NaN or an infinity
        memset(q, 0, n);
        return NAN;
    }
    const float scale = int8_scale_of_largest(largest);
    quantize_int8_values(x, n, scale, q);
    return scale;
}

}  // namespace detail
}  // namespace edgeattn

#endif
