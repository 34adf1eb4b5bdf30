// edgeattn::KVCache (include/edgeattn/kv_cache.hpp), the fixed-size KV
// cache, against the float64 reference (tests/reference.hpp) on every kernel
// path: a prefill and single-token decode steps with grouped-query heads
// must give the rows of full causal self-attention over the tokens so far;
// a full cache refuses a store whole; truncate and reset rewind it; and
// sizeof(KVCache) is the cache's RAM.
#include <doctest/doctest.h>

#include <edgeattn/edgeattn.hpp>

#include "call_helpers.hpp"
#include "reference.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <cstring>
#include <string>
#include <vector>

namespace {

// A decoder self-attention block: d = 24 features, 4 query heads of 6
// sharing 2 key/value heads (GQA), with biases; the cache holds 12 positions
// for each of 2 sequences.
constexpr std::size_t B = 2, D = 24, Heads = 4, KvHeads = 2, HeadSize = D / Heads, Capacity = 12;
constexpr std::size_t Hkv = KvHeads * HeadSize;  // rows of W_k, W_v
using Cache = edgeattn::KVCache<B, KvHeads, HeadSize, Capacity>;

// sizeof is the RAM: keys and values, the lengths, and the small C struct.
constexpr std::size_t kv_floats = 2 * B * KvHeads * Capacity * HeadSize;
static_assert(sizeof(Cache) >= kv_floats * sizeof(float) + B * sizeof(int32_t), "the cache must hold its memory");
static_assert(sizeof(Cache) <= kv_floats * sizeof(float) + B * sizeof(int32_t) + 3 * 64 +
                                   sizeof(edgeattn_kv_cache) + 64,
              "the cache holds nothing but its memory (three 64-byte aligned parts) and the C struct");

edgeattn_attention_dims dims_for(std::size_t queries) {
    return {B, queries, Capacity, D, D, D, D, Heads, KvHeads, 0};
}

std::vector<float> random_floats(std::size_t n, std::mt19937 &rng, float scale) {
    std::normal_distribution<float> g(0.0f, scale);
    std::vector<float> v(n);
    for (float &x : v) x = g(rng);
    return v;
}

double relative_l2(const std::vector<float> &got, const std::vector<double> &ref) {
    double num = 0.0, den = 0.0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        if (!std::isfinite(got[i])) return INFINITY;
        num += (got[i] - ref[i]) * (got[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    return std::sqrt(num / den);
}

// Whether a status's text contains `words`: the refusal names its case.
bool says(edgeattn_status status, const char *words) {
    return std::strstr(edgeattn_status_str(status), words) != nullptr;
}

struct Model {
    std::vector<float> W_q, W_k, W_v, W_o, b_q, b_k, b_v, b_o;
    edgeattn_weights view() const {
        return test_calls::fp32_weights(W_q.data(), W_k.data(), W_v.data(), W_o.data(), b_q.data(), b_k.data(),
                                        b_v.data(), b_o.data());
    }
};

Model random_model(std::mt19937 &rng) {
    const float s = 1.0f / std::sqrt(static_cast<float>(D));
    return {random_floats(D * D, rng, s),   random_floats(Hkv * D, rng, s), random_floats(Hkv * D, rng, s),
            random_floats(D * D, rng, s),   random_floats(D, rng, 0.1f),    random_floats(Hkv, rng, 0.1f),
            random_floats(Hkv, rng, 0.1f),  random_floats(D, rng, 0.1f)};
}

// GQA as plain multi-head attention: query head j's rows of W_k, W_v (and
// b_k, b_v) are those of key/value head j / (Heads / KvHeads).
std::vector<double> expand_kv_rows(const std::vector<float> &m, std::size_t cols) {
    std::vector<double> out(Heads * HeadSize * cols);
    for (std::size_t j = 0; j < Heads; ++j)
        for (std::size_t r = 0; r < HeadSize; ++r)
            for (std::size_t c = 0; c < cols; ++c)
                out[(j * HeadSize + r) * cols + c] = m[((j / (Heads / KvHeads)) * HeadSize + r) * cols + c];
    return out;
}

// Full causal self-attention of one sequence seq (n, D) in float64: query i
// sees keys 0..i, i.e. d2l's per-query valid lengths i + 1.
// out (n, D), w (Heads, n, n).
void reference_causal(const Model &m, const std::vector<float> &seq, std::size_t n, std::vector<double> &out,
                      std::vector<double> &w) {
    const std::vector<double> x(seq.begin(), seq.begin() + n * D);
    const std::vector<double> W_q(m.W_q.begin(), m.W_q.end()), W_o(m.W_o.begin(), m.W_o.end()),
        b_q(m.b_q.begin(), m.b_q.end()), b_o(m.b_o.begin(), m.b_o.end());
    const std::vector<double> W_k = expand_kv_rows(m.W_k, D), W_v = expand_kv_rows(m.W_v, D),
                              b_k = expand_kv_rows(m.b_k, 1), b_v = expand_kv_rows(m.b_v, 1);
    edgeattn_ref::ValidLens vl;
    vl.kind = edgeattn_ref::ValidLens::per_query;
    for (std::size_t i = 0; i < n; ++i) vl.lens.push_back(static_cast<std::int32_t>(i + 1));
    const edgeattn_ref::MhaWeights W{W_q.data(), W_k.data(), W_v.data(), W_o.data(),
                                     b_q.data(), b_k.data(), b_v.data(), b_o.data()};
    out.assign(n * D, 0.0);
    w.assign(Heads * n * n, 0.0);
    edgeattn_ref::multi_head_attention(1, n, n, D, D, D, D, Heads, x.data(), x.data(), x.data(), vl, W, out.data(),
                                       w.data());
}

// Drives a cache through the plain or the packed members.
struct Driver {
    Cache &cache;
    const Model &model;
    bool packed;
    std::vector<float> packed_weights, workspace;

    Driver(Cache &c, const Model &m, bool use_packed) : cache(c), model(m), packed(use_packed) {
        // One workspace for every step: the largest store and attend of 1
        // to Capacity tokens, in one query.
        std::vector<edgeattn_workspace_request> calls;
        for (std::size_t n = 1; n <= Capacity; ++n) {
            calls.push_back(test_calls::request(EDGEATTN_OP_KV_CACHE_STORE, dims_for(n), n));
            calls.push_back(test_calls::request(EDGEATTN_OP_KV_CACHE_ATTEND, dims_for(n)));
        }
        std::size_t ws = 0;
        REQUIRE(edgeattn_workspace_size(calls.data(), calls.size(), 1, &ws) == EDGEATTN_OK);
        REQUIRE(ws > 0);
        workspace.resize(ws / sizeof(float) + 1);
        if (packed) {
            const edgeattn_attention_dims dims = dims_for(1);
            const edgeattn_weights w = model.view();
            const std::size_t bytes = edgeattn_mha_packed_size(&dims, &w);
            REQUIRE(bytes > 0);
            packed_weights.resize(bytes / sizeof(float) + 1);
            REQUIRE(edgeattn_mha_pack(&dims, &w, packed_weights.data(), bytes) == EDGEATTN_OK);
        }
    }

    edgeattn_status store(std::size_t n, const std::vector<float> &x) {
        const edgeattn_attention_dims dims = dims_for(n);
        const edgeattn_weights w = model.view();
        const std::size_t ws = workspace.size() * sizeof(float);
        if (packed)
            return cache.store_packed(&dims, n, x.data(), x.data(), packed_weights.data(),
                                      packed_weights.size() * sizeof(float), workspace.data(), ws);
        return cache.store(&dims, n, x.data(), x.data(), &w, workspace.data(), ws);
    }

    // Causal attention of the n tokens just stored: out (B, n, D),
    // weights (B, Heads, n, Capacity).
    edgeattn_status attend(std::size_t n, const std::vector<float> &x, std::vector<float> &out,
                           std::vector<float> &weights) {
        const edgeattn_attention_dims dims = dims_for(n);
        const edgeattn_weights w = model.view();
        edgeattn_attention_options causal{};
        causal.mask.causal = 1;
        out.assign(B * n * D, NAN);
        weights.assign(B * Heads * n * Capacity, NAN);
        const std::size_t ws = workspace.size() * sizeof(float);
        if (packed)
            return cache.attend_packed(&dims, x.data(), packed_weights.data(), packed_weights.size() * sizeof(float),
                                       &causal, workspace.data(), ws, out.data(), weights.data());
        return cache.attend(&dims, x.data(), &w, &causal, workspace.data(), ws, out.data(), weights.data());
    }
};

// Tokens [t0, t0 + n) of every batch element of X (B, T, D): (B, n, D).
std::vector<float> slice(const std::vector<float> &X, std::size_t T, std::size_t t0, std::size_t n) {
    std::vector<float> s(B * n * D);
    for (std::size_t b = 0; b < B; ++b)
        std::copy(X.begin() + (b * T + t0) * D, X.begin() + (b * T + t0 + n) * D, s.begin() + b * n * D);
    return s;
}

// Checks a step's output and weights against full causal attention over each
// batch element's sequence seqs[b] (its cache's length rows, the step's n
// tokens last).
void check_step(const Model &m, const std::vector<std::vector<float>> &seqs, std::size_t n,
                const std::vector<float> &out, const std::vector<float> &weights) {
    for (std::size_t b = 0; b < B; ++b) {
        const std::size_t len = seqs[b].size() / D;
        INFO("batch " << b << ", length " << len << ", " << n << " new tokens");
        std::vector<double> ref_out, ref_w;
        reference_causal(m, seqs[b], len, ref_out, ref_w);
        const std::vector<double> ref_rows(ref_out.begin() + (len - n) * D, ref_out.end());
        const std::vector<float> got_rows(out.begin() + b * n * D, out.begin() + (b + 1) * n * D);
        CHECK(relative_l2(got_rows, ref_rows) <= 1e-5);
        // weights: the cache's first len columns are the reference's rows;
        // columns past the length are exactly 0.
        std::vector<float> got_w;
        std::vector<double> want_w;
        bool zero_past_length = true;
        for (std::size_t j = 0; j < Heads; ++j)
            for (std::size_t i = 0; i < n; ++i) {
                const float *row = weights.data() + ((b * Heads + j) * n + i) * Capacity;
                got_w.insert(got_w.end(), row, row + len);
                for (std::size_t c = len; c < Capacity; ++c) zero_past_length = zero_past_length && row[c] == 0.0f;
                const double *ref_row = ref_w.data() + (j * len + (len - n + i)) * len;
                want_w.insert(want_w.end(), ref_row, ref_row + len);
            }
        CHECK(relative_l2(got_w, want_w) <= 1e-5);
        CHECK(zero_past_length);
    }
}

void add_tokens(std::vector<std::vector<float>> &seqs, const std::vector<float> &x, std::size_t n) {
    for (std::size_t b = 0; b < B; ++b) seqs[b].insert(seqs[b].end(), x.begin() + b * n * D, x.begin() + (b + 1) * n * D);
}

void decode_and_rewind(bool packed) {
    std::mt19937 rng(29);
    const Model model = random_model(rng);
    constexpr std::size_t T = 10;
    const std::vector<float> X = random_floats(B * T * D, rng, 1.0f);
    auto cache = std::make_unique<Cache>();
    REQUIRE(cache->init_status() == EDGEATTN_OK);
    Driver drive(*cache, model, packed);
    std::vector<std::vector<float>> seqs(B);
    std::vector<float> out, weights;

    // A prompt of 4 tokens, then steps of 1, 1, 2, 1, 1 tokens.
    const std::size_t chunks[] = {4, 1, 1, 2, 1, 1};
    std::size_t t = 0;
    for (std::size_t n : chunks) {
        INFO("tokens " << t << ".." << t + n);
        const std::vector<float> x = slice(X, T, t, n);
        REQUIRE(drive.store(n, x) == EDGEATTN_OK);
        add_tokens(seqs, x, n);
        t += n;
        CHECK(cache->length(0) == t);
        CHECK(cache->length(1) == t);
        REQUIRE(drive.attend(n, x, out, weights) == EDGEATTN_OK);
        check_step(model, seqs, n, out, weights);
    }
    REQUIRE(t == T);

    // 3 more do not fit in 12 positions: refused whole, lengths unchanged.
    const std::vector<float> more = random_floats(B * 3 * D, rng, 1.0f);
    CHECK(drive.store(3, more) == EDGEATTN_ERR_CACHE_FULL);
    CHECK(cache->length(0) == T);
    CHECK(cache->length(1) == T);

    // Truncate batch element 0 to 6 positions (a rejected draft); element 1
    // keeps 10. The next two tokens continue from there.
    const edgeattn_status past_length = cache->truncate(1, T + 1), past_batch = cache->truncate(B, 0);
    CHECK(past_length == EDGEATTN_ERR_PAST_CACHE_LENGTH);
    CHECK(past_batch == EDGEATTN_ERR_PAST_CACHE_LENGTH);
    CHECK(says(past_length, "length past the filled length"));
    CHECK(says(past_batch, "batch index is past the batch"));
    REQUIRE(cache->truncate(0, 6) == EDGEATTN_OK);
    CHECK(cache->length(0) == 6);
    CHECK(cache->length(1) == T);
    seqs[0].resize(6 * D);
    const std::vector<float> y = random_floats(B * 2 * D, rng, 1.0f);
    REQUIRE(drive.store(2, y) == EDGEATTN_OK);
    add_tokens(seqs, y, 2);
    CHECK(cache->length(0) == 8);
    CHECK(cache->length(1) == Capacity);
    REQUIRE(drive.attend(2, y, out, weights) == EDGEATTN_OK);
    check_step(model, seqs, 2, out, weights);
    // Element 1 is full now, so even one token is refused.
    CHECK(drive.store(1, slice(X, T, 0, 1)) == EDGEATTN_ERR_CACHE_FULL);

    // Reset: empty, and a new prompt decodes as on a fresh cache.
    REQUIRE(cache->reset() == EDGEATTN_OK);
    CHECK(cache->length(0) == 0);
    CHECK(cache->length(1) == 0);
    seqs.assign(B, {});
    const std::vector<float> prompt = slice(X, T, 3, 5);
    REQUIRE(drive.store(5, prompt) == EDGEATTN_OK);
    add_tokens(seqs, prompt, 5);
    REQUIRE(drive.attend(5, prompt, out, weights) == EDGEATTN_OK);
    check_step(model, seqs, 5, out, weights);
}

template <std::size_t Bt, std::size_t Kv, std::size_t Hs, std::size_t Cap>
void check_memory_size() {
    INFO("KVCache<" << Bt << ", " << Kv << ", " << Hs << ", " << Cap << ">");
    using C = edgeattn::KVCache<Bt, Kv, Hs, Cap>;
    const edgeattn_kv_cache_config config{Bt, Kv, Hs, Cap, EDGEATTN_DTYPE_F32, 0, 0, 0};
    const std::size_t c_bytes = edgeattn_kv_cache_memory_size(&config);
    REQUIRE(c_bytes > 0);
    CHECK(C::memory_bytes == c_bytes);
    CHECK(sizeof(C) >= C::memory_bytes);
    CHECK(sizeof(C) <= C::memory_bytes + sizeof(edgeattn_kv_cache) + 64);
    auto cache = std::make_unique<C>();
    CHECK(cache->init_status() == EDGEATTN_OK);
    CHECK(cache->length(0) == 0);
    CHECK(cache->length(Bt) == 0);
    CHECK(cache->c_cache().capacity == Cap);
}

}  // namespace

TEST_CASE("KVCache decode steps, a full cache, truncate and reset meet the float64 reference on every path") {
    for (int i = EDGEATTN_ISA_SCALAR; i <= EDGEATTN_ISA_HELIUM; ++i) {
        const edgeattn_isa isa = static_cast<edgeattn_isa>(i);
        if (!edgeattn_isa_supported(isa)) continue;
        REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
        for (bool packed : {false, true}) {
            INFO("path " << std::string(edgeattn_isa_name(isa)) << (packed ? ", packed weights" : ""));
            decode_and_rewind(packed);
        }
    }
    REQUIRE(edgeattn_set_isa(EDGEATTN_ISA_AUTO) == EDGEATTN_OK);
}

TEST_CASE("sizeof(KVCache) is its memory: edgeattn_kv_cache_memory_size() and the C struct") {
    check_memory_size<B, KvHeads, HeadSize, Capacity>();
    check_memory_size<1, 1, 1, 1>();
    check_memory_size<3, 5, 7, 11>();
    check_memory_size<1, 8, 64, 256>();
}

TEST_CASE("KVCache with a window and a rope: the C calls' bits") {
    // KVCache<B 2, H_kv 1, head size 4, 6 rows, window 4, sinks 2> against
    // the C calls on a cache of the same config, through a stream that wraps.
    constexpr std::size_t B = 2, Hkv = 1, hs = 4, cap = 6, W = 4, S = 2, h = 8, d = 8;
    auto cache = std::make_unique<edgeattn::KVCache<B, Hkv, hs, cap, W, S>>();
    REQUIRE(cache->init_status() == EDGEATTN_OK);
    const edgeattn_kv_cache_config config{B, Hkv, hs, cap, EDGEATTN_DTYPE_F32, W, S, 0};
    std::vector<float> memory(edgeattn_kv_cache_memory_size(&config) / 4);
    edgeattn_kv_cache c{};
    REQUIRE(edgeattn_kv_cache_setup(&c, &config, memory.data(), memory.size() * 4) == EDGEATTN_OK);
    std::mt19937 rng(7);
    const std::vector<float> Wq = random_floats(h * d, rng, 0.3f), Wk = random_floats(hs * d, rng, 0.3f),
                             Wv = random_floats(hs * d, rng, 0.3f), Wo = random_floats(h * h, rng, 0.3f);
    const edgeattn_weights w = test_calls::fp32_weights(Wq.data(), Wk.data(), Wv.data(), Wo.data(), nullptr,
                                                        nullptr, nullptr, nullptr);
    edgeattn_rope_table_config table_config{32, hs, 0.0, 0.0};
    std::vector<float> table(32 * hs);
    REQUIRE(edgeattn_rope_table(&table_config, table.data(), table.size()) == EDGEATTN_OK);
    edgeattn_attention_options options{};
    options.rope = {table.data(), 32, hs, EDGEATTN_ROPE_NEOX, nullptr};
    options.mask.causal = 1;
    edgeattn_attention_options store_options{};
    store_options.rope = options.rope;
    std::vector<float> ws(1 << 14);
    for (unsigned step = 0; step < 9; ++step) {
        const std::size_t T = step == 0 ? 3 : 1;
        const edgeattn_attention_dims dims{B, T, cap, d, d, d, h, 2, Hkv, 0};
        const std::vector<float> x = random_floats(B * T * d, rng, 1.0f);
        std::vector<float> a(B * T * h), b(B * T * h);
        REQUIRE(cache->store(&dims, T, x.data(), x.data(), &w, ws.data(), ws.size() * 4, &store_options) ==
                EDGEATTN_OK);
        REQUIRE(cache->attend(&dims, x.data(), &w, &options, ws.data(), ws.size() * 4, a.data()) == EDGEATTN_OK);
        REQUIRE(edgeattn_kv_cache_store(&c, &dims, T, x.data(), x.data(), &w, &store_options, ws.data(),
                                        ws.size() * 4) == EDGEATTN_OK);
        REQUIRE(edgeattn_kv_cache_attend(&c, &dims, x.data(), &w, &options, ws.data(), ws.size() * 4, b.data(),
                                         nullptr) == EDGEATTN_OK);
        CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
    }
    CHECK(cache->c_cache().positions[0] == 11);
    CHECK(cache->length(0) == cap);
}
