// Window KV caches (edgeattn_kv_cache_config::window, sinks), projection-
// free cache calls (EDGEATTN_DTYPE_NONE) and the sliding-window mask field,
// against the float64 reference on every kernel path: the setup rules, the
// ring's placement, attention over wrapped rings in stream order (masks,
// causal steps of several tokens, bias, attention weight columns), fp32 /
// fp16 / int8 storage (the reference reads the dequantised rows the cache
// holds), grouped-query heads, batch elements at different positions,
// truncation, and bits that do not depend on the thread count.
#include <doctest/doctest.h>

#include <edgeattn/edgeattn.h>

#include "call_helpers.hpp"
#include "path_helpers.hpp"
#include "reference.hpp"
#include "window_cache_helpers.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

using test_calls::request;
using test_paths::paths;
using test_paths::random_floats;
using test_paths::rel_l2;
using test_paths::set_threads;
using window_tests::layer;
using window_tests::project;
using window_tests::window_cache;

namespace {

const edgeattn_dtype storages[] = {EDGEATTN_DTYPE_F32, EDGEATTN_DTYPE_F16, EDGEATTN_DTYPE_INT8};
constexpr double tolerance = 5e-5;

std::size_t step_workspace_bytes(const edgeattn_attention_dims &dims, std::size_t tokens, std::size_t threads) {
    const edgeattn_workspace_request calls[2] = {request(EDGEATTN_OP_KV_CACHE_STORE, dims, tokens),
                                                 request(EDGEATTN_OP_KV_CACHE_ATTEND, dims)};
    std::size_t bytes = 0;
    REQUIRE(edgeattn_workspace_size(calls, 2, threads, &bytes) == EDGEATTN_OK);
    return bytes;
}

struct scenario {
    const char *name;
    std::size_t B, H, Hkv, S, W;
    std::vector<std::size_t> steps;  // tokens stored, then attended as queries, per step
};

// What a step's mask holds: 0 nothing, 1 causal, 2 causal with a window
// of 3 keys, 3 causal with key ranges per batch element and a bias per
// (batch element, head).
struct step_mask {
    edgeattn_ref::Mask ref;
    std::vector<std::int32_t> ranges;
    std::vector<float> bias;
    edgeattn_attention_options options{};
    step_mask(int kind, std::size_t B, std::size_t H, std::size_t Q, std::size_t cap, unsigned seed) {
        ref.causal = kind >= 1;
        options.mask.causal = kind >= 1;
        if (kind == 2) ref.window = options.mask.window = 3;
        if (kind == 3) {
            for (std::size_t b = 0; b < B; ++b) {
                ranges.push_back(static_cast<std::int32_t>(b % 2));
                ranges.push_back(b % 2 ? 6 : 1000);
            }
            bias = random_floats(B * H * Q * cap, seed, 0.5f);
            ref.ranges_kind = edgeattn_ref::Mask::per_batch;
            ref.ranges = ranges;
            ref.bias.assign(bias.begin(), bias.end());
            ref.bias_batch = B;
            ref.bias_heads = H;
            ref.bias_keys = cap;
            options.mask.ranges_kind = EDGEATTN_KEY_RANGES_PER_BATCH;
            options.mask.key_ranges = ranges.data();
            options.mask.bias = bias.data();
            options.mask.bias_batch = B;
            options.mask.bias_heads = H;
        }
    }
};

// A stream through a window cache: each step stores its tokens (keys =
// values = x), checks the rows the cache holds against their float64
// projections, then attends the same tokens as queries; after the first
// step batch element 1 is truncated, so the elements sit at different
// positions.
void run_stream(const scenario &sc, edgeattn_dtype storage, int mask_kind, bool with_weights, unsigned seed) {
    const std::size_t d = 12, h = sc.H * 4, B = sc.B;
    const layer net(d, h, sc.H, sc.Hkv, seed);
    window_cache cache(B, sc.Hkv, net.hs, sc.S, sc.W, storage);
    const std::size_t cap = cache.c.capacity;
    const edgeattn_weights w = net.weights();
    std::vector<std::size_t> given(B, 0);
    std::vector<std::vector<std::vector<double>>> keys(B), values(B);  // [b][position]: (h_kv)
    const double row_tolerance = storage == EDGEATTN_DTYPE_F32 ? 1e-5 : storage == EDGEATTN_DTYPE_F16 ? 1e-3 : 1e-2;
    for (std::size_t step = 0; step < sc.steps.size(); ++step) {
        const std::size_t T = sc.steps[step];
        INFO("step " << step << " of " << T << " tokens");
        const edgeattn_attention_dims dims = net.dims(B, T, cap);
        std::vector<float> ws(step_workspace_bytes(dims, T, 4) / 4);
        const std::vector<float> x = random_floats(B * T * d, seed + 100 + static_cast<unsigned>(step));
        REQUIRE(edgeattn_kv_cache_store(&cache.c, &dims, T, x.data(), x.data(), &w, nullptr, ws.data(),
                                        ws.size() * 4) == EDGEATTN_OK);
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t t = 0; t < T; ++t) {
                keys[b].push_back(project(net.Wk, net.bk, &x[(b * T + t) * d], d, net.kvh));
                values[b].push_back(project(net.Wv, net.bv, &x[(b * T + t) * d], d, net.kvh));
            }
        for (std::size_t b = 0; b < B; ++b) given[b] += T;
        if (step == 0 && B > 1) {
            const std::size_t keep = given[1] / 3;
            REQUIRE(edgeattn_kv_cache_truncate(&cache.c, 1, keep) == EDGEATTN_OK);
            given[1] = keep;
            keys[1].resize(keep);
            values[1].resize(keep);
        }
        // The rows the cache holds, in stream order, dequantised.
        std::vector<std::vector<std::size_t>> held(B);
        std::vector<std::vector<double>> held_keys(B), held_values(B);
        for (std::size_t b = 0; b < B; ++b) {
            CHECK(cache.c.positions[b] == static_cast<std::int32_t>(given[b]));
            CHECK(cache.c.lengths[b] == static_cast<std::int32_t>(given[b] < cap ? given[b] : cap));
            held[b] = cache.held(given[b]);
            REQUIRE(held[b].size() == static_cast<std::size_t>(cache.c.lengths[b]));
            held_keys[b] = cache.rows(false, b, held[b]);
            held_values[b] = cache.rows(true, b, held[b]);
            for (std::size_t j = 0; j < held[b].size(); ++j) {
                std::vector<float> k(held_keys[b].begin() + j * net.kvh, held_keys[b].begin() + (j + 1) * net.kvh);
                std::vector<float> v(held_values[b].begin() + j * net.kvh,
                                     held_values[b].begin() + (j + 1) * net.kvh);
                INFO("batch element " << b << ", position " << held[b][j]);
                CHECK(rel_l2(k.data(), keys[b][held[b][j]]) < row_tolerance);
                CHECK(rel_l2(v.data(), values[b][held[b][j]]) < row_tolerance);
            }
        }
        // Attend: the step's tokens as queries, at 1 and at 4 threads.
        const step_mask m(mask_kind, B, sc.H, T, cap, seed + 500 + static_cast<unsigned>(step));
        std::vector<float> out1(B * T * h, -7.0f), out4(B * T * h, -9.0f);
        std::vector<float> attn1(with_weights ? B * sc.H * T * cap : 0, -7.0f), attn4(attn1.size(), -9.0f);
        set_threads(1);
        REQUIRE(edgeattn_kv_cache_attend(&cache.c, &dims, x.data(), &w, &m.options, ws.data(), ws.size() * 4,
                                         out1.data(), with_weights ? attn1.data() : nullptr) == EDGEATTN_OK);
        set_threads(4);
        REQUIRE(edgeattn_kv_cache_attend(&cache.c, &dims, x.data(), &w, &m.options, ws.data(), ws.size() * 4,
                                         out4.data(), with_weights ? attn4.data() : nullptr) == EDGEATTN_OK);
        set_threads(1);
        CHECK(std::memcmp(out1.data(), out4.data(), out1.size() * 4) == 0);
        if (with_weights) CHECK(std::memcmp(attn1.data(), attn4.data(), attn1.size() * 4) == 0);
        std::vector<double> want(B * T * h), want_weights(B * sc.H * T * cap);
        for (std::size_t b = 0; b < B; ++b) {
            std::vector<double> q(T * h), heads, weights;
            for (std::size_t t = 0; t < T; ++t) {
                const std::vector<double> row = project(net.Wq, net.bq, &x[(b * T + t) * d], d, h);
                std::copy(row.begin(), row.end(), q.begin() + t * h);
            }
            window_tests::attend_rows(b, T, held[b], given[b], cap, sc.H, sc.Hkv, net.hs, q, held_keys[b],
                                      held_values[b], m.ref, heads, weights);
            std::copy(weights.begin(), weights.end(), want_weights.begin() + b * sc.H * T * cap);
            for (std::size_t t = 0; t < T; ++t)
                for (std::size_t o = 0; o < h; ++o) {
                    double s = net.bo[o];
                    for (std::size_t i = 0; i < h; ++i) s += heads[t * h + i] * net.Wo[o * h + i];
                    want[(b * T + t) * h + o] = s;
                }
        }
        CHECK(rel_l2(out1.data(), want) < tolerance);
        if (with_weights) CHECK(rel_l2(attn1.data(), want_weights) < tolerance);
    }
}

