// The int8 arithmetic's quantisation of an activation row, modelled in
// float64 independently of the library's quantiser: shared by the tests of
// the dense layers, multi-head attention and the KV cache's scores.
#ifndef EDGEATTN_TESTS_INT8_MODEL_HPP
#define EDGEATTN_TESTS_INT8_MODEL_HPP

#include <cmath>
#include <cstddef>
#include <vector>

namespace test_int8 {

// The quantisation rule of docs/reduced-precision.md, in float64: the scale
// max|x| / 127 rounded to float (1 for zeros, 2^-149 when it underflows), q
// the exact quotient x / scale rounded to nearest even (the double quotient
// of two floats of at most 127 in magnitude cannot land on a half unless
// the exact one does), clamped to [-127, 127]. NaN or inf: scale NaN.
struct quantised_row {
    std::vector<int> q;
    double scale;
};

inline quantised_row model_quantise(const float *x, std::size_t n) {
    quantised_row r{std::vector<int>(n, 0), 0.0};
    float largest = 0.0f;
    for (std::size_t i = 0; i < n; ++i) {
        if (!std::isfinite(x[i])) {
            r.scale = NAN;
            return r;
        }
        largest = std::fmax(largest, std::fabs(x[i]));
    }
    float scale = largest == 0.0f ? 1.0f : static_cast<float>(static_cast<double>(largest) / 127.0);
    if (scale == 0.0f) scale = std::ldexp(1.0f, -149);
    r.scale = scale;
    for (std::size_t i = 0; i < n; ++i) {
        const double t = std::nearbyint(static_cast<double>(x[i]) / scale);
        r.q[i] = static_cast<int>(t > 127 ? 127 : t < -127 ? -127 : t);
    }
    return r;
}

}  // namespace test_int8

#endif
