// The 0.x names, kept for one release as inline wrappers over the 1.0 calls
// (edgeattn/deprecated.h): every one compiles, gives the bits of the 1.0
// call it maps to (CHANGELOG.md), and the attention ones agree with the
// float64 reference, so a wrapper that passed a wrong field would fail here.
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

#include <doctest/doctest.h>

#include <edgeattn/edgeattn.h>
#include <edgeattn/edgeattn.hpp>

#include "call_helpers.hpp"
#include "path_helpers.hpp"
#include "reference.hpp"

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

using test_calls::dense_workspace_bytes;
using test_calls::f32;
using test_calls::fp32_weights;
using test_calls::workspace_bytes;
using test_paths::random_floats;
using test_paths::rel_l2;
using test_paths::widen;

namespace {

constexpr std::size_t B = 2, Q = 3, K = 5, qs = 4, ks = 6, vs = 7, h = 8, H = 2;

bool same_bits(const std::vector<float> &a, const std::vector<float> &b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Inputs and fp32 weights of one multi-head / additive / dense call.
struct model {
    std::vector<float> queries = random_floats(B * Q * qs, 1);
    std::vector<float> keys = random_floats(B * K * ks, 2);
    std::vector<float> values = random_floats(B * K * vs, 3);
    std::vector<float> W_q = random_floats(h * qs, 4, 0.5f), W_k = random_floats(h * ks, 5, 0.5f);
    std::vector<float> W_v = random_floats(h * vs, 6, 0.5f), W_o = random_floats(h * h, 7, 0.5f);
    std::vector<float> b_q = random_floats(h, 8), b_k = random_floats(h, 9);
    std::vector<float> b_v = random_floats(h, 10), b_o = random_floats(h, 11);
    std::vector<float> w_v = random_floats(h, 12);
    std::vector<std::int32_t> lens = {3, 5};

    edgeattn_mha_weights old_weights() const {
        return {W_q.data(), W_k.data(), W_v.data(), W_o.data(),
                b_q.data(), b_k.data(), b_v.data(), b_o.data()};
    }
    edgeattn_weights weights() const {
        return fp32_weights(W_q.data(), W_k.data(), W_v.data(), W_o.data(), b_q.data(), b_k.data(), b_v.data(),
                            b_o.data());
    }
    edgeattn_ref::MhaWeights reference_weights(std::vector<std::vector<double>> &keep) const {
        for (const auto *v : {&W_q, &W_k, &W_v, &W_o, &b_q, &b_k, &b_v, &b_o}) keep.push_back(widen(*v));
        return {keep[0].data(), keep[1].data(), keep[2].data(), keep[3].data(),
                keep[4].data(), keep[5].data(), keep[6].data(), keep[7].data()};
    }
};

edgeattn_attention_dims mha_dims() { return {B, Q, K, qs, ks, vs, h, H, 0, 0}; }

// A workspace for one call on one thread (tokens: a cache store's).
std::vector<float> workspace_for(edgeattn_op op, const edgeattn_attention_dims &d, std::size_t tokens = 0) {
    return std::vector<float>(workspace_bytes(op, d, 1, tokens) / sizeof(float));
}

}  // namespace

TEST_CASE("0.x workspace queries give the sizes of edgeattn_workspace_size") {
    const edgeattn_attention_dims d = mha_dims();
    edgeattn_attention_dims dp = {B, Q, K, qs, 0, vs, 0, 0, 0, 0};
    CHECK(edgeattn_dot_product_attention_workspace_size(&dp, 3) != 0);
    CHECK(edgeattn_dot_product_attention_workspace_size(&dp, 1) == workspace_for(EDGEATTN_OP_SDPA, dp).size() * 4);
    CHECK(edgeattn_additive_attention_workspace_size(&d, 1) == workspace_for(EDGEATTN_OP_ADDITIVE, d).size() * 4);
    CHECK(edgeattn_multi_head_attention_workspace_size(&d, 1) == workspace_for(EDGEATTN_OP_MHA, d).size() * 4);
    CHECK(edgeattn_kv_cache_append_workspace_size(&d, 2, 1) ==
          workspace_for(EDGEATTN_OP_KV_CACHE_STORE, d, 2).size() * 4);
    CHECK(edgeattn_kv_cache_attention_workspace_size(&d, 1) ==
          workspace_for(EDGEATTN_OP_KV_CACHE_ATTEND, d).size() * 4);
    const edgeattn_attention_dims self_short = {B, Q, 0, h, 0, 0, 0, H, 0, 0};
    const edgeattn_attention_dims self_full = {B, Q, Q, h, h, h, h, H, 0, 0};
    CHECK(edgeattn_self_attention_workspace_size(&self_short, 1) ==
          workspace_for(EDGEATTN_OP_MHA, self_full).size() * 4);
    const edgeattn_linear_dims ld = {B * Q, qs, h};
    CHECK(edgeattn_linear_workspace_size(&ld, 1) == dense_workspace_bytes(ld, 1));
    // Invalid dims still answer 0, as the 0.x queries did.
    edgeattn_attention_dims bad = d;
    bad.num_heads = 3;
    CHECK(edgeattn_multi_head_attention_workspace_size(&bad, 1) == 0);
    CHECK(edgeattn_multi_head_attention_workspace_size(nullptr, 1) == 0);
}

TEST_CASE("0.x attention names give the bits of the 1.0 calls and the float64 answer") {
    const model m;
    const edgeattn_attention_dims d = mha_dims();
    const edgeattn_valid_lens vl = {EDGEATTN_VALID_LENS_PER_BATCH, m.lens.data()};
    edgeattn_attention_options o{};
    o.valid_lens = vl;
    edgeattn_ref::ValidLens rvl;
    rvl.kind = edgeattn_ref::ValidLens::per_batch;
    rvl.lens = m.lens;

    SUBCASE("dot product") {
        const edgeattn_attention_dims dp = {B, Q, K, ks, 0, vs, 0, 0, 0, 0};
        const std::vector<float> q = random_floats(B * Q * ks, 21);
        std::vector<float> ws = workspace_for(EDGEATTN_OP_SDPA, dp);
        std::vector<float> a(B * Q * vs), b(a.size()), aw(B * Q * K), bw(aw.size()), c(a.size());
        REQUIRE(edgeattn_dot_product_attention(&dp, q.data(), m.keys.data(), m.values.data(), &vl, ws.data(),
                                               ws.size() * 4, a.data(), aw.data()) == EDGEATTN_OK);
        REQUIRE(edgeattn_sdpa(&dp, q.data(), m.keys.data(), m.values.data(), &o, ws.data(), ws.size() * 4,
                              b.data(), bw.data()) == EDGEATTN_OK);
        CHECK(same_bits(a, b));
        CHECK(same_bits(aw, bw));
        edgeattn_attention_mask causal{};
        causal.causal = 1;
        REQUIRE(edgeattn_dot_product_attention_masked(&dp, q.data(), m.keys.data(), m.values.data(), &vl, &causal,
                                                      ws.data(), ws.size() * 4, c.data(), nullptr) == EDGEATTN_OK);
        edgeattn_attention_options oc = o;
        oc.mask = causal;
        REQUIRE(edgeattn_sdpa(&dp, q.data(), m.keys.data(), m.values.data(), &oc, ws.data(), ws.size() * 4,
                              b.data(), nullptr) == EDGEATTN_OK);
        CHECK(same_bits(c, b));
        std::vector<double> want(a.size()), want_w(aw.size());
        edgeattn_ref::dot_product_attention(B, Q, K, ks, vs, widen(q).data(), widen(m.keys).data(),
                                            widen(m.values).data(), rvl, want.data(), want_w.data());
        CHECK(rel_l2(a.data(), want) <= 1e-5);
    }
    SUBCASE("additive, fp32 and typed") {
        std::vector<float> ws = workspace_for(EDGEATTN_OP_ADDITIVE, d);
        std::vector<float> a(B * Q * vs), b(a.size()), c(a.size());
        const edgeattn_additive_weights aw = {m.W_q.data(), m.W_k.data(), m.w_v.data()};
        REQUIRE(edgeattn_additive_attention(&d, m.queries.data(), m.keys.data(), m.values.data(), &vl, &aw,
                                            ws.data(), ws.size() * 4, a.data(), nullptr) == EDGEATTN_OK);
        const edgeattn_additive_typed_weights tw = {{EDGEATTN_WEIGHTS_F32, m.W_q.data(), nullptr},
                                                    {EDGEATTN_WEIGHTS_F32, m.W_k.data(), nullptr},
                                                    m.w_v.data()};
        REQUIRE(edgeattn_additive_attention_typed(&d, m.queries.data(), m.keys.data(), m.values.data(), &vl, &tw,
                                                  ws.data(), ws.size() * 4, c.data(), nullptr) == EDGEATTN_OK);
        edgeattn_weights w{};
        w.W_q = tw.W_q;
        w.W_k = tw.W_k;
        w.W_v = f32(m.w_v.data());
        REQUIRE(edgeattn_additive(&d, m.queries.data(), m.keys.data(), m.values.data(), &w, &o, ws.data(),
                                  ws.size() * 4, b.data(), nullptr) == EDGEATTN_OK);
        CHECK(same_bits(a, b));
        CHECK(same_bits(c, b));
        std::vector<double> want(a.size()), want_w(B * Q * K);
        edgeattn_ref::additive_attention(B, Q, K, qs, ks, vs, h, widen(m.queries).data(), widen(m.keys).data(),
                                         widen(m.values).data(), rvl, widen(m.W_q).data(), widen(m.W_k).data(),
                                         widen(m.w_v).data(), want.data(), want_w.data());
        CHECK(rel_l2(a.data(), want) <= 1e-5);
        CHECK(edgeattn_additive_attention(&d, m.queries.data(), m.keys.data(), m.values.data(), &vl, nullptr,
                                          ws.data(), ws.size() * 4, a.data(), nullptr) == EDGEATTN_ERR_NULL_POINTER);
    }
    SUBCASE("multi-head: plain, masked, typed, packed, masked packed") {
        std::vector<float> ws = workspace_for(EDGEATTN_OP_MHA, d);
        const edgeattn_mha_weights ow = m.old_weights();
        const edgeattn_weights w = m.weights();
        std::vector<float> want_bits(B * Q * h), got(want_bits.size());
        REQUIRE(edgeattn_mha(&d, m.queries.data(), m.keys.data(), m.values.data(), &w, &o, ws.data(),
                             ws.size() * 4, want_bits.data(), nullptr) == EDGEATTN_OK);
        REQUIRE(edgeattn_multi_head_attention(&d, m.queries.data(), m.keys.data(), m.values.data(), &vl, &ow,
                                              ws.data(), ws.size() * 4, got.data(), nullptr) == EDGEATTN_OK);
        CHECK(same_bits(got, want_bits));
        std::fill(got.begin(), got.end(), 0.0f);
        REQUIRE(edgeattn_multi_head_attention_masked(&d, m.queries.data(), m.keys.data(), m.values.data(), &vl,
                                                     nullptr, &ow, ws.data(), ws.size() * 4, got.data(),
                                                     nullptr) == EDGEATTN_OK);
        CHECK(same_bits(got, want_bits));
        std::fill(got.begin(), got.end(), 0.0f);
        REQUIRE(edgeattn_multi_head_attention_typed(&d, m.queries.data(), m.keys.data(), m.values.data(), &vl,
                                                    nullptr, &w, ws.data(), ws.size() * 4, got.data(),
                                                    nullptr) == EDGEATTN_OK);
        CHECK(same_bits(got, want_bits));

        std::vector<std::vector<double>> keep;
        const edgeattn_ref::MhaWeights rw = m.reference_weights(keep);
        std::vector<double> want(want_bits.size()), want_w(B * H * Q * K);
        edgeattn_ref::multi_head_attention(B, Q, K, qs, ks, vs, h, H, widen(m.queries).data(), widen(m.keys).data(),
                                           widen(m.values).data(), rvl, rw, want.data(), want_w.data());
        CHECK(rel_l2(got.data(), want) <= 1e-5);

        const std::size_t packed_bytes = edgeattn_mha_packed_weights_size(&d);
        REQUIRE(packed_bytes == edgeattn_mha_packed_size(&d, &w));
        CHECK(edgeattn_mha_typed_packed_weights_size(&d, &w) == packed_bytes);
        std::vector<float> p1(packed_bytes / 4), p2(p1.size()), p3(p1.size());
        REQUIRE(edgeattn_mha_pack_weights(&d, &ow, p1.data(), packed_bytes) == EDGEATTN_OK);
        REQUIRE(edgeattn_mha_pack_typed_weights(&d, &w, p2.data(), packed_bytes) == EDGEATTN_OK);
        REQUIRE(edgeattn_mha_pack(&d, &w, p3.data(), packed_bytes) == EDGEATTN_OK);
        CHECK(same_bits(p1, p3));
        CHECK(same_bits(p2, p3));
        std::vector<float> packed_new(got.size()), packed_old(got.size());
        REQUIRE(edgeattn_mha_packed(&d, m.queries.data(), m.keys.data(), m.values.data(), p3.data(), packed_bytes,
                                    &o, ws.data(), ws.size() * 4, packed_new.data(), nullptr) == EDGEATTN_OK);
        REQUIRE(edgeattn_multi_head_attention_packed(&d, m.queries.data(), m.keys.data(), m.values.data(), &vl,
                                                     p1.data(), packed_bytes, ws.data(), ws.size() * 4,
                                                     packed_old.data(), nullptr) == EDGEATTN_OK);
        CHECK(same_bits(packed_old, packed_new));
        std::fill(packed_old.begin(), packed_old.end(), 0.0f);
        REQUIRE(edgeattn_multi_head_attention_masked_packed(&d, m.queries.data(), m.keys.data(), m.values.data(),
                                                            &vl, nullptr, p1.data(), packed_bytes, ws.data(),
                                                            ws.size() * 4, packed_old.data(),
                                                            nullptr) == EDGEATTN_OK);
        CHECK(same_bits(packed_old, packed_new));
        CHECK(rel_l2(packed_new.data(), want) <= 1e-5);
    }
    SUBCASE("self-attention with its short dims, given and packed") {
        const edgeattn_attention_dims sd = {B, Q, 0, h, 0, 0, 0, H, 0, 0};
        const edgeattn_attention_dims full = {B, Q, Q, h, h, h, h, H, 0, 0};
        const std::vector<float> X = random_floats(B * Q * h, 31);
        const std::vector<float> Wq = random_floats(h * h, 32, 0.5f), Wk = random_floats(h * h, 33, 0.5f);
        const std::vector<float> Wv = random_floats(h * h, 34, 0.5f), Wo = random_floats(h * h, 35, 0.5f);
        const edgeattn_mha_weights ow = {Wq.data(), Wk.data(), Wv.data(), Wo.data(),
                                         nullptr, nullptr, nullptr, nullptr};
        const edgeattn_weights w = fp32_weights(Wq.data(), Wk.data(), Wv.data(), Wo.data());
        std::vector<float> ws = workspace_for(EDGEATTN_OP_MHA, full);
        std::vector<float> a(B * Q * h), b(a.size()), aw(B * H * Q * Q), bw(aw.size());
        REQUIRE(edgeattn_self_attention(&sd, X.data(), &vl, &ow, ws.data(), ws.size() * 4, a.data(), aw.data()) ==
                EDGEATTN_OK);
        REQUIRE(edgeattn_mha(&full, X.data(), X.data(), X.data(), &w, &o, ws.data(), ws.size() * 4, b.data(),
                             bw.data()) == EDGEATTN_OK);
        CHECK(same_bits(a, b));
        CHECK(same_bits(aw, bw));
        std::vector<float> packed(edgeattn_mha_packed_size(&full, &w) / 4);
        REQUIRE(edgeattn_mha_pack(&full, &w, packed.data(), packed.size() * 4) == EDGEATTN_OK);
        REQUIRE(edgeattn_self_attention_packed(&sd, X.data(), &vl, packed.data(), packed.size() * 4, ws.data(),
                                               ws.size() * 4, a.data(), nullptr) == EDGEATTN_OK);
        REQUIRE(edgeattn_mha_packed(&full, X.data(), X.data(), X.data(), packed.data(), packed.size() * 4, &o,
                                    ws.data(), ws.size() * 4, b.data(), nullptr) == EDGEATTN_OK);
        CHECK(same_bits(a, b));
        // The short dims' rules: a size given must equal query_size.
        edgeattn_attention_dims wrong = sd;
        wrong.value_size = h + 1;
        CHECK(edgeattn_self_attention(&wrong, X.data(), &vl, &ow, ws.data(), ws.size() * 4, a.data(), nullptr) ==
              EDGEATTN_ERR_SHAPE_MISMATCH);
        CHECK(edgeattn_self_attention_workspace_size(&wrong, 1) == 0);
    }
}

TEST_CASE("0.x KV cache names give the bits of the 1.0 calls") {
    const model m;
    const std::size_t cap = 6, Hkv = 1, T = 2;
    edgeattn_attention_dims d = {1, 1, cap, qs, ks, vs, h, H, Hkv, 0};
    const std::size_t hs = h / H;
    const edgeattn_kv_cache_config config = {1, Hkv, hs, cap, EDGEATTN_DTYPE_INT8, 0, 0, 0};
    const std::size_t bytes = edgeattn_kv_cache_memory_size(&config);
    REQUIRE(bytes != 0);
    CHECK(edgeattn_kv_cache_typed_size(1, Hkv, hs, cap, EDGEATTN_WEIGHTS_INT8) == bytes);
    edgeattn_kv_cache_config f32 = config;
    f32.storage = EDGEATTN_DTYPE_F32;
    CHECK(edgeattn_kv_cache_size(1, Hkv, hs, cap) == edgeattn_kv_cache_memory_size(&f32));

    // Grouped-query weights: W_k, W_v have Hkv * hs rows.
    const std::vector<float> Wk = random_floats(Hkv * hs * ks, 41, 0.5f), Wv = random_floats(Hkv * hs * vs, 42, 0.5f);
    const edgeattn_mha_weights ow = {m.W_q.data(), Wk.data(), Wv.data(), m.W_o.data(),
                                     m.b_q.data(), nullptr, nullptr, m.b_o.data()};
    edgeattn_weights w = m.weights();
    w.W_k.data = Wk.data();
    w.W_v.data = Wv.data();
    w.b_k = w.b_v = nullptr;

    for (edgeattn_dtype storage : {EDGEATTN_DTYPE_F32, EDGEATTN_DTYPE_F16, EDGEATTN_DTYPE_INT8}) {
        CAPTURE(storage);
        edgeattn_kv_cache_config c = config;
        c.storage = storage;
        const std::size_t cache_bytes = edgeattn_kv_cache_memory_size(&c);
        std::vector<float> mem_old(cache_bytes / 4), mem_new(cache_bytes / 4);
        edgeattn_kv_cache old_cache, new_cache;
        if (storage == EDGEATTN_DTYPE_F32)
            REQUIRE(edgeattn_kv_cache_init(&old_cache, 1, Hkv, hs, cap, mem_old.data(), cache_bytes) == EDGEATTN_OK);
        else
            REQUIRE(edgeattn_kv_cache_init_typed(&old_cache, 1, Hkv, hs, cap, storage, mem_old.data(), cache_bytes) ==
                    EDGEATTN_OK);
        REQUIRE(edgeattn_kv_cache_setup(&new_cache, &c, mem_new.data(), cache_bytes) == EDGEATTN_OK);

        std::vector<float> store_ws = workspace_for(EDGEATTN_OP_KV_CACHE_STORE, d, T);
        const std::vector<float> x = random_floats(T * ks, 43), y = random_floats(T * vs, 44);
        REQUIRE(edgeattn_kv_cache_append(&old_cache, &d, T, x.data(), y.data(), &ow, store_ws.data(),
                                         store_ws.size() * 4) == EDGEATTN_OK);
        // y's first T * ks floats serve as a second step's key inputs.
        REQUIRE(edgeattn_kv_cache_append_typed(&old_cache, &d, T, y.data(), y.data(), &w, store_ws.data(),
                                               store_ws.size() * 4) == EDGEATTN_OK);
        REQUIRE(edgeattn_kv_cache_store(&new_cache, &d, T, x.data(), y.data(), &w, nullptr, store_ws.data(),
                                        store_ws.size() * 4) == EDGEATTN_OK);
        REQUIRE(edgeattn_kv_cache_store(&new_cache, &d, T, y.data(), y.data(), &w, nullptr, store_ws.data(),
                                        store_ws.size() * 4) == EDGEATTN_OK);
        CHECK(same_bits(mem_old, mem_new));

        std::vector<float> attend_ws = workspace_for(EDGEATTN_OP_KV_CACHE_ATTEND, d);
        const std::vector<float> q = random_floats(qs, 45);
        std::vector<float> a(h), b(h), c2(h);
        edgeattn_attention_mask causal{};
        causal.causal = 1;
        edgeattn_attention_options oc{};
        oc.mask = causal;
        REQUIRE(edgeattn_kv_cache_attention(&old_cache, &d, q.data(), &causal, &ow, attend_ws.data(),
                                            attend_ws.size() * 4, a.data(), nullptr) == EDGEATTN_OK);
        REQUIRE(edgeattn_kv_cache_attention_typed(&old_cache, &d, q.data(), &causal, &w, attend_ws.data(),
                                                  attend_ws.size() * 4, c2.data(), nullptr) == EDGEATTN_OK);
        REQUIRE(edgeattn_kv_cache_attend(&new_cache, &d, q.data(), &w, &oc, attend_ws.data(), attend_ws.size() * 4,
                                         b.data(), nullptr) == EDGEATTN_OK);
        CHECK(same_bits(a, b));
        CHECK(same_bits(c2, b));

        std::vector<float> packed(edgeattn_mha_packed_size(&d, &w) / 4);
        REQUIRE(edgeattn_mha_pack(&d, &w, packed.data(), packed.size() * 4) == EDGEATTN_OK);
        REQUIRE(edgeattn_kv_cache_append_packed(&old_cache, &d, 1, x.data(), y.data(), packed.data(),
                                                packed.size() * 4, store_ws.data(), store_ws.size() * 4) == EDGEATTN_OK);
        REQUIRE(edgeattn_kv_cache_store_packed(&new_cache, &d, 1, x.data(), y.data(), packed.data(), packed.size() * 4,
                                               nullptr, store_ws.data(), store_ws.size() * 4) == EDGEATTN_OK);
        CHECK(same_bits(mem_old, mem_new));
        REQUIRE(edgeattn_kv_cache_attention_packed(&old_cache, &d, q.data(), nullptr, packed.data(), packed.size() * 4,
                                                   attend_ws.data(), attend_ws.size() * 4, a.data(),
                                                   nullptr) == EDGEATTN_OK);
        REQUIRE(edgeattn_kv_cache_attend_packed(&new_cache, &d, q.data(), packed.data(), packed.size() * 4, nullptr,
                                                attend_ws.data(), attend_ws.size() * 4, b.data(),
                                                nullptr) == EDGEATTN_OK);
        CHECK(same_bits(a, b));
        // Statuses now name the case the 0.x library answered EDGEATTN_ERR_BAD_CACHE.
        edgeattn_attention_dims length_not_capacity = d;
        length_not_capacity.keys = 2 * T + 1;
        CHECK(edgeattn_kv_cache_attention(&old_cache, &length_not_capacity, q.data(), nullptr, &ow, attend_ws.data(),
                                          attend_ws.size() * 4, a.data(), nullptr) == EDGEATTN_ERR_KEYS_NOT_CAPACITY);
        CHECK(edgeattn_kv_cache_truncate(&old_cache, 0, cap) == EDGEATTN_ERR_PAST_CACHE_LENGTH);
        CHECK(edgeattn_kv_cache_append(&old_cache, &d, 1, x.data(), y.data(), nullptr, store_ws.data(),
                                       store_ws.size() * 4) == EDGEATTN_ERR_NULL_POINTER);
    }
}

TEST_CASE("0.x dense and positional names give the bits of the 1.0 calls") {
    const edgeattn_linear_dims ld = {5, 6, 7};
    const std::vector<float> x = random_floats(5 * 6, 51), W = random_floats(7 * 6, 52), b = random_floats(7, 53);
    const std::size_t ws_bytes = dense_workspace_bytes(ld, 1);
    std::vector<float> ws(ws_bytes / 4), y_old(5 * 7), y_new(5 * 7), y_typed(5 * 7);
    const edgeattn_weight_matrix Wm = f32(W.data());
    REQUIRE(edgeattn_linear(&ld, x.data(), W.data(), b.data(), ws.data(), ws_bytes, y_old.data()) == EDGEATTN_OK);
    REQUIRE(edgeattn_linear_typed(&ld, x.data(), &Wm, b.data(), ws.data(), ws_bytes, y_typed.data()) == EDGEATTN_OK);
    REQUIRE(edgeattn_dense(&ld, x.data(), &Wm, b.data(), ws.data(), ws_bytes, y_new.data()) == EDGEATTN_OK);
    CHECK(same_bits(y_old, y_new));
    CHECK(same_bits(y_typed, y_new));
    std::vector<double> want(5 * 7);
    edgeattn_ref::linear(5, 6, 7, widen(x).data(), widen(W).data(), widen(b).data(), want.data());
    CHECK(rel_l2(y_old.data(), want) <= 1e-5);

    const std::size_t packed_bytes = edgeattn_linear_packed_weights_size(&ld);
    CHECK(packed_bytes == edgeattn_dense_packed_size(&ld, &Wm));
    CHECK(edgeattn_linear_typed_packed_weights_size(&ld, EDGEATTN_WEIGHTS_F32) == packed_bytes);
    std::vector<float> p_old(packed_bytes / 4), p_typed(p_old.size()), p_new(p_old.size());
    REQUIRE(edgeattn_linear_pack_weights(&ld, W.data(), b.data(), p_old.data(), packed_bytes) == EDGEATTN_OK);
    REQUIRE(edgeattn_linear_pack_typed_weights(&ld, &Wm, b.data(), p_typed.data(), packed_bytes) == EDGEATTN_OK);
    REQUIRE(edgeattn_dense_pack(&ld, &Wm, b.data(), p_new.data(), packed_bytes) == EDGEATTN_OK);
    CHECK(same_bits(p_old, p_new));
    CHECK(same_bits(p_typed, p_new));
    REQUIRE(edgeattn_linear_packed(&ld, x.data(), p_old.data(), packed_bytes, y_old.data()) == EDGEATTN_OK);
    REQUIRE(edgeattn_dense_packed(&ld, x.data(), p_new.data(), packed_bytes, y_new.data()) == EDGEATTN_OK);
    CHECK(same_bits(y_old, y_new));

    const std::size_t max_len = 9, n = 4, dim = 6;
    std::vector<float> P(max_len * dim);
    REQUIRE(edgeattn_positional_encoding_table(max_len, dim, P.data()) == EDGEATTN_OK);
    const std::vector<float> X = random_floats(2 * n * dim, 54);
    std::vector<float> Y_old(X.size()), Y_new(X.size());
    REQUIRE(edgeattn_positional_encoding_add(2, n, dim, X.data(), P.data(), max_len, Y_old.data()) == EDGEATTN_OK);
    REQUIRE(edgeattn_positional_encoding_add_at(2, n, dim, 0, X.data(), P.data(), max_len, Y_new.data()) ==
            EDGEATTN_OK);
    CHECK(same_bits(Y_old, Y_new));
    for (std::size_t i = 0; i < X.size(); ++i) CHECK(Y_old[i] == X[i] + P[i % (n * dim)]);
    CHECK(edgeattn_positional_encoding_add(2, max_len + 1, dim, X.data(), P.data(), max_len, Y_old.data()) ==
          EDGEATTN_ERR_SEQUENCE_TOO_LONG);
}

TEST_CASE("0.x C++ names: the fp32 constructors and cache members give the 1.0 members' bits") {
    static_assert(std::is_same<edgeattn::SelfAttention<1, 4, 8, 2>, edgeattn::PositionalSelfAttention<1, 4, 8, 2>>::value,
                  "SelfAttention is PositionalSelfAttention");
    const model m;
    const edgeattn_valid_lens vl = {EDGEATTN_VALID_LENS_PER_BATCH, m.lens.data()};
    {
        edgeattn::MultiHeadAttention<B, Q, K, qs, ks, vs, h, H> old_module(m.old_weights()), module(m.weights());
        std::vector<float> a(B * Q * h), b(a.size());
        REQUIRE(old_module.forward(m.queries.data(), m.keys.data(), m.values.data(), &vl, a.data()) == EDGEATTN_OK);
        REQUIRE(module.forward(m.queries.data(), m.keys.data(), m.values.data(), &vl, b.data()) == EDGEATTN_OK);
        CHECK(same_bits(a, b));
        using Module = edgeattn::MultiHeadAttention<B, Q, K, qs, ks, vs, h, H>;
        Module::Packed old_packed, packed;
        REQUIRE(old_packed.pack(m.old_weights()) == EDGEATTN_OK);
        REQUIRE(packed.pack(m.weights()) == EDGEATTN_OK);
        CHECK(std::memcmp(old_packed.data(), packed.data(), Module::Packed::bytes) == 0);
    }
    {
        const edgeattn_additive_weights aw = {m.W_q.data(), m.W_k.data(), m.w_v.data()};
        const edgeattn_weights w = fp32_weights(m.W_q.data(), m.W_k.data(), m.w_v.data(), nullptr);
        edgeattn::AdditiveAttention<B, Q, K, qs, ks, vs, h> old_module(aw), module(w);
        std::vector<float> a(B * Q * vs), b(a.size());
        REQUIRE(old_module.forward(m.queries.data(), m.keys.data(), m.values.data(), &vl, a.data()) == EDGEATTN_OK);
        REQUIRE(module.forward(m.queries.data(), m.keys.data(), m.values.data(), &vl, b.data()) == EDGEATTN_OK);
        CHECK(same_bits(a, b));
    }
    {
        const std::size_t cap = 4, hs = h / H;
        const edgeattn_attention_dims d = {1, 1, cap, qs, ks, vs, h, H, 0, 0};
        static edgeattn::KVCache<1, H, hs, cap> old_cache, cache;
        std::vector<float> store_ws = workspace_for(EDGEATTN_OP_KV_CACHE_STORE, d, 1);
        std::vector<float> attend_ws = workspace_for(EDGEATTN_OP_KV_CACHE_ATTEND, d);
        const edgeattn_mha_weights ow = m.old_weights();
        const edgeattn_weights w = m.weights();
        const std::vector<float> x = random_floats(ks, 61), y = random_floats(vs, 62), q = random_floats(qs, 63);
        REQUIRE(old_cache.append(&d, 1, x.data(), y.data(), &ow, store_ws.data(), store_ws.size() * 4) == EDGEATTN_OK);
        REQUIRE(cache.store(&d, 1, x.data(), y.data(), &w, store_ws.data(), store_ws.size() * 4) == EDGEATTN_OK);
        std::vector<float> a(h), b(h);
        edgeattn_attention_mask causal{};
        causal.causal = 1;
        edgeattn_attention_options o{};
        o.mask = causal;
        REQUIRE(old_cache.attention(&d, q.data(), &causal, &ow, attend_ws.data(), attend_ws.size() * 4, a.data()) ==
                EDGEATTN_OK);
        REQUIRE(cache.attend(&d, q.data(), &w, &o, attend_ws.data(), attend_ws.size() * 4, b.data()) == EDGEATTN_OK);
        CHECK(same_bits(a, b));
        std::vector<float> packed(edgeattn_mha_packed_size(&d, &w) / 4);
        REQUIRE(edgeattn_mha_pack(&d, &w, packed.data(), packed.size() * 4) == EDGEATTN_OK);
        REQUIRE(old_cache.append_packed(&d, 1, y.data(), y.data(), packed.data(), packed.size() * 4, store_ws.data(),
                                        store_ws.size() * 4) == EDGEATTN_OK);
        REQUIRE(cache.store_packed(&d, 1, y.data(), y.data(), packed.data(), packed.size() * 4, store_ws.data(),
                                   store_ws.size() * 4) == EDGEATTN_OK);
        REQUIRE(old_cache.attention_packed(&d, q.data(), nullptr, packed.data(), packed.size() * 4, attend_ws.data(),
                                           attend_ws.size() * 4, a.data()) == EDGEATTN_OK);
        REQUIRE(cache.attend_packed(&d, q.data(), packed.data(), packed.size() * 4, nullptr, attend_ws.data(),
                                    attend_ws.size() * 4, b.data()) == EDGEATTN_OK);
        CHECK(same_bits(a, b));
        CHECK(old_cache.length(0) == 2);
        CHECK(std::memcmp(old_cache.c_cache().lengths, cache.c_cache().lengths, sizeof(std::int32_t)) == 0);
    }
}
