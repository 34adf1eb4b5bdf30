// ONNX Attention's score semantics (options.scale, softcap, masking,
// weights_output; mask.alignment, right_window, alibi_max_bias) against the
// float64 reference (tests/reference.cpp, Mask::row) on every kernel path:
// edgeattn_sdpa, edgeattn_mha (+ _packed) with grouped-query heads, and the
// KV cache attend (+ _packed) over fp32, int8 and fp16 caches, in place and wrapped (a window
// cache with sinks, read as a ring), with and without the weights output,
// over one key block and several (the streaming online softmax); VALID_END
// with valid lengths per query, row by row.
#include <doctest/doctest.h>

#include <edgeattn/edgeattn.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "call_helpers.hpp"
#include "path_helpers.hpp"
#include "reference.hpp"
#include "window_cache_helpers.hpp"

namespace {

using edgeattn_ref::Mask;
using test_paths::paths;
using test_paths::random_floats;
using test_paths::widen;

// One combination of the options, set alike on the library's structs and
// the reference's Mask.
struct combo {
    const char *name;
    float scale, softcap;
    int masking, weights_output, alignment;
    bool causal;
    std::size_t window, right_window;
    float alibi;
};

const combo combos[] = {
    {"scale", 0.37f, 0, 0, 0, 0, false, 0, 0, 0},
    {"negative scale", -0.2f, 0, 0, 0, 0, false, 0, 0, 0},
    {"softcap", 0, 1.5f, 0, 0, 0, false, 0, 0, 0},
    {"scale+softcap scores out", 0.9f, 2.0f, 0, 1, 0, true, 0, 0, 0},
    {"softcapped out", 0.9f, 2.0f, 1, 2, 1, true, 0, 0, 0},
    {"masked out d2l", 0.5f, 3.0f, 0, 3, 1, true, 0, 0, 0},
    {"masked out exclude", 0.5f, 3.0f, 1, 3, 2, true, 3, 0, 0},
    {"exclude causal top-left", 0, 0, 1, 0, 1, true, 0, 0, 0},
    {"exclude causal valid-end", 0, 0, 1, 0, 2, true, 0, 0, 0},
    {"d2l causal valid-end", 0, 0, 0, 0, 2, true, 0, 0, 0},
    {"right window", 0, 0, 0, 0, 0, false, 0, 3, 0},
    {"bidirectional window top-left exclude", 0, 0, 1, 0, 1, false, 3, 2, 0},
    {"right window valid-end exclude", 0, 0, 1, 0, 2, false, 0, 1, 0},
    {"softcap+alibi+causal top-left+exclude", 0, 4.0f, 1, 0, 1, true, 0, 0, 8.0f},
    {"alibi bottom-right window", 0.3f, 0, 0, 0, 0, true, 5, 0, 4.0f},
    // Wider than a small wrapped ring: by index it would reach the sinks,
    // by stream position (as causal and ALiBi count) they lie outside.
    {"alibi window past the ring", 0, 0, 0, 0, 0, true, 7, 0, 2.0f},
    {"alibi masked out", 0, 2.5f, 1, 3, 1, false, 0, 4, 2.0f},
};

void apply(const combo &c, edgeattn_attention_options &o, Mask &m, bool alibi) {
    o.scale = c.scale;
    o.softcap = c.softcap;
    o.masking = static_cast<edgeattn_masking>(c.masking);
    o.weights_output = static_cast<edgeattn_weights_output>(c.weights_output);
    o.mask.alignment = static_cast<edgeattn_query_alignment>(c.alignment);
    o.mask.causal = c.causal;
    o.mask.window = c.window;
    o.mask.right_window = c.right_window;
    o.mask.alibi_max_bias = alibi ? c.alibi : 0.0f;
    m.scale = c.scale;
    m.softcap = c.softcap;
    m.exclude = c.masking == 1;
    m.weights_output = static_cast<Mask::WeightsOut>(c.weights_output);
    m.alignment = static_cast<Mask::Align>(c.alignment);
    m.causal = c.causal;
    m.window = c.window;
    m.right_window = c.right_window;
    m.alibi_max_bias = alibi ? c.alibi : 0.0;
}

// Outputs against the reference; a row the reference gives all zeros (a
// row that sees no key with exclude) must be exactly +0.
void check_output(const float *got, const std::vector<double> &want, std::size_t row_size) {
    CHECK(test_paths::rel_l2(got, want) < 2e-5);
    for (std::size_t r = 0; r * row_size < want.size(); ++r) {
        bool zero = true;
        for (std::size_t c = 0; c < row_size; ++c) zero = zero && want[r * row_size + c] == 0.0;
        if (!zero) continue;
        for (std::size_t c = 0; c < row_size; ++c) {
            INFO("zero row " << r);
            CHECK(got[r * row_size + c] == 0.0f);
            CHECK(!std::signbit(got[r * row_size + c]));
        }
    }
}

// Weights of any mode: -inf and -1e6 exactly where the reference has them,
// every other value within 2e-5 of its size (softmax weights: absolute).
void check_weights(const float *got, const std::vector<double> &want) {
    std::size_t bad = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        const double w = want[i], g = got[i];
        const bool ok = std::isinf(w) ? g == w : std::fabs(g - w) <= 2e-5 * (1.0 + std::fabs(w));
        if (!ok && bad++ < 4) {
            INFO("weight " << i << ": got " << g << ", want " << w);
            CHECK(ok);
        }
    }
    CHECK(bad == 0);
}

