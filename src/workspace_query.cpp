// edgeattn_workspace_size(): the largest workspace of a set of calls, each
// sized by the function its op checks its own workspace with.
#include "edgeattn/types.h"
#include "half_io.hpp"
#include "op_workspace.hpp"
#include "validate.hpp"

using namespace edgeattn::detail;

namespace {

edgeattn_status one_call(const edgeattn_workspace_request &r, size_t threads, size_t &bytes) {
    bool half = false;
    if (edgeattn_status st = request_tensor_type(r, half)) return st;
    const int op = enum_as_int(r.op);  // a C caller may store any int there
    // Additive attention and dense layers take fp32 tensors only.
    if (half && (op == EDGEATTN_OP_ADDITIVE || op == EDGEATTN_OP_DENSE)) return EDGEATTN_ERR_OPTION_NOT_SUPPORTED;
    // The int8 arithmetic: dense layers, multi-head attention and the
    // cache's attend only.
    bool integer = false;
    if (edgeattn_status st = arithmetic_of(enum_as_int(r.arithmetic), integer)) return st;
    if (integer && op != EDGEATTN_OP_DENSE && op != EDGEATTN_OP_MHA && op != EDGEATTN_OP_KV_CACHE_ATTEND)
        return EDGEATTN_ERR_OPTION_NOT_SUPPORTED;
    switch (op) {
        case EDGEATTN_OP_SDPA: return sdpa_workspace_bytes(r.dims, threads, half, bytes);
        case EDGEATTN_OP_ADDITIVE: return additive_workspace_bytes(r.dims, threads, bytes);
        case EDGEATTN_OP_MHA: return mha_workspace_bytes(r.dims, threads, half, bytes, integer);
        case EDGEATTN_OP_KV_CACHE_STORE: return kv_store_workspace_bytes(r.dims, r.tokens, threads, half, bytes);
        case EDGEATTN_OP_KV_CACHE_ATTEND: return kv_attend_workspace_bytes(r.dims, threads, half, bytes, integer);
        case EDGEATTN_OP_DENSE: return dense_workspace_bytes(r.dense, threads, bytes, integer);
        default: return EDGEATTN_ERR_OPTION_NOT_SUPPORTED;
    }
}

}  // namespace

extern "C" edgeattn_status edgeattn_workspace_size(const edgeattn_workspace_request *calls,
                                                   size_t count, size_t max_threads,
                                                   size_t *bytes) {
    if (!calls || !bytes) return EDGEATTN_ERR_NULL_POINTER;
    if (count == 0) return EDGEATTN_ERR_ZERO_DIMENSION;
    size_t largest = 0;
    for (size_t i = 0; i < count; ++i) {
        edgeattn_workspace_request r;
        read_argument(&calls[i], r);
        size_t one = 0;
        if (edgeattn_status st = one_call(r, max_threads, one)) return st;
        if (one > largest) largest = one;
    }
    *bytes = largest;
    return EDGEATTN_OK;
}
