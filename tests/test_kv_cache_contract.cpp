// What the KV cache calls promise about their arguments and their stored
// rows (include/edgeattn/kv_cache.h, convert.h):
//  - the cache struct, the dims, the options and the weights descriptor are
//    read before anything is written, so they may sit in the workspace or
//    an output; a struct inside the cache memory it describes is refused;
//  - a struct whose fields were changed after setup is refused;
//  - a refused store (one batch element full) writes nothing at all;
//  - an int8 row is stored by the one int8 rule of the library (the exact
//    quotient, ties to even; subnormal rows keep their values), checked
//    byte by byte against an independent computation; a NaN or an infinity
//    in a row stays non-finite;
//  - the attend workspace size agrees with what the call accepts;
//  - a storage or weight type outside the enum, stored as C stores it.
#include <doctest/doctest.h>

#include <edgeattn/edgeattn.h>

#include "call_helpers.hpp"
#include "path_helpers.hpp"
#include "reference.hpp"

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <vector>

using test_calls::f32;
using test_calls::fp32_weights;
using test_calls::request;
using test_calls::workspace_bytes;
using test_paths::path_guard;
using test_paths::paths;
using test_paths::random_floats;
using test_paths::rel_l2;
using test_paths::widen;

namespace {

const edgeattn_dtype storages[] = {EDGEATTN_DTYPE_F32, EDGEATTN_DTYPE_F16, EDGEATTN_DTYPE_INT8};

std::string storage_name(edgeattn_dtype t) {
    return t == EDGEATTN_DTYPE_F32 ? "fp32" : t == EDGEATTN_DTYPE_F16 ? "fp16" : "int8";
}

edgeattn_kv_cache_config cache_config(std::size_t B, std::size_t Hkv, std::size_t hs, std::size_t cap,
                                      edgeattn_dtype storage = EDGEATTN_DTYPE_F32) {
    return {B, Hkv, hs, cap, storage, 0, 0, 0};
}

std::size_t cache_bytes_of(std::size_t B, std::size_t Hkv, std::size_t hs, std::size_t cap,
                           edgeattn_dtype storage = EDGEATTN_DTYPE_F32) {
    const edgeattn_kv_cache_config c = cache_config(B, Hkv, hs, cap, storage);
    return edgeattn_kv_cache_memory_size(&c);
}

edgeattn_status setup(edgeattn_kv_cache *cache, std::size_t B, std::size_t Hkv, std::size_t hs, std::size_t cap,
                      edgeattn_dtype storage, void *memory, std::size_t bytes) {
    const edgeattn_kv_cache_config c = cache_config(B, Hkv, hs, cap, storage);
    return edgeattn_kv_cache_setup(cache, &c, memory, bytes);
}

// The attend's workspace query: its status, `bytes` written on success.
edgeattn_status attend_workspace_status(const edgeattn_attention_dims &dims, std::size_t threads, std::size_t &bytes) {
    const edgeattn_workspace_request r = request(EDGEATTN_OP_KV_CACHE_ATTEND, dims);
    return edgeattn_workspace_size(&r, 1, threads, &bytes);
}

edgeattn_attention_options causal_options() {
    edgeattn_attention_options o{};
    o.mask.causal = 1;
    return o;
}

// Multi-head weights in three forms: fp32 as given, typed (W_q and W_v
// int8, W_k fp16, W_o fp32), and fp32 packed once.
struct model {
    std::size_t d, h, H, Hkv;
    std::vector<float> W[4], b[4];
    std::vector<std::int8_t> q8[2];
    std::vector<float> s8[2];
    std::vector<std::uint16_t> k16;
    std::vector<float> packed;

    model(std::size_t d_, std::size_t h_, std::size_t H_, std::size_t Hkv_, unsigned seed) : d(d_), h(h_), H(H_), Hkv(Hkv_) {
        const std::size_t hkv = Hkv * (h / H), rows[4] = {h, hkv, hkv, h}, cols[4] = {d, d, d, h};
        for (int i = 0; i < 4; ++i) {
            W[i] = random_floats(rows[i] * cols[i], seed + i, 1.0f / std::sqrt(static_cast<float>(cols[i])));
            b[i] = random_floats(rows[i], seed + 10 + i, 0.1f);
        }
        const int int8_matrices[2] = {0, 2};
        for (int m = 0; m < 2; ++m) {
            const int i = int8_matrices[m];
            q8[m].resize(W[i].size());
            s8[m].resize(rows[i]);
            REQUIRE(edgeattn_quantize_int8(rows[i], cols[i], W[i].data(), q8[m].data(), s8[m].data()) == EDGEATTN_OK);
        }
        k16.resize(W[1].size());
        REQUIRE(edgeattn_float_to_half(k16.size(), W[1].data(), k16.data()) == EDGEATTN_OK);
        const edgeattn_attention_dims dm = dims(1, 1, 1);
        const edgeattn_weights w = plain();
        packed.resize(edgeattn_mha_packed_size(&dm, &w) / 4);
        REQUIRE(edgeattn_mha_pack(&dm, &w, packed.data(), packed.size() * 4) == EDGEATTN_OK);
    }
    edgeattn_attention_dims dims(std::size_t B, std::size_t Q, std::size_t K) const { return {B, Q, K, d, d, d, h, H, Hkv, 0}; }
    edgeattn_weights plain() const {
        return fp32_weights(W[0].data(), W[1].data(), W[2].data(), W[3].data(), b[0].data(), b[1].data(),
                            b[2].data(), b[3].data());
    }
    edgeattn_weights typed() const {
        return {{EDGEATTN_DTYPE_INT8, q8[0].data(), s8[0].data(), EDGEATTN_ARITHMETIC_FLOAT},
                {EDGEATTN_DTYPE_F16, k16.data(), nullptr, EDGEATTN_ARITHMETIC_FLOAT},
                {EDGEATTN_DTYPE_INT8, q8[1].data(), s8[1].data(), EDGEATTN_ARITHMETIC_FLOAT},
                f32(W[3].data()),
                b[0].data(), b[1].data(), b[2].data(), b[3].data()};
    }
};

enum class form { plain, typed, packed };
const form forms[] = {form::plain, form::typed, form::packed};
std::string form_name(form f) { return f == form::plain ? "plain" : f == form::typed ? "typed" : "packed"; }

// Everything a cache call takes by pointer besides its arrays, in one
// block that a test can put anywhere: the weights descriptor of the form
// (fp32 or typed; unused by the packed calls), the store's options all
// zero (a store takes none), the attend's a causal mask.
struct call_args {
    edgeattn_kv_cache cache;
    edgeattn_attention_dims dims;
    edgeattn_weights weights;
    edgeattn_attention_options store_options;
    edgeattn_attention_options options;
};

edgeattn_status store(form f, const model &m, call_args &a, std::size_t n, const float *keys, const float *values,
                      void *ws, std::size_t ws_bytes) {
    if (f == form::packed)
        return edgeattn_kv_cache_store_packed(&a.cache, &a.dims, n, keys, values, m.packed.data(), m.packed.size() * 4,
                                              &a.store_options, ws, ws_bytes);
    return edgeattn_kv_cache_store(&a.cache, &a.dims, n, keys, values, &a.weights, &a.store_options, ws, ws_bytes);
}

edgeattn_status attend(form f, const model &m, call_args &a, const float *queries, void *ws, std::size_t ws_bytes,
                       float *out, float *weights) {
    if (f == form::packed)
        return edgeattn_kv_cache_attend_packed(&a.cache, &a.dims, queries, m.packed.data(), m.packed.size() * 4,
                                               &a.options, ws, ws_bytes, out, weights);
    return edgeattn_kv_cache_attend(&a.cache, &a.dims, queries, &a.weights, &a.options, ws, ws_bytes, out, weights);
}

// A copy of `a` constructed at byte `offset` of `buffer` (rounded down to
// the struct's alignment), so the call reads its arguments from there.
call_args *place(const call_args &a, void *buffer, std::size_t offset) {
    const std::uintptr_t at = (reinterpret_cast<std::uintptr_t>(buffer) + offset) / alignof(call_args) * alignof(call_args);
    return ::new (reinterpret_cast<void *>(at)) call_args(a);
}

bool same_bytes(const std::vector<float> &x, const std::vector<float> &y) {
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * 4) == 0;
}

TEST_CASE("cache struct, dims, options and weights may sit in the workspace or an output of every cache call") {
    const std::size_t B = 2, T = 5, Q = 5, d = 8, h = 20, H = 4, Hkv = 2, hs = h / H, cap = 7;
    const model m(d, h, H, Hkv, 101);
    const std::vector<float> x = random_floats(B * T * d, 102), xq = random_floats(B * Q * d, 103);
    const edgeattn_attention_dims store_dims = m.dims(B, T, cap), attend_dims = m.dims(B, Q, cap);
    const std::size_t store_bytes = workspace_bytes(EDGEATTN_OP_KV_CACHE_STORE, store_dims, 1, T);
    const std::size_t attend_bytes = workspace_bytes(EDGEATTN_OP_KV_CACHE_ATTEND, attend_dims, 1);
    REQUIRE(store_bytes > 0);
    REQUIRE(attend_bytes > 0);
    const std::size_t out_floats = B * Q * h, weights_floats = B * H * Q * cap;
    REQUIRE(out_floats * 4 >= sizeof(call_args));
    REQUIRE(store_bytes >= 2 * sizeof(call_args));

    for (edgeattn_dtype storage : storages)
        for (form f : forms) {
            INFO(storage_name(storage) << " cache, " << form_name(f) << " weights");
            const std::size_t cache_bytes = cache_bytes_of(B, Hkv, hs, cap, storage);
            REQUIRE(cache_bytes > 0);
            call_args args;
            std::memset(&args, 0, sizeof args);
            args.weights = f == form::typed ? m.typed() : m.plain();
            args.options.mask.causal = 1;  // the Q queries are the last Q cached tokens

            // Where the arguments normally are: the results to match.
            std::vector<float> memory(cache_bytes / 4), ws(store_bytes / 4), wa(attend_bytes / 4);
            std::vector<float> out(out_floats), wts(weights_floats), out_grouped(out_floats);
            REQUIRE(setup(&args.cache, B, Hkv, hs, cap, storage, memory.data(), cache_bytes) == EDGEATTN_OK);
            args.dims = store_dims;
            REQUIRE(store(f, m, args, T, x.data(), x.data(), ws.data(), store_bytes) == EDGEATTN_OK);
            const std::vector<float> memory_after_store = memory;
            args.dims = attend_dims;
            REQUIRE(attend(f, m, args, xq.data(), wa.data(), attend_bytes, out.data(), wts.data()) == EDGEATTN_OK);
            // without weights, grouped-query heads take the gathered path
            REQUIRE(attend(f, m, args, xq.data(), wa.data(), attend_bytes, out_grouped.data(), nullptr) == EDGEATTN_OK);
            if (storage == EDGEATTN_DTYPE_F32 && f != form::typed) {
                // and those results are attention: the float64 reference over the T tokens
                edgeattn_ref::Mask causal;
                causal.causal = true;
                std::vector<double> Wd[4], bd[4];
                for (int i = 0; i < 4; ++i) Wd[i] = widen(m.W[i]), bd[i] = widen(m.b[i]);
                const edgeattn_ref::MhaWeights wr{Wd[0].data(), Wd[1].data(), Wd[2].data(), Wd[3].data(),
                                                  bd[0].data(), bd[1].data(), bd[2].data(), bd[3].data()};
                std::vector<double> want(out_floats), want_w(B * H * Q * T);
                edgeattn_ref::multi_head_attention_masked(B, Q, T, d, d, d, h, H, Hkv, widen(xq).data(), widen(x).data(),
                                                          widen(x).data(), edgeattn_ref::ValidLens{}, causal, wr,
                                                          want.data(), want_w.data());
                CHECK(rel_l2(out.data(), want) <= 1e-5);
                CHECK(rel_l2(out_grouped.data(), want) <= 1e-5);
            }

            // A store with its arguments at the start (written first) or at
            // the end of the workspace.
            for (int where = 0; where < 2; ++where) {
                INFO("store, arguments at the " << std::string(where ? "end" : "start") << " of the workspace");
                std::vector<float> memory2(cache_bytes / 4), ws2(store_bytes / 4);
                call_args fresh = args;
                REQUIRE(setup(&fresh.cache, B, Hkv, hs, cap, storage, memory2.data(), cache_bytes) == EDGEATTN_OK);
                fresh.dims = store_dims;
                call_args *in_ws = place(fresh, ws2.data(), where ? store_bytes - sizeof(call_args) : 0);
                CHECK(store(f, m, *in_ws, T, x.data(), x.data(), ws2.data(), store_bytes) == EDGEATTN_OK);
                CHECK(same_bytes(memory2, memory_after_store));
            }

            // Attention with its arguments in the workspace (start, end), the
            // output or the attention weights; with and without weights.
            for (int where = 0; where < 4; ++where)
                for (int with_weights = 0; with_weights < 2; ++with_weights) {
                    if (where == 3 && !with_weights) continue;
                    INFO("attend, arguments in " << std::string(where == 0   ? "the workspace's start"
                                                                   : where == 1 ? "the workspace's end"
                                                                   : where == 2 ? "the output"
                                                                                : "the attention weights")
                                                    << std::string(with_weights ? ", weights requested" : ""));
                    std::vector<float> wa2(attend_bytes / 4), out2(out_floats), wts2(weights_floats);
                    call_args fresh = args;
                    fresh.dims = attend_dims;
                    call_args *moved = where == 0   ? place(fresh, wa2.data(), 0)
                                       : where == 1 ? place(fresh, wa2.data(), attend_bytes - sizeof(call_args))
                                       : where == 2 ? place(fresh, out2.data(), 0)
                                                    : place(fresh, wts2.data(), 0);
                    CHECK(attend(f, m, *moved, xq.data(), wa2.data(), attend_bytes, out2.data(),
                                 with_weights ? wts2.data() : nullptr) == EDGEATTN_OK);
                    CHECK(same_bytes(out2, with_weights ? out : out_grouped));
                    if (with_weights) CHECK(same_bytes(wts2, wts));
                    CHECK(same_bytes(memory, memory_after_store));  // attend reads the cache only
                }
        }
}

