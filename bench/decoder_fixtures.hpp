// The decoder benchmarks' fixtures, shared by bench_decoder.cpp and
// bench_decoder_features.cpp: random packed weights, a cache filled through
// the API, the dims and counters of a decode step.
#ifndef EDGEATTN_BENCH_DECODER_FIXTURES_HPP
#define EDGEATTN_BENCH_DECODER_FIXTURES_HPP

#include <cmath>
#include <memory>
#include <vector>

#include "common.hpp"
#include "decoder_shapes.hpp"
#include "edgeattn/edgeattn.h"
#include "edgeattn_bench.hpp"

namespace ebench {

// Self-attention weights of a shape, random, no biases: W_q, W_o (d, d) and
// W_k, W_v (h_kv, d), packed once (edgeattn_mha_pack) as a model does when
// it loads.
// With `type` int8 or fp16 the weights are quantised / converted first and
// packed in that type.
struct PackedWeights {
    Floats Wq, Wk, Wv, Wo, scales;
    std::vector<int8_t> q8;
    std::vector<uint16_t> f16;
    std::unique_ptr<unsigned char[], FreeDeleter> packed;
    size_t bytes = 0;
    edgeattn_weights given = {};  // the same weights as the caller holds them (the unpacked calls)
    edgeattn_status status = EDGEATTN_OK;

    PackedWeights(const DecoderShape &s, const edgeattn_attention_dims &dims,
                  edgeattn_dtype type = EDGEATTN_DTYPE_F32) {
        const size_t d = s.d_model, h_kv = s.kv_heads * s.head_dim();
        const float wscale = 1.0f / std::sqrt(static_cast<float>(d));
        Wq = random_floats(d * d, 6, wscale);
        Wk = random_floats(h_kv * d, 7, wscale);
        Wv = random_floats(h_kv * d, 8, wscale);
        Wo = random_floats(d * d, 9, wscale);
        const float *fm[4] = {Wq.get(), Wk.get(), Wv.get(), Wo.get()};
        const size_t rows[4] = {d, h_kv, h_kv, d};
        q8.resize(type == EDGEATTN_DTYPE_INT8 ? 4 * d * d : 0);
        f16.resize(type == EDGEATTN_DTYPE_F16 ? 4 * d * d : 0);
        scales = alloc_floats(4 * d);
        edgeattn_weights w = {};  // no biases
        edgeattn_weight_matrix *tm[4] = {&w.W_q, &w.W_k, &w.W_v, &w.W_o};
        for (size_t i = 0; i < 4 && status == EDGEATTN_OK; ++i) {
            if (type == EDGEATTN_DTYPE_INT8) {
                status = edgeattn_quantize_int8(rows[i], d, fm[i], &q8[i * d * d], scales.get() + i * d);
                *tm[i] = {type, &q8[i * d * d], scales.get() + i * d};
            } else if (type == EDGEATTN_DTYPE_F16) {
                status = edgeattn_float_to_half(rows[i] * d, fm[i], &f16[i * d * d]);
                *tm[i] = {type, &f16[i * d * d], nullptr};
            } else {
                *tm[i] = {type, fm[i], nullptr};
            }
        }
        if (status) return;
        given = w;
        bytes = edgeattn_mha_packed_size(&dims, &w);
        packed = alloc_bytes(bytes);
        status = edgeattn_mha_pack(&dims, &w, packed.get(), bytes);
    }
};

// ------------------------------------------------------------------ decode

// A KV cache of `capacity` positions filled with `tokens` (default L)
// random tokens X through the API (edgeattn_kv_cache_store_packed), as a
// prefill leaves it. With a window (capacity = sinks + window) more tokens
// than rows wrap its ring.
struct FilledCache {
    edgeattn_kv_cache cache{};
    std::unique_ptr<unsigned char[], FreeDeleter> memory;
    edgeattn_status status = EDGEATTN_OK;
    const char *failed = nullptr;