// Random fp32 grouped-query projections (qs inputs, h hiddens, H heads
// over Hkv key/value heads; no biases) from seeds seed .. seed + 3, and the
// same weights in float64 for the reference.
struct random_mha_weights {
    std::vector<float> Wq, Wk, Wv, Wo;
    std::vector<double> dWq, dWk, dWv, dWo;
    random_mha_weights(std::size_t qs, std::size_t h, std::size_t H, std::size_t Hkv, unsigned seed)
        : Wq(random_floats(h * qs, seed, 0.5f)), Wk(random_floats(h / H * Hkv * qs, seed + 1, 0.5f)),
          Wv(random_floats(h / H * Hkv * qs, seed + 2, 0.5f)), Wo(random_floats(h * h, seed + 3, 0.3f)),
          dWq(widen(Wq)), dWk(widen(Wk)), dWv(widen(Wv)), dWo(widen(Wo)) {}
    edgeattn_weights weights() const { return test_calls::fp32_weights(Wq.data(), Wk.data(), Wv.data(), Wo.data()); }
    edgeattn_ref::MhaWeights reference() const {
        return {dWq.data(), dWk.data(), dWv.data(), dWo.data(), nullptr, nullptr, nullptr, nullptr};
    }
};

}  // namespace

TEST_CASE("sdpa: scale, softcap, masking, weights output, alignment, windows against float64, every path") {
    test_paths::path_guard guard;
    const std::size_t B = 2, d = 8, v = 5;
    for (std::size_t Q : {std::size_t(5), std::size_t(19)})
        for (std::size_t K : {std::size_t(7), std::size_t(300)}) {
            const auto q = random_floats(B * Q * d, 11, 1.5f), k = random_floats(B * K * d, 12, 1.5f),
                       val = random_floats(B * K * v, 13);
            // Valid lengths below Q too: VALID_END rows before key 0 see nothing.
            std::vector<int32_t> lens = {static_cast<int32_t>(Q > 2 ? Q - 2 : 1), static_cast<int32_t>(K + 3)};
            const edgeattn_valid_lens vl{EDGEATTN_VALID_LENS_PER_BATCH, lens.data()};
            edgeattn_ref::ValidLens rvl{edgeattn_ref::ValidLens::per_batch, lens};
            const edgeattn_attention_dims dims{B, Q, K, d, d, v, 0, 0, 0};
            std::vector<float> ws(test_calls::workspace_bytes(EDGEATTN_OP_SDPA, dims, 1) / sizeof(float));
            for (const combo &c : combos) {
                if (c.alibi != 0) continue;  // sdpa has no heads: refused (test_status.cpp)
                edgeattn_attention_options o{};
                o.valid_lens = vl;
                Mask m;
                apply(c, o, m, false);
                std::vector<double> want(B * Q * v), want_w(B * Q * K);
                edgeattn_ref::dot_product_attention_masked(B, Q, K, d, v, widen(q).data(), widen(k).data(),
                                                           widen(val).data(), rvl, m, want.data(), want_w.data());
                for (edgeattn_isa isa : paths()) {
                    REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
                    for (bool with_weights : {false, true}) {
                        INFO(c.name << ", Q " << Q << ", K " << K << ", " << edgeattn_isa_name(isa)
                                    << (with_weights ? ", weights" : ""));
                        std::vector<float> out(B * Q * v, 7.0f), w(B * Q * K, 7.0f);
                        REQUIRE(edgeattn_sdpa(&dims, q.data(), k.data(), val.data(), &o, ws.data(),
                                              ws.size() * sizeof(float), out.data(),
                                              with_weights ? w.data() : nullptr) == EDGEATTN_OK);
                        check_output(out.data(), want, v);
                        if (with_weights) check_weights(w.data(), want_w);
                    }
                }
            }
        }
}

namespace {

// The keys row i of a (Q, K) call sees under VALID_END with its own valid
// length len, by the contract's definitions: p_i = i + min(len, K) - Q;
// key j visible when j < len and, causal, j <= p_i and, window w > 0,
// j > p_i - w.
std::vector<bool> valid_end_visible(std::size_t i, std::size_t Q, std::size_t K, std::int64_t len, bool causal,
                                    std::size_t window) {
    const std::int64_t p = static_cast<std::int64_t>(i) + std::min<std::int64_t>(len, K) - static_cast<std::int64_t>(Q);
    std::vector<bool> seen(K);
    for (std::size_t j = 0; j < K; ++j) {
        const std::int64_t jj = static_cast<std::int64_t>(j);
        seen[j] = jj < len && (!causal || jj <= p) && (window == 0 || jj > p - static_cast<std::int64_t>(window));
    }
    return seen;
}

// Whether one row's softmax weights match its visible keys: exactly 0 off
// them and positive on them; a row that sees no key is uniform, 1/K (D2L),
// or all zero (EXCLUDE). The first of a call's wrong rows is shown.
bool visible_weights_match(const float *w, const std::vector<bool> &seen, bool exclude, bool first) {
    const std::size_t K = seen.size();
    const bool any = std::find(seen.begin(), seen.end(), true) != seen.end();
    for (std::size_t j = 0; j < K; ++j) {
        const bool ok = !any ? (exclude ? w[j] == 0.0f : std::fabs(w[j] - 1.0 / K) <= 1e-6)
                             : seen[j] ? w[j] > 0.0f : w[j] == 0.0f;
        if (ok) continue;
        if (first) {
            INFO("visible keys " << std::count(seen.begin(), seen.end(), true) << "; key " << j << " weighs "
                                 << w[j]);
            CHECK(ok);
        }
        return false;
    }
    return true;
}

}  // namespace

// VALID_END places each query row by its own valid length when the lengths
// are given per query: rows of one batch element lie at different
// positions, some before key 0 (seeing nothing causally), some with lengths
// past K. Against the float64 reference and, key by key, against the
// visible sets the contract defines.
TEST_CASE("VALID_END with valid lengths per query: each row at i + its own length - Q, sdpa and mha, every path") {
    test_paths::path_guard guard;
    const std::size_t B = 2, Q = 7, d = 8, v = 5, qs = 12, h = 24, H = 4, Hkv = 2;
    struct variant {
        const char *name;
        bool exclude, causal;
        std::size_t window;
    };
    const variant variants[] = {
        {"d2l causal", false, true, 0},
        {"exclude causal", true, true, 0},
        {"exclude causal window 3", true, true, 3},
        {"d2l causal window 40", false, true, 40},
    };
    for (std::size_t K : {std::size_t(9), std::size_t(300)}) {
        // Per (b, i), in no order: K, lengths below Q (rows before key 0), 0,
        // lengths past K (as K), one key.
        const std::vector<int32_t> lens =
            K == 9 ? std::vector<int32_t>{9, 2, 0, 12, 5, 1, 7, 3, 9, 6, 4, 0, 8, 2}
                   : std::vector<int32_t>{300, 40, 0, 350, 150, 1, 299, 3, 260, 6, 128, 0, 200, 77};
        const edgeattn_valid_lens vl{EDGEATTN_VALID_LENS_PER_QUERY, lens.data()};
        const edgeattn_ref::ValidLens rvl{edgeattn_ref::ValidLens::per_query, lens};
        const auto q = random_floats(B * Q * d, 61, 1.5f), k = random_floats(B * K * d, 62, 1.5f),
                   val = random_floats(B * K * v, 63);
        const auto x = random_floats(B * Q * qs, 64), kx = random_floats(B * K * qs, 65),
                   vx = random_floats(B * K * qs, 66);
        const random_mha_weights mw(qs, h, H, Hkv, 67);
        const edgeattn_weights w = mw.weights();
        const edgeattn_ref::MhaWeights rw = mw.reference();
        const edgeattn_attention_dims sdims{B, Q, K, d, d, v, 0, 0, 0, 0};
        const edgeattn_attention_dims mdims{B, Q, K, qs, qs, qs, h, H, Hkv, 0};
        std::vector<float> sws(test_calls::workspace_bytes(EDGEATTN_OP_SDPA, sdims, 1) / sizeof(float));
        std::vector<float> mws(test_calls::workspace_bytes(EDGEATTN_OP_MHA, mdims, 1) / sizeof(float));
        for (const variant &c : variants) {
            edgeattn_attention_options o{};
            o.valid_lens = vl;
            o.masking = c.exclude ? EDGEATTN_MASKING_EXCLUDE : EDGEATTN_MASKING_D2L;
            o.mask.alignment = EDGEATTN_ALIGN_VALID_END;
            o.mask.causal = c.causal;
            o.mask.window = c.window;
            Mask m;
            m.alignment = Mask::valid_end;
            m.exclude = c.exclude;
            m.causal = c.causal;
            m.window = c.window;
            std::vector<double> want(B * Q * v), want_w(B * Q * K), want_m(B * Q * h), want_mw(B * H * Q * K);
            edgeattn_ref::dot_product_attention_masked(B, Q, K, d, v, widen(q).data(), widen(k).data(),
                                                       widen(val).data(), rvl, m, want.data(), want_w.data());
            edgeattn_ref::multi_head_attention_masked(B, Q, K, qs, qs, qs, h, H, Hkv, widen(x).data(),
                                                      widen(kx).data(), widen(vx).data(), rvl, m, rw, want_m.data(),
                                                      want_mw.data());
            for (edgeattn_isa isa : paths()) {
                REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
                INFO(std::string(c.name) << ", K " << K << ", " << std::string(edgeattn_isa_name(isa)));
                std::vector<float> out(B * Q * v, 7.0f), wt(B * Q * K, 7.0f);
                REQUIRE(edgeattn_sdpa(&sdims, q.data(), k.data(), val.data(), &o, sws.data(),
                                      sws.size() * sizeof(float), out.data(), wt.data()) == EDGEATTN_OK);
                check_output(out.data(), want, v);
                check_weights(wt.data(), want_w);
                std::vector<float> mout(B * Q * h, 7.0f), mwt(B * H * Q * K, 7.0f);
                REQUIRE(edgeattn_mha(&mdims, x.data(), kx.data(), vx.data(), &w, &o, mws.data(),
                                     mws.size() * sizeof(float), mout.data(), mwt.data()) == EDGEATTN_OK);
                check_output(mout.data(), want_m, h);
                check_weights(mwt.data(), want_mw);
                // Without the weights output (the kernels' other route).
                std::vector<float> out_only(B * Q * v, 7.0f), mout_only(B * Q * h, 7.0f);
                REQUIRE(edgeattn_sdpa(&sdims, q.data(), k.data(), val.data(), &o, sws.data(),
                                      sws.size() * sizeof(float), out_only.data(), nullptr) == EDGEATTN_OK);
                check_output(out_only.data(), want, v);
                REQUIRE(edgeattn_mha(&mdims, x.data(), kx.data(), vx.data(), &w, &o, mws.data(),
                                     mws.size() * sizeof(float), mout_only.data(), nullptr) == EDGEATTN_OK);
                check_output(mout_only.data(), want_m, h);
                // Key by key: the visible sets of the contract's rule.
                std::size_t rows_wrong = 0;
                for (std::size_t b = 0; b < B; ++b)
                    for (std::size_t i = 0; i < Q; ++i) {
                        const std::int32_t len = lens[b * Q + i];
                        INFO("batch element " << b << " row " << i << " valid length " << len);
                        const std::vector<bool> seen = valid_end_visible(i, Q, K, len, c.causal, c.window);
                        rows_wrong += !visible_weights_match(wt.data() + (b * Q + i) * K, seen, c.exclude,
                                                             rows_wrong == 0);
                        for (std::size_t n = 0; n < H; ++n) {
                            INFO("mha head " << n);
                            rows_wrong += !visible_weights_match(mwt.data() + ((b * H + n) * Q + i) * K, seen,
                                                                 c.exclude, rows_wrong == 0);
                        }
                    }
                CHECK(rows_wrong == 0);
            }
        }
    }
}

TEST_CASE("mha with grouped-query heads: ALiBi slopes (H = 6: both of BLOOM's series) and every option, every path") {
    test_paths::path_guard guard;
    const std::size_t B = 2, qs = 12, h = 24;
    for (std::size_t H : {std::size_t(6), std::size_t(4)})
        for (std::size_t K : {std::size_t(9), std::size_t(280)}) {
            const std::size_t Q = 6, Hkv = 2;
            const auto x = random_floats(B * Q * qs, 21), kx = random_floats(B * K * qs, 22),
                       vx = random_floats(B * K * qs, 23);
            const random_mha_weights mw(qs, h, H, Hkv, 24);
            const edgeattn_weights w = mw.weights();
            const edgeattn_ref::MhaWeights rw = mw.reference();
            const edgeattn_attention_dims dims{B, Q, K, qs, qs, qs, h, H, Hkv};
            std::vector<float> ws(test_calls::workspace_bytes(EDGEATTN_OP_MHA, dims, 1) / sizeof(float));
            const std::size_t packed_bytes = edgeattn_mha_packed_size(&dims, &w);
            REQUIRE(packed_bytes > 0);
            std::vector<float> packed(packed_bytes / sizeof(float) + 1);
            REQUIRE(edgeattn_mha_pack(&dims, &w, packed.data(), packed_bytes) == EDGEATTN_OK);
            for (const combo &c : combos) {
                edgeattn_attention_options o{};
                Mask m;
                apply(c, o, m, true);
                std::vector<double> want(B * Q * h), want_w(B * H * Q * K);
                edgeattn_ref::multi_head_attention_masked(B, Q, K, qs, qs, qs, h, H, Hkv, widen(x).data(),
                                                          widen(kx).data(), widen(vx).data(), {}, m, rw,
                                                          want.data(), want_w.data());
                for (edgeattn_isa isa : paths()) {
                    REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
                    for (bool with_weights : {false, true}) {
                        INFO(c.name << ", H " << H << ", K " << K << ", " << edgeattn_isa_name(isa)
                                    << (with_weights ? ", weights" : ""));
                        std::vector<float> out(B * Q * h, 7.0f), wt(B * H * Q * K, 7.0f);
                        REQUIRE(edgeattn_mha(&dims, x.data(), kx.data(), vx.data(), &w, &o, ws.data(),
                                             ws.size() * sizeof(float), out.data(),
                                             with_weights ? wt.data() : nullptr) == EDGEATTN_OK);
                        CHECK(test_paths::rel_l2(out.data(), want) < 2e-5);
                        if (with_weights) check_weights(wt.data(), want_w);
                        // edgeattn_mha_packed takes the same options.
                        std::vector<float> out_packed(B * Q * h, 7.0f), wt_packed(B * H * Q * K, 7.0f);
                        REQUIRE(edgeattn_mha_packed(&dims, x.data(), kx.data(), vx.data(), packed.data(),
                                                    packed_bytes, &o, ws.data(), ws.size() * sizeof(float),
                                                    out_packed.data(),
                                                    with_weights ? wt_packed.data() : nullptr) == EDGEATTN_OK);
                        CHECK(test_paths::rel_l2(out_packed.data(), want) < 2e-5);
                        if (with_weights) check_weights(wt_packed.data(), want_w);
                    }
                }
            }
        }
}

namespace {

// A window KV cache (sinks + window rows) after `given` tokens, attended by
// its last Q tokens' queries; the reference reads the rows it holds back
// (dequantised) at their stream positions.
// Q = 1: a decode step, which the vector paths take through their decode
// tiles (src/decode_rows.cpp) when no weights are asked for.
void check_cache(edgeattn_dtype storage, std::size_t sinks, std::size_t window, std::size_t given,
                 const combo &c, bool with_weights, std::size_t Q) {
    const std::size_t B = 2, d = 16, h = 16, H = 4, Hkv = 2;
    window_tests::layer L(d, h, H, Hkv, 31);
    window_tests::window_cache cache(B, Hkv, h / H, sinks, window, storage);
    const std::size_t cap = sinks + window, hs = h / H, kvh = L.kvh;
    const auto tokens = random_floats(B * given * d, 32);
    const edgeattn_weights w = L.weights();
    // Stored one token at a time: the ring wraps however `given` falls.
    {
        const edgeattn_attention_dims sd = L.dims(B, 1, cap);
        std::vector<float> ws(test_calls::workspace_bytes(EDGEATTN_OP_KV_CACHE_STORE, sd, 1, 1) / sizeof(float));
        std::vector<float> step(B * d);
        for (std::size_t t = 0; t < given; ++t) {
            for (std::size_t b = 0; b < B; ++b)
                std::memcpy(step.data() + b * d, tokens.data() + (b * given + t) * d, d * sizeof(float));
            REQUIRE(edgeattn_kv_cache_store(&cache.c, &sd, 1, step.data(), step.data(), &w, nullptr, ws.data(),
                                            ws.size() * sizeof(float)) == EDGEATTN_OK);
        }
    }
    const edgeattn_attention_dims ad = L.dims(B, Q, cap);
    std::vector<float> queries(B * Q * d);
    for (std::size_t b = 0; b < B; ++b)
        std::memcpy(queries.data() + b * Q * d, tokens.data() + (b * given + given - Q) * d, Q * d * sizeof(float));
    edgeattn_attention_options o{};
    Mask m;
    apply(c, o, m, true);
    o.valid_lens = {};
    std::vector<double> want(B * Q * h), want_w(B * H * Q * cap, 0.0);
    const std::vector<std::size_t> held = cache.held(given);
    const std::size_t Kb = held.size();
    for (std::size_t b = 0; b < B; ++b) {
        const std::vector<double> keys = cache.rows(false, b, held), values = cache.rows(true, b, held);
        Mask mb = m;
        mb.key_positions.assign(held.begin(), held.end());
        mb.first_query_position = static_cast<std::int64_t>(given - Q);
        std::vector<double> heads(Q * h, 0.0), dots(Kb), probs(Kb), wrow(Kb);
        for (std::size_t i = 0; i < Q; ++i) {
            const std::vector<double> pq = window_tests::project(L.Wq, L.bq, queries.data() + (b * Q + i) * d, d, h);
            for (std::size_t n = 0; n < H; ++n) {
                const std::size_t g = n / (H / Hkv);
                for (std::size_t j = 0; j < Kb; ++j) {
                    double s = 0;
                    for (std::size_t cc = 0; cc < hs; ++cc) s += pq[n * hs + cc] * keys[j * kvh + g * hs + cc];
                    dots[j] = s;
                }
                mb.row(b, n, H, i, Q, Kb, hs, INT64_MAX, dots.data(), probs.data(), wrow.data());
                for (std::size_t j = 0; j < Kb; ++j) {
                    want_w[((b * H + n) * Q + i) * cap + j] = wrow[j];
                    for (std::size_t cc = 0; cc < hs; ++cc)
                        heads[i * h + n * hs + cc] += probs[j] * values[j * kvh + g * hs + cc];
                }
            }
        }
        for (std::size_t i = 0; i < Q; ++i) {
            for (std::size_t oo = 0; oo < h; ++oo) {
                double s = L.bo[oo];
                for (std::size_t cc = 0; cc < h; ++cc) s += heads[i * h + cc] * L.Wo[oo * h + cc];
                want[(b * Q + i) * h + oo] = s;
            }
        }
    }
    std::vector<float> ws(test_calls::workspace_bytes(EDGEATTN_OP_KV_CACHE_ATTEND, ad, 1) / sizeof(float));
    for (edgeattn_isa isa : paths()) {
        REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
        INFO(c.name << ", storage " << storage << ", sinks " << sinks << ", window " << window << ", given "
                    << given << ", " << edgeattn_isa_name(isa) << (with_weights ? ", weights" : ""));
        std::vector<float> out(B * Q * h, 7.0f), wt(B * H * Q * cap, 7.0f);
        REQUIRE(edgeattn_kv_cache_attend(&cache.c, &ad, queries.data(), &w, &o, ws.data(), ws.size() * sizeof(float),
                                         out.data(), with_weights ? wt.data() : nullptr) == EDGEATTN_OK);
        CHECK(test_paths::rel_l2(out.data(), want) < (storage == EDGEATTN_DTYPE_F32 ? 2e-5 : 1e-4));
        if (with_weights) {
            check_weights(wt.data(), want_w);  // positions past the held rows: 0 in every mode
        }
        // The packed attend takes the same options.
        const std::size_t packed_bytes = edgeattn_mha_packed_size(&ad, &w);
        REQUIRE(packed_bytes > 0);
        std::vector<float> packed(packed_bytes / sizeof(float) + 1);
        REQUIRE(edgeattn_mha_pack(&ad, &w, packed.data(), packed_bytes) == EDGEATTN_OK);
        std::vector<float> out_packed(B * Q * h, 7.0f), wt_packed(B * H * Q * cap, 7.0f);
        REQUIRE(edgeattn_kv_cache_attend_packed(&cache.c, &ad, queries.data(), packed.data(), packed_bytes, &o,
                                                ws.data(), ws.size() * sizeof(float), out_packed.data(),
                                                with_weights ? wt_packed.data() : nullptr) == EDGEATTN_OK);
        CHECK(test_paths::rel_l2(out_packed.data(), want) < (storage == EDGEATTN_DTYPE_F32 ? 2e-5 : 1e-4));
        if (with_weights) check_weights(wt_packed.data(), want_w);
    }
}

}  // namespace