std::string storage_name(edgeattn_dtype t) {
    return t == EDGEATTN_DTYPE_F32 ? "fp32" : t == EDGEATTN_DTYPE_F16 ? "fp16" : "int8";
}

}  // namespace

TEST_CASE("window cache setup: capacity = sinks + window, sinks only with a window") {
    struct bad {
        std::size_t capacity, window, sinks;
        edgeattn_status status;
    };
    const bad cases[] = {
        {4, 0, 1, EDGEATTN_ERR_BAD_WINDOW},        {8, 6, 1, EDGEATTN_ERR_BAD_WINDOW},
        {8, 6, 3, EDGEATTN_ERR_BAD_WINDOW},        {8, 9, 0, EDGEATTN_ERR_BAD_WINDOW},
        {8, 1, SIZE_MAX, EDGEATTN_ERR_BAD_WINDOW}, {8, SIZE_MAX, 9, EDGEATTN_ERR_BAD_WINDOW},
        {8, 0, SIZE_MAX, EDGEATTN_ERR_BAD_WINDOW}, {0, 4, 0, EDGEATTN_ERR_ZERO_DIMENSION},
    };
    std::vector<float> memory(4096, -3.0f);
    const std::vector<float> before = memory;
    edgeattn_kv_cache cache;
    std::memset(&cache, 0x5A, sizeof cache);
    const edgeattn_kv_cache cache_before = cache;
    for (const bad &c : cases) {
        INFO("capacity " << c.capacity << ", window " << c.window << ", sinks " << c.sinks);
        const edgeattn_kv_cache_config config{2, 1, 4, c.capacity, EDGEATTN_DTYPE_F32, c.window, c.sinks, 0};
        CHECK(edgeattn_kv_cache_memory_size(&config) == 0);
        CHECK(edgeattn_kv_cache_setup(&cache, &config, memory.data(), memory.size() * 4) == c.status);
    }
    CHECK(std::memcmp(memory.data(), before.data(), memory.size() * 4) == 0);
    CHECK(std::memcmp(&cache, &cache_before, sizeof cache) == 0);
    for (edgeattn_dtype storage : storages) {
        const edgeattn_kv_cache_config plain{2, 3, 4, 10, storage, 0, 0, 0}, window{2, 3, 4, 10, storage, 7, 3, 0},
            no_sinks{2, 3, 4, 10, storage, 10, 0, 0};
        const std::size_t bytes = edgeattn_kv_cache_memory_size(&plain);
        CHECK(bytes > 0);
        CHECK(edgeattn_kv_cache_memory_size(&window) == bytes);  // the window costs no memory
        CHECK(edgeattn_kv_cache_memory_size(&no_sinks) == bytes);
        std::vector<float> m(bytes / 4, -1.0f);
        REQUIRE(edgeattn_kv_cache_setup(&cache, &window, m.data(), bytes) == EDGEATTN_OK);
        CHECK((cache.window == 7 && cache.sinks == 3 && cache.capacity == 10));
        CHECK((cache.positions[0] == 0 && cache.positions[1] == 0 && cache.lengths[0] == 0));
        CHECK(edgeattn_kv_cache_setup(&cache, &window, m.data(), bytes - 4) == EDGEATTN_ERR_WORKSPACE_TOO_SMALL);
    }
}

TEST_CASE("a window cache stores each token in its ring row; a store never fills it") {
    // Projection-free stores: the rows as given, so each row's value names
    // the token it holds exactly.
    const std::size_t B = 2, hs = 3, S = 2, W = 5, cap = S + W;
    window_cache cache(B, 1, hs, S, W, EDGEATTN_DTYPE_F32);
    edgeattn_attention_dims dims{B, 1, cap, hs, hs, hs, hs, 1, 1, 0};
    edgeattn_weights none{};
    none.W_k.type = none.W_v.type = EDGEATTN_DTYPE_NONE;
    std::vector<float> ws;
    std::size_t given = 0;
    for (std::size_t T : {3u, 1u, 4u, 12u, 1u, 2u}) {
        INFO(T << " tokens after " << given);
        std::vector<float> k(B * T * hs), v(B * T * hs);
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t t = 0; t < T; ++t)
                for (std::size_t c = 0; c < hs; ++c) {
                    k[(b * T + t) * hs + c] = static_cast<float>(1000 * b + given + t) + 0.25f * c;
                    v[(b * T + t) * hs + c] = -k[(b * T + t) * hs + c];
                }
        ws.assign(step_workspace_bytes(dims, T, 1) / 4, 0.0f);
        REQUIRE(edgeattn_kv_cache_store(&cache.c, &dims, T, k.data(), v.data(), &none, nullptr, ws.data(),
                                        ws.size() * 4) == EDGEATTN_OK);
        given += T;
        for (std::size_t b = 0; b < B; ++b) {
            CHECK(cache.c.positions[b] == static_cast<std::int32_t>(given));
            CHECK(cache.c.lengths[b] == static_cast<std::int32_t>(given < cap ? given : cap));
            for (std::size_t p : cache.held(given)) {
                const std::size_t row = p < cap ? p : S + (p - S) % W;
                for (std::size_t c = 0; c < hs; ++c) {
                    CHECK(cache.c.keys[(b * cap + row) * hs + c] == static_cast<float>(1000 * b + p) + 0.25f * c);
                    CHECK(cache.c.values[(b * cap + row) * hs + c] == -(static_cast<float>(1000 * b + p) + 0.25f * c));
                }
            }
        }
    }
}

TEST_CASE("attention over wrapped window caches matches the float64 reference over the rows held") {
    test_paths::path_guard guard;
    const scenario scenarios[] = {
        {"small ring, grouped heads", 2, 4, 2, 2, 6, {5, 1, 3, 2, 7, 20, 1, 1, 9}},
        {"ring past one key block", 2, 2, 1, 3, 260, {100, 170, 1, 17, 1, 30, 2}},
        {"no sinks", 1, 2, 2, 0, 5, {3, 4, 1, 6, 2}},
    };
    for (edgeattn_isa path : paths()) {
        REQUIRE(edgeattn_set_isa(path) == EDGEATTN_OK);
        for (edgeattn_dtype storage : storages)
            for (const scenario &sc : scenarios)
                for (int mask_kind = 0; mask_kind < 4; ++mask_kind)
                    for (bool with_weights : {false, true}) {
                        INFO(edgeattn_isa_name(path) << ", " << storage_name(storage) << ", " << sc.name << ", mask "
                                                     << mask_kind << (with_weights ? ", weights" : ""));
                        run_stream(sc, storage, mask_kind, with_weights, 11u * static_cast<unsigned>(mask_kind) + 7u);
                    }
    }
}

TEST_CASE("truncating a window cache: allowed until its ring wraps") {
    const std::size_t hs = 2, S = 1, W = 3, cap = S + W;
    window_cache cache(2, 1, hs, S, W, EDGEATTN_DTYPE_F32);
    const edgeattn_attention_dims dims{2, 1, cap, hs, hs, hs, hs, 1, 1, 0};
    edgeattn_weights none{};
    none.W_k.type = none.W_v.type = EDGEATTN_DTYPE_NONE;
    std::vector<float> ws(step_workspace_bytes(dims, 4, 1) / 4), x(2 * 4 * hs, 0.5f);
    auto store = [&](std::size_t T) {
        return edgeattn_kv_cache_store(&cache.c, &dims, T, x.data(), x.data(), &none, nullptr, ws.data(),
                                       ws.size() * 4);
    };
    REQUIRE(store(3) == EDGEATTN_OK);
    CHECK(edgeattn_kv_cache_truncate(&cache.c, 0, 4) == EDGEATTN_ERR_PAST_CACHE_LENGTH);
    CHECK(edgeattn_kv_cache_truncate(&cache.c, 0, 1) == EDGEATTN_OK);
    CHECK((cache.c.lengths[0] == 1 && cache.c.positions[0] == 1 && cache.c.positions[1] == 3));
    REQUIRE(store(1) == EDGEATTN_OK);  // positions 2 and 4: element 1 full, unwrapped
    CHECK(edgeattn_kv_cache_truncate(&cache.c, 1, 4) == EDGEATTN_OK);
    CHECK(edgeattn_kv_cache_truncate(&cache.c, 1, 2) == EDGEATTN_OK);
    CHECK((cache.c.lengths[1] == 2 && cache.c.positions[1] == 2));
    REQUIRE(store(4) == EDGEATTN_OK);  // positions 6 and 6: both wrapped
    const std::vector<float> memory = cache.memory;
    CHECK(edgeattn_kv_cache_truncate(&cache.c, 0, 2) == EDGEATTN_ERR_OPTION_NOT_SUPPORTED);
    CHECK(edgeattn_kv_cache_truncate(&cache.c, 0, 4) == EDGEATTN_ERR_OPTION_NOT_SUPPORTED);
    CHECK(edgeattn_kv_cache_truncate(&cache.c, 2, 0) == EDGEATTN_ERR_PAST_CACHE_LENGTH);
    CHECK(std::memcmp(memory.data(), cache.memory.data(), memory.size() * 4) == 0);
    CHECK(edgeattn_kv_cache_reset(&cache.c) == EDGEATTN_OK);
    CHECK((cache.c.lengths[0] == 0 && cache.c.positions[0] == 0 && cache.c.positions[1] == 0));
    CHECK(store(2) == EDGEATTN_OK);
    CHECK(edgeattn_kv_cache_truncate(&cache.c, 0, 1) == EDGEATTN_OK);
}

