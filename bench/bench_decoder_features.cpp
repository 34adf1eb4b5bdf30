// The decoder features' rows of edgeattn-bench-decoder, each beside the row
// it must keep up with (bench/NOTES.md):
//   append, append_rope          a prompt's keys and values stored in the
//                                cache, plain and with RoPE fused (within 10%);
//   decode_window(_sinks)        a decode step's attend over a wrapped window
//                                cache of L rows, beside decode_attend over a
//                                full cache of L (as fast);
//   decode_step_noproj           a projection-free decode step (store the
//                                projected row, attend, no W_q / W_o), and
//                                decode_attend_noproj its attend alone,
//                                beside decode_sdpa over the same rows (as fast).
#include <cstring>
#include <vector>

#include "decoder_fixtures.hpp"

namespace ebench {
namespace {

// Positions 0 .. max_positions - 1 of a NeoX table over the whole head.
struct RopeTable {
    std::vector<float> table;
    edgeattn_rope rope{};
    edgeattn_status status = EDGEATTN_OK;
    RopeTable(size_t max_positions, size_t head_dim) {
        edgeattn_rope_table_config config{};
        config.max_positions = max_positions;
        config.rotary_dims = head_dim;
        table.resize(max_positions * head_dim);
        status = edgeattn_rope_table(&config, table.data(), table.size());
        rope.table = table.data();
        rope.max_positions = max_positions;
        rope.rotary_dims = head_dim;
        rope.layout = EDGEATTN_ROPE_NEOX;
    }
};

// L tokens' keys and values projected (packed W_k, W_v) and stored in an
// empty cache of L positions; the cache is reset before every store.
void append(benchmark::State &state, DecoderShape s, bool rope) {
    const edgeattn_attention_dims dims = decode_dims(s, s.len);
    PackedWeights w(s, dims);
    if (w.status) return fail(state, "edgeattn_mha_pack", w.status);
    FilledCache c(s, s.len, dims, w);
    if (c.status) return fail(state, c.failed, c.status);
    RopeTable table(s.len, s.head_dim());
    if (table.status) return fail(state, "edgeattn_rope_table", table.status);
    edgeattn_attention_options options{};
    if (rope) options.rope = table.rope;
    Floats X = random_floats(s.batch * s.len * s.d_model, 16);
    size_t ws_bytes = 0;
    if (edgeattn_status st = workspace_size(EDGEATTN_OP_KV_CACHE_STORE, dims, s.len, ws_bytes))
        return fail(state, "edgeattn_workspace_size", st);
    auto ws = alloc_bytes(ws_bytes);
    auto call = [&]() -> edgeattn_status {
        if (edgeattn_status st = edgeattn_kv_cache_reset(&c.cache)) return st;
        return edgeattn_kv_cache_store_packed(&c.cache, &dims, s.len, X.get(), X.get(), w.packed.get(),
                                              w.bytes, &options, ws.get(), ws_bytes);
    };
    if (edgeattn_status st = call()) return fail(state, "edgeattn_kv_cache_store_packed", st);
    for (auto _ : state) {
        call();
        benchmark::ClobberMemory();
    }
    const double rows = static_cast<double>(s.batch * s.len), d = static_cast<double>(s.d_model);
    set_flops(state, 2.0 * rows * d * 2.0 * static_cast<double>(s.kv_heads * s.head_dim()));
}

// decode_attend's call over a window cache of `sinks` + (L - sinks) rows
// that has seen 1.3 L tokens, so its ring has wrapped mid-way.
void decode_window(benchmark::State &state, DecoderShape s, size_t sinks) {
    const edgeattn_attention_dims dims = decode_dims(s, s.len);
    PackedWeights w(s, dims);
    if (w.status) return fail(state, "edgeattn_mha_pack", w.status);
    FilledCache c(s, s.len, dims, w, EDGEATTN_DTYPE_F32, s.len - sinks, sinks, s.len + s.len * 3 / 10);
    if (c.status) return fail(state, c.failed, c.status);
    time_attend(state, s, dims, w, c);
}

// A decode step with no projection: store one token's projected key and
// value rows (B, 1, h_kv), attend its projected query (B, 1, h) over the
// L + 1 positions, the output the concatenated heads. Each iteration first
// truncates back to L, as decode_step does. decode_attend_noproj: the
// attend alone, over the L + 1 positions.
void decode_step_noproj(benchmark::State &state, DecoderShape s, bool with_store) {
    const size_t h = s.d_model, h_kv = s.kv_heads * s.head_dim();
    edgeattn_attention_dims dims = decode_dims(s, s.len + 1);
    PackedWeights w(s, dims);
    if (w.status) return fail(state, "edgeattn_mha_pack", w.status);
    FilledCache c(s, s.len + 1, dims, w);
    if (c.status) return fail(state, c.failed, c.status);
    dims.key_size = dims.value_size = h_kv;
    edgeattn_weights none{};
    none.W_q.type = none.W_k.type = none.W_v.type = none.W_o.type = EDGEATTN_DTYPE_NONE;
    Floats q = random_floats(s.batch * h, 12), kv = random_floats(s.batch * h_kv, 17),
           out = alloc_floats(s.batch * h);
    size_t att_bytes = 0, app_bytes = 0;
    if (edgeattn_status st = workspace_size(EDGEATTN_OP_KV_CACHE_ATTEND, dims, 0, att_bytes))
        return fail(state, "edgeattn_workspace_size (attend)", st);
    if (edgeattn_status st = workspace_size(EDGEATTN_OP_KV_CACHE_STORE, dims, 1, app_bytes))
        return fail(state, "edgeattn_workspace_size (store)", st);
    auto att_ws = alloc_bytes(att_bytes), app_ws = alloc_bytes(app_bytes);
    auto store = [&]() -> edgeattn_status {
        for (size_t b = 0; b < s.batch; ++b)
            if (edgeattn_status st = edgeattn_kv_cache_truncate(&c.cache, b, s.len)) return st;
        return edgeattn_kv_cache_store(&c.cache, &dims, 1, kv.get(), kv.get(), &none, nullptr, app_ws.get(),
                                       app_bytes);
    };
    if (edgeattn_status st = store()) return fail(state, "projection-free store", st);
    auto step = [&]() -> edgeattn_status {
        if (with_store)
            if (edgeattn_status st = store()) return st;
        return edgeattn_kv_cache_attend(&c.cache, &dims, q.get(), &none, nullptr, att_ws.get(), att_bytes,
                                        out.get(), nullptr);
    };
    if (edgeattn_status st = step()) return fail(state, "projection-free decode step", st);
    for (auto _ : state) {
        step();
        benchmark::DoNotOptimize(out.get());
        benchmark::ClobberMemory();
    }
    set_decode_counters(state, s, 0);
}

}  // namespace

void register_feature_benchmarks() {
    const DecoderShape prompt = {1, 4096, 512, 8, 8};
    configure(benchmark::RegisterBenchmark(name("append", "edgeattn", prompt).c_str(), append, prompt, false));
    configure(benchmark::RegisterBenchmark(name("append_rope", "edgeattn", prompt).c_str(), append, prompt, true));
    for (const auto &s : decode_shapes) {
        configure(benchmark::RegisterBenchmark(name("decode_window", "edgeattn", s).c_str(), decode_window, s, 0));
        configure(benchmark::RegisterBenchmark(name("decode_window_sinks", "edgeattn", s).c_str(), decode_window, s, 4));
        configure(benchmark::RegisterBenchmark(name("decode_step_noproj", "edgeattn", s).c_str(), decode_step_noproj, s,
                                               true));
        configure(benchmark::RegisterBenchmark(name("decode_attend_noproj", "edgeattn", s).c_str(), decode_step_noproj,
                                               s, false));
    }
}

}  // namespace ebench
