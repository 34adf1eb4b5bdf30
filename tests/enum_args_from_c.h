/* The C API's calls that take an enum by value, made as a C program makes
 * them: with any int converted to the enum. A C++ caller cannot pass an int
 * outside an enum's range without undefined behaviour of its own, so the
 * tests and fuzzers reach those calls through these C functions. */
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
size_t c_linear_typed_packed_weights_size(const edgeattn_linear_dims *dims, int type);
size_t c_kv_cache_typed_size(size_t batch, size_t num_kv_heads, size_t head_size, size_t capacity,
                             int storage);
edgeattn_status c_kv_cache_init_typed(edgeattn_kv_cache *cache, size_t batch, size_t num_kv_heads,
                                      size_t head_size, size_t capacity, int storage, void *memory,
                                      size_t memory_bytes);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif
