// The options that shape an attention call's scores, read and checked
// once per call (attention_options.hpp).
#include "attention_mask.hpp"
#include "attention_options.hpp"

namespace edgeattn {
namespace detail {

namespace {

bool finite(float v) { return v - v == 0.0f; }

}  // namespace

bool has_score_options(const edgeattn_attention_options *o) {
    return o && (o->scale != 0.0f || o->scale != o->scale || o->softcap != 0.0f || o->softcap != o->softcap ||
                 enum_as_int(o->masking) != EDGEATTN_MASKING_D2L ||
                 enum_as_int(o->weights_output) != EDGEATTN_WEIGHTS_SOFTMAX);
}

edgeattn_status read_score_options(const edgeattn_attention_options *o, unsigned taken,
                                   attention_mask_view &view) {
    view.scale = 0.0f;
    view.softcap = 0.0f;
    view.exclude = false;
    view.weights_output = EDGEATTN_WEIGHTS_SOFTMAX;
    view.plain_scores = true;
    if (view.alibi && !(taken & takes_alibi)) return EDGEATTN_ERR_OPTION_NOT_SUPPORTED;
    if (!o) return EDGEATTN_OK;
    const float scale = o->scale, softcap = o->softcap;
    const int masking = enum_as_int(o->masking), weights_output = enum_as_int(o->weights_output);
    // None of them set, the common call (their bits all zero: d2l's rules,
    // the softmax's weights): the defaults above stand.
    uint32_t scale_bits = 0, softcap_bits = 0;
    memcpy(&scale_bits, &scale, sizeof scale_bits);
    memcpy(&softcap_bits, &softcap, sizeof softcap_bits);
    if ((scale_bits | softcap_bits | static_cast<uint32_t>(masking) | static_cast<uint32_t>(weights_output)) == 0)
        return EDGEATTN_OK;
    if (!(taken & takes_products) &&
        (scale != 0.0f || scale != scale || softcap != 0.0f || softcap != softcap ||
         weights_output != EDGEATTN_WEIGHTS_SOFTMAX))
        return EDGEATTN_ERR_OPTION_NOT_SUPPORTED;
    if (!finite(scale) || !finite(softcap) || softcap < 0.0f) return EDGEATTN_ERR_BAD_OPTION;
    if (masking != EDGEATTN_MASKING_D2L && masking != EDGEATTN_MASKING_EXCLUDE) return EDGEATTN_ERR_BAD_OPTION;
    if (weights_output < EDGEATTN_WEIGHTS_SOFTMAX || weights_output > EDGEATTN_WEIGHTS_MASKED)
        return EDGEATTN_ERR_BAD_OPTION;
    if (!with_score_options &&
        (softcap != 0.0f || masking != EDGEATTN_MASKING_D2L || weights_output != EDGEATTN_WEIGHTS_SOFTMAX))
        return EDGEATTN_ERR_NOT_BUILT;
    view.scale = scale;
    view.softcap = softcap;
    view.exclude = masking == EDGEATTN_MASKING_EXCLUDE;
    view.weights_output = weights_output;
    view.plain_scores = !view.caps_scores() && !view.excludes() && view.weighs_softmax();
    return EDGEATTN_OK;
}

}  // namespace detail
}  // namespace edgeattn
