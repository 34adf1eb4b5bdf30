// Rotary embedding fused into the KV cache calls (options.rope): a store
// rotates each key at its position before storing it, an attend its
// queries. Checked on every kernel path against float64 (the projections,
// the rotation from the exact angle, attention over the rows the cache
// holds), for fp32 / fp16 / int8 storage, both layouts, partial rotary,
// grouped-query heads, a window cache that wraps (keys keep the rotation of
// their absolute position) and per-batch start positions; and bit for bit
// against the projection-free calls given rows rotated by
// edgeattn_rope_apply.
#include <doctest/doctest.h>

#include <edgeattn/edgeattn.h>

#include "call_helpers.hpp"
#include "path_helpers.hpp"
#include "reference.hpp"
#include "window_cache_helpers.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

using test_calls::request;
using test_paths::paths;
using test_paths::random_floats;
using test_paths::rel_l2;
using window_tests::layer;
using window_tests::project;
using window_tests::window_cache;

namespace {

constexpr std::size_t max_positions = 64;
constexpr double theta = 10000.0;

// One head's features rotated in float64 at position p from the exact
// angle p * theta^(-2i / rotary) (the formula, not the table).
void rotate_head(double *x, std::size_t rotary, edgeattn_rope_layout layout, std::int64_t p) {
    for (std::size_t i = 0; i < rotary / 2; ++i) {
        const double a = static_cast<double>(p) * std::pow(theta, -2.0 * static_cast<double>(i) / rotary);
        const std::size_t u = layout == EDGEATTN_ROPE_NEOX ? i : 2 * i;
        const std::size_t v = layout == EDGEATTN_ROPE_NEOX ? i + rotary / 2 : 2 * i + 1;
        const double xu = x[u], xv = x[v];
        x[u] = xu * std::cos(a) - xv * std::sin(a);
        x[v] = xv * std::cos(a) + xu * std::sin(a);
    }
}

std::vector<float> rope_table(std::size_t rotary) {
    edgeattn_rope_table_config config{max_positions, rotary, theta, 1.0};
    std::vector<float> table(max_positions * rotary);
    REQUIRE(edgeattn_rope_table(&config, table.data(), table.size()) == EDGEATTN_OK);
    return table;
}

std::size_t step_workspace_bytes(const edgeattn_attention_dims &dims, std::size_t tokens) {
    const edgeattn_workspace_request calls[2] = {request(EDGEATTN_OP_KV_CACHE_STORE, dims, tokens),
                                                 request(EDGEATTN_OP_KV_CACHE_ATTEND, dims)};
    std::size_t bytes = 0;
    REQUIRE(edgeattn_workspace_size(calls, 2, 1, &bytes) == EDGEATTN_OK);
    return bytes;
}

// A stream of steps (a prompt of 3 tokens, then one token per step) into a
// window cache of S + W rows that wraps, batch 2, with the rope's start
// positions either the cache's (NULL) or given per batch element.
void check_stream(edgeattn_dtype storage, edgeattn_rope_layout layout, std::size_t rotary, bool given_positions) {
    const std::size_t B = 2, H = 4, Hkv = 2, d = 16, h = 32, S = 2, W = 6, steps = 12;
    const layer net(d, h, H, Hkv, 71);
    const std::size_t hs = net.hs, kvh = net.kvh;
    window_cache cache(B, Hkv, hs, S, W, storage);
    const edgeattn_weights weights = net.weights();
    const std::vector<float> table = rope_table(rotary);
    // Given starts: batch element 1 left-padded by 2 (its first tokens sit
    // at negative positions), batch element 0 at 5.
    const std::int32_t offsets[B] = {5, -2};
    std::int32_t starts[B] = {0, 0};
    // Float64 rotated keys and values of every position so far, per batch element.
    std::vector<std::vector<std::vector<double>>> keys(B), values(B);
    std::size_t given = 0;
    for (std::size_t step = 0; step < steps; ++step) {
        const std::size_t T = step == 0 ? 3 : 1;
        const edgeattn_attention_dims dims = net.dims(B, T, S + W);
        const std::vector<float> x = random_floats(B * T * d, 300 + static_cast<unsigned>(step));
        for (std::size_t b = 0; b < B; ++b) starts[b] = static_cast<std::int32_t>(given) + offsets[b];
        edgeattn_attention_options options{};
        options.rope = {table.data(), max_positions, rotary, layout, given_positions ? starts : nullptr};
        const std::size_t ws_bytes = step_workspace_bytes(dims, T);
        std::vector<float> ws(ws_bytes / 4), out(B * T * h);
        REQUIRE(edgeattn_kv_cache_store(&cache.c, &dims, T, x.data(), x.data(), &weights, &options, ws.data(),
                                        ws_bytes) == EDGEATTN_OK);
        options.mask.causal = 1;
        REQUIRE(edgeattn_kv_cache_attend(&cache.c, &dims, x.data(), &weights, &options, ws.data(), ws_bytes,
                                         out.data(), nullptr) == EDGEATTN_OK);
        std::vector<double> want(B * T * h);
        for (std::size_t b = 0; b < B; ++b) {
            const std::int64_t first = given_positions ? starts[b] : static_cast<std::int64_t>(given);
            std::vector<double> q(T * h);
            for (std::size_t t = 0; t < T; ++t) {
                const float *xt = x.data() + (b * T + t) * d;
                std::vector<double> k = project(net.Wk, net.bk, xt, d, kvh);
                for (std::size_t g = 0; g < Hkv; ++g) rotate_head(&k[g * hs], rotary, layout, first + t);
                keys[b].push_back(k);
                values[b].push_back(project(net.Wv, net.bv, xt, d, kvh));
                std::vector<double> qt = project(net.Wq, net.bq, xt, d, h);
                for (std::size_t n = 0; n < H; ++n) rotate_head(&qt[n * hs], rotary, layout, first + t);
                std::copy(qt.begin(), qt.end(), q.begin() + t * h);
            }
            const std::vector<std::size_t> held = cache.held(given + T);
            // The keys as stored: the rotated float64 keys, within the storage's rounding.
            const std::vector<double> stored_keys = cache.rows(false, b, held);
            std::vector<double> exact_keys;
            for (std::size_t p : held) exact_keys.insert(exact_keys.end(), keys[b][p].begin(), keys[b][p].end());
            std::vector<float> stored_f(stored_keys.begin(), stored_keys.end());
            const double key_bound = storage == EDGEATTN_DTYPE_F32 ? 1e-6 : storage == EDGEATTN_DTYPE_F16 ? 1e-3 : 1e-2;
            CHECK(rel_l2(stored_f.data(), exact_keys) < key_bound);
            // Attention over the rows as held (dequantised), then W_o.
            edgeattn_ref::Mask mask;
            mask.causal = true;
            std::vector<double> heads, attn;
            window_tests::attend_rows(b, T, held, given + T, S + W, H, Hkv, hs, q, stored_keys,
                                      cache.rows(true, b, held), mask, heads, attn);
            for (std::size_t t = 0; t < T; ++t) {
                std::vector<float> head_row(heads.begin() + t * h, heads.begin() + (t + 1) * h);
                const std::vector<double> o = project(net.Wo, net.bo, head_row.data(), h, h);
                // W_o applied to float-rounded heads: the rounding is far inside the bound.
                std::copy(o.begin(), o.end(), want.begin() + (b * T + t) * h);
            }
        }
        CHECK(rel_l2(out.data(), want) < 5e-5);
        given += T;
    }
    CHECK(given > S + W);  // the ring wrapped
}

}  // namespace

