// The RoPE table (edgeattn/rope.h): its arguments' checks and its values,
// one implementation for the C++ constexpr edgeattn::rope_table and the C
// edgeattn_rope_table(), so both are bit-identical and neither needs libm.
//
// Row p holds cos(a_p,i) for i < rotary_dims / 2, then sin(a_p,i), with
// a_p,i = p / position_scale * theta^(-2i / rotary_dims) computed in double
// precision (theta^x as exp(x log theta)) and rounded to float.
#ifndef EDGEATTN_DETAIL_ROPE_TABLE_HPP
#define EDGEATTN_DETAIL_ROPE_TABLE_HPP

#include <cstddef>

#include "constexpr_math.hpp"

namespace edgeattn {
namespace detail {

// The largest angle a table may hold, in radians: the angle reduction of
// constexpr_math.hpp stays within 1e-9 of the exact angle below it (float
// resolves 6e-8 near 1), and its integer conversion is defined. A table
// whose positions / position_scale times a frequency goes past it (a tiny
// position_scale or theta) is refused.
constexpr double rope_max_angle = 16777216.0;  // 2^24
constexpr double rope_log_max_angle = 24.0 * ln2;

constexpr double rope_default_theta = 10000.0;

// The configured theta and position_scale, 0 meaning the default.
constexpr double rope_theta_or_default(double theta) { return theta == 0.0 ? rope_default_theta : theta; }
constexpr double rope_scale_or_default(double position_scale) {
    return position_scale == 0.0 ? 1.0 : position_scale;
}

// Finite and > 0, without producing a NaN (not a constant expression).
constexpr bool is_finite_positive(double x) {
    return x > 0.0 && x <= 1.79769313486231570815e308;  // DBL_MAX; false for NaN
}

// log(theta) times the exponent of pair i's frequency theta^(-2i / rotary_dims).
constexpr double rope_frequency_exponent(double log_theta, std::size_t pair, std::size_t rotary_dims) {
    return -log_theta * (2.0 * static_cast<double>(pair) / static_cast<double>(rotary_dims));
}

// Whether a table of these arguments (defaults already applied) can be
// made: max_positions > 0, rotary_dims even and > 0, theta and
// position_scale finite and > 0, no frequency and no angle above
// rope_max_angle. The largest frequency is pair 0's (1) for theta >= 1,
// the last pair's for theta < 1; it is bounded through its exponent before
// exp is taken.
constexpr bool rope_table_arguments_valid(std::size_t max_positions, std::size_t rotary_dims, double theta,
                                          double position_scale) {
    if (max_positions == 0 || rotary_dims == 0 || rotary_dims % 2 != 0) return false;
    if (!is_finite_positive(theta) || !is_finite_positive(position_scale)) return false;
    const double last_exponent = rope_frequency_exponent(constexpr_log(theta), rotary_dims / 2 - 1, rotary_dims);
    if (last_exponent > rope_log_max_angle) return false;
    const double largest_frequency = last_exponent > 0.0 ? constexpr_exp(last_exponent) : 1.0;
    const double largest_angle = static_cast<double>(max_positions - 1) / position_scale * largest_frequency;
    return largest_angle <= rope_max_angle;  // inf when position_scale is tiny: refused
}

// Fills table (max_positions, rotary_dims) for valid arguments, one pair
// (frequency) at a time. As the positional encoding's table (compilers
// allow a constant expression some 3e7 operations: a sin-cos per entry
// does not fit a 2048 x 64 table), position p + 1 comes from p by the
// rotation by the step w = frequency / position_scale,
//   cos(a + w) = c cos w - s sin w,  sin(a + w) = s cos w + c sin w,
// and every 32nd position is evaluated directly, so the rounding cannot
// drift: the error stays below 1e-14, far inside float's 3e-8.
constexpr void fill_rope_table(float *table, std::size_t max_positions, std::size_t rotary_dims, double theta,
                               double position_scale) {
    const std::size_t half = rotary_dims / 2;
    const double log_theta = constexpr_log(theta);
    for (std::size_t i = 0; i < half; ++i) {
        const double frequency = constexpr_exp(rope_frequency_exponent(log_theta, i, rotary_dims));
        // The step is an angle of the table (position 1's) only when there
        // is a position 1: a one-row table may have any position_scale.
        const sin_cos step = max_positions > 1 ? constexpr_sin_cos(frequency / position_scale) : sin_cos{0.0, 1.0};
        double c = 1.0, s = 0.0;
        for (std::size_t p = 0; p < max_positions; ++p) {
            if (p % 32 == 0) {
                const sin_cos v = constexpr_sin_cos(static_cast<double>(p) / position_scale * frequency);
                c = v.cos;
                s = v.sin;
            } else {
                const double next_c = c * step.cos - s * step.sin;
                s = s * step.cos + c * step.sin;
                c = next_c;
            }
            table[p * rotary_dims + i] = static_cast<float>(c);
            table[p * rotary_dims + half + i] = static_cast<float>(s);
        }
    }
}

}  // namespace detail
}  // namespace edgeattn

#endif
