// Numerics at the edges, on every kernel path this CPU runs (docs/contract.md): scores of +-1e30 and +-FLT_MAX, +-inf
// and NaN, all-masked rows, K = 1 and a huge d. Where the d2l semantics give
// a number the library gives it (checked against the float64 reference, or
// against the limit of the softmax when a float score overflows to +-inf);
// a NaN stays in the rows it belongs to.
#include <doctest/doctest.h>

#include <edgeattn/edgeattn.h>

#include "call_helpers.hpp"
#include "path_helpers.hpp"
#include "reference.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

using edgeattn_ref::ValidLens;

namespace {

const float inf = INFINITY, qnan = NAN;

using test_calls::fp32_weights;
using test_calls::request;
using test_calls::workspace_bytes;
using test_paths::path_guard;
using test_paths::paths;

bool row_has_nan(const float *row, std::size_t n) {
    for (std::size_t j = 0; j < n; ++j)
        if (std::isnan(row[j])) return true;
    return false;
}

bool row_all_nan(const float *row, std::size_t n) {
    for (std::size_t j = 0; j < n; ++j)
        if (!std::isnan(row[j])) return false;
    return true;
}

bool row_finite(const double *row, std::size_t n) {
    for (std::size_t j = 0; j < n; ++j)
        if (!std::isfinite(row[j])) return false;
    return true;
}

// Rows of `cols` values: where the reference row is finite, the library's
// is finite and within `tol` of it relative to the row's largest |value|
// (at least 1); returns how many reference rows were not finite.
std::size_t check_rows(const std::string &what, const std::vector<float> &got, const std::vector<double> &ref,
                       std::size_t cols, double tol = 1e-5) {
    REQUIRE(got.size() == ref.size());
    std::size_t non_finite = 0;
    for (std::size_t r = 0; r * cols < ref.size(); ++r) {
        const double *want = ref.data() + r * cols;
        const float *have = got.data() + r * cols;
        if (!row_finite(want, cols)) {
            ++non_finite;
            continue;
        }
        double scale = 1.0, worst = 0.0;
        for (std::size_t j = 0; j < cols; ++j) scale = std::fmax(scale, std::fabs(want[j]));
        for (std::size_t j = 0; j < cols; ++j)
            worst = std::isfinite(have[j]) ? std::fmax(worst, std::fabs(have[j] - want[j])) : INFINITY;
        INFO(what << ", row " << r);
        CHECK(worst <= tol * scale);
    }
    return non_finite;
}

std::vector<double> f64(const std::vector<float> &v) { return std::vector<double>(v.begin(), v.end()); }

// Masked softmax of `rows` rows of K scores with per-row valid lengths,
// through the C API, on the current path.
std::vector<float> softmax(const std::vector<float> &x, std::size_t K, const std::vector<std::int32_t> &lens) {
    const edgeattn_softmax_dims dims{1, x.size() / K, K};
    const edgeattn_valid_lens vl{EDGEATTN_VALID_LENS_PER_QUERY, lens.data()};
    std::vector<float> y(x.size(), -7.0f);
    REQUIRE(edgeattn_masked_softmax(&dims, x.data(), &vl, y.data()) == EDGEATTN_OK);
    return y;
}

std::vector<double> reference_softmax(const std::vector<float> &x, std::size_t K, const std::vector<std::int32_t> &lens) {
    ValidLens vl;
    vl.kind = ValidLens::per_query;
    vl.lens = lens;
    const std::vector<double> xd = f64(x);
    std::vector<double> y(x.size());
    edgeattn_ref::masked_softmax(1, x.size() / K, K, xd.data(), vl, y.data());
    return y;
}

// Workspace bytes for one thread, serving each of `calls` in turn.
std::size_t workspace_size(const std::vector<edgeattn_workspace_request> &calls) {
    std::size_t bytes = 0;
    REQUIRE(edgeattn_workspace_size(calls.data(), calls.size(), 1, &bytes) == EDGEATTN_OK);
    return bytes;
}

// Dot-product attention with a workspace for one thread: weights requested
// or not (then more than 256 keys take the streaming path).
struct dot_result {
    std::vector<float> out, weights;
};

dot_result dot_attention(std::size_t B, std::size_t Q, std::size_t K, std::size_t d, std::size_t dv,
                         const std::vector<float> &q, const std::vector<float> &k, const std::vector<float> &v,
                         const std::vector<std::int32_t> &lens, bool with_weights) {
    const edgeattn_attention_dims dims{B, Q, K, d, d, dv, 0, 0, 0, 0};
    edgeattn_attention_options options{};
    options.valid_lens = {EDGEATTN_VALID_LENS_PER_QUERY, lens.data()};
    std::vector<float> ws(workspace_bytes(EDGEATTN_OP_SDPA, dims, 1) / sizeof(float));
    dot_result r{std::vector<float>(B * Q * dv), std::vector<float>(with_weights ? B * Q * K : 0)};
    REQUIRE(edgeattn_sdpa(&dims, q.data(), k.data(), v.data(), &options, ws.data(), ws.size() * sizeof(float),
                          r.out.data(), with_weights ? r.weights.data() : nullptr) == EDGEATTN_OK);
    return r;
}

struct dot_reference {
    std::vector<double> out, weights;
};

dot_reference reference_dot(std::size_t B, std::size_t Q, std::size_t K, std::size_t d, std::size_t dv,
                            const std::vector<float> &q, const std::vector<float> &k, const std::vector<float> &v,
                            const std::vector<std::int32_t> &lens) {
    ValidLens vl;
    vl.kind = ValidLens::per_query;
    vl.lens = lens;
    dot_reference r{std::vector<double>(B * Q * dv), std::vector<double>(B * Q * K)};
    const std::vector<double> qd = f64(q), kd = f64(k), vd = f64(v);
    edgeattn_ref::dot_product_attention(B, Q, K, d, dv, qd.data(), kd.data(), vd.data(), vl, r.out.data(),
                                        r.weights.data());
    return r;
}

std::vector<float> ramp(std::size_t n, float scale) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(static_cast<int>(i * 7 % 13) - 6) / 6.0f;
    return v;
}

}  // namespace