TEST_CASE("KV cache with RoPE fused: a wrapping window stream against float64, every path and storage") {
    test_paths::path_guard guard;
    for (edgeattn_isa isa : paths()) {
        REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
        for (edgeattn_dtype storage : {EDGEATTN_DTYPE_F32, EDGEATTN_DTYPE_F16, EDGEATTN_DTYPE_INT8})
            for (edgeattn_rope_layout layout : {EDGEATTN_ROPE_NEOX, EDGEATTN_ROPE_GPTJ})
                for (std::size_t rotary : {8, 4})
                    for (bool given : {false, true}) {
                        INFO("isa " << edgeattn_isa_name(isa) << " storage " << storage << " layout " << layout
                                    << " rotary " << rotary << " given positions " << given);
                        check_stream(storage, layout, rotary, given);
                    }
    }
}

TEST_CASE("KV cache with RoPE fused: bit for bit the projection-free calls on rows rotated by edgeattn_rope_apply") {
    const std::size_t B = 2, H = 4, Hkv = 2, hs = 8, h = H * hs, kvh = Hkv * hs, cap = 12, T = 3;
    const std::vector<float> table = rope_table(6);
    edgeattn_weights none{};
    none.W_q.type = none.W_k.type = none.W_v.type = none.W_o.type = EDGEATTN_DTYPE_NONE;
    for (edgeattn_dtype storage : {EDGEATTN_DTYPE_F32, EDGEATTN_DTYPE_F16, EDGEATTN_DTYPE_INT8}) {
        INFO("storage " << storage);
        edgeattn_kv_cache_config config{B, Hkv, hs, cap, storage, 0, 0, 0};
        const std::size_t bytes = edgeattn_kv_cache_memory_size(&config);
        std::vector<float> fused_memory(bytes / 4), plain_memory(bytes / 4);
        edgeattn_kv_cache fused{}, plain{};
        REQUIRE(edgeattn_kv_cache_setup(&fused, &config, fused_memory.data(), bytes) == EDGEATTN_OK);
        REQUIRE(edgeattn_kv_cache_setup(&plain, &config, plain_memory.data(), bytes) == EDGEATTN_OK);
        const edgeattn_attention_dims dims{B, T, cap, h, kvh, kvh, h, H, Hkv, 0};
        const std::size_t ws_bytes = step_workspace_bytes(dims, T);
        std::vector<float> ws(ws_bytes / 4);
        edgeattn_attention_options options{};
        options.rope = {table.data(), max_positions, 6, EDGEATTN_ROPE_GPTJ, nullptr};
        for (unsigned step = 0; step < 3; ++step) {
            const std::vector<float> k = random_floats(B * T * kvh, 40 + step), v = random_floats(B * T * kvh, 50 + step),
                                     q = random_floats(B * T * h, 60 + step);
            // The cache's positions are the rope's starts of a store; an
            // attend's queries start Q before them after it.
            std::int32_t starts[B];
            for (std::size_t b = 0; b < B; ++b) starts[b] = plain.positions[b];
            edgeattn_rope rope = options.rope;
            rope.positions = starts;
            std::vector<float> k_rotated(k.size()), q_rotated(q.size());
            const edgeattn_rope_dims key_dims{B, T, Hkv, hs}, query_dims{B, T, H, hs};
            REQUIRE(edgeattn_rope_apply(&key_dims, &rope, k.data(), k_rotated.data()) == EDGEATTN_OK);
            REQUIRE(edgeattn_kv_cache_store(&fused, &dims, T, k.data(), v.data(), &none, &options, ws.data(),
                                            ws_bytes) == EDGEATTN_OK);
            REQUIRE(edgeattn_kv_cache_store(&plain, &dims, T, k_rotated.data(), v.data(), &none, nullptr,
                                            ws.data(), ws_bytes) == EDGEATTN_OK);
            CHECK(std::memcmp(fused_memory.data(), plain_memory.data(), bytes) == 0);
            REQUIRE(edgeattn_rope_apply(&query_dims, &rope, q.data(), q_rotated.data()) == EDGEATTN_OK);
            std::vector<float> fused_out(B * T * h), plain_out(B * T * h);
            options.mask.causal = 1;
            edgeattn_attention_options causal{};
            causal.mask.causal = 1;
            REQUIRE(edgeattn_kv_cache_attend(&fused, &dims, q.data(), &none, &options, ws.data(), ws_bytes,
                                             fused_out.data(), nullptr) == EDGEATTN_OK);
            REQUIRE(edgeattn_kv_cache_attend(&plain, &dims, q_rotated.data(), &none, &causal, ws.data(), ws_bytes,
                                             plain_out.data(), nullptr) == EDGEATTN_OK);
            CHECK(std::memcmp(fused_out.data(), plain_out.data(), fused_out.size() * sizeof(float)) == 0);
            options.mask.causal = 0;
        }
    }
}
