// The KV cache struct's rules, shared by its setup, store and attend calls:
// reading the caller's struct into a local and checking it, the cache's
// memory as spans, and the dims a cache call must agree with.
//
// Cache memory (make_kv_cache_layout): keys and values (B, H_kv, capacity,
// head_size), so one head of one batch element is a contiguous
// (length, head_size) block that a decode step streams once; then the
// lengths (B), the stream positions (B), then int8's scales. The edgeattn_kv_cache struct only
// points into it.
#ifndef EDGEATTN_KV_CACHE_CHECKS_HPP
#define EDGEATTN_KV_CACHE_CHECKS_HPP

#include "edgeattn/kv_cache.h"
#include "mha_weights.hpp"
#include "validate.hpp"

namespace edgeattn {
namespace detail {

inline edgeattn_dtype storage_of(const edgeattn_kv_cache &cache) {
    return static_cast<edgeattn_dtype>(cache.storage);
}

// What setup writes into `magic`: a check value of every other field.
uint32_t cache_check_value(const edgeattn_kv_cache &c);

// The cache's memory as spans: keys, values, lengths, int8's scales
// (null spans otherwise) and positions.
constexpr size_t cache_span_count = 6;
void cache_spans(const edgeattn_kv_cache &cache, tensor_span spans[cache_span_count]);

// Copies the caller's struct into `c` and checks it. Every call works on
// the copy only: the struct may sit in the call's workspace or outputs,
// which the call overwrites. It may not sit in the cache memory it
// describes (setup refuses that too): a store would overwrite it.
edgeattn_status read_cache(const edgeattn_kv_cache *cache, edgeattn_kv_cache &c);

// The sizes a cache call reads: h, H, H_kv and the input feature sizes in
// `sizes` non-zero, the heads dividing.
edgeattn_status check_call_dims(const edgeattn_attention_dims &d, const size_t *sizes, size_t num_sizes);

// check_call_dims, and the cache made for (B, H_kv, h / H).
edgeattn_status check_cache_dims(const edgeattn_kv_cache &cache, const edgeattn_attention_dims &d,
                                 const size_t *sizes, size_t num_sizes);

// Weights as given (only the projections `used` names are read) or packed.
edgeattn_status view_weights(const edgeattn_attention_dims &d, const edgeattn_weights *weights,
                             const void *packed, size_t packed_bytes, unsigned used,
                             mha_weights_view &w);

}  // namespace detail
}  // namespace edgeattn

#endif
