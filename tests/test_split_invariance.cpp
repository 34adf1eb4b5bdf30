// Same bits whatever the work split: every op that takes a mask gives
// bitwise-identical results for 1..8 OpenMP threads (more threads than
// slices, odd counts) and for workspaces sized for 1, 3 and 8 threads, on
// every kernel path. The masks are the ones whose rows see different keys
// (causal, sliding windows with different starts, per-query valid lengths),
// so rows that share a block of work see different keys; shapes cover the
// streaming path (keys > 256, no weights) and the materialised one, with
// queries that are not a multiple of 8. A NaN or infinity at a position a
// row does not see (keys or values) never reaches that row.
#include <doctest/doctest.h>

#include <edgeattn/edgeattn.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "call_helpers.hpp"
#include "path_helpers.hpp"


namespace {

using test_calls::fp32_weights;
using test_calls::options_of;
using test_calls::workspace_bytes;
using test_paths::set_threads;

using test_paths::random_floats;
using outputs = std::vector<std::vector<float>>;


// Bit for bit, except that two NaNs match whatever their sign and payload
// (which operand's NaN an FMA passes on is the compiler's choice).
bool same_bits(const std::vector<float> &a, const std::vector<float> &b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0 && !(std::isnan(a[i]) && std::isnan(b[i]))) return false;
    return true;
}

// (threads, threads the workspace is sized for): the first is the reference.
struct split {
    int threads;
    size_t workspace_threads;
};
constexpr split splits[] = {{1, 1}, {2, 1}, {3, 3}, {4, 8}, {5, 3}, {7, 8}, {8, 1}, {8, 8}, {6, 6}};

// Runs op(workspace_threads) under every split on every kernel path and
// checks each run equals the path's first bit for bit.
void check_split_invariant(const std::string &what, const std::function<outputs(size_t)> &op) {
    test_paths::path_guard guard;
    for (edgeattn_isa isa : test_paths::paths()) {
        REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
        outputs first;
        for (const split &s : splits) {
            set_threads(s.threads);
            outputs got = op(s.workspace_threads);
            if (first.empty()) {
                first = got;
                continue;
            }
            for (size_t i = 0; i < got.size(); ++i) {
                INFO(what << ", path " << std::string(edgeattn_isa_name(isa)) << ", output " << i << ", " << s.threads
                          << " threads, workspace for " << s.workspace_threads);
                CHECK(same_bits(got[i], first[i]));
            }
        }
    }
    set_threads(8);
}

// A sliding window of w keys per query, its start different for each row:
// [max(0, i + K - Q - w + 1), i + K - Q + 1), for B batch elements.
std::vector<int32_t> window_ranges(size_t B, size_t Q, size_t K, size_t w) {
    std::vector<int32_t> r;
    for (size_t b = 0; b < B; ++b)
        for (size_t i = 0; i < Q; ++i) {
            const size_t end = i + K - Q + 1;
            r.push_back(static_cast<int32_t>(end > w ? end - w : 0));
            r.push_back(static_cast<int32_t>(end));
        }
    return r;
}

// Per-query valid lengths 0..K+20, different on neighbouring rows.
std::vector<int32_t> scattered_lens(size_t rows, size_t K) {
    std::vector<int32_t> lens(rows);
    for (size_t i = 0; i < rows; ++i) lens[i] = static_cast<int32_t>((i * 37 + 5) % (K + 21));
    return lens;
}

struct mask_case {
    const char *name;
    bool causal;
    bool window;
    bool lens;
};
constexpr mask_case mask_cases[] = {
    {"causal", true, false, false},
    {"sliding window", false, true, false},
    {"per-query valid lengths", false, false, true},
    {"causal window and valid lengths", true, true, true},
};

// A case's mask and valid lengths for (B, Q) rows over K keys (windows of w).
struct case_masks {
    std::vector<int32_t> ranges, lens;
    edgeattn_valid_lens valid_lens;
    edgeattn_attention_mask mask{};

    case_masks(const mask_case &mc, size_t B, size_t Q, size_t K, size_t w)
        : ranges(window_ranges(B, Q, K, w)), lens(scattered_lens(B * Q, K)),
          valid_lens{EDGEATTN_VALID_LENS_PER_QUERY, lens.data()} {
        mask.causal = mc.causal;
        mask.ranges_kind = mc.window ? EDGEATTN_KEY_RANGES_PER_QUERY : EDGEATTN_KEY_RANGES_NONE;
        mask.key_ranges = mc.window ? ranges.data() : nullptr;
    }
    case_masks(const case_masks &) = delete;
};

}  // namespace

