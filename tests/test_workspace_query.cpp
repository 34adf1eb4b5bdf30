// edgeattn_workspace_size(): one request gives the size the op checks its
// workspace against (a byte less is refused), a set of requests their
// largest, and a bad request its op's status with nothing written; the
// version the library reports is the headers'.
#include <doctest/doctest.h>

#include <edgeattn/edgeattn.h>

#include "call_helpers.hpp"
#include "path_helpers.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

using test_calls::dense_request;
using test_calls::f32;
using test_calls::fp32_weights;
using test_calls::request;
using test_calls::size_of;
using test_paths::random_floats;

TEST_CASE("the library's version is the headers'") {
    CHECK(edgeattn_version() == EDGEATTN_VERSION);
    CHECK(EDGEATTN_VERSION == EDGEATTN_VERSION_MAJOR * 10000 + EDGEATTN_VERSION_MINOR * 100 + EDGEATTN_VERSION_PATCH);
    CHECK(EDGEATTN_VERSION_MAJOR == 1);
}

TEST_CASE("a decoder step's workspace: the largest of its calls, and enough for each") {
    // One decode step of a grouped-query block with a SwiGLU feed-forward:
    // store 1 token, attend 1 query over a cache of 64, then three dense
    // layers on (1, d) rows.
    const std::size_t d = 32, h = 32, H = 4, Hkv = 2, hs = h / H, cap = 64, ffn = 48;
    const edgeattn_attention_dims dims = {1, 1, cap, d, d, d, h, H, Hkv, 0};
    const edgeattn_workspace_request calls[5] = {
        request(EDGEATTN_OP_KV_CACHE_STORE, dims, 1), request(EDGEATTN_OP_KV_CACHE_ATTEND, dims),
        dense_request({1, d, ffn}), dense_request({1, d, ffn}), dense_request({1, ffn, d})};
    std::size_t largest = 0;
    for (const auto &c : calls) largest = std::max(largest, size_of(c));
    std::size_t bytes = 0;
    REQUIRE(edgeattn_workspace_size(calls, 5, 1, &bytes) == EDGEATTN_OK);
    CHECK(bytes == largest);

    // Every call runs in that one workspace.
    const edgeattn_kv_cache_config config = {1, Hkv, hs, cap, EDGEATTN_DTYPE_F32, 0, 0, 0};
    std::vector<float> memory(edgeattn_kv_cache_memory_size(&config) / sizeof(float));
    edgeattn_kv_cache cache;
    REQUIRE(edgeattn_kv_cache_setup(&cache, &config, memory.data(), memory.size() * sizeof(float)) == EDGEATTN_OK);
    const std::vector<float> W_q = random_floats(h * d, 1, 0.3f), W_k = random_floats(Hkv * hs * d, 2, 0.3f);
    const std::vector<float> W_v = random_floats(Hkv * hs * d, 3, 0.3f), W_o = random_floats(h * h, 4, 0.3f);
    const edgeattn_weights w = fp32_weights(W_q.data(), W_k.data(), W_v.data(), W_o.data());
    std::vector<float> ws(bytes / sizeof(float)), x = random_floats(d, 5), out(h);
    CHECK(edgeattn_kv_cache_store(&cache, &dims, 1, x.data(), x.data(), &w, nullptr, ws.data(), bytes) == EDGEATTN_OK);
    CHECK(edgeattn_kv_cache_attend(&cache, &dims, x.data(), &w, nullptr, ws.data(), bytes, out.data(), nullptr) ==
          EDGEATTN_OK);
    const std::vector<float> W1 = random_floats(ffn * d, 6, 0.3f);
    const edgeattn_weight_matrix W1m = f32(W1.data());
    std::vector<float> hidden(ffn);
    CHECK(edgeattn_dense(&calls[2].dense, out.data(), &W1m, nullptr, ws.data(), bytes, hidden.data()) == EDGEATTN_OK);
    // The size of each call is what the call itself checks: one float less is refused.
    const std::size_t attend_bytes = size_of(calls[1]);
    CHECK(edgeattn_kv_cache_attend(&cache, &dims, x.data(), &w, nullptr, ws.data(), attend_bytes - sizeof(float),
                                   out.data(), nullptr) == EDGEATTN_ERR_WORKSPACE_TOO_SMALL);
}

