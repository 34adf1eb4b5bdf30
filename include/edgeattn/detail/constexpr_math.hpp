// Double-precision exp, sin and cos usable in constant expressions (C++17's
// <cmath> is not constexpr). They exist so that the positional-encoding
// table can be computed by the compiler and placed in .rodata (flash on a
// microcontroller); the C API's runtime table uses the same functions, so
// both tables are bit-identical and need no libm.
//
// Accuracy: relative error below 1e-15 for exp on [-40, 40]; absolute error
// below 1e-15 * (1 + |x| / 1e3) for sin and cos with |x| <= 1e6 (two-part
// Cody-Waite reduction by pi/2). That is far inside the float rounding of
// the table (2^-25 ~ 3e-8).
#ifndef EDGEATTN_DETAIL_CONSTEXPR_MATH_HPP
#define EDGEATTN_DETAIL_CONSTEXPR_MATH_HPP

namespace edgeattn {
namespace detail {

constexpr double ln2 = 0.693147180559945309417232121458176568;
constexpr double ln10000 = 9.21034037197618273607196581873745730;

// Nearest integer (ties away from zero), as a double.
constexpr double round_to_integer(double x) {
    const long long n = static_cast<long long>(x < 0 ? x - 0.5 : x + 0.5);
    return static_cast<double>(n);
}

// exp(x) = 2^k * exp(r), |r| <= ln2/2, exp(r) by its Taylor series.
constexpr double constexpr_exp(double x) {
    const double k = round_to_integer(x / ln2);
    const double r = x - k * ln2;
    double term = 1.0, sum = 1.0;
    for (int n = 1; n < 24; ++n) {
        term *= r / n;
        sum += term;
    }
    double scale = 1.0;
    const double base = k < 0 ? 0.5 : 2.0;
    for (long long i = 0, e = static_cast<long long>(k < 0 ? -k : k); i < e; ++i) scale *= base;
    return sum * scale;
}

// sin and cos of |r| <= pi/4 by their Taylor series.
constexpr double sin_reduced(double r) {
    double term = r, sum = r;
    const double r2 = r * r;
    for (int n = 1; n < 12; ++n) {
        term *= -r2 / ((2.0 * n) * (2.0 * n + 1.0));
        sum += term;
    }
    return sum;
}

constexpr double cos_reduced(double r) {
    double term = 1.0, sum = 1.0;
    const double r2 = r * r;
    for (int n = 1; n < 12; ++n) {
        term *= -r2 / ((2.0 * n - 1.0) * (2.0 * n));
        sum += term;
    }
    return sum;
}

// x = q * pi/2 + r; pi/2 split in two parts so q * pi_over_2_high is exact.
struct quadrant_reduction {
    double r;
    long long quadrant;  // q mod 4, in 0..3
};

constexpr quadrant_reduction reduce_by_half_pi(double x) {
    constexpr double two_over_pi = 0.636619772367581343075535053490057448;
    constexpr double pi_over_2_high = 1.5707963267341256141662597656250;  // 33 bits
    constexpr double pi_over_2_low = 6.0771005065061922626e-11;          // the rest
    const double q = round_to_integer(x * two_over_pi);
    const double r = (x - q * pi_over_2_high) - q * pi_over_2_low;
    long long quadrant = static_cast<long long>(q) % 4;
    if (quadrant < 0) quadrant += 4;
    return {r, quadrant};
}

constexpr double constexpr_sin(double x) {
    const quadrant_reduction red = reduce_by_half_pi(x);
    switch (red.quadrant) {
        case 0: return sin_reduced(red.r);
        case 1: return cos_reduced(red.r);
        case 2: return -sin_reduced(red.r);
        default: return -cos_reduced(red.r);
    }
}

constexpr double constexpr_cos(double x) {
    const quadrant_reduction red = reduce_by_half_pi(x);
    switch (red.quadrant) {
        case 0: return cos_reduced(red.r);
        case 1: return -sin_reduced(red.r);
        case 2: return -cos_reduced(red.r);
        default: return sin_reduced(red.r);
    }
}

// The positional encoding of position `pos`, column `col` of a d-wide table:
// sin(pos / 10000^(2j/d)) for col = 2j, cos(pos / 10000^(2j/d)) for col = 2j+1.
constexpr float positional_encoding_value(unsigned long pos, unsigned long col, unsigned long d) {
    const unsigned long pair = col / 2;
    const double inverse_wavelength = constexpr_exp(-ln10000 * (2.0 * pair) / d);
    const double angle = static_cast<double>(pos) * inverse_wavelength;
    return static_cast<float>(col % 2 == 0 ? constexpr_sin(angle) : constexpr_cos(angle));
}

}  // namespace detail
}  // namespace edgeattn

#endif
