// Double-precision exp, log, sin and cos usable in constant expressions
// (C++17's <cmath> is not constexpr). They exist so that the positional-
// encoding and RoPE tables can be computed by the compiler and placed in
// .rodata (flash on a microcontroller); the C API's runtime tables use the
// same functions, so both are bit-identical and need no libm.
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

// log(x) for finite x > 0 (subnormals too): x = m * 2^e with m in
// [sqrt(1/2), sqrt(2)), log(m) = 2 atanh(z), z = (m - 1) / (m + 1), |z| <=
// 0.172, by its series. Relative error below 1e-15 (the RoPE table's
// log(theta)). The scaling by 2 is exact; it loops at most 1075 times.
constexpr double constexpr_log(double x) {
    constexpr double sqrt_half = 0.707106781186547524400844362104849039;
    constexpr double sqrt_two = 1.41421356237309504880168872420969808;
    long long e = 0;
    while (x < sqrt_half) {
        x *= 2.0;
        --e;
    }
    while (x >= sqrt_two) {
        x *= 0.5;
        ++e;
    }
    const double z = (x - 1.0) / (x + 1.0), z2 = z * z;
    double power = z, sum = z;
    for (int n = 1; n < 14; ++n) {  // next term < 1e-22 for |z| <= 0.172
        power *= z2;
        sum += power / (2.0 * n + 1.0);
    }
    return static_cast<double>(e) * ln2 + 2.0 * sum;
}

// sin and cos of |r| <= pi/4 by their Taylor series.
constexpr double sin_reduced(double r) {
    double term = r, sum = r;
    const double r2 = r * r;
    for (int n = 1; n < 9; ++n) {  // next term < 1e-18 for |r| <= pi/4
        term *= -r2 / ((2.0 * n) * (2.0 * n + 1.0));
        sum += term;
    }
    return sum;
}

constexpr double cos_reduced(double r) {
    double term = 1.0, sum = 1.0;
    const double r2 = r * r;
    for (int n = 1; n < 9; ++n) {
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

// sin(x) and cos(x) from one reduction: the values of constexpr_sin and
// constexpr_cos, bit for bit, for half the reduction work.
struct sin_cos {
    double sin, cos;
};

constexpr sin_cos constexpr_sin_cos(double x) {
    const quadrant_reduction red = reduce_by_half_pi(x);
    const double s = sin_reduced(red.r), c = cos_reduced(red.r);
    switch (red.quadrant) {
        case 0: return {s, c};
        case 1: return {c, -s};
        case 2: return {-s, -c};
        default: return {-c, s};
    }
}

// 1 / 10000^(2j/d): the angular frequency of column pair j of a d-wide table.
constexpr double positional_frequency(unsigned long pair, unsigned long d) {
    return constexpr_exp(-ln10000 * (2.0 * pair) / d);
}

// Fills P (max_len, d) one column pair at a time. Within a pair, row i+1
// comes from row i by the rotation (sin, cos)(a + w) = (s cos w + c sin w,
// c cos w - s sin w), which costs a few operations instead of a series (the
// compiler's constexpr budget is ~3e7 operations); every 32nd row is
// evaluated directly so rounding cannot drift (error stays below 1e-14).
constexpr void fill_positional_encoding(float *P, unsigned long max_len, unsigned long d) {
    for (unsigned long col = 0; col < d; col += 2) {
        const double frequency = positional_frequency(col / 2, d);
        const double sin_step = constexpr_sin(frequency), cos_step = constexpr_cos(frequency);
        double s = 0.0, c = 1.0;
        for (unsigned long i = 0; i < max_len; ++i) {
            if (i % 32 == 0) {
                s = constexpr_sin(static_cast<double>(i) * frequency);
                c = constexpr_cos(static_cast<double>(i) * frequency);
            } else {
                const double next_s = s * cos_step + c * sin_step;
                c = c * cos_step - s * sin_step;
                s = next_s;
            }
            P[i * d + col] = static_cast<float>(s);
            if (col + 1 < d) P[i * d + col + 1] = static_cast<float>(c);
        }
    }
}

}  // namespace detail
}  // namespace edgeattn

#endif