TEST_CASE("edited positions or window fields are refused as a changed cache") {
    window_cache cache(1, 1, 2, 1, 3, EDGEATTN_DTYPE_F32);
    const edgeattn_attention_dims dims{1, 1, 4, 2, 2, 2, 2, 1, 1, 0};
    edgeattn_weights none{};
    none.W_k.type = none.W_v.type = EDGEATTN_DTYPE_NONE;
    std::vector<float> ws(step_workspace_bytes(dims, 1, 1) / 4), x(2, 1.0f);
    edgeattn_kv_cache edited = cache.c;
    edited.window = 4;
    CHECK(edgeattn_kv_cache_store(&edited, &dims, 1, x.data(), x.data(), &none, nullptr, ws.data(), ws.size() * 4) ==
          EDGEATTN_ERR_BAD_CACHE);
    edited = cache.c;
    edited.sinks = 0;
    CHECK(edgeattn_kv_cache_reset(&edited) == EDGEATTN_ERR_BAD_CACHE);
    edited = cache.c;
    edited.positions = edited.lengths;
    CHECK(edgeattn_kv_cache_reset(&edited) == EDGEATTN_ERR_BAD_CACHE);
    // Memory whose positions and lengths disagree is not a cache a store made.
    cache.c.positions[0] = 2;
    CHECK(edgeattn_kv_cache_truncate(&cache.c, 0, 0) == EDGEATTN_ERR_BAD_CACHE);
    cache.c.positions[0] = -1;
    CHECK(edgeattn_kv_cache_truncate(&cache.c, 0, 0) == EDGEATTN_ERR_BAD_CACHE);
    cache.c.positions[0] = 0;
    CHECK(edgeattn_kv_cache_truncate(&cache.c, 0, 0) == EDGEATTN_OK);
}

TEST_CASE("a window cache never fills: a store is refused only where a position would pass INT32_MAX") {
    window_cache cache(1, 1, 2, 0, 3, EDGEATTN_DTYPE_F32);
    const edgeattn_attention_dims dims{1, 1, 3, 2, 2, 2, 2, 1, 1, 0};
    edgeattn_weights none{};
    none.W_k.type = none.W_v.type = EDGEATTN_DTYPE_NONE;
    std::vector<float> ws(step_workspace_bytes(dims, 5, 1) / 4), x(10, 1.0f);
    for (int i = 0; i < 4; ++i)
        REQUIRE(edgeattn_kv_cache_store(&cache.c, &dims, 5, x.data(), x.data(), &none, nullptr, ws.data(),
                                        ws.size() * 4) == EDGEATTN_OK);
    CHECK((cache.c.positions[0] == 20 && cache.c.lengths[0] == 3));
    // A cache copied at a late position (what a long stream reaches).
    cache.c.positions[0] = INT32_MAX - 2;
    const std::vector<float> memory = cache.memory;
    CHECK(edgeattn_kv_cache_store(&cache.c, &dims, 3, x.data(), x.data(), &none, nullptr, ws.data(), ws.size() * 4) ==
          EDGEATTN_ERR_CACHE_FULL);
    CHECK(std::memcmp(memory.data(), cache.memory.data(), memory.size() * 4) == 0);
    CHECK(edgeattn_kv_cache_store(&cache.c, &dims, 2, x.data(), x.data(), &none, nullptr, ws.data(), ws.size() * 4) ==
          EDGEATTN_OK);
    CHECK(cache.c.positions[0] == INT32_MAX);
}