TEST_CASE("each op's request gives the size that op checks against") {
    const edgeattn_attention_dims mha = {2, 5, 7, 6, 6, 6, 8, 2, 0, 0};
    const edgeattn_attention_dims sdpa = {2, 5, 7, 6, 0, 4, 0, 0, 0, 0};
    const std::vector<float> q = random_floats(2 * 5 * 6, 7), k = random_floats(2 * 7 * 6, 8);
    const std::vector<float> v = random_floats(2 * 7 * 6, 9);
    std::vector<float> out(2 * 5 * 8);
    const std::size_t need = size_of(request(EDGEATTN_OP_SDPA, sdpa));
    std::vector<float> ws(need / sizeof(float));
    CHECK(edgeattn_sdpa(&sdpa, q.data(), k.data(), v.data(), nullptr, ws.data(), need, out.data(), nullptr) ==
          EDGEATTN_OK);
    CHECK(edgeattn_sdpa(&sdpa, q.data(), k.data(), v.data(), nullptr, ws.data(), need - 4, out.data(), nullptr) ==
          EDGEATTN_ERR_WORKSPACE_TOO_SMALL);
    // More threads never need less.
    CHECK(size_of(request(EDGEATTN_OP_MHA, mha), 4) >= size_of(request(EDGEATTN_OP_MHA, mha), 1));
}

TEST_CASE("a bad request: its status, bytes not written") {
    const edgeattn_attention_dims good = {1, 2, 3, 4, 4, 4, 4, 2, 0, 0};
    edgeattn_attention_dims heads = good;
    heads.num_heads = 3;
    const edgeattn_workspace_request calls[3] = {request(EDGEATTN_OP_MHA, good), request(EDGEATTN_OP_MHA, heads),
                                                 request(EDGEATTN_OP_SDPA, good)};
    std::size_t bytes = 12345;
    CHECK(edgeattn_workspace_size(calls, 3, 1, &bytes) == EDGEATTN_ERR_HEADS_DO_NOT_DIVIDE);
    CHECK(bytes == 12345);
    CHECK(edgeattn_workspace_size(calls, 0, 1, &bytes) == EDGEATTN_ERR_ZERO_DIMENSION);
    CHECK(edgeattn_workspace_size(nullptr, 1, 1, &bytes) == EDGEATTN_ERR_NULL_POINTER);
    CHECK(edgeattn_workspace_size(calls, 1, 1, nullptr) == EDGEATTN_ERR_NULL_POINTER);
    edgeattn_attention_dims zero = good;
    zero.value_size = 0;
    const edgeattn_workspace_request zero_value = request(EDGEATTN_OP_SDPA, zero);
    CHECK(edgeattn_workspace_size(&zero_value, 1, 1, &bytes) == EDGEATTN_ERR_ZERO_DIMENSION);
    edgeattn_attention_dims mismatch = good;
    mismatch.key_size = 5;
    const edgeattn_workspace_request mismatched = request(EDGEATTN_OP_SDPA, mismatch);
    CHECK(edgeattn_workspace_size(&mismatched, 1, 1, &bytes) == EDGEATTN_ERR_SHAPE_MISMATCH);
    edgeattn_attention_dims huge = good;
    huge.queries = SIZE_MAX / 2;
    const edgeattn_workspace_request overflowing = request(EDGEATTN_OP_MHA, huge);
    CHECK(edgeattn_workspace_size(&overflowing, 1, 1, &bytes) == EDGEATTN_ERR_SIZE_OVERFLOW);
    for (int op : {0, 7, -1, 0x7FFFFFFF}) {
        edgeattn_workspace_request r = request(EDGEATTN_OP_MHA, good);
        std::memcpy(&r.op, &op, sizeof op);  // any int a C caller may store
        CHECK(edgeattn_workspace_size(&r, 1, 1, &bytes) == EDGEATTN_ERR_OPTION_NOT_SUPPORTED);
    }
    CHECK(bytes == 12345);
}