TEST_CASE("dot-product attention with masks: same bits for any thread count and workspace sizing") {
    // One slice of 601 tokens (a prefill), and two slices of 300 / 13 rows.
    struct shape {
        size_t B, Q, K, d;
    };
    for (const shape sh : {shape{1, 601, 601, 16}, shape{2, 300, 700, 12}, shape{1, 13, 300, 16},
                           shape{2, 203, 203, 8}}) {
        const auto q = random_floats(sh.B * sh.Q * sh.d, 1), k = random_floats(sh.B * sh.K * sh.d, 2),
                   v = random_floats(sh.B * sh.K * sh.d, 3);
        const edgeattn_attention_dims dims{sh.B, sh.Q, sh.K, sh.d, sh.d, sh.d, 0, 0, 0, 0};
        for (const mask_case &mc : mask_cases) {
            const case_masks m(mc, sh.B, sh.Q, sh.K, 100);
            const edgeattn_attention_options opt = options_of(mc.lens ? &m.valid_lens : nullptr, &m.mask);
            for (bool with_weights : {false, true}) {
                const std::string what = std::string("dot product ") + std::to_string(sh.Q) + "x" +
                                         std::to_string(sh.K) + ", " + mc.name +
                                         (with_weights ? ", weights" : ", streaming");
                check_split_invariant(what, [&](size_t ws_threads) {
                    std::vector<float> ws(workspace_bytes(EDGEATTN_OP_SDPA, dims, ws_threads) / 4);
                    std::vector<float> out(sh.B * sh.Q * sh.d), attn(with_weights ? sh.B * sh.Q * sh.K : 0);
                    REQUIRE(edgeattn_sdpa(&dims, q.data(), k.data(), v.data(), &opt, ws.data(), ws.size() * 4,
                                          out.data(), with_weights ? attn.data() : nullptr) == EDGEATTN_OK);
                    return outputs{out, attn};
                });
            }
        }
    }
}

TEST_CASE("multi-head and grouped-query attention with masks: same bits for any thread count") {
    const size_t B = 1, Q = 600, K = 600, h = 32;
    const auto x = random_floats(B * Q * h, 11);
    const auto W = random_floats(h * h, 12, 0.2f), W_kv = random_floats(h / 2 * h, 13, 0.2f),
               bias = random_floats(h, 14);
    for (size_t kv_heads : {size_t{2}, size_t{1}}) {
        const edgeattn_attention_dims dims{B, Q, K, h, h, h, h, 2, kv_heads, 0};
        const float *Wk = kv_heads == 2 ? W.data() : W_kv.data();
        const edgeattn_weights w =
            fp32_weights(W.data(), Wk, Wk, W.data(), bias.data(), bias.data(), bias.data(), bias.data());
        for (const mask_case &mc : mask_cases) {
            const case_masks m(mc, B, Q, K, 130);
            const edgeattn_attention_options opt = options_of(mc.lens ? &m.valid_lens : nullptr, &m.mask);
            for (bool with_weights : {false, true}) {
                const std::string what = std::string("multi-head, kv heads ") + std::to_string(kv_heads) + ", " +
                                         mc.name + (with_weights ? ", weights" : ", streaming");
                check_split_invariant(what, [&](size_t ws_threads) {
                    std::vector<float> ws(workspace_bytes(EDGEATTN_OP_MHA, dims, ws_threads) / 4);
                    std::vector<float> out(B * Q * h), attn(with_weights ? B * 2 * Q * K : 0);
                    REQUIRE(edgeattn_mha(&dims, x.data(), x.data(), x.data(), &w, &opt, ws.data(), ws.size() * 4,
                                         out.data(), with_weights ? attn.data() : nullptr) == EDGEATTN_OK);
                    return outputs{out, attn};
                });
            }
        }
    }
}

