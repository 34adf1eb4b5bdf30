// Every op gives bitwise-identical results for repeated calls and for 1, 2
// and 8 OpenMP threads: work is split by rows and heads, never across a
// reduction. Shapes are large enough that the library really starts a team.
#include <doctest/doctest.h>

#include <edgeattn/edgeattn.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "call_helpers.hpp"
#include "path_helpers.hpp"


namespace {

using test_calls::fp32_weights;
using test_calls::options_of;
using test_calls::workspace_bytes;
using test_paths::set_threads;

std::vector<float> random_floats(size_t n, unsigned seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-scale, scale);
    std::vector<float> v(n);
    for (float &x : v) x = u(rng);
    return v;
}

bool same_bits(const std::vector<float> &a, const std::vector<float> &b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

constexpr int thread_counts[] = {1, 2, 8, 1};


// Runs `op` (which fills its outputs) at each thread count and checks that
// every run equals the first bit for bit.
template <class Op>
void check_deterministic(const char *what, Op op) {
    std::vector<std::vector<float>> first;
    for (int threads : thread_counts) {
        set_threads(threads);
        std::vector<std::vector<float>> outputs = op();
        if (first.empty()) {
            first = outputs;
            continue;
        }
        for (size_t i = 0; i < outputs.size(); ++i) {
            INFO(std::string(what) << ": output " << i << " with " << threads << " threads");
            CHECK(same_bits(outputs[i], first[i]));
        }
    }
    set_threads(8);
}

}  // namespace

TEST_CASE("multi-head attention: same bits for 1, 2 and 8 threads, with and without weights") {
    const size_t B = 4, Q = 70, K = 300, h = 64, heads = 4;
    const edgeattn_attention_dims dims{B, Q, K, 48, 40, 56, h, heads, 0, 0};
    const auto q = random_floats(B * Q * 48, 1), k = random_floats(B * K * 40, 2), v = random_floats(B * K * 56, 3);
    const auto W_q = random_floats(h * 48, 4, 0.2f), W_k = random_floats(h * 40, 5, 0.2f),
               W_v = random_floats(h * 56, 6, 0.2f), W_o = random_floats(h * h, 7, 0.2f), bias = random_floats(h, 8);
    const edgeattn_weights w = fp32_weights(W_q.data(), W_k.data(), W_v.data(), W_o.data(), bias.data(), bias.data(),
                                            bias.data(), bias.data());
    std::vector<int32_t> lens(B * Q);
    for (size_t i = 0; i < lens.size(); ++i) lens[i] = static_cast<int32_t>((i * 37) % (K + 20));
    const edgeattn_valid_lens vl{EDGEATTN_VALID_LENS_PER_QUERY, lens.data()};
    const edgeattn_attention_options opt = options_of(&vl, nullptr);
    std::vector<float> ws(workspace_bytes(EDGEATTN_OP_MHA, dims, 8) / sizeof(float));
    for (bool with_weights : {true, false}) {
        check_deterministic(with_weights ? "mha with weights" : "mha streaming", [&] {
            std::vector<float> out(B * Q * h), attn(with_weights ? B * heads * Q * K : 0);
            REQUIRE(edgeattn_mha(&dims, q.data(), k.data(), v.data(), &w, &opt, ws.data(), ws.size() * sizeof(float),
                                 out.data(), with_weights ? attn.data() : nullptr) == EDGEATTN_OK);
            return std::vector<std::vector<float>>{out, attn};
        });
    }
}

