// The one int8 rule of the library, for weights (per output channel,
// edgeattn_quantize_int8) and for a KV cache (per cached row):
//   scale = max |x| / 127 in float, so the largest element maps to +-127;
//           1 for a row of zeros; 2^-149, the smallest subnormal, when the
//           division underflows to 0 (max |x| <= 63 * 2^-149: such a row
//           is then stored exactly) -- never a scale of 0, which the
//           attention calls refuse and which would lose the row;
//   q     = x / scale rounded to nearest, ties to even, in [-127, 127].
// The quotient is taken in double, where it is never rounded onto a tie it
// is not: x and scale have 24-bit significands, so a quotient that is not
// k + 1/2 differs from it by far more than double's rounding. In float it
// can be: 0.665428519 / (24.1455498 / 127) rounds to 3.5 (then 4), while
// the exact quotient is below 3.5 (3).
// A row with a NaN or an infinity (only a cache's: the quantiser refuses
// them first) is stored with scale NaN and q 0, so every element reads
// back as NaN: int8 cannot hold an infinity beside finite numbers, and a
// non-finite row must not come back as finite numbers.
#ifndef EDGEATTN_KERNELS_INT8_SCALE_HPP
#define EDGEATTN_KERNELS_INT8_SCALE_HPP

#include <math.h>
#include <stddef.h>
#include <stdint.h>

namespace edgeattn {
namespace detail {

// The scale of a row of finite floats.
inline float int8_row_scale(const float *x, size_t n) {
    float largest = 0.0f;
    for (size_t i = 0; i < n; ++i)
        if (fabsf(x[i]) > largest) largest = fabsf(x[i]);
    if (largest == 0.0f) return 1.0f;
    const float scale = largest / 127.0f;
    return scale > 0.0f ? scale : 1.40129846e-45f;  // 2^-149
}

// x / scale rounded to nearest, ties to even, clamped to [-127, 127].
inline int8_t quantize_int8(float x, float scale) {
    double r = nearbyint(static_cast<double>(x) / static_cast<double>(scale));
    if (r > 127.0) r = 127.0;
    if (r < -127.0) r = -127.0;
    return static_cast<int8_t>(r);
}

// Stores a row of n floats as q (n int8) and returns its scale.
inline float quantize_int8_row(const float *x, size_t n, int8_t *q) {
    for (size_t i = 0; i < n; ++i)
        if (!(x[i] - x[i] == 0.0f)) {  // NaN or +-inf
            for (size_t j = 0; j < n; ++j) q[j] = 0;
            return NAN;
        }
    const float scale = int8_row_scale(x, n);
    for (size_t i = 0; i < n; ++i) q[i] = quantize_int8(x[i], scale);
    return scale;
}

}  // namespace detail
}  // namespace edgeattn

#endif
