// The kernels of every path this machine runs, against float64 references:
// exp's error bound and range, the packed and in-place matrix products, the
// streaming softmax block, the grouped masked softmax rows; and every tail
// against a fault-on-access page after its data. The path AUTO picks
// against the CPU's feature flags and the paths built in, and each path's
// tables holding that path's own kernels. (Ops built from them are tested
// against the golden cases.)
#include <doctest/doctest.h>

#include "edgeattn/convert.h"
#include "kernels/half.hpp"
#include "kernels/kernel_table.hpp"
#include "edgeattn/detail/workspace_layout.hpp"
#include "decode_rows.hpp"
#include "linear.hpp"
#include "path_helpers.hpp"
#include "validate.hpp"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

#if defined(__unix__)
#include <sys/mman.h>
#include <unistd.h>
#endif

using edgeattn::detail::kernel_table;

namespace {

std::vector<const kernel_table *> supported_paths() {
    std::vector<const kernel_table *> paths;
    for (edgeattn_isa isa : test_paths::paths()) {
        REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
        paths.push_back(&edgeattn::detail::active_kernels());
    }
    REQUIRE(edgeattn_set_isa(EDGEATTN_ISA_AUTO) == EDGEATTN_OK);
    REQUIRE(!paths.empty());
    return paths;
}

// Distance in units in the last place between a float and the true value.
double ulp_error(float got, double truth) {
    const double ulp = std::ldexp(1.0, std::ilogb(static_cast<float>(truth)) - 23);
    return std::fabs(got - truth) / ulp;
}

float float_from_bits(uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

}  // namespace

namespace {

// The paths in AUTO's order of preference, the best first; the plain C++
// path, which every build has, is what AUTO falls back to.
const edgeattn_isa best_first[] = {EDGEATTN_ISA_AVX512, EDGEATTN_ISA_AVX2, EDGEATTN_ISA_SSE2, EDGEATTN_ISA_NEON,
                                   EDGEATTN_ISA_HELIUM};

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define EDGEATTN_TEST_X86_FEATURES 1
// CPUID leaf 1, ECX bit 29: F16C, which the AVX2 path's fp16 widening uses.
bool x86_has_f16c() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx >> 29 & 1u);
}
#endif

// Whether this CPU has what a path needs, from its own feature flags:
// SSE2; AVX2 with FMA and F16C; AVX-512 F and DQ; NEON and Helium are
// instruction sets of the target itself (a program built for AArch64, or
// ARMv7 with NEON, runs only where they are).
bool cpu_runs(edgeattn_isa isa) {
    switch (isa) {
        case EDGEATTN_ISA_SCALAR: return true;
#if defined(EDGEATTN_TEST_X86_FEATURES)
        case EDGEATTN_ISA_SSE2: return __builtin_cpu_supports("sse2");
        case EDGEATTN_ISA_AVX2:
            return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && x86_has_f16c();
        case EDGEATTN_ISA_AVX512: return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
#endif
#if defined(__ARM_NEON)
        case EDGEATTN_ISA_NEON: return true;
#endif
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2)
        case EDGEATTN_ISA_HELIUM: return true;
#endif
        default: return false;
    }
}

// Whether the build has a path: the paths the build system compiled
// (EDGEATTN_TEST_KERNEL_PATHS, their names space-separated). A build that
// does not say has only the library's own word, edgeattn_isa_supported.
bool built_in(edgeattn_isa isa) {
#if defined(EDGEATTN_TEST_KERNEL_PATHS)
    const std::string names = std::string(" ") + EDGEATTN_TEST_KERNEL_PATHS + " ";
    return names.find(std::string(" ") + edgeattn_isa_name(isa) + " ") != std::string::npos;
#else
    return edgeattn_isa_supported(isa) != 0;
#endif
}

// The path the library chose at its first call, made here before main():
// with EDGEATTN_ISA unset, the choice AUTO makes by itself.
const edgeattn_isa path_at_first_call = edgeattn_current_isa();

}  // namespace

TEST_CASE("AUTO picks the best path the build has and this CPU runs, at the first call and when set") {
    CHECK(built_in(EDGEATTN_ISA_SCALAR));  // every build has it
    edgeattn_isa expected = EDGEATTN_ISA_SCALAR, best_supported = EDGEATTN_ISA_SCALAR;
    for (edgeattn_isa isa : best_first) {
        if (expected == EDGEATTN_ISA_SCALAR && built_in(isa) && cpu_runs(isa)) expected = isa;
        if (best_supported == EDGEATTN_ISA_SCALAR && edgeattn_isa_supported(isa)) best_supported = isa;
    }
    for (int i = EDGEATTN_ISA_SCALAR; i <= EDGEATTN_ISA_HELIUM; ++i) {
        const edgeattn_isa isa = static_cast<edgeattn_isa>(i);
        INFO("path " << std::string(edgeattn_isa_name(isa)) << ": built " << built_in(isa) << ", CPU runs it "
                     << cpu_runs(isa));
        CHECK(edgeattn_isa_supported(isa) == (built_in(isa) && cpu_runs(isa) ? 1 : 0));
    }
    INFO("expected " << std::string(edgeattn_isa_name(expected)) << ", the best supported "
                     << std::string(edgeattn_isa_name(best_supported)));
    CHECK(best_supported == expected);

    const char *forced = std::getenv("EDGEATTN_ISA");
    if (!forced || !*forced) {
        INFO("first call's path " << std::string(edgeattn_isa_name(path_at_first_call)));
        CHECK(path_at_first_call == expected);
    } else {
        MESSAGE("EDGEATTN_ISA=" << std::string(forced) << ": the first call's choice is not AUTO's");
    }
    test_paths::path_guard guard;
    REQUIRE(edgeattn_set_isa(EDGEATTN_ISA_SCALAR) == EDGEATTN_OK);  // away from it first
    REQUIRE(edgeattn_set_isa(EDGEATTN_ISA_AUTO) == EDGEATTN_OK);
    INFO("after edgeattn_set_isa(EDGEATTN_ISA_AUTO): " << std::string(edgeattn_isa_name(edgeattn_current_isa())));
    CHECK(edgeattn_current_isa() == expected);
    CHECK(edgeattn::detail::active_kernels().isa == expected);
}

namespace {

using kernel_pointer = void (*)();

template <class F>
kernel_pointer erased(F f) {
    return reinterpret_cast<kernel_pointer>(f);
}

// One path's kernels, every table: the kernel_table, its int8 and
// binary16 weight kernels, the additive and KV cache families, and the
// decode kernels where the path has them.
struct path_kernels {
    edgeattn_isa isa;
    const void *additive_table, *cache_table, *decode_table;
    std::vector<std::pair<std::string, kernel_pointer>> entries;
};

path_kernels kernels_of(const kernel_table &k) {
    using namespace edgeattn::detail;
    path_kernels p{k.isa, &additive_kernels_of(k), &cache_kernels_of(k), decode_kernels_for(k, 1, false), {}};
    auto add = [&](const char *name, kernel_pointer f) { p.entries.emplace_back(name, f); };
    if (k.gemm_packed) {  // a path that never packs has none of the three
        add("pack_transposed", erased(k.pack_transposed));
        add("pack", erased(k.pack));
        add("gemm_packed", erased(k.gemm_packed));
    }
    add("gemm_nt_direct", erased(k.gemm_nt_direct));
    add("gemm_nn_direct", erased(k.gemm_nn_direct));
    add("masked_softmax_rows", erased(k.masked_softmax_rows));
    add("online_softmax_block", erased(k.online_softmax_block));
    add("exp", erased(k.exp));
    add("exp_nonpositive", erased(k.exp_nonpositive));
    add("softcap", erased(k.softcap));
    add("add", erased(k.add));
    add("scale", erased(k.scale));
    add("add_scaled", erased(k.add_scaled));
    add("scale_final", erased(k.scale_final));
    add("widen_half", erased(k.widen_half));
    add("round_half", erased(k.round_half));
    const auto &int8_weights = stored_kernels(k, EDGEATTN_DTYPE_INT8), &half_weights = stored_kernels(k, EDGEATTN_DTYPE_F16);
    add("int8_weights.gemm_packed", erased(int8_weights.gemm_packed));
    add("int8_weights.gemm_nt_direct", erased(int8_weights.gemm_nt_direct));
    add("half_weights.gemm_packed", erased(half_weights.gemm_packed));
    add("half_weights.gemm_nt_direct", erased(half_weights.gemm_nt_direct));
    add("additive.scores_row", erased(additive_kernels_of(k).scores_row));
    add("cache.int8_values", erased(cache_kernels_of(k).int8_values));
    add("cache.half_values", erased(cache_kernels_of(k).half_values));
    if (const decode_kernel_table *d = decode_kernels_for(k, 1, false)) {
        add("decode.f32_values", erased(d->f32_values));
        add("decode.int8_values", erased(d->int8_values));
        add("decode.half_values", erased(d->half_values));
        add("decode.f32_scores", erased(d->f32_scores));
        add("decode.int8_scores", erased(d->int8_scores));
        add("decode.half_scores", erased(d->half_scores));
    }
    return p;
}

}  // namespace

// Each path's tables hold that path's own kernels: every entry is a
// template instantiated for the path's batch type in the path's own
// translation unit (an anonymous namespace, compiled with the path's
// flags), so no function belongs to two paths, and one path's kernel in
// another's table runs with the wrong instruction set, which the results
// alone may not show (they stay within tolerance). No entry is meant to be
// shared, between paths or between two entries of one path. The one thing
// a path may lack is the decode table: the plain C++ path has none (it
// decodes through the streaming rows), so it has no decode entries to
// compare and decode_kernels_for gives it nullptr.
// The ops with a table of their own (the masked softmax, the positional
// encoding's addition) run the kernel of the path in use, the one its
// kernel_table holds.
TEST_CASE("the masked softmax's and the addition's own tables follow the path in use") {
    for (const kernel_table *k : supported_paths()) {
        INFO("path " << std::string(edgeattn_isa_name(k->isa)));
        REQUIRE(edgeattn_set_isa(k->isa) == EDGEATTN_OK);
        CHECK(edgeattn::detail::active_path() == k->isa);
        CHECK((&edgeattn::detail::active_kernels() == k));
        CHECK((erased(edgeattn::detail::active_softmax_kernels().masked_softmax_rows) == erased(k->masked_softmax_rows)));
        CHECK((erased(edgeattn::detail::active_add_kernels().add) == erased(k->add)));
    }
    REQUIRE(edgeattn_set_isa(EDGEATTN_ISA_AUTO) == EDGEATTN_OK);
}

TEST_CASE("every path's kernel tables, nested and family ones included, hold that path's own kernels") {
    std::vector<path_kernels> all;
    for (const kernel_table *k : supported_paths()) all.push_back(kernels_of(*k));
    for (const path_kernels &p : all) {
        INFO("path " << std::string(edgeattn_isa_name(p.isa)));
        CHECK((p.isa == EDGEATTN_ISA_SCALAR) == (p.decode_table == nullptr));
        for (const auto &e : p.entries) {
            INFO("entry " << e.first);
            CHECK((e.second != nullptr));
        }
        for (std::size_t a = 0; a < p.entries.size(); ++a)
            for (std::size_t b = a + 1; b < p.entries.size(); ++b) {
                INFO("entries " << p.entries[a].first << " and " << p.entries[b].first);
                CHECK((p.entries[a].second != p.entries[b].second));
            }
    }
    std::size_t pairs = 0;
    for (std::size_t x = 0; x < all.size(); ++x)
        for (std::size_t y = x + 1; y < all.size(); ++y) {
            const path_kernels &p = all[x], &q = all[y];
            INFO("paths " << std::string(edgeattn_isa_name(p.isa)) << " and " << std::string(edgeattn_isa_name(q.isa)));
            ++pairs;
            CHECK(p.isa != q.isa);
            CHECK((p.additive_table != q.additive_table));
            CHECK((p.cache_table != q.cache_table));
            CHECK((p.decode_table == nullptr || p.decode_table != q.decode_table));
            for (const auto &e : p.entries)
                for (const auto &f : q.entries) {
                    if (e.second != f.second) continue;
                    INFO(std::string(edgeattn_isa_name(p.isa)) << "'s " << e.first << " is "
                                                               << std::string(edgeattn_isa_name(q.isa)) << "'s "
                                                               << f.first);
                    CHECK((e.second != f.second));
                }
        }
    MESSAGE(all.size() << " paths, " << pairs << " pairs compared");
}

// Built for size, the plain C++ path reads every operand in place: its
// table has no packing kernels, and the products that would pack read W,
// keys and values where they lie (the packed calls' tests run through it).
TEST_CASE("the plain C++ path built for size never packs; every other path packs") {
#if defined(__OPTIMIZE_SIZE__)
    constexpr bool size_build = true;
#else
    constexpr bool size_build = false;
#endif
    for (const kernel_table *k : supported_paths()) {
        INFO("path " << std::string(edgeattn_isa_name(k->isa)));
        const bool never_packs = size_build && k->isa == EDGEATTN_ISA_SCALAR;
        CHECK((k->pack_transposed == nullptr) == never_packs);
        CHECK((k->pack == nullptr) == never_packs);
        CHECK((k->gemm_packed == nullptr) == never_packs);
    }
}

