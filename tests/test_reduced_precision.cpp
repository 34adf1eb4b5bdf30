// Weights in int8 and fp16 (edgeattn/convert.h, edgeattn_weight_matrix) on every
// kernel path this CPU runs, against the float64 reference computed with
// the dequantised weights (scale * q, or the binary16 value, in double):
// the golden bar, rel. L2 <= 1e-5, must hold as it does for fp32 weights.
// Also the converters against independent computations (all 65,536 halves;
// rounding ties), and every refusal: own status, nothing written.
#include <doctest/doctest.h>

#include <edgeattn/edgeattn.h>
#include <edgeattn/edgeattn.hpp>

#include "call_helpers.hpp"
#include "path_helpers.hpp"
#include "reference.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <vector>

using edgeattn_ref::Mask;
using edgeattn_ref::ValidLens;
using test_calls::dense_request;
using test_calls::f32;
using test_calls::options_of;
using test_calls::request;
using test_calls::size_of;
using test_paths::path_guard;
using test_paths::paths;
using test_paths::random_floats;
using test_paths::rel_l2;
using test_paths::widen;

namespace {

using edgeattn_ref::half_value;

// Bytes of KV cache memory for a config of these sizes and storage.
std::size_t cache_memory_size(std::size_t B, std::size_t Hkv, std::size_t head_size, std::size_t capacity,
                              edgeattn_dtype storage) {
    const edgeattn_kv_cache_config config{B, Hkv, head_size, capacity, storage, 0, 0, 0};
    return edgeattn_kv_cache_memory_size(&config);
}

edgeattn_status cache_setup(edgeattn_kv_cache &cache, std::size_t B, std::size_t Hkv, std::size_t head_size,
                            std::size_t capacity, edgeattn_dtype storage, void *memory, std::size_t bytes) {
    const edgeattn_kv_cache_config config{B, Hkv, head_size, capacity, storage, 0, 0, 0};
    return edgeattn_kv_cache_setup(&cache, &config, memory, bytes);
}

// One weight matrix (out, in) in a stored type, with its exact values in
// double for the reference.
struct stored {
    edgeattn_dtype type = EDGEATTN_DTYPE_F32;
    std::vector<float> f32, scales;
    std::vector<std::int8_t> i8;
    std::vector<std::uint16_t> f16;
    std::vector<double> exact;  // (out, in): what the library must compute with

    stored(edgeattn_dtype t, std::size_t out, std::size_t in, unsigned seed) : type(t) {
        const std::vector<float> w = random_floats(out * in, seed, 1.0f / std::sqrt(static_cast<float>(in)));
        exact.resize(out * in);
        if (t == EDGEATTN_DTYPE_INT8) {
            i8.resize(out * in);
            scales.resize(out);
            REQUIRE(edgeattn_quantize_int8(out, in, w.data(), i8.data(), scales.data()) == EDGEATTN_OK);
            for (std::size_t o = 0; o < out; ++o)
                for (std::size_t i = 0; i < in; ++i)
                    exact[o * in + i] = static_cast<double>(scales[o]) * i8[o * in + i];
        } else if (t == EDGEATTN_DTYPE_F16) {
            f16.resize(out * in);
            REQUIRE(edgeattn_float_to_half(out * in, w.data(), f16.data()) == EDGEATTN_OK);
            for (std::size_t i = 0; i < out * in; ++i) exact[i] = half_value(f16[i]);
        } else {
            f32 = w;
            exact = widen(w);
        }
    }
    edgeattn_weight_matrix matrix() const {
        const void *data = type == EDGEATTN_DTYPE_INT8 ? static_cast<const void *>(i8.data())
                           : type == EDGEATTN_DTYPE_F16 ? static_cast<const void *>(f16.data())
                                                          : static_cast<const void *>(f32.data());
        return {type, data, type == EDGEATTN_DTYPE_INT8 ? scales.data() : nullptr, EDGEATTN_ARITHMETIC_FLOAT};
    }
};

const edgeattn_dtype stored_types[] = {EDGEATTN_DTYPE_INT8, EDGEATTN_DTYPE_F16};

const char *type_name(edgeattn_dtype t) {
    return t == EDGEATTN_DTYPE_INT8 ? "int8" : t == EDGEATTN_DTYPE_F16 ? "fp16" : "fp32";
}

}  // namespace

TEST_CASE("half_to_float decodes all 65,536 binary16 values exactly; float_to_half gives each back") {
    std::vector<std::uint16_t> all(65536);
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::uint16_t>(i);
    std::vector<float> f(all.size());
    REQUIRE(edgeattn_half_to_float(all.size(), all.data(), f.data()) == EDGEATTN_OK);
    std::size_t finite = 0;
    for (std::size_t i = 0; i < all.size(); ++i) {
        const double want = half_value(all[i]);
        if (std::isnan(want)) {
            CHECK(std::isnan(f[i]));
            continue;
        }
        CHECK(static_cast<double>(f[i]) == want);
        CHECK(std::signbit(f[i]) == ((all[i] >> 15) != 0));
        if (!std::isfinite(want)) continue;
        std::uint16_t back = 0;
        REQUIRE(edgeattn_float_to_half(1, &f[i], &back) == EDGEATTN_OK);
        CHECK(back == all[i]);
        ++finite;
    }
    CHECK(finite == 65536 - 2 * 1024);  // 2 x (inf + 1023 NaN) not finite
}

TEST_CASE("float_to_half rounds to nearest, ties to even, against a table of every half") {
    // Every finite half in value order; a float converts to the nearest of
    // them (found by search here), ties to the one with an even mantissa.
    std::map<double, std::uint16_t> by_value;
    for (std::uint32_t h = 0; h < 65536; ++h) {
        const double v = half_value(static_cast<std::uint16_t>(h));
        if (std::isfinite(v) && !(v == 0 && (h >> 15))) by_value[v] = static_cast<std::uint16_t>(h);
    }
    auto nearest = [&](float x) {
        auto hi = by_value.lower_bound(x);
        if (hi == by_value.end()) return std::prev(hi)->second;
        if (hi == by_value.begin() || hi->first == x) return hi->second;
        auto lo = std::prev(hi);
        const double dl = x - lo->first, dh = hi->first - x;
        if (dl != dh) return dl < dh ? lo->second : hi->second;
        return (lo->second & 1) == 0 ? lo->second : hi->second;
    };
    std::vector<float> xs;
    std::mt19937 rng(11);
    for (int i = 0; i < 20000; ++i) {
        const float mag = std::ldexp(std::uniform_real_distribution<float>(1.0f, 2.0f)(rng),
                                     std::uniform_int_distribution<int>(-26, 15)(rng));
        xs.push_back(i % 2 ? -mag : mag);
    }
    // Exact midpoints between neighbours (normal and subnormal), and the top.
    for (auto it = by_value.begin(); std::next(it) != by_value.end(); ++it)
        if (it->first >= 0 && (it->second % 97 == 0 || it->first < 1e-6 || it->first > 60000))
            xs.push_back(static_cast<float>((it->first + std::next(it)->first) / 2));
    xs.push_back(65519.0f);
    xs.push_back(-65519.99f);
    for (float x : xs) {
        std::uint16_t h = 0;
        REQUIRE(edgeattn_float_to_half(1, &x, &h) == EDGEATTN_OK);
        const std::uint16_t want = x < 0 ? static_cast<std::uint16_t>(nearest(-x) | 0x8000) : nearest(x);
        if ((want & 0x7FFF) == 0) continue;  // underflow to zero: sign kept, checked below
        CHECK_MESSAGE(h == want, "x = " << x);
    }
    const float tiny = -1e-9f;
    std::uint16_t h = 1;
    REQUIRE(edgeattn_float_to_half(1, &tiny, &h) == EDGEATTN_OK);
    CHECK(h == 0x8000);
}

TEST_CASE("quantize_int8: scale max|w|/127 per row, round half to even, zero rows scale 1") {
    // Row 0: max 127 -> scale 1, so q = w rounded: ties 0.5 -> 0, 1.5 -> 2,
    // 2.5 -> 2, -2.5 -> -2. Row 1 all zero. Row 2: max 0.254 -> scale 0.002.
    const float W[3 * 5] = {127.0f, 0.5f, 1.5f, 2.5f, -2.5f,  //
                            0.0f,   0.0f, 0.0f, 0.0f, 0.0f,   //
                            -0.254f, 0.127f, 0.001f, 0.0f, 0.254f};
    std::int8_t q[15];
    float scales[3];
    REQUIRE(edgeattn_quantize_int8(3, 5, W, q, scales) == EDGEATTN_OK);
    CHECK(scales[0] == 1.0f);
    CHECK(scales[1] == 1.0f);
    CHECK(scales[2] == 0.254f / 127.0f);
    const std::int8_t want0[5] = {127, 0, 2, 2, -2};
    for (int i = 0; i < 5; ++i) CHECK(q[i] == want0[i]);
    for (int i = 5; i < 10; ++i) CHECK(q[i] == 0);
    CHECK(q[10] == -127);
    CHECK(q[14] == 127);
    CHECK(q[11] == static_cast<std::int8_t>(std::nearbyint(0.127 / static_cast<double>(scales[2]))));
    // Random rows: every q within half a step of w / scale, |q| <= 127.
    const std::vector<float> w = random_floats(37 * 91, 3);
    std::vector<std::int8_t> qr(w.size());
    std::vector<float> sr(37);
    REQUIRE(edgeattn_quantize_int8(37, 91, w.data(), qr.data(), sr.data()) == EDGEATTN_OK);
    for (std::size_t o = 0; o < 37; ++o) {
        double largest = 0;
        for (std::size_t i = 0; i < 91; ++i)  // (GCC 12's AArch64 vectoriser crashes on an fmax reduction)
            if (std::fabs(w[o * 91 + i]) > largest) largest = std::fabs(w[o * 91 + i]);
        CHECK(sr[o] == static_cast<float>(static_cast<float>(largest) / 127.0f));
        for (std::size_t i = 0; i < 91; ++i)
            CHECK(std::fabs(w[o * 91 + i] / static_cast<double>(sr[o]) - qr[o * 91 + i]) <= 0.5 + 1e-9);
    }
}

