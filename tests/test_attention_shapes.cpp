// ONNX Attention's shapes through the C API, against the float64 reference
// (reference.hpp), on every kernel path the CPU runs:
//   - value heads of their own width (dims.value_hiddens != num_hiddens) in
//     edgeattn_mha, _packed and the KV cache (fp32, fp16, int8 storage, a
//     window cache), with grouped-query heads;
//   - projection-free multi-head attention (EDGEATTN_DTYPE_NONE for each of
//     W_q, W_k, W_v, W_o);
//   - binary16 tensors at the boundary (options.tensor_type): inputs that
//     are exactly binary16 values, the reference's float64 answer rounded
//     to binary16 within one binary16 ulp of the library's.
#include <doctest/doctest.h>

#include "call_helpers.hpp"
#include "path_helpers.hpp"
#include "reference.hpp"

#include <edgeattn/edgeattn.h>
#include <edgeattn/kv_cache.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

using edgeattn_ref::MhaSizes;
using test_calls::request;
using test_calls::size_of;
using test_paths::rel_l2;

namespace {

constexpr double tolerance = 5e-5;  // fp32 arithmetic against float64

// Values that are exact binary16 (and fp32) numbers: multiples of 2^-8 in
// [-2, 2), reproducible from `seed`.
std::vector<double> half_exact(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> u(-512, 511);
    std::vector<double> v(n);
    for (double &x : v) x = u(rng) / 256.0;
    return v;
}

std::vector<float> f32(const std::vector<double> &v) { return {v.begin(), v.end()}; }

// Binary16 bits of values that are binary16 numbers (checked exact).
std::vector<std::uint16_t> f16(const std::vector<double> &v) {
    std::vector<std::uint16_t> h(v.size());
    std::vector<float> f = f32(v);
    REQUIRE(edgeattn_float_to_half(f.size(), f.data(), h.data()) == EDGEATTN_OK);
    for (std::size_t i = 0; i < v.size(); ++i) REQUIRE(edgeattn_ref::half_value(h[i]) == v[i]);
    return h;
}

// One binary16 ulp at |x| (2^-24 below the normal range).
double half_ulp(double x) {
    int e = 0;
    std::frexp(std::fabs(x), &e);
    return std::ldexp(1.0, (e - 1 < -14 ? -14 : e - 1) - 10);
}

// Every binary16 result within half a binary16 ulp of the float64 answer
// (rounding to nearest), plus what the fp32 arithmetic before the rounding
// adds: an error of the size of the terms summed, not of the result (a
// result that cancels to near 0 has an ulp far below it), 1e-5 of the
// answers' RMS.
void check_half(const char *what, const std::uint16_t *got, const std::vector<double> &want) {
    double ms = 0;
    for (double x : want) ms += x * x;
    const double arithmetic = 1e-5 * std::sqrt(ms / static_cast<double>(want.size()));
    std::size_t bad = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        const double g = edgeattn_ref::half_value(got[i]);
        const double ulp = std::fmax(half_ulp(want[i]), half_ulp(g));
        if (!(std::fabs(g - want[i]) <= 0.5 * ulp + arithmetic)) ++bad;
    }
    CHECK_MESSAGE(bad == 0, what << ": " << bad << " of " << want.size() << " values off by more than half an ulp");
}

// Multi-head weights of the general form; `none` bits leave matrices out
// (EDGEATTN_DTYPE_NONE and no bias), biases on every matrix given.
struct Weights {
    std::vector<double> m[4], b[4];
    std::vector<float> mf[4], bf[4];
    edgeattn_weights api{};
    edgeattn_ref::MhaWeights ref{};

    Weights(const MhaSizes &z, unsigned none, unsigned seed) {
        const std::size_t Hkv = z.Hkv ? z.Hkv : z.H, hv = z.hv ? z.hv : z.h;
        const std::size_t out[4] = {z.h, Hkv * (z.h / z.H), Hkv * (hv / z.H), z.h};
        const std::size_t in[4] = {z.qs, z.ks, z.vs, hv};
        edgeattn_weight_matrix *am[4] = {&api.W_q, &api.W_k, &api.W_v, &api.W_o};
        const float **ab[4] = {&api.b_q, &api.b_k, &api.b_v, &api.b_o};
        const double **rm[4] = {&ref.W_q, &ref.W_k, &ref.W_v, &ref.W_o};
        const double **rb[4] = {&ref.b_q, &ref.b_k, &ref.b_v, &ref.b_o};
        for (unsigned i = 0; i < 4; ++i) {
            if (none >> i & 1u) {
                am[i]->type = EDGEATTN_DTYPE_NONE;
                continue;
            }
            // Small weights, exact binary16 values: the products stay in range.
            m[i] = half_exact(out[i] * in[i], seed + i);
            for (double &x : m[i]) x /= 8;
            b[i] = half_exact(out[i], seed + 10 + i);
            mf[i] = f32(m[i]);
            bf[i] = f32(b[i]);
            *am[i] = test_calls::f32(mf[i].data());
            *ab[i] = bf[i].data();
            *rm[i] = m[i].data();
            *rb[i] = b[i].data();
        }
    }
};

// The sizes of a projection-free call: a NONE matrix's input is its output.
MhaSizes with_none(MhaSizes z, unsigned none) {
    const std::size_t Hkv = z.Hkv ? z.Hkv : z.H, hv = z.hv ? z.hv : z.h;
    if (none & 1u) z.qs = z.h;
    if (none & 2u) z.ks = Hkv * (z.h / z.H);
    if (none & 4u) z.vs = Hkv * (hv / z.H);
    return z;
}

edgeattn_attention_dims dims_of(const MhaSizes &z) {
    return {z.B, z.Q, z.K, z.qs, z.ks, z.vs, z.h, z.H, z.Hkv, z.hv};
}

const MhaSizes mha_shapes[] = {
    {2, 3, 5, 7, 6, 5, 8, 2, 1, 12},      // multi-query, dv 6 > d 4
    {1, 4, 4, 9, 9, 9, 12, 3, 3, 6},      // dv 2 < d 4
    {2, 5, 37, 16, 24, 20, 40, 4, 2, 100}, // dv 25: wider than h
    {1, 1, 1, 3, 3, 3, 4, 1, 0, 2},
    {1, 3, 300, 8, 8, 8, 8, 2, 1, 12},    // two key blocks: the streaming softmax
    {2, 2, 3, 5, 5, 5, 6, 3, 0, 0},       // hv 0: as wide as h
};

}  // namespace

TEST_CASE("edgeattn_mha: value heads of their own width, projections left out, fp32 and fp16 tensors") {
    test_paths::path_guard guard;
    unsigned seed = 1;
    for (edgeattn_isa isa : test_paths::paths()) {
        REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
        for (const MhaSizes &shape : mha_shapes)
            for (unsigned none : {0u, 1u, 2u, 4u, 8u, 15u}) {
                const MhaSizes z = with_none(shape, none);
                const std::size_t hv = z.hv ? z.hv : z.h, out_width = none & 8u ? hv : z.h;
                Weights W(z, none, ++seed);
                const std::vector<double> q = half_exact(z.B * z.Q * z.qs, ++seed);
                const std::vector<double> k = half_exact(z.B * z.K * z.ks, ++seed);
                const std::vector<double> v = half_exact(z.B * z.K * z.vs, ++seed);
                edgeattn_ref::Mask mask;
                mask.causal = z.Q == z.K;
                std::vector<double> want(z.B * z.Q * out_width), want_w(z.B * z.H * z.Q * z.K);
                edgeattn_ref::multi_head_attention_general(z, q.data(), k.data(), v.data(), {}, mask, W.ref,
                                                           want.data(), want_w.data());
                const edgeattn_attention_dims dims = dims_of(z);
                edgeattn_attention_options options{};
                options.mask.causal = mask.causal;
                INFO("isa " << std::string(edgeattn_isa_name(isa)) << " (B,Q,K,q,k,v,h,H,Hkv,hv)=(" << z.B << "," << z.Q << ","
                            << z.K << "," << z.qs << "," << z.ks << "," << z.vs << "," << z.h << "," << z.H << ","
                            << z.Hkv << "," << z.hv << ") none " << none);
                for (std::size_t threads : {1, 4}) {
                    // fp32 tensors, weights as given and (no NONE) packed.
                    std::vector<float> qf = f32(q), kf = f32(k), vf = f32(v);
                    // Exactly the queried workspace, a canary after it.
                    const std::size_t ws_bytes = size_of(request(EDGEATTN_OP_MHA, dims), threads);
                    std::vector<float> ws(ws_bytes / 4 + 16, -7.0f);
                    std::vector<float> out(want.size() + 1, -7.0f), w(want_w.size() + 1, -7.0f);
                    REQUIRE(edgeattn_mha(&dims, qf.data(), kf.data(), vf.data(), &W.api, &options, ws.data(),
                                         ws_bytes, out.data(), w.data()) == EDGEATTN_OK);
                    CHECK(ws[ws_bytes / 4] == -7.0f);
                    CHECK(rel_l2(out.data(), want) < tolerance);
                    CHECK(rel_l2(w.data(), want_w) < tolerance);
                    CHECK(out.back() == -7.0f);
                    CHECK(w.back() == -7.0f);
                    if (none == 0) {
                        std::vector<float> packed(edgeattn_mha_packed_size(&dims, &W.api) / 4);
                        REQUIRE(!packed.empty());
                        REQUIRE(edgeattn_mha_pack(&dims, &W.api, packed.data(), packed.size() * 4) == EDGEATTN_OK);
                        std::fill(out.begin(), out.end(), -7.0f);
                        REQUIRE(edgeattn_mha_packed(&dims, qf.data(), kf.data(), vf.data(), packed.data(),
                                                    packed.size() * 4, &options, ws.data(), ws_bytes,
                                                    out.data(), nullptr) == EDGEATTN_OK);
                        CHECK(rel_l2(out.data(), want) < tolerance);
                        CHECK(out.back() == -7.0f);
                    }
                    // fp16 tensors: the same values, rounded results.
                    edgeattn_attention_options half_options = options;
                    half_options.tensor_type = EDGEATTN_DTYPE_F16;
                    edgeattn_workspace_request r = request(EDGEATTN_OP_MHA, dims);
                    r.tensor_type = EDGEATTN_DTYPE_F16;
                    const std::size_t ws16_bytes = size_of(r, threads);
                    std::vector<float> ws16(ws16_bytes / 4 + 16, -7.0f);
                    const std::vector<std::uint16_t> qh = f16(q), kh = f16(k), vh = f16(v);
                    std::vector<std::uint16_t> out16(want.size() + 1, 0x7E01u), w16(want_w.size() + 1, 0x7E01u);
                    REQUIRE(edgeattn_mha(&dims, reinterpret_cast<const float *>(qh.data()),
                                         reinterpret_cast<const float *>(kh.data()),
                                         reinterpret_cast<const float *>(vh.data()), &W.api, &half_options,
                                         ws16.data(), ws16_bytes, reinterpret_cast<float *>(out16.data()),
                                         reinterpret_cast<float *>(w16.data())) == EDGEATTN_OK);
                    CHECK(ws16[ws16_bytes / 4] == -7.0f);
                    check_half("fp16 output", out16.data(), want);
                    check_half("fp16 weights", w16.data(), want_w);
                    CHECK(out16.back() == 0x7E01u);
                    CHECK(w16.back() == 0x7E01u);
                }
            }
    }
}

TEST_CASE("edgeattn_sdpa with fp16 tensors") {
    test_paths::path_guard guard;
    struct shape {
        std::size_t B, Q, K, d, v;
    };
    const shape shapes[] = {{1, 1, 1, 3, 5}, {2, 4, 7, 8, 3}, {1, 5, 300, 16, 24}};
    unsigned seed = 100;
    for (edgeattn_isa isa : test_paths::paths()) {
        REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
        for (const shape &s : shapes) {
            INFO("isa " << std::string(edgeattn_isa_name(isa)) << " (B,Q,K,d,v)=(" << s.B << "," << s.Q << "," << s.K << ","
                        << s.d << "," << s.v << ")");
            const std::vector<double> q = half_exact(s.B * s.Q * s.d, ++seed), k = half_exact(s.B * s.K * s.d, ++seed);
            const std::vector<double> v = half_exact(s.B * s.K * s.v, ++seed);
            std::vector<double> want(s.B * s.Q * s.v), want_w(s.B * s.Q * s.K);
            edgeattn_ref::dot_product_attention(s.B, s.Q, s.K, s.d, s.v, q.data(), k.data(), v.data(), {},
                                                want.data(), want_w.data());
            const edgeattn_attention_dims dims{s.B, s.Q, s.K, s.d, s.d, s.v, 0, 0, 0, 0};
            edgeattn_attention_options options{};
            options.tensor_type = EDGEATTN_DTYPE_F16;
            edgeattn_workspace_request r = request(EDGEATTN_OP_SDPA, dims);
            r.tensor_type = EDGEATTN_DTYPE_F16;
            const std::size_t ws_bytes = size_of(r, 4);
            std::vector<float> ws(ws_bytes / 4 + 16, -7.0f);
            const std::vector<std::uint16_t> qh = f16(q), kh = f16(k), vh = f16(v);
            std::vector<std::uint16_t> out(want.size() + 1, 0x7E01u), w(want_w.size() + 1, 0x7E01u);
            REQUIRE(edgeattn_sdpa(&dims, reinterpret_cast<const float *>(qh.data()),
                                  reinterpret_cast<const float *>(kh.data()),
                                  reinterpret_cast<const float *>(vh.data()), &options, ws.data(), ws_bytes,
                                  reinterpret_cast<float *>(out.data()), reinterpret_cast<float *>(w.data())) ==
                    EDGEATTN_OK);
            CHECK(ws[ws_bytes / 4] == -7.0f);
            check_half("sdpa fp16 output", out.data(), want);
            check_half("sdpa fp16 weights", w.data(), want_w);
            CHECK(out.back() == 0x7E01u);
            CHECK(w.back() == 0x7E01u);
        }
    }
}

namespace {

const edgeattn_dtype storages[] = {EDGEATTN_DTYPE_F32, EDGEATTN_DTYPE_F16, EDGEATTN_DTYPE_INT8};

// The bar of a cache's stored rows: fp32 rows carry the fp32 arithmetic's
// error only, binary16 and int8 rows their rounding.
double storage_tolerance(edgeattn_dtype storage) {
    return storage == EDGEATTN_DTYPE_F32 ? tolerance : storage == EDGEATTN_DTYPE_F16 ? 2e-3 : 2e-2;
}

struct CacheShape {
    MhaSizes z;  // K: tokens stored in all; Q: the last Q of them attend
    std::size_t first_store;  // tokens of the first store (the rest in a second)
};

}  // namespace