TEST_CASE("masked softmax of huge finite scores, all-masked rows and K = 1 equals the float64 reference") {
    path_guard restore;
    const std::size_t K = 5;
    // rows: +-1e30, +-FLT_MAX, -1e30 with masking (masked -1e6 wins), all
    // masked, valid past K, huge spread, scores near -1e6
    const std::vector<float> x{1e30f,    -1e30f,   0.0f,    1e30f,     5.0f,     //
                               -1e30f,   -1e30f,   -1e30f,  -1e30f,    -1e30f,   //
                               FLT_MAX,  -FLT_MAX, FLT_MAX, 0.0f,      -1.0f,    //
                               -FLT_MAX, -FLT_MAX, -1e30f,  3.0f,      3.0f,     //
                               -1e30f,   -1e30f,   1e30f,   1e30f,     1e30f,    //
                               1.0f,     2.0f,     3.0f,    4.0f,      5.0f,     //
                               1.0f,     2.0f,     3.0f,    4.0f,      5.0f,     //
                               -1e6f,    -1e6f + 2, -1e6f - 3, 0.0f,   0.0f};
    const std::vector<std::int32_t> lens{5, 5, 5, 5, 2, 0, 100, 3};
    const std::vector<double> want = reference_softmax(x, K, lens);
    for (edgeattn_isa isa : paths()) {
        REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
        INFO("path " << std::string(edgeattn_isa_name(isa)));
        CHECK(check_rows("huge scores", softmax(x, K, lens), want, K, 1e-6) == 0);

        // K = 1: the one weight is 1 whatever the score (masked too);
        // -inf and +inf are the limits, NaN stays NaN.
        const std::vector<float> one{0.0f, 1e30f, -1e30f, FLT_MAX, -FLT_MAX, inf, -inf, 7.0f, qnan};
        const std::vector<std::int32_t> one_lens{1, 1, 1, 1, 1, 1, 1, 0, 1};
        const std::vector<float> y = softmax(one, 1, one_lens);
        for (std::size_t i = 0; i + 1 < one.size(); ++i) CHECK(y[i] == 1.0f);
        CHECK(std::isnan(y.back()));
    }
}