TEST_CASE("a cache struct inside the cache memory it describes is refused, nothing written") {
    const std::size_t B = 2, T = 2, d = 8, h = 8, H = 2, Hkv = 2, hs = h / H, cap = 16;
    const model m(d, h, H, Hkv, 111);
    const std::vector<float> x = random_floats(B * T * d, 112);
    for (edgeattn_dtype storage : storages) {
        INFO(storage_name(storage));
        const std::size_t cache_bytes = cache_bytes_of(B, Hkv, hs, cap, storage);
        const edgeattn_attention_dims dims = m.dims(B, T, cap);
        std::vector<float> memory(cache_bytes / 4), ws(workspace_bytes(EDGEATTN_OP_KV_CACHE_STORE, dims, 1, T) / 4),
            wa(workspace_bytes(EDGEATTN_OP_KV_CACHE_ATTEND, dims, 1) / 4), out(B * T * h, -3.0f);
        edgeattn_kv_cache cache;
        REQUIRE(setup(&cache, B, Hkv, hs, cap, storage, memory.data(), cache_bytes) == EDGEATTN_OK);
        const edgeattn_weights w = m.plain();
        REQUIRE(edgeattn_kv_cache_store(&cache, &dims, T, x.data(), x.data(), &w, nullptr, ws.data(), ws.size() * 4) ==
                EDGEATTN_OK);
        // A faithful copy of the struct in the cache's key memory, past
        // the positions written so far.
        edgeattn_kv_cache *inside = ::new (static_cast<void *>(memory.data() + 4)) edgeattn_kv_cache(cache);
        const std::vector<float> memory_before = memory, ws_before = ws, wa_before = wa, out_before = out;
        CHECK(edgeattn_kv_cache_store(inside, &dims, T, x.data(), x.data(), &w, nullptr, ws.data(), ws.size() * 4) ==
              EDGEATTN_ERR_OVERLAP);
        CHECK(edgeattn_kv_cache_store_packed(inside, &dims, T, x.data(), x.data(), m.packed.data(), m.packed.size() * 4,
                                             nullptr, ws.data(), ws.size() * 4) == EDGEATTN_ERR_OVERLAP);
        CHECK(edgeattn_kv_cache_attend(inside, &dims, x.data(), &w, nullptr, wa.data(), wa.size() * 4, out.data(),
                                       nullptr) == EDGEATTN_ERR_OVERLAP);
        CHECK(edgeattn_kv_cache_attend_packed(inside, &dims, x.data(), m.packed.data(), m.packed.size() * 4, nullptr,
                                              wa.data(), wa.size() * 4, out.data(), nullptr) == EDGEATTN_ERR_OVERLAP);
        CHECK(edgeattn_kv_cache_truncate(inside, 0, 1) == EDGEATTN_ERR_OVERLAP);
        CHECK(edgeattn_kv_cache_reset(inside) == EDGEATTN_ERR_OVERLAP);
        CHECK(same_bytes(memory, memory_before));
        CHECK(same_bytes(ws, ws_before));
        CHECK(same_bytes(wa, wa_before));
        CHECK(same_bytes(out, out_before));
    }
}

