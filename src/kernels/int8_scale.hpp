// The scale of a row stored in int8 (weights per output channel, a KV
// cache per cached row): max |x| / 127, so the largest element maps to
// +-127; 1 for a row of zeros (a scale of 0 is refused by the attention
// calls, and a subnormal max / 127 can round to 0). NaN elements are not
// counted (the API refuses them before; a cache row with NaN stays NaN).
#ifndef EDGEATTN_KERNELS_INT8_SCALE_HPP
#define EDGEATTN_KERNELS_INT8_SCALE_HPP

#include <math.h>
#include <stddef.h>

namespace edgeattn {
namespace detail {

inline float int8_row_scale(const float *x, size_t n) {
    float largest = 0.0f;
    for (size_t i = 0; i < n; ++i)
        if (fabsf(x[i]) > largest) largest = fabsf(x[i]);
    const float scale = largest / 127.0f;
    return scale > 0.0f ? scale : 1.0f;
}

}  // namespace detail
}  // namespace edgeattn

#endif