TEST_CASE("dot-product and additive attention, softmax, positional add: same bits for any thread count") {
    const size_t B = 3, Q = 50, K = 400, d = 32, dv = 24, hidden = 16;
    const auto q = random_floats(B * Q * d, 11), k = random_floats(B * K * d, 12), v = random_floats(B * K * dv, 13);
    const std::vector<int32_t> lens{400, 0, 123};
    const edgeattn_valid_lens vl{EDGEATTN_VALID_LENS_PER_BATCH, lens.data()};
    const edgeattn_attention_options opt = options_of(&vl, nullptr);

    const edgeattn_attention_dims dot_dims{B, Q, K, d, d, dv, 0, 0, 0, 0};
    std::vector<float> dot_ws(workspace_bytes(EDGEATTN_OP_SDPA, dot_dims, 8) / sizeof(float));
    check_deterministic("dot product", [&] {
        std::vector<float> out(B * Q * dv), attn(B * Q * K), out_streaming(B * Q * dv);
        REQUIRE(edgeattn_sdpa(&dot_dims, q.data(), k.data(), v.data(), &opt, dot_ws.data(),
                              dot_ws.size() * sizeof(float), out.data(), attn.data()) == EDGEATTN_OK);
        REQUIRE(edgeattn_sdpa(&dot_dims, q.data(), k.data(), v.data(), &opt, dot_ws.data(),
                              dot_ws.size() * sizeof(float), out_streaming.data(), nullptr) == EDGEATTN_OK);
        return std::vector<std::vector<float>>{out, attn, out_streaming};
    });

    const edgeattn_attention_dims add_dims{B, Q, K, d, d, dv, hidden, 0, 0, 0};
    const auto W_q = random_floats(hidden * d, 14), W_k = random_floats(hidden * d, 15), w_v = random_floats(hidden, 16);
    const edgeattn_weights aw = fp32_weights(W_q.data(), W_k.data(), w_v.data(), nullptr);
    std::vector<float> add_ws(workspace_bytes(EDGEATTN_OP_ADDITIVE, add_dims, 8) / sizeof(float));
    check_deterministic("additive", [&] {
        std::vector<float> out(B * Q * dv), attn(B * Q * K);
        REQUIRE(edgeattn_additive(&add_dims, q.data(), k.data(), v.data(), &aw, &opt, add_ws.data(),
                                  add_ws.size() * sizeof(float), out.data(), attn.data()) == EDGEATTN_OK);
        return std::vector<std::vector<float>>{out, attn};
    });

    const edgeattn_softmax_dims sdims{B, Q, K};
    const auto x = random_floats(B * Q * K, 17, 20.0f);
    check_deterministic("masked softmax", [&] {
        std::vector<float> y(B * Q * K);
        REQUIRE(edgeattn_masked_softmax(&sdims, x.data(), &vl, y.data()) == EDGEATTN_OK);
        return std::vector<std::vector<float>>{y};
    });

    std::vector<float> P(1000 * 64);
    REQUIRE(edgeattn_positional_encoding_table(1000, 64, P.data()) == EDGEATTN_OK);
    const auto X = random_floats(16 * 1000 * 64, 18);
    check_deterministic("positional add", [&] {
        std::vector<float> Y(X.size());
        REQUIRE(edgeattn_positional_encoding_add_at(16, 1000, 64, 0, X.data(), P.data(), 1000, Y.data()) == EDGEATTN_OK);
        return std::vector<std::vector<float>>{Y};
    });
}