TEST_CASE("KV cache: value heads of their own width, every storage, fp16 tensors") {
    test_paths::path_guard guard;
    const CacheShape shapes[] = {
        {{2, 3, 7, 7, 6, 5, 8, 2, 1, 12}, 4},    // multi-query: grouped rows
        {{1, 2, 5, 9, 9, 9, 12, 3, 3, 6}, 3},    // dv < d
        {{2, 4, 6, 16, 24, 20, 40, 4, 2, 100}, 2},
        {{1, 1, 300, 8, 8, 8, 8, 2, 1, 12}, 299}, // two key blocks
    };
    unsigned seed = 200;
    for (edgeattn_isa isa : test_paths::paths()) {
        REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
        for (const CacheShape &cs : shapes)
            for (edgeattn_dtype storage : storages)
                for (unsigned none : {0u, 15u})
                    for (bool half : {false, true})
                        for (bool want_weights : {false, true}) {
                            if (half && want_weights) continue;  // fp16 tensors take no weights output
                            const MhaSizes z = with_none(cs.z, none);
                            const std::size_t hv = z.hv ? z.hv : z.h, out_width = none & 8u ? hv : z.h;
                            const std::size_t Hkv = z.Hkv ? z.Hkv : z.H, K = z.K, Q = z.Q;
                            INFO("isa " << std::string(edgeattn_isa_name(isa)) << " storage " << storage << " none " << none
                                        << " half " << half << " weights " << want_weights << " (h,H,Hkv,hv)=("
                                        << z.h << "," << z.H << "," << z.Hkv << "," << z.hv << ")");
                            Weights W(z, none, ++seed);
                            // Keys and values of K tokens; the queries of the last Q.
                            const std::vector<double> k = half_exact(z.B * K * z.ks, ++seed);
                            const std::vector<double> v = half_exact(z.B * K * z.vs, ++seed);
                            const std::vector<double> q = half_exact(z.B * Q * z.qs, ++seed);
                            MhaSizes rz = z;
                            edgeattn_ref::Mask mask;
                            mask.causal = true;
                            std::vector<double> want(z.B * Q * out_width), want_w(z.B * z.H * Q * K);
                            edgeattn_ref::multi_head_attention_general(rz, q.data(), k.data(), v.data(), {}, mask,
                                                                       W.ref, want.data(), want_w.data());

                            edgeattn_kv_cache_config config{};
                            config.batch = z.B;
                            config.num_kv_heads = Hkv;
                            config.head_size = z.h / z.H;
                            config.capacity = K + 2;
                            config.storage = storage;
                            config.value_head_size = hv / z.H;
                            std::vector<float> memory(edgeattn_kv_cache_memory_size(&config) / 4);
                            REQUIRE(!memory.empty());
                            edgeattn_kv_cache cache;
                            REQUIRE(edgeattn_kv_cache_setup(&cache, &config, memory.data(), memory.size() * 4) ==
                                    EDGEATTN_OK);
                            CHECK(cache.value_head_size == hv / z.H);
                            edgeattn_attention_dims dims = dims_of(z);
                            dims.keys = 0;
                            edgeattn_attention_options options{};
                            options.tensor_type = half ? EDGEATTN_DTYPE_F16 : EDGEATTN_DTYPE_F32;
                            // Two stores: tokens [0, first) and [first, K), each (B, T, features).
                            for (std::size_t part = 0; part < 2; ++part) {
                                const std::size_t t0 = part ? cs.first_store : 0, t1 = part ? K : cs.first_store;
                                const std::size_t T = t1 - t0;
                                std::vector<double> ks, vs;
                                for (std::size_t b = 0; b < z.B; ++b) {
                                    ks.insert(ks.end(), k.begin() + (b * K + t0) * z.ks, k.begin() + (b * K + t1) * z.ks);
                                    vs.insert(vs.end(), v.begin() + (b * K + t0) * z.vs, v.begin() + (b * K + t1) * z.vs);
                                }
                                edgeattn_workspace_request r = request(EDGEATTN_OP_KV_CACHE_STORE, dims, T);
                                r.tensor_type = options.tensor_type;
                                const std::size_t ws_bytes = size_of(r);
                                std::vector<float> ws(ws_bytes / 4 + 16, -7.0f);
                                std::vector<float> kf = f32(ks), vf = f32(vs);
                                std::vector<std::uint16_t> kh = f16(ks), vh = f16(vs);
                                const float *kp = half ? reinterpret_cast<const float *>(kh.data()) : kf.data();
                                const float *vp = half ? reinterpret_cast<const float *>(vh.data()) : vf.data();
                                REQUIRE(edgeattn_kv_cache_store(&cache, &dims, T, kp, vp, &W.api, &options, ws.data(),
                                                                ws_bytes) == EDGEATTN_OK);
                                CHECK(ws[ws_bytes / 4] == -7.0f);
                            }
                            edgeattn_attention_options attend_options = options;
                            attend_options.mask.causal = 1;
                            edgeattn_workspace_request r = request(EDGEATTN_OP_KV_CACHE_ATTEND, dims);
                            r.tensor_type = options.tensor_type;
                            const std::size_t ws_bytes = size_of(r, 4);
                            std::vector<float> ws(ws_bytes / 4 + 16, -7.0f);
                            const std::size_t cap = config.capacity;
                            std::vector<float> qf = f32(q), out(want.size() + 1, -7.0f);
                            std::vector<float> w(z.B * z.H * Q * cap + 1, -7.0f);
                            std::vector<std::uint16_t> qh = f16(q), out16(want.size() + 1, 0x7E01u);
                            REQUIRE(edgeattn_kv_cache_attend(
                                        &cache, &dims, half ? reinterpret_cast<const float *>(qh.data()) : qf.data(),
                                        &W.api, &attend_options, ws.data(), ws_bytes,
                                        half ? reinterpret_cast<float *>(out16.data()) : out.data(),
                                        want_weights ? w.data() : nullptr) == EDGEATTN_OK);
                            CHECK(ws[ws_bytes / 4] == -7.0f);
                            if (half) {
                                if (storage == EDGEATTN_DTYPE_F32) {
                                    check_half("cache fp16 output", out16.data(), want);
                                } else {
                                    std::vector<float> got(want.size());
                                    for (std::size_t i = 0; i < got.size(); ++i)
                                        got[i] = static_cast<float>(edgeattn_ref::half_value(out16[i]));
                                    CHECK(rel_l2(got.data(), want) < storage_tolerance(storage) + 1e-3);
                                }
                                CHECK(out16.back() == 0x7E01u);
                            } else {
                                CHECK(rel_l2(out.data(), want) < storage_tolerance(storage));
                                CHECK(out.back() == -7.0f);
                            }
                            if (want_weights) {
                                // (B, H, Q, capacity): the first K columns are the reference's.
                                std::vector<float> got;
                                for (std::size_t row = 0; row < z.B * z.H * Q; ++row) {
                                    got.insert(got.end(), w.begin() + row * cap, w.begin() + row * cap + K);
                                    CHECK(w[row * cap + K] == 0.0f);
                                }
                                CHECK(rel_l2(got.data(), want_w) < storage_tolerance(storage));
                                CHECK(w.back() == -7.0f);
                            }
                        }
    }
}

TEST_CASE("window KV cache with value heads of their own width") {
    test_paths::path_guard guard;
    const MhaSizes z{2, 1, 0, 6, 6, 6, 8, 4, 2, 20};  // dv 5, d 2
    const std::size_t sinks = 2, window = 3, stream = 11;
    unsigned seed = 300;
    for (edgeattn_isa isa : test_paths::paths()) {
        REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
        for (edgeattn_dtype storage : storages) {
            INFO("isa " << std::string(edgeattn_isa_name(isa)) << " storage " << storage);
            Weights W(z, 0, ++seed);
            edgeattn_kv_cache_config config{};
            config.batch = z.B;
            config.num_kv_heads = z.Hkv;
            config.head_size = z.h / z.H;
            config.capacity = sinks + window;
            config.storage = storage;
            config.window = window;
            config.sinks = sinks;
            config.value_head_size = z.hv / z.H;
            std::vector<float> memory(edgeattn_kv_cache_memory_size(&config) / 4);
            edgeattn_kv_cache cache;
            REQUIRE(edgeattn_kv_cache_setup(&cache, &config, memory.data(), memory.size() * 4) == EDGEATTN_OK);
            edgeattn_attention_dims dims = dims_of(z);
            const std::vector<double> k = half_exact(z.B * stream * z.ks, ++seed);
            const std::vector<double> v = half_exact(z.B * stream * z.vs, ++seed);
            std::vector<float> ws(size_of(request(EDGEATTN_OP_KV_CACHE_STORE, dims, 1)) / 4);
            for (std::size_t t = 0; t < stream; ++t) {  // one token per step: the ring wraps
                std::vector<float> kt, vt;
                for (std::size_t b = 0; b < z.B; ++b) {
                    kt.insert(kt.end(), k.begin() + (b * stream + t) * z.ks, k.begin() + (b * stream + t + 1) * z.ks);
                    vt.insert(vt.end(), v.begin() + (b * stream + t) * z.vs, v.begin() + (b * stream + t + 1) * z.vs);
                }
                REQUIRE(edgeattn_kv_cache_store(&cache, &dims, 1, kt.data(), vt.data(), &W.api, nullptr, ws.data(),
                                                ws.size() * 4) == EDGEATTN_OK);
            }
            // The held tokens in stream order: the sinks, then the last `window`.
            std::vector<std::size_t> held;
            for (std::size_t t = 0; t < sinks; ++t) held.push_back(t);
            for (std::size_t t = stream - window; t < stream; ++t) held.push_back(t);
            MhaSizes rz = z;
            rz.K = held.size();
            std::vector<double> hk, hv_rows;
            for (std::size_t b = 0; b < z.B; ++b)
                for (std::size_t t : held) {
                    hk.insert(hk.end(), k.begin() + (b * stream + t) * z.ks, k.begin() + (b * stream + t + 1) * z.ks);
                    hv_rows.insert(hv_rows.end(), v.begin() + (b * stream + t) * z.vs,
                                   v.begin() + (b * stream + t + 1) * z.vs);
                }
            const std::vector<double> q = half_exact(z.B * z.qs, ++seed);
            std::vector<double> want(z.B * z.h), want_w(z.B * z.H * rz.K);
            edgeattn_ref::multi_head_attention_general(rz, q.data(), hk.data(), hv_rows.data(), {}, {}, W.ref,
                                                       want.data(), want_w.data());
            std::vector<float> qf = f32(q), out(want.size());
            dims.keys = 0;
            std::vector<float> ws2(size_of(request(EDGEATTN_OP_KV_CACHE_ATTEND, dims), 2) / 4);
            REQUIRE(edgeattn_kv_cache_attend(&cache, &dims, qf.data(), &W.api, nullptr, ws2.data(), ws2.size() * 4,
                                             out.data(), nullptr) == EDGEATTN_OK);
            CHECK(rel_l2(out.data(), want) < storage_tolerance(storage));
        }
    }
}

