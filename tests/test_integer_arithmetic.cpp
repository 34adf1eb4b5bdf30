// The int8 arithmetic (EDGEATTN_ARITHMETIC_INT8) of edgeattn_dense and
// edgeattn_mha's projections: against a float64 model of exactly its
// quantisation (written here, independently of the library's quantiser),
// every kernel path bit for bit against the plain one (dense layers), any
// thread count the same bits, rows of zeros, NaN and infinities, the
// largest input size, and every refusal (the test loops over the paths
// itself).
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
#include "reference.hpp"

namespace {

using test_paths::path_guard;
using test_paths::paths;
using test_paths::random_floats;
using test_int8::model_quantise;
using test_int8::quantised_row;

// y = ((sum q_x q_w) * sx * sw + b) in float64, the sums in int64.
std::vector<double> model_dense(std::size_t rows, std::size_t in, std::size_t out, const std::vector<float> &x,
                                const std::vector<int8_t> &W, const std::vector<float> &scales,
                                const float *b) {
    std::vector<double> y(rows * out);
    for (std::size_t r = 0; r < rows; ++r) {
        const quantised_row qx = model_quantise(x.data() + r * in, in);
        for (std::size_t j = 0; j < out; ++j) {
            int64_t sum = 0;
            for (std::size_t i = 0; i < in; ++i) sum += static_cast<int64_t>(qx.q[i]) * W[j * in + i];
            y[r * out + j] = static_cast<double>(sum) * qx.scale * scales[j] + (b ? b[j] : 0.0);
        }
    }
    return y;
}

struct int8_layer {
    std::size_t rows, in, out;
    std::vector<float> x, scales, b;
    std::vector<int8_t> W;
    edgeattn_weight_matrix m() const {
        return {EDGEATTN_DTYPE_INT8, W.data(), scales.data(), EDGEATTN_ARITHMETIC_INT8};
    }
};

// Random x (a few rows far larger than the rest), int8 weights over the
// whole range -128..127, scales near 1/127.
int8_layer make_layer(std::size_t rows, std::size_t in, std::size_t out, unsigned seed) {
    int8_layer l{rows, in, out, random_floats(rows * in, seed), {}, random_floats(out, seed + 1), {}};
    for (std::size_t r = 0; r < rows; r += 3)
        for (std::size_t i = 0; i < in; ++i) l.x[r * in + i] *= 1000.0f;
    l.W.resize(out * in);
    uint32_t state = seed * 2654435761u + 1;
    for (int8_t &w : l.W) {
        state = state * 1664525u + 1013904223u;
        w = static_cast<int8_t>(state >> 24);
    }
    l.scales.resize(out);
    for (std::size_t j = 0; j < out; ++j) l.scales[j] = (0.5f + 0.01f * static_cast<float>(j % 7)) / 127.0f;
    return l;
}

std::size_t integer_workspace_bytes(const edgeattn_dense_dims &dims, std::size_t threads) {
    edgeattn_workspace_request r = test_calls::dense_request(dims);
    r.arithmetic = EDGEATTN_ARITHMETIC_INT8;
    return test_calls::size_of(r, threads);
}

std::vector<float> run_dense(const int8_layer &l, const float *b, std::size_t threads = 1) {
    const edgeattn_dense_dims dims = {l.rows, l.in, l.out};
    std::vector<float> ws(integer_workspace_bytes(dims, threads) / 4 + 1), y(l.rows * l.out, -7.0f);
    const edgeattn_weight_matrix m = l.m();
    REQUIRE(edgeattn_dense(&dims, l.x.data(), &m, b, ws.data(), ws.size() * 4, y.data()) == EDGEATTN_OK);
    return y;
}

// Each element within a few roundings of the model: float(sum), two
// products and the bias's sum, each half an ulp (2^-24 relative).
void check_against_model(const std::vector<float> &got, const std::vector<double> &want,
                         const std::vector<double> &magnitude) {
    for (std::size_t i = 0; i < want.size(); ++i) {
        const double tol = 4.0 * std::ldexp(1.0, -24) * magnitude[i] + 1e-37;
        if (!(std::fabs(got[i] - want[i]) <= tol)) {
            FAIL_CHECK("element " << i << ": " << got[i] << " against the model's " << want[i]);
            return;
        }
    }
    CHECK(test_paths::rel_l2(got.data(), want) <= 1e-5);
}

// |sum| * sx * sw + |b| per element: the scale of each element's roundings.
std::vector<double> magnitudes(const int8_layer &l, const float *b) {
    std::vector<float> ab(l.out);
    for (std::size_t j = 0; j < l.out; ++j) ab[j] = b ? std::fabs(b[j]) : 0.0f;
    std::vector<double> m(l.rows * l.out);
    for (std::size_t r = 0; r < l.rows; ++r) {
        const quantised_row qx = model_quantise(l.x.data() + r * l.in, l.in);
        for (std::size_t j = 0; j < l.out; ++j) {
            double s = 0;
            for (std::size_t i = 0; i < l.in; ++i) s += std::fabs(double(qx.q[i]) * l.W[j * l.in + i]);
            m[r * l.out + j] = s * qx.scale * l.scales[j] + ab[j];
        }
    }
    return m;
}

}  // namespace

