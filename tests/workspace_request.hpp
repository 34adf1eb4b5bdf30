// The workspace request of one attention or KV cache call, for
// edgeattn_workspace_size: shared by the doctest tests (call_helpers.hpp),
// the conformance runner and the test firmware, so it depends on the C API
// alone.
#ifndef EDGEATTN_TESTS_WORKSPACE_REQUEST_HPP
#define EDGEATTN_TESTS_WORKSPACE_REQUEST_HPP

#include <edgeattn/edgeattn.h>

#include <cstddef>

namespace test_calls {

// The request of an attention or KV cache call on dims (batch, queries, keys); tokens: a store's per batch element.
inline edgeattn_workspace_request request(edgeattn_op op, const edgeattn_attention_dims &dims,
                                          std::size_t tokens = 0) {
    edgeattn_workspace_request r{};
    r.op = op;
    r.dims = dims;
    r.tokens = tokens;
    return r;
}

}  // namespace test_calls

#endif