TEST_CASE("KV cache attend: every option over fp32, int8 and fp16 caches, in place and wrapped with sinks") {
    test_paths::path_guard guard;
    const combo *picked[] = {&combos[2], &combos[5], &combos[6], &combos[13], &combos[14], &combos[15]};
    for (edgeattn_dtype storage : {EDGEATTN_DTYPE_F32, EDGEATTN_DTYPE_INT8, EDGEATTN_DTYPE_F16})
        for (const combo *c : picked)
            for (bool with_weights : {false, true})
                for (std::size_t Q : {1u, 3u}) {
                    check_cache(storage, 2, 6, 5, *c, with_weights, Q);      // in place
                    check_cache(storage, 2, 6, 13, *c, with_weights, Q);     // wrapped: a ring, sinks dropped-behind
                    check_cache(storage, 3, 290, 700, *c, with_weights, Q);  // wrapped, several key blocks
                }
}

TEST_CASE("the options give the same bits for 1 and 4 threads") {
    const std::size_t B = 2, Q = 70, K = 300, qs = 32, h = 32, H = 4;
    const auto x = random_floats(B * Q * qs, 41), kx = random_floats(B * K * qs, 42), vx = random_floats(B * K * qs, 43);
    const auto W = random_floats(h * qs, 44, 0.3f), Wo = random_floats(h * h, 45, 0.3f);
    const edgeattn_weights w = test_calls::fp32_weights(W.data(), W.data(), W.data(), Wo.data());
    const edgeattn_attention_dims dims{B, Q, K, qs, qs, qs, h, H, 2};
    std::vector<float> ws(test_calls::workspace_bytes(EDGEATTN_OP_MHA, dims, 4) / sizeof(float));
    for (const combo &c : combos) {
        edgeattn_attention_options o{};
        Mask m;
        apply(c, o, m, true);
        for (bool with_weights : {false, true}) {
            std::vector<float> first_out, first_w;
            for (int threads : {1, 4}) {
                test_paths::set_threads(threads);
                std::vector<float> out(B * Q * h), wt(with_weights ? B * H * Q * K : 0);
                REQUIRE(edgeattn_mha(&dims, x.data(), kx.data(), vx.data(), &w, &o, ws.data(),
                                     ws.size() * sizeof(float), out.data(),
                                     with_weights ? wt.data() : nullptr) == EDGEATTN_OK);
                if (first_out.empty()) {
                    first_out = out;
                    first_w = wt;
                    continue;
                }
                INFO(c.name << (with_weights ? ", weights" : ""));
                CHECK(std::memcmp(out.data(), first_out.data(), out.size() * sizeof(float)) == 0);
                CHECK((wt.empty() || std::memcmp(wt.data(), first_w.data(), wt.size() * sizeof(float)) == 0));
            }
        }
    }
    test_paths::set_threads(8);
}

