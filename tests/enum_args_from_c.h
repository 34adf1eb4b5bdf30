/* The C API's calls that take an enum by value, or an enum field of a
 * struct, made as a C program makes them: with any int converted to the
 * enum. A C++ caller cannot pass an int outside an enum's range without
 * undefined behaviour of its own, so the tests and fuzzers reach those
 * calls through these C functions. */
#ifndef EDGEATTN_TESTS_ENUM_ARGS_FROM_C_H
#define EDGEATTN_TESTS_ENUM_ARGS_FROM_C_H

#include <edgeattn/edgeattn.h>

#ifdef __cplusplus
extern "C" {
#endif

edgeattn_status c_set_isa(int isa);
int c_isa_supported(int isa);
const char *c_isa_name(int isa);
const char *c_status_str(int status);
/* edgeattn_dense_packed_size() of a matrix whose type is `type` */
size_t c_dense_packed_size(const edgeattn_dense_dims *dims, int type);
/* edgeattn_kv_cache_memory_size() / edgeattn_kv_cache_setup() of a config
   whose storage is `storage` */
size_t c_kv_cache_memory_size(size_t batch, size_t num_kv_heads, size_t head_size, size_t capacity,
                              int storage);
edgeattn_status c_kv_cache_setup(edgeattn_kv_cache *cache, size_t batch, size_t num_kv_heads,
                                 size_t head_size, size_t capacity, int storage, void *memory,
                                 size_t memory_bytes);
/* edgeattn_workspace_size() of one request whose op is `op` */
edgeattn_status c_workspace_size(int op, const edgeattn_attention_dims *dims, size_t tokens,
                                 size_t max_threads, size_t *bytes);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif
