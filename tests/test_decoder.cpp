// The decoder side (masks and grouped-query heads of edgeattn/attention.h,
// edgeattn/kv_cache.h, edgeattn/dense.h) against the float64 reference, on
// shapes the golden cases are too small for, on every kernel path this CPU
// runs: causal / windowed / biased attention over more keys than one key
// block (the streaming path, its skipped blocks and the rows a diagonal
// block skips), grouped-query heads, decode steps over a long cache (keys
// and values read in place), and the dense layer entry points. Then every
// refusal the decoder calls make: own status, nothing written.
#include <doctest/doctest.h>

#include <edgeattn/edgeattn.h>

#include "call_helpers.hpp"
#include "path_helpers.hpp"
#include "reference.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using edgeattn_ref::Mask;
using edgeattn_ref::ValidLens;
using test_calls::dense_workspace_bytes;
using test_calls::f32;
using test_calls::fp32_weights;
using test_calls::options_of;
using test_calls::request;
using test_calls::workspace_bytes;
using test_paths::path_guard;
using test_paths::paths;
using test_paths::random_floats;
using test_paths::rel_l2;
using test_paths::widen;

namespace {

// Whether a status's text contains `words`: the refusal names its case.
bool says(edgeattn_status status, const char *words) {
    return std::strstr(edgeattn_status_str(status), words) != nullptr;
}

// Multi-head weights: float for the library, double for the reference.
struct mha_model {
    std::size_t q, k, v, h, H, Hkv;
    std::vector<float> W[4], b[4];
    mha_model(std::size_t q_, std::size_t k_, std::size_t v_, std::size_t h_, std::size_t H_, std::size_t Hkv_,
              unsigned seed)
        : q(q_), k(k_), v(v_), h(h_), H(H_), Hkv(Hkv_) {
        const std::size_t hkv = Hkv * (h / H), rows[4] = {h, hkv, hkv, h}, cols[4] = {q, k, v, h};
        for (int i = 0; i < 4; ++i) {
            W[i] = random_floats(rows[i] * cols[i], seed + i, 1.0f / std::sqrt(static_cast<float>(cols[i])));
            b[i] = random_floats(rows[i], seed + 10 + i, 0.1f);
        }
    }
    edgeattn_weights weights() const {
        return fp32_weights(W[0].data(), W[1].data(), W[2].data(), W[3].data(), b[0].data(), b[1].data(),
                            b[2].data(), b[3].data());
    }
    std::vector<double> Wd[4], bd[4];
    edgeattn_ref::MhaWeights reference() {
        for (int i = 0; i < 4; ++i) {
            Wd[i] = widen(W[i]);
            bd[i] = widen(b[i]);
        }
        return {Wd[0].data(), Wd[1].data(), Wd[2].data(), Wd[3].data(),
                bd[0].data(), bd[1].data(), bd[2].data(), bd[3].data()};
    }
    edgeattn_attention_dims dims(std::size_t B, std::size_t Q, std::size_t K) const {
        return {B, Q, K, q, k, v, h, H, Hkv, 0};
    }
};

// The C view of a reference mask (ranges and bias as floats / int32 the
// library reads).
struct c_mask {
    std::vector<std::int32_t> ranges;
    std::vector<float> bias;
    edgeattn_attention_mask m{};
    edgeattn_attention_options options() const { return options_of(nullptr, &m); }
    explicit c_mask(const Mask &r) : ranges(r.ranges), bias(r.bias.begin(), r.bias.end()) {
        m.causal = r.causal;
        m.ranges_kind = r.ranges_kind == Mask::none        ? EDGEATTN_KEY_RANGES_NONE
                        : r.ranges_kind == Mask::per_batch ? EDGEATTN_KEY_RANGES_PER_BATCH
                                                           : EDGEATTN_KEY_RANGES_PER_QUERY;
        m.key_ranges = ranges.empty() ? nullptr : ranges.data();
        m.bias = bias.empty() ? nullptr : bias.data();
        m.bias_batch = r.bias_batch;
        m.bias_heads = r.bias_heads;
        m.bias_keys = r.bias_keys;
    }
};

// Bias values rounded to float, so both sides add the same numbers.
void float_bias(Mask &m, std::size_t n, unsigned seed) {
    const std::vector<float> f = random_floats(n, seed, 0.5f);
    m.bias.assign(f.begin(), f.end());
}

// A sliding window of w keys per query row, for Q queries at the last Q of K positions.
void window_ranges(Mask &m, std::size_t B, std::size_t Q, std::size_t K, std::int32_t w) {
    m.ranges_kind = Mask::per_query;
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t i = 0; i < Q; ++i) {
            const std::int32_t pos = static_cast<std::int32_t>(i + K - Q);
            m.ranges.push_back(pos - w + 1 > 0 ? pos - w + 1 : 0);
            m.ranges.push_back(pos + 1);
        }
}

struct mha_shape {
    const char *name;
    std::size_t B, Q, K, q, h, H, Hkv;
    bool causal, window, bias_per_head, with_weights;
};

TEST_CASE("masked multi-head attention over many key blocks matches the float64 reference on every path") {
    path_guard guard;
    const mha_shape shapes[] = {
        // causal self-attention over 3 key blocks, row blocks of 256: the
        // streaming path skips the blocks above the diagonal
        {"causal 600", 1, 600, 600, 16, 16, 2, 2, true, false, false, false},
        {"causal 600 weights", 1, 600, 600, 16, 16, 2, 1, true, false, true, true},
        {"window 300 gqa", 2, 300, 300, 12, 24, 4, 2, true, true, true, false},
        {"cross causal Q<K", 1, 70, 520, 8, 16, 4, 4, true, false, false, false},
    };
    for (const mha_shape &sh : shapes) {
        mha_model model(sh.q, sh.q, sh.q, sh.h, sh.H, sh.Hkv, 7);
        const std::vector<float> x = random_floats(sh.B * sh.K * sh.q, 3), xq = random_floats(sh.B * sh.Q * sh.q, 4);
        const float *queries = sh.Q == sh.K ? x.data() : xq.data();
        Mask mask;
        mask.causal = sh.causal;
        if (sh.window) window_ranges(mask, sh.B, sh.Q, sh.K, 37);
        if (sh.bias_per_head) {
            mask.bias_heads = sh.H;
            mask.bias_keys = sh.K;
            float_bias(mask, sh.H * sh.Q * sh.K, 5);
        }
        std::vector<double> want(sh.B * sh.Q * sh.h), want_w(sh.B * sh.H * sh.Q * sh.K);
        const std::vector<double> xd = widen(x), xqd = widen(xq);
        edgeattn_ref::multi_head_attention_masked(sh.B, sh.Q, sh.K, sh.q, sh.q, sh.q, sh.h, sh.H, sh.Hkv,
                                                  sh.Q == sh.K ? xd.data() : xqd.data(), xd.data(), xd.data(),
                                                  ValidLens{}, mask, model.reference(), want.data(), want_w.data());
        const c_mask cm(mask);
        const edgeattn_attention_options opt = cm.options();
        const edgeattn_attention_dims dims = model.dims(sh.B, sh.Q, sh.K);
        const edgeattn_weights w = model.weights();
        std::vector<float> ws(workspace_bytes(EDGEATTN_OP_MHA, dims, 4) / 4 + 1);
        std::vector<float> packed(edgeattn_mha_packed_size(&dims, &w) / 4);
        REQUIRE(edgeattn_mha_pack(&dims, &w, packed.data(), packed.size() * 4) == EDGEATTN_OK);
        for (edgeattn_isa isa : paths()) {
            REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
            for (int form = 0; form < 2; ++form) {
                INFO(sh.name << " on " << edgeattn_isa_name(isa) << (form ? " packed" : ""));
                std::vector<float> out(want.size(), -7.0f), wts(sh.with_weights ? want_w.size() : 0, -7.0f);
                float *wp = sh.with_weights ? wts.data() : nullptr;
                const edgeattn_status st =
                    form ? edgeattn_mha_packed(&dims, queries, x.data(), x.data(), packed.data(), packed.size() * 4,
                                               &opt, ws.data(), ws.size() * 4, out.data(), wp)
                         : edgeattn_mha(&dims, queries, x.data(), x.data(), &w, &opt, ws.data(), ws.size() * 4,
                                        out.data(), wp);
                REQUIRE(st == EDGEATTN_OK);
                CHECK(rel_l2(out.data(), want) <= 1e-5);
                if (sh.with_weights) CHECK(rel_l2(wts.data(), want_w) <= 1e-5);
            }
        }
    }
}

TEST_CASE("grouped-query heads equal multi-head attention with each key/value head repeated") {
    path_guard guard;
    // The same numbers two ways through the library: H_kv = 2 against
    // H_kv = H with W_k, W_v rows repeated per query head.
    const std::size_t B = 2, Q = 5, K = 9, d = 8, h = 16, H = 4, Hkv = 2, dh = h / H;
    mha_model gqa(d, d, d, h, H, Hkv, 21), full(d, d, d, h, H, H, 21);
    for (int i = 1; i <= 2; ++i) {
        full.W[i].clear();
        full.b[i].clear();
        for (std::size_t n = 0; n < H; ++n) {
            const std::size_t g = n / (H / Hkv);
            full.W[i].insert(full.W[i].end(), gqa.W[i].begin() + g * dh * d, gqa.W[i].begin() + (g + 1) * dh * d);
            full.b[i].insert(full.b[i].end(), gqa.b[i].begin() + g * dh, gqa.b[i].begin() + (g + 1) * dh);
        }
    }
    full.W[0] = gqa.W[0], full.W[3] = gqa.W[3], full.b[0] = gqa.b[0], full.b[3] = gqa.b[3];
    const std::vector<float> q = random_floats(B * Q * d, 1), kv = random_floats(B * K * d, 2);
    for (edgeattn_isa isa : paths()) {
        REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
        std::vector<float> out[2];
        mha_model *models[2] = {&gqa, &full};
        for (int m = 0; m < 2; ++m) {
            const edgeattn_attention_dims dims = models[m]->dims(B, Q, K);
            const edgeattn_weights w = models[m]->weights();
            std::vector<float> ws(workspace_bytes(EDGEATTN_OP_MHA, dims, 1) / 4);
            out[m].assign(B * Q * h, 0.0f);
            REQUIRE(edgeattn_mha(&dims, q.data(), kv.data(), kv.data(), &w, nullptr, ws.data(), ws.size() * 4,
                                 out[m].data(), nullptr) == EDGEATTN_OK);
        }
        for (std::size_t i = 0; i < out[0].size(); ++i) CHECK(std::fabs(out[0][i] - out[1][i]) < 1e-5f);
    }
}

TEST_CASE("dot-product attention with a causal mask over many keys matches the reference") {
    path_guard guard;
    const std::size_t B = 2, Q = 530, K = 530, d = 16, v = 8;
    const std::vector<float> q = random_floats(B * Q * d, 31), k = random_floats(B * K * d, 32),
                             val = random_floats(B * K * v, 33);
    Mask mask;
    mask.causal = true;
    mask.ranges_kind = Mask::per_batch;
    mask.ranges = {0, 530, 100, 400};  // batch 1: left and right padding
    std::vector<double> want(B * Q * v), want_w(B * Q * K);
    edgeattn_ref::dot_product_attention_masked(B, Q, K, d, v, widen(q).data(), widen(k).data(), widen(val).data(),
                                               ValidLens{}, mask, want.data(), want_w.data());
    const c_mask cm(mask);
    const edgeattn_attention_options opt = cm.options();
    const edgeattn_attention_dims dims{B, Q, K, d, d, v, 0, 0, 0, 0};
    std::vector<float> ws(workspace_bytes(EDGEATTN_OP_SDPA, dims, 2) / 4);
    for (edgeattn_isa isa : paths()) {
        REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
        INFO("path " << edgeattn_isa_name(isa));
        std::vector<float> out(want.size()), w(want_w.size());
        REQUIRE(edgeattn_sdpa(&dims, q.data(), k.data(), val.data(), &opt, ws.data(), ws.size() * 4, out.data(),
                              nullptr) == EDGEATTN_OK);
        CHECK(rel_l2(out.data(), want) <= 1e-5);
        REQUIRE(edgeattn_sdpa(&dims, q.data(), k.data(), val.data(), &opt, ws.data(), ws.size() * 4, out.data(),
                              w.data()) == EDGEATTN_OK);
        CHECK(rel_l2(out.data(), want) <= 1e-5);
        CHECK(rel_l2(w.data(), want_w) <= 1e-5);
    }
}