    FilledCache(const DecoderShape &s, size_t capacity, const edgeattn_attention_dims &dims,
                const PackedWeights &w, edgeattn_dtype storage = EDGEATTN_DTYPE_F32, size_t window = 0,
                size_t sinks = 0, size_t tokens = 0,
                edgeattn_arithmetic arithmetic = EDGEATTN_ARITHMETIC_FLOAT) {
        edgeattn_kv_cache_config config{};
        config.arithmetic = arithmetic;
        config.batch = s.batch;
        config.num_kv_heads = s.kv_heads;
        config.head_size = s.head_dim();
        config.capacity = capacity;
        config.storage = storage;
        config.window = window;
        config.sinks = sinks;
        const size_t bytes = edgeattn_kv_cache_memory_size(&config);
        memory = alloc_bytes(bytes);
        if ((status = edgeattn_kv_cache_setup(&cache, &config, memory.get(), bytes))) {
            failed = "edgeattn_kv_cache_setup";
            return;
        }
        if (tokens == 0) tokens = s.len;
        Floats X = random_floats(s.batch * tokens * s.d_model, 5);
        size_t ws_bytes = 0;
        if ((status = workspace_size(EDGEATTN_OP_KV_CACHE_STORE, dims, tokens, ws_bytes))) {
            failed = "edgeattn_workspace_size (filling the cache)";
            return;
        }
        auto ws = alloc_bytes(ws_bytes);
        if ((status = edgeattn_kv_cache_store_packed(&cache, &dims, tokens, X.get(), X.get(),
                                                     w.packed.get(), w.bytes, nullptr, ws.get(),
                                                     ws_bytes)))
            failed = "edgeattn_kv_cache_store_packed (filling the cache)";
    }
};

inline edgeattn_attention_dims decode_dims(const DecoderShape &s, size_t capacity) {
    const size_t d = s.d_model;
    return {s.batch, 1, capacity, d, d, d, d, s.heads, s.kv_heads};
}

inline void set_decode_counters(benchmark::State &state, const DecoderShape &s, size_t weight_bytes) {
    set_bytes(state, s.cache_bytes());  // bytes of the cache read per step
    state.counters["cache_KiB"] = s.cache_bytes() / 1024.0;
    // The projections read their packed weights on every step too.
    state.counters["weights_KiB"] = static_cast<double>(weight_bytes) / 1024.0;
}

// Times one new query per batch element over the filled cache `c`:
// edgeattn_kv_cache_attend_packed, no mask (W_q projection, attention of
// the heads over the cache, W_o projection).
inline void time_attend(benchmark::State &state, const DecoderShape &s, const edgeattn_attention_dims &dims,
                        const PackedWeights &w, FilledCache &c) {
    Floats x = random_floats(s.batch * s.d_model, 12), out = alloc_floats(s.batch * s.d_model);
    size_t ws_bytes = 0;
    if (edgeattn_status st = workspace_size(EDGEATTN_OP_KV_CACHE_ATTEND, dims, 0, ws_bytes))
        return fail(state, "edgeattn_workspace_size", st);
    auto ws = alloc_bytes(ws_bytes);
    auto call = [&] {
        return edgeattn_kv_cache_attend_packed(&c.cache, &dims, x.get(), w.packed.get(), w.bytes, nullptr, ws.get(),
                                               ws_bytes, out.get(), nullptr);
    };
    if (edgeattn_status st = call()) return fail(state, "edgeattn_kv_cache_attend_packed", st);
    for (auto _ : state) {
        call();
        benchmark::DoNotOptimize(out.get());
        benchmark::ClobberMemory();
    }
    // W_q and W_o: 2 d^2 floats.
    set_decode_counters(state, s, 2 * s.d_model * s.d_model * sizeof(float));
}

// The rows of bench_decoder_features.cpp (RoPE, window cache,
// projection-free calls), registered with the others.
void register_feature_benchmarks();
// The rows of bench_decode_speed.cpp (a decode step's attention beside its bounds).
void register_decode_speed_benchmarks();

}  // namespace ebench

#endif