TEST_CASE("dense layers with int8 and fp16 weights match float64 with the dequantised weights on every path") {
    path_guard guard;
    struct shape {
        std::size_t rows, in, out;
    };
    // few rows (W read in place), many rows (panels packed per call), a
    // partial panel (out 70), K past one depth block (300), tails of every width
    const shape shapes[] = {{3, 37, 70}, {1, 100, 100}, {40, 37, 70}, {64, 300, 130}, {17, 5, 3}};
    for (edgeattn_dtype t : stored_types)
        for (const shape &s : shapes) {
            const stored W(t, s.out, s.in, 5);
            const std::vector<float> x = random_floats(s.rows * s.in, 6), b = random_floats(s.out, 7, 0.1f);
            std::vector<double> want(s.rows * s.out);
            const std::vector<double> xd = widen(x), bd = widen(b);
            edgeattn_ref::linear(s.rows, s.in, s.out, xd.data(), W.exact.data(), bd.data(), want.data());
            const edgeattn_dense_dims dims = {s.rows, s.in, s.out};
            const edgeattn_weight_matrix m = W.matrix();
            std::vector<float> ws(size_of(dense_request(dims), 4) / 4 + 1);
            std::vector<unsigned char> packed(edgeattn_dense_packed_size(&dims, &m) + 4);
            // Aligned for floats (vector<unsigned char> is, from operator new).
            REQUIRE(edgeattn_dense_pack(&dims, &m, b.data(), packed.data(), packed.size()) == EDGEATTN_OK);
            for (edgeattn_isa isa : paths()) {
                REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
                std::vector<float> y(s.rows * s.out, NAN), yp(s.rows * s.out, NAN);
                REQUIRE(edgeattn_dense(&dims, x.data(), &m, b.data(), ws.data(), ws.size() * 4, y.data()) ==
                        EDGEATTN_OK);
                REQUIRE(edgeattn_dense_packed(&dims, x.data(), packed.data(), packed.size(), yp.data()) ==
                        EDGEATTN_OK);
                INFO(type_name(t) << " " << s.rows << "x" << s.in << "x" << s.out << " on " << edgeattn_isa_name(isa));
                CHECK(rel_l2(y.data(), want) <= 1e-5);
                CHECK(rel_l2(yp.data(), want) <= 1e-5);
            }
        }
}

namespace {

// Multi-head weights with each matrix in its own type.
struct typed_mha {
    std::size_t q, h, H, Hkv;
    std::vector<stored> W;
    std::vector<float> b[4];
    std::vector<double> bd[4];
    typed_mha(std::size_t q_, std::size_t h_, std::size_t H_, std::size_t Hkv_, const edgeattn_dtype types[4],
              unsigned seed)
        : q(q_), h(h_), H(H_), Hkv(Hkv_) {
        const std::size_t hkv = Hkv * (h / H), rows[4] = {h, hkv, hkv, h}, cols[4] = {q, q, q, h};
        for (int i = 0; i < 4; ++i) {
            W.emplace_back(types[i], rows[i], cols[i], seed + i);
            b[i] = random_floats(rows[i], seed + 10 + i, 0.1f);
            bd[i] = widen(b[i]);
        }
    }
    edgeattn_weights weights() const {
        return {W[0].matrix(), W[1].matrix(), W[2].matrix(), W[3].matrix(),
                b[0].data(),   b[1].data(),   b[2].data(),   b[3].data()};
    }
    edgeattn_ref::MhaWeights reference() const {
        return {W[0].exact.data(), W[1].exact.data(), W[2].exact.data(), W[3].exact.data(),
                bd[0].data(),      bd[1].data(),      bd[2].data(),      bd[3].data()};
    }
    edgeattn_attention_dims dims(std::size_t B, std::size_t Q, std::size_t K) const {
        return {B, Q, K, q, q, q, h, H, Hkv, 0};
    }
};

}  // namespace

TEST_CASE("multi-head attention, self-attention and the KV cache with typed weights on every path") {
    path_guard guard;
    const edgeattn_dtype all_int8[4] = {EDGEATTN_DTYPE_INT8, EDGEATTN_DTYPE_INT8, EDGEATTN_DTYPE_INT8,
                                             EDGEATTN_DTYPE_INT8};
    const edgeattn_dtype all_f16[4] = {EDGEATTN_DTYPE_F16, EDGEATTN_DTYPE_F16, EDGEATTN_DTYPE_F16,
                                            EDGEATTN_DTYPE_F16};
    const edgeattn_dtype mixed[4] = {EDGEATTN_DTYPE_INT8, EDGEATTN_DTYPE_F16, EDGEATTN_DTYPE_F32,
                                          EDGEATTN_DTYPE_INT8};
    const edgeattn_dtype *sets[] = {all_int8, all_f16, mixed};
    struct shape {
        std::size_t B, n, q, h, H, Hkv;
    };
    // d2l's 2x4x100x5 (few rows: W in place), 40 rows of GQA (panels per call)
    const shape shapes[] = {{2, 4, 100, 100, 5, 5}, {2, 20, 48, 64, 4, 2}};
    for (const edgeattn_dtype *types : sets)
        for (const shape &s : shapes) {
            const typed_mha model(s.q, s.h, s.H, s.Hkv, types, 21);
            const std::vector<float> x = random_floats(s.B * s.n * s.q, 8);
            const std::vector<double> xd = widen(x);
            Mask causal;
            causal.causal = true;
            std::vector<double> want(s.B * s.n * s.h), want_w(s.B * s.H * s.n * s.n);
            edgeattn_ref::multi_head_attention_masked(s.B, s.n, s.n, s.q, s.q, s.q, s.h, s.H, s.Hkv, xd.data(),
                                                      xd.data(), xd.data(), ValidLens{}, causal, model.reference(),
                                                      want.data(), want_w.data());
            const edgeattn_attention_dims dims = model.dims(s.B, s.n, s.n);
            const edgeattn_weights w = model.weights();
            edgeattn_attention_mask cmask{};
            cmask.causal = 1;
            const edgeattn_attention_options causal_options = options_of(nullptr, &cmask);
            std::vector<float> ws(size_of(request(EDGEATTN_OP_MHA, dims), 4) / 4 + 1);
            std::vector<float> packed(edgeattn_mha_packed_size(&dims, &w) / 4);
            REQUIRE(!packed.empty());
            REQUIRE(edgeattn_mha_pack(&dims, &w, packed.data(), packed.size() * 4) == EDGEATTN_OK);
            // The decode: a cache of n positions, tokens fed in chunks 1, n-3, 2 (one then many rows).
            const std::size_t head = s.h / s.H, chunks[3] = {1, s.n - 3, 2};
            std::vector<unsigned char> cache_mem(cache_memory_size(s.B, s.Hkv, head, s.n, EDGEATTN_DTYPE_F32));
            for (edgeattn_isa isa : paths()) {
                REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
                INFO(type_name(types[0]) << "/" << type_name(types[1]) << " " << s.B << "x" << s.n << "x" << s.q
                                         << " on " << edgeattn_isa_name(isa));
                std::vector<float> out(s.B * s.n * s.h, NAN), attn(s.B * s.H * s.n * s.n, NAN);
                REQUIRE(edgeattn_mha(&dims, x.data(), x.data(), x.data(), &w, &causal_options, ws.data(),
                                     ws.size() * 4, out.data(), attn.data()) == EDGEATTN_OK);
                CHECK(rel_l2(out.data(), want) <= 1e-5);
                CHECK(rel_l2(attn.data(), want_w) <= 1e-5);
                std::fill(out.begin(), out.end(), NAN);
                REQUIRE(edgeattn_mha_packed(&dims, x.data(), x.data(), x.data(), packed.data(), packed.size() * 4,
                                            &causal_options, ws.data(), ws.size() * 4, out.data(),
                                            nullptr) == EDGEATTN_OK);
                CHECK(rel_l2(out.data(), want) <= 1e-5);

                for (int form = 0; form < 2; ++form) {  // packed weights, then typed weights read in place
                    INFO((form ? "decode, typed" : "decode, packed"));
                    edgeattn_kv_cache cache;
                    REQUIRE(cache_setup(cache, s.B, s.Hkv, head, s.n, EDGEATTN_DTYPE_F32, cache_mem.data(),
                                        cache_mem.size()) == EDGEATTN_OK);
                    std::vector<float> dec(s.B * s.n * s.h, NAN);
                    std::size_t fed = 0;
                    for (std::size_t T : chunks) {
                        edgeattn_attention_dims step = model.dims(s.B, T, s.n);
                        std::vector<float> xs(s.B * T * s.q), os(s.B * T * s.h);
                        for (std::size_t b = 0; b < s.B; ++b)
                            std::memcpy(&xs[b * T * s.q], &x[(b * s.n + fed) * s.q], T * s.q * 4);
                        std::vector<float> aws(size_of(request(EDGEATTN_OP_KV_CACHE_STORE, step, T), 4) / 4 + 1);
                        std::vector<float> tws(size_of(request(EDGEATTN_OP_KV_CACHE_ATTEND, step), 4) / 4 + 1);
                        if (form == 0) {
                            REQUIRE(edgeattn_kv_cache_store_packed(&cache, &step, T, xs.data(), xs.data(),
                                                                   packed.data(), packed.size() * 4, nullptr,
                                                                   aws.data(), aws.size() * 4) == EDGEATTN_OK);
                            REQUIRE(edgeattn_kv_cache_attend_packed(&cache, &step, xs.data(), packed.data(),
                                                                    packed.size() * 4, &causal_options, tws.data(),
                                                                    tws.size() * 4, os.data(),
                                                                    nullptr) == EDGEATTN_OK);
                        } else {
                            REQUIRE(edgeattn_kv_cache_store(&cache, &step, T, xs.data(), xs.data(), &w, nullptr,
                                                            aws.data(), aws.size() * 4) == EDGEATTN_OK);
                            REQUIRE(edgeattn_kv_cache_attend(&cache, &step, xs.data(), &w, &causal_options,
                                                             tws.data(), tws.size() * 4, os.data(),
                                                             nullptr) == EDGEATTN_OK);
                        }
                        for (std::size_t b = 0; b < s.B; ++b)
                            std::memcpy(&dec[(b * s.n + fed) * s.h], &os[b * T * s.h], T * s.h * 4);
                        fed += T;
                    }
                    CHECK(rel_l2(dec.data(), want) <= 1e-5);
                }
            }
        }
}

