// "A call uses at most as many threads as its workspace has room for: a
// workspace sized for one thread gives a serial call" (docs/contract.md),
// proven at run time for every op with a workspace, projections included.
// This program replaces libgomp's GOMP_parallel (the call GCC emits for
// every `#pragma omp parallel`) with one that counts the regions the
// library opens and forwards to libgomp's. With OpenMP set to 4 threads, a
// call given its one-thread workspace must open none; the same call given
// a workspace for 4 threads opens some (so the count sees them).
//
// GCC, libgomp and a native glibc build only (tests/library_tests.cmake).
#include <doctest/doctest.h>

#include <edgeattn/edgeattn.h>

#include "call_helpers.hpp"
#include "path_helpers.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#if defined(_OPENMP) && defined(__GLIBC__) && !defined(__clang__)
#define EDGEATTN_COUNTS_REGIONS 1
#include <dlfcn.h>
#include <omp.h>

namespace {
std::atomic<long> g_regions{0};
}

extern "C" void GOMP_parallel(void (*fn)(void *), void *data, unsigned num_threads, unsigned flags) {
    using parallel_fn = void (*)(void (*)(void *), void *, unsigned, unsigned);
    static const parallel_fn libgomp = reinterpret_cast<parallel_fn>(dlsym(RTLD_NEXT, "GOMP_parallel"));
    g_regions.fetch_add(1, std::memory_order_relaxed);
    libgomp(fn, data, num_threads, flags);
}
#endif

namespace {

using test_calls::dense_workspace_bytes;
using test_calls::fp32_weights;
using test_calls::workspace_bytes;
using test_paths::random_floats;

// The parallel regions `call` opens with OpenMP at 4 threads, given
// `bytes` of workspace (the call REQUIREs its own status).
long regions_of(size_t bytes, const std::function<void(void *, size_t)> &call) {
    std::vector<float> ws(bytes / sizeof(float) + 1);
#if defined(EDGEATTN_COUNTS_REGIONS)
    omp_set_num_threads(4);
    const long before = g_regions.load();
    call(ws.data(), bytes);
    const long opened = g_regions.load() - before;
    omp_set_num_threads(8);
    return opened;
#else
    call(ws.data(), bytes);
    return 0;
#endif
}

// One op: serial on its one-thread workspace, parallel on a 4-thread one.
void check_op(const std::string &what, size_t one_thread_bytes, size_t four_thread_bytes,
              const std::function<void(void *, size_t)> &call) {
    INFO(what);
    CHECK(four_thread_bytes > one_thread_bytes);
    CHECK(regions_of(one_thread_bytes, call) == 0);
#if defined(EDGEATTN_COUNTS_REGIONS)
    CHECK(regions_of(four_thread_bytes, call) > 0);
#endif
}

}  // namespace