TEST_CASE("KV-cache attention with masks, every storage: same bits for any thread count") {
    // A 600-token prefill of one sequence, then steps of 13 and 5 new tokens
    // (the typed caches read their rows in place up to 16 query rows; 5
    // tokens of a 2-head group are 10 rows, cut 8 + 2 by 3+ threads).
    const size_t B = 1, h = 32, H = 4, H_kv = 2, capacity = 640;
    const auto x = random_floats(B * 622 * h, 21);
    const auto W = random_floats(h * h, 22, 0.2f), W_kv = random_floats(h / 2 * h, 23, 0.2f),
               bias = random_floats(h, 24);
    const edgeattn_weights w = fp32_weights(W.data(), W_kv.data(), W_kv.data(), W.data(), bias.data(), bias.data(),
                                            bias.data(), bias.data());
    for (edgeattn_dtype storage : {EDGEATTN_DTYPE_F32, EDGEATTN_DTYPE_F16, EDGEATTN_DTYPE_INT8}) {
        const edgeattn_kv_cache_config config{B, H_kv, h / H, capacity, storage, 0, 0, 0};
        std::vector<float> memory(edgeattn_kv_cache_memory_size(&config) / 4);
        edgeattn_kv_cache cache{};
        REQUIRE(edgeattn_kv_cache_setup(&cache, &config, memory.data(), memory.size() * 4) == EDGEATTN_OK);
        const edgeattn_attention_dims store_dims{B, 600, capacity, h, h, h, h, H, H_kv, 0};
        std::vector<float> store_ws(workspace_bytes(EDGEATTN_OP_KV_CACHE_STORE, store_dims, 1, 600) / 4);
        REQUIRE(edgeattn_kv_cache_store(&cache, &store_dims, 600, x.data(), x.data(), &w, nullptr, store_ws.data(),
                                        store_ws.size() * 4) == EDGEATTN_OK);
        for (size_t Q : {size_t{600}, size_t{13}, size_t{5}}) {
            if (Q < 600) {
                const size_t at = static_cast<size_t>(cache.lengths[0]);
                const edgeattn_attention_dims step_dims{B, Q, capacity, h, h, h, h, H, H_kv, 0};
                std::vector<float> ws(workspace_bytes(EDGEATTN_OP_KV_CACHE_STORE, step_dims, 1, Q) / 4);
                REQUIRE(edgeattn_kv_cache_store(&cache, &step_dims, Q, x.data() + at * h, x.data() + at * h, &w,
                                                nullptr, ws.data(), ws.size() * 4) == EDGEATTN_OK);
            }
            const size_t K = static_cast<size_t>(cache.lengths[0]);
            const edgeattn_attention_dims dims{B, Q, capacity, h, h, h, h, H, H_kv, 0};
            const auto ranges = window_ranges(B, Q, K, 120);
            for (bool window : {false, true}) {
                edgeattn_attention_mask mask{};
                mask.causal = 1;
                mask.ranges_kind = window ? EDGEATTN_KEY_RANGES_PER_QUERY : EDGEATTN_KEY_RANGES_NONE;
                mask.key_ranges = window ? ranges.data() : nullptr;
                const edgeattn_attention_options opt = options_of(nullptr, &mask);
                const std::string what = std::string("kv cache, storage ") + std::to_string(storage) + ", Q " +
                                         std::to_string(Q) + (window ? ", window" : ", causal");
                check_split_invariant(what, [&](size_t ws_threads) {
                    std::vector<float> ws(workspace_bytes(EDGEATTN_OP_KV_CACHE_ATTEND, dims, ws_threads) / 4);
                    std::vector<float> out(B * Q * h);
                    REQUIRE(edgeattn_kv_cache_attend(&cache, &dims, x.data() + (K - Q) * h, &w, &opt, ws.data(),
                                                     ws.size() * 4, out.data(), nullptr) == EDGEATTN_OK);
                    return outputs{out};
                });
            }
        }
    }
}

