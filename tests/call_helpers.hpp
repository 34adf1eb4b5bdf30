// What the doctest tests share to set up a C API call: fp32 weight
// matrices and multi-head weights, the options struct, and workspace
// requests with their sizes (edgeattn_workspace_size, one request at a
// time; a query that is not OK fails the test case). Header-only; every
// user is a doctest test, so the size queries REQUIRE their status.
#ifndef EDGEATTN_TESTS_CALL_HELPERS_HPP
#define EDGEATTN_TESTS_CALL_HELPERS_HPP

#include <doctest/doctest.h>

#include <edgeattn/edgeattn.h>

#include "workspace_request.hpp"

#include <cstddef>

namespace test_calls {

// An fp32 weight matrix (out, in) over W, no scales; W null gives the zeroed matrix.
inline edgeattn_weight_matrix f32(const float *W) { return {EDGEATTN_DTYPE_F32, W, nullptr, EDGEATTN_ARITHMETIC_FLOAT}; }

// Multi-head (or additive, W_o null) weights from fp32 matrices, biases null where not given.
inline edgeattn_weights fp32_weights(const float *W_q, const float *W_k, const float *W_v, const float *W_o,
                                     const float *b_q = nullptr, const float *b_k = nullptr,
                                     const float *b_v = nullptr, const float *b_o = nullptr) {
    return {f32(W_q), f32(W_k), f32(W_v), f32(W_o), b_q, b_k, b_v, b_o};
}

// Options with valid lengths and a mask, each none where null.
inline edgeattn_attention_options options_of(const edgeattn_valid_lens *valid_lens,
                                             const edgeattn_attention_mask *mask) {
    edgeattn_attention_options o{};
    if (valid_lens) o.valid_lens = *valid_lens;
    if (mask) o.mask = *mask;
    return o;
}

// The request of an edgeattn_dense call on dims.
inline edgeattn_workspace_request dense_request(const edgeattn_dense_dims &dims) {
    edgeattn_workspace_request r{};
    r.op = EDGEATTN_OP_DENSE;
    r.dense = dims;
    return r;
}

// Workspace bytes of one request for `threads` threads (the query must say OK).
inline std::size_t size_of(const edgeattn_workspace_request &r, std::size_t threads = 1) {
    std::size_t bytes = 0;
    REQUIRE(edgeattn_workspace_size(&r, 1, threads, &bytes) == EDGEATTN_OK);
    return bytes;
}

// Workspace bytes of one attention or KV cache call for `threads` threads (tokens: a store's).
inline std::size_t workspace_bytes(edgeattn_op op, const edgeattn_attention_dims &dims, std::size_t threads,
                                   std::size_t tokens = 0) {
    return size_of(request(op, dims, tokens), threads);
}

// Workspace bytes of one edgeattn_dense call for `threads` threads.
inline std::size_t dense_workspace_bytes(const edgeattn_dense_dims &dims, std::size_t threads) {
    return size_of(dense_request(dims), threads);
}

}  // namespace test_calls

#endif
