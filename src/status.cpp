// Text for every status code, and the version of the library built.
#include "edgeattn/types.h"

extern "C" int edgeattn_version(void) { return EDGEATTN_VERSION; }

extern "C" const char *edgeattn_status_str(edgeattn_status status) {
    switch (status) {
        case EDGEATTN_OK: return "ok";
        case EDGEATTN_ERR_NULL_POINTER: return "a required pointer is NULL";
        case EDGEATTN_ERR_ZERO_DIMENSION: return "a dimension is zero";
        case EDGEATTN_ERR_SIZE_OVERFLOW: return "a tensor's size in bytes overflows size_t";
        case EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE: return "num_hiddens is not divisible by num_heads";
        case EDGEATTN_ERR_NEGATIVE_VALID_LEN: return "a valid length is negative";
        case EDGEATTN_ERR_WORKSPACE_TOO_SMALL: return "the workspace, packed buffer or cache memory is smaller than its size query gives";
        case EDGEATTN_ERR_SEQUENCE_TOO_LONG: return "the positions run past the positional table (start + n > max_len)";
        case EDGEATTN_ERR_OVERLAP: return "an output overlaps an input, another output or the workspace";
        case EDGEATTN_ERR_SHAPE_MISMATCH: return "the dimensions do not fit together";
        case EDGEATTN_ERR_BAD_VALID_LENS_KIND: return "valid_lens->kind is not a valid edgeattn_valid_lens_kind";
        case EDGEATTN_ERR_MISALIGNED: return "a float array or the workspace is not 4-byte aligned";
        case EDGEATTN_ERR_UNSUPPORTED_ISA: return "that instruction-set path is not built in or not supported by this CPU";
        case EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH: return "the packed weights were not made by the op's pack call for these sizes";
        case EDGEATTN_ERR_KV_HEADS_DO_NOT_DIVIDE: return "num_heads is not divisible by num_kv_heads";
        case EDGEATTN_ERR_BAD_KEY_RANGE: return "a mask key range has start < 0 or end < start, or ranges_kind is not a valid edgeattn_key_ranges_kind";
        case EDGEATTN_ERR_CACHE_FULL: return "the KV cache has no room for the tokens stored";
        case EDGEATTN_ERR_BAD_CACHE: return "the KV cache struct was not set up by edgeattn_kv_cache_setup, or was changed since";
        case EDGEATTN_ERR_BAD_SCALE: return "an int8 weight scale is zero, negative, NaN or infinite";
        case EDGEATTN_ERR_BAD_WEIGHT_TYPE: return "a weight matrix's or the cache's type is not a valid edgeattn_dtype";
        case EDGEATTN_ERR_NOT_REPRESENTABLE: return "a weight to quantise or convert is NaN, infinite or beyond binary16's range";
        case EDGEATTN_ERR_OPTION_NOT_SUPPORTED: return "an option or weight this op does not take is set";
        case EDGEATTN_ERR_CACHE_SHAPE_MISMATCH: return "the dims do not match the KV cache: batch, num_kv_heads or num_hiddens / num_heads";
        case EDGEATTN_ERR_KEYS_NOT_CAPACITY: return "dims.keys of a KV cache call is neither 0 nor the cache's capacity";
        case EDGEATTN_ERR_PAST_CACHE_LENGTH: return "truncate: the batch index is past the batch or the length past the filled length";
        case EDGEATTN_ERR_BAD_ROPE: return "the rotary embedding's table or fields are invalid (table, max_positions, rotary_dims, layout, theta or position_scale)";
        case EDGEATTN_ERR_ROPE_POSITION: return "a token's rotary position is outside its table (|position| >= max_positions)";
        case EDGEATTN_ERR_BAD_WINDOW: return "the window KV cache config breaks its rule: capacity = sinks + window, sinks only with a window";
        case EDGEATTN_ERR_BAD_OPTION: return "an option's value is invalid (scale, softcap or ALiBi bias not finite or negative, an enum outside its values)";
        case EDGEATTN_ERR_NOT_BUILT: return "the call asks for a feature this build of the library left out (EDGEATTN_WITH_* in edgeattn/config.h)";
        case EDGEATTN_STATUS_FORCE_INT: break;
    }
    return "unknown status";
}