TEST_CASE("projection-free store and attend match the float64 reference and the projecting calls") {
    test_paths::path_guard guard;
    const std::size_t B = 2, d = 8, h = 8, H = 2, Hkv = 1, S = 1, W = 4, cap = S + W;
    const layer net(d, h, H, Hkv, 77);
    const edgeattn_weights projecting = net.weights();
    for (edgeattn_isa path : paths()) {
        REQUIRE(edgeattn_set_isa(path) == EDGEATTN_OK);
        for (edgeattn_dtype storage : storages) {
            INFO(edgeattn_isa_name(path) << ", " << storage_name(storage));
            window_cache given(B, Hkv, net.hs, S, W, storage), projected(B, Hkv, net.hs, S, W, storage);
            std::size_t total = 0;
            for (std::size_t T : {2u, 3u, 1u, 4u}) {
                const edgeattn_attention_dims dims = net.dims(B, T, cap);
                std::vector<float> ws(step_workspace_bytes(dims, T, 1) / 4);
                const std::vector<float> x = random_floats(B * T * d, 300 + static_cast<unsigned>(total));
                // The caller's own projections, in fp32 as the library would make them.
                std::vector<float> k(B * T * net.kvh), v(B * T * net.kvh), q(B * T * h);
                for (std::size_t r = 0; r < B * T; ++r) {
                    const std::vector<double> kr = project(net.Wk, net.bk, &x[r * d], d, net.kvh),
                                              vr = project(net.Wv, net.bv, &x[r * d], d, net.kvh),
                                              qr = project(net.Wq, net.bq, &x[r * d], d, h);
                    for (std::size_t c = 0; c < net.kvh; ++c) {
                        k[r * net.kvh + c] = static_cast<float>(kr[c]);
                        v[r * net.kvh + c] = static_cast<float>(vr[c]);
                    }
                    for (std::size_t c = 0; c < h; ++c) q[r * h + c] = static_cast<float>(qr[c]);
                }
                edgeattn_attention_dims none_dims = dims;
                none_dims.key_size = none_dims.value_size = net.kvh;
                none_dims.query_size = h;
                edgeattn_weights none{};
                none.W_q.type = none.W_k.type = none.W_v.type = none.W_o.type = EDGEATTN_DTYPE_NONE;
                REQUIRE(edgeattn_kv_cache_store(&given.c, &none_dims, T, k.data(), v.data(), &none, nullptr, ws.data(),
                                                ws.size() * 4) == EDGEATTN_OK);
                REQUIRE(edgeattn_kv_cache_store(&projected.c, &dims, T, x.data(), x.data(), &projecting, nullptr,
                                                ws.data(), ws.size() * 4) == EDGEATTN_OK);
                total += T;
                edgeattn_attention_options causal{};
                causal.mask.causal = 1;
                // Heads only (W_q and W_o NONE), against the float64 reference.
                std::vector<float> heads(B * T * h), out(B * T * h), out_projecting(B * T * h);
                REQUIRE(edgeattn_kv_cache_attend(&given.c, &none_dims, q.data(), &none, &causal, ws.data(),
                                                 ws.size() * 4, heads.data(), nullptr) == EDGEATTN_OK);
                edgeattn_ref::Mask ref;
                ref.causal = true;
                std::vector<double> want(B * T * h);
                for (std::size_t b = 0; b < B; ++b) {
                    const std::vector<std::size_t> held = given.held(total);
                    std::vector<double> qd(q.begin() + b * T * h, q.begin() + (b + 1) * T * h), hb, wb;
                    window_tests::attend_rows(b, T, held, total, cap, H, Hkv, net.hs, qd, given.rows(false, b, held),
                                              given.rows(true, b, held), ref, hb, wb);
                    std::copy(hb.begin(), hb.end(), want.begin() + b * T * h);
                }
                CHECK(rel_l2(heads.data(), want) < tolerance);
                // Projecting store, NONE queries and output, then the caller's
                // own W_o: the projecting attend's answer.
                edgeattn_weights q_only = projecting;
                q_only.W_q.type = q_only.W_o.type = EDGEATTN_DTYPE_NONE;
                q_only.b_q = q_only.b_o = nullptr;
                edgeattn_attention_dims q_dims = dims;
                q_dims.query_size = h;
                REQUIRE(edgeattn_kv_cache_attend(&projected.c, &q_dims, q.data(), &q_only, &causal, ws.data(),
                                                 ws.size() * 4, heads.data(), nullptr) == EDGEATTN_OK);
                for (std::size_t r = 0; r < B * T; ++r)
                    for (std::size_t o = 0; o < h; ++o) {
                        double s = net.bo[o];
                        for (std::size_t i = 0; i < h; ++i) s += static_cast<double>(heads[r * h + i]) * net.Wo[o * h + i];
                        out[r * h + o] = static_cast<float>(s);
                    }
                REQUIRE(edgeattn_kv_cache_attend(&projected.c, &dims, x.data(), &projecting, &causal, ws.data(),
                                                 ws.size() * 4, out_projecting.data(), nullptr) == EDGEATTN_OK);
                const std::vector<double> wanted(out_projecting.begin(), out_projecting.end());
                CHECK(rel_l2(out.data(), wanted) < tolerance);
            }
        }
    }
}

TEST_CASE("EDGEATTN_DTYPE_NONE is refused wherever a matrix must be read (packing, additive, dense, storage)") {
    const edgeattn_attention_dims dims{1, 2, 2, 4, 4, 4, 4, 2, 0, 0};
    const std::vector<float> x(64, 0.5f), W(64, 0.25f);
    std::vector<float> ws(4096), out(64, -1.0f), packed(4096, -1.0f), memory(1024, -1.0f);
    const std::vector<float> out_before = out, packed_before = packed;
    for (int matrix = 0; matrix < 4; ++matrix) {
        INFO("matrix " << matrix);
        edgeattn_weights w = test_calls::fp32_weights(W.data(), W.data(), W.data(), W.data());
        edgeattn_weight_matrix *m[4] = {&w.W_q, &w.W_k, &w.W_v, &w.W_o};
        m[matrix]->type = EDGEATTN_DTYPE_NONE;
        // edgeattn_mha takes it, as the cache calls do (test_attention_shapes.cpp);
        // packing, additive attention and dense layers read every matrix.
        CHECK(edgeattn_mha_packed_size(&dims, &w) == 0);
        CHECK(edgeattn_mha_pack(&dims, &w, packed.data(), packed.size() * 4) == EDGEATTN_ERR_BAD_WEIGHT_TYPE);
        if (matrix < 3) {
            edgeattn_weights additive = test_calls::fp32_weights(W.data(), W.data(), W.data(), nullptr);
            edgeattn_weight_matrix *a[3] = {&additive.W_q, &additive.W_k, &additive.W_v};
            a[matrix]->type = EDGEATTN_DTYPE_NONE;
            CHECK(edgeattn_additive(&dims, x.data(), x.data(), x.data(), &additive, nullptr, ws.data(), ws.size() * 4,
                                    out.data(), nullptr) == EDGEATTN_ERR_BAD_WEIGHT_TYPE);
        }
    }
    const edgeattn_dense_dims dense{2, 4, 4};
    const edgeattn_weight_matrix none{EDGEATTN_DTYPE_NONE, W.data(), nullptr};
    CHECK(edgeattn_dense(&dense, x.data(), &none, nullptr, ws.data(), ws.size() * 4, out.data()) ==
          EDGEATTN_ERR_BAD_WEIGHT_TYPE);
    const edgeattn_kv_cache_config storage_none{1, 1, 4, 4, EDGEATTN_DTYPE_NONE, 0, 0, 0};
    edgeattn_kv_cache cache{};
    CHECK(edgeattn_kv_cache_memory_size(&storage_none) == 0);
    CHECK(edgeattn_kv_cache_setup(&cache, &storage_none, memory.data(), memory.size() * 4) ==
          EDGEATTN_ERR_BAD_WEIGHT_TYPE);
    CHECK(std::memcmp(out.data(), out_before.data(), out.size() * 4) == 0);
    CHECK(std::memcmp(packed.data(), packed_before.data(), packed.size() * 4) == 0);
}

