// The options struct of an attention call, read into a local before
// anything is written (it may sit in an output or the workspace), and the
// test of what an op does not take.
#ifndef EDGEATTN_ATTENTION_OPTIONS_HPP
#define EDGEATTN_ATTENTION_OPTIONS_HPP

#include <string.h>

#include "edgeattn/types.h"
#include "validate.hpp"

namespace edgeattn {
namespace detail {

// NULL reads as the zero struct: d2l's behaviour.
inline edgeattn_attention_options read_options(const edgeattn_attention_options *given) {
    edgeattn_attention_options o;
    if (given)
        memcpy(&o, given, sizeof o);
    else
        memset(&o, 0, sizeof o);
    return o;
}

inline bool has_valid_lens(const edgeattn_attention_options &o) {
    return enum_as_int(o.valid_lens.kind) != EDGEATTN_VALID_LENS_NONE;
}

inline bool has_mask(const edgeattn_attention_options &o) {
    return o.mask.causal != 0 || enum_as_int(o.mask.ranges_kind) != EDGEATTN_KEY_RANGES_NONE ||
           o.mask.bias != nullptr;
}

}  // namespace detail
}  // namespace edgeattn

#endif
