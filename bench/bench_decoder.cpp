// edgeattn-bench-decoder: the decoder side of edgeattn — KV-cache
// decode steps, causal vs full prefill, grouped-query heads — with impl
// "edgeattn", and the bandwidth bounds of a decode step's cache read: impl
// "memcpy" (copy the cache's bytes to a second buffer) and "memread" (sum
// them, read only). The libtorch peer is bench_decoder_libtorch.cpp; the
// shapes are decoder_shapes.hpp. A program of its own, so edgeattn-bench
// keeps building while the decoder API changes.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common.hpp"
#include "edgeattn_bench.hpp"
#include "decoder_fixtures.hpp"
#include "decoder_shapes.hpp"
#include "edgeattn/edgeattn.h"


namespace ebench {
namespace {

// One new query per batch element over a full cache of L positions
// (capacity L): edgeattn_kv_cache_attend_packed, no mask — W_q
// projection, attention of the 8 heads over the cache, W_o projection.
void decode_attend(benchmark::State &state, DecoderShape s) {
    const edgeattn_attention_dims dims = decode_dims(s, s.len);
    PackedWeights w(s, dims);
    if (w.status) return fail(state, "edgeattn_mha_pack", w.status);
    FilledCache c(s, s.len, dims, w);
    if (c.status) return fail(state, c.failed, c.status);
    time_attend(state, s, dims, w, c);
}

// A whole decode step of one token over a cache of L positions (capacity
// L + 1): edgeattn_kv_cache_store_packed (W_k, W_v projections of the new
// token, written at position L) then edgeattn_kv_cache_attend_packed with
// causal = 1 over the L + 1 positions. Every iteration first truncates the
// cache back to L (edgeattn_kv_cache_truncate: one store), so each step is
// the same step.
// decode_step_int8 / decode_step_fp16: the same step with weights and
// cache both stored in that type. decode_step_borrowed(_int8): the same
// step through the unpacked calls, reading the weights as the caller holds
// them (packing must not make a one-token step slower).
void decode_step(benchmark::State &state, DecoderShape s, edgeattn_dtype type, bool packed) {
    const edgeattn_attention_dims dims = decode_dims(s, s.len + 1);
    PackedWeights w(s, dims, type);
    if (w.status) return fail(state, "edgeattn_mha_pack", w.status);
    FilledCache c(s, s.len + 1, dims, w, type);
    if (c.status) return fail(state, c.failed, c.status);
    Floats x = random_floats(s.batch * s.d_model, 12), out = alloc_floats(s.batch * s.d_model);
    // A workspace of its own for each call, each sized by its own request.
    size_t att_bytes = 0, app_bytes = 0;
    if (edgeattn_status st = workspace_size(EDGEATTN_OP_KV_CACHE_ATTEND, dims, 0, att_bytes))
        return fail(state, "edgeattn_workspace_size (attend)", st);
    if (edgeattn_status st = workspace_size(EDGEATTN_OP_KV_CACHE_STORE, dims, 1, app_bytes))
        return fail(state, "edgeattn_workspace_size (store)", st);
    auto att_ws = alloc_bytes(att_bytes), app_ws = alloc_bytes(app_bytes);
    edgeattn_attention_options causal{};
    causal.mask.causal = 1;
    auto step = [&]() -> edgeattn_status {
        for (size_t b = 0; b < s.batch; ++b)
            if (edgeattn_status st = edgeattn_kv_cache_truncate(&c.cache, b, s.len)) return st;
        if (!packed) {
            if (edgeattn_status st = edgeattn_kv_cache_store(&c.cache, &dims, 1, x.get(), x.get(), &w.given,
                                                             nullptr, app_ws.get(), app_bytes))
                return st;
            return edgeattn_kv_cache_attend(&c.cache, &dims, x.get(), &w.given, &causal, att_ws.get(),
                                            att_bytes, out.get(), nullptr);
        }
        if (edgeattn_status st = edgeattn_kv_cache_store_packed(&c.cache, &dims, 1, x.get(), x.get(),
                                                                w.packed.get(), w.bytes, nullptr,
                                                                app_ws.get(), app_bytes))
            return st;
        return edgeattn_kv_cache_attend_packed(&c.cache, &dims, x.get(), w.packed.get(), w.bytes,
                                               &causal, att_ws.get(), att_bytes, out.get(), nullptr);
    };
    if (edgeattn_status st = step()) return fail(state, "decode step (truncate, store, attend)", st);
    for (auto _ : state) {
        step();
        benchmark::DoNotOptimize(out.get());
        benchmark::ClobberMemory();
    }
    // W_q, W_o (d, d) and W_k, W_v (h_kv, d).
    set_decode_counters(state, s, (2 * s.d_model + 2 * s.kv_heads * s.head_dim()) * s.d_model * sizeof(float));
}

// The attention alone, no projections: the step's read of the cache.
// edgeattn_sdpa straight over the cache memory (capacity L,
// so head g's keys are one (L, d) block): batch*kv_heads attentions whose
// queries are the group of query heads sharing that kv head (rows = H /
// H_kv; 1 without GQA), as a decode step over a GQA cache computes it.
void decode_sdpa(benchmark::State &state, DecoderShape s) {
    const edgeattn_attention_dims cache_dims = decode_dims(s, s.len);
    PackedWeights w(s, cache_dims);
    if (w.status) return fail(state, "edgeattn_mha_pack", w.status);
    FilledCache c(s, s.len, cache_dims, w);
    if (c.status) return fail(state, c.failed, c.status);
    const size_t slices = s.batch * s.kv_heads, rows = s.group(), d = s.head_dim();
    const edgeattn_attention_dims dims = {slices, rows, s.len, d, d, d, 0, 0, 0};
    Floats q = random_floats(slices * rows * d, 13), out = alloc_floats(slices * rows * d);
    size_t ws_bytes = 0;
    if (edgeattn_status st = workspace_size(EDGEATTN_OP_SDPA, dims, 0, ws_bytes))
        return fail(state, "edgeattn_workspace_size", st);
    auto ws = alloc_bytes(ws_bytes);
    auto call = [&] {
        return edgeattn_sdpa(&dims, q.get(), c.cache.keys, c.cache.values, nullptr, ws.get(),
                             ws_bytes, out.get(), nullptr);
    };
    if (edgeattn_status st = call()) return fail(state, "edgeattn_sdpa", st);
    for (auto _ : state) {
        call();
        benchmark::DoNotOptimize(out.get());
        benchmark::ClobberMemory();
    }
    set_decode_counters(state, s, 0);
}

// Bounds: copy the cache's bytes (src and dst distinct), or read them only.
void decode_memcpy(benchmark::State &state, DecoderShape s) {
    const size_t count = static_cast<size_t>(s.cache_bytes() / sizeof(float));
    Floats src = random_floats(count, 14), dst = random_floats(count, 15);
    for (auto _ : state) {
        std::memcpy(dst.get(), src.get(), count * sizeof(float));
        benchmark::DoNotOptimize(dst.get());
        benchmark::ClobberMemory();
    }
    set_bytes(state, s.cache_bytes());
}

// Sum of the floats with 32 independent accumulators (the compiler keeps
// them in vector registers): a read-only pass, what attention over the cache
// does to its memory.
__attribute__((noinline)) float sum_floats(const float *x, size_t n) {
    float acc[32] = {};
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (size_t j = 0; j < 32; ++j) acc[j] += x[i + j];
    for (; i < n; ++i) acc[0] += x[i];
    float total = 0.0f;
    for (float a : acc) total += a;
    return total;
}

void decode_memread(benchmark::State &state, DecoderShape s) {
    const size_t count = static_cast<size_t>(s.cache_bytes() / sizeof(float));
    Floats src = random_floats(count, 14);
    for (auto _ : state) {
        float total = sum_floats(src.get(), count);
        benchmark::DoNotOptimize(total);
        benchmark::ClobberMemory();
    }
    set_bytes(state, s.cache_bytes());
}

// ------------------------------------------------------------------ prefill

// Self-attention over X (B, n, d), no biases, weights packed once:
// edgeattn_mha_packed with X as queries, keys and values, options NULL
// (full) or mask.causal = 1 (a decoder's prefill).
void prefill(benchmark::State &state, DecoderShape s, bool causal) {
    const size_t B = s.batch, n = s.len, d = s.d_model;
    const edgeattn_attention_dims dims = {B, n, n, d, d, d, d, s.heads, s.kv_heads};
    PackedWeights w(s, dims);
    if (w.status) return fail(state, "edgeattn_mha_pack", w.status);
    Floats X = random_floats(B * n * d, 5), O = alloc_floats(B * n * d);
    size_t ws_bytes = 0;
    if (edgeattn_status st = workspace_size(EDGEATTN_OP_MHA, dims, 0, ws_bytes))
        return fail(state, "edgeattn_workspace_size", st);
    auto ws = alloc_bytes(ws_bytes);
    edgeattn_attention_options options{};
    options.mask.causal = 1;
    const edgeattn_attention_options *o = causal ? &options : nullptr;
    auto call = [&] {
        return edgeattn_mha_packed(&dims, X.get(), X.get(), X.get(), w.packed.get(), w.bytes, o,
                                   ws.get(), ws_bytes, O.get(), nullptr);
    };
    if (edgeattn_status st = call()) return fail(state, "edgeattn_mha_packed", st);
    for (auto _ : state) {
        call();
        benchmark::DoNotOptimize(O.get());
        benchmark::ClobberMemory();
    }
    set_flops(state, prefill_flops(s, causal));
    state.counters["workspace_KiB"] = static_cast<double>(ws_bytes) / 1024.0;
}

// The attention core of that prefill: batch*heads dot-product attentions of
// n x n, d = d_model / heads (queries (B*H, n, d)),
// edgeattn_sdpa with options NULL or mask.causal = 1.
void prefill_sdpa(benchmark::State &state, DecoderShape s, bool causal) {
    const size_t BH = s.batch * s.heads, n = s.len, d = s.head_dim();
    Floats Q = random_floats(BH * n * d, 2), K = random_floats(BH * n * d, 3),
           V = random_floats(BH * n * d, 4), O = alloc_floats(BH * n * d);
    const edgeattn_attention_dims dims = {BH, n, n, d, d, d, 0, 0, 0};
    size_t ws_bytes = 0;
    if (edgeattn_status st = workspace_size(EDGEATTN_OP_SDPA, dims, 0, ws_bytes))
        return fail(state, "edgeattn_workspace_size", st);
    auto ws = alloc_bytes(ws_bytes);
    edgeattn_attention_options options{};
    options.mask.causal = 1;
    const edgeattn_attention_options *o = causal ? &options : nullptr;
    auto call = [&] {
        return edgeattn_sdpa(&dims, Q.get(), K.get(), V.get(), o, ws.get(), ws_bytes, O.get(),
                             nullptr);
    };
    if (edgeattn_status st = call()) return fail(state, "edgeattn_sdpa", st);
    for (auto _ : state) {
        call();
        benchmark::DoNotOptimize(O.get());
        benchmark::ClobberMemory();
    }
    set_flops(state, prefill_sdpa_flops(s, causal));
}

}  // namespace

void register_benchmarks() {
    register_feature_benchmarks();
    register_decode_speed_benchmarks();
    benchmark::AddCustomContext("edgeattn_isa", edgeattn_isa_name(edgeattn_current_isa()));
    for (const auto &s : decode_shapes) {
        configure(benchmark::RegisterBenchmark(name("decode_attend", "edgeattn", s).c_str(), decode_attend, s));
        configure(benchmark::RegisterBenchmark(name("decode_step", "edgeattn", s).c_str(), decode_step, s,
                                               EDGEATTN_DTYPE_F32, true));
        configure(benchmark::RegisterBenchmark(name("decode_step_int8", "edgeattn", s).c_str(), decode_step, s,
                                               EDGEATTN_DTYPE_INT8, true));
        configure(benchmark::RegisterBenchmark(name("decode_step_fp16", "edgeattn", s).c_str(), decode_step, s,
                                               EDGEATTN_DTYPE_F16, true));
        configure(benchmark::RegisterBenchmark(name("decode_sdpa", "edgeattn", s).c_str(), decode_sdpa, s));
        // The bounds, under each decode op so that compare prints them beside it.
        for (const char *op : {"decode_attend", "decode_step", "decode_sdpa"}) {
            configure(benchmark::RegisterBenchmark(name(op, "memcpy", s).c_str(), decode_memcpy, s));
            configure(benchmark::RegisterBenchmark(name(op, "memread", s).c_str(), decode_memread, s));
        }
    }
    for (const auto &s : step_shapes) {
        configure(benchmark::RegisterBenchmark(name("decode_step", "edgeattn", s).c_str(), decode_step, s,
                                               EDGEATTN_DTYPE_F32, true));
        configure(benchmark::RegisterBenchmark(name("decode_step_borrowed", "edgeattn", s).c_str(), decode_step,
                                               s, EDGEATTN_DTYPE_F32, false));
        configure(benchmark::RegisterBenchmark(name("decode_step_int8", "edgeattn", s).c_str(), decode_step, s,
                                               EDGEATTN_DTYPE_INT8, true));
        configure(benchmark::RegisterBenchmark(name("decode_step_borrowed_int8", "edgeattn", s).c_str(),
                                               decode_step, s, EDGEATTN_DTYPE_INT8, false));
    }
    for (const auto &s : prefill_shapes) {
        configure(benchmark::RegisterBenchmark(name("prefill", "edgeattn", s).c_str(), prefill, s, false));
        configure(benchmark::RegisterBenchmark(name("prefill_causal", "edgeattn", s).c_str(), prefill, s, true));
        if (s.kv_heads == s.heads) {  // the attention core has no kv heads
            configure(benchmark::RegisterBenchmark(name("prefill_sdpa", "edgeattn", s).c_str(), prefill_sdpa, s, false));
            configure(benchmark::RegisterBenchmark(name("prefill_sdpa_causal", "edgeattn", s).c_str(), prefill_sdpa, s, true));
        }
    }
}

}  // namespace ebench