TEST_CASE("typed weights: every refusal has its status and writes nothing") {
    const std::size_t rows = 3, in = 8, out = 4;
    const edgeattn_dense_dims dims = {rows, in, out};
    stored W8(EDGEATTN_DTYPE_INT8, out, in, 1);
    stored W16(EDGEATTN_DTYPE_F16, out, in, 2);
    const std::vector<float> x = random_floats(rows * in, 3);
    std::vector<float> ws(size_of(dense_request(dims), 1) / 4 + 1);
    std::vector<float> y(rows * out, 7.0f);
    auto untouched = [&] {
        for (float v : y)
            if (v != 7.0f) return false;
        return true;
    };
    auto call = [&](const edgeattn_weight_matrix &m) {
        return edgeattn_dense(&dims, x.data(), &m, nullptr, ws.data(), ws.size() * 4, y.data());
    };
    edgeattn_weight_matrix m = W8.matrix();
    int bad_type = 7;
    std::memcpy(&m.type, &bad_type, sizeof bad_type);
    CHECK(call(m) == EDGEATTN_ERR_BAD_WEIGHT_TYPE);
    m = W8.matrix();
    m.scales = nullptr;
    CHECK(call(m) == EDGEATTN_ERR_NULL_POINTER);
    m = W8.matrix();
    m.data = nullptr;
    CHECK(call(m) == EDGEATTN_ERR_NULL_POINTER);
    for (float bad : {0.0f, -1.0f, NAN, INFINITY}) {
        std::vector<float> scales = W8.scales;
        scales[2] = bad;
        m = W8.matrix();
        m.scales = scales.data();
        CHECK(call(m) == EDGEATTN_ERR_BAD_SCALE);
    }
    std::vector<unsigned char> raw(64 + 4 * out);
    m = W8.matrix();
    m.scales = reinterpret_cast<const float *>(raw.data() + 2);
    CHECK(call(m) == EDGEATTN_ERR_MISALIGNED);
    std::vector<std::uint16_t> halves(out * in + 1);
    m = W16.matrix();
    m.data = reinterpret_cast<const unsigned char *>(halves.data()) + 1;
    CHECK(call(m) == EDGEATTN_ERR_MISALIGNED);
    // The output over the int8 weights themselves.
    std::vector<float> shared(rows * out + out * in);
    m = W8.matrix();
    m.data = shared.data();
    CHECK(edgeattn_dense(&dims, x.data(), &m, nullptr, ws.data(), ws.size() * 4, shared.data()) ==
          EDGEATTN_ERR_OVERLAP);
    CHECK(untouched());

    // Packed buffers: a corrupted type field, and types that differ from the layout.
    m = W8.matrix();
    std::vector<float> packed(edgeattn_dense_packed_size(&dims, &m) / 4);
    REQUIRE(edgeattn_dense_pack(&dims, &m, nullptr, packed.data(), packed.size() * 4) == EDGEATTN_OK);
    std::vector<float> corrupt = packed;
    reinterpret_cast<unsigned char *>(corrupt.data())[60] = 9;  // weight_types: type 9
    CHECK(edgeattn_dense_packed(&dims, x.data(), corrupt.data(), corrupt.size() * 4, y.data()) ==
          EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH);
    reinterpret_cast<unsigned char *>(corrupt.data())[60] = EDGEATTN_DTYPE_F16;  // says fp16: sizes differ
    CHECK(edgeattn_dense_packed(&dims, x.data(), corrupt.data(), corrupt.size() * 4, y.data()) ==
          EDGEATTN_ERR_PACKED_WEIGHTS_MISMATCH);
    CHECK(untouched());
    edgeattn_weight_matrix type5 = W8.matrix();
    type5.type = static_cast<edgeattn_dtype>(5);
    CHECK(edgeattn_dense_packed_size(&dims, &type5) == 0);

    // Multi-head: a bad scale in W_o refuses the whole call.
    const edgeattn_dtype types[4] = {EDGEATTN_DTYPE_INT8, EDGEATTN_DTYPE_INT8, EDGEATTN_DTYPE_INT8,
                                           EDGEATTN_DTYPE_INT8};
    typed_mha model(8, 8, 2, 2, types, 4);
    const edgeattn_attention_dims md = model.dims(1, 3, 3);
    edgeattn_weights mw = model.weights();
    std::vector<float> scales_o = model.W[3].scales;
    scales_o[0] = 0.0f;
    mw.W_o.scales = scales_o.data();
    std::vector<float> mws(size_of(request(EDGEATTN_OP_MHA, md), 1) / 4);
    std::vector<float> o(3 * 8, 7.0f);
    CHECK(edgeattn_mha(&md, x.data(), x.data(), x.data(), &mw, nullptr, mws.data(), mws.size() * 4, o.data(),
                       nullptr) == EDGEATTN_ERR_BAD_SCALE);
    std::vector<float> mp(edgeattn_mha_packed_size(&md, &mw) / 4, 5.0f);
    CHECK(edgeattn_mha_pack(&md, &mw, mp.data(), mp.size() * 4) == EDGEATTN_ERR_BAD_SCALE);
    for (float v : o) CHECK(v == 7.0f);
    for (float v : mp) CHECK(v == 5.0f);

    // The converters.
    const float nan_row[3] = {1.0f, NAN, 2.0f}, big[2] = {1.0f, 65520.0f};
    std::int8_t q[3] = {9, 9, 9};
    float s = 9.0f;
    CHECK(edgeattn_quantize_int8(1, 3, nan_row, q, &s) == EDGEATTN_ERR_NOT_REPRESENTABLE);
    CHECK((q[0] == 9 && q[1] == 9 && q[2] == 9 && s == 9.0f));
    CHECK(edgeattn_quantize_int8(0, 3, nan_row, q, &s) == EDGEATTN_ERR_ZERO_DIMENSION);
    std::uint16_t h[2] = {1, 1};
    CHECK(edgeattn_float_to_half(2, big, h) == EDGEATTN_ERR_NOT_REPRESENTABLE);
    CHECK((h[0] == 1 && h[1] == 1));
    float in_place[2] = {1.0f, 2.0f};
    CHECK(edgeattn_float_to_half(2, in_place, reinterpret_cast<std::uint16_t *>(in_place)) == EDGEATTN_ERR_OVERLAP);
    CHECK((in_place[0] == 1.0f && in_place[1] == 2.0f));
}

namespace {

// float64 decode over a cache's stored contents: token t (position t) of
// batch element b attends, per head, over cached positions 0..t with the
// keys and values exactly as stored (dequantised), W_q / W_o in float64.
std::vector<double> decode_over_stored(const edgeattn_kv_cache &c, const std::vector<double> &X, std::size_t B,
                                       std::size_t T, std::size_t d, std::size_t h, std::size_t H,
                                       const std::vector<double> &Wq, const std::vector<double> &bq,
                                       const std::vector<double> &Wo, const std::vector<double> &bo) {
    const std::size_t hs = h / H, Hkv = c.num_kv_heads, group = H / Hkv, cap = c.capacity;
    auto stored = [&](bool values, std::size_t b, std::size_t g, std::size_t p, std::size_t i) {
        const std::size_t pos = (b * Hkv + g) * cap + p, at = pos * hs + i;
        const void *data = values ? c.stored_values : c.stored_keys;
        if (c.storage == EDGEATTN_DTYPE_INT8)
            return static_cast<double>((values ? c.value_scales : c.key_scales)[pos]) *
                   static_cast<const std::int8_t *>(data)[at];
        if (c.storage == EDGEATTN_DTYPE_F16) return half_value(static_cast<const std::uint16_t *>(data)[at]);
        return static_cast<double>(static_cast<const float *>(data)[at]);
    };
    std::vector<double> out(B * T * h);
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t) {
            std::vector<double> q(h), concat(h, 0.0);
            for (std::size_t o = 0; o < h; ++o) {
                q[o] = bq[o];
                for (std::size_t i = 0; i < d; ++i) q[o] += Wq[o * d + i] * X[(b * T + t) * d + i];
            }
            for (std::size_t j = 0; j < H; ++j) {
                std::vector<double> s(t + 1);
                double mx = -INFINITY, sum = 0;
                for (std::size_t p = 0; p <= t; ++p) {
                    double dot = 0;
                    for (std::size_t i = 0; i < hs; ++i) dot += q[j * hs + i] * stored(false, b, j / group, p, i);
                    s[p] = dot / std::sqrt(static_cast<double>(hs));
                    mx = std::fmax(mx, s[p]);
                }
                for (double &e : s) sum += (e = std::exp(e - mx));
                for (std::size_t p = 0; p <= t; ++p)
                    for (std::size_t i = 0; i < hs; ++i) concat[j * hs + i] += s[p] / sum * stored(true, b, j / group, p, i);
            }
            for (std::size_t o = 0; o < h; ++o) {
                double y = bo[o];
                for (std::size_t i = 0; i < h; ++i) y += Wo[o * h + i] * concat[i];
                out[(b * T + t) * h + o] = y;
            }
        }
    return out;
}

}  // namespace

