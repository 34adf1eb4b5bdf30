// Every golden case through the C++17 fixed-size API: the module templates
// are instantiated with each case's dimensions, which the test first checks
// against the shapes in the file (so a template typo cannot pass silently).
#include <doctest/doctest.h>

#include <edgeattn/edgeattn.hpp>

#include "call_helpers.hpp"
#include "conform/accuracy.hpp"
#include "conform/case_file.hpp"

#include <memory>
#include <string>
#include <vector>

using namespace edgeattn_conform;
using test_calls::fp32_weights;

namespace {

Case load(const std::string &name) {
    Case c;
    std::string err;
    const bool read = read_case_file(std::string(EDGEATTN_GOLDEN_DIR) + "/" + name + ".case", c, err);
    REQUIRE_MESSAGE(read, err);
    return c;
}

// A tensor's values as float, after checking its shape.
std::vector<float> input(const Case &c, const std::string &name, std::vector<std::size_t> shape) {
    const Tensor *t = c.find(Role::input, name);
    REQUIRE_MESSAGE(t != nullptr, "no input " << name);
    REQUIRE_MESSAGE(t->shape == shape, name << " is " << shape_string(t->shape) << ", the template says "
                                            << shape_string(shape));
    return std::vector<float>(t->values.begin(), t->values.end());
}

std::vector<int32_t> lens(const Case &c) {
    const Tensor *t = c.find(Role::input, "valid_lens");
    if (!t) return {};
    return std::vector<int32_t>(t->values.begin(), t->values.end());
}

// valid_lens of a case as the C API takes them: absent, (B) or (B, Q).
edgeattn_valid_lens lens_view(const Case &c, const std::vector<int32_t> &values) {
    const Tensor *t = c.find(Role::input, "valid_lens");
    if (!t) return {EDGEATTN_VALID_LENS_NONE, nullptr};
    return {t->shape.size() == 1 ? EDGEATTN_VALID_LENS_PER_BATCH : EDGEATTN_VALID_LENS_PER_QUERY,
            values.data()};
}

void expect_close(const Case &c, const std::string &name, const std::vector<float> &got) {
    const Tensor *ref = c.find(Role::expect, name);
    REQUIRE_MESSAGE(ref != nullptr, "no expected " << name);
    REQUIRE(ref->values.size() == got.size());
    const std::vector<double> got64(got.begin(), got.end());
    const Verdict v = check_values(name, got64.data(), ref->values.data(), got.size(), is_p_table(c.op, name));
    CHECK_MESSAGE(v.ok, c.op << " " << v.message);
}

template <std::size_t B, std::size_t Q, std::size_t K>
void softmax_case(const std::string &name) {
    const Case c = load(name);
    const std::vector<float> X = input(c, "X", {B, Q, K});
    const std::vector<int32_t> l = lens(c);
    const edgeattn_valid_lens vl = lens_view(c, l);
    std::vector<float> Y(B * Q * K);
    REQUIRE(edgeattn::masked_softmax<B, Q, K>(X.data(), &vl, Y.data()) == EDGEATTN_OK);
    expect_close(c, "Y", Y);
}

template <std::size_t B, std::size_t Q, std::size_t K, std::size_t D, std::size_t V>
void dot_case(const std::string &name) {
    const Case c = load(name);
    const auto q = input(c, "queries", {B, Q, D}), k = input(c, "keys", {B, K, D}),
               v = input(c, "values", {B, K, V});
    const std::vector<int32_t> l = lens(c);
    const edgeattn_valid_lens vl = lens_view(c, l);
    auto module = std::make_unique<edgeattn::DotProductAttention<B, Q, K, D, V>>();
    std::vector<float> out(B * Q * V), weights(B * Q * K);
    REQUIRE(module->forward(q.data(), k.data(), v.data(), &vl, out.data(), weights.data()) == EDGEATTN_OK);
    expect_close(c, "output", out);
    expect_close(c, "attention_weights", weights);
}

template <std::size_t B, std::size_t Q, std::size_t K, std::size_t QS, std::size_t KS, std::size_t V,
          std::size_t H>
void additive_case(const std::string &name) {
    const Case c = load(name);
    const auto q = input(c, "queries", {B, Q, QS}), k = input(c, "keys", {B, K, KS}),
               v = input(c, "values", {B, K, V});
    const auto W_q = input(c, "W_q", {H, QS}), W_k = input(c, "W_k", {H, KS}), w_v = input(c, "w_v", {1, H});
    const std::vector<int32_t> l = lens(c);
    const edgeattn_valid_lens vl = lens_view(c, l);
    const edgeattn_weights w = fp32_weights(W_q.data(), W_k.data(), w_v.data(), nullptr);
    auto module = std::make_unique<edgeattn::AdditiveAttention<B, Q, K, QS, KS, V, H>>(w);
    std::vector<float> out(B * Q * V), weights(B * Q * K);
    REQUIRE(module->forward(q.data(), k.data(), v.data(), &vl, out.data(), weights.data()) == EDGEATTN_OK);
    expect_close(c, "output", out);
    expect_close(c, "attention_weights", weights);
}

// The (h, in) matrices and optional (h) biases of an MHA case.
struct mha_params {
    std::vector<float> W_q, W_k, W_v, W_o, b_q, b_k, b_v, b_o;
    edgeattn_weights view() const {
        auto p = [](const std::vector<float> &v) { return v.empty() ? nullptr : v.data(); };
        return fp32_weights(W_q.data(), W_k.data(), W_v.data(), W_o.data(), p(b_q), p(b_k), p(b_v), p(b_o));
    }
};

mha_params load_mha_params(const Case &c, std::size_t h, std::size_t qs, std::size_t ks, std::size_t vs) {
    mha_params p{input(c, "W_q", {h, qs}), input(c, "W_k", {h, ks}), input(c, "W_v", {h, vs}),
                 input(c, "W_o", {h, h}), {}, {}, {}, {}};
    if (c.find(Role::input, "b_q")) {
        p.b_q = input(c, "b_q", {h});
        p.b_k = input(c, "b_k", {h});
        p.b_v = input(c, "b_v", {h});
        p.b_o = input(c, "b_o", {h});
    }
    return p;
}

template <std::size_t B, std::size_t Q, std::size_t K, std::size_t QS, std::size_t KS, std::size_t VS,
          std::size_t H, std::size_t Heads>
void mha_case(const std::string &name) {
    const Case c = load(name);
    const auto q = input(c, "queries", {B, Q, QS}), k = input(c, "keys", {B, K, KS}),
               v = input(c, "values", {B, K, VS});
    const mha_params params = load_mha_params(c, H, QS, KS, VS);
    const std::vector<int32_t> l = lens(c);
    const edgeattn_valid_lens vl = lens_view(c, l);
    using Module = edgeattn::MultiHeadAttention<B, Q, K, QS, KS, VS, H, Heads>;
    auto module = std::make_unique<Module>(params.view());
    std::vector<float> out(B * Q * H), weights(B * Heads * Q * K);
    REQUIRE(module->forward(q.data(), k.data(), v.data(), &vl, out.data(), weights.data()) == EDGEATTN_OK);
    expect_close(c, "output", out);
    expect_close(c, "attention_weights", weights);

    // The packed-weights form: its compile-time size is the C API's, and it
    // meets the same bar.
    using Packed = typename Module::Packed;
    const edgeattn_weights fp32 = params.view();
    CHECK(Packed::bytes == edgeattn_mha_packed_size(&Module::dims, &fp32));
    auto packed = std::make_unique<Packed>();
    auto packed_module = std::make_unique<Module>(*packed);
    std::vector<float> untouched(out.size(), -7.0f), packed_out = untouched;
    CHECK(packed_module->forward(q.data(), k.data(), v.data(), &vl, packed_out.data()) ==
          EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH);  // not packed yet: refused, nothing written
    CHECK(packed_out == untouched);
    REQUIRE(packed->pack(params.view()) == EDGEATTN_OK);
    std::vector<float> packed_weights(weights.size());
    REQUIRE(packed_module->forward(q.data(), k.data(), v.data(), &vl, packed_out.data(),
                                   packed_weights.data()) == EDGEATTN_OK);
    expect_close(c, "output", packed_out);
    expect_close(c, "attention_weights", packed_weights);
}

template <std::size_t B, std::size_t N, std::size_t D, std::size_t MaxLen>
void positional_case(const std::string &name) {
    const Case c = load(name);
    const auto X = input(c, "X", {B, N, D});
    const edgeattn::PositionalEncodingTable<MaxLen, D> &P = edgeattn::positional_encoding_table<MaxLen, D>;
    std::vector<float> out(B * N * D);
    REQUIRE(edgeattn_positional_encoding_add_at(B, N, D, 0, X.data(), P.data(), MaxLen, out.data()) == EDGEATTN_OK);
    expect_close(c, "output", out);
    expect_close(c, "P", std::vector<float>(P.data(), P.data() + MaxLen * D));
}

template <std::size_t B, std::size_t N, std::size_t D, std::size_t Heads, std::size_t MaxLen>
void self_attention_case(const std::string &name) {
    const Case c = load(name);
    const auto X = input(c, "X", {B, N, D});
    const mha_params params = load_mha_params(c, D, D, D, D);
    const std::vector<int32_t> l = lens(c);
    const edgeattn_valid_lens vl = lens_view(c, l);
    using Module = edgeattn::PositionalSelfAttention<B, N, D, Heads, MaxLen>;
    auto module = std::make_unique<Module>(params.view());
    std::vector<float> out(B * N * D), weights(B * Heads * N * N);
    REQUIRE(module->forward(X.data(), &vl, out.data(), weights.data()) == EDGEATTN_OK);
    expect_close(c, "output", out);
    expect_close(c, "attention_weights", weights);

    auto packed = std::make_unique<typename Module::Packed>();
    REQUIRE(packed->pack(params.view()) == EDGEATTN_OK);
    auto packed_module = std::make_unique<Module>(*packed);
    REQUIRE(packed_module->forward(X.data(), &vl, out.data(), weights.data()) == EDGEATTN_OK);
    expect_close(c, "output", out);
    expect_close(c, "attention_weights", weights);
}

}  // namespace