TEST_CASE("edgeattn::KVCache with value heads of their own width: the C cache's memory and answers") {
    // 1 sequence, 2 key/value heads of 4 key and 6 value features, 8 positions.
    using Cache = edgeattn::KVCache<1, 2, 4, 8, 0, 0, 6>;
    edgeattn_kv_cache_config config{1, 2, 4, 8, EDGEATTN_DTYPE_F32, 0, 0, 6};
    CHECK(Cache::memory_bytes == edgeattn_kv_cache_memory_size(&config));
    CHECK(Cache::memory_bytes > edgeattn::KVCache<1, 2, 4, 8>::memory_bytes);
    const auto cache = std::make_unique<Cache>();
    REQUIRE(cache->init_status() == EDGEATTN_OK);
    CHECK(cache->c_cache().value_head_size == 6);
    const MhaSizes z{1, 3, 3, 5, 5, 5, 16, 4, 2, 24};
    Weights W(z, 0, 400);
    const std::vector<double> x = half_exact(z.B * z.Q * z.qs, 401);
    edgeattn_ref::Mask mask;
    mask.causal = true;
    std::vector<double> want(z.B * z.Q * z.h), want_w(z.B * z.H * z.Q * z.K);
    edgeattn_ref::multi_head_attention_general(z, x.data(), x.data(), x.data(), {}, mask, W.ref, want.data(),
                                               want_w.data());
    edgeattn_attention_dims dims = dims_of(z);
    dims.keys = 8;
    std::vector<float> xf = f32(x), out(want.size());
    const edgeattn_workspace_request calls[2] = {request(EDGEATTN_OP_KV_CACHE_STORE, dims, z.Q),
                                                 request(EDGEATTN_OP_KV_CACHE_ATTEND, dims)};
    std::size_t bytes = 0;
    REQUIRE(edgeattn_workspace_size(calls, 2, 1, &bytes) == EDGEATTN_OK);
    std::vector<float> ws(bytes / 4);
    REQUIRE(cache->store(&dims, z.Q, xf.data(), xf.data(), &W.api, ws.data(), bytes) == EDGEATTN_OK);
    edgeattn_attention_options options{};
    options.mask.causal = 1;
    REQUIRE(cache->attend(&dims, xf.data(), &W.api, &options, ws.data(), bytes, out.data()) == EDGEATTN_OK);
    CHECK(rel_l2(out.data(), want) < tolerance);
}
