/* See enum_args_from_c.h. In C an enum converts from any int, so these casts
 * are what a C caller's own code does. */
#include "enum_args_from_c.h"

#include <string.h>

edgeattn_status c_set_isa(int isa) { return edgeattn_set_isa((edgeattn_isa)isa); }

int c_isa_supported(int isa) { return edgeattn_isa_supported((edgeattn_isa)isa); }

const char *c_isa_name(int isa) { return edgeattn_isa_name((edgeattn_isa)isa); }

const char *c_status_str(int status) { return edgeattn_status_str((edgeattn_status)status); }

size_t c_dense_packed_size(const edgeattn_dense_dims *dims, int type) {
    edgeattn_weight_matrix W;
    W.type = (edgeattn_dtype)type;
    W.data = NULL;
    W.scales = NULL;
    W.arithmetic = EDGEATTN_ARITHMETIC_FLOAT;
    return edgeattn_dense_packed_size(dims, &W);
}

static edgeattn_kv_cache_config config_of(size_t batch, size_t num_kv_heads, size_t head_size,
                                          size_t capacity, int storage) {
    edgeattn_kv_cache_config c;
    memset(&c, 0, sizeof c);
    c.batch = batch;
    c.num_kv_heads = num_kv_heads;
    c.head_size = head_size;
    c.capacity = capacity;
    c.storage = (edgeattn_dtype)storage;
    return c;
}

size_t c_kv_cache_memory_size(size_t batch, size_t num_kv_heads, size_t head_size, size_t capacity,
                              int storage) {
    const edgeattn_kv_cache_config c = config_of(batch, num_kv_heads, head_size, capacity, storage);
    return edgeattn_kv_cache_memory_size(&c);
}

edgeattn_status c_kv_cache_setup(edgeattn_kv_cache *cache, size_t batch, size_t num_kv_heads,
                                 size_t head_size, size_t capacity, int storage, void *memory,
                                 size_t memory_bytes) {
    const edgeattn_kv_cache_config c = config_of(batch, num_kv_heads, head_size, capacity, storage);
    return edgeattn_kv_cache_setup(cache, &c, memory, memory_bytes);
}

edgeattn_status c_workspace_size(int op, const edgeattn_attention_dims *dims, size_t tokens,
                                 size_t max_threads, size_t *bytes) {
    edgeattn_workspace_request r;
    memset(&r, 0, sizeof r);
    r.op = (edgeattn_op)op;
    if (dims) r.dims = *dims;
    r.tokens = tokens;
    return edgeattn_workspace_size(&r, 1, max_threads, bytes);
}