// The overlap test every call makes, on spans at made-up addresses (never
// read) at both ends of the address space, against the exact intervals in
// arithmetic twice as wide: a span running past the top overlaps
// everything from its start on, an empty or null one nothing; outputs
// against inputs, more inputs and each other, more outputs than one chunk
// of 8 included.
TEST_CASE("overlap checks: spans at both ends of the address space against exact intervals") {
    using edgeattn::detail::tensor_span;
    std::mt19937_64 rng(99);
    const uintptr_t top = std::numeric_limits<uintptr_t>::max();
    auto address = [&]() -> uintptr_t {
        const uintptr_t offset = rng() % 48;
        switch (rng() % 3) {
            case 0: return offset;  // 0: a null span
            case 1: return top - offset;
            default: return top / 2 + offset;
        }
    };
    auto span = [&]() {
        const std::size_t element = std::size_t{1} << (rng() % 3);  // 1, 2 or 4 bytes
        const std::size_t count = rng() % 5 == 0 ? top / element - rng() % 4 : rng() % 20;
        return tensor_span{reinterpret_cast<const void *>(address()), count, element};
    };
    auto overlap = [](const tensor_span &a, const tensor_span &b) {
#if defined(__SIZEOF_INT128__)
        using wide = unsigned __int128;
#else
        using wide = std::uint64_t;  // 32-bit addresses
        static_assert(sizeof(uintptr_t) <= 4, "a type twice as wide as an address");
#endif
        const wide a0 = reinterpret_cast<uintptr_t>(a.data), b0 = reinterpret_cast<uintptr_t>(b.data);
        const wide a1 = a0 + wide(a.count) * a.element_bytes, b1 = b0 + wide(b.count) * b.element_bytes;
        return a0 != 0 && b0 != 0 && a1 > a0 && b1 > b0 && (a0 > b0 ? a0 : b0) < (a1 < b1 ? a1 : b1);
    };
    std::size_t overlapping = 0, disjoint = 0;
    for (int trial = 0; trial < 20000; ++trial) {
        const std::size_t outputs_n = 1 + rng() % 10, inputs_n = rng() % 5, more_n = rng() % 3;
        std::vector<tensor_span> outputs, inputs, more;
        for (std::size_t i = 0; i < outputs_n; ++i) outputs.push_back(span());
        for (std::size_t i = 0; i < inputs_n; ++i) inputs.push_back(span());
        for (std::size_t i = 0; i < more_n; ++i) more.push_back(span());
        bool want = false;
        for (std::size_t o = 0; o < outputs_n; ++o) {
            for (const tensor_span &in : inputs) want = want || overlap(outputs[o], in);
            for (const tensor_span &in : more) want = want || overlap(outputs[o], in);
            for (std::size_t p = 0; p < o; ++p) want = want || overlap(outputs[o], outputs[p]);
        }
        const edgeattn_status got = edgeattn::detail::check_disjoint(outputs.data(), outputs_n, inputs.data(),
                                                                      inputs_n, more.data(), more_n);
        INFO("trial " << trial);
        REQUIRE(got == (want ? EDGEATTN_ERR_OVERLAP : EDGEATTN_OK));
        ++(want ? overlapping : disjoint);
    }
    CHECK(overlapping > 1000);
    CHECK(disjoint > 1000);
    // A float at the top word and a byte at the top address.
    const tensor_span word{reinterpret_cast<const void *>(top - 3), 1, 4}, byte{reinterpret_cast<const void *>(top), 1, 1};
    CHECK(edgeattn::detail::check_disjoint(&word, 1, &byte, 1) == EDGEATTN_ERR_OVERLAP);
    CHECK(edgeattn::detail::check_disjoint(&byte, 1, &byte, 1) == EDGEATTN_ERR_OVERLAP);
}

TEST_CASE("exp: at most 2 ULP on [-87.33, 88.37], 0 below, inf above, NaN kept") {
    for (const kernel_table *k : supported_paths()) {
        INFO("path " << std::string(edgeattn_isa_name(k->isa)));
        // Every 127th bit pattern of the whole float line, both signs, in chunks.
        double worst = 0.0;
        float worst_at = 0.0f;
        size_t in_range = 0, wrong_outside = 0;
        std::vector<float> x, y;
        for (uint64_t start = 0; start < (uint64_t(1) << 32); start += uint64_t(127) << 16) {
            x.clear();
            for (uint64_t bits = start; bits < start + (uint64_t(127) << 16) && bits < (uint64_t(1) << 32); bits += 127) {
                const float f = float_from_bits(static_cast<uint32_t>(bits));
                if (std::isfinite(f)) x.push_back(f);
            }
            y.resize(x.size());
            k->exp(x.data(), y.data(), x.size());
            for (size_t i = 0; i < x.size(); ++i) {
                if (x[i] < -87.33654475f) {
                    wrong_outside += y[i] != 0.0f;
                } else if (x[i] > 88.37626266f) {
                    wrong_outside += !std::isinf(y[i]);
                } else {
                    ++in_range;
                    const double e = ulp_error(y[i], std::exp(static_cast<double>(x[i])));
                    if (e > worst) worst = e, worst_at = x[i];
                }
            }
        }
        INFO("max error " << worst << " ULP at x = " << worst_at << " over " << in_range << " points");
        CHECK(in_range > 1000000);
        CHECK(wrong_outside == 0);
        CHECK(worst <= 2.0);
        const float specials[] = {std::numeric_limits<float>::quiet_NaN(), -INFINITY, INFINITY, 0.0f, -0.0f};
        float out[5];
        k->exp(specials, out, 5);
        CHECK(std::isnan(out[0]));
        CHECK(out[1] == 0.0f);
        CHECK(std::isinf(out[2]));
        CHECK(out[3] == 1.0f);
        CHECK(out[4] == 1.0f);
    }
}

TEST_CASE("softcap: tanh within 5 ULP over the float line, c tanh(x / c) within 7, NaN kept, +-inf to +-c") {
    for (const kernel_table *k : supported_paths()) {
        INFO("path " << std::string(edgeattn_isa_name(k->isa)));
        for (float c : {1.0f, 30.0f, 0.125f}) {
            // tanh itself over every 127th float; the other caps, which only
            // scale its argument and result, over every 1651st (the suite
            // also runs under valgrind).
            const uint64_t stride = c == 1.0f ? 127 : 1651;
            double worst = 0.0;
            float worst_at = 0.0f;
            size_t points = 0;
            std::vector<float> x;
            for (uint64_t start = 0; start < (uint64_t(1) << 32); start += stride << 16) {
                x.clear();
                for (uint64_t bits = start; bits < start + (stride << 16) && bits < (uint64_t(1) << 32);
                     bits += stride) {
                    const float f = float_from_bits(static_cast<uint32_t>(bits));
                    // Normal results only: a subnormal c tanh(x / c) has no ULP scale of its own.
                    if (std::isfinite(f) && std::fabs(f) >= 1e-36f) x.push_back(f);
                }
                std::vector<float> y = x;
                k->softcap(y.data(), y.size(), c);
                for (size_t i = 0; i < x.size(); ++i) {
                    ++points;
                    const double e = ulp_error(y[i], c * std::tanh(static_cast<double>(x[i]) / c));
                    if (e > worst) worst = e, worst_at = x[i];
                }
            }
            INFO("c " << c << ": max error " << worst << " ULP at x = " << worst_at << " over " << points);
            CHECK(points > 1000000);
            CHECK(worst <= (c == 1.0f ? 5.0 : 7.0));
            float specials[] = {std::numeric_limits<float>::quiet_NaN(), -INFINITY, INFINITY, 0.0f, -0.0f};
            k->softcap(specials, 5, c);
            CHECK(std::isnan(specials[0]));
            CHECK(specials[1] == -c);
            CHECK(specials[2] == c);
            CHECK(specials[3] == 0.0f);
            CHECK(specials[4] == 0.0f);
        }
    }
}

TEST_CASE("softmax's exp for x <= 0: at most 2 ULP on [-87.33, 0], tiny below, NaN kept") {
    for (const kernel_table *k : supported_paths()) {
        INFO("path " << std::string(edgeattn_isa_name(k->isa)));
        std::vector<float> x, y;
        for (float v = 0.0f; v > -87.33f; v = std::nextafter(v, -INFINITY) - 1e-5f * std::fabs(v)) x.push_back(v);
        const size_t in_range = x.size();
        for (float v : {-87.4f, -100.0f, -1e6f, -INFINITY, std::numeric_limits<float>::quiet_NaN()}) x.push_back(v);
        y.resize(x.size());
        k->exp_nonpositive(x.data(), y.data(), x.size());
        double worst = 0.0;
        for (size_t i = 0; i < in_range; ++i) worst = std::fmax(worst, ulp_error(y[i], std::exp(double(x[i]))));
        INFO("max error " << worst << " ULP over " << in_range << " points");
        CHECK(in_range > 100000);
        CHECK(worst <= 2.0);
        for (size_t i = in_range; i + 1 < x.size(); ++i) CHECK((y[i] >= 0.0f && y[i] <= 1.2e-38f));
        CHECK(std::isnan(y.back()));
    }
}

TEST_CASE("packed matrix product against float64, every tile edge") {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (const kernel_table *k : supported_paths()) {
        INFO("path " << std::string(edgeattn_isa_name(k->isa)));
        for (size_t M : {1u, 5u, 8u, 13u}) for (size_t N : {1u, 3u, 32u, 37u, 70u}) for (size_t K : {1u, 7u, 64u, 300u}) {
            const size_t lda = K + 3, ldc = N + 2;
            std::vector<float> A(M * lda), Bnt(N * K), Bnn(K * N), bias(N), C(M * ldc, 0.5f);
            for (float &v : A) v = u(rng);
            for (float &v : Bnt) v = u(rng);
            for (size_t n = 0; n < N; ++n)
                for (size_t kk = 0; kk < K; ++kk) Bnn[kk * N + n] = Bnt[n * K + kk];
            for (float &v : bias) v = u(rng);
            std::vector<float> packed_t(K * (N + 64)), packed(K * (N + 64));
            const float alpha = 0.75f;
            const bool packs = k->gemm_packed != nullptr;
            if (packs) {
                k->pack_transposed(Bnt.data(), K, N, K, packed_t.data());
                k->pack(Bnn.data(), N, K, N, packed.data());
                // C = alpha A B^T + bias, then C += alpha A B
                k->gemm_packed(M, N, K, alpha, A.data(), lda, packed_t.data(), k->panel_width, bias.data(), C.data(), ldc, false);
                k->gemm_packed(M, N, K, alpha, A.data(), lda, packed.data(), k->panel_width, nullptr, C.data(), ldc, true);
            }
            double worst = 0.0;
            for (size_t i = 0; packs && i < M; ++i)
                for (size_t n = 0; n < N; ++n) {
                    double dot = 0.0;
                    for (size_t kk = 0; kk < K; ++kk) dot += double(A[i * lda + kk]) * Bnt[n * K + kk];
                    const double want = 2.0 * alpha * dot + bias[n];
                    worst = std::fmax(worst, std::fabs(C[i * ldc + n] - want) / (1.0 + std::fabs(want)));
                }
            // the unpacked product for few rows: D = alpha A B^T + bias
            std::vector<float> D(M * ldc, 0.5f);
            k->gemm_nt_direct(M, N, K, alpha, A.data(), lda, Bnt.data(), K, bias.data(), D.data(), ldc);
            double worst_direct = 0.0;
            for (size_t i = 0; i < M; ++i)
                for (size_t n = 0; n < N; ++n) {
                    double dot = 0.0;
                    for (size_t kk = 0; kk < K; ++kk) dot += double(A[i * lda + kk]) * Bnt[n * K + kk];
                    const double want = alpha * dot + bias[n];
                    worst_direct = std::fmax(worst_direct, std::fabs(D[i * ldc + n] - want) / (1.0 + std::fabs(want)));
                }
            INFO("M " << M << " N " << N << " K " << K);
            CHECK(worst < 1e-5);
            CHECK(worst_direct < 1e-5);
            for (size_t i = 0; i < M; ++i)  // the padding columns of C are untouched
                for (size_t n = N; n < ldc; ++n) REQUIRE((C[i * ldc + n] == 0.5f && D[i * ldc + n] == 0.5f));
        }
    }
}

// The plain C++ path's gemm_nt_direct (a few rows of A against weights
// read in place) takes tiles of 2 rows by 4 weight rows, or one row at a
// time: each output must have the same bits either way (each is the same
// chain of multiply-adds over k). Where the compiler may fuse a * b + c
// into one instruction (__FP_FAST_FMAF: AArch64, the FMA x86 paths), it
// may fuse it in one kernel and not the other, and the final
// sum * alpha + bias can round differently; so this holds the plain C++
// path of a build without fused multiply-adds (x86-64's).
#if !defined(__FP_FAST_FMAF)
TEST_CASE("gemm_nt_direct: a row's bits do not depend on the rows beside it, plain C++ path") {
    std::mt19937 rng(17);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (const kernel_table *k : supported_paths()) {
        if (k->isa != EDGEATTN_ISA_SCALAR) continue;
        for (size_t M : {2u, 3u, 5u, 8u}) for (size_t N : {1u, 3u, 4u, 5u, 9u, 33u}) for (size_t K : {1u, 7u, 100u}) {
            INFO("M " << M << " N " << N << " K " << K);
            const size_t lda = K + 1, ldc = N + 1;
            std::vector<float> A(M * lda), W(N * K), bias(N), C(M * ldc, 0.5f), row(ldc, 0.5f);
            for (float &v : A) v = u(rng);
            for (float &v : W) v = u(rng);
            for (float &v : bias) v = u(rng);
            k->gemm_nt_direct(M, N, K, 0.3f, A.data(), lda, W.data(), K, bias.data(), C.data(), ldc);
            for (size_t i = 0; i < M; ++i) {
                k->gemm_nt_direct(1, N, K, 0.3f, A.data() + i * lda, lda, W.data(), K, bias.data(), row.data(), ldc);
                REQUIRE(std::memcmp(&C[i * ldc], row.data(), N * sizeof(float)) == 0);
                REQUIRE(C[i * ldc + N] == 0.5f);
            }
        }
    }
}
#endif

