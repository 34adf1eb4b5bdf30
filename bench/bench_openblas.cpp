// impl "openblas": OpenBLAS's cblas_sgemm (Debian's 0.3.21, pthread build),
// openblas_set_num_threads(bench_threads()).
#include <cblas.h>

#include <string>

#include "common.hpp"

namespace ebench {
namespace {

// Row-major C (M,N) = A (M,K) . W (N,K)^T.
void gemm(benchmark::State &state, GemmShape s) {
    Floats A = random_floats(s.M * s.K, 10), W = random_floats(s.N * s.K, 11), C = alloc_floats(s.M * s.N);
    const blasint M = static_cast<blasint>(s.M), N = static_cast<blasint>(s.N), K = static_cast<blasint>(s.K);
    for (auto _ : state) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, A.get(), K, W.get(), K,
                    0.0f, C.get(), N);
        benchmark::DoNotOptimize(C.get());
        benchmark::ClobberMemory();
    }
    set_flops(state, 2.0 * s.M * s.N * s.K);
}

}  // namespace

void register_benchmarks() {
    openblas_set_num_threads(bench_threads());
    benchmark::AddCustomContext("openblas_threads", std::to_string(openblas_get_num_threads()));
    benchmark::AddCustomContext("openblas_config", openblas_get_config());
    for (const auto &s : gemm_shapes)
        configure(benchmark::RegisterBenchmark(name("gemm", "openblas", s).c_str(), gemm, s));
}

}  // namespace ebench