TEST_CASE("self-attention, per-query softmax, sequence mask, positional table, C++ module: same bits") {
    const size_t B = 2, n = 150, d = 64, heads = 8;
    const auto X = random_floats(B * n * d, 21);
    const auto W_q = random_floats(d * d, 22, 0.2f), W_k = random_floats(d * d, 23, 0.2f),
               W_v = random_floats(d * d, 24, 0.2f), W_o = random_floats(d * d, 25, 0.2f), bias = random_floats(d, 26);
    const edgeattn_weights w =
        fp32_weights(W_q.data(), W_k.data(), W_v.data(), W_o.data(), bias.data(), nullptr, bias.data());
    // self-attention: X as queries, keys and values
    const edgeattn_attention_dims dims{B, n, n, d, d, d, d, heads, 0, 0};
    std::vector<int32_t> lens(B * n);
    for (size_t i = 0; i < lens.size(); ++i) lens[i] = static_cast<int32_t>((i * 53) % (n + 9));
    const edgeattn_valid_lens vl{EDGEATTN_VALID_LENS_PER_QUERY, lens.data()};
    const edgeattn_attention_options opt = options_of(&vl, nullptr);
    std::vector<float> ws(workspace_bytes(EDGEATTN_OP_MHA, dims, 8) / sizeof(float));
    check_deterministic("self-attention", [&] {
        std::vector<float> out(B * n * d), attn(B * heads * n * n), out_streaming(B * n * d);
        REQUIRE(edgeattn_mha(&dims, X.data(), X.data(), X.data(), &w, &opt, ws.data(), ws.size() * sizeof(float),
                             out.data(), attn.data()) == EDGEATTN_OK);
        REQUIRE(edgeattn_mha(&dims, X.data(), X.data(), X.data(), &w, &opt, ws.data(), ws.size() * sizeof(float),
                             out_streaming.data(), nullptr) == EDGEATTN_OK);
        return std::vector<std::vector<float>>{out, attn, out_streaming};
    });

    const size_t K = 700;
    const auto scores = random_floats(B * n * K, 27, 30.0f);
    const edgeattn_softmax_dims sdims{B, n, K};
    check_deterministic("masked softmax, per-query lengths, and in place", [&] {
        std::vector<float> y(scores.size()), z = scores;
        REQUIRE(edgeattn_masked_softmax(&sdims, scores.data(), &vl, y.data()) == EDGEATTN_OK);
        REQUIRE(edgeattn_masked_softmax(&sdims, z.data(), &vl, z.data()) == EDGEATTN_OK);
        return std::vector<std::vector<float>>{y, z};
    });
    check_deterministic("sequence mask", [&] {
        std::vector<float> y(scores.size());
        REQUIRE(edgeattn_sequence_mask(B * n, K, scores.data(), lens.data(), -1e6f, y.data()) == EDGEATTN_OK);
        return std::vector<std::vector<float>>{y};
    });
    check_deterministic("positional table", [&] {
        std::vector<float> P(2000 * 96);
        REQUIRE(edgeattn_positional_encoding_table(2000, 96, P.data()) == EDGEATTN_OK);
        return std::vector<std::vector<float>>{P};
    });
}