// A block of one to four rows (a decode token's projections) goes through
// wide tiles of several panels side by side, more rows through the row
// tiles: each row must come out with the same bits either way, and every
// stored type within the bar of a float64 product. N spans whole groups of
// panels and a remainder on every path; K two depth blocks.
TEST_CASE("packed products of 1 to 4 rows: the same bits as in a block of 5, every stored type") {
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    constexpr size_t all_rows = 5;
    for (const kernel_table *k : supported_paths()) {
        INFO("path " << std::string(edgeattn_isa_name(k->isa)));
        for (edgeattn_dtype type : {EDGEATTN_DTYPE_F32, EDGEATTN_DTYPE_INT8, EDGEATTN_DTYPE_F16})
            for (size_t N : {32u, 133u, 290u})
                for (size_t K : {9u, 300u}) {
                    INFO("type " << int(type) << " N " << N << " K " << K);
                    const size_t lda = K + 1, ldc = N + 3;
                    std::vector<float> A(all_rows * lda), Wf(N * K), scales(N), bias(N);
                    std::vector<int8_t> W8(N * K);
                    std::vector<uint16_t> W16(N * K);
                    for (float &v : A) v = u(rng);
                    for (float &v : bias) v = u(rng);
                    for (size_t j = 0; j < N; ++j) scales[j] = 0.01f + 0.001f * static_cast<float>(j % 7);
                    for (size_t i = 0; i < N * K; ++i) {
                        W8[i] = static_cast<int8_t>(static_cast<int>(rng() % 255) - 127);
                        Wf[i] = u(rng);
                    }
                    REQUIRE(edgeattn_float_to_half(N * K, Wf.data(), W16.data()) == EDGEATTN_OK);
                    REQUIRE(edgeattn_half_to_float(N * K, W16.data(), Wf.data()) == EDGEATTN_OK);
                    const void *data = type == EDGEATTN_DTYPE_INT8 ? static_cast<const void *>(W8.data())
                                       : type == EDGEATTN_DTYPE_F16 ? static_cast<const void *>(W16.data())
                                                                    : static_cast<const void *>(Wf.data());
                    const float *row_scales = type == EDGEATTN_DTYPE_INT8 ? scales.data() : nullptr;
                    size_t floats = 0;
                    REQUIRE(edgeattn::detail::packed_floats(K, N, floats));
                    std::vector<float> packed(floats);
                    edgeattn::detail::pack_weights_transposed(K, N, {type, data, row_scales}, packed.data());
                    // A path that never packs reads fp32 panels through
                    // gemm_nn_direct (linear.cpp; the packed calls' tests).
                    if (type == EDGEATTN_DTYPE_F32 && !k->gemm_packed) continue;
                    auto product = [&](size_t M, float *C) {
                        if (type == EDGEATTN_DTYPE_F32)
                            k->gemm_packed(M, N, K, 1.0f, A.data(), lda, packed.data(),
                                           edgeattn::detail::max_panel_width, bias.data(), C, ldc, false);
                        else
                            edgeattn::detail::stored_kernels(*k, type).gemm_packed(
                                M, N, K, A.data(), lda, packed.data(), row_scales, bias.data(), C, ldc);
                    };
                    std::vector<float> block(all_rows * ldc, 0.5f);
                    product(all_rows, block.data());
                    double worst = 0.0;
                    for (size_t i = 0; i < all_rows; ++i)
                        for (size_t j = 0; j < N; ++j) {
                            double dot = 0.0;
                            for (size_t kk = 0; kk < K; ++kk) {
                                const double w = type == EDGEATTN_DTYPE_INT8
                                                     ? double(scales[j]) * W8[j * K + kk] : double(Wf[j * K + kk]);
                                dot += double(A[i * lda + kk]) * w;
                            }
                            const double want = dot + bias[j];
                            worst = std::fmax(worst, std::fabs(block[i * ldc + j] - want) / (1.0 + std::fabs(want)));
                        }
                    CHECK(worst < 1e-5);
                    for (size_t M = 1; M < all_rows; ++M) {
                        std::vector<float> C(all_rows * ldc, 0.5f);
                        product(M, C.data());
                        for (size_t i = 0; i < M; ++i) {
                            INFO("rows " << M << " row " << i);
                            REQUIRE(std::memcmp(&C[i * ldc], &block[i * ldc], N * sizeof(float)) == 0);
                            for (size_t j = N; j < ldc; ++j) REQUIRE(C[i * ldc + j] == 0.5f);
                        }
                    }
                }
    }
}

// A call's fp16 tensors widen through the path's kernel: every binary16
// value (subnormals, infinities, signed zeros) gives the bits of the
// library's exact conversion, at every length's tail; a NaN stays a NaN
// (F16C quiets a signalling one).
TEST_CASE("widen_half: all 65536 binary16 values exactly, every path") {
    std::vector<uint16_t> h(65536 + 7);
    for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<uint16_t>(i * 40503u);
    std::vector<float> want(h.size());
    REQUIRE(edgeattn_half_to_float(h.size(), h.data(), want.data()) == EDGEATTN_OK);
    for (const kernel_table *k : supported_paths()) {
        INFO("path " << std::string(edgeattn_isa_name(k->isa)));
        for (std::size_t n : {h.size(), std::size_t(1), std::size_t(15), std::size_t(33)}) {
            std::vector<float> got(n + 1, 0.5f);
            k->widen_half(h.data(), n, got.data());
            for (std::size_t i = 0; i < n; ++i) {
                if (std::isnan(want[i])) {
                    REQUIRE(std::isnan(got[i]));
                    continue;
                }
                INFO("binary16 bits " << h[i]);
                REQUIRE(std::memcmp(&got[i], &want[i], sizeof(float)) == 0);
            }
            REQUIRE(got[n] == 0.5f);  // nothing past the end
        }
    }
}

// A call's fp16 outputs and a cache's fp16 rows round through the path's
// kernel: the bits of the library's scalar IEEE conversion, for every
// binary16 value, the midpoints between neighbours (ties to even) and a
// float on either side of each, overflow to infinity, subnormals, and
// NaN payloads, at every length's tail.
TEST_CASE("round_half: the scalar conversion's bits, ties and NaN payloads included, every path") {
    std::vector<float> x;
    for (uint32_t h = 0; h < 0x10000u; ++h) {
        if ((h & 0x7C00u) == 0x7C00u) continue;  // infinities and NaN: below
        float lo = 0.0f, hi = 0.0f;
        const uint16_t a = static_cast<uint16_t>(h), b = static_cast<uint16_t>(h + 1);
        REQUIRE(edgeattn_half_to_float(1, &a, &lo) == EDGEATTN_OK);
        x.push_back(lo);
        if ((b & 0x7FFFu) == 0 || (b & 0x7C00u) == 0x7C00u) continue;  // no finite neighbour of this sign
        REQUIRE(edgeattn_half_to_float(1, &b, &hi) == EDGEATTN_OK);
        const float mid = static_cast<float>((static_cast<double>(lo) + hi) / 2);
        x.push_back(mid);
        x.push_back(std::nextafter(mid, 0.0f));
        x.push_back(std::nextafter(mid, 2.0f * mid));
    }
    for (uint32_t bits : {0x477FF000u, 0x477FEFFFu, 0x477FF001u, 0x47800000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u,
                          0xFFC00000u, 0x7F800001u, 0x7FFFFFFFu, 0xFFA5A5A5u, 0x00000001u, 0x80000001u, 0x33000000u,
                          0x33000001u, 0xB3000000u})
        x.push_back(edgeattn::detail::float_from_bits(bits));
    for (uint64_t bits = 0; bits < 0x100000000ull; bits += 65521u)
        x.push_back(edgeattn::detail::float_from_bits(static_cast<uint32_t>(bits)));
    std::vector<uint16_t> want(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) want[i] = edgeattn::detail::float_to_half_ieee(x[i]);
    // Spot checks of the reference itself: 65520 rounds to inf, the tie
    // 1 + 2^-11 to 1 (even), NaN keeps its sign, quiet bit and payload.
    REQUIRE(edgeattn::detail::float_to_half_ieee(65520.0f) == 0x7C00u);
    REQUIRE(edgeattn::detail::float_to_half_ieee(1.0f + 0x1p-11f) == 0x3C00u);
    REQUIRE(edgeattn::detail::float_to_half_ieee(edgeattn::detail::float_from_bits(0xFFA5A5A5u)) == 0xFF2Du);
    for (const kernel_table *k : supported_paths()) {
        INFO("path " << std::string(edgeattn_isa_name(k->isa)));
        for (std::size_t n : {x.size(), std::size_t(1), std::size_t(15), std::size_t(33)}) {
            std::vector<uint16_t> got(n + 1, 0x5555u);
            k->round_half(x.data(), n, got.data());
            for (std::size_t i = 0; i < n; ++i) {
                INFO("float bits " << edgeattn::detail::bits_of(x[i]));
                REQUIRE(got[i] == want[i]);
            }
            REQUIRE(got[n] == 0x5555u);  // nothing past the end
        }
    }
}

