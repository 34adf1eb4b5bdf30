// Tensors at a call's boundary in binary16 (the options' tensor_type
// EDGEATTN_DTYPE_F16): the call widens its fp16 inputs into fp32 copies at
// the start of its workspace, runs its fp32 code on them with the rest of
// the workspace, and rounds its fp32 results into the caller's fp16
// outputs once, at the end. Widening is exact; rounding is to nearest
// even, as IEEE converts (beyond +-65504: +-inf).
#ifndef EDGEATTN_HALF_IO_HPP
#define EDGEATTN_HALF_IO_HPP

#include <stddef.h>
#include <stdint.h>

#include "edgeattn/detail/workspace_layout.hpp"
#include "edgeattn/types.h"
#include "features.hpp"
#include "kernels/half.hpp"
#include "kernels/kernel_table.hpp"
#include "validate.hpp"

namespace edgeattn {
namespace detail {

// A tensor_type as the int a C caller stored: F32 or F16 (half), else
// EDGEATTN_ERR_BAD_OPTION; F16 in a build without binary16
// (EDGEATTN_WITH_HALF 0) is EDGEATTN_ERR_NOT_BUILT, and `half` is then
// false whatever the call, so the ops' binary16 branches drop out.
inline edgeattn_status tensor_type_of(int type, bool &half) {
    half = with_half && type == EDGEATTN_DTYPE_F16;
    if (type == EDGEATTN_DTYPE_F16 && !with_half) return EDGEATTN_ERR_NOT_BUILT;
    return half || type == EDGEATTN_DTYPE_F32 ? EDGEATTN_OK : EDGEATTN_ERR_BAD_OPTION;
}

// The options' tensor_type (a NULL options pointer: F32).
inline edgeattn_status read_tensor_type(const edgeattn_attention_options *o, bool &half) {
    return tensor_type_of(o ? enum_as_int(o->tensor_type) : EDGEATTN_DTYPE_F32, half);
}

inline edgeattn_status request_tensor_type(const edgeattn_workspace_request &r, bool &half) {
    return tensor_type_of(enum_as_int(r.tensor_type), half);
}

// Bytes of one element of the call's tensors.
inline size_t io_element_bytes(bool half) { return half ? sizeof(uint16_t) : sizeof(float); }

// The fp32 copies of up to five fp16 tensors (element counts given; 0: no
// copy), in floats from the workspace start, each on a cache line; `floats`
// is what precedes the op's own workspace (a multiple of a cache line, so
// the op's buffers keep their alignment). All 0 for fp32 tensors.
struct half_staging {
    size_t offset[5] = {0, 0, 0, 0, 0};
    size_t floats = 0;
    bool overflow = false;
};

inline half_staging make_half_staging(bool half, const size_t counts[5]) {
    half_staging s;
    if (!with_half || !half) return s;
    layout_builder b;
    for (size_t i = 0; i < 5; ++i) s.offset[i] = b.add(counts[i]);
    s.floats = b.floats;
    s.overflow = b.overflow || b.bytes() == 0;
    return s;
}

// The op's workspace bytes plus the copies', 0 on overflow.
inline size_t with_staging(const half_staging &s, size_t op_bytes) {
    size_t staging = 0, total = 0;
    if (s.overflow || op_bytes == 0 || mul_overflows(s.floats, sizeof(float), staging) ||
        add_overflows(staging, op_bytes, total))
        return 0;
    return total;
}

inline void widen_half(const void *from, size_t count, float *to) {
    active_kernels().widen_half(static_cast<const uint16_t *>(from), count, to);
}

inline void round_to_half(const float *from, size_t count, void *to) {
    active_kernels().round_half(from, count, static_cast<uint16_t *>(to));
}

}  // namespace detail
}  // namespace edgeattn

#endif
