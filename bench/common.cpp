#include "common.hpp"

#include <cstdint>
#include <new>
#include <thread>

namespace ebench {

double sdpa_flops(const AttentionShape &s) {
    // Q K^T and weights . V, each 2 * Q * K * d per head.
    return 4.0 * static_cast<double>(s.batch * s.heads) * static_cast<double>(s.seq) *
           static_cast<double>(s.seq) * static_cast<double>(s.head_dim());
}

double mha_flops(const AttentionShape &s) {
    // Four projections (q, k, v, o) of batch*seq rows by d_model x d_model.
    const double rows = static_cast<double>(s.batch * s.seq), d = static_cast<double>(s.d_model);
    return 4.0 * 2.0 * rows * d * d + sdpa_flops(s);
}

std::string name(const char *op, const char *impl, std::initializer_list<std::size_t> dims) {
    std::string n = std::string(op) + "/" + impl + "/";
    bool first = true;
    for (std::size_t d : dims) {
        if (!first) n += "x";
        n += std::to_string(d);
        first = false;
    }
    return n;
}

static void *aligned_bytes(std::size_t n) {
    const std::size_t rounded = (n + 63) / 64 * 64;
    void *p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
    if (!p) throw std::bad_alloc();
    return p;
}

Floats alloc_floats(std::size_t n) {
    return Floats(static_cast<float *>(aligned_bytes(n * sizeof(float))));
}

std::unique_ptr<unsigned char[], FreeDeleter> alloc_bytes(std::size_t n) {
    return std::unique_ptr<unsigned char[], FreeDeleter>(
        static_cast<unsigned char *>(aligned_bytes(n)));
}

void fill_random(float *x, std::size_t n, unsigned seed, float scale) {
    // xorshift32: fast, reproducible, the same on every platform.
    std::uint32_t s = seed * 2654435761u + 1u;
    for (std::size_t i = 0; i < n; ++i) {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        const float u = static_cast<float>(s >> 8) * (1.0f / 16777216.0f);  // [0, 1)
        x[i] = (2.0f * u - 1.0f) * scale;
    }
}

Floats random_floats(std::size_t n, unsigned seed, float scale) {
    Floats f = alloc_floats(n);
    fill_random(f.get(), n, seed, scale);
    return f;
}

int bench_threads() {
    for (const char *var : {"EDGEATTN_BENCH_THREADS", "OMP_NUM_THREADS"}) {
        if (const char *v = std::getenv(var)) {
            const int n = std::atoi(v);  // "4,2" (nested OpenMP) reads as 4
            if (n > 0) return n;
        }
    }
    const unsigned hw = std::thread::hardware_concurrency();
    return hw == 0 ? 1 : static_cast<int>(hw);
}

void set_flops(benchmark::State &state, double flops_per_iteration) {
    state.counters["FLOPS"] = benchmark::Counter(
        flops_per_iteration, benchmark::Counter::kIsIterationInvariantRate,
        benchmark::Counter::kIs1000);
}

void set_bytes(benchmark::State &state, double bytes_per_iteration) {
    state.SetBytesProcessed(static_cast<int64_t>(bytes_per_iteration) * state.iterations());
}

benchmark::internal::Benchmark *configure(benchmark::internal::Benchmark *b) {
    return b->Unit(benchmark::kMicrosecond)->UseRealTime();
}

}  // namespace ebench
