// The KV cache struct's rules (kv_cache_checks.hpp).
#include <string.h>

#include "edgeattn/detail/workspace_layout.hpp"
#include "attention_options.hpp"
#include "kv_cache_checks.hpp"

namespace edgeattn {
namespace detail {

namespace {
constexpr uint32_t kv_cache_magic = 0x4B564145u;  // "EAVK" little-endian
}  // namespace

// What setup writes into `magic`: the magic mixed with every other field,
// so a call refuses a struct whose sizes or pointers were changed after
// setup (a larger capacity would make it read and write past the cache
// memory). Each step is a bijection of the 64-bit state, so one changed
// field always changes the state; folded to 32 bits, a change slips
// through with odds of 2^-32.
uint32_t cache_check_value(const edgeattn_kv_cache &c) {
    const uint64_t fields[] = {c.storage,
                               c.batch,
                               c.num_kv_heads,
                               c.head_size,
                               c.capacity,
                               reinterpret_cast<uintptr_t>(c.keys),
                               reinterpret_cast<uintptr_t>(c.values),
                               reinterpret_cast<uintptr_t>(c.lengths),
                               reinterpret_cast<uintptr_t>(c.stored_keys),
                               reinterpret_cast<uintptr_t>(c.stored_values),
                               reinterpret_cast<uintptr_t>(c.key_scales),
                               reinterpret_cast<uintptr_t>(c.value_scales),
                               reinterpret_cast<uintptr_t>(c.positions),
                               c.window,
                               c.sinks,
                               c.value_head_size,
                               c.arithmetic};
    uint64_t h = kv_cache_magic;
    for (uint64_t f : fields) {
        h = (h ^ f) * 0x9E3779B97F4A7C15u;  // odd: invertible modulo 2^64
        h ^= h >> 31;
    }
    return static_cast<uint32_t>(h ^ (h >> 32));
}

void cache_spans(const edgeattn_kv_cache &cache, tensor_span spans[cache_span_count]) {
    const size_t positions = cache.batch * cache.num_kv_heads * cache.capacity;
    const size_t bytes = element_bytes(storage_of(cache));
    spans[0] = {cache.stored_keys, positions * cache.head_size, bytes};
    spans[1] = {cache.stored_values, positions * cache.value_head_size, bytes};
    spans[2] = {cache.lengths, cache.batch};
    spans[3] = {cache.key_scales, cache.key_scales ? positions : 0};
    spans[4] = {cache.value_scales, cache.value_scales ? positions : 0};
    spans[5] = {cache.positions, cache.batch};
}

edgeattn_status read_cache(const edgeattn_kv_cache *cache, edgeattn_kv_cache &c) {
    if (!cache) return EDGEATTN_ERR_NULL_POINTER;
    memcpy(&c, cache, sizeof c);
    if (c.magic != cache_check_value(c) || c.storage > EDGEATTN_DTYPE_INT8 || !c.stored_keys || !c.stored_values ||
        !c.lengths || !c.positions || c.batch == 0 || c.num_kv_heads == 0 || c.head_size == 0 ||
        c.value_head_size == 0 ||
        c.capacity == 0 || c.capacity > INT32_MAX ||
        (c.window == 0 ? c.sinks != 0 : c.sinks > c.capacity || c.capacity - c.sinks != c.window))
        return EDGEATTN_ERR_BAD_CACHE;
    const bool fp32 = c.storage == EDGEATTN_DTYPE_F32, int8 = c.storage == EDGEATTN_DTYPE_INT8;
    if ((fp32 && (c.keys != c.stored_keys || c.values != c.stored_values)) ||
        (int8 && (!c.key_scales || !c.value_scales)) ||
        (c.arithmetic != EDGEATTN_ARITHMETIC_FLOAT &&
         (c.arithmetic != EDGEATTN_ARITHMETIC_INT8 || !int8 || !with_int8_arithmetic)))
        return EDGEATTN_ERR_BAD_CACHE;
    tensor_span spans[cache_span_count];
    cache_spans(c, spans);
    for (const tensor_span &s : spans)
        if (spans_overlap(cache, sizeof *cache, s.data, s.bytes())) return EDGEATTN_ERR_OVERLAP;
    // The memory's lengths and positions agree (a store writes both): a
    // length is its position, capped at the capacity in a window cache.
    for (size_t b = 0; b < c.batch; ++b) {
        const int32_t length = c.lengths[b], position = c.positions[b];
        if (length < 0 || static_cast<size_t>(length) > c.capacity || position < length ||
            (position != length && (c.window == 0 || static_cast<size_t>(length) != c.capacity)))
            return EDGEATTN_ERR_BAD_CACHE;
    }
    return EDGEATTN_OK;
}

edgeattn_status check_call_dims(const edgeattn_attention_dims &d, const size_t *sizes, size_t num_sizes) {
    if (d.batch == 0 || d.num_hiddens == 0 || d.num_heads == 0) return EDGEATTN_ERR_ZERO_DIMENSION;
    for (size_t i = 0; i < num_sizes; ++i)
        if (sizes[i] == 0) return EDGEATTN_ERR_ZERO_DIMENSION;
    if (d.num_hiddens % d.num_heads != 0 || value_hiddens_of(d) % d.num_heads != 0)
        return EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE;
    if (d.num_heads % kv_heads_of(d) != 0) return EDGEATTN_ERR_KV_HEADS_DO_NOT_DIVIDE;
    return EDGEATTN_OK;
}

edgeattn_status check_cache_dims(const edgeattn_kv_cache &cache, const edgeattn_attention_dims &d,
                                 const size_t *sizes, size_t num_sizes) {
    if (edgeattn_status st = check_call_dims(d, sizes, num_sizes)) return st;
    if (cache.batch != d.batch || cache.num_kv_heads != kv_heads_of(d) ||
        cache.head_size != d.num_hiddens / d.num_heads || cache.value_head_size != value_head_of(d))
        return EDGEATTN_ERR_CACHE_SHAPE_MISMATCH;
    return EDGEATTN_OK;
}

edgeattn_status view_weights(const edgeattn_attention_dims &d, const edgeattn_weights *weights,
                             const void *packed, size_t packed_bytes, unsigned used,
                             mha_weights_view &w) {
    if (weights) return view_typed_mha_weights(d, *weights, w, used);
    if (edgeattn_status st = check_mha_feature_dims(d)) return st;
    return view_packed_mha_weights(d, packed, packed_bytes, w);
}

}  // namespace detail
}  // namespace edgeattn