// A call reads an options struct with no score option and no mask set
// (every one of those fields zero bits) without checking each field; any
// other bits go through the checks. A negative zero (scale, ALiBi) is such
// bits and still means "unset"; the mask's padding (64-bit: after
// `alignment`) is never read, whatever it holds. Both give the same bits as
// the zeroed struct on every path; a mask that is set (one causal flag)
// still applies.
TEST_CASE("options whose only nonzero bytes are negative zeros or the mask's padding act as unset") {
    const std::size_t B = 2, Q = 3, K = 9, d = 6, dv = 5;
    const auto q = random_floats(B * Q * d, 51), k = random_floats(B * K * d, 52), v = random_floats(B * K * dv, 53);
    const std::int32_t lens[B] = {4, 9};
    const edgeattn_attention_dims dims{B, Q, K, d, d, dv, 0, 0, 0, 0};
    std::vector<float> ws(test_calls::workspace_bytes(EDGEATTN_OP_SDPA, dims, 1) / sizeof(float) + 64);
    auto run = [&](const edgeattn_attention_options &o) {
        std::vector<float> out(B * Q * dv, -7.0f), wt(B * Q * K, -7.0f);
        REQUIRE(edgeattn_sdpa(&dims, q.data(), k.data(), v.data(), &o, ws.data(), ws.size() * sizeof(float),
                              out.data(), wt.data()) == EDGEATTN_OK);
        out.insert(out.end(), wt.begin(), wt.end());
        return out;
    };
    for (const edgeattn_isa isa : paths()) {
        INFO("path " << edgeattn_isa_name(isa));
        REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
        edgeattn_attention_options zeroed;
        std::memset(&zeroed, 0, sizeof zeroed);
        zeroed.valid_lens = {EDGEATTN_VALID_LENS_PER_BATCH, lens};
        const std::vector<float> unset = run(zeroed);

        edgeattn_attention_options negative_zeros = zeroed;
        negative_zeros.scale = -0.0f;
        negative_zeros.mask.alibi_max_bias = -0.0f;
        CHECK(std::memcmp(run(negative_zeros).data(), unset.data(), unset.size() * sizeof(float)) == 0);

        // The bytes between `alignment` and `right_window`, where the ABI
        // leaves a gap (none on 32-bit targets).
        const std::size_t gap_begin = offsetof(edgeattn_attention_mask, alignment) + sizeof(int);
        const std::size_t gap_end = offsetof(edgeattn_attention_mask, right_window);
        if (gap_end > gap_begin) {
            edgeattn_attention_options padded = zeroed;
            std::memset(reinterpret_cast<unsigned char *>(&padded.mask) + gap_begin, 0xA5, gap_end - gap_begin);
            CHECK(std::memcmp(run(padded).data(), unset.data(), unset.size() * sizeof(float)) == 0);
        }

        edgeattn_attention_options causal = zeroed;
        causal.mask.causal = 1;
        const std::vector<float> masked = run(causal);
        CHECK(std::memcmp(masked.data(), unset.data(), unset.size() * sizeof(float)) != 0);
        for (std::size_t b = 0; b < B; ++b)  // row 0 sees keys up to K - Q alone
            for (std::size_t j = K - Q + 1; j < K; ++j) CHECK(masked[B * Q * dv + (b * Q) * K + j] == 0.0f);
    }
    REQUIRE(edgeattn_set_isa(EDGEATTN_ISA_AUTO) == EDGEATTN_OK);
}

TEST_CASE("additive attention takes masking, alignment and right_window") {
    test_paths::path_guard guard;
    const std::size_t B = 2, Q = 6, K = 9, qs = 5, ks = 4, vs = 3, hh = 7;
    const auto q = random_floats(B * Q * qs, 51), k = random_floats(B * K * ks, 52), val = random_floats(B * K * vs, 53);
    const auto Wq = random_floats(hh * qs, 54), Wk = random_floats(hh * ks, 55), wv = random_floats(hh, 56);
    const edgeattn_weights w = test_calls::fp32_weights(Wq.data(), Wk.data(), wv.data(), nullptr);
    std::vector<int32_t> lens = {3, 12};
    const edgeattn_attention_dims dims{B, Q, K, qs, ks, vs, hh, 0, 0};
    std::vector<float> ws(test_calls::workspace_bytes(EDGEATTN_OP_ADDITIVE, dims, 1) / sizeof(float));
    for (const combo &c : combos) {
        if (c.scale != 0 || c.softcap != 0 || c.alibi != 0 || c.weights_output != 0) continue;
        edgeattn_attention_options o{};
        o.valid_lens = {EDGEATTN_VALID_LENS_PER_BATCH, lens.data()};
        Mask m;
        apply(c, o, m, false);
        std::vector<double> want(B * Q * vs), want_w(B * Q * K);
        edgeattn_ref::additive_attention_masked(B, Q, K, qs, ks, vs, hh, widen(q).data(), widen(k).data(),
                                                widen(val).data(), {edgeattn_ref::ValidLens::per_batch, lens}, m,
                                                widen(Wq).data(), widen(Wk).data(), widen(wv).data(), want.data(),
                                                want_w.data());
        for (edgeattn_isa isa : paths()) {
            REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
            INFO(c.name << ", " << edgeattn_isa_name(isa));
            std::vector<float> out(B * Q * vs, 7.0f), wt(B * Q * K, 7.0f);
            REQUIRE(edgeattn_additive(&dims, q.data(), k.data(), val.data(), &w, &o, ws.data(),
                                      ws.size() * sizeof(float), out.data(), wt.data()) == EDGEATTN_OK);
            check_output(out.data(), want, vs);
            check_weights(wt.data(), want_w);
        }
    }
}