TEST_CASE("masked softmax of infinite scores is the softmax's limit, NaN only from NaN") {
    path_guard restore;
    const std::size_t K = 6;
    // The limit as the expected value: +inf positions share the weight;
    // a row of -inf is uniform; -inf next to finite scores weighs 0; a
    // NaN or +inf at a masked position is never read.
    struct row {
        std::vector<float> x;
        std::int32_t len;
        std::vector<float> want;
    };
    const float third = 1.0f / 3.0f, sixth = 1.0f / 6.0f;
    const row rows[] = {
        {{inf, 1, 2, 3, 4, 5}, 6, {1, 0, 0, 0, 0, 0}},
        {{1, inf, -inf, inf, 1e30f, 0}, 6, {0, 0.5f, 0, 0.5f, 0, 0}},
        {{inf, inf, inf, 1, 1, 1}, 3, {third, third, third, 0, 0, 0}},
        {{-inf, -inf, -inf, -inf, -inf, -inf}, 6, {sixth, sixth, sixth, sixth, sixth, sixth}},
        {{-inf, -inf, -inf, 9, 9, 9}, 3, {0, 0, 0, third, third, third}},  // masked -1e6 beats -inf
        {{-inf, 0, -inf, 0, -inf, -inf}, 6, {0, 0.5f, 0, 0.5f, 0, 0}},
        {{1, 1, qnan, inf, -inf, qnan}, 2, {0.5f, 0.5f, 0, 0, 0, 0}},       // masked NaN and inf unread
        {{qnan, qnan, qnan, qnan, qnan, qnan}, 0, {sixth, sixth, sixth, sixth, sixth, sixth}},
        {{inf, 3, 0, 0, 0, -inf}, 1, {1, 0, 0, 0, 0, 0}},
    };
    std::vector<float> x;
    std::vector<std::int32_t> lens;
    for (const row &r : rows) {
        x.insert(x.end(), r.x.begin(), r.x.end());
        lens.push_back(r.len);
    }
    for (edgeattn_isa isa : paths()) {
        REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
        INFO("path " << std::string(edgeattn_isa_name(isa)));
        const std::vector<float> y = softmax(x, K, lens);
        for (std::size_t r = 0; r < sizeof rows / sizeof rows[0]; ++r)
            for (std::size_t j = 0; j < K; ++j) {
                INFO("row " << r << ", key " << j);
                CHECK(y[r * K + j] == doctest::Approx(rows[r].want[j]).epsilon(1e-6));
            }
        // in place gives the same
        std::vector<float> z = x;
        const edgeattn_softmax_dims dims{1, lens.size(), K};
        const edgeattn_valid_lens vl{EDGEATTN_VALID_LENS_PER_QUERY, lens.data()};
        REQUIRE(edgeattn_masked_softmax(&dims, z.data(), &vl, z.data()) == EDGEATTN_OK);
        CHECK(std::memcmp(z.data(), y.data(), y.size() * sizeof(float)) == 0);
    }
}

TEST_CASE("a NaN among the valid scores makes its row NaN and no other row, on every path") {
    path_guard restore;
    for (const std::size_t K : {1, 3, 8, 17, 300}) {
        for (std::size_t nan_at = 0; nan_at < K; nan_at += (K > 8 ? 7 : 1)) {
            const std::size_t rows = 4;
            std::vector<float> x = ramp(rows * K, 4.0f);
            x[1 * K + nan_at] = qnan;                            // row 1: NaN among finite scores
            x[2 * K + nan_at] = qnan;                            // row 2: NaN with +inf
            if (K > 1) x[2 * K + (nan_at + 1) % K] = inf;
            const std::vector<std::int32_t> lens{static_cast<std::int32_t>(K), static_cast<std::int32_t>(K),
                                                 static_cast<std::int32_t>(K), static_cast<std::int32_t>(nan_at)};
            x[3 * K + nan_at] = qnan;                            // row 3: NaN at a masked position
            const std::vector<double> want = reference_softmax(x, K, lens);
            for (edgeattn_isa isa : paths()) {
                REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
                INFO("path " << std::string(edgeattn_isa_name(isa)) << ", K " << K << ", NaN at " << nan_at);
                const std::vector<float> y = softmax(x, K, lens);
                CHECK(row_all_nan(&y[1 * K], K));
                CHECK(row_all_nan(&y[2 * K], K));
                CHECK(!row_has_nan(&y[0], K));
                CHECK(!row_has_nan(&y[3 * K], K));
                CHECK(check_rows("NaN rows", y, want, K, 1e-6) == 2);
            }
        }
    }
}