TEST_CASE("a workspace sized for one thread gives a serial call, projections included") {
#if !defined(EDGEATTN_COUNTS_REGIONS)
    MESSAGE("not counted: needs GCC's OpenMP on glibc");
#endif
    const size_t rows = 512, d = 128, h = 128, heads = 4;
    const auto x = random_floats(rows * d, 1), W = random_floats(h * d, 2, 0.1f), Wo = random_floats(h * h, 3, 0.1f);
    const edgeattn_weights w = fp32_weights(W.data(), W.data(), W.data(), Wo.data());

    const edgeattn_attention_dims mha_dims{1, rows, rows, d, d, d, h, heads, 0, 0};
    check_op("mha", workspace_bytes(EDGEATTN_OP_MHA, mha_dims, 1), workspace_bytes(EDGEATTN_OP_MHA, mha_dims, 4),
             [&](void *ws, size_t bytes) {
        std::vector<float> out(rows * h);
        REQUIRE(edgeattn_mha(&mha_dims, x.data(), x.data(), x.data(), &w, nullptr, ws, bytes, out.data(), nullptr) ==
                EDGEATTN_OK);
    });

    const edgeattn_attention_dims add_dims{1, rows, rows, d, d, d, h, 0, 0, 0};
    const edgeattn_weights aw = fp32_weights(W.data(), W.data(), W.data(), nullptr);
    check_op("additive", workspace_bytes(EDGEATTN_OP_ADDITIVE, add_dims, 1),
             workspace_bytes(EDGEATTN_OP_ADDITIVE, add_dims, 4), [&](void *ws, size_t bytes) {
        std::vector<float> out(rows * d);
        REQUIRE(edgeattn_additive(&add_dims, x.data(), x.data(), x.data(), &aw, nullptr, ws, bytes, out.data(),
                                  nullptr) == EDGEATTN_OK);
    });

    const edgeattn_attention_dims sdpa_dims{1, rows, rows, d, d, d, 0, 0, 0, 0};
    check_op("sdpa", workspace_bytes(EDGEATTN_OP_SDPA, sdpa_dims, 1), workspace_bytes(EDGEATTN_OP_SDPA, sdpa_dims, 4),
             [&](void *ws, size_t bytes) {
        std::vector<float> out(rows * d);
        REQUIRE(edgeattn_sdpa(&sdpa_dims, x.data(), x.data(), x.data(), nullptr, ws, bytes, out.data(), nullptr) ==
                EDGEATTN_OK);
    });

    const edgeattn_dense_dims dense_dims{rows, d, h};
    check_op("dense", dense_workspace_bytes(dense_dims, 1), dense_workspace_bytes(dense_dims, 4),
             [&](void *ws, size_t bytes) {
        std::vector<float> y(rows * h);
        const edgeattn_weight_matrix Wm = test_calls::f32(W.data());
        REQUIRE(edgeattn_dense(&dense_dims, x.data(), &Wm, nullptr, ws, bytes, y.data()) == EDGEATTN_OK);
    });

    // The int8 arithmetic's projections: their slots, one per thread the
    // workspace is sized for.
    std::vector<int8_t> W8(h * d);
    for (size_t i = 0; i < W8.size(); ++i) W8[i] = static_cast<int8_t>(i * 37 % 255 - 127);
    const std::vector<float> scales(h, 0.01f);
    const edgeattn_weight_matrix M8 = {EDGEATTN_DTYPE_INT8, W8.data(), scales.data(), EDGEATTN_ARITHMETIC_INT8};
    const edgeattn_weights w8{M8, M8, M8, M8, nullptr, nullptr, nullptr, nullptr};
    const auto integer_bytes = [](edgeattn_workspace_request r, size_t threads) {
        r.arithmetic = EDGEATTN_ARITHMETIC_INT8;
        return test_calls::size_of(r, threads);
    };
    check_op("mha, int8 arithmetic", integer_bytes(test_calls::request(EDGEATTN_OP_MHA, mha_dims, 0), 1),
             integer_bytes(test_calls::request(EDGEATTN_OP_MHA, mha_dims, 0), 4), [&](void *ws, size_t bytes) {
        std::vector<float> out(rows * h);
        REQUIRE(edgeattn_mha(&mha_dims, x.data(), x.data(), x.data(), &w8, nullptr, ws, bytes, out.data(), nullptr) ==
                EDGEATTN_OK);
    });
    check_op("dense, int8 arithmetic", integer_bytes(test_calls::dense_request(dense_dims), 1),
             integer_bytes(test_calls::dense_request(dense_dims), 4), [&](void *ws, size_t bytes) {
        std::vector<float> y(rows * h);
        REQUIRE(edgeattn_dense(&dense_dims, x.data(), &M8, nullptr, ws, bytes, y.data()) == EDGEATTN_OK);
    });

    // A cache store projects its tokens; an attend projects its queries
    // and output.
    const size_t capacity = rows;
    const edgeattn_attention_dims cache_dims{1, rows, capacity, d, d, d, h, heads, 0, 0};
    const edgeattn_kv_cache_config config{1, heads, h / heads, capacity, EDGEATTN_DTYPE_F32, 0, 0, 0};
    std::vector<float> memory(edgeattn_kv_cache_memory_size(&config) / 4);
    edgeattn_kv_cache cache;
    check_op("cache store", workspace_bytes(EDGEATTN_OP_KV_CACHE_STORE, cache_dims, 1, rows),
             workspace_bytes(EDGEATTN_OP_KV_CACHE_STORE, cache_dims, 4, rows), [&](void *ws, size_t bytes) {
        REQUIRE(edgeattn_kv_cache_setup(&cache, &config, memory.data(), memory.size() * 4) == EDGEATTN_OK);
        REQUIRE(edgeattn_kv_cache_store(&cache, &cache_dims, rows, x.data(), x.data(), &w, nullptr, ws, bytes) ==
                EDGEATTN_OK);
    });
    check_op("cache attend", workspace_bytes(EDGEATTN_OP_KV_CACHE_ATTEND, cache_dims, 1),
             workspace_bytes(EDGEATTN_OP_KV_CACHE_ATTEND, cache_dims, 4), [&](void *ws, size_t bytes) {
        std::vector<float> out(rows * h);
        REQUIRE(edgeattn_kv_cache_attend(&cache, &cache_dims, x.data(), &w, nullptr, ws, bytes, out.data(), nullptr) ==
                EDGEATTN_OK);
    });
}