TEST_CASE("a cache struct changed after setup is refused by every call, nothing written") {
    const std::size_t B = 2, T = 2, d = 8, h = 8, H = 2, Hkv = 1, hs = h / H, cap = 6;
    const model m(d, h, H, Hkv, 121);
    const std::vector<float> x = random_floats(B * T * d, 122);
    const edgeattn_weights w = m.plain();
    for (edgeattn_dtype storage : storages) {
        const std::size_t cache_bytes = cache_bytes_of(B, Hkv, hs, cap, storage);
        // Room past the cache: a struct said to be larger would be read there.
        std::vector<float> memory(2 * cache_bytes / 4);
        edgeattn_attention_dims dims = m.dims(B, T, 0);  // keys 0: whatever the struct says the capacity is
        std::vector<float> ws(workspace_bytes(EDGEATTN_OP_KV_CACHE_STORE, dims, 1, T) / 4),
            wa(workspace_bytes(EDGEATTN_OP_KV_CACHE_ATTEND, dims, 1) / 4), out(B * T * h, -3.0f);
        edgeattn_kv_cache good;
        REQUIRE(setup(&good, B, Hkv, hs, cap, storage, memory.data(), cache_bytes) == EDGEATTN_OK);
        REQUIRE(edgeattn_kv_cache_store(&good, &dims, T, x.data(), x.data(), &w, nullptr, ws.data(), ws.size() * 4) ==
                EDGEATTN_OK);

        struct edit {
            const char *what;
            void (*apply)(edgeattn_kv_cache &);
        };
        const edit edits[] = {
            {"capacity doubled", [](edgeattn_kv_cache &c) { c.capacity *= 2; }},
            {"capacity + 1", [](edgeattn_kv_cache &c) { c.capacity += 1; }},
            {"capacity - 1", [](edgeattn_kv_cache &c) { c.capacity -= 1; }},
            {"head size doubled", [](edgeattn_kv_cache &c) { c.head_size *= 2; }},
            {"storage", [](edgeattn_kv_cache &c) { c.storage = c.storage == 1 ? 2 : 1; }},
            {"stored keys moved", [](edgeattn_kv_cache &c) { c.stored_keys = static_cast<char *>(c.stored_keys) + 64; }},
            {"stored values moved",
             [](edgeattn_kv_cache &c) { c.stored_values = static_cast<char *>(c.stored_values) + 64; }},
            {"lengths moved", [](edgeattn_kv_cache &c) { c.lengths += 16; }},
            {"key scales moved", [](edgeattn_kv_cache &c) { c.key_scales = c.key_scales ? c.key_scales + 16 : nullptr; }},
        };
        for (const edit &e : edits) {
            edgeattn_kv_cache bad = good;
            e.apply(bad);
            if (std::memcmp(&bad, &good, sizeof bad) == 0) continue;  // no scales in this storage
            INFO(storage_name(storage) << ": " << std::string(e.what));
            const edgeattn_kv_cache bad_before = bad;
            const std::vector<float> memory_before = memory, ws_before = ws, wa_before = wa, out_before = out;
            CHECK(edgeattn_kv_cache_store(&bad, &dims, 1, x.data(), x.data(), &w, nullptr, ws.data(), ws.size() * 4) ==
                  EDGEATTN_ERR_BAD_CACHE);
            CHECK(edgeattn_kv_cache_store_packed(&bad, &dims, 1, x.data(), x.data(), m.packed.data(),
                                                 m.packed.size() * 4, nullptr, ws.data(),
                                                 ws.size() * 4) == EDGEATTN_ERR_BAD_CACHE);
            CHECK(edgeattn_kv_cache_attend(&bad, &dims, x.data(), &w, nullptr, wa.data(), wa.size() * 4, out.data(),
                                           nullptr) == EDGEATTN_ERR_BAD_CACHE);
            CHECK(edgeattn_kv_cache_attend_packed(&bad, &dims, x.data(), m.packed.data(), m.packed.size() * 4, nullptr,
                                                  wa.data(), wa.size() * 4, out.data(), nullptr) == EDGEATTN_ERR_BAD_CACHE);
            CHECK(edgeattn_kv_cache_truncate(&bad, 0, 1) == EDGEATTN_ERR_BAD_CACHE);
            CHECK(edgeattn_kv_cache_reset(&bad) == EDGEATTN_ERR_BAD_CACHE);
            CHECK(same_bytes(memory, memory_before));
            CHECK(same_bytes(ws, ws_before));
            CHECK(same_bytes(wa, wa_before));
            CHECK(same_bytes(out, out_before));
            CHECK(std::memcmp(&bad, &bad_before, sizeof bad) == 0);
        }
        // An unchanged copy of the struct is the same cache.
        edgeattn_kv_cache copy = good;
        CHECK(edgeattn_kv_cache_attend(&copy, &dims, x.data(), &w, nullptr, wa.data(), wa.size() * 4, out.data(),
                                       nullptr) == EDGEATTN_OK);
    }
}

TEST_CASE("a store that does not fit one batch element writes nothing, whatever the other lengths") {
    const std::size_t B = 3, d = 8, h = 8, H = 2, Hkv = 2, hs = h / H, cap = 6;
    const model m(d, h, H, Hkv, 131);
    const std::vector<float> x = random_floats(B * 4 * d, 132);
    const edgeattn_weights w = m.plain();
    for (edgeattn_dtype storage : storages) {
        INFO(storage_name(storage));
        const std::size_t cache_bytes = cache_bytes_of(B, Hkv, hs, cap, storage);
        const edgeattn_attention_dims dims = m.dims(B, 4, cap);
        std::vector<float> memory(cache_bytes / 4), ws(workspace_bytes(EDGEATTN_OP_KV_CACHE_STORE, dims, 1, 4) / 4);
        edgeattn_kv_cache cache;
        REQUIRE(setup(&cache, B, Hkv, hs, cap, storage, memory.data(), cache_bytes) == EDGEATTN_OK);
        REQUIRE(edgeattn_kv_cache_store(&cache, &dims, 4, x.data(), x.data(), &w, nullptr, ws.data(), ws.size() * 4) ==
                EDGEATTN_OK);
        // Lengths 1, 0, 4: three more tokens fit the first two, not the last.
        REQUIRE(edgeattn_kv_cache_truncate(&cache, 0, 1) == EDGEATTN_OK);
        REQUIRE(edgeattn_kv_cache_truncate(&cache, 1, 0) == EDGEATTN_OK);
        const std::vector<float> before = memory;
        const edgeattn_kv_cache struct_before = cache;
        CHECK(edgeattn_kv_cache_store(&cache, &dims, 3, x.data(), x.data(), &w, nullptr, ws.data(), ws.size() * 4) ==
              EDGEATTN_ERR_CACHE_FULL);
        CHECK(edgeattn_kv_cache_store_packed(&cache, &dims, 3, x.data(), x.data(), m.packed.data(), m.packed.size() * 4,
                                             nullptr, ws.data(), ws.size() * 4) == EDGEATTN_ERR_CACHE_FULL);
        CHECK(same_bytes(memory, before));
        CHECK(std::memcmp(&cache, &struct_before, sizeof cache) == 0);
        CHECK((cache.lengths[0] == 1 && cache.lengths[1] == 0 && cache.lengths[2] == 4));
        // Two more fit everywhere.
        CHECK(edgeattn_kv_cache_store(&cache, &dims, 2, x.data(), x.data(), &w, nullptr, ws.data(), ws.size() * 4) ==
              EDGEATTN_OK);
        CHECK((cache.lengths[0] == 3 && cache.lengths[1] == 2 && cache.lengths[2] == 6));
    }
}