// A decode step's scores over int8 keys (widened in registers, times the
// keys' scales): against float64 within fp32's own bound for a sum of d
// products ((d + 2) ulp of the sum of magnitudes), at head sizes around
// the vector width and past 512, tiles of 1-4 rows and their mixes, query
// rows with a NaN or an infinity (which reach that row's scores only), and
// nothing written past a row's N scores.
TEST_CASE("int8 decode scores: within fp32's bound of float64, every path") {
    std::mt19937 rng(20261126);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_int_distribution<int> byte(-127, 127);
    for (const kernel_table *k : supported_paths()) {
        const edgeattn::detail::decode_kernel_table *dk = edgeattn::detail::decode_kernels_for(*k, 1, false);
        if (!dk) continue;  // the plain C++ path decodes through the streaming rows
        INFO("path " << std::string(edgeattn_isa_name(k->isa)));
        for (std::size_t d : {8, 16, 40, 64, 100, 512, 520})
            for (std::size_t M : {1, 2, 3, 4, 5, 8})
                for (std::size_t N : {1, 7, 33}) {
                    INFO("d " << d << " rows " << M << " keys " << N);
                    const std::size_t lda = d + 3, ldw = d + 5, ldc = N + 2;
                    std::vector<float> q(M * lda), scales(N), c(M * ldc, 0.25f);
                    std::vector<int8_t> keys(N * ldw);
                    for (float &x : q) x = normal(rng);
                    for (int8_t &x : keys) x = static_cast<int8_t>(byte(rng));
                    for (float &x : scales) x = 0.01f + 0.001f * static_cast<float>(byte(rng) + 127);
                    // Row 2: a NaN (every score NaN); row 3: an infinity (every
                    // score infinite, or NaN where its key element is 0).
                    if (M >= 3) q[2 * lda + d / 2] = NAN;
                    if (M >= 4) q[3 * lda + d / 3] = std::numeric_limits<float>::infinity();
                    const float alpha = 0.125f;
                    dk->int8_scores(M, N, d, alpha, q.data(), lda, keys.data(), ldw, scales.data(), c.data(), ldc);
                    for (std::size_t i = 0; i < M; ++i) {
                        for (std::size_t j = 0; j < N; ++j) {
                            const float got = c[i * ldc + j];
                            if (i == 2 && M >= 3) {
                                REQUIRE(std::isnan(got));
                                continue;
                            }
                            if (i == 3 && M >= 4) {
                                REQUIRE(!std::isfinite(got));
                                continue;
                            }
                            double dot = 0.0, magnitude = 0.0;
                            for (std::size_t x = 0; x < d; ++x) {
                                const double kx = keys[j * ldw + x];
                                dot += double(q[i * lda + x]) * kx;
                                magnitude += std::fabs(double(q[i * lda + x]) * kx);
                            }
                            const double factor = double(alpha) * scales[j];
                            const double bound = factor * magnitude * static_cast<double>(d + 2) * 0x1p-23;
                            REQUIRE(std::fabs(double(got) - factor * dot) <= bound);
                        }
                        for (std::size_t j = N; j < ldc; ++j) REQUIRE(c[i * ldc + j] == 0.25f);
                    }
                }
    }
}

TEST_CASE("streaming softmax blocks combine to the one-pass softmax") {
    std::mt19937 rng(11);
    std::normal_distribution<float> g(0.0f, 3.0f);
    for (const kernel_table *k : supported_paths()) {
        INFO("path " << std::string(edgeattn_isa_name(k->isa)));
        const size_t n = 300, block = 64, valid = 251;
        std::vector<float> s(n), p(n), whole(n);
        for (float &v : s) v = g(rng);
        float running_max = -INFINITY, running_sum = 0.0f;
        std::vector<double> weights(n, 0.0);  // exp(s - running max), rescaled as blocks come
        for (size_t b0 = 0; b0 < n; b0 += block) {
            const size_t len = std::min(block, n - b0), v = valid > b0 ? std::min(valid - b0, len) : 0;
            const float c = k->online_softmax_block(s.data() + b0, p.data() + b0, len, 0, v, &running_max, &running_sum);
            for (size_t j = 0; j < b0; ++j) weights[j] *= c;
            for (size_t j = 0; j < len; ++j) weights[b0 + j] = p[b0 + j];
        }
        // reference in double: softmax over the valid part
        double m = -INFINITY, sum = 0.0;
        for (size_t j = 0; j < valid; ++j) m = std::fmax(m, s[j]);
        for (size_t j = 0; j < valid; ++j) sum += std::exp(double(s[j]) - m);
        CHECK(running_max == doctest::Approx(m));
        for (size_t j = 0; j < n; ++j) {
            const double want = j < valid ? std::exp(double(s[j]) - m) / sum : 0.0;
            REQUIRE(std::fabs(weights[j] / running_sum - want) < 1e-6);
        }
    }
}

// d2l's rule in float64: positions outside [lo, hi) score -1e6.
std::vector<double> masked_softmax_reference(const float *x, size_t keys, size_t lo, size_t hi) {
    std::vector<double> s(keys);
    double m = -INFINITY, sum = 0.0;
    for (size_t j = 0; j < keys; ++j) {
        s[j] = j >= lo && j < hi ? double(x[j]) : -1e6;
        m = std::fmax(m, s[j]);
    }
    for (size_t j = 0; j < keys; ++j) sum += (s[j] = std::exp(s[j] - m));
    for (double &v : s) v /= sum;
    return s;
}

// Every row of y against the float64 masked softmax of the same row of x
// (1e-6), and its padding past `keys` untouched (7).
void require_rows_match_reference(const std::vector<float> &x, const std::vector<float> &y, size_t ld, size_t keys,
                                  const std::vector<edgeattn::detail::key_interval> &visible) {
    for (size_t r = 0; r < visible.size(); ++r) {
        const std::vector<double> want = masked_softmax_reference(&x[r * ld], keys, visible[r].lo, visible[r].hi);
        for (size_t j = 0; j < keys; ++j) {
            INFO("keys " << keys << " row " << r << " key " << j);
            REQUIRE(std::fabs(y[r * ld + j] - want[j]) < 1e-6);
        }
        for (size_t j = keys; j < ld; ++j) REQUIRE(y[r * ld + j] == 7.0f);
    }
}

