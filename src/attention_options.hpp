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
                 o->mask.bias != nullptr || o->mask.window != 0 ||
                 enum_as_int(o->mask.alignment) != EDGEATTN_ALIGN_BOTTOM_RIGHT || o->mask.right_window != 0 ||
                 o->mask.alibi_max_bias != 0.0f || o->mask.alibi_max_bias != o->mask.alibi_max_bias);
}

// Any of the options that shape the scores set (scale, softcap, masking,
// weights_output; a NaN counts as set).
bool has_score_options(const edgeattn_attention_options *o);

struct attention_mask_view;

// What an op takes of the score options: every attention call takes
// `masking`; the dot-product ops also `scale`, `softcap` and every
// `weights_output`; those with heads ALiBi.
enum : unsigned { takes_products = 1u, takes_alibi = 2u };

// Reads the options' score fields into `view` (after check_attention_mask
// filled it): ::EDGEATTN_ERR_OPTION_NOT_SUPPORTED for one the op does not
// take (`taken`), ::EDGEATTN_ERR_BAD_OPTION for an invalid value. NULL
// options: d2l's.
edgeattn_status read_score_options(const edgeattn_attention_options *o, unsigned taken,
                                   attention_mask_view &view);

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