TEST_CASE("decoder: causal masked MHA with GQA and bias, and KV-cache decode steps: same bits for any thread count") {
    const size_t B = 2, Q = 300, h = 64, heads = 4, kv = 2, d = 32;
    const edgeattn_attention_dims dims{B, Q, Q, d, d, d, h, heads, kv, 0};
    const auto x = random_floats(B * Q * d, 11), W_q = random_floats(h * d, 12, 0.2f), W_kv = random_floats(32 * d, 13, 0.2f),
               W_o = random_floats(h * h, 14, 0.2f), bias = random_floats(heads * Q * Q, 15);
    const edgeattn_weights w = fp32_weights(W_q.data(), W_kv.data(), W_kv.data(), W_o.data());
    const edgeattn_attention_mask mask{1, EDGEATTN_KEY_RANGES_NONE, nullptr, bias.data(), 1, heads, 0, 0, EDGEATTN_ALIGN_BOTTOM_RIGHT, 0, 0.0f};
    const edgeattn_attention_options masked = options_of(nullptr, &mask);
    std::vector<float> ws(workspace_bytes(EDGEATTN_OP_MHA, dims, 8) / sizeof(float));
    check_deterministic("masked mha", [&] {
        std::vector<float> out(B * Q * h);
        REQUIRE(edgeattn_mha(&dims, x.data(), x.data(), x.data(), &w, &masked, ws.data(), ws.size() * sizeof(float),
                             out.data(), nullptr) == EDGEATTN_OK);
        return std::vector<std::vector<float>>{out};
    });
    const size_t capacity = 320;
    const edgeattn_attention_dims cache_dims{B, 3, capacity, d, d, d, h, heads, kv, 0};
    const edgeattn_kv_cache_config config{B, kv, h / heads, capacity, EDGEATTN_DTYPE_F32, 0, 0, 0};
    std::vector<float> memory(edgeattn_kv_cache_memory_size(&config) / 4);
    std::vector<float> cws(workspace_bytes(EDGEATTN_OP_KV_CACHE_STORE, cache_dims, 8, Q) / 4 +
                           workspace_bytes(EDGEATTN_OP_KV_CACHE_ATTEND, cache_dims, 8) / 4);
    check_deterministic("kv cache decode", [&] {
        edgeattn_kv_cache cache;
        REQUIRE(edgeattn_kv_cache_setup(&cache, &config, memory.data(), memory.size() * 4) == EDGEATTN_OK);
        REQUIRE(edgeattn_kv_cache_store(&cache, &cache_dims, Q - 3, x.data(), x.data(), &w, nullptr, cws.data(),
                                        cws.size() * 4) == EDGEATTN_OK);
        std::vector<float> step(B * 3 * d, 0.25f), out(B * 3 * h), attn(B * heads * 3 * capacity);
        REQUIRE(edgeattn_kv_cache_store(&cache, &cache_dims, 3, step.data(), step.data(), &w, nullptr, cws.data(),
                                        cws.size() * 4) == EDGEATTN_OK);
        const edgeattn_attention_mask causal_mask{1, EDGEATTN_KEY_RANGES_NONE, nullptr, nullptr, 0, 0, 0, 0, EDGEATTN_ALIGN_BOTTOM_RIGHT, 0, 0.0f};
        const edgeattn_attention_options causal = options_of(nullptr, &causal_mask);
        REQUIRE(edgeattn_kv_cache_attend(&cache, &cache_dims, step.data(), &w, &causal, cws.data(), cws.size() * 4,
                                         out.data(), attn.data()) == EDGEATTN_OK);
        return std::vector<std::vector<float>>{out, attn};
    });
}