TEST_CASE("masked_softmax_rows: rows in groups, each with its own visible keys, against float64") {
    std::mt19937 rng(13);
    std::normal_distribution<float> g(0.0f, 2.0f);
    for (const kernel_table *k : supported_paths()) {
        INFO("path " << std::string(edgeattn_isa_name(k->isa)));
        for (size_t keys : {1u, 4u, 16u, 37u, 130u}) {
            const size_t rows = 11, ld = keys + 5;  // not a whole number of groups
            std::vector<float> x(rows * ld), y(rows * ld, 7.0f);
            for (float &v : x) v = g(rng);
            std::vector<edgeattn::detail::key_interval> visible(rows);
            for (size_t r = 0; r < rows; ++r) {  // empty, whole, prefixes, windows
                const size_t lo = r % 3 == 2 ? (r * 7) % keys : 0;
                const size_t hi = r == 0 ? 0 : r == 1 ? keys : std::min(keys, lo + 1 + (r * 5) % keys);
                visible[r] = {lo, hi};
            }
            k->masked_softmax_rows(x.data(), y.data(), ld, rows, keys, visible.data());
            require_rows_match_reference(x, y, ld, keys, visible);
        }
    }
}

// Rows visible whole and longer than a batch go through the pipeline on the
// AVX-512 and AVX2 paths (softmax.hpp: the maximum, the exponentials, the
// sum and the normalisation of rows side by side), the others through the group
// kernel, run by run (every row on the other paths). Runs
// longer than the pipeline's ring of rows, runs of masked and of short rows
// between them, lengths with a single batch and a tail after the pairs,
// special scores whose limits the float64 reference gives, and in place.
TEST_CASE("masked_softmax_rows: rows visible whole through the pipeline, runs of masked rows between, against float64") {
    std::mt19937 rng(17);
    std::normal_distribution<float> g(0.0f, 3.0f);
    const float inf = std::numeric_limits<float>::infinity();
    for (const kernel_table *k : supported_paths()) {
        INFO("path " << std::string(edgeattn_isa_name(k->isa)));
        for (size_t keys : {5u, 20u, 33u, 130u, 300u, 1030u}) {  // 1030: a row of a page or more, mirrored
            const size_t rows = 31, ld = keys + 3;
            std::vector<float> x(rows * ld);
            for (float &v : x) v = g(rng);
            std::vector<edgeattn::detail::key_interval> visible(rows, edgeattn::detail::key_interval{0, keys});
            for (size_t r = 9; r < 16; ++r) {  // masked: prefixes and windows
                const size_t lo = r % 2 ? (r * 11) % (keys / 2) : 0;
                visible[r] = {lo, std::min(keys, lo + 1 + (r * 29) % keys)};
            }
            for (size_t r = 16; r < 19; ++r) visible[r] = {0, 1 + r % 3};  // short
            for (size_t j = 0; j < keys; ++j) x[20 * ld + j] = 1e30f * (j % 2 ? -1.0f : 1.0f);  // huge spread
            for (size_t j = 0; j < keys; ++j) x[21 * ld + j] = -1e6f + static_cast<float>(j % 7);  // near d2l's -1e6
            visible[21] = {0, keys / 2};  // masked positions weigh as much as the visible ones
            for (size_t j = 0; j < keys; j += 3) x[22 * ld + j] = -inf;  // -inf beside finite scores
            std::vector<float> y(rows * ld, 7.0f), z = x;
            k->masked_softmax_rows(x.data(), y.data(), ld, rows, keys, visible.data());
            k->masked_softmax_rows(z.data(), z.data(), ld, rows, keys, visible.data());
            require_rows_match_reference(x, y, ld, keys, visible);
            for (size_t r = 0; r < rows; ++r) {  // in place: the same bits
                INFO("keys " << keys << " row " << r << " in place");
                REQUIRE(std::memcmp(&z[r * ld], &y[r * ld], keys * sizeof(float)) == 0);
            }
            // No intervals (null): every row sees every key; rows 0-8 and 23-30
            // were given as whole intervals above: the same bits.
            for (size_t first : {0u, 23u}) {
                const size_t count = first == 0 ? 9 : 8;
                std::vector<float> w(count * ld, 7.0f);
                k->masked_softmax_rows(&x[first * ld], w.data(), ld, count, keys, nullptr);
                INFO("keys " << keys << ", null intervals from row " << first);
                REQUIRE(std::memcmp(w.data(), &y[first * ld], count * ld * sizeof(float)) == 0);
            }
            // A row alone (the group kernel reduces a few rows one by one, a
            // group by one tree; the pipeline each row alone): the same bits.
            for (size_t r = 0; r < 3; ++r) {
                std::vector<float> w(ld, 7.0f);
                k->masked_softmax_rows(&x[r * ld], w.data(), ld, 1, keys, &visible[r]);
                INFO("keys " << keys << ", row " << r << " alone");
                REQUIRE(std::memcmp(w.data(), &y[r * ld], ld * sizeof(float)) == 0);
            }
            // +inf (the reference cannot: inf - inf) in rows 0, 5, 6 and 9 of
            // a run of 12: the limit shares the row's weight among its +inf
            // positions, a row of -inf is uniform, and the rows around them
            // (the pipeline ends at such a row and starts again after it,
            // also while it fills) are plain softmaxes.
            const size_t run = 12;
            std::vector<float> limits(run * keys);
            for (float &v : limits) v = g(rng);
            const std::vector<float> plain = limits;
            for (size_t j = 0; j < keys; ++j) {
                limits[j] = j == keys / 3 ? inf : g(rng);
                limits[5 * keys + j] = j == keys - 2 ? inf : g(rng);
                limits[6 * keys + j] = j == 1 || j == keys / 2 ? inf : -inf;
                limits[9 * keys + j] = -inf;
            }
            const std::vector<edgeattn::detail::key_interval> all(run, edgeattn::detail::key_interval{0, keys});
            k->masked_softmax_rows(limits.data(), limits.data(), keys, run, keys, all.data());
            for (size_t j = 0; j < keys; ++j) {
                INFO("keys " << keys << " key " << j);
                CHECK(limits[j] == (j == keys / 3 ? 1.0f : 0.0f));
                CHECK(limits[5 * keys + j] == (j == keys - 2 ? 1.0f : 0.0f));
                CHECK(limits[6 * keys + j] == (j == 1 || j == keys / 2 ? 0.5f : 0.0f));
                CHECK(limits[9 * keys + j] == doctest::Approx(1.0 / double(keys)).epsilon(1e-6));
            }
            for (size_t r : {1u, 2u, 3u, 4u, 7u, 8u, 10u, 11u}) {
                const std::vector<double> want = masked_softmax_reference(&plain[r * keys], keys, 0, keys);
                for (size_t j = 0; j < keys; ++j) REQUIRE(std::fabs(limits[r * keys + j] - want[j]) < 1e-6);
            }
        }
    }
}