TEST_CASE("a NaN beside +inf among the valid scores makes the masked positions NaN too, on every path") {
    // The infinite maximum takes the limit (weight only at +inf), but the
    // NaN makes the row's sum NaN, so every weight of the row is NaN, the
    // masked ones included, as d2l's formula gives.
    path_guard restore;
    for (const std::size_t K : {3, 8, 17, 300}) {
        std::vector<float> x = ramp(K, 4.0f);
        x[0] = qnan;
        x[1] = inf;
        const std::vector<std::int32_t> lens{2};
        for (edgeattn_isa isa : paths()) {
            REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
            INFO("path " << std::string(edgeattn_isa_name(isa)) << ", K " << K);
            CHECK(row_all_nan(softmax(x, K, lens).data(), K));
        }
    }
}

TEST_CASE("dot-product attention: scores of +-1e30 and scores that overflow float meet the float64 answer") {
    path_guard restore;
    // Q = 3 rows: (0) scores around +-1e30, (1) one score past FLT_MAX (+inf
    // in float, 1e40 in double: the softmax is one-hot either way), (2)
    // every score below -FLT_MAX with equal keys (uniform either way).
    for (const std::size_t K : {1, 5, 300}) {
        const std::size_t d = 4, dv = 3, Q = 3;
        std::vector<float> q(Q * d, 0.0f), k(K * d), v = ramp(K * dv, 2.0f);
        for (std::size_t j = 0; j < K; ++j)
            for (std::size_t c = 0; c < d; ++c) k[j * d + c] = c == 0 ? (j % 3 == 1 ? 1e20f : -1.0f) : 1.0f;
        q[0 * d + 0] = 1e10f;  // row 0: scores 5e29 / -5e9
        q[1 * d + 0] = 1e20f;  // row 1: 5e39 (-> +inf in float) / -5e19
        for (std::size_t c = 1; c < d; ++c) q[1 * d + c] = 1.0f;
        for (std::size_t j = 0; j < K; ++j) k[j * d + 3] = j % 3 == 1 ? -1e20f : k[j * d + 3];
        q[2 * d + 3] = 1e20f;  // row 2: -5e39 (-> -inf) at every third key, 5e19 elsewhere
        const std::vector<std::int32_t> lens{static_cast<std::int32_t>(K), static_cast<std::int32_t>(K),
                                             static_cast<std::int32_t>(K)};
        const dot_reference want = reference_dot(1, Q, K, d, dv, q, k, v, lens);
        for (edgeattn_isa isa : paths()) {
            REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
            for (bool with_weights : {true, false}) {
                INFO("path " << std::string(edgeattn_isa_name(isa)) << ", K " << K << (with_weights ? ", weights" : ""));
                const dot_result got = dot_attention(1, Q, K, d, dv, q, k, v, lens, with_weights);
                CHECK(check_rows("output", got.out, want.out, dv) == 0);
                if (with_weights) CHECK(check_rows("weights", got.weights, want.weights, K, 1e-6) == 0);
            }
        }
    }
}

TEST_CASE("dot-product attention: every key's score -inf gives the uniform (limit) weights, no NaN") {
    path_guard restore;
    for (const std::size_t K : {1, 4, 300}) {
        const std::size_t d = 2, dv = 2;
        std::vector<float> q{1e20f, 1e20f}, k(K * d, -1e20f), v = ramp(K * dv, 3.0f);
        const std::vector<std::int32_t> lens{static_cast<std::int32_t>(K)};
        std::vector<double> mean(dv, 0.0);
        for (std::size_t j = 0; j < K; ++j)
            for (std::size_t c = 0; c < dv; ++c) mean[c] += v[j * dv + c] / static_cast<double>(K);
        for (edgeattn_isa isa : paths()) {
            REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
            for (bool with_weights : {true, false}) {
                INFO("path " << std::string(edgeattn_isa_name(isa)) << ", K " << K << (with_weights ? ", weights" : ""));
                const dot_result got = dot_attention(1, 1, K, d, dv, q, k, v, lens, with_weights);
                CHECK(check_rows("output", got.out, mean, dv) == 0);
                for (float w : got.weights) CHECK(w == doctest::Approx(1.0 / K).epsilon(1e-6));
            }
        }
    }
}