TEST_CASE("reduced precision: int8 / fp16 weights and an int8 KV cache give the same bits for any thread count") {
    const size_t B = 2, Q = 200, h = 64, heads = 4, kv = 2, d = 32, capacity = 210;
    const edgeattn_attention_dims dims{B, Q, Q, d, d, d, h, heads, kv, 0};
    const auto x = random_floats(B * Q * d, 21), W_q = random_floats(h * d, 22, 0.2f), W_kv = random_floats(32 * d, 23, 0.2f),
               W_o = random_floats(h * h, 24, 0.2f);
    std::vector<std::int8_t> q8(h * d), o8(h * h);
    std::vector<float> q_scales(h), o_scales(h);
    std::vector<std::uint16_t> kv16(32 * d);
    REQUIRE(edgeattn_quantize_int8(h, d, W_q.data(), q8.data(), q_scales.data()) == EDGEATTN_OK);
    REQUIRE(edgeattn_quantize_int8(h, h, W_o.data(), o8.data(), o_scales.data()) == EDGEATTN_OK);
    REQUIRE(edgeattn_float_to_half(32 * d, W_kv.data(), kv16.data()) == EDGEATTN_OK);
    const edgeattn_weights w{{EDGEATTN_DTYPE_INT8, q8.data(), q_scales.data()},
                             {EDGEATTN_DTYPE_F16, kv16.data(), nullptr},
                             {EDGEATTN_DTYPE_F16, kv16.data(), nullptr},
                             {EDGEATTN_DTYPE_INT8, o8.data(), o_scales.data()},
                             nullptr, nullptr, nullptr, nullptr};
    const edgeattn_attention_mask causal_mask{1, EDGEATTN_KEY_RANGES_NONE, nullptr, nullptr, 0, 0, 0, 0, EDGEATTN_ALIGN_BOTTOM_RIGHT, 0, 0.0f};
    const edgeattn_attention_options causal = options_of(nullptr, &causal_mask);
    std::vector<float> ws(workspace_bytes(EDGEATTN_OP_MHA, dims, 8) / sizeof(float));
    check_deterministic("int8 / fp16 mha", [&] {
        std::vector<float> out(B * Q * h);
        REQUIRE(edgeattn_mha(&dims, x.data(), x.data(), x.data(), &w, &causal, ws.data(), ws.size() * sizeof(float),
                             out.data(), nullptr) == EDGEATTN_OK);
        return std::vector<std::vector<float>>{out};
    });
    const edgeattn_attention_dims cache_dims{B, 3, capacity, d, d, d, h, heads, kv, 0};
    const edgeattn_kv_cache_config config{B, kv, h / heads, capacity, EDGEATTN_DTYPE_INT8, 0, 0, 0};
    std::vector<float> memory(edgeattn_kv_cache_memory_size(&config) / 4);
    std::vector<float> cws(workspace_bytes(EDGEATTN_OP_KV_CACHE_STORE, cache_dims, 8, Q) / 4 +
                           workspace_bytes(EDGEATTN_OP_KV_CACHE_ATTEND, cache_dims, 8) / 4);
    check_deterministic("int8 kv cache decode", [&] {
        edgeattn_kv_cache cache;
        REQUIRE(edgeattn_kv_cache_setup(&cache, &config, memory.data(), memory.size() * 4) == EDGEATTN_OK);
        REQUIRE(edgeattn_kv_cache_store(&cache, &cache_dims, Q - 3, x.data(), x.data(), &w, nullptr, cws.data(),
                                        cws.size() * 4) == EDGEATTN_OK);
        std::vector<float> step(B * 3 * d, 0.25f), out(B * 3 * h), attn(B * heads * 3 * capacity);
        REQUIRE(edgeattn_kv_cache_store(&cache, &cache_dims, 3, step.data(), step.data(), &w, nullptr, cws.data(),
                                        cws.size() * 4) == EDGEATTN_OK);
        REQUIRE(edgeattn_kv_cache_attend(&cache, &cache_dims, step.data(), &w, &causal, cws.data(), cws.size() * 4,
                                         out.data(), attn.data()) == EDGEATTN_OK);
        return std::vector<std::vector<float>>{out, attn};
    });
}

// The row splits of the two tests above leave every softmax row in a group
// of the same rows at any thread count (one thread, or blocks that start at
// the same multiples of 16). These shapes do not: 2 threads cut the softmax
// at row 594 = 37 * 16 + 2 and the attention's 42 queries at row 24, so some
// rows sit in groups of 2 where one thread puts them in groups of 16, and
// per-query valid lengths from 0 to past `keys` give rows of one batch or
// less beside longer rows. A row's bits must not depend on its neighbours.
TEST_CASE("softmax rows cut at other places by other thread counts: same bits") {
    const size_t B = 2, Q = 594, K = 600;
    const auto x = random_floats(B * Q * K, 31, 25.0f);
    std::vector<int32_t> lens(B * Q);
    for (size_t i = 0; i < lens.size(); ++i) lens[i] = static_cast<int32_t>((i * 37) % (K + 9)) / (i % 3 ? 1 : 40);
    const edgeattn_valid_lens vl{EDGEATTN_VALID_LENS_PER_QUERY, lens.data()};
    const edgeattn_softmax_dims sdims{B, Q, K};
    check_deterministic("masked softmax, rows cut at 16k + 2", [&] {
        std::vector<float> y(x.size());
        REQUIRE(edgeattn_masked_softmax(&sdims, x.data(), &vl, y.data()) == EDGEATTN_OK);
        return std::vector<std::vector<float>>{y};
    });

    const size_t queries = 42, keys = 2000, d = 64;
    const auto q = random_floats(queries * d, 32, 3.0f), k = random_floats(keys * d, 33), v = random_floats(keys * d, 34);
    std::vector<int32_t> qlens(queries);
    for (size_t i = 0; i < queries; ++i) qlens[i] = static_cast<int32_t>(i < 36 ? 100 + 50 * i : i - 30);
    const edgeattn_valid_lens qvl{EDGEATTN_VALID_LENS_PER_QUERY, qlens.data()};
    const edgeattn_attention_options qopt = options_of(&qvl, nullptr);
    const edgeattn_attention_dims dims{1, queries, keys, d, d, d, 0, 0, 0, 0};
    std::vector<float> ws(workspace_bytes(EDGEATTN_OP_SDPA, dims, 8) / sizeof(float));
    check_deterministic("dot product with weights, queries cut at 24", [&] {
        std::vector<float> out(queries * d), attn(queries * keys);
        REQUIRE(edgeattn_sdpa(&dims, q.data(), k.data(), v.data(), &qopt, ws.data(), ws.size() * sizeof(float),
                              out.data(), attn.data()) == EDGEATTN_OK);
        return std::vector<std::vector<float>>{out, attn};
    });
}