// Decode over a long cache: prefill P tokens, then steps of `step` tokens,
// each compared with causal MHA over every token so far (the reference).
void check_decode(std::size_t B, std::size_t P, std::size_t steps, std::size_t step, std::size_t Hkv, bool window,
                  bool packed_form, std::size_t h = 64) {
    const std::size_t d = 32, H = 4, T = P + steps * step, capacity = T + 3;
    mha_model model(d, d, d, h, H, Hkv, 41);
    const edgeattn_weights w = model.weights();
    const edgeattn_ref::MhaWeights wr = model.reference();
    const std::vector<float> X = random_floats(B * T * d, 42);
    const std::vector<double> Xd = widen(X);
    const edgeattn_attention_dims dims = model.dims(B, step > P ? step : P, capacity);
    std::vector<float> packed(edgeattn_mha_packed_size(&dims, &w) / 4);
    REQUIRE(edgeattn_mha_pack(&dims, &w, packed.data(), packed.size() * 4) == EDGEATTN_OK);
    const edgeattn_kv_cache_config config{B, Hkv, h / H, capacity, EDGEATTN_DTYPE_F32, 0, 0, 0};
    std::vector<float> memory(edgeattn_kv_cache_memory_size(&config) / 4);
    std::vector<float> ws_store(workspace_bytes(EDGEATTN_OP_KV_CACHE_STORE, dims, 1, dims.queries) / 4);
    std::vector<float> ws_attend(workspace_bytes(EDGEATTN_OP_KV_CACHE_ATTEND, dims, 2) / 4);
    for (edgeattn_isa isa : paths()) {
        REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
        edgeattn_kv_cache cache;
        REQUIRE(edgeattn_kv_cache_setup(&cache, &config, memory.data(), memory.size() * 4) == EDGEATTN_OK);
        std::size_t done = 0;
        for (std::size_t s = 0; s <= steps; ++s) {
            const std::size_t n = s == 0 ? P : step, L = done + n;
            INFO(edgeattn_isa_name(isa) << " step " << s << " (" << n << " tokens, cache " << L << ")");
            std::vector<float> x(B * n * d);
            for (std::size_t b = 0; b < B; ++b)
                std::memcpy(x.data() + b * n * d, X.data() + (b * T + done) * d, n * d * 4);
            edgeattn_attention_dims step_dims = dims;
            step_dims.queries = n;
            Mask mask;
            mask.causal = true;
            if (window) window_ranges(mask, B, n, L, 50);
            mask.bias_batch = B;
            mask.bias_keys = capacity;
            float_bias(mask, B * n * capacity, static_cast<unsigned>(s));
            const c_mask cm(mask);
            const edgeattn_attention_options opt = cm.options();
            std::vector<float> out(B * n * h), wts(B * H * n * capacity);
            if (packed_form) {
                REQUIRE(edgeattn_kv_cache_store_packed(&cache, &step_dims, n, x.data(), x.data(), packed.data(),
                                                       packed.size() * 4, nullptr, ws_store.data(),
                                                       ws_store.size() * 4) == EDGEATTN_OK);
                REQUIRE(edgeattn_kv_cache_attend_packed(&cache, &step_dims, x.data(), packed.data(), packed.size() * 4,
                                                        &opt, ws_attend.data(), ws_attend.size() * 4, out.data(),
                                                        wts.data()) == EDGEATTN_OK);
            } else {
                REQUIRE(edgeattn_kv_cache_store(&cache, &step_dims, n, x.data(), x.data(), &w, nullptr, ws_store.data(),
                                                ws_store.size() * 4) == EDGEATTN_OK);
                REQUIRE(edgeattn_kv_cache_attend(&cache, &step_dims, x.data(), &w, &opt, ws_attend.data(),
                                                 ws_attend.size() * 4, out.data(), wts.data()) == EDGEATTN_OK);
            }
            // Without weights a grouped-query step gathers each key/value
            // head's query heads into one pass over the cache.
            std::vector<float> out_only(out.size());
            REQUIRE((packed_form ? edgeattn_kv_cache_attend_packed(&cache, &step_dims, x.data(), packed.data(),
                                                                   packed.size() * 4, &opt, ws_attend.data(),
                                                                   ws_attend.size() * 4, out_only.data(), nullptr)
                                 : edgeattn_kv_cache_attend(&cache, &step_dims, x.data(), &w, &opt, ws_attend.data(),
                                                            ws_attend.size() * 4, out_only.data(), nullptr)) ==
                    EDGEATTN_OK);
            // Reference: the step's queries over all L tokens so far, per
            // batch element, with the step's mask rows.
            for (std::size_t b = 0; b < B; ++b) {
                Mask mb = mask;
                mb.bias_batch = 1;
                mb.bias.assign(mask.bias.begin() + b * n * capacity, mask.bias.begin() + (b + 1) * n * capacity);
                if (window) mb.ranges.assign(mask.ranges.begin() + 2 * b * n, mask.ranges.begin() + 2 * (b + 1) * n);
                std::vector<double> want(n * h), want_w(H * n * L);
                edgeattn_ref::multi_head_attention_masked(1, n, L, d, d, d, h, H, Hkv, Xd.data() + (b * T + done) * d,
                                                          Xd.data() + b * T * d, Xd.data() + b * T * d, ValidLens{}, mb,
                                                          wr, want.data(), want_w.data());
                CHECK(rel_l2(out.data() + b * n * h, want) <= 1e-5);
                CHECK(rel_l2(out_only.data() + b * n * h, want) <= 1e-5);
                std::vector<float> got_w(H * n * L);
                for (std::size_t r = 0; r < H * n; ++r) {
                    std::memcpy(got_w.data() + r * L, wts.data() + (b * H * n + r) * capacity, L * 4);
                    for (std::size_t j = L; j < capacity; ++j)
                        REQUIRE(wts[(b * H * n + r) * capacity + j] == 0.0f);
                }
                CHECK(rel_l2(got_w.data(), want_w) <= 1e-5);
            }
            done = L;
        }
    }
}