// ------------------------------------------------------------ int8 rows

// The int8 rule, computed apart from the library: scale = max |x| / 127
// in float (1 for zeros, the smallest subnormal when that division gives
// 0); q the integer nearest x / scale by exact distance, ties to the even
// one, clamped to [-127, 127]. The distances are exact in double: x and
// q * scale have at most 24 + 8 significant bits and close exponents.
float expected_scale(const float *x, std::size_t n) {
    float largest = 0.0f;
    for (std::size_t i = 0; i < n; ++i) largest = std::fabs(x[i]) > largest ? std::fabs(x[i]) : largest;
    if (largest == 0.0f) return 1.0f;
    const float s = largest / 127.0f;
    return s > 0.0f ? s : std::nextafter(0.0f, 1.0f);
}

std::int8_t expected_q(float x, float scale) {
    const double s = scale;
    double best = std::floor(static_cast<double>(x) / s) - 1;
    for (double c = best + 1; c <= best + 3; ++c) {
        const double dc = std::fabs(static_cast<double>(x) - c * s), db = std::fabs(static_cast<double>(x) - best * s);
        if (dc < db || (dc == db && std::fmod(c, 2.0) == 0.0)) best = c;
    }
    return static_cast<std::int8_t>(best > 127 ? 127 : best < -127 ? -127 : best);
}

// Rows stored through a cache whose W_k and W_v are the identity, so the
// projected rows are exactly the inputs (plus the biases, when given).
struct identity_cache {
    std::size_t hs, cap;
    std::vector<float> eye, memory, ws;
    edgeattn_kv_cache cache;
    explicit identity_cache(std::size_t hs_, std::size_t cap_, edgeattn_dtype storage)
        : hs(hs_), cap(cap_), eye(hs_ * hs_, 0.0f) {
        for (std::size_t i = 0; i < hs; ++i) eye[i * hs + i] = 1.0f;
        memory.resize(cache_bytes_of(1, 1, hs, cap, storage) / 4);
        REQUIRE(setup(&cache, 1, 1, hs, cap, storage, memory.data(), memory.size() * 4) == EDGEATTN_OK);
    }
    edgeattn_attention_dims dims(std::size_t n) const { return {1, n, cap, hs, hs, hs, hs, 1, 1, 0}; }
    edgeattn_weights weights(const float *b_k = nullptr, const float *b_v = nullptr) const {
        return fp32_weights(eye.data(), eye.data(), eye.data(), eye.data(), nullptr, b_k, b_v);
    }
    edgeattn_status store(const float *keys, const float *values, std::size_t n, const float *b_k = nullptr,
                          const float *b_v = nullptr) {
        const edgeattn_attention_dims d = dims(n);
        const edgeattn_weights w = weights(b_k, b_v);
        ws.resize(workspace_bytes(EDGEATTN_OP_KV_CACHE_STORE, d, 1, n) / 4);
        return edgeattn_kv_cache_store(&cache, &d, n, keys, values, &w, nullptr, ws.data(), ws.size() * 4);
    }
    const std::int8_t *key_row(std::size_t t) const { return static_cast<const std::int8_t *>(cache.stored_keys) + t * hs; }
};

TEST_CASE("the int8 cache stores each row by the exact quotient, ties to even, as the quantiser does") {
    // The plain C++ path: NEON on 32-bit ARM flushes subnormals to zero, so
    // its identity projection would not hand the subnormal rows over as they are.
    path_guard guard;
    REQUIRE(edgeattn_set_isa(EDGEATTN_ISA_SCALAR) == EDGEATTN_OK);
    const std::size_t hs = 4;
    const float tiny = std::nextafter(0.0f, 1.0f);  // 2^-149
    std::vector<float> rows = {
        127.0f, 0.5f, 1.5f, -2.5f,                // scale 1: 127 0 2 -2
        -127.0f, 126.5f, -0.5f, 3.5f,             // -127 126 0 4
        24.1455498f, 0.665428519f, 0.0f, 0.0f,    // the float quotient rounds onto 3.5: stored 3, not 4
        0.0f, 0.0f, 0.0f, 0.0f,                   // scale 1
        21 * tiny, -7 * tiny, 0.0f, 4 * tiny,     // max / 127 underflows: scale 2^-149, stored exactly
        1000 * tiny, -190 * tiny, 3 * tiny, 12 * tiny,  // subnormal scale 8 * 2^-149
        FLT_MAX, -FLT_MAX / 3, 1.0f, -FLT_MAX,
    };
    // Rows of ties: max 127 * 2^e, so the scale is 2^e and (k + 1/2) 2^e
    // lies exactly halfway between two steps.
    for (int e : {-20, -3, 0, 7, 40}) {
        const float p = std::ldexp(1.0f, e);
        const float r[4] = {127 * p, 2.5f * p, -41.5f * p, 126.5f * p};
        rows.insert(rows.end(), r, r + 4);
    }
    const std::vector<float> more = random_floats(16 * hs, 141, 3.0f);
    rows.insert(rows.end(), more.begin(), more.end());
    const std::size_t n = rows.size() / hs;

    identity_cache c(hs, n, EDGEATTN_DTYPE_INT8);
    REQUIRE(c.store(rows.data(), rows.data(), n) == EDGEATTN_OK);
    std::vector<std::int8_t> q(rows.size());
    std::vector<float> scales(n);
    REQUIRE(edgeattn_quantize_int8(n, hs, rows.data(), q.data(), scales.data()) == EDGEATTN_OK);
    for (std::size_t t = 0; t < n; ++t) {
        const float *x = rows.data() + t * hs;
        const float scale = expected_scale(x, hs);
        INFO("row " << t << ": " << x[0] << " " << x[1] << " " << x[2] << " " << x[3]);
        CHECK(c.cache.key_scales[t] == scale);
        CHECK(c.cache.value_scales[t] == scale);
        CHECK(scales[t] == scale);
        for (std::size_t i = 0; i < hs; ++i) {
            const int want = expected_q(x[i], scale);
            CHECK(static_cast<int>(c.key_row(t)[i]) == want);
            CHECK(static_cast<int>(q[t * hs + i]) == want);
        }
    }
    // The examples spelled out.
    const std::int8_t ties[4] = {127, 0, 2, -2}, ties2[4] = {-127, 126, 0, 4}, exact[2] = {127, 3};
    CHECK(std::memcmp(c.key_row(0), ties, 4) == 0);
    CHECK(std::memcmp(c.key_row(1), ties2, 4) == 0);
    CHECK(std::memcmp(c.key_row(2), exact, 2) == 0);
    // A row of subnormals keeps its values (max below 64 * 2^-149: exactly).
    CHECK(c.cache.key_scales[4] == tiny);
    for (std::size_t i = 0; i < hs; ++i) CHECK(static_cast<float>(c.key_row(4)[i]) * tiny == rows[4 * hs + i]);
}

