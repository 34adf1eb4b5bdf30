// impl "onednn": oneDNN (Debian's 2.6, CPU engine, OpenMP runtime: threads
// from OMP_NUM_THREADS / bench_threads()). Primitives are created once,
// outside the timing; the loop only executes them.
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <cmath>

#include "common.hpp"

namespace ebench {
namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

dnnl::engine &cpu_engine() {
    static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    return eng;
}

// softmax_forward (inference) over the rows of a (rows, cols) matrix.
// oneDNN has no masked softmax: softmax_masked has no onednn entry.
void softmax(benchmark::State &state, SoftmaxShape s) {
    dnnl::engine &eng = cpu_engine();
    dnnl::stream strm(eng);
    Floats X = random_floats(s.rows * s.cols, 1, 4.0f), Y = alloc_floats(s.rows * s.cols);
    const dnnl::memory::dims dims = {static_cast<dnnl::memory::dim>(s.rows),
                                     static_cast<dnnl::memory::dim>(s.cols)};
    const dnnl::memory::desc md(dims, dt::f32, tag::ab);
    dnnl::memory src(md, eng, X.get()), dst(md, eng, Y.get());
    const dnnl::softmax_forward::primitive_desc pd(
        dnnl::softmax_forward::desc(dnnl::prop_kind::forward_inference, md, 1), eng);
    dnnl::softmax_forward prim(pd);
    for (auto _ : state) {
        prim.execute(strm, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}});
        strm.wait();
        benchmark::DoNotOptimize(Y.get());
        benchmark::ClobberMemory();
    }
    set_bytes(state, 2.0 * sizeof(float) * s.rows * s.cols);
}

// batch*heads attentions of seq x seq, d = d_model / heads, no mask:
// matmul (Q K^T, scaled by 1/sqrt(d) through the output-scale attribute,
// K^T read through strides), softmax in place over the last axis, matmul
// (weights . V). The weights are materialised either way, so the same
// pipeline is registered as sdpa and sdpa_weights.
void sdpa(benchmark::State &state, AttentionShape s) {
    dnnl::engine &eng = cpu_engine();
    dnnl::stream strm(eng);
    const size_t BHs = s.batch * s.heads, ns = s.seq, ds = s.head_dim();
    const dnnl::memory::dim BH = static_cast<dnnl::memory::dim>(BHs), n = static_cast<dnnl::memory::dim>(ns),
                            d = static_cast<dnnl::memory::dim>(ds);
    Floats Q = random_floats(BHs * ns * ds, 2), K = random_floats(BHs * ns * ds, 3),
           V = random_floats(BHs * ns * ds, 4), O = alloc_floats(BHs * ns * ds),
           S = alloc_floats(BHs * ns * ns);

    const dnnl::memory::desc q_md({BH, n, d}, dt::f32, tag::abc);
    const dnnl::memory::desc kt_md({BH, d, n}, dt::f32, dnnl::memory::dims{n * d, 1, d});  // K^T
    const dnnl::memory::desc s_md({BH, n, n}, dt::f32, tag::abc);
    const dnnl::memory::desc v_md({BH, n, d}, dt::f32, tag::abc);
    const dnnl::memory::desc o_md({BH, n, d}, dt::f32, tag::abc);
    dnnl::memory q_mem(q_md, eng, Q.get()), kt_mem(kt_md, eng, K.get()), s_mem(s_md, eng, S.get()),
        v_mem(v_md, eng, V.get()), o_mem(o_md, eng, O.get());

    dnnl::primitive_attr scale_attr;
    scale_attr.set_output_scales(0, {1.0f / std::sqrt(static_cast<float>(ds))});
    const dnnl::matmul scores(dnnl::matmul::primitive_desc(dnnl::matmul::desc(q_md, kt_md, s_md), scale_attr, eng));
    const dnnl::softmax_forward softmax_prim(dnnl::softmax_forward::primitive_desc(
        dnnl::softmax_forward::desc(dnnl::prop_kind::forward_inference, s_md, 2), eng));
    const dnnl::matmul weighted(dnnl::matmul::primitive_desc(dnnl::matmul::desc(s_md, v_md, o_md), eng));
    for (auto _ : state) {
        scores.execute(strm, {{DNNL_ARG_SRC, q_mem}, {DNNL_ARG_WEIGHTS, kt_mem}, {DNNL_ARG_DST, s_mem}});
        softmax_prim.execute(strm, {{DNNL_ARG_SRC, s_mem}, {DNNL_ARG_DST, s_mem}});
        weighted.execute(strm, {{DNNL_ARG_SRC, s_mem}, {DNNL_ARG_WEIGHTS, v_mem}, {DNNL_ARG_DST, o_mem}});
        strm.wait();
        benchmark::DoNotOptimize(O.get());
        benchmark::ClobberMemory();
    }
    set_flops(state, sdpa_flops(s));
}

// dnnl_sgemm is row-major: C = A W^T is transa 'N', transb 'T'.
void gemm(benchmark::State &state, GemmShape s) {
    Floats A = random_floats(s.M * s.K, 10), W = random_floats(s.N * s.K, 11), C = alloc_floats(s.M * s.N);
    const dnnl_dim_t M = static_cast<dnnl_dim_t>(s.M), N = static_cast<dnnl_dim_t>(s.N),
                     K = static_cast<dnnl_dim_t>(s.K);
    if (dnnl_sgemm('N', 'T', M, N, K, 1.0f, A.get(), K, W.get(), K, 0.0f, C.get(), N) != dnnl_success)
        return state.SkipWithError("dnnl_sgemm failed");
    for (auto _ : state) {
        dnnl_sgemm('N', 'T', M, N, K, 1.0f, A.get(), K, W.get(), K, 0.0f, C.get(), N);
        benchmark::DoNotOptimize(C.get());
        benchmark::ClobberMemory();
    }
    set_flops(state, 2.0 * s.M * s.N * s.K);
}

// Runs a benchmark body, turning a oneDNN exception into a skipped run.
template <class F, class... Args>
auto guarded(F f) {
    return [f](benchmark::State &state, auto... args) {
        try {
            f(state, args...);
        } catch (const dnnl::error &e) {
            state.SkipWithError(e.what());
        }
    };
}

}  // namespace

void register_benchmarks() {
    const dnnl_version_t *v = dnnl_version();
    benchmark::AddCustomContext("onednn_version", std::to_string(v->major) + "." +
                                                      std::to_string(v->minor) + "." +
                                                      std::to_string(v->patch));
    for (const auto &s : softmax_shapes)
        configure(benchmark::RegisterBenchmark(name("softmax", "onednn", s).c_str(), guarded(softmax), s));
    for (const auto &s : attention_shapes) {
        configure(benchmark::RegisterBenchmark(name("sdpa", "onednn", s).c_str(), guarded(sdpa), s));
        configure(benchmark::RegisterBenchmark(name("sdpa_weights", "onednn", s).c_str(), guarded(sdpa), s));
    }
    for (const auto &s : gemm_shapes)
        configure(benchmark::RegisterBenchmark(name("gemm", "onednn", s).c_str(), gemm, s));
}

}  // namespace ebench
