// edgeattn itself (impl "edgeattn") and the memcpy bound of the positional
// add (impl "memcpy"). The naive loops (impl "naive") are in naive.cpp, in
// the same program.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common.hpp"
#include "edgeattn_bench.hpp"
#include "edgeattn/edgeattn.h"
#include "kernels/kernel_table.hpp"  // internal (src/ is on the include path)
#include "edgeattn/detail/workspace_layout.hpp"
#include "linear.hpp"                // internal: the projection GEMM


namespace ebench {
void register_naive_benchmarks();  // naive.cpp

namespace {

// ------------------------------------------------------------------ softmax

void softmax(benchmark::State &state, SoftmaxShape s, bool masked) {
    Floats X = random_floats(s.rows * s.cols, 1, 4.0f), Y = alloc_floats(s.rows * s.cols);
    std::unique_ptr<int32_t[]> lens(new int32_t[s.rows]);
    for (size_t r = 0; r < s.rows; ++r) lens[r] = static_cast<int32_t>(s.cols / 4);
    const edgeattn_softmax_dims dims = {1, s.rows, s.cols};
    const edgeattn_valid_lens vl = {EDGEATTN_VALID_LENS_PER_QUERY, lens.get()};
    const edgeattn_valid_lens *vlp = masked ? &vl : nullptr;
    if (edgeattn_status st = edgeattn_masked_softmax(&dims, X.get(), vlp, Y.get()))
        return fail(state, "edgeattn_masked_softmax", st);
    for (auto _ : state) {
        edgeattn_masked_softmax(&dims, X.get(), vlp, Y.get());
        benchmark::DoNotOptimize(Y.get());
        benchmark::ClobberMemory();
    }
    set_bytes(state, 2.0 * sizeof(float) * s.rows * s.cols);
}

// ------------------------------------------------------------------ sdpa

// batch*heads attentions of seq x seq with d = d_model / heads, no mask.
void sdpa(benchmark::State &state, AttentionShape s, bool weights) {
    const size_t BH = s.batch * s.heads, n = s.seq, d = s.head_dim();
    Floats Q = random_floats(BH * n * d, 2), K = random_floats(BH * n * d, 3),
           V = random_floats(BH * n * d, 4), O = alloc_floats(BH * n * d);
    Floats W = weights ? alloc_floats(BH * n * n) : Floats();
    const edgeattn_attention_dims dims = {BH, n, n, d, d, d, 0, 0, 0};
    size_t ws_bytes = 0;
    if (edgeattn_status st = workspace_size(EDGEATTN_OP_SDPA, dims, 0, ws_bytes))
        return fail(state, "edgeattn_workspace_size", st);
    auto ws = alloc_bytes(ws_bytes);
    if (edgeattn_status st = edgeattn_sdpa(&dims, Q.get(), K.get(), V.get(), nullptr, ws.get(),
                                           ws_bytes, O.get(), W.get()))
        return fail(state, "edgeattn_sdpa", st);
    for (auto _ : state) {
        edgeattn_sdpa(&dims, Q.get(), K.get(), V.get(), nullptr, ws.get(), ws_bytes, O.get(),
                      W.get());
        benchmark::DoNotOptimize(O.get());
        benchmark::ClobberMemory();
    }
    set_flops(state, sdpa_flops(s));
}

// d2l's DotProductAttention example: queries (2, 1, 2), keys (2, 10, 2),
// values (2, 10, 4), valid lengths 2 and 6: a call of 140 multiply-adds,
// where the call's own costs show.
void sdpa_d2l_example(benchmark::State &state) {
    constexpr size_t B = 2, Q = 1, K = 10, d = 2, dv = 4;
    Floats q = random_floats(B * Q * d, 2), k = random_floats(B * K * d, 3), v = random_floats(B * K * dv, 4),
           o = alloc_floats(B * Q * dv);
    const int32_t lens[B] = {2, 6};
    edgeattn_attention_options opt{};
    opt.valid_lens = {EDGEATTN_VALID_LENS_PER_BATCH, lens};
    const edgeattn_attention_dims dims = {B, Q, K, d, d, dv, 0, 0, 0};
    size_t ws_bytes = 0;
    if (edgeattn_status st = workspace_size(EDGEATTN_OP_SDPA, dims, 0, ws_bytes))
        return fail(state, "edgeattn_workspace_size", st);
    auto ws = alloc_bytes(ws_bytes);
    auto call = [&] { return edgeattn_sdpa(&dims, q.get(), k.get(), v.get(), &opt, ws.get(), ws_bytes, o.get(), nullptr); };
    if (edgeattn_status st = call()) return fail(state, "edgeattn_sdpa", st);
    for (auto _ : state) {
        call();
        benchmark::DoNotOptimize(o.get());
        benchmark::ClobberMemory();
    }
}

// ------------------------------------------------------------------ additive

// d2l's AdditiveAttention: batch x queries over keys, queries of q_size and
// keys of k_size projected to `hiddens` features, tanh, scored by w_v;
// valid lengths half the keys (d2l's example masks).
struct AdditiveShape {
    size_t batch, queries, keys, q_size, k_size, v_size, hiddens;
};
constexpr AdditiveShape additive_shapes[] = {{2, 1, 10, 20, 2, 4, 8}, {4, 32, 128, 64, 64, 64, 64}};

std::string additive_name(const AdditiveShape &s) {
    return "additive/edgeattn/" + std::to_string(s.batch) + "x" + std::to_string(s.queries) + "x" +
           std::to_string(s.keys) + "h" + std::to_string(s.hiddens);
}

void additive(benchmark::State &state, AdditiveShape s) {
    Floats Q = random_floats(s.batch * s.queries * s.q_size, 5), K = random_floats(s.batch * s.keys * s.k_size, 6),
           V = random_floats(s.batch * s.keys * s.v_size, 7), O = alloc_floats(s.batch * s.queries * s.v_size);
    Floats Wq = random_floats(s.hiddens * s.q_size, 8, 0.5f), Wk = random_floats(s.hiddens * s.k_size, 9, 0.5f),
           wv = random_floats(s.hiddens, 10, 0.5f);
    std::unique_ptr<int32_t[]> lens(new int32_t[s.batch]);
    for (size_t b = 0; b < s.batch; ++b) lens[b] = static_cast<int32_t>(s.keys / 2);
    edgeattn_attention_options o{};
    o.valid_lens = {EDGEATTN_VALID_LENS_PER_BATCH, lens.get()};
    edgeattn_weights w{};
    w.W_q = {EDGEATTN_DTYPE_F32, Wq.get(), nullptr};
    w.W_k = {EDGEATTN_DTYPE_F32, Wk.get(), nullptr};
    w.W_v = {EDGEATTN_DTYPE_F32, wv.get(), nullptr};
    const edgeattn_attention_dims dims = {s.batch, s.queries, s.keys, s.q_size, s.k_size, s.v_size, s.hiddens, 0, 0};
    size_t ws_bytes = 0;
    if (edgeattn_status st = workspace_size(EDGEATTN_OP_ADDITIVE, dims, 0, ws_bytes))
        return fail(state, "edgeattn_workspace_size", st);
    auto ws = alloc_bytes(ws_bytes);
    auto call = [&] {
        return edgeattn_additive(&dims, Q.get(), K.get(), V.get(), &w, &o, ws.get(), ws_bytes, O.get(), nullptr);
    };
    if (edgeattn_status st = call()) return fail(state, "edgeattn_additive", st);
    for (auto _ : state) {
        call();
        benchmark::DoNotOptimize(O.get());
        benchmark::ClobberMemory();
    }
}

// ------------------------------------------------------------------ mha

// d2l's MultiHeadAttention(X, X, X) without biases, no mask: self-attention,
// edgeattn_mha with X as queries, keys and values and full dims (the op every
// peer here runs). With `packed`, the weights are packed once before timing
// (edgeattn_mha_pack, as a model does when it loads) and the loop calls
// edgeattn_mha_packed. With `stored` int8 or fp16, the weights are quantised
// (edgeattn_quantize_int8) or converted (edgeattn_float_to_half) and packed in
// that type: ops mha_packed_int8, mha_packed_fp16; int8 as given: mha_int8
// (the fp32 arithmetic), mha_w8a8 (`arithmetic` int8: the projections in
// integers).
void mha(benchmark::State &state, AttentionShape s, bool weights, bool packed,
         edgeattn_dtype stored, edgeattn_arithmetic arithmetic) {
    const size_t B = s.batch, n = s.seq, d = s.d_model, H = s.heads;
    const float wscale = 1.0f / std::sqrt(static_cast<float>(d));
    Floats X = random_floats(B * n * d, 5), O = alloc_floats(B * n * d);
    Floats Wq = random_floats(d * d, 6, wscale), Wk = random_floats(d * d, 7, wscale),
           Wv = random_floats(d * d, 8, wscale), Wo = random_floats(d * d, 9, wscale);
    Floats A = weights ? alloc_floats(B * H * n * n) : Floats();
    // Self-attention: keys = queries = n, every feature size d.
    const edgeattn_attention_dims dims = {B, n, n, d, d, d, d, H, 0};
    size_t ws_bytes = 0;
    if (edgeattn_status st = workspace_size(EDGEATTN_OP_MHA, dims, 0, ws_bytes, arithmetic))
        return fail(state, "edgeattn_workspace_size", st);
    // The stored forms: d*d int8 (+ d scales) or binary16 per matrix.
    std::vector<int8_t> q8(stored == EDGEATTN_DTYPE_INT8 ? 4 * d * d : 0);
    std::vector<uint16_t> f16(stored == EDGEATTN_DTYPE_F16 ? 4 * d * d : 0);
    Floats scales = alloc_floats(4 * d);
    edgeattn_weights tw = {};  // no biases
    edgeattn_weight_matrix *tm[4] = {&tw.W_q, &tw.W_k, &tw.W_v, &tw.W_o};
    const float *fm[4] = {Wq.get(), Wk.get(), Wv.get(), Wo.get()};
    for (size_t i = 0; i < 4; ++i) {
        edgeattn_status st = EDGEATTN_OK;
        if (stored == EDGEATTN_DTYPE_INT8) {
            st = edgeattn_quantize_int8(d, d, fm[i], &q8[i * d * d], scales.get() + i * d);
            *tm[i] = {stored, &q8[i * d * d], scales.get() + i * d, arithmetic};
        } else if (stored == EDGEATTN_DTYPE_F16) {
            st = edgeattn_float_to_half(d * d, fm[i], &f16[i * d * d]);
            *tm[i] = {stored, &f16[i * d * d], nullptr};
        } else {
            *tm[i] = {stored, fm[i], nullptr};
        }
        if (st) return fail(state, "quantising / converting the weights", st);
    }
    const size_t packed_bytes = packed ? edgeattn_mha_packed_size(&dims, &tw) : 0;
    auto ws = alloc_bytes(ws_bytes), pw = alloc_bytes(packed_bytes);
    if (packed) {
        if (edgeattn_status st = edgeattn_mha_pack(&dims, &tw, pw.get(), packed_bytes))
            return fail(state, "edgeattn_mha_pack", st);
    }
    auto call = [&] {
        return packed ? edgeattn_mha_packed(&dims, X.get(), X.get(), X.get(), pw.get(),
                                            packed_bytes, nullptr, ws.get(), ws_bytes, O.get(),
                                            A.get())
                      : edgeattn_mha(&dims, X.get(), X.get(), X.get(), &tw, nullptr, ws.get(),
                                     ws_bytes, O.get(), A.get());
    };
    if (edgeattn_status st = call())
        return fail(state, packed ? "edgeattn_mha_packed" : "edgeattn_mha", st);
    for (auto _ : state) {
        call();
        benchmark::DoNotOptimize(O.get());
        benchmark::ClobberMemory();
    }
    set_flops(state, mha_flops(s));
    state.counters["workspace_KiB"] = static_cast<double>(ws_bytes) / 1024.0;
    if (packed) state.counters["packed_KiB"] = static_cast<double>(packed_bytes) / 1024.0;
}

// ------------------------------------------------------------------ gemm

// The library's projection y = x W^T (src/linear.hpp, internal): its GEMM
// kernel with its own split of columns over OpenMP threads. `gemm` packs W^T
// on every call, as the unpacked entry points do (a few rows read W in
// place instead); `gemm_packed` multiplies by W^T packed once before timing,
// as the *_packed entry points do. `type`: how W is stored (int8 with one
// scale per output channel, binary16, float).
void gemm(benchmark::State &state, GemmShape s, bool prepacked, edgeattn_dtype type) {
    const size_t M = s.M, N = s.N, K = s.K;
    Floats A = random_floats(M * K, 10), W = random_floats(N * K, 11), C = alloc_floats(M * N);
    Floats scales = alloc_floats(N);
    std::vector<int8_t> w8(N * K);
    std::vector<uint16_t> w16(N * K);
    const void *data = W.get();
    if (type == EDGEATTN_DTYPE_INT8) {
        for (size_t i = 0; i < N * K; ++i) w8[i] = static_cast<int8_t>(std::lround(W.get()[i] * 127.0f));
        for (size_t j = 0; j < N; ++j) scales.get()[j] = 1.0f / 127.0f;
        data = w8.data();
    } else if (type == EDGEATTN_DTYPE_F16) {
        if (edgeattn_status st = edgeattn_float_to_half(N * K, W.get(), w16.data()))
            return fail(state, "edgeattn_float_to_half", st);
        data = w16.data();
    }
    size_t packed_floats = 0;
    edgeattn::detail::packed_floats(K, N, packed_floats);
    Floats packed = alloc_floats(packed_floats);
    const edgeattn::detail::kernel_table &k = edgeattn::detail::active_kernels();
    const float *row_scales = type == EDGEATTN_DTYPE_INT8 ? scales.get() : nullptr;
    const edgeattn::detail::stored_matrix given = {type, data, row_scales},
                                          panels = {type, packed.get(), row_scales};
    if (prepacked) edgeattn::detail::pack_weights_transposed(K, N, given, packed.get());
    const size_t threads = SIZE_MAX;  // as many as OpenMP gives (EDGEATTN_BENCH_THREADS)
    for (auto _ : state) {
        if (prepacked)
            edgeattn::detail::linear_prepacked(k, M, K, N, A.get(), panels, nullptr, C.get(), threads);
        else
            edgeattn::detail::linear(k, M, K, N, A.get(), given, nullptr, C.get(), packed.get(), threads);
        benchmark::DoNotOptimize(C.get());
        benchmark::ClobberMemory();
    }
    set_flops(state, 2.0 * M * N * K);
}

// ------------------------------------------------------------------ dense

// edgeattn_dense through the C API, W as given: fp32, int8 widened to fp32
// (the fp32 arithmetic), or int8 in the int8 arithmetic (W8A8: rows of x
// quantised per call, int32 products). The workspace is sized for the
// threads OpenMP gives.
void dense(benchmark::State &state, GemmShape s, edgeattn_dtype type, edgeattn_arithmetic arithmetic) {
    const size_t M = s.M, N = s.N, K = s.K;
    Floats X = random_floats(M * K, 12), W = random_floats(N * K, 13), Y = alloc_floats(M * N);
    Floats scales = alloc_floats(N);
    std::vector<int8_t> w8(N * K);
    edgeattn_weight_matrix m = {EDGEATTN_DTYPE_F32, W.get(), nullptr, EDGEATTN_ARITHMETIC_FLOAT};
    if (type == EDGEATTN_DTYPE_INT8) {
        if (edgeattn_status st = edgeattn_quantize_int8(N, K, W.get(), w8.data(), scales.get()))
            return fail(state, "edgeattn_quantize_int8", st);
        m = {EDGEATTN_DTYPE_INT8, w8.data(), scales.get(), arithmetic};
    }
    const edgeattn_dense_dims dims = {M, K, N};
    edgeattn_workspace_request r{};
    r.op = EDGEATTN_OP_DENSE;
    r.dense = dims;
    r.arithmetic = arithmetic;
    size_t ws_bytes = 0;
    if (edgeattn_status st = edgeattn_workspace_size(&r, 1, max_threads(), &ws_bytes))
        return fail(state, "edgeattn_workspace_size", st);
    auto ws = alloc_bytes(ws_bytes);
    if (edgeattn_status st = edgeattn_dense(&dims, X.get(), &m, nullptr, ws.get(), ws_bytes, Y.get()))
        return fail(state, "edgeattn_dense", st);
    for (auto _ : state) {
        edgeattn_dense(&dims, X.get(), &m, nullptr, ws.get(), ws_bytes, Y.get());
        benchmark::DoNotOptimize(Y.get());
        benchmark::ClobberMemory();
    }
    set_flops(state, 2.0 * M * N * K);
}

constexpr GemmShape dense_shapes[] = {{128, 512, 512}, {1, 512, 512}, {4, 512, 512}, {8, 100, 100}};

// A decode step's projections: one token (or a few) through a layer's
// weights, which packing must not slow (the packed weights are read the
// same number of times as the caller's).
constexpr GemmShape few_row_gemm_shapes[] = {{1, 128, 128}, {1, 512, 512}, {1, 2048, 512},
                                             {2, 512, 512}, {4, 512, 512}};

// ------------------------------------------------------------------ posenc

void posenc(benchmark::State &state, PosencShape s) {
    const size_t count = s.batch * s.n * s.d;
    Floats X = random_floats(count, 12), Y = alloc_floats(count), P = alloc_floats(s.n * s.d);
    if (edgeattn_status st = edgeattn_positional_encoding_table(s.n, s.d, P.get()))
        return fail(state, "edgeattn_positional_encoding_table", st);
    for (auto _ : state) {
        edgeattn_positional_encoding_add_at(s.batch, s.n, s.d, 0, X.get(), P.get(), s.n, Y.get());
        benchmark::DoNotOptimize(Y.get());
        benchmark::ClobberMemory();
    }
    set_bytes(state, 2.0 * sizeof(float) * count);
}

// The bound: copy the bytes the add reads from X and writes to Y.
void posenc_memcpy(benchmark::State &state, PosencShape s) {
    const size_t count = s.batch * s.n * s.d;
    Floats X = random_floats(count, 12), Y = alloc_floats(count);
    for (auto _ : state) {
        std::memcpy(Y.get(), X.get(), count * sizeof(float));
        benchmark::DoNotOptimize(Y.get());
        benchmark::ClobberMemory();
    }
    set_bytes(state, 2.0 * sizeof(float) * count);
}

// A transformer encoder layer's attention core: 8 heads of 128 queries x
// 128 keys, d 64, no mask (ONNX Runtime's Attention runs the same).
constexpr AttentionShape encoder_shape = {1, 128, 512, 8};

}  // namespace

void register_benchmarks() {
    benchmark::AddCustomContext("edgeattn_isa", edgeattn_isa_name(edgeattn_current_isa()));
    for (const auto &s : softmax_shapes) {
        configure(benchmark::RegisterBenchmark(name("softmax", "edgeattn", s).c_str(), softmax, s, false));
        configure(benchmark::RegisterBenchmark(name("softmax_masked", "edgeattn", s).c_str(), softmax, s, true));
    }
    for (const auto &s : attention_shapes) {
        configure(benchmark::RegisterBenchmark(name("sdpa", "edgeattn", s).c_str(), sdpa, s, false));
        configure(benchmark::RegisterBenchmark(name("sdpa_weights", "edgeattn", s).c_str(), sdpa, s, true));
        configure(benchmark::RegisterBenchmark(name("mha", "edgeattn", s).c_str(), mha, s, false, false,
                                               EDGEATTN_DTYPE_F32, EDGEATTN_ARITHMETIC_FLOAT));
        configure(benchmark::RegisterBenchmark(name("mha_weights", "edgeattn", s).c_str(), mha, s, true, false,
                                               EDGEATTN_DTYPE_F32, EDGEATTN_ARITHMETIC_FLOAT));
        configure(benchmark::RegisterBenchmark(name("mha_packed", "edgeattn", s).c_str(), mha, s, false, true,
                                               EDGEATTN_DTYPE_F32, EDGEATTN_ARITHMETIC_FLOAT));
        configure(benchmark::RegisterBenchmark(name("mha_packed_int8", "edgeattn", s).c_str(), mha, s, false, true,
                                               EDGEATTN_DTYPE_INT8, EDGEATTN_ARITHMETIC_FLOAT));
        configure(benchmark::RegisterBenchmark(name("mha_packed_fp16", "edgeattn", s).c_str(), mha, s, false, true,
                                               EDGEATTN_DTYPE_F16, EDGEATTN_ARITHMETIC_FLOAT));
        configure(benchmark::RegisterBenchmark(name("mha_int8", "edgeattn", s).c_str(), mha, s, false, false,
                                               EDGEATTN_DTYPE_INT8, EDGEATTN_ARITHMETIC_FLOAT));
        configure(benchmark::RegisterBenchmark(name("mha_w8a8", "edgeattn", s).c_str(), mha, s, false, false,
                                               EDGEATTN_DTYPE_INT8, EDGEATTN_ARITHMETIC_INT8));
    }
    configure(benchmark::RegisterBenchmark("sdpa/edgeattn/2x1x10d2v4", sdpa_d2l_example));
    for (const auto &s : additive_shapes)
        configure(benchmark::RegisterBenchmark(additive_name(s).c_str(), additive, s));
    configure(benchmark::RegisterBenchmark(name("sdpa", "edgeattn", encoder_shape).c_str(), sdpa, encoder_shape,
                                           false));
    for (const auto &s : gemm_shapes) {
        configure(benchmark::RegisterBenchmark(name("gemm", "edgeattn", s).c_str(), gemm, s, false,
                                               EDGEATTN_DTYPE_F32));
        configure(benchmark::RegisterBenchmark(name("gemm_packed", "edgeattn", s).c_str(), gemm, s, true,
                                               EDGEATTN_DTYPE_F32));
    }
    for (const auto &s : few_row_gemm_shapes) {
        configure(benchmark::RegisterBenchmark(name("gemm", "edgeattn", s).c_str(), gemm, s, false,
                                               EDGEATTN_DTYPE_F32));
        configure(benchmark::RegisterBenchmark(name("gemm_packed", "edgeattn", s).c_str(), gemm, s, true,
                                               EDGEATTN_DTYPE_F32));
        configure(benchmark::RegisterBenchmark(name("gemm_int8", "edgeattn", s).c_str(), gemm, s, false,
                                               EDGEATTN_DTYPE_INT8));
        configure(benchmark::RegisterBenchmark(name("gemm_packed_int8", "edgeattn", s).c_str(), gemm, s, true,
                                               EDGEATTN_DTYPE_INT8));
        configure(benchmark::RegisterBenchmark(name("gemm_fp16", "edgeattn", s).c_str(), gemm, s, false,
                                               EDGEATTN_DTYPE_F16));
        configure(benchmark::RegisterBenchmark(name("gemm_packed_fp16", "edgeattn", s).c_str(), gemm, s, true,
                                               EDGEATTN_DTYPE_F16));
    }
    for (const auto &s : dense_shapes) {
        configure(benchmark::RegisterBenchmark(name("dense", "edgeattn", s).c_str(), dense, s, EDGEATTN_DTYPE_F32,
                                               EDGEATTN_ARITHMETIC_FLOAT));
        configure(benchmark::RegisterBenchmark(name("dense_int8", "edgeattn", s).c_str(), dense, s,
                                               EDGEATTN_DTYPE_INT8, EDGEATTN_ARITHMETIC_FLOAT));
        configure(benchmark::RegisterBenchmark(name("dense_w8a8", "edgeattn", s).c_str(), dense, s,
                                               EDGEATTN_DTYPE_INT8, EDGEATTN_ARITHMETIC_INT8));
    }
    for (const auto &s : posenc_shapes) {
        configure(benchmark::RegisterBenchmark(name("posenc", "edgeattn", s).c_str(), posenc, s));
        configure(benchmark::RegisterBenchmark(name("posenc", "memcpy", s).c_str(), posenc_memcpy, s));
    }
    register_naive_benchmarks();
}

}  // namespace ebench
