// Shared helpers of the benchmark programs: the shapes every implementation
// runs, benchmark names, random data, aligned buffers, thread counts and
// counters. Every program links common.cpp and bench_main.cpp and defines
// ebench::register_benchmarks().
//
// Names are <op>/<impl>/<shape>, the shape as numbers joined by 'x', so
// bench/compare can pair an implementation with edgeattn's run of the same
// op and shape.
#ifndef EDGEATTN_BENCH_COMMON_HPP
#define EDGEATTN_BENCH_COMMON_HPP

#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <string>

namespace ebench {

// ------------------------------------------------------------------ shapes

// softmax / softmax_masked: a (rows, cols) matrix, softmax over each row.
// The masked variant gives every row the valid length cols / 4.
struct SoftmaxShape {
    std::size_t rows, cols;
};
constexpr SoftmaxShape softmax_shapes[] = {{4096, 128}, {1024, 1024}, {64, 4096}};

// sdpa / mha: (batch, seq, d_model, heads); named batch x seq x d_model x heads.
// mha: self-attention on X (batch, seq, d_model), heads of d_model/heads.
// sdpa: the attention core of that mha: batch*heads independent scaled
//   dot-product attentions, queries = keys = seq, d = d_model / heads.
struct AttentionShape {
    std::size_t batch, seq, d_model, heads;
    std::size_t head_dim() const { return d_model / heads; }
};
constexpr AttentionShape attention_shapes[] = {
    {2, 4, 100, 5}, {1, 128, 256, 4}, {8, 128, 256, 4}, {1, 512, 512, 8}, {1, 2048, 512, 8}};

// gemm: C (M,N) = A (M,K) . W (N,K)^T, a projection x W^T; named M x N x K.
struct GemmShape {
    std::size_t M, N, K;
};
constexpr GemmShape gemm_shapes[] = {
    {8, 100, 100}, {128, 256, 256}, {1024, 256, 256}, {512, 512, 512}, {2048, 512, 512}};

// posenc: Y = X + P[:n], X and Y (batch, n, d); named batch x n x d.
struct PosencShape {
    std::size_t batch, n, d;
};
constexpr PosencShape posenc_shapes[] = {{1, 1000, 512}, {8, 128, 256}};

// Floating-point operations of one call, for the FLOPS counters
// (multiply and add counted separately; softmax and scaling not counted).
double sdpa_flops(const AttentionShape &s);
double mha_flops(const AttentionShape &s);

// The naive implementations are plain scalar loops and take seconds on the
// largest shapes: they run only where one call needs fewer flops than this.
constexpr double naive_max_flops = 3e9;

// ------------------------------------------------------------------ naming

// "op/impl/d0xd1x..."
std::string name(const char *op, const char *impl, std::initializer_list<std::size_t> dims);
inline std::string name(const char *op, const char *impl, const SoftmaxShape &s) {
    return name(op, impl, {s.rows, s.cols});
}
inline std::string name(const char *op, const char *impl, const AttentionShape &s) {
    return name(op, impl, {s.batch, s.seq, s.d_model, s.heads});
}
inline std::string name(const char *op, const char *impl, const GemmShape &s) {
    return name(op, impl, {s.M, s.N, s.K});
}
inline std::string name(const char *op, const char *impl, const PosencShape &s) {
    return name(op, impl, {s.batch, s.n, s.d});
}

// ------------------------------------------------------------------ data

struct FreeDeleter {
    void operator()(void *p) const { std::free(p); }
};
// 64-byte aligned floats (uninitialised).
using Floats = std::unique_ptr<float[], FreeDeleter>;
Floats alloc_floats(std::size_t n);
// 64-byte aligned bytes, e.g. a workspace.
std::unique_ptr<unsigned char[], FreeDeleter> alloc_bytes(std::size_t n);

// Uniform random numbers in [-scale, scale), reproducible from the seed.
void fill_random(float *x, std::size_t n, unsigned seed, float scale = 1.0f);
Floats random_floats(std::size_t n, unsigned seed, float scale = 1.0f);

// ------------------------------------------------------------------ threads

// How many threads a benchmark may use: $EDGEATTN_BENCH_THREADS, else
// $OMP_NUM_THREADS, else every core. bench_main.cpp applies it to OpenMP
// (edgeattn, oneDNN); the libtorch, OpenBLAS, XNNPACK and Eigen programs
// pass it to their library.
int bench_threads();

// ------------------------------------------------------------------ counters

// Adds a "FLOPS" rate counter: flops_per_iteration per call, divided by time.
void set_flops(benchmark::State &state, double flops_per_iteration);
// Sets the byte rate (bytes_per_second) from the bytes one call moves.
void set_bytes(benchmark::State &state, double bytes_per_iteration);

// Applies what every benchmark here uses: microseconds, wall-clock time
// (threads are involved).
benchmark::internal::Benchmark *configure(benchmark::internal::Benchmark *b);

// Defined by each program: registers its benchmarks by hand.
void register_benchmarks();

}  // namespace ebench

#endif