// The pipeline takes a row's exponentials from its scores as they are
// (no x - max) while the row's maximum m is at most 936 in size on
// AVX-512 (4006 on AVX2), and from x - m beyond (softmax.hpp,
// row_exponentials); both forms, rows each side of the limit, scores
// spread past the exp's floor (m - 87.33), and NaN, against float64 element
// by element: relative error, which the absolute 1e-6 above cannot see
// for small weights.
TEST_CASE("masked_softmax_rows: scores far from 0 and either side of the pipeline's unshifted limit, against float64") {
    std::mt19937 rng(29);
    std::normal_distribution<float> g(0.0f, 3.0f);
    const float offsets[] = {0.0f,    1.5f,    -7.0f,   500.0f,  -500.0f, 930.0f, -930.0f, 942.0f, -942.0f,
                             3990.0f, 4020.0f, -4020.0f, 2.5e4f, -2.5e4f, 1e6f,   -1e6f,   3e30f};
    for (const kernel_table *k : supported_paths()) {
        INFO("path " << std::string(edgeattn_isa_name(k->isa)));
        for (size_t keys : {20u, 128u, 300u}) {
            const size_t rows = sizeof(offsets) / sizeof(offsets[0]) + 2;
            std::vector<float> x(rows * keys), y(rows * keys);
            for (size_t r = 0; r + 2 < rows; ++r)
                for (size_t j = 0; j < keys; ++j) x[r * keys + j] = offsets[r] + g(rng);
            for (size_t j = 0; j < keys; ++j) {  // spread past the floor: weights of e^-120 and less
                x[(rows - 2) * keys + j] = 500.0f - (j % 4 == 1 ? 120.0f + static_cast<float>(j) : g(rng));
                x[(rows - 1) * keys + j] = 2000.0f - (j % 4 == 1 ? 1e4f : g(rng));
            }
            k->masked_softmax_rows(x.data(), y.data(), keys, rows, keys, nullptr);
            double worst = 0.0;
            for (size_t r = 0; r < rows; ++r) {
                const std::vector<double> want = masked_softmax_reference(&x[r * keys], keys, 0, keys);
                for (size_t j = 0; j < keys; ++j) {
                    INFO("keys " << keys << " row " << r << " key " << j << " score " << x[r * keys + j]);
                    const double error = std::fabs(y[r * keys + j] - want[j]);
                    REQUIRE(error <= 2e-6 * want[j] + 1e-37);
                    if (want[j] > 1e-30) worst = std::fmax(worst, error / want[j]);
                }
            }
            MESSAGE("keys " << keys << ": largest relative error " << worst);
            // A NaN among a row's scores makes that row NaN, in either form.
            for (float offset : {0.0f, 700.0f, 2e4f}) {
                std::vector<float> row(keys), out(keys);
                for (float &v : row) v = offset + g(rng);
                row[keys / 3] = std::numeric_limits<float>::quiet_NaN();
                k->masked_softmax_rows(row.data(), out.data(), keys, 1, keys, nullptr);
                for (size_t j = 0; j < keys; ++j) {
                    INFO("keys " << keys << " offset " << offset << " key " << j);
                    REQUIRE(std::isnan(out[j]));
                }
            }
        }
    }
}

// The pipeline walks its rows in an order chosen from where y lies from x
// modulo 4 KiB (softmax.hpp, step_order: from the row's end when y is 64 to
// 575 bytes past x); a row's sum is taken in one order whatever the walk, so
// the same scores give the same bits wherever the output lies.
TEST_CASE("masked_softmax_rows: the same bits wherever y lies from x") {
    std::mt19937 rng(31);
    std::normal_distribution<float> g(0.0f, 3.0f);
    for (const kernel_table *k : supported_paths()) {
        INFO("path " << std::string(edgeattn_isa_name(k->isa)));
        for (size_t keys : {20u, 33u, 100u, 128u, 300u, 1030u}) {
            const size_t rows = 19;
            // x at a page's start; y at each distance past a page boundary.
            std::vector<float> space(rows * keys + 4096 / sizeof(float) * 3);
            float *x = space.data() + (4096 - reinterpret_cast<uintptr_t>(space.data()) % 4096) / sizeof(float);
            for (size_t i = 0; i < rows * keys; ++i) x[i] = g(rng);
            std::vector<float> first(rows * keys);
            k->masked_softmax_rows(x, first.data(), keys, rows, keys, nullptr);
            for (size_t apart : {0u, 64u, 128u, 320u, 512u, 576u, 1024u, 2048u, 4032u}) {
                std::vector<float> out(rows * keys + 4096 / sizeof(float) * 2);
                float *y = out.data() + (4096 - reinterpret_cast<uintptr_t>(out.data()) % 4096 + apart) / sizeof(float);
                k->masked_softmax_rows(x, y, keys, rows, keys, nullptr);
                INFO("keys " << keys << ", y " << apart << " bytes past x modulo 4 KiB");
                REQUIRE(std::memcmp(y, first.data(), rows * keys * sizeof(float)) == 0);
            }
        }
    }
}

#if defined(__unix__)
// 64 KiB of data, then an unreadable page: n floats placed at the end of
// the data are followed by memory whose every read or write faults. The
// kernels' tails (masked loads and stores on AVX-512 / AVX2, lane by lane
// elsewhere) must stay inside [p, p + n).
struct guarded_floats {
    static constexpr size_t data_bytes = 64 * 1024;
    size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    size_t mapped = data_bytes + page;  // data_bytes is a whole number of pages
    unsigned char *base = static_cast<unsigned char *>(
        mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    guarded_floats() {
        REQUIRE(base != MAP_FAILED);
        REQUIRE(data_bytes % page == 0);
        REQUIRE(mprotect(base + data_bytes, page, PROT_NONE) == 0);
    }
    ~guarded_floats() { munmap(base, mapped); }
    float *last(size_t n) {
        REQUIRE(n * sizeof(float) <= data_bytes);
        return reinterpret_cast<float *>(base + data_bytes) - n;
    }
};

TEST_CASE("tails stop at the end of their data: a fault-on-access page right after it") {
    guarded_floats xs, ys, ws;
    for (const kernel_table *k : supported_paths()) {
        INFO("path " << std::string(edgeattn_isa_name(k->isa)));
        for (size_t n : {1u, 3u, 4u, 7u, 15u, 17u, 33u, 100u}) {
            INFO("n " << n);
            float *x = xs.last(n), *y = ys.last(n), *w = ws.last(n);
            for (size_t j = 0; j < n; ++j) x[j] = w[j] = 0.25f * static_cast<float>(j % 7) - 0.5f;
            const edgeattn::detail::key_interval all = {0, n}, part = {n / 3, n};
            k->masked_softmax_rows(x, y, n, 1, n, &all);
            const std::vector<double> want = masked_softmax_reference(x, n, 0, n);
            for (size_t j = 0; j < n; ++j) REQUIRE(std::fabs(y[j] - want[j]) < 1e-6);
            k->masked_softmax_rows(x, y, n, 1, n, &part);
            k->exp(x, y, n);
            k->exp_nonpositive(x, y, n);
            k->add(x, w, y, n);
            k->scale(y, n, 0.5f);
            k->add_scaled(x, 0.5f, y, n);
            // one row of A against n rows of W (n x n), and n rows of A: the
            // last row of each ends at the guard
            const size_t rows = n <= 33 ? n : 1;
            float *a = xs.last(rows * n), *wm = ws.last(n * n), *c = ys.last(rows * n);
            for (size_t j = 0; j < rows * n; ++j) a[j] = 0.5f;
            for (size_t j = 0; j < n * n; ++j) wm[j] = 0.25f;
            k->gemm_nt_direct(rows, n, n, 1.0f, a, n, wm, n, nullptr, c, n);
            for (size_t j = 0; j < rows * n; ++j) REQUIRE(c[j] == doctest::Approx(0.125 * n));
            k->gemm_nn_direct(rows, n, n, a, n, wm, n, c, n, false);
            for (size_t j = 0; j < rows * n; ++j) REQUIRE(c[j] == doctest::Approx(0.125 * n));
        }
    }
}
#endif
