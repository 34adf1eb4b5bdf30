// The options of an attention call as the ops read them: its valid lengths
// mask and rope by pointer (NULL options: none), each read into the op's own
// views before anything is written (the struct may sit in an output or the
// workspace), and the tests of what an op does not take.
#ifndef EDGEATTN_ATTENTION_OPTIONS_HPP
#define EDGEATTN_ATTENTION_OPTIONS_HPP

#include "edgeattn/types.h"
#include "validate.hpp"

namespace edgeattn {
namespace detail {

inline const edgeattn_valid_lens *valid_lens_of(const edgeattn_attention_options *o) {
    return o ? &o->valid_lens : nullptr;
}

inline const edgeattn_attention_mask *mask_of(const edgeattn_attention_options *o) {
    return o ? &o->mask : nullptr;
}

inline const edgeattn_rope *rope_of(const edgeattn_attention_options *o) {
    return o ? &o->rope : nullptr;
}

inline bool has_valid_lens(const edgeattn_attention_options *o) {
    return o && enum_as_int(o->valid_lens.kind) != EDGEATTN_VALID_LENS_NONE;
}

inline bool has_mask(const edgeattn_attention_options *o) {
    return o && (o->mask.causal != 0 || enum_as_int(o->mask.ranges_kind) != EDGEATTN_KEY_RANGES_NONE ||
                 o->mask.bias != nullptr || o->mask.window != 0);
}

// Any field of the rotary embedding set (a zeroed one is no rotation).
inline bool has_rope(const edgeattn_attention_options *o) {
    if (!o) return false;
    const edgeattn_rope &r = o->rope;  // one OR of the fields: a few bytes of flash per op
    return (reinterpret_cast<uintptr_t>(r.table) | r.max_positions | r.rotary_dims |
            static_cast<unsigned>(enum_as_int(r.layout)) | reinterpret_cast<uintptr_t>(r.positions)) != 0;
}

// The rope of an op that does not rotate (every op but the KV cache calls):
// refused rather than ignored.
inline edgeattn_status refuse_rope(const edgeattn_attention_options *o) {
    return has_rope(o) ? EDGEATTN_ERR_OPTION_NOT_SUPPORTED : EDGEATTN_OK;
}

}  // namespace detail
}  // namespace edgeattn

#endif