// A decode step (one query token) splits each key/value head's keys into
// chunks fixed by the number of keys and folds their partial softmaxes in
// chunk order; threads take chunks when there are fewer heads than threads.
// So 1, 2, 3, 4 and 7 threads, more threads than chunks, and workspaces
// sized for 1, 2, 3 or 16 threads (or a few bytes more) give the same bits:
// multi-query and grouped heads, fp32 / fp16 / int8 caches, a wrapped window
// cache with sinks, a bias and a mask window that leaves chunks unseen, odd
// key counts, every path.
TEST_CASE("decode step split over its keys: same bits for any thread count and workspace size, every path") {
    const test_paths::path_guard restore;
    const size_t heads = 8, head_size = 64, h = heads * head_size;
    const auto bias = random_floats(heads * 1501, 41);
    struct variant {
        size_t kv, capacity, tokens, window, sinks;
        edgeattn_dtype storage;
        bool masked;
    };
    const variant variants[] = {{1, 1501, 1501, 0, 0, EDGEATTN_DTYPE_F32, false},
                                {1, 1501, 1499, 0, 0, EDGEATTN_DTYPE_F32, true},
                                {2, 1300, 1300, 0, 0, EDGEATTN_DTYPE_F16, true},
                                {1, 1300, 1037, 0, 0, EDGEATTN_DTYPE_INT8, false},
                                {8, 700, 700, 0, 0, EDGEATTN_DTYPE_F32, true},
                                {1, 1204, 1900, 1200, 4, EDGEATTN_DTYPE_F32, false},
                                {2, 1204, 1700, 1200, 4, EDGEATTN_DTYPE_INT8, true}};
    for (edgeattn_isa isa : test_paths::paths()) {
        REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
        for (const variant &v : variants) {
            const size_t h_kv = v.kv * head_size;
            const edgeattn_attention_dims dims{1, 1, v.capacity, h, h_kv, h_kv, h, heads, v.kv, 0};
            const edgeattn_kv_cache_config config{1, v.kv, head_size, v.capacity, v.storage, v.window, v.sinks, 0};
            std::vector<float> memory(edgeattn_kv_cache_memory_size(&config) / 4);
            edgeattn_kv_cache cache;
            REQUIRE(edgeattn_kv_cache_setup(&cache, &config, memory.data(), memory.size() * 4) == EDGEATTN_OK);
            edgeattn_weights none{};
            none.W_q.type = none.W_k.type = none.W_v.type = none.W_o.type = EDGEATTN_DTYPE_NONE;
            const auto kv = random_floats(v.tokens * h_kv, 42), q = random_floats(h, 43, 2.0f);
            std::vector<float> sws(workspace_bytes(EDGEATTN_OP_KV_CACHE_STORE, dims, 1, v.tokens) / 4 + 1);
            REQUIRE(edgeattn_kv_cache_store(&cache, &dims, v.tokens, kv.data(), kv.data(), &none, nullptr, sws.data(),
                                            sws.size() * 4) == EDGEATTN_OK);
            edgeattn_attention_mask mask{};
            mask.bias = bias.data();
            mask.bias_heads = heads;
            mask.bias_keys = 1501;
            mask.window = 450;
            const edgeattn_attention_options options = options_of(nullptr, &mask);
            std::vector<float> first;
            for (size_t sized_for : {1, 2, 3, 16})
                for (size_t extra : {0, 12})
                    for (int threads : {1, 2, 3, 4, 7}) {
                        set_threads(threads);
                        std::vector<float> ws((workspace_bytes(EDGEATTN_OP_KV_CACHE_ATTEND, dims, sized_for) + extra) / 4);
                        std::vector<float> out(h);
                        REQUIRE(edgeattn_kv_cache_attend(&cache, &dims, q.data(), &none, v.masked ? &options : nullptr,
                                                         ws.data(), ws.size() * 4, out.data(), nullptr) == EDGEATTN_OK);
                        for (float x : out) REQUIRE(std::isfinite(x));
                        if (first.empty()) {
                            first = out;
                            continue;
                        }
                        INFO("path " << static_cast<int>(isa) << ", kv heads " << v.kv << ", capacity " << v.capacity
                                     << ", workspace for " << sized_for << " + " << extra << " bytes, " << threads
                                     << " threads");
                        CHECK(same_bits(out, first));
                    }
        }
    }
    set_threads(8);
}