// ---------------------------------------------------- NaN and infinities

bool same_nan_pattern(const std::vector<float> &a, const std::vector<float> &b) {
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::isnan(a[i]) != std::isnan(b[i])) return false;
    return true;
}

std::size_t count_nan(const std::vector<float> &a) {
    std::size_t n = 0;
    for (float v : a) n += std::isnan(v);
    return n;
}

// One cache of `storage` over tokens x (keys) and v (values): outputs and
// weights of causal attention of all T tokens, and of the last two alone
// (few rows read the cache in place, many through packed blocks).
struct cache_run {
    std::vector<float> out_all, w_all, out_last, w_last;
};

cache_run run_cache(edgeattn_dtype storage, const model &m, std::size_t B, std::size_t T,
                    const std::vector<float> &keys, const std::vector<float> &values) {
    const std::size_t hs = m.h / m.H, cap = T + 2;
    const edgeattn_attention_dims dims = m.dims(B, T, cap), last = m.dims(B, 2, cap);
    std::vector<float> memory(cache_bytes_of(B, m.Hkv, hs, cap, storage) / 4);
    std::vector<float> ws(workspace_bytes(EDGEATTN_OP_KV_CACHE_STORE, dims, 1, T) / 4),
        wa(workspace_bytes(EDGEATTN_OP_KV_CACHE_ATTEND, dims, 2) / 4);
    edgeattn_kv_cache cache;
    REQUIRE(setup(&cache, B, m.Hkv, hs, cap, storage, memory.data(), memory.size() * 4) == EDGEATTN_OK);
    const edgeattn_weights w = m.plain();
    REQUIRE(edgeattn_kv_cache_store(&cache, &dims, T, keys.data(), values.data(), &w, nullptr, ws.data(),
                                    ws.size() * 4) == EDGEATTN_OK);
    const edgeattn_attention_options causal = causal_options();
    cache_run r;
    r.out_all.resize(B * T * m.h);
    r.w_all.resize(B * m.H * T * cap);
    r.out_last.resize(B * 2 * m.h);
    r.w_last.resize(B * m.H * 2 * cap);
    REQUIRE(edgeattn_kv_cache_attend(&cache, &dims, keys.data(), &w, &causal, wa.data(), wa.size() * 4,
                                     r.out_all.data(), r.w_all.data()) == EDGEATTN_OK);
    std::vector<float> q_last(B * 2 * m.d);
    for (std::size_t b = 0; b < B; ++b)
        std::memcpy(q_last.data() + b * 2 * m.d, keys.data() + (b * T + T - 2) * m.d, 2 * m.d * 4);
    REQUIRE(edgeattn_kv_cache_attend(&cache, &last, q_last.data(), &w, &causal, wa.data(), wa.size() * 4,
                                     r.out_last.data(), r.w_last.data()) == EDGEATTN_OK);
    return r;
}

// Finite elements of a reduced cache's output close to the fp32 cache's.
double finite_distance(const std::vector<float> &got, const std::vector<float> &want) {
    double diff = 0, ref = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
        if (std::isfinite(want[i])) {
            diff += (got[i] - want[i]) * (got[i] - want[i]);
            ref += static_cast<double>(want[i]) * want[i];
        }
    return std::sqrt(diff / ref);
}

TEST_CASE("a NaN key or value stays NaN in the int8 and fp16 caches exactly where the fp32 cache has it") {
    path_guard guard;
    const std::size_t B = 2, T = 20, d = 8, h = 16, H = 4, Hkv = 2;
    const model m(d, h, H, Hkv, 151);
    const std::vector<float> x = random_floats(B * T * d, 152);
    for (int which = 0; which < 2; ++which) {
        // Token 9 of batch element 0: one NaN feature in its key input
        // (which = 0) or its value input (1); every projected feature of it
        // is then NaN. Rows before it (causal) and batch element 1 stay finite.
        std::vector<float> k = x, v = x;
        (which ? v : k)[(0 * T + 9) * d + 3] = NAN;
        for (edgeattn_isa isa : paths()) {
            REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
            const cache_run want = run_cache(EDGEATTN_DTYPE_F32, m, B, T, k, v);
            REQUIRE(count_nan(want.out_all) > 0);
            REQUIRE(count_nan(want.out_all) < want.out_all.size() / 2);
            for (edgeattn_dtype storage : {EDGEATTN_DTYPE_F16, EDGEATTN_DTYPE_INT8}) {
                INFO(storage_name(storage) << " on " << std::string(edgeattn_isa_name(isa)) << ", NaN in a "
                                            << std::string(which ? "value" : "key"));
                const cache_run got = run_cache(storage, m, B, T, k, v);
                CHECK(same_nan_pattern(got.out_all, want.out_all));
                CHECK(same_nan_pattern(got.w_all, want.w_all));
                CHECK(same_nan_pattern(got.out_last, want.out_last));
                CHECK(same_nan_pattern(got.w_last, want.w_last));
                CHECK(finite_distance(got.out_all, want.out_all) <= 2e-2);
            }
        }
    }
}