TEST_CASE("additive attention with per-query valid lengths: same bits for any thread count") {
    const size_t B = 1, Q = 77, K = 300, d = 8, hidden = 8;
    const auto q = random_floats(B * Q * d, 31), k = random_floats(B * K * d, 32), v = random_floats(B * K * d, 33);
    const auto W_q = random_floats(hidden * d, 34), W_k = random_floats(hidden * d, 35), w_v = random_floats(hidden, 36);
    const edgeattn_weights aw = fp32_weights(W_q.data(), W_k.data(), w_v.data(), nullptr);
    const auto lens = scattered_lens(B * Q, K);
    const edgeattn_valid_lens vl{EDGEATTN_VALID_LENS_PER_QUERY, lens.data()};
    const edgeattn_attention_options opt = options_of(&vl, nullptr);
    const edgeattn_attention_dims dims{B, Q, K, d, d, d, hidden, 0, 0, 0};
    check_split_invariant("additive", [&](size_t ws_threads) {
        std::vector<float> ws(workspace_bytes(EDGEATTN_OP_ADDITIVE, dims, ws_threads) / 4);
        std::vector<float> out(B * Q * d), attn(B * Q * K);
        REQUIRE(edgeattn_additive(&dims, q.data(), k.data(), v.data(), &aw, &opt, ws.data(), ws.size() * 4, out.data(),
                                  attn.data()) == EDGEATTN_OK);
        return outputs{out, attn};
    });
}

TEST_CASE("NaN and infinity at masked keys and values never reach the rows that do not see them") {
    // Even rows see keys 0..2 only (valid lengths 1..3); odd rows see up to
    // 400 keys, so they share every block of work with the even rows. Keys
    // and values 3 and on hold NaN / +-inf in the poisoned run: the even
    // rows must be finite and bitwise what the clean run gives, at every
    // split; the odd rows may be NaN, but NaN at every split.
    for (size_t K : {size_t{600}, size_t{200}}) {
        const size_t B = 1, Q = 150, d = 16;
        const auto q = random_floats(B * Q * d, 41);
        const auto clean_k = random_floats(B * K * d, 42), clean_v = random_floats(B * K * d, 43);
        auto poisoned_k = clean_k, poisoned_v = clean_v;
        for (size_t j = 3; j < K; ++j)
            for (size_t c = 0; c < d; ++c) {
                const float bad[] = {NAN, INFINITY, -INFINITY};
                poisoned_k[j * d + c] = bad[(j + c) % 3];
                poisoned_v[j * d + c] = bad[(j + c + 1) % 3];
            }
        std::vector<int32_t> lens(B * Q);
        for (size_t i = 0; i < lens.size(); ++i) lens[i] = i % 2 ? 400 : static_cast<int32_t>(1 + i % 3);
        const edgeattn_valid_lens vl{EDGEATTN_VALID_LENS_PER_QUERY, lens.data()};
        const edgeattn_attention_options opt = options_of(&vl, nullptr);
        const edgeattn_attention_dims dims{B, Q, K, d, d, d, 0, 0, 0, 0};
        for (bool with_weights : {false, true}) {
            auto run = [&](const std::vector<float> &keys, const std::vector<float> &values, size_t ws_threads) {
                std::vector<float> ws(workspace_bytes(EDGEATTN_OP_SDPA, dims, ws_threads) / 4);
                std::vector<float> out(B * Q * d), attn(with_weights ? B * Q * K : 0);
                REQUIRE(edgeattn_sdpa(&dims, q.data(), keys.data(), values.data(), &opt, ws.data(), ws.size() * 4,
                                      out.data(), with_weights ? attn.data() : nullptr) == EDGEATTN_OK);
                return outputs{out, attn};
            };
            const std::string what = "poisoned masked positions, K " + std::to_string(K) +
                                     (with_weights ? ", weights" : ", streaming");
            check_split_invariant(what, [&](size_t ws_threads) { return run(poisoned_k, poisoned_v, ws_threads); });

            test_paths::path_guard guard;
            for (edgeattn_isa isa : test_paths::paths()) {
                REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
                for (const split &s : splits) {
                    set_threads(s.threads);
                    const outputs clean = run(clean_k, clean_v, s.workspace_threads);
                    const outputs poisoned = run(poisoned_k, poisoned_v, s.workspace_threads);
                    for (size_t i = 0; i < Q; i += 2) {
                        INFO(what << ", path " << std::string(edgeattn_isa_name(isa)) << ", row " << i << ", " << s.threads
                                  << " threads");
                        const float *got = poisoned[0].data() + i * d;
                        bool finite = true;
                        for (size_t c = 0; c < d; ++c) finite = finite && std::isfinite(got[c]);
                        CHECK(finite);
                        CHECK(std::memcmp(got, clean[0].data() + i * d, d * sizeof(float)) == 0);
                    }
                }
            }
            set_threads(8);
        }
    }
}
