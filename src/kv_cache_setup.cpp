// C entry points of the KV cache's lifecycle: its memory size, setup,
// reset and truncation.
#include <string.h>

#include "edgeattn/detail/workspace_layout.hpp"
#include "edgeattn/kv_cache.h"
#include "kv_cache_checks.hpp"

using namespace edgeattn::detail;

namespace {

// The caller's config read as ints where it holds an enum; the status
// setup gives for it (bytes: the memory it needs). memory_size gives 0
// wherever setup refuses the config.
edgeattn_status check_config(const edgeattn_kv_cache_config &c, size_t &bytes) {
    if (c.batch == 0 || c.num_kv_heads == 0 || c.head_size == 0 || c.capacity == 0)
        return EDGEATTN_ERR_ZERO_DIMENSION;
    const int storage = enum_as_int(c.storage);
    if (edgeattn_status st = stored_type_status(storage)) return st;
    // A window cache's rows are its sinks and its window, no more, no fewer.
    if (c.window == 0 ? c.sinks != 0 : c.sinks > c.capacity || c.capacity - c.sinks != c.window)
        return EDGEATTN_ERR_BAD_WINDOW;
    bytes = make_kv_cache_layout(c.batch, c.num_kv_heads, c.head_size, c.capacity,
                                 element_bytes(static_cast<edgeattn_dtype>(storage)), c.value_head_size)
                .bytes;
    if (c.capacity > INT32_MAX || bytes == 0) return EDGEATTN_ERR_SIZE_OVERFLOW;
    // The int8 arithmetic reads int8 keys, whose products it sums in int32.
    bool integer = false;
    if (edgeattn_status st = arithmetic_of(enum_as_int(c.arithmetic), integer)) return st;
    if (integer && storage != EDGEATTN_DTYPE_INT8) return EDGEATTN_ERR_OPTION_NOT_SUPPORTED;
    if (integer && c.head_size > integer_max_features) return EDGEATTN_ERR_SIZE_OVERFLOW;
    return EDGEATTN_OK;
}

}  // namespace

extern "C" size_t edgeattn_kv_cache_memory_size(const edgeattn_kv_cache_config *config) {
    edgeattn_kv_cache_config c;
    size_t bytes = 0;
    if (!read_argument(config, c) || check_config(c, bytes) != EDGEATTN_OK) return 0;
    return bytes;
}

extern "C" edgeattn_status edgeattn_kv_cache_setup(edgeattn_kv_cache *cache,
                                                   const edgeattn_kv_cache_config *config,
                                                   void *memory, size_t memory_bytes) {
    edgeattn_kv_cache_config given;
    if (!cache || !read_argument(config, given) || !memory) return EDGEATTN_ERR_NULL_POINTER;
    size_t bytes = 0;
    if (edgeattn_status st = check_config(given, bytes)) return st;
    const size_t batch = given.batch, num_kv_heads = given.num_kv_heads;
    const size_t head_size = given.head_size, capacity = given.capacity;
    const size_t window = given.window, sinks = given.sinks;
    const size_t value_head_size = given.value_head_size ? given.value_head_size : head_size;
    const edgeattn_dtype storage = given.storage;
    const kv_cache_layout l =
        make_kv_cache_layout(batch, num_kv_heads, head_size, capacity, element_bytes(storage), value_head_size);
    if (!is_float_aligned(memory)) return EDGEATTN_ERR_MISALIGNED;
    if (memory_bytes < l.bytes) return EDGEATTN_ERR_WORKSPACE_TOO_SMALL;
    if (spans_overlap(cache, sizeof *cache, memory, l.bytes)) return EDGEATTN_ERR_OVERLAP;
    float *floats = static_cast<float *>(memory);
    edgeattn_kv_cache c;
    memset(&c, 0, sizeof c);
    c.storage = static_cast<uint32_t>(storage);
    c.batch = batch;
    c.num_kv_heads = num_kv_heads;
    c.head_size = head_size;
    c.capacity = capacity;
    c.stored_keys = floats + l.keys;
    c.stored_values = floats + l.values;
    if (storage == EDGEATTN_DTYPE_F32) {
        c.keys = floats + l.keys;
        c.values = floats + l.values;
    }
    if (storage == EDGEATTN_DTYPE_INT8) {
        c.key_scales = floats + l.key_scales;
        c.value_scales = floats + l.value_scales;
    }
    c.lengths = reinterpret_cast<int32_t *>(floats + l.lengths);
    c.positions = reinterpret_cast<int32_t *>(floats + l.positions);
    c.window = window;
    c.sinks = sinks;
    c.value_head_size = value_head_size;
    c.arithmetic = static_cast<uint32_t>(given.arithmetic);
    c.magic = cache_check_value(c);
    for (size_t b = 0; b < batch; ++b) c.lengths[b] = c.positions[b] = 0;
    *cache = c;
    return EDGEATTN_OK;
}

extern "C" edgeattn_status edgeattn_kv_cache_reset(edgeattn_kv_cache *cache) {
    edgeattn_kv_cache c;
    if (edgeattn_status st = read_cache(cache, c)) return st;
    for (size_t b = 0; b < c.batch; ++b) c.lengths[b] = c.positions[b] = 0;
    return EDGEATTN_OK;
}

extern "C" edgeattn_status edgeattn_kv_cache_truncate(edgeattn_kv_cache *cache, size_t batch_index,
                                                      size_t length) {
    edgeattn_kv_cache c;
    if (edgeattn_status st = read_cache(cache, c)) return st;
    if (batch_index >= c.batch || length > static_cast<size_t>(c.lengths[batch_index]))
        return EDGEATTN_ERR_PAST_CACHE_LENGTH;
    // A wrapped ring no longer holds the tokens between the sinks and its
    // oldest row: dropping rows from its logical end would leave a gap.
    if (static_cast<size_t>(c.positions[batch_index]) > c.capacity) return EDGEATTN_ERR_OPTION_NOT_SUPPORTED;
    c.lengths[batch_index] = c.positions[batch_index] = static_cast<int32_t>(length);
    return EDGEATTN_OK;
}