TEST_CASE("the sliding-window mask matches the float64 reference in sdpa, mha and the cache attend") {
    test_paths::path_guard guard;
    const std::size_t B = 2, Q = 37, K = 300, d = 8, h = 8, H = 2;
    const std::vector<float> q = random_floats(B * Q * d, 901), k = random_floats(B * K * d, 902),
                             v = random_floats(B * K * d, 903);
    const std::vector<float> Wq = random_floats(h * d, 904, 0.35f), Wk = random_floats(h * d, 905, 0.35f),
                             Wv = random_floats(h * d, 906, 0.35f), Wo = random_floats(h * h, 907, 0.35f);
    for (edgeattn_isa path : paths()) {
        REQUIRE(edgeattn_set_isa(path) == EDGEATTN_OK);
        for (std::size_t window : {std::size_t{1}, std::size_t{5}, std::size_t{40}, std::size_t{1000}, SIZE_MAX})
            for (bool causal : {false, true})
                for (bool with_weights : {false, true}) {
                    INFO(edgeattn_isa_name(path) << ", window " << window << (causal ? ", causal" : "")
                                                 << (with_weights ? ", weights" : ""));
                    edgeattn_attention_options o{};
                    o.mask.causal = causal;
                    o.mask.window = window;
                    edgeattn_ref::Mask ref;
                    ref.causal = causal;
                    ref.window = window;
                    const edgeattn_ref::ValidLens none;
                    std::vector<double> want(B * Q * d), want_w(B * H * Q * K);
                    std::vector<float> out(B * Q * d), attn(with_weights ? B * H * Q * K : 0);
                    const edgeattn_attention_dims sd{B, Q, K, d, d, d, 0, 0, 0, 0};
                    std::vector<float> ws(test_calls::workspace_bytes(EDGEATTN_OP_SDPA, sd, 4) / 4);
                    REQUIRE(edgeattn_sdpa(&sd, q.data(), k.data(), v.data(), &o, ws.data(), ws.size() * 4, out.data(),
                                          with_weights ? attn.data() : nullptr) == EDGEATTN_OK);
                    const std::vector<double> qd = test_paths::widen(q), kd = test_paths::widen(k),
                                              vd = test_paths::widen(v);
                    edgeattn_ref::dot_product_attention_masked(B, Q, K, d, d, qd.data(), kd.data(), vd.data(), none,
                                                               ref, want.data(), want_w.data());
                    CHECK(rel_l2(out.data(), want) < tolerance);
                    if (with_weights) {
                        want_w.resize(B * Q * K);
                        CHECK(rel_l2(attn.data(), want_w) < tolerance);
                    }
                    const edgeattn_attention_dims md{B, Q, K, d, d, d, h, H, 0, 0};
                    ws.assign(test_calls::workspace_bytes(EDGEATTN_OP_MHA, md, 4) / 4, 0.0f);
                    const edgeattn_weights w = test_calls::fp32_weights(Wq.data(), Wk.data(), Wv.data(), Wo.data());
                    attn.assign(with_weights ? B * H * Q * K : 0, 0.0f);
                    REQUIRE(edgeattn_mha(&md, q.data(), k.data(), v.data(), &w, &o, ws.data(), ws.size() * 4,
                                         out.data(), with_weights ? attn.data() : nullptr) == EDGEATTN_OK);
                    const std::vector<double> Wqd = test_paths::widen(Wq), Wkd = test_paths::widen(Wk),
                                              Wvd = test_paths::widen(Wv), Wod = test_paths::widen(Wo);
                    const edgeattn_ref::MhaWeights rw{Wqd.data(), Wkd.data(), Wvd.data(), Wod.data(),
                                                      nullptr,    nullptr,    nullptr,    nullptr};
                    want_w.assign(B * H * Q * K, 0.0);
                    edgeattn_ref::multi_head_attention_masked(B, Q, K, d, d, d, h, H, H, qd.data(), kd.data(),
                                                              vd.data(), none, ref, rw, want.data(), want_w.data());
                    CHECK(rel_l2(out.data(), want) < tolerance);
                    if (with_weights) CHECK(rel_l2(attn.data(), want_w) < tolerance);
                }
    }
    // The cache attend takes the window over its logical keys: run_stream's
    // mask 2 (causal, window 3) over wrapped rings, above.
}

// A store longer than the window, then a causal attend of all its tokens:
// query i (stream position T - Q + i) sees the held keys at or before its
// position, the sinks among them; one whose own token left the window and
// that has no sink before it sees nothing (d2l: uniform weights).
TEST_CASE("a causal attend after a store longer than the window sees the sinks at or before each query") {
    test_paths::path_guard guard;
    const std::size_t hs = 4;
    edgeattn_weights none{};
    none.W_q.type = none.W_k.type = none.W_v.type = none.W_o.type = EDGEATTN_DTYPE_NONE;
    for (edgeattn_isa isa : paths()) {
        REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
        for (edgeattn_dtype storage : storages)
            for (std::size_t S : {0, 1, 2})
                for (std::size_t W : {2, 3, 5})
                    for (std::size_t T : {W + 1, 2 * W + 3, 3 * W + 4}) {
                        INFO("isa " << edgeattn_isa_name(isa) << " storage " << storage << " S " << S << " W " << W
                                    << " T " << T);
                        window_cache cache(1, 1, hs, S, W, storage);
                        const std::size_t cap = S + W;
                        const edgeattn_attention_dims dims{1, T, cap, hs, hs, hs, hs, 1, 1, 0};
                        const std::vector<float> x = random_floats(T * hs, static_cast<unsigned>(S * 100 + W * 10 + T));
                        std::size_t bytes = step_workspace_bytes(dims, T, 1);
                        std::vector<float> ws(bytes / 4), out(T * hs), attn(T * cap);
                        REQUIRE(edgeattn_kv_cache_store(&cache.c, &dims, T, x.data(), x.data(), &none, nullptr,
                                                        ws.data(), bytes) == EDGEATTN_OK);
                        edgeattn_attention_options causal{};
                        causal.mask.causal = 1;
                        for (bool weights : {false, true}) {
                            REQUIRE(edgeattn_kv_cache_attend(&cache.c, &dims, x.data(), &none, &causal, ws.data(),
                                                             bytes, out.data(), weights ? attn.data() : nullptr) ==
                                    EDGEATTN_OK);
                            const std::vector<std::size_t> held = cache.held(T);
                            const std::vector<double> K = cache.rows(false, 0, held), V = cache.rows(true, 0, held);
                            std::vector<double> want(T * hs, 0.0), want_weights(T * cap, 0.0);
                            for (std::size_t i = 0; i < T; ++i) {
                                std::vector<double> score(held.size(), -1e6);
                                double top = -INFINITY;
                                for (std::size_t j = 0; j < held.size(); ++j) {
                                    if (held[j] <= i) {
                                        double dot = 0;
                                        for (std::size_t f = 0; f < hs; ++f) dot += double(x[i * hs + f]) * K[j * hs + f];
                                        score[j] = dot / 2.0;  // 1 / sqrt(4)
                                    }
                                    top = score[j] > top ? score[j] : top;
                                }
                                double sum = 0;
                                for (double &sc : score) sum += (sc = std::exp(sc - top));
                                for (std::size_t j = 0; j < held.size(); ++j) {
                                    want_weights[i * cap + j] = score[j] / sum;
                                    for (std::size_t f = 0; f < hs; ++f) want[i * hs + f] += score[j] / sum * V[j * hs + f];
                                }
                            }
                            CHECK(rel_l2(out.data(), want) < tolerance);
                            if (weights) CHECK(rel_l2(attn.data(), want_weights) < tolerance);
                        }
                    }
    }
}

