// Each op's workspace size for edgeattn_workspace_size(), checked dims
// first: built from the same dims checks and layout function (make_*_layout,
// edgeattn/detail/workspace_layout.hpp) the op sizes its own workspace with,
// so the query and the op agree.
#ifndef EDGEATTN_OP_WORKSPACE_HPP
#define EDGEATTN_OP_WORKSPACE_HPP

#include <stddef.h>

#include "edgeattn/types.h"

namespace edgeattn {
namespace detail {

// Each returns the status the op returns for these dims (zero dimension,
// shape mismatch, heads, size overflow), else OK with `bytes` set.
// half: the call's tensors are binary16 (their fp32 copies added).
edgeattn_status sdpa_workspace_bytes(const edgeattn_attention_dims &d, size_t max_threads, bool half,
                                     size_t &bytes);
edgeattn_status additive_workspace_bytes(const edgeattn_attention_dims &d, size_t max_threads,
                                         size_t &bytes);
// integer: W_q, W_k, W_v or W_o in the int8 arithmetic (integer_linear's
// slots where the packed W^T and the heads' scratch are).
edgeattn_status mha_workspace_bytes(const edgeattn_attention_dims &d, size_t max_threads, bool half,
                                    size_t &bytes, bool integer = false);
edgeattn_status kv_store_workspace_bytes(const edgeattn_attention_dims &d, size_t tokens, size_t max_threads,
                                         bool half, size_t &bytes);
// integer: the cache's int8 arithmetic (the quantised query heads).
edgeattn_status kv_attend_workspace_bytes(const edgeattn_attention_dims &d, size_t max_threads, bool half,
                                          size_t &bytes, bool integer = false);
// integer: W in the int8 arithmetic (a slot of quantised rows and sums per
// thread instead of the packed W^T).
edgeattn_status dense_workspace_bytes(const edgeattn_dense_dims &d, size_t max_threads,
                                      size_t &bytes, bool integer = false);

}  // namespace detail
}  // namespace edgeattn

#endif