TEST_CASE("an int8 / fp16 KV cache stores each row as documented and attention reads exactly it, on every path") {
    path_guard guard;
    const std::size_t B = 2, T = 24, d = 32, h = 64, H = 4, Hkv = 2, hs = h / H, cap = 30;
    const edgeattn_dtype fp32[4] = {EDGEATTN_DTYPE_F32, EDGEATTN_DTYPE_F32, EDGEATTN_DTYPE_F32,
                                          EDGEATTN_DTYPE_F32};
    const typed_mha model(d, h, H, Hkv, fp32, 31);
    const edgeattn_weights w = model.weights();
    const std::vector<float> x = random_floats(B * T * d, 9);
    const std::vector<double> xd = widen(x);
    // float64 projections of the keys and values, (B, T, h_kv)
    const std::size_t hkv = Hkv * hs;
    std::vector<double> Kref(B * T * hkv), Vref(B * T * hkv);
    edgeattn_ref::linear(B * T, d, hkv, xd.data(), model.W[1].exact.data(), model.bd[1].data(), Kref.data());
    edgeattn_ref::linear(B * T, d, hkv, xd.data(), model.W[2].exact.data(), model.bd[2].data(), Vref.data());
    const std::size_t chunks[] = {1, 1, 17, 3, 2};  // one row, then 17 rows (the packed path), ...
    edgeattn_attention_options causal{};
    causal.mask.causal = 1;
    for (edgeattn_dtype storage : stored_types) {
        const std::size_t bytes = cache_memory_size(B, Hkv, hs, cap, storage);
        REQUIRE(bytes > 0);
        CHECK(bytes < cache_memory_size(B, Hkv, hs, cap, EDGEATTN_DTYPE_F32) *
                          (storage == EDGEATTN_DTYPE_INT8 ? 0.35 : 0.55));  // int8: 16 + 4 scale bytes per row of 16
        std::vector<float> memory(bytes / 4 + 1);
        for (edgeattn_isa isa : paths()) {
            REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
            INFO(type_name(storage) << " cache on " << edgeattn_isa_name(isa));
            edgeattn_kv_cache cache;
            REQUIRE(cache_setup(cache, B, Hkv, hs, cap, storage, memory.data(), bytes) == EDGEATTN_OK);
            CHECK((cache.keys == nullptr && cache.values == nullptr));
            std::vector<float> dec(B * T * h, NAN);
            std::size_t fed = 0;
            for (std::size_t n : chunks) {
                const edgeattn_attention_dims step = model.dims(B, n, cap);
                std::vector<float> xs(B * n * d), os(B * n * h);
                for (std::size_t b = 0; b < B; ++b) std::memcpy(&xs[b * n * d], &x[(b * T + fed) * d], n * d * 4);
                const edgeattn_workspace_request store = request(EDGEATTN_OP_KV_CACHE_STORE, step, n),
                                                 attend = request(EDGEATTN_OP_KV_CACHE_ATTEND, step);
                std::vector<float> aws(size_of(store, 4) / 4 + 1), tws(size_of(attend, 4) / 4 + 1);
                REQUIRE(edgeattn_kv_cache_store(&cache, &step, n, xs.data(), xs.data(), &w, nullptr, aws.data(),
                                                aws.size() * 4) == EDGEATTN_OK);
                REQUIRE(edgeattn_kv_cache_attend(&cache, &step, xs.data(), &w, &causal, tws.data(), tws.size() * 4,
                                                 os.data(), nullptr) == EDGEATTN_OK);
                for (std::size_t b = 0; b < B; ++b) std::memcpy(&dec[(b * T + fed) * h], &os[b * n * h], n * h * 4);
                fed += n;
            }
            REQUIRE(fed == T);
            // Each stored row against the float64 projection: the documented rounding.
            std::size_t off_by_more = 0;
            for (std::size_t b = 0; b < B; ++b)
                for (std::size_t g = 0; g < Hkv; ++g)
                    for (std::size_t t = 0; t < T; ++t)
                        for (int v = 0; v < 2; ++v) {
                            const double *ref = (v ? Vref : Kref).data() + (b * T + t) * hkv + g * hs;
                            const std::size_t pos = (b * Hkv + g) * cap + t;
                            double largest = 0;
                            for (std::size_t i = 0; i < hs; ++i) largest = std::fabs(ref[i]) > largest ? std::fabs(ref[i]) : largest;
                            for (std::size_t i = 0; i < hs; ++i) {
                                if (storage == EDGEATTN_DTYPE_INT8) {
                                    const float scale = (v ? cache.value_scales : cache.key_scales)[pos];
                                    const int q = static_cast<const std::int8_t *>(v ? cache.stored_values
                                                                                     : cache.stored_keys)[pos * hs + i];
                                    if (i == 0) CHECK(std::fabs(scale - largest / 127) <= 1e-5 * largest / 127);
                                    off_by_more += std::fabs(ref[i] / scale - q) > 0.5 + 1e-3;
                                } else {
                                    const double got = half_value(static_cast<const std::uint16_t *>(
                                        v ? cache.stored_values : cache.stored_keys)[pos * hs + i]);
                                    off_by_more += std::fabs(got - ref[i]) > std::ldexp(std::fabs(ref[i]), -11) + 1e-7;
                                }
                            }
                        }
            CHECK(off_by_more == 0);
            // The outputs: float64 attention over exactly what the cache holds.
            const std::vector<double> want = decode_over_stored(cache, xd, B, T, d, h, H, model.W[0].exact, model.bd[0],
                                                                model.W[3].exact, model.bd[3]);
            CHECK(rel_l2(dec.data(), want) <= 1e-5);
        }
    }
    // Refusals: an unknown storage type; a cache struct whose storage was changed.
    std::vector<float> memory(cache_memory_size(B, Hkv, hs, cap, EDGEATTN_DTYPE_INT8) / 4 + 1);
    edgeattn_kv_cache cache;
    CHECK(cache_setup(cache, B, Hkv, hs, cap, static_cast<edgeattn_dtype>(3), memory.data(), memory.size() * 4) ==
          EDGEATTN_ERR_BAD_WEIGHT_TYPE);
    CHECK(cache_memory_size(B, Hkv, hs, cap, static_cast<edgeattn_dtype>(3)) == 0);
    REQUIRE(cache_setup(cache, B, Hkv, hs, cap, EDGEATTN_DTYPE_INT8, memory.data(), memory.size() * 4) ==
            EDGEATTN_OK);
    edgeattn_kv_cache broken = cache;
    broken.storage = EDGEATTN_DTYPE_F32;  // fp32 needs keys == stored_keys
    CHECK(edgeattn_kv_cache_reset(&broken) == EDGEATTN_ERR_BAD_CACHE);
    broken = cache;
    broken.key_scales = nullptr;
    CHECK(edgeattn_kv_cache_reset(&broken) == EDGEATTN_ERR_BAD_CACHE);
}

