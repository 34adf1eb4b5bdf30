/* See enum_args_from_c.h. In C an enum converts from any int, so these casts
 * are what a C caller's own code does. */
#include "enum_args_from_c.h"

edgeattn_status c_set_isa(int isa) { return edgeattn_set_isa((edgeattn_isa)isa); }

int c_isa_supported(int isa) { return edgeattn_isa_supported((edgeattn_isa)isa); }

const char *c_isa_name(int isa) { return edgeattn_isa_name((edgeattn_isa)isa); }

const char *c_status_str(int status) { return edgeattn_status_str((edgeattn_status)status); }

size_t c_linear_typed_packed_weights_size(const edgeattn_linear_dims *dims, int type) {
    return edgeattn_linear_typed_packed_weights_size(dims, (edgeattn_weight_type)type);
}

size_t c_kv_cache_typed_size(size_t batch, size_t num_kv_heads, size_t head_size, size_t capacity,
                             int storage) {
    return edgeattn_kv_cache_typed_size(batch, num_kv_heads, head_size, capacity,
                                        (edgeattn_weight_type)storage);
}

edgeattn_status c_kv_cache_init_typed(edgeattn_kv_cache *cache, size_t batch, size_t num_kv_heads,
                                      size_t head_size, size_t capacity, int storage, void *memory,
                                      size_t memory_bytes) {
    return edgeattn_kv_cache_init_typed(cache, batch, num_kv_heads, head_size, capacity,
                                        (edgeattn_weight_type)storage, memory, memory_bytes);
}