TEST_CASE("decode steps over a long cache match causal attention over every token so far") {
    path_guard guard;
    SUBCASE("one token a step, 600 cached, multi-head") { check_decode(1, 600, 3, 1, 4, false, false); }
    SUBCASE("three tokens a step, window, grouped-query kv=2, packed") { check_decode(2, 290, 2, 3, 2, true, true); }
    SUBCASE("multi-query kv=1, prefill longer than a row block") { check_decode(1, 300, 2, 1, 1, false, true); }
    SUBCASE("grouped steps of 16 rows: kv=1, 4 tokens a step, window") { check_decode(2, 270, 2, 4, 1, true, false); }
    // One token over more than 512 keys: chunks of keys folded in order
    // (decode_rows.cpp), some unseen under the window.
    SUBCASE("one token a step over 1100 cached, multi-query, window") { check_decode(1, 1100, 2, 1, 1, true, false); }
    SUBCASE("one token a step over 1030 cached, grouped-query kv=2, packed") { check_decode(2, 1030, 2, 1, 2, false, true); }
    // Heads of 25: a partial vector on every path.
    SUBCASE("one token a step over 700 cached, heads of 25, multi-query") { check_decode(1, 700, 1, 1, 1, true, false, 100); }
}

TEST_CASE("the dense layer entry points match the float64 reference") {
    path_guard guard;
    for (std::size_t rows : {3, 40}) {
        const std::size_t in = 37, out_f = 45;
        const std::vector<float> x = random_floats(rows * in, 51), W = random_floats(out_f * in, 52),
                                 b = random_floats(out_f, 53);
        std::vector<double> want(rows * out_f), want_nb(rows * out_f);
        edgeattn_ref::linear(rows, in, out_f, widen(x).data(), widen(W).data(), widen(b).data(), want.data());
        edgeattn_ref::linear(rows, in, out_f, widen(x).data(), widen(W).data(), nullptr, want_nb.data());
        const edgeattn_dense_dims dims{rows, in, out_f};
        const edgeattn_weight_matrix Wm = f32(W.data());
        std::vector<float> ws(dense_workspace_bytes(dims, 1) / 4);
        std::vector<float> packed(edgeattn_dense_packed_size(&dims, &Wm) / 4);
        std::vector<float> packed_nb(packed.size());
        REQUIRE(edgeattn_dense_pack(&dims, &Wm, b.data(), packed.data(), packed.size() * 4) == EDGEATTN_OK);
        REQUIRE(edgeattn_dense_pack(&dims, &Wm, nullptr, packed_nb.data(), packed.size() * 4) == EDGEATTN_OK);
        for (edgeattn_isa isa : paths()) {
            REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
            INFO(rows << " rows on " << edgeattn_isa_name(isa));
            std::vector<float> y(rows * out_f);
            REQUIRE(edgeattn_dense(&dims, x.data(), &Wm, b.data(), ws.data(), ws.size() * 4, y.data()) == EDGEATTN_OK);
            CHECK(rel_l2(y.data(), want) <= 1e-6);
            REQUIRE(edgeattn_dense_packed(&dims, x.data(), packed.data(), packed.size() * 4, y.data()) == EDGEATTN_OK);
            CHECK(rel_l2(y.data(), want) <= 1e-6);
            REQUIRE(edgeattn_dense_packed(&dims, x.data(), packed_nb.data(), packed.size() * 4, y.data()) ==
                    EDGEATTN_OK);
            CHECK(rel_l2(y.data(), want_nb) <= 1e-6);
        }
    }
}

// ------------------------------------------------------------- refusals

// Everything a refused call could write, in one block with a snapshot.
struct arena {
    std::vector<float> mem;
    std::vector<float> snapshot;
    explicit arena(std::size_t n) : mem(n, -12345.0f) {}
    void seal() { snapshot = mem; }
    bool untouched() const { return std::memcmp(mem.data(), snapshot.data(), mem.size() * 4) == 0; }
};