TEST_CASE("attention: a NaN in a query row stays in that row; a NaN key or value stays in its batch element") {
    path_guard restore;
    for (const std::size_t K : {6, 300}) {
        const std::size_t B = 3, Q = 4, d = 5, dv = 3;
        std::vector<float> q = ramp(B * Q * d, 1.0f), k = ramp(B * K * d, 0.5f), v = ramp(B * K * dv, 2.0f);
        q[(0 * Q + 2) * d + 1] = qnan;                // batch 0, query 2
        k[(1 * K + K / 2) * d + 3] = qnan;            // batch 1, a key every row sees
        v[(2 * K + 1) * dv + 0] = qnan;               // batch 2, a value: column 0 of the rows that weigh it
        std::vector<std::int32_t> lens(B * Q, static_cast<std::int32_t>(K));
        lens[1 * Q + 3] = static_cast<std::int32_t>(K / 2);  // batch 1, query 3 masks the NaN key
        const dot_reference want = reference_dot(B, Q, K, d, dv, q, k, v, lens);
        for (edgeattn_isa isa : paths()) {
            REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
            for (bool with_weights : {true, false}) {
                INFO("path " << std::string(edgeattn_isa_name(isa)) << ", K " << K << (with_weights ? ", weights" : ""));
                const dot_result got = dot_attention(B, Q, K, d, dv, q, k, v, lens, with_weights);
                // Every row the reference gives a number for matches it: the
                // NaN reached nothing else (batch 0's other queries, batch
                // 1's masking row, all of batch 0 and 1 for the value).
                CHECK(check_rows("output", got.out, want.out, dv) == 1 + (Q - 1) + Q);
                CHECK(row_all_nan(&got.out[(0 * Q + 2) * dv], dv));
                for (std::size_t i = 0; i < 3; ++i) CHECK(row_all_nan(&got.out[(1 * Q + i) * dv], dv));
                if (with_weights) CHECK(check_rows("weights", got.weights, want.weights, K, 1e-6) == 1 + (Q - 1));
            }
        }
    }
}

TEST_CASE("multi-head and additive attention: a NaN in a query row stays in that row") {
    path_guard restore;
    const std::size_t B = 2, Q = 3, K = 4, qs = 5, ks = 6, vs = 7, h = 8, heads = 2;
    std::vector<float> q = ramp(B * Q * qs, 1.0f), k = ramp(B * K * ks, 1.0f), v = ramp(B * K * vs, 1.0f);
    const std::vector<float> W_q = ramp(h * qs, 0.3f), W_k = ramp(h * ks, 0.3f), W_v = ramp(h * vs, 0.3f),
                             W_o = ramp(h * h, 0.3f), w_v = ramp(h, 1.0f);
    q[(1 * Q + 1) * qs + 4] = qnan;
    ValidLens vl;  // none
    const std::vector<double> qd = f64(q), kd = f64(k), vd = f64(v), Wq = f64(W_q), Wk = f64(W_k), Wv = f64(W_v),
                              Wo = f64(W_o), wv = f64(w_v);
    std::vector<double> mha_out(B * Q * h), mha_w(B * heads * Q * K), add_out(B * Q * vs), add_w(B * Q * K);
    const edgeattn_ref::MhaWeights rw{Wq.data(), Wk.data(), Wv.data(), Wo.data(), nullptr, nullptr, nullptr, nullptr};
    edgeattn_ref::multi_head_attention(B, Q, K, qs, ks, vs, h, heads, qd.data(), kd.data(), vd.data(), vl, rw,
                                       mha_out.data(), mha_w.data());
    edgeattn_ref::additive_attention(B, Q, K, qs, ks, vs, h, qd.data(), kd.data(), vd.data(), vl, Wq.data(),
                                     Wk.data(), wv.data(), add_out.data(), add_w.data());

    const edgeattn_attention_dims dims{B, Q, K, qs, ks, vs, h, heads, 0, 0};
    const edgeattn_weights mw = fp32_weights(W_q.data(), W_k.data(), W_v.data(), W_o.data());
    const edgeattn_weights aw = fp32_weights(W_q.data(), W_k.data(), w_v.data(), nullptr);
    // One workspace for both calls: the larger of their sizes.
    std::vector<float> ws(
        workspace_size({request(EDGEATTN_OP_MHA, dims), request(EDGEATTN_OP_ADDITIVE, dims)}) / sizeof(float));
    for (edgeattn_isa isa : paths()) {
        REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
        INFO("path " << std::string(edgeattn_isa_name(isa)));
        std::vector<float> out(B * Q * h), w(B * heads * Q * K);
        REQUIRE(edgeattn_mha(&dims, q.data(), k.data(), v.data(), &mw, nullptr, ws.data(), ws.size() * sizeof(float),
                             out.data(), w.data()) == EDGEATTN_OK);
        CHECK(check_rows("mha output", out, mha_out, h) == 1);
        CHECK(row_all_nan(&out[(1 * Q + 1) * h], h));
        CHECK(check_rows("mha weights", w, mha_w, K) == heads);
        std::vector<float> aout(B * Q * vs), aw_out(B * Q * K);
        REQUIRE(edgeattn_additive(&dims, q.data(), k.data(), v.data(), &aw, nullptr, ws.data(),
                                  ws.size() * sizeof(float), aout.data(), aw_out.data()) == EDGEATTN_OK);
        CHECK(check_rows("additive output", aout, add_out, vs) == 1);
        CHECK(row_all_nan(&aout[(1 * Q + 1) * vs], vs));
        CHECK(check_rows("additive weights", aw_out, add_w, K) == 1);
    }
}

