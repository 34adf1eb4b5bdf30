// impl "eigen": Eigen 3.4's matrix product, compiled for this CPU
// (-march=native, see CMakeLists.txt) with OpenMP, Eigen::setNbThreads(bench_threads()).
#include <Eigen/Core>

#include <string>

#include "common.hpp"

namespace ebench {
namespace {

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// C (M,N) = A (M,K) . W (N,K)^T on the same row-major buffers as the others.
void gemm(benchmark::State &state, GemmShape s) {
    Floats A = random_floats(s.M * s.K, 10), W = random_floats(s.N * s.K, 11), C = alloc_floats(s.M * s.N);
    const Eigen::Index M = static_cast<Eigen::Index>(s.M), N = static_cast<Eigen::Index>(s.N),
                       K = static_cast<Eigen::Index>(s.K);
    Eigen::Map<const RowMajor, Eigen::Aligned64> a(A.get(), M, K), w(W.get(), N, K);
    Eigen::Map<RowMajor, Eigen::Aligned64> c(C.get(), M, N);
    for (auto _ : state) {
        c.noalias() = a * w.transpose();
        benchmark::DoNotOptimize(C.get());
        benchmark::ClobberMemory();
    }
    set_flops(state, 2.0 * s.M * s.N * s.K);
}

}  // namespace

void register_benchmarks() {
    Eigen::setNbThreads(bench_threads());
    benchmark::AddCustomContext("eigen_threads", std::to_string(Eigen::nbThreads()));
    benchmark::AddCustomContext("eigen_simd", Eigen::SimdInstructionSetsInUse());
    for (const auto &s : gemm_shapes)
        configure(benchmark::RegisterBenchmark(name("gemm", "eigen", s).c_str(), gemm, s));
}

}  // namespace ebench