TEST_CASE("the int8 arithmetic: every path within roundings of the float64 model and bit for bit the plain path's") {
    path_guard guard;
    const std::size_t shapes[][3] = {{1, 1, 1},  {1, 7, 3},   {3, 16, 4},   {16, 31, 5},  {17, 32, 13},
                                     {5, 33, 9}, {2, 64, 4},  {40, 100, 7}, {4, 257, 6}, {33, 129, 17}};
    unsigned seed = 11;
    for (const auto &s : shapes) {
        const int8_layer l = make_layer(s[0], s[1], s[2], seed++);
        const std::vector<float> b = random_floats(l.out, seed++);
        for (const float *bias : {static_cast<const float *>(nullptr), b.data()}) {
            CAPTURE(s[0]);
            CAPTURE(s[1]);
            CAPTURE(s[2]);
            const std::vector<double> want = model_dense(l.rows, l.in, l.out, l.x, l.W, l.scales, bias);
            REQUIRE(edgeattn_set_isa(EDGEATTN_ISA_SCALAR) == EDGEATTN_OK);
            const std::vector<float> plain = run_dense(l, bias);
            check_against_model(plain, want, magnitudes(l, bias));
            for (edgeattn_isa isa : paths()) {
                CAPTURE(edgeattn_isa_name(isa));
                REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
                const std::vector<float> got = run_dense(l, bias);
                CHECK(std::memcmp(got.data(), plain.data(), got.size() * sizeof(float)) == 0);
            }
        }
    }
}

TEST_CASE("the int8 arithmetic: quotients on a half round to even, and those a float division puts on one by the exact quotient") {
    path_guard guard;
    // Row 0: max 127, scale 1, every element a half (k + 1/2: ties, to the
    // even neighbour). Row 1: max 24.1455498, where 0.665428519 / scale is
    // 3.5 in float but below 3.5 exactly (3, not 4), at every position of a
    // vector step and its tail.
    const std::size_t in = 67, out = 5;
    int8_layer l = make_layer(2, in, out, 5);
    for (std::size_t i = 0; i < in; ++i) {
        l.x[i] = static_cast<float>(static_cast<int>(i % 40) - 20) + 0.5f;
        l.x[in + i] = i % 2 ? 0.665428519f : -0.665428519f;
    }
    l.x[in - 1] = 127.0f;
    l.x[2 * in - 1] = 24.1455498f;
    const quantised_row q1 = model_quantise(l.x.data() + in, in);
    REQUIRE(static_cast<float>(0.665428519f / static_cast<float>(q1.scale)) == 3.5f);  // the float quotient's half
    REQUIRE(q1.q[1] == 3);
    const std::vector<double> want = model_dense(l.rows, in, out, l.x, l.W, l.scales, nullptr);
    for (edgeattn_isa isa : paths()) {
        CAPTURE(edgeattn_isa_name(isa));
        REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
        check_against_model(run_dense(l, nullptr), want, magnitudes(l, nullptr));
    }
}

TEST_CASE("the int8 arithmetic: elements within a few ulps of every half quantise by the exact quotient, every path") {
    // W = I with scales 1: y = (float)q * s_x, so each y gives back q. Rows
    // of 256 elements: the largest sets the scale, the others lie 0 to 3
    // ulps either side of (k + 1/2) * scale for k in -127..126.
    path_guard guard;
    const std::size_t in = 256, rows = 12;
    int8_layer l{rows, in, in, std::vector<float>(rows * in), std::vector<float>(in, 1.0f), {}, std::vector<int8_t>(in * in, 0)};
    for (std::size_t j = 0; j < in; ++j) l.W[j * in + j] = 1;
    uint32_t state = 12345;
    for (std::size_t r = 0; r < rows; ++r) {
        state = state * 1664525u + 1013904223u;
        const float largest = std::ldexp(1.0f + static_cast<float>(state >> 8) / 16777216.0f, static_cast<int>(r) * 9 - 50);
        const float scale = largest / 127.0f;  // the rule's scale of this row
        float *x = l.x.data() + r * in;
        x[0] = largest;
        for (std::size_t i = 1; i < in; ++i) {
            const int k = static_cast<int>(i % 254) - 127, ulps = static_cast<int>(i % 7) - 3;
            float v = (static_cast<float>(k) + 0.5f) * scale;
            for (int u = 0; u < (ulps < 0 ? -ulps : ulps); ++u) v = std::nextafter(v, ulps < 0 ? -INFINITY : INFINITY);
            x[i] = v;
        }
    }
    for (edgeattn_isa isa : paths()) {
        CAPTURE(std::string(edgeattn_isa_name(isa)));
        REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
        const std::vector<float> y = run_dense(l, nullptr);
        std::size_t wrong = 0;
        for (std::size_t r = 0; r < rows; ++r) {
            const quantised_row want = model_quantise(l.x.data() + r * in, in);
            for (std::size_t i = 0; i < in; ++i)
                wrong += y[r * in + i] != static_cast<float>(static_cast<float>(want.q[i]) * static_cast<float>(want.scale));
        }
        CHECK(wrong == 0);
    }
}

TEST_CASE("the int8 arithmetic: near the fp32 arithmetic's answer, and an fp32 zero value keeps today's bits") {
    const int8_layer l = make_layer(24, 96, 20, 3);
    const edgeattn_dense_dims dims = {l.rows, l.in, l.out};
    edgeattn_weight_matrix fp = l.m();
    fp.arithmetic = EDGEATTN_ARITHMETIC_FLOAT;
    std::vector<float> ws(test_calls::dense_workspace_bytes(dims, 1) / 4), y_fp(l.rows * l.out);
    REQUIRE(edgeattn_dense(&dims, l.x.data(), &fp, nullptr, ws.data(), ws.size() * 4, y_fp.data()) == EDGEATTN_OK);
    // The same call with the field never written (a struct of three fields).
    const edgeattn_weight_matrix three = {EDGEATTN_DTYPE_INT8, l.W.data(), l.scales.data(), {}};
    std::vector<float> y_three(y_fp.size());
    REQUIRE(edgeattn_dense(&dims, l.x.data(), &three, nullptr, ws.data(), ws.size() * 4, y_three.data()) ==
            EDGEATTN_OK);
    CHECK(std::memcmp(y_fp.data(), y_three.data(), y_fp.size() * sizeof(float)) == 0);
    // Quantising x to 8 bits moves each output by about 1/127 of its row's
    // largest |x| times |w|: the two arithmetics agree to about 1%.
    const std::vector<float> y_int = run_dense(l, nullptr);
    CHECK(test_paths::rel_l2(y_int.data(), test_paths::widen(y_fp)) < 2e-2);
    CHECK(std::memcmp(y_int.data(), y_fp.data(), y_fp.size() * sizeof(float)) != 0);
}

TEST_CASE("the int8 arithmetic: the same bits on any thread count and workspace size") {
    path_guard guard;
    const int8_layer l = make_layer(100, 200, 70, 5);
    const std::vector<float> b = random_floats(l.out, 6);
    for (edgeattn_isa isa : paths()) {
        CAPTURE(edgeattn_isa_name(isa));
        REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
        test_paths::set_threads(1);
        const std::vector<float> one = run_dense(l, b.data(), 1);
        for (int threads : {2, 3, 8}) {
            test_paths::set_threads(threads);
            for (std::size_t sized_for : {std::size_t{1}, std::size_t{2}, std::size_t{8}}) {
                const std::vector<float> got = run_dense(l, b.data(), sized_for);
                CHECK(std::memcmp(got.data(), one.data(), one.size() * sizeof(float)) == 0);
            }
        }
        test_paths::set_threads(1);
    }
}

TEST_CASE("the int8 arithmetic: a row of zeros gives the bias; a row with NaN or inf gives NaN, and only there") {
    path_guard guard;
    int8_layer l = make_layer(4, 37, 6, 9);
    const std::vector<float> b = random_floats(l.out, 10);
    for (std::size_t i = 0; i < l.in; ++i) {
        l.x[0 * l.in + i] = 0.0f;
        l.x[1 * l.in + i] = i % 2 ? -0.0f : 0.0f;
    }
    l.x[2 * l.in + 5] = NAN;
    l.x[3 * l.in + 36] = -INFINITY;
    int8_layer finite = make_layer(1, 37, 6, 9);  // row 0 of l before the edits
    for (edgeattn_isa isa : paths()) {
        CAPTURE(edgeattn_isa_name(isa));
        REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
        const std::vector<float> y = run_dense(l, b.data());
        for (std::size_t j = 0; j < l.out; ++j) {
            CHECK(y[0 * l.out + j] == b[j]);
            CHECK(y[1 * l.out + j] == b[j]);
            CHECK(std::isnan(y[2 * l.out + j]));
            CHECK(std::isnan(y[3 * l.out + j]));
        }
        const std::vector<float> zero_bias_free = run_dense(l, nullptr);
        for (std::size_t j = 0; j < l.out; ++j) CHECK(zero_bias_free[j] == 0.0f);
        CHECK(std::isfinite(run_dense(finite, b.data())[0]));
    }
}

TEST_CASE("the int8 arithmetic: the largest input size sums exactly on every path") {
    path_guard guard;
    // Every |x| the largest (q = +-127) against weights of -128: |sum| =
    // 127 * 128 * in, just below 2^31 at in = 132104.
    const std::size_t in = 132104;
    int8_layer l{2, in, 2, std::vector<float>(2 * in), {1.0f, 0.5f}, {}, std::vector<int8_t>(2 * in)};
    for (std::size_t i = 0; i < in; ++i) {
        l.x[i] = 3.0f;
        l.x[in + i] = i % 2 ? 3.0f : -3.0f;
        l.W[i] = -128;
        l.W[in + i] = static_cast<int8_t>(i % 2 ? 127 : -128);
    }
    const std::vector<double> want = model_dense(l.rows, l.in, l.out, l.x, l.W, l.scales, nullptr);
    CHECK(want[0] == -2147482624.0 * (3.0f / 127.0f) * 1.0);
    for (edgeattn_isa isa : paths()) {
        CAPTURE(edgeattn_isa_name(isa));
        REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
        const std::vector<float> y = run_dense(l, nullptr);
        for (std::size_t i = 0; i < want.size(); ++i)
            CHECK(std::fabs(y[i] - want[i]) <= 3.0 * std::ldexp(1.0, -24) * std::fabs(want[i]));
    }
}

TEST_CASE("the int8 arithmetic: refusals, each writing nothing") {
    const int8_layer l = make_layer(3, 8, 4, 2);
    const edgeattn_dense_dims dims = {l.rows, l.in, l.out};
    std::vector<float> ws(integer_workspace_bytes(dims, 1) / 4 + 64);
    std::vector<float> y(l.rows * l.out, 42.0f);
    const auto untouched = [&] {
        for (float v : y)
            if (v != 42.0f) return false;
        return true;
    };
    const auto dense = [&](const edgeattn_weight_matrix &m, std::size_t ws_bytes) {
        return edgeattn_dense(&dims, l.x.data(), &m, nullptr, ws.data(), ws_bytes, y.data());
    };
    edgeattn_weight_matrix m = l.m();
    const int seven = 7;
    std::memcpy(&m.arithmetic, &seven, sizeof(int));
    CHECK(dense(m, ws.size() * 4) == EDGEATTN_ERR_BAD_OPTION);
    const int minus_one = -1;
    std::memcpy(&m.arithmetic, &minus_one, sizeof(int));
    CHECK(dense(m, ws.size() * 4) == EDGEATTN_ERR_BAD_OPTION);
    // Not int8 weights: fp32 and fp16.
    const std::vector<float> Wf(l.out * l.in, 0.25f);
    const edgeattn_weight_matrix f32 = {EDGEATTN_DTYPE_F32, Wf.data(), nullptr, EDGEATTN_ARITHMETIC_INT8};
    CHECK(dense(f32, ws.size() * 4) == EDGEATTN_ERR_OPTION_NOT_SUPPORTED);
    const std::vector<uint16_t> Wh(l.out * l.in, 0x3C00);
    const edgeattn_weight_matrix f16 = {EDGEATTN_DTYPE_F16, Wh.data(), nullptr, EDGEATTN_ARITHMETIC_INT8};
    CHECK(dense(f16, ws.size() * 4) == EDGEATTN_ERR_OPTION_NOT_SUPPORTED);
    // A workspace one byte short of the integer request's size.
    CHECK(dense(l.m(), integer_workspace_bytes(dims, 1) - 4) == EDGEATTN_ERR_WORKSPACE_TOO_SMALL);
    CHECK(untouched());
    // Too many inputs for int32 sums.
    const edgeattn_dense_dims wide = {1, 132105, 1};
    std::vector<int8_t> Ww(132105, 1);
    std::vector<float> xw(132105, 1.0f), one_scale(1, 1.0f), big_ws(1 << 16), yw(1, 42.0f);
    const edgeattn_weight_matrix mw = {EDGEATTN_DTYPE_INT8, Ww.data(), one_scale.data(), EDGEATTN_ARITHMETIC_INT8};
    CHECK(edgeattn_dense(&wide, xw.data(), &mw, nullptr, big_ws.data(), big_ws.size() * 4, yw.data()) ==
          EDGEATTN_ERR_SIZE_OVERFLOW);
    CHECK(yw[0] == 42.0f);
    // Weights packed once take the fp32 arithmetic only.
    CHECK(edgeattn_dense_packed_size(&dims, &m) == 0);
    const edgeattn_weight_matrix integer = l.m();
    CHECK(edgeattn_dense_packed_size(&dims, &integer) == 0);
    std::vector<float> packed(4096, 42.0f);
    CHECK(edgeattn_dense_pack(&dims, &integer, nullptr, packed.data(), packed.size() * 4) ==
          EDGEATTN_ERR_OPTION_NOT_SUPPORTED);
    CHECK(packed[0] == 42.0f);
}

namespace {

// Multi-head attention's sizes for the int8 arithmetic: grouped-query heads
// (4 query heads over 2 key/value heads), feature sizes that are not
// multiples of a vector step.
const edgeattn_attention_dims mha_dims{2, 5, 7, 12, 10, 9, 16, 4, 2, 0};

struct int8_matrix {
    std::size_t out, in;
    std::vector<int8_t> W;
    std::vector<float> scales, b;
};

int8_matrix make_matrix(std::size_t out, std::size_t in, unsigned seed) {
    const int8_layer l = make_layer(1, in, out, seed);
    return {out, in, l.W, l.scales, random_floats(out, seed + 7)};
}

// W (out, in) applied to rows of x in the float64 model.
std::vector<double> model_rows(const int8_matrix &m, std::size_t rows, const std::vector<float> &x) {
    return model_dense(rows, m.in, m.out, x, m.W, m.scales, m.b.data());
}

struct mha_case {
    std::vector<float> q, k, v;
    int8_matrix Wq, Wk, Wv, Wo;
    edgeattn_weights weights(bool integer_qkv, bool integer_o, bool heads_only) const {
        const edgeattn_arithmetic a = integer_qkv ? EDGEATTN_ARITHMETIC_INT8 : EDGEATTN_ARITHMETIC_FLOAT;
        const edgeattn_arithmetic o = integer_o ? EDGEATTN_ARITHMETIC_INT8 : EDGEATTN_ARITHMETIC_FLOAT;
        edgeattn_weights w{};
        w.W_q = {EDGEATTN_DTYPE_INT8, Wq.W.data(), Wq.scales.data(), a};
        w.W_k = {EDGEATTN_DTYPE_INT8, Wk.W.data(), Wk.scales.data(), a};
        w.W_v = {EDGEATTN_DTYPE_INT8, Wv.W.data(), Wv.scales.data(), a};
        w.b_q = Wq.b.data();
        w.b_k = Wk.b.data();
        w.b_v = Wv.b.data();
        w.W_o = {EDGEATTN_DTYPE_NONE, nullptr, nullptr, EDGEATTN_ARITHMETIC_FLOAT};  // the output is the heads
        if (!heads_only) {
            w.W_o = {EDGEATTN_DTYPE_INT8, Wo.W.data(), Wo.scales.data(), o};
            w.b_o = Wo.b.data();
        }
        return w;
    }
};

mha_case make_mha_case() {
    const edgeattn_attention_dims &d = mha_dims;
    mha_case c{random_floats(d.batch * d.queries * d.query_size, 41), random_floats(d.batch * d.keys * d.key_size, 42),
               random_floats(d.batch * d.keys * d.value_size, 43), make_matrix(16, 12, 44), make_matrix(8, 10, 45),
               make_matrix(8, 9, 46), make_matrix(16, 16, 47)};
    for (std::size_t i = 0; i < d.query_size; ++i) c.q[i] *= 300.0f;  // a row far larger than the rest
    return c;
}

std::size_t mha_workspace(std::size_t threads, edgeattn_arithmetic a) {
    edgeattn_workspace_request r = test_calls::request(EDGEATTN_OP_MHA, mha_dims);
    r.arithmetic = a;
    return test_calls::size_of(r, threads);
}

std::vector<float> run_mha(const mha_case &c, const edgeattn_weights &w, std::size_t out_features,
                           std::size_t threads = 1) {
    const edgeattn_attention_dims &d = mha_dims;
    std::vector<float> ws(mha_workspace(threads, EDGEATTN_ARITHMETIC_INT8) / 4), y(d.batch * d.queries * out_features);
    REQUIRE(edgeattn_mha(&d, c.q.data(), c.k.data(), c.v.data(), &w, nullptr, ws.data(), ws.size() * 4, y.data(),
                         nullptr) == EDGEATTN_OK);
    return y;
}

}  // namespace

TEST_CASE("multi-head attention in the int8 arithmetic: W_q, W_k, W_v and W_o each against the float64 model") {
    path_guard guard;
    const edgeattn_attention_dims &d = mha_dims;
    const mha_case c = make_mha_case();
    const std::size_t q_rows = d.batch * d.queries, kv_rows = d.batch * d.keys;
    // The heads (W_o left out: the output is the concatenated heads) over
    // the modelled projections, in float64.
    const std::vector<double> Q = model_rows(c.Wq, q_rows, c.q), K = model_rows(c.Wk, kv_rows, c.k),
                              V = model_rows(c.Wv, kv_rows, c.v);
    std::vector<double> heads(q_rows * d.num_hiddens);
    const edgeattn_ref::MhaSizes z{d.batch, d.queries, d.keys, d.num_hiddens, 8, 8, d.num_hiddens, d.num_heads,
                                d.num_kv_heads, 0};
    const edgeattn_ref::MhaWeights none{nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};
    edgeattn_ref::multi_head_attention_general(z, Q.data(), K.data(), V.data(), edgeattn_ref::ValidLens{}, edgeattn_ref::Mask{},
                                            none, heads.data(), nullptr);
    for (edgeattn_isa isa : paths()) {
        CAPTURE(std::string(edgeattn_isa_name(isa)));
        REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
        const std::vector<float> got_heads = run_mha(c, c.weights(true, false, true), d.num_hiddens);
        CHECK(test_paths::rel_l2(got_heads.data(), heads) <= 1e-5);
        // W_o's input is the heads as the call computes them (fp32): the
        // model quantises those, so each element is held to roundings.
        int8_layer o{q_rows, 16, 16, got_heads, c.Wo.scales, c.Wo.b, c.Wo.W};
        const std::vector<double> want = model_dense(q_rows, 16, 16, got_heads, c.Wo.W, c.Wo.scales, c.Wo.b.data());
        check_against_model(run_mha(c, c.weights(true, true, false), d.num_hiddens), want, magnitudes(o, c.Wo.b.data()));
        // W_o alone in the int8 arithmetic: the fp32 projections' heads.
        const std::vector<float> fp32_heads = run_mha(c, c.weights(false, false, true), d.num_hiddens);
        const std::vector<double> want_o =
            model_dense(q_rows, 16, 16, fp32_heads, c.Wo.W, c.Wo.scales, c.Wo.b.data());
        o.x = fp32_heads;
        check_against_model(run_mha(c, c.weights(false, true, false), d.num_hiddens), want_o,
                            magnitudes(o, c.Wo.b.data()));
    }
}

TEST_CASE("multi-head attention in the int8 arithmetic: the same bits on any thread count and workspace size") {
    const mha_case c = make_mha_case();
    const edgeattn_weights w = c.weights(true, true, false);
    test_paths::set_threads(1);
    const std::vector<float> one = run_mha(c, w, mha_dims.num_hiddens, 1);
    for (int threads : {2, 3, 8}) {
        test_paths::set_threads(threads);
        for (std::size_t sized : {std::size_t{1}, std::size_t{2}, std::size_t{8}}) {
            CAPTURE(threads);
            CAPTURE(sized);
            const std::vector<float> got = run_mha(c, w, mha_dims.num_hiddens, sized);
            CHECK(std::memcmp(got.data(), one.data(), one.size() * sizeof(float)) == 0);
        }
    }
    test_paths::set_threads(8);
}

TEST_CASE("multi-head attention in the int8 arithmetic: its workspace, and a short one refused with nothing written") {
    const mha_case c = make_mha_case();
    const edgeattn_weights w = c.weights(true, true, false);
    for (std::size_t threads : {std::size_t{1}, std::size_t{4}})
        CHECK(mha_workspace(threads, EDGEATTN_ARITHMETIC_INT8) >= mha_workspace(threads, EDGEATTN_ARITHMETIC_FLOAT));
    // Exactly the queried bytes between guard bytes, for one and two
    // threads, called with one and eight.
    const std::vector<float> want = run_mha(c, w, mha_dims.num_hiddens);
    for (std::size_t sized : {std::size_t{1}, std::size_t{2}})
        for (int threads : {1, 8}) {
            CAPTURE(sized);
            CAPTURE(threads);
            test_paths::set_threads(threads);
            const std::size_t bytes = mha_workspace(sized, EDGEATTN_ARITHMETIC_INT8), guard = 256;
            std::vector<unsigned char> buffer(bytes + 2 * guard + 64, 0xA5);
            unsigned char *ws = buffer.data() + guard;
            ws += (64 - reinterpret_cast<std::uintptr_t>(ws) % 64) % 64;
            std::vector<float> y(mha_dims.batch * mha_dims.queries * mha_dims.num_hiddens, 42.0f);
            REQUIRE(edgeattn_mha(&mha_dims, c.q.data(), c.k.data(), c.v.data(), &w, nullptr, ws, bytes, y.data(),
                                 nullptr) == EDGEATTN_OK);
            bool intact = true;
            for (unsigned char *p = buffer.data(); p < ws; ++p) intact = intact && *p == 0xA5;
            for (unsigned char *p = ws + bytes; p < buffer.data() + buffer.size(); ++p) intact = intact && *p == 0xA5;
            CHECK(intact);
            CHECK(std::memcmp(y.data(), want.data(), y.size() * sizeof(float)) == 0);
            if (sized == 1) {
                std::fill(y.begin(), y.end(), 42.0f);
                CHECK(edgeattn_mha(&mha_dims, c.q.data(), c.k.data(), c.v.data(), &w, nullptr, ws, bytes - 4,
                                   y.data(), nullptr) == EDGEATTN_ERR_WORKSPACE_TOO_SMALL);
                CHECK(y[0] == 42.0f);
            }
        }
    test_paths::set_threads(8);
}

TEST_CASE("the int8 arithmetic: refused by the KV cache's projections, packed weights and float weights") {
    // Multi-head attention with int8 weights in the int8 arithmetic.
    const std::size_t d = 8;
    edgeattn_attention_dims dims{};
    dims.batch = 1;
    dims.queries = dims.keys = 2;
    dims.query_size = dims.key_size = dims.value_size = d;
    dims.num_hiddens = d;
    dims.num_heads = 2;
    std::vector<int8_t> W(d * d, 3);
    std::vector<float> scales(d, 0.01f), x(2 * d, 0.5f), out(2 * d, 42.0f), Wf(d * d, 0.1f);
    const edgeattn_weight_matrix plain = {EDGEATTN_DTYPE_INT8, W.data(), scales.data(), EDGEATTN_ARITHMETIC_FLOAT};
    edgeattn_weights w{plain, plain, plain, plain, nullptr, nullptr, nullptr, nullptr};
    std::vector<float> ws(test_calls::workspace_bytes(EDGEATTN_OP_MHA, dims, 1) / 4);
    REQUIRE(edgeattn_mha(&dims, x.data(), x.data(), x.data(), &w, nullptr, ws.data(), ws.size() * 4, out.data(),
                         nullptr) == EDGEATTN_OK);
    std::fill(out.begin(), out.end(), 42.0f);
    for (edgeattn_weight_matrix *m : {&w.W_q, &w.W_k, &w.W_v, &w.W_o}) {
        m->arithmetic = EDGEATTN_ARITHMETIC_INT8;
        CHECK(edgeattn_mha_packed_size(&dims, &w) == 0);
        // fp32 weights cannot take it.
        const edgeattn_weight_matrix saved = *m;
        *m = {EDGEATTN_DTYPE_F32, Wf.data(), nullptr, EDGEATTN_ARITHMETIC_INT8};
        CHECK(edgeattn_mha(&dims, x.data(), x.data(), x.data(), &w, nullptr, ws.data(), ws.size() * 4, out.data(),
                           nullptr) == EDGEATTN_ERR_OPTION_NOT_SUPPORTED);
        *m = saved;
        m->arithmetic = EDGEATTN_ARITHMETIC_FLOAT;
    }
    CHECK(out[0] == 42.0f);

    // The KV cache's projections refuse it: the store's W_k.
    edgeattn_kv_cache_config config{};
    config.batch = 1;
    config.num_kv_heads = 2;
    config.head_size = d / 2;
    config.capacity = 4;
    std::vector<float> memory(edgeattn_kv_cache_memory_size(&config) / 4 + 1, 0.0f);
    edgeattn_kv_cache cache{};
    REQUIRE(edgeattn_kv_cache_setup(&cache, &config, memory.data(), memory.size() * 4) == EDGEATTN_OK);
    edgeattn_weights cw = w;
    cw.W_k.arithmetic = EDGEATTN_ARITHMETIC_INT8;
    std::vector<float> cws(test_calls::workspace_bytes(EDGEATTN_OP_KV_CACHE_STORE, dims, 1, 1) / 4 + 64);
    CHECK(edgeattn_kv_cache_store(&cache, &dims, 1, x.data(), x.data(), &cw, nullptr, cws.data(), cws.size() * 4) ==
          EDGEATTN_ERR_OPTION_NOT_SUPPORTED);
    for (float m : memory) CHECK(m == 0.0f);

    edgeattn_workspace_request r{};
    r.op = EDGEATTN_OP_KV_CACHE_STORE;
    r.dims = dims;
    r.arithmetic = EDGEATTN_ARITHMETIC_INT8;
    std::size_t bytes = 99;
    CHECK(edgeattn_workspace_size(&r, 1, 1, &bytes) == EDGEATTN_ERR_OPTION_NOT_SUPPORTED);
    r.op = EDGEATTN_OP_DENSE;
    r.dense = {4, 16, 8};
    const int two = 2;
    std::memcpy(&r.arithmetic, &two, sizeof(int));
    CHECK(edgeattn_workspace_size(&r, 1, 1, &bytes) == EDGEATTN_ERR_BAD_OPTION);
    CHECK(bytes == 99);
    // Sized for more threads, never smaller.
    r.arithmetic = EDGEATTN_ARITHMETIC_INT8;
    std::size_t one = 0, four = 0;
    REQUIRE(edgeattn_workspace_size(&r, 1, 1, &one) == EDGEATTN_OK);
    REQUIRE(edgeattn_workspace_size(&r, 1, 4, &four) == EDGEATTN_OK);
    CHECK(four >= one);
    CHECK(one >= 4 * 16 + 4 * 8 * 4);
}