TEST_CASE("a huge d: scores scale by 1/sqrt(d) and meet the reference") {
    path_guard restore;
    for (const std::size_t d : {4099, 65536}) {
        const std::size_t Q = 2, K = 3, dv = 2;
        const std::vector<float> q = ramp(Q * d, 1.0f), k = ramp(K * d, 1.0f), v = ramp(K * dv, 1.0f);
        const std::vector<std::int32_t> lens{3, 1};
        const dot_reference want = reference_dot(1, Q, K, d, dv, q, k, v, lens);
        for (edgeattn_isa isa : paths()) {
            REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
            INFO("path " << std::string(edgeattn_isa_name(isa)) << ", d " << d);
            const dot_result got = dot_attention(1, Q, K, d, dv, q, k, v, lens, true);
            CHECK(check_rows("output", got.out, want.out, dv, 1e-4) == 0);
            CHECK(check_rows("weights", got.weights, want.weights, K, 1e-4) == 0);
        }
    }
}

TEST_CASE("short rows (a few keys of a few features) and the block path beside them meet the float64 answer") {
    path_guard restore;
    // Rows of at most 256 multiply-adds (keys times d + dv) and 32 keys take
    // their own loops; one past either bound takes the block path. Each
    // shape on both sides of the bound, with rows that see every key, some,
    // none (uniform), and lengths past K.
    struct shape {
        std::size_t K, d, dv;
    };
    for (const shape s : {shape{1, 1, 1}, shape{10, 2, 4}, shape{32, 4, 4}, shape{32, 4, 5}, shape{33, 2, 2},
                          shape{7, 19, 17}, shape{7, 20, 17}}) {
        const std::size_t B = 2, Q = 5, K = s.K, d = s.d, dv = s.dv;
        const std::vector<float> q = test_paths::random_floats(B * Q * d, 21, 1.5f),
                                 k = test_paths::random_floats(B * K * d, 22, 1.5f),
                                 v = test_paths::random_floats(B * K * dv, 23);
        std::vector<std::int32_t> lens(B * Q);
        for (std::size_t r = 0; r < B * Q; ++r) lens[r] = static_cast<std::int32_t>((r * 3) % (K + 3));
        const dot_reference want = reference_dot(B, Q, K, d, dv, q, k, v, lens);
        for (edgeattn_isa isa : paths()) {
            REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
            for (bool with_weights : {true, false}) {
                INFO("path " << std::string(edgeattn_isa_name(isa)) << ", K " << K << ", d " << d << ", dv " << dv
                             << (with_weights ? ", weights" : ""));
                const dot_result got = dot_attention(B, Q, K, d, dv, q, k, v, lens, with_weights);
                CHECK(check_rows("output", got.out, want.out, dv) == 0);
                if (with_weights) CHECK(check_rows("weights", got.weights, want.weights, K, 1e-6) == 0);
            }
        }
    }
}

