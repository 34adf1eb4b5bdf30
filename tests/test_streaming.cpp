// The streaming path (no attention weights requested, more keys than one
// key block) against the float64 reference, on every kernel path: several
// key blocks, valid lengths inside, at and past block edges, all-masked rows,
// and rows whose valid scores sit near d2l's -1e6 (where masked keys count).
#include <doctest/doctest.h>

#include <edgeattn/edgeattn.h>

#include "call_helpers.hpp"
#include "edgeattn/detail/workspace_layout.hpp"
#include "reference.hpp"

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace {

double relative_l2(const std::vector<float> &got, const std::vector<double> &ref) {
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < got.size(); ++i) {
        if (!std::isfinite(got[i])) return INFINITY;
        num += (got[i] - ref[i]) * (got[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    return std::sqrt(num / den);
}

std::vector<float> random_floats(size_t n, std::mt19937 &rng, float scale) {
    std::normal_distribution<float> g(0.0f, scale);
    std::vector<float> v(n);
    for (float &x : v) x = g(rng);
    return v;
}

// edgeattn_sdpa with valid lengths as its only option.
edgeattn_status sdpa(const edgeattn_attention_dims &dims, const std::vector<float> &q, const std::vector<float> &k,
                     const std::vector<float> &v, const edgeattn_valid_lens &vl, std::vector<float> &ws,
                     float *output, float *attention_weights) {
    const edgeattn_attention_options options = test_calls::options_of(&vl, nullptr);
    return edgeattn_sdpa(&dims, q.data(), k.data(), v.data(), &options, ws.data(), ws.size() * sizeof(float), output,
                         attention_weights);
}

}  // namespace

TEST_CASE("streaming dot-product attention over several key blocks meets the reference") {
    constexpr size_t block = edgeattn::detail::keys_per_block;
    const size_t B = 3, Q = 37, K = 2 * block + 91, d = 20, dv = 13;
    std::mt19937 rng(5);
    const auto q = random_floats(B * Q * d, rng, 1.0f), k = random_floats(B * K * d, rng, 1.0f),
               v = random_floats(B * K * dv, rng, 1.0f);
    // Per-query lengths: 0, 1, at and around block edges, K, past K.
    const int32_t picks[] = {0, 1, int32_t(block) - 1, int32_t(block), int32_t(block) + 1, int32_t(K) - 1,
                             int32_t(K), int32_t(K) + 50, 300, 17};
    std::vector<int32_t> lens(B * Q);
    for (size_t i = 0; i < lens.size(); ++i) lens[i] = picks[i % 10];
    const edgeattn_valid_lens vl{EDGEATTN_VALID_LENS_PER_QUERY, lens.data()};
    edgeattn_ref::ValidLens ref_vl{edgeattn_ref::ValidLens::per_query, lens};

    const std::vector<double> q64(q.begin(), q.end()), k64(k.begin(), k.end()), v64(v.begin(), v.end());
    std::vector<double> ref_out(B * Q * dv), ref_w(B * Q * K);
    edgeattn_ref::dot_product_attention(B, Q, K, d, dv, q64.data(), k64.data(), v64.data(), ref_vl, ref_out.data(),
                                        ref_w.data());

    const edgeattn_attention_dims dims{B, Q, K, d, d, dv, 0, 0, 0, 0};
    std::vector<float> ws(test_calls::workspace_bytes(EDGEATTN_OP_SDPA, dims, 4) / sizeof(float));
    for (int i = EDGEATTN_ISA_SCALAR; i <= EDGEATTN_ISA_HELIUM; ++i) {
        const edgeattn_isa isa = static_cast<edgeattn_isa>(i);
        if (!edgeattn_isa_supported(isa)) continue;
        REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
        INFO("path " << std::string(edgeattn_isa_name(isa)));
        std::vector<float> out(B * Q * dv);
        REQUIRE(sdpa(dims, q, k, v, vl, ws, out.data(), nullptr) == EDGEATTN_OK);
        CHECK(relative_l2(out, ref_out) <= 1e-5);
    }
    REQUIRE(edgeattn_set_isa(EDGEATTN_ISA_AUTO) == EDGEATTN_OK);
}

TEST_CASE("streaming keeps d2l's -1e6 rule when the valid scores are near -1e6") {
    // Scores q.k/sqrt(d) of about -1e6 + 2: masked keys (-1e6) weigh e^-2 of
    // a valid one, so they must enter the sum and the weighted values.
    const size_t B = 1, Q = 2, K = edgeattn::detail::keys_per_block + 40, d = 1, dv = 3;
    std::vector<float> q{-1.0f, -1.0f}, k(K), v(K * dv);
    for (size_t j = 0; j < K; ++j) k[j] = 999998.0f + static_cast<float>(j % 3);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 11) - 5.0f;
    const std::vector<int32_t> lens{5, 0};
    const edgeattn_valid_lens vl{EDGEATTN_VALID_LENS_PER_QUERY, lens.data()};
    edgeattn_ref::ValidLens ref_vl{edgeattn_ref::ValidLens::per_query, lens};
    const std::vector<double> q64(q.begin(), q.end()), k64(k.begin(), k.end()), v64(v.begin(), v.end());
    std::vector<double> ref_out(B * Q * dv), ref_w(B * Q * K);
    edgeattn_ref::dot_product_attention(B, Q, K, d, dv, q64.data(), k64.data(), v64.data(), ref_vl, ref_out.data(),
                                        ref_w.data());
    const edgeattn_attention_dims dims{B, Q, K, d, d, dv, 0, 0, 0, 0};
    std::vector<float> ws(test_calls::workspace_bytes(EDGEATTN_OP_SDPA, dims, 1) / sizeof(float));
    std::vector<float> out(B * Q * dv), with_weights(B * Q * dv), w(B * Q * K);
    REQUIRE(sdpa(dims, q, k, v, vl, ws, out.data(), nullptr) == EDGEATTN_OK);
    REQUIRE(sdpa(dims, q, k, v, vl, ws, with_weights.data(), w.data()) == EDGEATTN_OK);
    CHECK(relative_l2(out, ref_out) <= 1e-5);
    CHECK(relative_l2(with_weights, ref_out) <= 1e-5);
}