TEST_CASE("fixed-size masked_softmax meets the golden cases") {
    softmax_case<2, 2, 4>("softmax_seed_1d");
    softmax_case<2, 2, 4>("softmax_seed_2d");
    softmax_case<2, 3, 5>("softmax_unmasked");
    softmax_case<2, 3, 6>("softmax_all_masked");
    softmax_case<3, 7, 37>("softmax_large_values");
    softmax_case<2, 4, 1029>("softmax_wide");
}

TEST_CASE("fixed-size DotProductAttention meets the golden cases") {
    dot_case<2, 1, 10, 2, 4>("dot_seed");
    dot_case<2, 5, 7, 16, 3>("dot_random");
    dot_case<3, 33, 65, 64, 24>("dot_unmasked");
}

TEST_CASE("fixed-size AdditiveAttention meets the golden cases") {
    additive_case<2, 1, 10, 20, 2, 4, 8>("additive_seed");
    additive_case<3, 5, 6, 7, 4, 9, 10>("additive_random");
}

TEST_CASE("fixed-size MultiHeadAttention meets the golden cases") {
    mha_case<2, 4, 4, 100, 100, 100, 100, 5>("mha_seed");
    mha_case<2, 9, 9, 100, 100, 100, 100, 5>("mha_self_random");
    mha_case<2, 3, 6, 12, 20, 24, 16, 4>("mha_cross_bias");
}

TEST_CASE("compile-time positional tables meet the golden cases") {
    positional_case<1, 60, 32, 1000>("posenc_seed");
    positional_case<2, 17, 7, 50>("posenc_odd_dim");
}

TEST_CASE("fixed-size PositionalSelfAttention (positions + MHA) meets the golden case") {
    self_attention_case<2, 10, 32, 4, 1000>("self_attention_pe");
}
