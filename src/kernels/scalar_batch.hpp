// A one-lane stand-in for xsimd::batch<float, A>, with the same spelling of
// the operations the kernels use. The kernel templates are written once
// against this interface: with scalar_batch they are the plain C++ path
// (the Cortex-M port, no xsimd needed); with xsimd::batch they are SIMD.
#ifndef EDGEATTN_KERNELS_SCALAR_BATCH_HPP
#define EDGEATTN_KERNELS_SCALAR_BATCH_HPP

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "widen.hpp"

namespace edgeattn {
namespace detail {

struct scalar_batch {
    static constexpr size_t size = 1;
    float value;

    scalar_batch() = default;
    scalar_batch(float v) : value(v) {}

    static scalar_batch load_unaligned(const float *p) { return scalar_batch(*p); }
    void store_unaligned(float *p) const { *p = value; }

    friend scalar_batch operator+(scalar_batch a, scalar_batch b) { return a.value + b.value; }
    friend scalar_batch operator-(scalar_batch a, scalar_batch b) { return a.value - b.value; }
    friend scalar_batch operator*(scalar_batch a, scalar_batch b) { return a.value * b.value; }
    friend scalar_batch operator/(scalar_batch a, scalar_batch b) { return a.value / b.value; }
    friend bool operator<(scalar_batch a, scalar_batch b) { return a.value < b.value; }
    friend bool operator>(scalar_batch a, scalar_batch b) { return a.value > b.value; }
    scalar_batch &operator+=(scalar_batch b) {
        value += b.value;
        return *this;
    }
};

// Found by argument-dependent lookup, as xsimd's are for xsimd::batch.
inline scalar_batch fma(scalar_batch a, scalar_batch b, scalar_batch c) {
    return a.value * b.value + c.value;
}
// max, min and select choose floats, not structs: GCC -Os selected the
// address of a or b and loaded through it (both stored to the stack
// first), 11 instructions an element of softmax's maximum on the
// Cortex-M4F.
inline scalar_batch max(scalar_batch a, scalar_batch b) { return a.value > b.value ? a.value : b.value; }
inline float hadd(scalar_batch a) { return a.value; }
inline scalar_batch min(scalar_batch a, scalar_batch b) { return a.value < b.value ? a.value : b.value; }
inline scalar_batch select(bool condition, scalar_batch a, scalar_batch b) { return condition ? a.value : b.value; }
// Ties to even for |a| < 2^22, all exp.hpp asks of it ([-127, 128]): adding
// and taking away 1.5 * 2^23 leaves a whole number the FPU itself rounded.
// nearbyintf would be a libm call on FPv4 (no VRINT): 196 B of flash.
inline scalar_batch round_to_nearest(scalar_batch a) {
    constexpr float shifter = 12582912.0f;
    return (a.value + shifter) - shifter;
}
// 2^n for a whole n in [-126, 127], from the exponent bits: n + 1.5 * 2^23
// (exact) holds n in its low mantissa bits, and shifted up by 23 they are
// n's exponent field (the shifter's own bits leave nothing there), so no
// float-to-integer conversion: that took a NaN test (converting NaN to an
// integer is undefined in C++) and a conversion, 8 instructions an exp on
// the Cortex-M4F where this takes 5. A NaN n (from a NaN input, whose
// polynomial is NaN too) gives what its bits give (2^0 for the default NaN).
inline scalar_batch pow2n(scalar_batch n) {
    const float shifted = n.value + 12582912.0f;
    uint32_t bits;
    memcpy(&bits, &shifted, sizeof bits);
    bits = (bits << 23) + (127u << 23);
    float result;
    memcpy(&result, &bits, sizeof result);
    return result;
}
inline scalar_batch times_pow2(scalar_batch p, scalar_batch n) { return p * pow2n(n); }
// Stored weights (weight_load.hpp): one at a time.
inline void keep_in_register(scalar_batch &) {}
inline scalar_batch widen_int8(const int8_t *p, batch_tag<scalar_batch>) { return widen(*p); }
inline scalar_batch widen_half(const uint16_t *p, batch_tag<scalar_batch>) { return widen(*p); }
// No vector conversion: the caller rounds lane by lane (float_to_half_ieee).
inline bool narrow_half(const scalar_batch &, uint16_t *) { return false; }

}  // namespace detail
}  // namespace edgeattn

#endif
