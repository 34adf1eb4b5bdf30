// The attention of a decode step alone, beside the bounds it is held to
// (bench/NOTES.md), one query per batch element over a full KV cache of L
// positions, projection-free (edgeattn_kv_cache_attend, W_q / W_o NONE):
//   decode_f32, decode_f16, decode_int8   the cache stored in that type;
//   decode_int8_integer                   the int8 cache in the int8
//                                         arithmetic (integer scores);
//   read_kv                               the same fp32 keys and values
//                                         summed plainly (the bandwidth bound
//                                         of decode_f32);
//   fma_peak                              as many flops as decode's products
//                                         (4 x H x L x head_dim) in
//                                         independent fused multiply-adds
//                                         (the compute bound);
//   decode_f32_threads1 / _threads2       decode_f32 on that many threads
//                                         (its workspace sized for them),
//                                         whatever the program's thread count.
// read_kv and fma_peak use the vector width of the path edgeattn runs
// (EDGEATTN_ISA=avx2 forces AVX2; else AVX-512 where the CPU has it).
#include <cstdlib>
#include <cstring>

#if defined(_OPENMP)
#include <omp.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "decoder_fixtures.hpp"

namespace ebench {
namespace {

bool use_avx512() {
#if defined(__x86_64__)
    const char *isa = std::getenv("EDGEATTN_ISA");
    if (isa && std::strcmp(isa, "avx512") != 0) return false;
    return __builtin_cpu_supports("avx512f");
#else
    return false;
#endif
}

#if defined(__x86_64__)
// Sum of n floats (n a multiple of 64) with eight independent accumulators.
__attribute__((target("avx2"), noinline)) float read_avx2(const float *x, size_t n) {
    __m256 acc[8];
    for (auto &a : acc) a = _mm256_setzero_ps();
    for (size_t i = 0; i < n; i += 64)
        for (size_t j = 0; j < 8; ++j) acc[j] = _mm256_add_ps(acc[j], _mm256_load_ps(x + i + 8 * j));
    for (size_t j = 1; j < 8; ++j) acc[0] = _mm256_add_ps(acc[0], acc[j]);
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, acc[0]);
    return lanes[0] + lanes[7];
}
__attribute__((target("avx512f"), noinline)) float read_avx512(const float *x, size_t n) {
    __m512 acc[4];
    for (auto &a : acc) a = _mm512_setzero_ps();
    for (size_t i = 0; i < n; i += 64)
        for (size_t j = 0; j < 4; ++j) acc[j] = _mm512_add_ps(acc[j], _mm512_load_ps(x + i + 16 * j));
    for (size_t j = 1; j < 4; ++j) acc[0] = _mm512_add_ps(acc[0], acc[j]);
    return _mm512_reduce_add_ps(acc[0]);
}
// `rounds` rounds of 12 independent fused multiply-adds (12 x 8 x 2 flops;
// AVX-512 12 x 16 x 2): more chains than the FMA units' latency times
// their count, so the units never wait.
__attribute__((target("avx2,fma"), noinline)) float fma_avx2(size_t rounds) {
    __m256 acc[12];
    for (size_t j = 0; j < 12; ++j) acc[j] = _mm256_set1_ps(static_cast<float>(j));
    const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-3f);
    for (size_t i = 0; i < rounds; ++i)
        for (size_t j = 0; j < 12; ++j) acc[j] = _mm256_fmadd_ps(acc[j], a, b);
    for (size_t j = 1; j < 12; ++j) acc[0] = _mm256_add_ps(acc[0], acc[j]);
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, acc[0]);
    return lanes[0];
}
__attribute__((target("avx512f"), noinline)) float fma_avx512(size_t rounds) {
    __m512 acc[12];
    for (size_t j = 0; j < 12; ++j) acc[j] = _mm512_set1_ps(static_cast<float>(j));
    const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-3f);
    for (size_t i = 0; i < rounds; ++i)
        for (size_t j = 0; j < 12; ++j) acc[j] = _mm512_fmadd_ps(acc[j], a, b);
    for (size_t j = 1; j < 12; ++j) acc[0] = _mm512_add_ps(acc[0], acc[j]);
    return _mm512_reduce_add_ps(acc[0]);
}
#endif

// The products' flops of one decode step: scores and weighted sum, each
// 2 x head_dim per query head and key.
double decode_flops(const DecoderShape &s) {
    return 4.0 * static_cast<double>(s.batch * s.heads * s.len * s.head_dim());
}

double element_bytes_of(edgeattn_dtype storage) {
    return storage == EDGEATTN_DTYPE_INT8 ? 1.0 : storage == EDGEATTN_DTYPE_F16 ? 2.0 : 4.0;
}