TEST_CASE("KV cache calls refuse bad input with their own status and write nothing") {
    const std::size_t B = 2, d = 8, h = 8, H = 2, Hkv = 1, hs = h / H, cap = 6;
    mha_model model(d, d, d, h, H, Hkv, 61);
    const edgeattn_weights w = model.weights();
    edgeattn_attention_dims dims = model.dims(B, 2, cap);
    const std::vector<float> x = random_floats(B * 8 * d, 62);

    auto memory_size = [](std::size_t batch, std::size_t kv_heads, std::size_t head_size, std::size_t capacity) {
        const edgeattn_kv_cache_config c{batch, kv_heads, head_size, capacity, EDGEATTN_DTYPE_F32, 0, 0, 0};
        return edgeattn_kv_cache_memory_size(&c);
    };
    CHECK(memory_size(B, Hkv, hs, 0) == 0);  // capacity 0
    CHECK(memory_size(0, Hkv, hs, cap) == 0);
    CHECK(memory_size(1, 1, 1, std::size_t(1) << 31) == 0);  // past INT32_MAX positions
    CHECK(memory_size(SIZE_MAX / 2, 2, 2, 2) == 0);          // overflow
    CHECK(edgeattn_kv_cache_memory_size(nullptr) == 0);

    const edgeattn_kv_cache_config config{B, Hkv, hs, cap, EDGEATTN_DTYPE_F32, 0, 0, 0};
    const std::size_t cache_floats = edgeattn_kv_cache_memory_size(&config) / 4;
    const std::size_t store_floats = workspace_bytes(EDGEATTN_OP_KV_CACHE_STORE, dims, 1, 4) / 4;
    const std::size_t attend_floats = workspace_bytes(EDGEATTN_OP_KV_CACHE_ATTEND, dims, 1) / 4;
    REQUIRE(cache_floats > 0);
    REQUIRE(store_floats > 0);
    REQUIRE(attend_floats > 0);
    arena a(cache_floats + store_floats + attend_floats + B * 2 * h + 64);
    float *memory = a.mem.data(), *ws_store = memory + cache_floats, *ws_attend = ws_store + store_floats;
    float *out = ws_attend + attend_floats;

    edgeattn_kv_cache cache;
    edgeattn_kv_cache_config no_capacity = config;
    no_capacity.capacity = 0;
    CHECK(edgeattn_kv_cache_setup(&cache, &no_capacity, memory, cache_floats * 4) == EDGEATTN_ERR_ZERO_DIMENSION);
    CHECK(edgeattn_kv_cache_setup(&cache, &config, memory, cache_floats * 4 - 4) == EDGEATTN_ERR_WORKSPACE_TOO_SMALL);
    CHECK(edgeattn_kv_cache_setup(&cache, &config, reinterpret_cast<char *>(memory) + 1, cache_floats * 4) ==
          EDGEATTN_ERR_MISALIGNED);
    std::memset(&cache, 0, sizeof cache);
    CHECK(edgeattn_kv_cache_store(&cache, &dims, 1, x.data(), x.data(), &w, nullptr, ws_store, store_floats * 4) ==
          EDGEATTN_ERR_BAD_CACHE);  // never set up
    REQUIRE(edgeattn_kv_cache_setup(&cache, &config, memory, cache_floats * 4) == EDGEATTN_OK);
    REQUIRE(edgeattn_kv_cache_store(&cache, &dims, 4, x.data(), x.data(), &w, nullptr, ws_store, store_floats * 4) ==
            EDGEATTN_OK);

    a.seal();
    const edgeattn_kv_cache before = cache;
    // a store past capacity: 4 + 4 > 6
    CHECK(edgeattn_kv_cache_store(&cache, &dims, 4, x.data(), x.data(), &w, nullptr, ws_store, store_floats * 4) ==
          EDGEATTN_ERR_CACHE_FULL);
    edgeattn_attention_dims bad = dims;
    bad.num_kv_heads = 3;  // does not divide 2 heads
    CHECK(edgeattn_kv_cache_store(&cache, &bad, 1, x.data(), x.data(), &w, nullptr, ws_store, store_floats * 4) ==
          EDGEATTN_ERR_KV_HEADS_DO_NOT_DIVIDE);
    // dims that disagree with the cache: kv heads, batch, head size
    {
        struct mismatch {
            const char *what;
            edgeattn_attention_dims dims;
        };
        edgeattn_attention_dims kv_heads = dims, batch = dims, head_size = dims;
        kv_heads.num_kv_heads = 2;  // divides, but the cache was made for 1
        batch.batch = 1;
        head_size.num_heads = 1;  // heads of 8 features; the cache's are 4
        const mismatch mismatches[] = {{"num_kv_heads", kv_heads}, {"batch", batch}, {"num_hiddens / num_heads", head_size}};
        for (const mismatch &m : mismatches) {
            INFO("dims' " << m.what << " differs from the cache's");
            const edgeattn_status stored = edgeattn_kv_cache_store(&cache, &m.dims, 1, x.data(), x.data(), &w, nullptr,
                                                                   ws_store, store_floats * 4);
            CHECK(stored == EDGEATTN_ERR_CACHE_SHAPE_MISMATCH);
            CHECK(says(stored, m.what));
            const edgeattn_status attended = edgeattn_kv_cache_attend(&cache, &m.dims, x.data(), &w, nullptr, ws_attend,
                                                                      attend_floats * 4, out, nullptr);
            CHECK(attended == EDGEATTN_ERR_CACHE_SHAPE_MISMATCH);
            CHECK(says(attended, m.what));
        }
    }
    // dims.keys neither 0 nor the capacity (the filled length 4 among them)
    for (std::size_t keys : {cap - 1, std::size_t{4}, cap + 1}) {
        INFO("dims.keys " << keys);
        bad = dims;
        bad.keys = keys;
        const edgeattn_status st =
            edgeattn_kv_cache_attend(&cache, &bad, x.data(), &w, nullptr, ws_attend, attend_floats * 4, out, nullptr);
        CHECK(st == EDGEATTN_ERR_KEYS_NOT_CAPACITY);
        CHECK(says(st, "capacity"));
    }
    CHECK(edgeattn_kv_cache_store(&cache, &dims, 0, x.data(), x.data(), &w, nullptr, ws_store, store_floats * 4) ==
          EDGEATTN_ERR_ZERO_DIMENSION);
    CHECK(edgeattn_kv_cache_store(&cache, &dims, 1, x.data(), x.data(), &w, nullptr, ws_store, 4) ==
          EDGEATTN_ERR_WORKSPACE_TOO_SMALL);
    CHECK(edgeattn_kv_cache_store(&cache, &dims, 1, memory, x.data(), &w, nullptr, ws_store, store_floats * 4) ==
          EDGEATTN_ERR_OVERLAP);  // keys read from the cache's own memory
    {
        const edgeattn_status past_length = edgeattn_kv_cache_truncate(&cache, 0, 5);  // past the length 4
        const edgeattn_status past_batch = edgeattn_kv_cache_truncate(&cache, 2, 0);   // no batch element 2
        CHECK(past_length == EDGEATTN_ERR_PAST_CACHE_LENGTH);
        CHECK(past_batch == EDGEATTN_ERR_PAST_CACHE_LENGTH);
        CHECK(says(past_length, "length past the filled length"));
        CHECK(says(past_batch, "batch index is past the batch"));
    }

    const std::int32_t out_of_order[4] = {3, 1, 0, 4}, negative[4] = {-1, 2, 0, 4};
    edgeattn_attention_options o{};
    o.mask.ranges_kind = EDGEATTN_KEY_RANGES_PER_BATCH;
    o.mask.key_ranges = out_of_order;
    CHECK(edgeattn_kv_cache_attend(&cache, &dims, x.data(), &w, &o, ws_attend, attend_floats * 4, out, nullptr) ==
          EDGEATTN_ERR_BAD_KEY_RANGE);
    o.mask.key_ranges = negative;
    CHECK(edgeattn_kv_cache_attend(&cache, &dims, x.data(), &w, &o, ws_attend, attend_floats * 4, out, nullptr) ==
          EDGEATTN_ERR_BAD_KEY_RANGE);
    o.mask.key_ranges = nullptr;
    CHECK(edgeattn_kv_cache_attend(&cache, &dims, x.data(), &w, &o, ws_attend, attend_floats * 4, out, nullptr) ==
          EDGEATTN_ERR_NULL_POINTER);
    std::memcpy(&o.mask.ranges_kind, "\x07\0\0\0", 4);
    CHECK(edgeattn_kv_cache_attend(&cache, &dims, x.data(), &w, &o, ws_attend, attend_floats * 4, out, nullptr) ==
          EDGEATTN_ERR_BAD_KEY_RANGE);
    const std::vector<float> bias(B * H * 2 * cap, 0.5f);
    edgeattn_attention_options ob{};
    ob.mask.bias = bias.data();
    ob.mask.bias_heads = 3;  // neither 1 nor H
    CHECK(edgeattn_kv_cache_attend(&cache, &dims, x.data(), &w, &ob, ws_attend, attend_floats * 4, out, nullptr) ==
          EDGEATTN_ERR_SHAPE_MISMATCH);
    ob.mask.bias_heads = H;
    ob.mask.bias_keys = cap - 1;  // rows shorter than the capacity
    CHECK(edgeattn_kv_cache_attend(&cache, &dims, x.data(), &w, &ob, ws_attend, attend_floats * 4, out, nullptr) ==
          EDGEATTN_ERR_SHAPE_MISMATCH);
    edgeattn_weights no_q = w;
    no_q.W_q.data = nullptr;
    CHECK(edgeattn_kv_cache_attend(&cache, &dims, x.data(), &no_q, nullptr, ws_attend, attend_floats * 4, out,
                                   nullptr) == EDGEATTN_ERR_NULL_POINTER);
    CHECK(edgeattn_kv_cache_attend(&cache, &dims, x.data(), &w, nullptr, ws_attend, attend_floats * 4, memory,
                                   nullptr) == EDGEATTN_ERR_OVERLAP);  // output over the cache
    CHECK(edgeattn_kv_cache_attend(&cache, &dims, x.data(), &w, nullptr, ws_attend, attend_floats * 4 - 4, out,
                                   nullptr) == EDGEATTN_ERR_WORKSPACE_TOO_SMALL);
    CHECK(a.untouched());
    CHECK(std::memcmp(&before, &cache, sizeof cache) == 0);

    // The stores that were refused left the cache usable: two more fit.
    CHECK(edgeattn_kv_cache_store(&cache, &dims, 2, x.data(), x.data(), &w, nullptr, ws_store, store_floats * 4) ==
          EDGEATTN_OK);
    CHECK(cache.lengths[0] == 6);
    CHECK(edgeattn_kv_cache_truncate(&cache, 1, 2) == EDGEATTN_OK);
    CHECK(cache.lengths[1] == 2);
    CHECK(edgeattn_kv_cache_reset(&cache) == EDGEATTN_OK);
    CHECK((cache.lengths[0] == 0 && cache.lengths[1] == 0));
}