// Head sizes above the products' 256-feature depth block: each block of
// features adds to the scores, and a key's columns may fall in a full or an
// edge tile of the product depending on which keys the rows beside it see
// (and so on how the thread count cut the rows). The operations per key
// are the same in either, so 1 to 8 threads give the same bits: sdpa with
// whole rows of scores (K <= 256, or the weights requested), multi-head
// attention, a cache attend and a wrapped window cache with sinks, on
// every path.
TEST_CASE("head sizes above 256: same bits for 1 to 8 threads, every path") {
    const test_paths::path_guard restore;
    const edgeattn_attention_mask causal_mask{1, EDGEATTN_KEY_RANGES_NONE, nullptr, nullptr, 0, 0, 0, 0,
                                              EDGEATTN_ALIGN_BOTTOM_RIGHT, 0, 0.0f};
    const edgeattn_attention_options causal = options_of(nullptr, &causal_mask);
    edgeattn_weights none{};
    none.W_q.type = none.W_k.type = none.W_v.type = none.W_o.type = EDGEATTN_DTYPE_NONE;
    // Runs `op` at 1..8 threads on one path; every run must equal the first.
    auto same_for_all_threads = [](const std::string &what, auto op) {
        std::vector<std::vector<float>> first;
        for (int threads = 1; threads <= 8; ++threads) {
            set_threads(threads);
            const std::vector<std::vector<float>> outputs = op();
            if (first.empty()) first = outputs;
            for (size_t i = 0; i < outputs.size(); ++i) {
                INFO(what << ": output " << i << " with " << threads << " threads");
                CHECK(same_bits(outputs[i], first[i]));
            }
        }
        set_threads(8);
    };
    for (edgeattn_isa isa : test_paths::paths()) {
        REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
        const std::string path = "path " + std::to_string(static_cast<int>(isa));
        for (size_t d : {257, 300, 512, 1000}) {
            for (size_t K : {200, 300}) {  // 300 keys: whole rows because the weights are requested
                const size_t Q = 200, dv = 24;
                const edgeattn_attention_dims dims{1, Q, K, d, d, dv, 0, 0, 0, 0};
                const auto q = random_floats(Q * d, 61), k = random_floats(K * d, 62), v = random_floats(K * dv, 63);
                std::vector<float> ws(workspace_bytes(EDGEATTN_OP_SDPA, dims, 8) / sizeof(float));
                same_for_all_threads(path + ", sdpa d " + std::to_string(d) + ", K " + std::to_string(K), [&] {
                    std::vector<float> out(Q * dv), attn(K > 256 ? Q * K : 0);
                    REQUIRE(edgeattn_sdpa(&dims, q.data(), k.data(), v.data(), &causal, ws.data(),
                                          ws.size() * sizeof(float), out.data(), attn.empty() ? nullptr : attn.data()) ==
                            EDGEATTN_OK);
                    return std::vector<std::vector<float>>{out, attn};
                });
            }
        }
        {  // two heads of 512, the rows as given
            const size_t Q = 160, h = 1024, heads = 2;
            const edgeattn_attention_dims dims{1, Q, Q, h, h, h, h, heads, 0, 0};
            const auto x = random_floats(Q * h, 64);
            std::vector<float> ws(workspace_bytes(EDGEATTN_OP_MHA, dims, 8) / sizeof(float));
            same_for_all_threads(path + ", mha heads of 512", [&] {
                std::vector<float> out(Q * h);
                REQUIRE(edgeattn_mha(&dims, x.data(), x.data(), x.data(), &none, &causal, ws.data(),
                                     ws.size() * sizeof(float), out.data(), nullptr) == EDGEATTN_OK);
                return std::vector<std::vector<float>>{out};
            });
        }
        struct cache_case {
            size_t head_size, capacity, stored, window, sinks;
            edgeattn_dtype storage;
        };
        for (const cache_case &c :
             {cache_case{512, 180, 150, 0, 0, EDGEATTN_DTYPE_F32}, cache_case{512, 180, 150, 0, 0, EDGEATTN_DTYPE_F16},
              cache_case{512, 180, 150, 0, 0, EDGEATTN_DTYPE_INT8}, cache_case{264, 102, 230, 100, 2, EDGEATTN_DTYPE_F32},
              cache_case{264, 102, 230, 100, 2, EDGEATTN_DTYPE_INT8}}) {
            const size_t Q = 40, h = c.head_size;
            const edgeattn_attention_dims dims{1, Q, c.capacity, h, h, h, h, 1, 1, 0};
            const edgeattn_kv_cache_config config{1, 1, h, c.capacity, c.storage, c.window, c.sinks, 0};
            std::vector<float> memory(edgeattn_kv_cache_memory_size(&config) / 4);
            edgeattn_kv_cache cache;
            REQUIRE(edgeattn_kv_cache_setup(&cache, &config, memory.data(), memory.size() * 4) == EDGEATTN_OK);
            const auto kv = random_floats(c.stored * h, 65), q = random_floats(Q * h, 66);
            std::vector<float> sws(workspace_bytes(EDGEATTN_OP_KV_CACHE_STORE, dims, 1, c.stored) / 4 + 1);
            REQUIRE(edgeattn_kv_cache_store(&cache, &dims, c.stored, kv.data(), kv.data(), &none, nullptr, sws.data(),
                                            sws.size() * 4) == EDGEATTN_OK);
            std::vector<float> ws(workspace_bytes(EDGEATTN_OP_KV_CACHE_ATTEND, dims, 8) / sizeof(float));
            same_for_all_threads(path + ", cache attend, head size " + std::to_string(h) + ", storage " +
                                     std::to_string(static_cast<int>(c.storage)), [&] {
                std::vector<float> out(Q * h);
                REQUIRE(edgeattn_kv_cache_attend(&cache, &dims, q.data(), &none, &causal, ws.data(),
                                                 ws.size() * sizeof(float), out.data(), nullptr) == EDGEATTN_OK);
                return std::vector<std::vector<float>>{out};
            });
        }
    }
}