TEST_CASE("an infinity in an int8 row makes the row NaN: never a finite stand-in") {
    path_guard guard;
    // Identity W_k, W_v; token 1 is stored alone with a bias that puts
    // +-inf in one column of its key or value row (the other columns stay
    // finite), then the rest. The fp32 and fp16 caches keep the infinity
    // and take the softmax's limits (docs/contract.md); an int8 row
    // cannot hold an infinity beside finite numbers, so it is stored as NaN
    // and reads as the fp32 cache does with a NaN in that place.
    const std::size_t hs = 4, T = 6;
    const std::vector<float> x = random_floats(T * hs, 161), v = random_floats(T * hs, 162);
    for (int which = 0; which < 3; ++which) {
        float odd[hs] = {0, 0, 0, 0}, odd_nan[hs] = {0, 0, 0, 0};
        odd[which == 1 ? 2 : which == 2 ? 1 : 0] = which == 1 ? -INFINITY : INFINITY;
        odd_nan[which == 1 ? 2 : which == 2 ? 1 : 0] = NAN;
        const bool in_value = which == 2;
        for (edgeattn_isa isa : paths()) {
            REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
            INFO("case " << which << " on " << std::string(edgeattn_isa_name(isa)));
            // int8 with the infinity, fp32 with NaN there instead, fp16 and
            // fp32 with the infinity
            std::vector<float> outs[4], wts[4];
            const edgeattn_dtype types[4] = {EDGEATTN_DTYPE_INT8, EDGEATTN_DTYPE_F32, EDGEATTN_DTYPE_F16,
                                             EDGEATTN_DTYPE_F32};
            for (int c = 0; c < 4; ++c) {
                identity_cache cache(hs, T, types[c]);
                const float *bias = c == 1 ? odd_nan : odd;
                REQUIRE(cache.store(x.data(), v.data(), 1) == EDGEATTN_OK);
                REQUIRE(cache.store(x.data() + hs, v.data() + hs, 1, in_value ? nullptr : bias,
                                    in_value ? bias : nullptr) == EDGEATTN_OK);
                REQUIRE(cache.store(x.data() + 2 * hs, v.data() + 2 * hs, T - 2) == EDGEATTN_OK);
                if (c == 0) {
                    CHECK(std::isnan((in_value ? cache.cache.value_scales : cache.cache.key_scales)[1]));
                    for (std::size_t t = 0; t < T; ++t)
                        if (t != 1) CHECK((std::isfinite(cache.cache.key_scales[t]) && std::isfinite(cache.cache.value_scales[t])));
                }
                if (c == 3) {  // the row as fp32 holds it: the infinity beside finite numbers
                    const float *row = (in_value ? cache.cache.values : cache.cache.keys) + hs;
                    std::size_t infinite = 0, finite = 0;
                    for (std::size_t i = 0; i < hs; ++i) infinite += std::isinf(row[i]), finite += std::isfinite(row[i]);
                    REQUIRE((infinite == 1 && finite == hs - 1));
                }
                const edgeattn_attention_dims dims = cache.dims(T);
                const edgeattn_weights w = cache.weights();
                const edgeattn_attention_options causal = causal_options();
                std::vector<float> wa(workspace_bytes(EDGEATTN_OP_KV_CACHE_ATTEND, dims, 1) / 4);
                outs[c].resize(T * hs);
                wts[c].resize(T * T);
                REQUIRE(edgeattn_kv_cache_attend(&cache.cache, &dims, x.data(), &w, &causal, wa.data(), wa.size() * 4,
                                                 outs[c].data(), wts[c].data()) == EDGEATTN_OK);
            }
            CHECK(count_nan(outs[0]) > 0);
            CHECK(same_nan_pattern(outs[0], outs[1]));
            CHECK(same_nan_pattern(wts[0], wts[1]));
            // fp16 keeps the infinity, as fp32 does
            for (std::size_t i = 0; i < outs[2].size(); ++i) CHECK(std::isfinite(outs[2][i]) == std::isfinite(outs[3][i]));
            for (std::size_t i = 0; i < wts[2].size(); ++i) CHECK(std::isfinite(wts[2][i]) == std::isfinite(wts[3][i]));
            if (!in_value) CHECK(count_nan(outs[3]) == 0);  // an infinite score has a limit: fp32 gives numbers
        }
    }
}

// ------------------------------------------------------ workspace sizes

TEST_CASE("the attend workspace size agrees with what the call accepts") {
    const std::size_t B = 2, Q = 2, d = 8, h = 8, H = 2, Hkv = 1, hs = h / H;
    const model m(d, h, H, Hkv, 171);
    edgeattn_attention_dims dims = m.dims(B, Q, 0);
    // keys 0 (the call takes it as "the cache's capacity"): a size that
    // serves every capacity.
    const std::size_t any = workspace_bytes(EDGEATTN_OP_KV_CACHE_ATTEND, dims, 1);
    CHECK(any > 0);
    for (std::size_t cap : {1, 2, 7, 255, 256, 257, 1000, 5000}) {
        edgeattn_attention_dims sized = dims;
        sized.keys = cap;
        const std::size_t exact = workspace_bytes(EDGEATTN_OP_KV_CACHE_ATTEND, sized, 1);
        CHECK(exact > 0);
        CHECK(exact <= any);
        CHECK(workspace_bytes(EDGEATTN_OP_KV_CACHE_ATTEND, sized, 3) <=
              workspace_bytes(EDGEATTN_OP_KV_CACHE_ATTEND, dims, 3));
    }
    {
        const std::size_t cap = 300;
        std::vector<float> memory(cache_bytes_of(B, Hkv, hs, cap) / 4), ws(any / 4), ws_cap;
        edgeattn_kv_cache cache;
        REQUIRE(setup(&cache, B, Hkv, hs, cap, EDGEATTN_DTYPE_F32, memory.data(), memory.size() * 4) == EDGEATTN_OK);
        const std::vector<float> x = random_floats(B * 4 * d, 172);
        const edgeattn_attention_dims ad = m.dims(B, 4, cap);
        const edgeattn_weights w = m.plain();
        std::vector<float> wsa(workspace_bytes(EDGEATTN_OP_KV_CACHE_STORE, ad, 1, 4) / 4);
        REQUIRE(edgeattn_kv_cache_store(&cache, &ad, 4, x.data(), x.data(), &w, nullptr, wsa.data(), wsa.size() * 4) ==
                EDGEATTN_OK);
        std::vector<float> out0(B * Q * h), out1(B * Q * h);
        CHECK(edgeattn_kv_cache_attend(&cache, &dims, x.data(), &w, nullptr, ws.data(), any, out0.data(), nullptr) ==
              EDGEATTN_OK);
        edgeattn_attention_dims sized = dims;
        sized.keys = cap;
        ws_cap.resize(workspace_bytes(EDGEATTN_OP_KV_CACHE_ATTEND, sized, 1) / 4);
        CHECK(edgeattn_kv_cache_attend(&cache, &sized, x.data(), &w, nullptr, ws_cap.data(), ws_cap.size() * 4,
                                       out1.data(), nullptr) == EDGEATTN_OK);
        CHECK(same_bytes(out0, out1));
        // the workspace sized for the capacity, one float short: refused
        CHECK(edgeattn_kv_cache_attend(&cache, &sized, x.data(), &w, nullptr, ws_cap.data(), ws_cap.size() * 4 - 4,
                                       out1.data(), nullptr) == EDGEATTN_ERR_WORKSPACE_TOO_SMALL);
    }
    // No cache holds more than INT32_MAX positions; sizes that overflow
    // are refused (bytes left as they were).
    constexpr std::size_t untouched = 0xC0FFEE;
    std::size_t bytes = untouched;
    edgeattn_attention_dims big = dims;
    big.keys = SIZE_MAX;
    CHECK(attend_workspace_status(big, 1, bytes) == EDGEATTN_ERR_SIZE_OVERFLOW);
    big.keys = static_cast<std::size_t>(INT32_MAX) + 1;
    CHECK(attend_workspace_status(big, 1, bytes) == EDGEATTN_ERR_SIZE_OVERFLOW);
    CHECK(bytes == untouched);
    big.keys = INT32_MAX;
    if (sizeof(std::size_t) == 8) {
        CHECK(attend_workspace_status(big, 1, bytes) == EDGEATTN_OK);
        CHECK(bytes > 0);
        bytes = untouched;
    }
    big.queries = SIZE_MAX / 64;  // (B, H, Q, keys) weights overflow
    CHECK(attend_workspace_status(big, 1, bytes) == EDGEATTN_ERR_SIZE_OVERFLOW);
    big = dims;
    big.queries = SIZE_MAX / 4;
    CHECK(attend_workspace_status(big, 1, bytes) == EDGEATTN_ERR_SIZE_OVERFLOW);
    CHECK(bytes == untouched);
}

