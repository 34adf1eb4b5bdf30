// Making reduced-precision weights: int8 quantisation with per-output-channel
// scales, and fp32 <-> binary16 conversion (include/edgeattn/reduced_precision.h).

#include "edgeattn/edgeattn.h"
#include "kernels/half.hpp"
#include "kernels/int8_scale.hpp"
#include "validate.hpp"

using namespace edgeattn::detail;

namespace {

bool is_finite(float x) { return x == x && x - x == 0.0f; }

// What both binary16 conversions check before writing: pointers, count,
// alignment (float 4, half 2 bytes) and that the output does not overlap
// the input (`to_half`: h is the output, else x).
edgeattn_status check_half_conversion(size_t count, const float *x, const uint16_t *h, bool to_half) {
    if (!x || !h) return EDGEATTN_ERR_NULL_POINTER;
    if (count == 0) return EDGEATTN_ERR_ZERO_DIMENSION;
    size_t floats = 0;
    if (edgeattn_status st = tensor_count(floats, count)) return st;
    if (!is_float_aligned(x) || reinterpret_cast<uintptr_t>(h) % 2 != 0) return EDGEATTN_ERR_MISALIGNED;
    const tensor_span halves = {h, count, 2}, singles = {x, count};
    return to_half ? check_disjoint(&halves, 1, &singles, 1) : check_disjoint(&singles, 1, &halves, 1);
}

}  // namespace

extern "C" edgeattn_status edgeattn_quantize_int8(size_t out_features, size_t in_features,
                                                  const float *W, int8_t *q, float *scales) {
    if (!W || !q || !scales) return EDGEATTN_ERR_NULL_POINTER;
    if (out_features == 0 || in_features == 0) return EDGEATTN_ERR_ZERO_DIMENSION;
    size_t count = 0;
    if (edgeattn_status st = tensor_count(count, out_features, in_features)) return st;
    if (!is_float_aligned(W) || !is_float_aligned(scales)) return EDGEATTN_ERR_MISALIGNED;
    const tensor_span in = {W, count};
    const tensor_span out[2] = {{q, count, 1}, {scales, out_features}};
    if (edgeattn_status st = check_disjoint(out, 2, &in, 1)) return st;
    for (size_t i = 0; i < count; ++i)
        if (!is_finite(W[i])) return EDGEATTN_ERR_NOT_REPRESENTABLE;

    // The rule of kernels/int8_scale.hpp, which an int8 KV cache shares.
    for (size_t o = 0; o < out_features; ++o)
        scales[o] = quantize_int8_row(W + o * in_features, in_features, q + o * in_features);
    return EDGEATTN_OK;
}

extern "C" edgeattn_status edgeattn_float_to_half(size_t count, const float *x, uint16_t *h) {
    if (edgeattn_status st = check_half_conversion(count, x, h, true)) return st;
    for (size_t i = 0; i < count; ++i)
        if (!half_in_range(x[i])) return EDGEATTN_ERR_NOT_REPRESENTABLE;
    for (size_t i = 0; i < count; ++i) h[i] = float_to_half(x[i]);
    return EDGEATTN_OK;
}

extern "C" edgeattn_status edgeattn_half_to_float(size_t count, const uint16_t *h, float *x) {
    if (edgeattn_status st = check_half_conversion(count, x, h, false)) return st;
    for (size_t i = 0; i < count; ++i) x[i] = half_to_float(h[i]);
    return EDGEATTN_OK;
}