TEST_CASE("additive attention with int8 / fp16 W_q, W_k matches float64 with the dequantised weights on every path") {
    path_guard guard;
    struct shape {
        std::size_t B, Q, K, q, k, v, h;
    };
    // d2l's (2, 1, 10, 20, 2, 4, 8) and one with 40 query rows (W packed per call)
    const shape shapes[] = {{2, 1, 10, 20, 2, 4, 8}, {2, 20, 33, 12, 9, 5, 24}};
    for (edgeattn_dtype t : stored_types)
        for (const shape &s : shapes) {
            const stored Wq(t, s.h, s.q, 41), Wk(t, s.h, s.k, 42);
            const std::vector<float> wv = random_floats(s.h, 43), q = random_floats(s.B * s.Q * s.q, 44),
                                     k = random_floats(s.B * s.K * s.k, 45), v = random_floats(s.B * s.K * s.v, 46);
            ValidLens vl;
            vl.kind = ValidLens::per_batch;
            vl.lens = {static_cast<std::int32_t>(s.K / 2), static_cast<std::int32_t>(s.K)};
            std::vector<double> want(s.B * s.Q * s.v), want_w(s.B * s.Q * s.K);
            const std::vector<double> qd = widen(q), kd = widen(k), vd = widen(v), wvd = widen(wv);
            edgeattn_ref::additive_attention(s.B, s.Q, s.K, s.q, s.k, s.v, s.h, qd.data(), kd.data(), vd.data(), vl,
                                             Wq.exact.data(), Wk.exact.data(), wvd.data(), want.data(), want_w.data());
            const edgeattn_attention_dims dims = {s.B, s.Q, s.K, s.q, s.k, s.v, s.h, 0, 0, 0};
            edgeattn_weights w{};
            w.W_q = Wq.matrix();
            w.W_k = Wk.matrix();
            w.W_v = f32(wv.data());
            edgeattn_attention_options options{};
            options.valid_lens = {EDGEATTN_VALID_LENS_PER_BATCH, vl.lens.data()};
            std::vector<float> ws(size_of(request(EDGEATTN_OP_ADDITIVE, dims), 4) / 4 + 1);
            for (edgeattn_isa isa : paths()) {
                REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
                INFO(type_name(t) << " " << s.B << "x" << s.Q << "x" << s.K << " on " << edgeattn_isa_name(isa));
                std::vector<float> out(want.size(), NAN), attn(want_w.size(), NAN);
                REQUIRE(edgeattn_additive(&dims, q.data(), k.data(), v.data(), &w, &options, ws.data(), ws.size() * 4,
                                          out.data(), attn.data()) == EDGEATTN_OK);
                CHECK(rel_l2(out.data(), want) <= 1e-5);
                CHECK(rel_l2(attn.data(), want_w) <= 1e-5);
            }
            // A bad scale refuses the call, nothing written.
            if (t == EDGEATTN_DTYPE_INT8) {
                std::vector<float> scales = Wk.scales;
                scales.back() = NAN;
                edgeattn_weights bad = w;
                bad.W_k.scales = scales.data();
                std::vector<float> out(want.size(), 7.0f);
                CHECK(edgeattn_additive(&dims, q.data(), k.data(), v.data(), &bad, &options, ws.data(), ws.size() * 4,
                                        out.data(), nullptr) == EDGEATTN_ERR_BAD_SCALE);
                for (float x : out) CHECK(x == 7.0f);
            }
        }
}

TEST_CASE("the fixed-size PositionalSelfAttention module with int8 / fp16 weights matches float64 on every path") {
    path_guard guard;
    constexpr std::size_t B = 2, N = 4, D = 20, H = 5;
    const edgeattn_dtype fp32[4] = {EDGEATTN_DTYPE_F32, EDGEATTN_DTYPE_F32, EDGEATTN_DTYPE_F32,
                                          EDGEATTN_DTYPE_F32};
    for (edgeattn_dtype t : stored_types) {
        const edgeattn_dtype types[4] = {t, t, t, t};
        typed_mha model(D, D, H, H, t == EDGEATTN_DTYPE_F32 ? fp32 : types, 51);
        edgeattn_weights w = model.weights();
        w.b_q = w.b_k = w.b_v = w.b_o = nullptr;  // the module's bias-free d2l block
        edgeattn_ref::MhaWeights r = model.reference();
        r.b_q = r.b_k = r.b_v = r.b_o = nullptr;
        const std::vector<float> x = random_floats(B * N * D, 52);
        std::vector<double> P(N * D), xp(B * N * D), want(B * N * D), want_w(B * H * N * N);
        edgeattn_ref::positional_encoding_table(N, D, P.data());
        for (std::size_t i = 0; i < xp.size(); ++i)
            xp[i] = static_cast<double>(x[i] + static_cast<float>(P[i % (N * D)]));  // X + P in float, as the module
        const std::int32_t lens[B] = {3, 4};
        ValidLens vl;
        vl.kind = ValidLens::per_batch;
        vl.lens = {3, 4};
        edgeattn_ref::multi_head_attention(B, N, N, D, D, D, D, H, xp.data(), xp.data(), xp.data(), vl, r, want.data(),
                                           want_w.data());
        using Module = edgeattn::PositionalSelfAttention<B, N, D, H>;
        // As given, and packed once in the stored types (Module::Packed).
        auto *packed = new Module::Packed;
        REQUIRE(packed->pack(w) == EDGEATTN_OK);
        Module *modules[2] = {new Module(w), new Module(*packed)};
        const edgeattn::ValidLens valid{EDGEATTN_VALID_LENS_PER_BATCH, lens};
        for (Module *module : modules)
            for (edgeattn_isa isa : paths()) {
                REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
                INFO(type_name(t) << " on " << edgeattn_isa_name(isa) << (module == modules[1] ? ", packed" : ""));
                std::vector<float> out(B * N * D, NAN), attn(B * H * N * N, NAN);
                REQUIRE(module->forward(x.data(), &valid, out.data(), attn.data()) == EDGEATTN_OK);
                CHECK(rel_l2(out.data(), want) <= 1e-5);
                CHECK(rel_l2(attn.data(), want_w) <= 1e-5);
            }
        for (Module *module : modules) delete module;
        delete packed;
    }
}
