// IEEE binary16 <-> binary32 in portable C++ (no F16C, no ARM fp16 types):
// the scalar path's weight loads, the SSE2 path's, and the API's converters.
#ifndef EDGEATTN_KERNELS_HALF_HPP
#define EDGEATTN_KERNELS_HALF_HPP

#include <stdint.h>
#include <string.h>

namespace edgeattn {
namespace detail {

inline float float_from_bits(uint32_t bits) {
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

inline uint32_t bits_of(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return bits;
}

// Exact: every binary16 value is a binary32 value.
inline float half_to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exponent = (h >> 10) & 0x1Fu, mantissa = h & 0x3FFu;
    if (exponent == 0x1Fu) return float_from_bits(sign | 0x7F800000u | mantissa << 13);  // inf, NaN
    if (exponent != 0) return float_from_bits(sign | (exponent + 112u) << 23 | mantissa << 13);
    // Zero or subnormal: mantissa * 2^-24, exact in binary32.
    const float magnitude = static_cast<float>(mantissa) * float_from_bits(0x33800000u);
    return sign ? -magnitude : magnitude;
}

// Round to nearest, ties to even. The caller has checked that x is finite
// and that |x| rounds to at most 65504 (half_in_range).
inline uint16_t float_to_half(float x) {
    const uint32_t bits = bits_of(x);
    const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
    const uint32_t magnitude = bits & 0x7FFFFFFFu;
    if (magnitude < 0x38800000u) {
        // Below the smallest normal half (2^-14): a multiple of 2^-24. Adding
        // 0.5f shifts the value into [0.5, 1) whose ulp is 2^-24, so the
        // float addition itself rounds to nearest even.
        const float shifted = float_from_bits(magnitude) + 0.5f;
        return static_cast<uint16_t>(sign | (bits_of(shifted) - 0x3F000000u));
    }
    // Normal: drop 13 mantissa bits with round to nearest even; a carry
    // into the exponent is the right result (up to 65504's rounding).
    const uint32_t rebased = magnitude - (112u << 23);
    const uint32_t rounded = rebased + 0xFFFu + ((rebased >> 13) & 1u);
    return static_cast<uint16_t>(sign | rounded >> 13);
}

// Whether x converts to a finite half: |x| below 65520 (which rounds to inf).
inline bool half_in_range(float x) {
    return x == x && x < 65520.0f && x > -65520.0f;
}

// IEEE conversion for values the library produces (a KV cache's keys):
// beyond the largest half, +-inf; NaN stays a quiet NaN of its sign and
// upper payload bits, as F16C's and AArch64's conversions give it (so the
// vector paths' conversions are bitwise this function).
inline uint16_t float_to_half_ieee(float x) {
    if (half_in_range(x)) return float_to_half(x);
    const uint16_t sign = static_cast<uint16_t>((bits_of(x) >> 16) & 0x8000u);
    const uint16_t payload = static_cast<uint16_t>((bits_of(x) & 0x007FFFFFu) >> 13);
    return x == x ? static_cast<uint16_t>(sign | 0x7C00u) : static_cast<uint16_t>(sign | 0x7E00u | payload);
}


}  // namespace detail
}  // namespace edgeattn

#endif