TEST_CASE("masked multi-head and dense layer calls refuse bad input and write nothing") {
    const std::size_t B = 1, Q = 3, K = 4, d = 8, h = 8, H = 4;
    mha_model model(d, d, d, h, H, 2, 71);
    const edgeattn_weights w = model.weights();
    const std::vector<float> x = random_floats(B * K * d, 72);
    edgeattn_attention_dims dims = model.dims(B, Q, K);
    const std::size_t ws_floats = workspace_bytes(EDGEATTN_OP_MHA, dims, 1) / 4;
    arena a(ws_floats + B * Q * h + B * H * Q * K + 64);
    float *ws = a.mem.data(), *out = ws + ws_floats, *wts = out + B * Q * h;
    a.seal();
    edgeattn_attention_dims bad = dims;
    bad.num_kv_heads = 3;
    CHECK(edgeattn_mha(&bad, x.data(), x.data(), x.data(), &w, nullptr, ws, ws_floats * 4, out, wts) ==
          EDGEATTN_ERR_KV_HEADS_DO_NOT_DIVIDE);
    {
        const edgeattn_workspace_request r = request(EDGEATTN_OP_MHA, bad);
        std::size_t bytes = 12345;
        CHECK(edgeattn_workspace_size(&r, 1, 1, &bytes) == EDGEATTN_ERR_KV_HEADS_DO_NOT_DIVIDE);
        CHECK(bytes == 12345);  // written only on success
    }
    CHECK(edgeattn_mha_packed_size(&bad, &w) == 0);
    const std::int32_t ranges[6] = {0, 4, 2, 1, 0, 4};
    edgeattn_attention_options o{};
    o.mask.ranges_kind = EDGEATTN_KEY_RANGES_PER_QUERY;
    o.mask.key_ranges = ranges;
    CHECK(edgeattn_mha(&dims, x.data(), x.data(), x.data(), &w, &o, ws, ws_floats * 4, out, wts) ==
          EDGEATTN_ERR_BAD_KEY_RANGE);
    edgeattn_attention_options ob{};
    const std::vector<float> bias(2 * Q * K);
    ob.mask.bias = bias.data();
    ob.mask.bias_batch = 2;  // B is 1
    CHECK(edgeattn_mha(&dims, x.data(), x.data(), x.data(), &w, &ob, ws, ws_floats * 4, out, wts) ==
          EDGEATTN_ERR_SHAPE_MISMATCH);
    ob.mask.bias_batch = 1;
    ob.mask.bias = out + 4;  // the bias is read where the output is written
    CHECK(edgeattn_mha(&dims, x.data(), x.data(), x.data(), &w, &ob, ws, ws_floats * 4, out, nullptr) ==
          EDGEATTN_ERR_OVERLAP);
    // dot product: one bias per head only
    const edgeattn_attention_dims dot{B, Q, K, d, d, d, 0, 0, 0, 0};
    ob.mask.bias = bias.data();
    ob.mask.bias_heads = 2;
    CHECK(edgeattn_sdpa(&dot, x.data(), x.data(), x.data(), &ob, ws, ws_floats * 4, out, nullptr) ==
          EDGEATTN_ERR_SHAPE_MISMATCH);

    const edgeattn_dense_dims ld{Q, d, h};
    const edgeattn_weight_matrix W = f32(model.W[0].data());
    CHECK(edgeattn_dense(&ld, x.data(), &W, nullptr, ws, 4, out) == EDGEATTN_ERR_WORKSPACE_TOO_SMALL);
    const edgeattn_dense_dims zero{Q, 0, h};
    CHECK(edgeattn_dense(&zero, x.data(), &W, nullptr, ws, ws_floats * 4, out) == EDGEATTN_ERR_ZERO_DIMENSION);
    CHECK(edgeattn_dense(&ld, x.data(), &W, nullptr, ws, ws_floats * 4, ws + 8) ==
          EDGEATTN_ERR_OVERLAP);  // y inside the workspace
    CHECK(edgeattn_dense_packed(&ld, x.data(), model.W[0].data(), h * d * 4, out) ==
          EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH);  // never packed
    CHECK(a.untouched());
}

}  // namespace