// ALiBi far along an endless stream: the sinks lie 2^20, 2^25 and
// INT32_MAX - 1 positions behind the query, where -m |p_i - pos_j| alone
// is too large for a float to keep the differences between keys. A query
// that sees only the two sinks (key ranges, or causal once its own token
// left a window of one) still weighs them as the float64 formula does,
// EXCLUDE masking: softmax(q.k_j / sqrt(d) - m |p - j|), m = 2^-0.5.
TEST_CASE("ALiBi over a wrapped window cache's sinks holds the float64 weights at any stream position") {
    test_paths::path_guard guard;
    const std::size_t hs = 2, S = 2, W = 1, cap = S + W;
    const std::vector<float> keys{0.5f, -1.0f, 0.25f, 0.75f, 0.0f, 0.0f}, values{1.0f, 0.0f, 0.0f, 1.0f, 0.0f, 0.0f},
        later(2 * hs, 0.5f), query{0.8f, -0.3f};
    edgeattn_weights none{};
    none.W_q.type = none.W_k.type = none.W_v.type = none.W_o.type = EDGEATTN_DTYPE_NONE;
    const double slope = std::pow(2.0, -0.5);
    struct variant {
        bool causal;  // else key ranges [0, S)
        std::int64_t query_position;
    };
    const variant variants[] = {{false, std::int64_t{1} << 20}, {false, std::int64_t{1} << 25},
                                {false, INT32_MAX - 1},         {true, std::int64_t{1} << 20},
                                {true, std::int64_t{1} << 25},  {true, INT32_MAX - 2}};
    for (edgeattn_isa path : paths()) {
        REQUIRE(edgeattn_set_isa(path) == EDGEATTN_OK);
        for (const variant &v : variants) {
            const std::string what = std::string(edgeattn_isa_name(path)) + (v.causal ? ", causal" : ", key ranges") +
                                     ", query at " + std::to_string(v.query_position);
            INFO(what);
            window_cache cache(1, 1, hs, S, W, EDGEATTN_DTYPE_F32);
            const std::size_t T = v.causal ? 2 : 1;
            const edgeattn_attention_dims fill{1, 3, cap, hs, hs, hs, hs, 1, 1, 0}, step{1, T, cap, hs, hs, hs, hs, 1, 1, 0};
            std::vector<float> ws(step_workspace_bytes(fill, 3, 1) / 4 + step_workspace_bytes(step, T, 1) / 4);
            REQUIRE(edgeattn_kv_cache_store(&cache.c, &fill, 3, keys.data(), values.data(), &none, nullptr, ws.data(),
                                            ws.size() * 4) == EDGEATTN_OK);
            cache.c.positions[0] = static_cast<std::int32_t>(v.query_position);  // a cache copied that far along
            REQUIRE(edgeattn_kv_cache_store(&cache.c, &step, T, later.data(), later.data(), &none, nullptr, ws.data(),
                                            ws.size() * 4) == EDGEATTN_OK);
            const std::int32_t sinks_only[2] = {0, static_cast<std::int32_t>(S)};
            edgeattn_attention_mask mask{};
            mask.causal = v.causal;
            mask.ranges_kind = v.causal ? EDGEATTN_KEY_RANGES_NONE : EDGEATTN_KEY_RANGES_PER_BATCH;
            mask.key_ranges = v.causal ? nullptr : sinks_only;
            mask.alibi_max_bias = 0.5f;
            edgeattn_attention_options options = test_calls::options_of(nullptr, &mask);
            options.masking = EDGEATTN_MASKING_EXCLUDE;
            std::vector<float> queries(T * hs);
            for (std::size_t i = 0; i < T * hs; ++i) queries[i] = query[i % hs];
            std::vector<float> out(T * hs), weights(T * cap);
            REQUIRE(edgeattn_kv_cache_attend(&cache.c, &step, queries.data(), &none, &options, ws.data(), ws.size() * 4,
                                             out.data(), weights.data()) == EDGEATTN_OK);
            // Query 0 in float64: sink j at stream position j.
            double score[2], most = -INFINITY, sum = 0;
            for (std::size_t j = 0; j < S; ++j) {
                const double qk = static_cast<double>(query[0]) * keys[j * hs] + static_cast<double>(query[1]) * keys[j * hs + 1];
                score[j] = qk / std::sqrt(static_cast<double>(hs)) - slope * static_cast<double>(v.query_position - static_cast<std::int64_t>(j));
                most = std::max(most, score[j]);
            }
            for (double &s : score) sum += s = std::exp(s - most);
            for (std::size_t j = 0; j < S; ++j) {
                const double want = score[j] / sum;
                CHECK(std::fabs(weights[j] - want) <= 1e-6);
                CHECK(std::fabs(out[j] - want) <= 1e-6);  // value rows e_0 and e_1
            }
            CHECK(weights[S] == 0.0f);  // the window row: not seen
        }
    }
}

