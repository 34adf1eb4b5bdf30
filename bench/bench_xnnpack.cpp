// impl "xnnpack": XNNPACK operators (Debian's 2022-02 snapshot) on a
// pthreadpool of bench_threads() threads (none for one thread). Operators
// are created and set up once, outside the timing; the loop runs them.
#include <xnnpack.h>
#include <pthreadpool.h>

#include <cmath>
#include <string>

#include "common.hpp"

namespace ebench {
namespace {

pthreadpool_t pool = nullptr;

struct Operator {
    xnn_operator_t op = nullptr;
    ~Operator() {
        if (op) xnn_delete_operator(op);
    }
};

bool check(benchmark::State &state, xnn_status st, const char *what) {
    if (st == xnn_status_success) return true;
    state.SkipWithError((std::string(what) + " failed, status " + std::to_string(st)).c_str());
    return false;
}

// xnn_create_softmax_nc_f32: softmax over each of `rows` rows of `cols`
// channels. XNNPACK has no masked softmax: no softmax_masked entry.
void softmax(benchmark::State &state, SoftmaxShape s) {
    Floats X = random_floats(s.rows * s.cols, 1, 4.0f), Y = alloc_floats(s.rows * s.cols);
    Operator o;
    if (!check(state, xnn_create_softmax_nc_f32(s.cols, s.cols, s.cols, 0, &o.op), "xnn_create_softmax_nc_f32") ||
        !check(state, xnn_setup_softmax_nc_f32(o.op, s.rows, X.get(), Y.get(), pool), "xnn_setup_softmax_nc_f32"))
        return;
    for (auto _ : state) {
        xnn_run_operator(o.op, pool);
        benchmark::DoNotOptimize(Y.get());
        benchmark::ClobberMemory();
    }
    set_bytes(state, 2.0 * sizeof(float) * s.rows * s.cols);
}

// xnn_create_fully_connected_nc_f32: y = x W^T with W (N, K) as
// torch.nn.Linear stores it; XNNPACK packs W when the operator is created.
void gemm(benchmark::State &state, GemmShape s) {
    Floats A = random_floats(s.M * s.K, 10), W = random_floats(s.N * s.K, 11), C = alloc_floats(s.M * s.N);
    Operator o;
    if (!check(state, xnn_create_fully_connected_nc_f32(s.K, s.N, s.K, s.N, W.get(), nullptr, -INFINITY,
                                                         INFINITY, 0, &o.op),
               "xnn_create_fully_connected_nc_f32") ||
        !check(state, xnn_setup_fully_connected_nc_f32(o.op, s.M, A.get(), C.get(), pool),
               "xnn_setup_fully_connected_nc_f32"))
        return;
    for (auto _ : state) {
        xnn_run_operator(o.op, pool);
        benchmark::DoNotOptimize(C.get());
        benchmark::ClobberMemory();
    }
    set_flops(state, 2.0 * s.M * s.N * s.K);
}

}  // namespace

void register_benchmarks() {
    if (xnn_initialize(nullptr) != xnn_status_success) {
        benchmark::AddCustomContext("xnnpack", "xnn_initialize failed (CPU not supported?)");
        return;
    }
    const int threads = bench_threads();
    if (threads > 1) pool = pthreadpool_create(static_cast<size_t>(threads));
    benchmark::AddCustomContext("xnnpack_threads", std::to_string(pool ? pthreadpool_get_threads_count(pool) : 1));
    for (const auto &s : softmax_shapes)
        configure(benchmark::RegisterBenchmark(name("softmax", "xnnpack", s).c_str(), softmax, s));
    for (const auto &s : gemm_shapes)
        configure(benchmark::RegisterBenchmark(name("gemm", "xnnpack", s).c_str(), gemm, s));
}

}  // namespace ebench