// Values near the largest float: each weight is at most 1 and they sum to
// 1, so the weighted sum stays within the values (a sum of exponentials
// times values, divided last, would overflow to inf). Equal scores: each
// output is the mean of its visible values, and the same bits whether the
// weights are asked for or not.
TEST_CASE("short rows of values near the largest float give their finite weighted mean, weights or not") {
    path_guard restore;
    const std::size_t B = 1, Q = 3, K = 4, d = 1;
    const std::vector<float> q(B * Q * d, 0.0f), k(B * K * d, 1.0f);
    const std::vector<std::int32_t> lens{2, 3, 4};
    for (const std::size_t dv : {std::size_t{1}, std::size_t{4}, std::size_t{6}}) {
        std::vector<float> v(B * K * dv);
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = (i % dv) % 2 ? -3.0e38f : 3.0e38f;  // by column
        for (edgeattn_isa isa : paths()) {
            REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
            INFO("path " << std::string(edgeattn_isa_name(isa)) << ", dv " << dv);
            const dot_result plain = dot_attention(B, Q, K, d, dv, q, k, v, lens, false);
            const dot_result weighed = dot_attention(B, Q, K, d, dv, q, k, v, lens, true);
            for (std::size_t i = 0; i < Q; ++i)
                for (std::size_t c = 0; c < dv; ++c) {
                    double mean = 0.0;  // float64: the mean of the row's visible values in column c
                    for (std::size_t j = 0; j < static_cast<std::size_t>(lens[i]); ++j) mean += v[j * dv + c];
                    mean /= lens[i];
                    const float got = plain.out[i * dv + c];
                    CHECK(std::isfinite(got));
                    CHECK(std::fabs(got - mean) <= 1e-5 * 3.0e38);
                }
            CHECK(std::memcmp(plain.out.data(), weighed.out.data(), plain.out.size() * sizeof(float)) == 0);
        }
    }
}

TEST_CASE("short rows whose scores sit near d2l's -1e6 weigh their masked keys, NaN stays in its row") {
    path_guard restore;
    // Scores q.k / 2 of about -1e6 + 2 (row 0), -1e6 + 62 (row 1, masked
    // keys weigh e^-60 of a visible one), -1e6 + 202 (row 2, they weigh 0),
    // and a NaN key that row 3 does not see and row 4 does. Keys
    // (999998 + j % 3, 1, 0, 0) and queries (-2, c, 0, 0): every product
    // and sum is an integer below 2^24 and the scale 1/2, so the scores are
    // exact in float and the rows compare at the reference's precision.
    const std::size_t B = 1, Q = 5, K = 10, d = 4, dv = 3;
    const float c[Q] = {0.0f, 120.0f, 400.0f, 0.0f, 0.0f}, sign[Q] = {-2.0f, -2.0f, -2.0f, 2.0f, 2.0f};
    std::vector<float> q_rows(Q * d, 0.0f), k(K * d, 0.0f), v(K * dv);
    for (std::size_t i = 0; i < Q; ++i) q_rows[i * d] = sign[i], q_rows[i * d + 1] = c[i];
    for (std::size_t j = 0; j < K; ++j) k[j * d] = 999998.0f + static_cast<float>(j % 3), k[j * d + 1] = 1.0f;
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 11) - 5.0f;
    k[9 * d] = qnan;
    const std::vector<std::int32_t> lens{5, 6, 4, 7, 10};
    const dot_reference want = reference_dot(B, Q, K, d, dv, q_rows, k, v, lens);
    for (edgeattn_isa isa : paths()) {
        REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
        for (bool with_weights : {true, false}) {
            INFO("path " << std::string(edgeattn_isa_name(isa)) << (with_weights ? ", weights" : ""));
            const dot_result got = dot_attention(B, Q, K, d, dv, q_rows, k, v, lens, with_weights);
            CHECK(check_rows("output", got.out, want.out, dv) == 1);  // row 4 sees the NaN key
            CHECK(row_all_nan(&got.out[4 * dv], dv));
            if (with_weights) CHECK(check_rows("weights", got.weights, want.weights, K, 1e-6) == 1);
        }
    }
}