// Every mask rule over a wrapped window cache with sinks, alone and
// together, against a float64 model in which each held key has its stream
// position (sink j at j, the window at the stream's last W positions) and
// query i of a step of T at P_i = given - T + i: causal keeps pos_j <= P_i,
// a sliding window w keeps pos_j > P_i - w (a window wider than the ring
// reaches a sink only where its stream position is that close), a right
// window r keeps pos_j < P_i + r, key ranges keep indices, ALiBi adds
// -m |P_i - pos_j|. d2l's masking and EXCLUDE; steps longer than the ring,
// so some queries' own tokens have left it.
TEST_CASE("every mask rule over a wrapped window cache with sinks counts by stream position") {
    test_paths::path_guard guard;
    const std::size_t hs = 4, S = 2, W = 3, cap = S + W, T = 5;
    edgeattn_weights none{};
    none.W_q.type = none.W_k.type = none.W_v.type = none.W_o.type = EDGEATTN_DTYPE_NONE;
    const edgeattn_attention_dims dims{1, T, cap, hs, hs, hs, hs, 1, 1, 0};
    struct rules {
        bool causal;
        std::size_t window, right;
        bool ranges;
        float alibi;
    };
    std::vector<rules> all;
    for (bool causal : {false, true})
        for (std::size_t window : {0, 1, 3, 6, 8, 12})
            for (std::size_t right : {0, 1, 2, 4})
                for (bool ranges : {false, true})
                    for (float alibi : {0.0f, 1.0f}) all.push_back({causal, window, right, ranges, alibi});
    // Per query [start, end) by index: the sinks and part of the window.
    const std::vector<std::int32_t> ranges{0, 5, 1, 4, 0, 2, 2, 5, 1, 3};
    for (edgeattn_isa path : paths()) {
        REQUIRE(edgeattn_set_isa(path) == EDGEATTN_OK);
        window_cache cache(1, 1, hs, S, W, EDGEATTN_DTYPE_F32);
        std::vector<float> ws(step_workspace_bytes(dims, T, 1) / 4);
        for (std::size_t step = 0, given = T; step < 4; ++step, given += T) {
            const std::vector<float> kv = random_floats(T * hs, 900 + static_cast<unsigned>(step)),
                                     q = random_floats(T * hs, 950 + static_cast<unsigned>(step));
            REQUIRE(edgeattn_kv_cache_store(&cache.c, &dims, T, kv.data(), kv.data(), &none, nullptr, ws.data(),
                                            ws.size() * 4) == EDGEATTN_OK);
            const std::vector<std::size_t> held = cache.held(given);
            const std::vector<double> keys = cache.rows(false, 0, held), values = cache.rows(true, 0, held);
            const std::size_t L = held.size();
            for (const rules &r : all)
                for (bool exclude : {false, true}) {
                    const std::string what = std::string(edgeattn_isa_name(path)) + ", " + std::to_string(given) +
                                             " tokens, causal " + std::to_string(r.causal) + ", window " +
                                             std::to_string(r.window) + ", right " + std::to_string(r.right) +
                                             ", ranges " + std::to_string(r.ranges) + ", alibi " +
                                             std::to_string(r.alibi) + (exclude ? ", exclude" : ", d2l");
                    INFO(what);
                    edgeattn_attention_mask mask{};
                    mask.causal = r.causal;
                    mask.window = r.window;
                    mask.right_window = r.right;
                    mask.ranges_kind = r.ranges ? EDGEATTN_KEY_RANGES_PER_QUERY : EDGEATTN_KEY_RANGES_NONE;
                    mask.key_ranges = r.ranges ? ranges.data() : nullptr;
                    mask.alibi_max_bias = r.alibi;
                    edgeattn_attention_options options = test_calls::options_of(nullptr, &mask);
                    options.masking = exclude ? EDGEATTN_MASKING_EXCLUDE : EDGEATTN_MASKING_D2L;
                    std::vector<float> out(T * hs), weights(T * cap);
                    REQUIRE(edgeattn_kv_cache_attend(&cache.c, &dims, q.data(), &none, &options, ws.data(),
                                                     ws.size() * 4, out.data(), weights.data()) == EDGEATTN_OK);
                    const double slope = std::pow(2.0, -static_cast<double>(r.alibi));
                    for (std::size_t i = 0; i < T; ++i) {
                        const std::int64_t P = static_cast<std::int64_t>(given - T + i);
                        std::vector<double> score(L, -1e6);
                        std::vector<bool> seen(L);
                        double top = -INFINITY;
                        for (std::size_t j = 0; j < L; ++j) {
                            const std::int64_t pos = static_cast<std::int64_t>(held[j]);
                            seen[j] = (!r.ranges || (static_cast<std::int32_t>(j) >= ranges[2 * i] &&
                                                     static_cast<std::int32_t>(j) < ranges[2 * i + 1])) &&
                                      (!r.causal || pos <= P) &&
                                      (r.window == 0 || pos > P - static_cast<std::int64_t>(r.window)) &&
                                      (r.right == 0 || pos < P + static_cast<std::int64_t>(r.right));
                            if (seen[j]) {
                                double dot = 0;
                                for (std::size_t c = 0; c < hs; ++c) dot += static_cast<double>(q[i * hs + c]) * keys[j * hs + c];
                                score[j] = dot / std::sqrt(static_cast<double>(hs)) -
                                           (r.alibi > 0 ? slope * static_cast<double>(P > pos ? P - pos : pos - P) : 0.0);
                            }
                            if (seen[j] || !exclude) top = std::max(top, score[j]);
                        }
                        std::vector<double> want_w(cap, 0.0), want_out(hs, 0.0);
                        double sum = 0;
                        for (std::size_t j = 0; j < L; ++j)
                            if (seen[j] || !exclude) sum += want_w[j] = std::exp(score[j] - top);
                        for (std::size_t j = 0; j < L && sum > 0; ++j) {
                            want_w[j] /= sum;
                            for (std::size_t c = 0; c < hs; ++c) want_out[c] += want_w[j] * values[j * hs + c];
                        }
                        for (std::size_t j = 0; j < cap; ++j) CHECK(std::fabs(weights[i * cap + j] - want_w[j]) <= 1e-6);
                        for (std::size_t c = 0; c < hs; ++c) CHECK(std::fabs(out[i * hs + c] - want_out[c]) <= 1e-5);
                    }
                }
        }
    }
}