// ------------------------------------------------ types as C stores them

template <class T>
void set_int(T &field, int value) {  // as a C caller may store it (in C++ it could not even be formed)
    static_assert(sizeof(T) == sizeof(int), "int-sized enums");
    std::memcpy(&field, &value, sizeof value);
}

TEST_CASE("storage and weight types outside the enum are refused, nothing written") {
    const std::size_t B = 1, d = 8, h = 8, H = 2, Hkv = 2, hs = h / H, cap = 4;
    const model m(d, h, H, Hkv, 181);
    std::vector<float> memory(cache_bytes_of(B, Hkv, hs, cap) / 4, -2.0f);
    edgeattn_kv_cache cache;
    std::memset(&cache, 0x5A, sizeof cache);
    {
        const std::vector<float> memory_before = memory;
        const edgeattn_kv_cache cache_before = cache;
        for (int bad : {-1, 3, 0x7FFFFFFF, INT32_MIN}) {
            INFO("storage " << bad);
            edgeattn_kv_cache_config config = cache_config(B, Hkv, hs, cap);
            set_int(config.storage, bad);
            CHECK(edgeattn_kv_cache_memory_size(&config) == 0);
            CHECK(edgeattn_kv_cache_setup(&cache, &config, memory.data(), memory.size() * 4) ==
                  EDGEATTN_ERR_BAD_WEIGHT_TYPE);
        }
        CHECK(same_bytes(memory, memory_before));
        CHECK(std::memcmp(&cache, &cache_before, sizeof cache) == 0);
        edgeattn_kv_cache_config two = cache_config(B, Hkv, hs, cap);
        set_int(two.storage, 2);
        CHECK(edgeattn_kv_cache_memory_size(&two) == cache_bytes_of(B, Hkv, hs, cap, EDGEATTN_DTYPE_INT8));
    }
    REQUIRE(setup(&cache, B, Hkv, hs, cap, EDGEATTN_DTYPE_F32, memory.data(), memory.size() * 4) == EDGEATTN_OK);
    const edgeattn_attention_dims dims = m.dims(B, 2, cap);
    const std::vector<float> x = random_floats(B * 2 * d, 182);
    std::vector<float> ws(workspace_bytes(EDGEATTN_OP_KV_CACHE_STORE, dims, 1, 2) / 4),
        wa(workspace_bytes(EDGEATTN_OP_KV_CACHE_ATTEND, dims, 1) / 4), out(B * 2 * h, -3.0f);
    // 3 (EDGEATTN_DTYPE_NONE) is a type the cache calls take: test_window_cache.cpp.
    for (int bad : {-1, 4, INT32_MIN})
        for (int matrix = 0; matrix < 4; ++matrix) {
            INFO("type " << bad << " in matrix " << matrix);
            edgeattn_weights w = m.typed();
            edgeattn_weight_matrix *mats[4] = {&w.W_q, &w.W_k, &w.W_v, &w.W_o};
            set_int(mats[matrix]->type, bad);
            const std::vector<float> memory_before = memory, ws_before = ws, wa_before = wa, out_before = out;
            const bool read_by_store = matrix == 1 || matrix == 2;
            const edgeattn_status stored =
                edgeattn_kv_cache_store(&cache, &dims, 2, x.data(), x.data(), &w, nullptr, ws.data(), ws.size() * 4);
            if (read_by_store) {
                CHECK(stored == EDGEATTN_ERR_BAD_WEIGHT_TYPE);
                CHECK(same_bytes(memory, memory_before));
                CHECK(same_bytes(ws, ws_before));
            } else {
                CHECK(stored == EDGEATTN_OK);  // W_q and W_o are not read
                REQUIRE(edgeattn_kv_cache_reset(&cache) == EDGEATTN_OK);
            }
            const edgeattn_status attended = edgeattn_kv_cache_attend(&cache, &dims, x.data(), &w, nullptr, wa.data(),
                                                                      wa.size() * 4, out.data(), nullptr);
            if (!read_by_store) {
                CHECK(attended == EDGEATTN_ERR_BAD_WEIGHT_TYPE);
                CHECK(same_bytes(wa, wa_before));
                CHECK(same_bytes(out, out_before));
            } else {
                CHECK(attended == EDGEATTN_OK);  // W_k and W_v are not read
            }
        }
}

}  // namespace
