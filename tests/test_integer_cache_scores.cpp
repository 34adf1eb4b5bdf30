// The int8 arithmetic of an attend over an int8 KV cache
// (edgeattn_kv_cache_config::arithmetic): the query heads quantised, the
// scores integer products with the stored key codes. Against a float64
// model of exactly that quantisation (the cache's stored codes and scales
// read from its documented arrays), each score's bits against the rule on
// every path, decode steps and prefill blocks, grouped heads, a wrapped
// window, any thread count, zeros / NaN query rows, and every refusal (the
// test loops over the paths itself).
#include <doctest/doctest.h>
#include <edgeattn/edgeattn.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "call_helpers.hpp"
#include "int8_model.hpp"
#include "path_helpers.hpp"

namespace {

using test_int8::model_quantise;
using test_int8::quantised_row;
using test_paths::path_guard;
using test_paths::paths;
using test_paths::random_floats;

// A cache of B batch elements, Hkv heads of d features, queried by H heads.
struct cache_shape {
    std::size_t batch, heads, kv_heads, d, capacity, window, sinks;
    std::size_t h() const { return heads * d; }
    std::size_t h_kv() const { return kv_heads * d; }
};

edgeattn_attention_dims dims_of(const cache_shape &s, std::size_t queries) {
    edgeattn_attention_dims dims{};
    dims.batch = s.batch;
    dims.queries = queries;
    dims.keys = s.capacity;
    dims.query_size = s.h();
    dims.key_size = dims.value_size = s.h_kv();
    dims.num_hiddens = s.h();
    dims.num_heads = s.heads;
    dims.num_kv_heads = s.kv_heads;
    return dims;
}

// Every projection given as rows (EDGEATTN_DTYPE_NONE): the store keeps the
// keys and values as given, the attend's output is the heads.
edgeattn_weights no_projections() {
    const edgeattn_weight_matrix none = {EDGEATTN_DTYPE_NONE, nullptr, nullptr, EDGEATTN_ARITHMETIC_FLOAT};
    return {none, none, none, none, nullptr, nullptr, nullptr, nullptr};
}

edgeattn_kv_cache_config config_of(const cache_shape &s, edgeattn_arithmetic arithmetic) {
    edgeattn_kv_cache_config c{};
    c.batch = s.batch;
    c.num_kv_heads = s.kv_heads;
    c.head_size = s.d;
    c.capacity = s.capacity;
    c.storage = EDGEATTN_DTYPE_INT8;
    c.window = s.window;
    c.sinks = s.sinks;
    c.arithmetic = arithmetic;
    return c;
}

std::size_t attend_workspace_bytes(const cache_shape &s, std::size_t queries, std::size_t threads,
                                   edgeattn_arithmetic arithmetic) {
    edgeattn_workspace_request r = test_calls::request(EDGEATTN_OP_KV_CACHE_ATTEND, dims_of(s, queries), 0);
    r.arithmetic = arithmetic;
    return test_calls::size_of(r, threads);
}

// An int8 cache holding `tokens` random tokens per batch element (stored
// `step` at a time: a window cache wraps), the last batch element
// truncated by `shorter` rows.
struct filled_cache {
    cache_shape shape;
    std::vector<float> memory;
    edgeattn_kv_cache cache{};
};

void fill(filled_cache &f, edgeattn_arithmetic arithmetic, std::size_t tokens, std::size_t step, unsigned seed,
          std::size_t shorter = 0) {
    const cache_shape &s = f.shape;
    const edgeattn_kv_cache_config config = config_of(s, arithmetic);
    f.memory.assign(edgeattn_kv_cache_memory_size(&config) / 4 + 1, 0.0f);
    REQUIRE(edgeattn_kv_cache_setup(&f.cache, &config, f.memory.data(), f.memory.size() * 4) == EDGEATTN_OK);
    const edgeattn_weights w = no_projections();
    std::vector<float> ws(test_calls::workspace_bytes(EDGEATTN_OP_KV_CACHE_STORE, dims_of(s, 1), 1, step) / 4 + 1);
    for (std::size_t t = 0; t < tokens; t += step) {
        const std::size_t n = tokens - t < step ? tokens - t : step;
        const std::vector<float> k = random_floats(s.batch * n * s.h_kv(), seed + 2 * unsigned(t));
        const std::vector<float> v = random_floats(s.batch * n * s.h_kv(), seed + 2 * unsigned(t) + 1);
        const edgeattn_attention_dims dims = dims_of(s, 1);
        REQUIRE(edgeattn_kv_cache_store(&f.cache, &dims, n, k.data(), v.data(), &w, nullptr, ws.data(),
                                        ws.size() * 4) == EDGEATTN_OK);
    }
    if (shorter) {
        const std::size_t b = s.batch - 1;
        REQUIRE(edgeattn_kv_cache_truncate(&f.cache, b, static_cast<std::size_t>(f.cache.lengths[b]) - shorter) ==
                EDGEATTN_OK);
    }
}

// Query heads: random, every third one a thousand times larger (their
// scales differ), optionally one row of zeros.
std::vector<float> make_queries(const cache_shape &s, std::size_t queries, unsigned seed) {
    std::vector<float> q = random_floats(s.batch * queries * s.h(), seed);
    for (std::size_t row = 0; row < s.batch * queries * s.heads; row += 3)
        for (std::size_t i = 0; i < s.d; ++i) q[row * s.d + i] *= 1000.0f / static_cast<float>(s.d);
    return q;
}

// The cache's stored row j of head (b, g), dequantised codes and scale.
struct stored_row {
    const int8_t *codes;
    float scale;
};
stored_row stored_key(const edgeattn_kv_cache &c, std::size_t b, std::size_t g, std::size_t j) {
    const std::size_t row = (b * c.num_kv_heads + g) * c.capacity + j;
    return {static_cast<const int8_t *>(c.stored_keys) + row * c.head_size, c.key_scales[row]};
}
stored_row stored_value(const edgeattn_kv_cache &c, std::size_t b, std::size_t g, std::size_t j) {
    const std::size_t row = (b * c.num_kv_heads + g) * c.capacity + j;
    return {static_cast<const int8_t *>(c.stored_values) + row * c.value_head_size, c.value_scales[row]};
}

int64_t integer_dot(const quantised_row &q, const int8_t *codes, std::size_t d) {
    int64_t sum = 0;
    for (std::size_t i = 0; i < d; ++i) sum += static_cast<int64_t>(q.q[i]) * codes[i];
    return sum;
}

// The attend's heads (B, Q, H, d) in float64: each query head quantised,
// scores sum * s_q * s_k * scale, the softmax over the visible keys (the
// causal ones of the last Q tokens stored; all when !causal), the values
// dequantised. Keys in their rows' order (a softmax's sum does not depend
// on it, so a wrapped window is read row by row).
std::vector<double> model_attend(const filled_cache &f, std::size_t queries, const std::vector<float> &q,
                                 double scale, bool causal) {
    const cache_shape &s = f.shape;
    const std::size_t group = s.heads / s.kv_heads;
    std::vector<double> out(s.batch * queries * s.h(), 0.0);
    for (std::size_t b = 0; b < s.batch; ++b) {
        const std::size_t length = static_cast<std::size_t>(f.cache.lengths[b]);
        for (std::size_t i = 0; i < queries; ++i)
            for (std::size_t head = 0; head < s.heads; ++head) {
                const std::size_t g = head / group, at = ((b * queries + i) * s.heads + head) * s.d;
                const quantised_row qr = model_quantise(q.data() + at, s.d);
                const std::size_t seen = causal ? length - queries + i + 1 : length;
                std::vector<double> p(seen);
                double top = -INFINITY, sum = 0;
                for (std::size_t j = 0; j < seen; ++j) {
                    const stored_row k = stored_key(f.cache, b, g, j);
                    p[j] = static_cast<double>(integer_dot(qr, k.codes, s.d)) * qr.scale * k.scale * scale;
                    top = std::fmax(top, p[j]);
                }
                for (double &x : p) sum += (x = std::exp(x - top));
                for (std::size_t j = 0; j < seen; ++j) {
                    const stored_row v = stored_value(f.cache, b, g, j);
                    for (std::size_t c = 0; c < s.d; ++c) out[at + c] += p[j] / sum * v.codes[c] * double(v.scale);
                }
                if (std::isnan(qr.scale))
                    for (std::size_t c = 0; c < s.d; ++c) out[at + c] = NAN;
            }
    }
    return out;
}

std::vector<float> attend(const filled_cache &f, std::size_t queries, const std::vector<float> &q,
                          const edgeattn_attention_options *options, std::size_t threads = 1,
                          float *weights = nullptr) {
    const cache_shape &s = f.shape;
    const edgeattn_arithmetic arithmetic = static_cast<edgeattn_arithmetic>(f.cache.arithmetic);
    std::vector<float> ws(attend_workspace_bytes(s, queries, threads, arithmetic) / 4 + 1);
    std::vector<float> out(s.batch * queries * s.h(), -7.0f);
    const edgeattn_attention_dims dims = dims_of(s, queries);
    const edgeattn_weights w = no_projections();
    REQUIRE(edgeattn_kv_cache_attend(&f.cache, &dims, q.data(), &w, options, ws.data(), ws.size() * 4, out.data(),
                                     weights) == EDGEATTN_OK);
    return out;
}

// Each element within 1e-5 of the row's largest value (the softmax's
// fp32 roundings), NaN where the model is NaN, and the golden bar.
void check_heads(const std::vector<float> &got, const std::vector<double> &want, std::size_t d) {
    std::vector<double> finite_want;
    std::vector<float> finite_got;
    for (std::size_t row = 0; row < want.size() / d; ++row) {
        double largest = 0;
        for (std::size_t c = 0; c < d; ++c) largest = std::fmax(largest, std::fabs(want[row * d + c]));
        for (std::size_t c = 0; c < d; ++c) {
            const std::size_t i = row * d + c;
            if (std::isnan(want[i])) {
                if (!std::isnan(got[i])) FAIL_CHECK("element " << i << ": " << got[i] << ", the model NaN");
                continue;
            }
            if (!(std::fabs(got[i] - want[i]) <= 1e-5 * largest + 1e-30))
                FAIL_CHECK("element " << i << ": " << got[i] << " against the model's " << want[i]);
            finite_want.push_back(want[i]);
            finite_got.push_back(got[i]);
        }
    }
    CHECK(test_paths::rel_l2(finite_got.data(), finite_want) <= 1e-5);
}

// f() once on each kernel path, the path named in its failures.
template <class F>
void on_every_path(F f) {
    for (edgeattn_isa isa : paths()) {
        const std::string path = edgeattn_isa_name(isa);
        CAPTURE(path);
        REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
        f();
    }
}

bool same_bits(const std::vector<float> &a, const std::vector<float> &b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("int8-cache scores in the int8 arithmetic: decode steps against the float64 model on every path") {
    path_guard guard;
    test_paths::set_threads(1);
    // Grouped (4 query heads over 2 cache heads) and one head per cache
    // head; a head of 20 (no whole vector on the wider paths) and of 64;
    // more keys than a key block; batch elements of different lengths.
    const cache_shape shapes[] = {{2, 4, 2, 20, 320, 0, 0}, {2, 2, 2, 64, 300, 0, 0}, {1, 8, 1, 16, 40, 0, 0}};
    for (const cache_shape &s : shapes) {
        filled_cache f{s, {}, {}};
        fill(f, EDGEATTN_ARITHMETIC_INT8, s.capacity - 3, 7, 11, 5);
        const std::vector<float> q = make_queries(s, 1, 5);
        const std::vector<double> want = model_attend(f, 1, q, 1.0 / std::sqrt(float(s.d)), false);
        on_every_path([&] {
            CAPTURE(s.d);
            check_heads(attend(f, 1, q, nullptr), want, s.d);
        });
    }
    test_paths::set_threads(8);
}

TEST_CASE("int8-cache scores in the int8 arithmetic: causal blocks of queries and a wrapped window, every path") {
    path_guard guard;
    test_paths::set_threads(1);
    edgeattn_attention_options causal{};
    causal.mask.causal = 1;
    // Several new tokens a step, grouped and not.
    for (const cache_shape &s : {cache_shape{2, 4, 2, 12, 64, 0, 0}, cache_shape{1, 3, 3, 20, 64, 0, 0}}) {
        filled_cache f{s, {}, {}};
        fill(f, EDGEATTN_ARITHMETIC_INT8, 50, 10, 21, 4);
        const std::vector<float> q = make_queries(s, 5, 9);
        const std::vector<double> want = model_attend(f, 5, q, 1.0 / std::sqrt(float(s.d)), true);
        on_every_path([&] {
            check_heads(attend(f, 5, q, &causal), want, s.d);
        });
    }
    // A window of 24 and 4 sinks after 90 tokens: its ring has wrapped.
    const cache_shape w{1, 4, 2, 16, 28, 24, 4};
    filled_cache f{w, {}, {}};
    fill(f, EDGEATTN_ARITHMETIC_INT8, 90, 9, 31);
    REQUIRE(f.cache.positions[0] == 90);
    const std::vector<float> q = make_queries(w, 1, 13);
    const std::vector<double> want = model_attend(f, 1, q, 1.0 / std::sqrt(float(w.d)), false);
    on_every_path([&] {
        check_heads(attend(f, 1, q, nullptr), want, w.d);
    });
    test_paths::set_threads(8);
}

TEST_CASE("int8-cache scores in the int8 arithmetic: each score's bits are the rule's on every path") {
    path_guard guard;
    // The scores output: ((float)sum * (s_q * scale)) * s_k, the sum exact
    // (int64 here), each product one fp32 rounding.
    const cache_shape s{2, 4, 2, 20, 40, 0, 0};
    filled_cache f{s, {}, {}};
    fill(f, EDGEATTN_ARITHMETIC_INT8, 33, 11, 41);
    const std::size_t Q = 3, group = s.heads / s.kv_heads;
    std::vector<float> q = make_queries(s, Q, 17);
    for (std::size_t i = 0; i < s.d; ++i) q[5 * s.d + i] = 0.0f;  // a head's row of zeros scores 0
    edgeattn_attention_options options{};
    options.scale = 0.3f;
    options.weights_output = EDGEATTN_WEIGHTS_SCORES;
    std::vector<float> want(s.batch * s.heads * Q * s.capacity, 0.0f);
    for (std::size_t b = 0; b < s.batch; ++b)
        for (std::size_t head = 0; head < s.heads; ++head)
            for (std::size_t i = 0; i < Q; ++i) {
                const quantised_row qr = model_quantise(q.data() + ((b * Q + i) * s.heads + head) * s.d, s.d);
                const float factor = static_cast<float>(qr.scale) * options.scale;
                for (std::size_t j = 0; j < static_cast<std::size_t>(f.cache.lengths[b]); ++j) {
                    const stored_row k = stored_key(f.cache, b, head / group, j);
                    const float sum = static_cast<float>(integer_dot(qr, k.codes, s.d));
                    want[((b * s.heads + head) * Q + i) * s.capacity + j] = (sum * factor) * k.scale;
                }
            }
    on_every_path([&] {
        for (int threads : {1, 3}) {
            test_paths::set_threads(threads);
            std::vector<float> got(want.size(), -7.0f);
            attend(f, Q, q, &options, std::size_t(threads), got.data());
            CHECK(same_bits(got, want));
        }
    });
    test_paths::set_threads(8);
}

TEST_CASE("int8-cache scores in the int8 arithmetic: the same bits on any thread count and workspace size") {
    path_guard guard;
    // One cache head of many keys: a decode step splits its keys over
    // threads, and the bits must not follow the split.
    const cache_shape s{1, 2, 1, 32, 1600, 0, 0};
    filled_cache f{s, {}, {}};
    fill(f, EDGEATTN_ARITHMETIC_INT8, 1500, 250, 51);
    const std::vector<float> q = make_queries(s, 1, 23);
    on_every_path([&] {
        test_paths::set_threads(1);
        const std::vector<float> one = attend(f, 1, q, nullptr, 1);
        check_heads(one, model_attend(f, 1, q, 1.0 / std::sqrt(float(s.d)), false), s.d);
        for (int threads = 2; threads <= 8; ++threads)
            for (std::size_t sized_for : {std::size_t{2}, std::size_t{8}}) {
                test_paths::set_threads(threads);
                CAPTURE(threads);
                CAPTURE(sized_for);
                CHECK(same_bits(attend(f, 1, q, nullptr, sized_for), one));
            }
    });
    test_paths::set_threads(8);
}

TEST_CASE("int8-cache scores in the int8 arithmetic: a NaN or inf query row gives its head NaN, and only it") {
    path_guard guard;
    const cache_shape s{1, 4, 2, 16, 30, 0, 0};
    filled_cache f{s, {}, {}};
    fill(f, EDGEATTN_ARITHMETIC_INT8, 30, 10, 61);
    for (float bad : {NAN, INFINITY}) {
        std::vector<float> q = make_queries(s, 1, 29);
        q[1 * s.d + 3] = bad;  // head 1
        const std::vector<double> want = model_attend(f, 1, q, 1.0 / std::sqrt(float(s.d)), false);
        on_every_path([&] {
            const std::vector<float> got = attend(f, 1, q, nullptr);
            for (std::size_t c = 0; c < s.d; ++c) CHECK(std::isnan(got[s.d + c]));
            check_heads(got, want, s.d);
        });
    }
}

TEST_CASE("int8-cache scores in the int8 arithmetic: near the fp32 arithmetic's heads over the same cache") {
    // The same stored rows read in fp32 arithmetic: the query's quantisation
    // moves each score by at most half a code step of the query (times the
    // key's magnitude): the heads agree to a few percent of their size.
    const cache_shape s{1, 4, 2, 32, 200, 0, 0};
    filled_cache f{s, {}, {}};
    fill(f, EDGEATTN_ARITHMETIC_INT8, 200, 50, 71);
    const std::vector<float> q = random_floats(s.h(), 37, 0.2f);
    const std::vector<float> integer = attend(f, 1, q, nullptr);
    f.cache.arithmetic = EDGEATTN_ARITHMETIC_FLOAT;  // the struct refuses the edit ...
    std::vector<float> ws(attend_workspace_bytes(s, 1, 1, EDGEATTN_ARITHMETIC_INT8) / 4), out(s.h(), -7.0f);
    const edgeattn_attention_dims dims = dims_of(s, 1);
    const edgeattn_weights w = no_projections();
    CHECK(edgeattn_kv_cache_attend(&f.cache, &dims, q.data(), &w, nullptr, ws.data(), ws.size() * 4, out.data(),
                                   nullptr) == EDGEATTN_ERR_BAD_CACHE);
    CHECK(out[0] == -7.0f);
    // ... so the same memory is set up again in fp32 arithmetic (setup
    // writes only the lengths and positions: the rows stay).
    const edgeattn_kv_cache_config config = config_of(s, EDGEATTN_ARITHMETIC_FLOAT);
    const int32_t length = f.cache.lengths[0];
    REQUIRE(edgeattn_kv_cache_setup(&f.cache, &config, f.memory.data(), f.memory.size() * 4) == EDGEATTN_OK);
    f.cache.lengths[0] = f.cache.positions[0] = length;
    const std::vector<float> fp32 = attend(f, 1, q, nullptr);
    double diff = 0, norm = 0;
    for (std::size_t i = 0; i < fp32.size(); ++i) {
        diff += (integer[i] - fp32[i]) * (integer[i] - fp32[i]);
        norm += fp32[i] * fp32[i];
    }
    CHECK(diff > 0.0);
    CHECK(std::sqrt(diff / norm) < 0.05);
}

TEST_CASE("int8-cache scores in the int8 arithmetic: refusals, each writing nothing") {
    const cache_shape s{1, 2, 2, 8, 16, 0, 0};
    edgeattn_kv_cache cache{};
    std::vector<float> memory(4096, 0.0f);
    // Only an int8 cache takes it.
    for (edgeattn_dtype storage : {EDGEATTN_DTYPE_F32, EDGEATTN_DTYPE_F16}) {
        edgeattn_kv_cache_config c = config_of(s, EDGEATTN_ARITHMETIC_INT8);
        c.storage = storage;
        CHECK(edgeattn_kv_cache_memory_size(&c) == 0);
        CHECK(edgeattn_kv_cache_setup(&cache, &c, memory.data(), memory.size() * 4) ==
              EDGEATTN_ERR_OPTION_NOT_SUPPORTED);
    }
    // Outside the enum.
    edgeattn_kv_cache_config c = config_of(s, EDGEATTN_ARITHMETIC_INT8);
    const int two = 2;
    std::memcpy(&c.arithmetic, &two, sizeof two);
    CHECK(edgeattn_kv_cache_memory_size(&c) == 0);
    CHECK(edgeattn_kv_cache_setup(&cache, &c, memory.data(), memory.size() * 4) == EDGEATTN_ERR_BAD_OPTION);
    // A head whose int32 sums could overflow.
    c = config_of({1, 1, 1, 132105, 1, 0, 0}, EDGEATTN_ARITHMETIC_INT8);
    CHECK(edgeattn_kv_cache_memory_size(&c) == 0);
    CHECK(edgeattn_kv_cache_setup(&cache, &c, memory.data(), memory.size() * 4) == EDGEATTN_ERR_SIZE_OVERFLOW);
    c.head_size = 132104;
    CHECK(edgeattn_kv_cache_memory_size(&c) != 0);
    for (float m : memory) REQUIRE(m == 0.0f);

    // A workspace sized for the fp32 arithmetic is short.
    filled_cache f{s, {}, {}};
    fill(f, EDGEATTN_ARITHMETIC_INT8, 10, 10, 81);
    const std::size_t fp32 = attend_workspace_bytes(s, 1, 1, EDGEATTN_ARITHMETIC_FLOAT);
    const std::size_t integer = attend_workspace_bytes(s, 1, 1, EDGEATTN_ARITHMETIC_INT8);
    CHECK(integer > fp32);
    std::vector<float> ws(integer / 4), out(s.h(), -7.0f);
    const std::vector<float> q = make_queries(s, 1, 3);
    const edgeattn_attention_dims dims = dims_of(s, 1);
    const edgeattn_weights w = no_projections();
    CHECK(edgeattn_kv_cache_attend(&f.cache, &dims, q.data(), &w, nullptr, ws.data(), fp32, out.data(), nullptr) ==
          EDGEATTN_ERR_WORKSPACE_TOO_SMALL);
    CHECK(edgeattn_kv_cache_attend(&f.cache, &dims, q.data(), &w, nullptr, ws.data(), integer - 4, out.data(),
                                   nullptr) == EDGEATTN_ERR_WORKSPACE_TOO_SMALL);
    for (float o : out) CHECK(o == -7.0f);
    CHECK(edgeattn_kv_cache_attend(&f.cache, &dims, q.data(), &w, nullptr, ws.data(), integer, out.data(),
                                   nullptr) == EDGEATTN_OK);
    // An edited arithmetic: the struct is refused.
    edgeattn_kv_cache edited = f.cache;
    edited.arithmetic = 7;
    std::fill(out.begin(), out.end(), -7.0f);
    CHECK(edgeattn_kv_cache_attend(&edited, &dims, q.data(), &w, nullptr, ws.data(), integer, out.data(),
                                   nullptr) == EDGEATTN_ERR_BAD_CACHE);
    CHECK(out[0] == -7.0f);
    // The request: the store takes only fp32 arithmetic.
    edgeattn_workspace_request r = test_calls::request(EDGEATTN_OP_KV_CACHE_STORE, dims, 1);
    r.arithmetic = EDGEATTN_ARITHMETIC_INT8;
    std::size_t bytes = 99;
    CHECK(edgeattn_workspace_size(&r, 1, 1, &bytes) == EDGEATTN_ERR_OPTION_NOT_SUPPORTED);
    CHECK(bytes == 99);
}