// threads 0: the program's thread count, its workspace from workspace_size.
void decode_in(benchmark::State &state, DecoderShape s, edgeattn_dtype storage, int threads,
               edgeattn_arithmetic arithmetic) {
    const size_t h = s.d_model, h_kv = s.kv_heads * s.head_dim();
    edgeattn_attention_dims dims = decode_dims(s, s.len);
    PackedWeights w(s, dims);
    if (w.status) return fail(state, "edgeattn_mha_pack", w.status);
    FilledCache c(s, s.len, dims, w, storage, 0, 0, 0, arithmetic);
    if (c.status) return fail(state, c.failed, c.status);
    dims.key_size = dims.value_size = h_kv;
    edgeattn_weights none{};
    none.W_q.type = none.W_k.type = none.W_v.type = none.W_o.type = EDGEATTN_DTYPE_NONE;
    Floats q = random_floats(s.batch * h, 12), out = alloc_floats(s.batch * h);
    edgeattn_workspace_request request{};
    request.op = EDGEATTN_OP_KV_CACHE_ATTEND;
    request.dims = dims;
    request.arithmetic = arithmetic;
    size_t bytes = 0;
    const size_t team = threads > 0 ? static_cast<size_t>(threads) : max_threads();
    if (edgeattn_status st = edgeattn_workspace_size(&request, 1, team, &bytes))
        return fail(state, "edgeattn_workspace_size", st);
    auto ws = alloc_bytes(bytes);
#if defined(_OPENMP)
    if (threads > 0) omp_set_num_threads(threads);
#endif
    auto step = [&] {
        return edgeattn_kv_cache_attend(&c.cache, &dims, q.get(), &none, nullptr, ws.get(), bytes, out.get(), nullptr);
    };
    if (edgeattn_status st = step()) return fail(state, "edgeattn_kv_cache_attend", st);
    for (auto _ : state) {
        step();
        benchmark::DoNotOptimize(out.get());
        benchmark::ClobberMemory();
    }
#if defined(_OPENMP)
    if (threads > 0) omp_set_num_threads(bench_threads());
#endif
    set_bytes(state, s.cache_bytes() / 4.0 * element_bytes_of(storage));
    set_flops(state, decode_flops(s));
}

void decode(benchmark::State &state, DecoderShape s, edgeattn_dtype storage, int threads) {
    decode_in(state, s, storage, threads, EDGEATTN_ARITHMETIC_FLOAT);
}

void decode_integer(benchmark::State &state, DecoderShape s) {
    decode_in(state, s, EDGEATTN_DTYPE_INT8, 0, EDGEATTN_ARITHMETIC_INT8);
}

void read_kv(benchmark::State &state, DecoderShape s) {
    const size_t count = static_cast<size_t>(s.cache_bytes() / sizeof(float));
    Floats kv = random_floats(count, 14);
    const bool wide = use_avx512();
    for (auto _ : state) {
#if defined(__x86_64__)
        float total = wide ? read_avx512(kv.get(), count) : read_avx2(kv.get(), count);
#else
        float total = kv[0];
#endif
        benchmark::DoNotOptimize(total);
        benchmark::ClobberMemory();
    }
    set_bytes(state, s.cache_bytes());
    set_flops(state, decode_flops(s));
}

void fma_peak(benchmark::State &state, DecoderShape s) {
    const bool wide = use_avx512();
    size_t rounds = static_cast<size_t>(decode_flops(s) / (wide ? 384.0 : 192.0));
    for (auto _ : state) {
        benchmark::DoNotOptimize(rounds);  // not hoisted: the kernel is a pure function of it
#if defined(__x86_64__)
        float total = wide ? fma_avx512(rounds) : fma_avx2(rounds);
#else
        float total = static_cast<float>(rounds);
#endif
        benchmark::DoNotOptimize(total);
    }
    set_flops(state, decode_flops(s));
}

}  // namespace

void register_decode_speed_benchmarks() {
    // Heads of 64 (d_model 512), and of 128 (d_model 1024: Llama-style
    // grouped heads, where a score's lane reduction weighs half as much
    // beside its multiply-adds).
    constexpr DecoderShape shapes[] = {{1, 1024, 512, 8, 2},  {1, 4096, 512, 8, 2},  {1, 1024, 512, 8, 1},
                                       {1, 4096, 512, 8, 1},  {1, 4096, 512, 8, 8},  {1, 1024, 1024, 8, 2},
                                       {1, 4096, 1024, 8, 2}};
    for (const auto &s : shapes) {
        configure(benchmark::RegisterBenchmark(name("decode_f32", "edgeattn", s).c_str(), decode, s,
                                               EDGEATTN_DTYPE_F32, 0));
        configure(benchmark::RegisterBenchmark(name("decode_f16", "edgeattn", s).c_str(), decode, s,
                                               EDGEATTN_DTYPE_F16, 0));
        configure(benchmark::RegisterBenchmark(name("decode_int8", "edgeattn", s).c_str(), decode, s,
                                               EDGEATTN_DTYPE_INT8, 0));
        configure(benchmark::RegisterBenchmark(name("decode_int8_integer", "edgeattn", s).c_str(),
                                               decode_integer, s));
        configure(benchmark::RegisterBenchmark(name("read_kv", "edgeattn", s).c_str(), read_kv, s));
        configure(benchmark::RegisterBenchmark(name("fma_peak", "edgeattn", s).c_str(), fma_peak, s));
        configure(benchmark::RegisterBenchmark(name("decode_f32_threads1", "edgeattn", s).c_str(), decode, s,
                                               EDGEATTN_DTYPE_F32, 1));
        configure(benchmark::RegisterBenchmark(name("decode_f32_threads2", "edgeattn", s).c_str(), decode, s,
                                               EDGEATTN_DTYPE_F32, 2));
    }
}

}  // namespace ebench
