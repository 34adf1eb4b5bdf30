// Chooses the kernel path once: the best one the build has and the CPU
// runs, unless EDGEATTN_ISA or edgeattn_set_isa() forces another, so the
// tests can run every path on one machine.
#include <stdlib.h>
#include <string.h>

#include <atomic>

#if defined(EDGEATTN_HAVE_AVX2)
#include <cpuid.h>
#endif

#include "kernels/kernel_table.hpp"
#include "validate.hpp"

#if defined(EDGEATTN_HAVE_SSE2) || defined(EDGEATTN_HAVE_AVX2) || defined(EDGEATTN_HAVE_AVX512)
#define EDGEATTN_DETECT_X86 1
#endif

namespace edgeattn {
namespace detail {
namespace {

#if defined(EDGEATTN_HAVE_AVX2)
// CPUID leaf 1, ECX bit 29 (Clang 14's __builtin_cpu_supports has no "f16c").
bool cpu_has_f16c() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx >> 29 & 1u);
}
#endif

// `isa` as an int: edgeattn_set_isa and edgeattn_isa_supported pass on
// whatever int a C caller gave them.
const kernel_table *table_for(int isa) {
    switch (isa) {
        case EDGEATTN_ISA_SCALAR: return &scalar_kernels;
#if defined(EDGEATTN_HAVE_SSE2)
        case EDGEATTN_ISA_SSE2: return __builtin_cpu_supports("sse2") ? &sse2_kernels : nullptr;
#endif
#if defined(EDGEATTN_HAVE_AVX2)
        case EDGEATTN_ISA_AVX2:
            // F16C widens fp16 weights; every AVX2 processor has it.
            return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c()
                       ? &avx2_kernels
                       : nullptr;
#endif
#if defined(EDGEATTN_HAVE_AVX512)
        case EDGEATTN_ISA_AVX512:
            return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")
                       ? &avx512_kernels
                       : nullptr;
#endif
#if defined(EDGEATTN_HAVE_NEON)
        // The NEON file is only built when the target's flags enable NEON
        // (always on AArch64; -mfpu=neon on ARMv7), so the CPU has it.
        case EDGEATTN_ISA_NEON: return &neon_kernels;
#endif
#if defined(EDGEATTN_HAVE_HELIUM)
        // Likewise: built only for targets with MVE floating point.
        case EDGEATTN_ISA_HELIUM: return &helium_kernels;
#endif
        default: return nullptr;
    }
}

const kernel_table *best_table() {
    const edgeattn_isa best_first[] = {EDGEATTN_ISA_AVX512, EDGEATTN_ISA_AVX2, EDGEATTN_ISA_NEON,
                                       EDGEATTN_ISA_HELIUM, EDGEATTN_ISA_SSE2};
    for (edgeattn_isa isa : best_first)
        if (const kernel_table *t = table_for(isa)) return t;
    return &scalar_kernels;
}

#if !defined(EDGEATTN_BARE_METAL)
edgeattn_isa isa_from_name(const char *name) {
    const edgeattn_isa all[] = {EDGEATTN_ISA_AUTO, EDGEATTN_ISA_SCALAR, EDGEATTN_ISA_SSE2,
                                EDGEATTN_ISA_AVX2, EDGEATTN_ISA_AVX512, EDGEATTN_ISA_NEON,
                                EDGEATTN_ISA_HELIUM};
    for (edgeattn_isa isa : all)
        if (strcmp(name, edgeattn_isa_name(isa)) == 0) return isa;
    return EDGEATTN_ISA_AUTO;
}
#endif

// The first call reads EDGEATTN_ISA; an unknown or unsupported name falls
// back to the best path (a library must not abort a program over it).
const kernel_table *initial_table() {
#if !defined(EDGEATTN_BARE_METAL)
    if (const char *name = getenv("EDGEATTN_ISA")) {
        if (const kernel_table *t = table_for(isa_from_name(name))) return t;
    }
#endif
    return best_table();
}

std::atomic<const kernel_table *> active{nullptr};

}  // namespace

const kernel_table &active_kernels() {
    const kernel_table *t = active.load(std::memory_order_acquire);
    if (!t) {
        t = initial_table();  // idempotent: racing first calls agree
        active.store(t, std::memory_order_release);
    }
    return *t;
}

// The other families (kernel_table.hpp): a switch rather than a pointer in
// kernel_table, so only images whose operations call the accessor carry
// that family's kernels.
#if defined(EDGEATTN_HAVE_SSE2)
#define EDGEATTN_IF_SSE2(...) __VA_ARGS__
#else
#define EDGEATTN_IF_SSE2(...)
#endif
#if defined(EDGEATTN_HAVE_AVX2)
#define EDGEATTN_IF_AVX2(...) __VA_ARGS__
#else
#define EDGEATTN_IF_AVX2(...)
#endif
#if defined(EDGEATTN_HAVE_AVX512)
#define EDGEATTN_IF_AVX512(...) __VA_ARGS__
#else
#define EDGEATTN_IF_AVX512(...)
#endif
#if defined(EDGEATTN_HAVE_NEON)
#define EDGEATTN_IF_NEON(...) __VA_ARGS__
#else
#define EDGEATTN_IF_NEON(...)
#endif
#if defined(EDGEATTN_HAVE_HELIUM)
#define EDGEATTN_IF_HELIUM(...) __VA_ARGS__
#else
#define EDGEATTN_IF_HELIUM(...)
#endif
#define EDGEATTN_FAMILY_TABLE_OF(k, family)                                  \
    switch (k.isa) {                                          \
        EDGEATTN_IF_SSE2(case EDGEATTN_ISA_SSE2: return sse2_##family;)      \
        EDGEATTN_IF_AVX2(case EDGEATTN_ISA_AVX2: return avx2_##family;)      \
        EDGEATTN_IF_AVX512(case EDGEATTN_ISA_AVX512: return avx512_##family;) \
        EDGEATTN_IF_NEON(case EDGEATTN_ISA_NEON: return neon_##family;)      \
        EDGEATTN_IF_HELIUM(case EDGEATTN_ISA_HELIUM: return helium_##family;) \
        default: return scalar_##family;                                      \
    }

const additive_kernel_table &additive_kernels_of(const kernel_table &k) {
    EDGEATTN_FAMILY_TABLE_OF(k, additive_kernels)
}
const cache_kernel_table &cache_kernels_of(const kernel_table &k) { EDGEATTN_FAMILY_TABLE_OF(k, cache_kernels) }

}  // namespace detail
}  // namespace edgeattn

using edgeattn::detail::active_kernels;

// The edgeattn_isa arguments are read as ints (enum_as_int): a C caller may
// pass any int, and loading one outside the enumerators' range as the enum
// is undefined.
extern "C" edgeattn_status edgeattn_set_isa(edgeattn_isa isa_arg) {
    using namespace edgeattn::detail;
    const int isa = enum_as_int(isa_arg);
    const kernel_table *t = isa == EDGEATTN_ISA_AUTO ? best_table() : table_for(isa);
    if (!t) return EDGEATTN_ERR_UNSUPPORTED_ISA;
    active.store(t, std::memory_order_release);
    return EDGEATTN_OK;
}

extern "C" edgeattn_isa edgeattn_current_isa(void) { return active_kernels().isa; }

extern "C" int edgeattn_isa_supported(edgeattn_isa isa_arg) {
    const int isa = edgeattn::detail::enum_as_int(isa_arg);
    return isa != EDGEATTN_ISA_AUTO && edgeattn::detail::table_for(isa) != nullptr;
}

extern "C" const char *edgeattn_isa_name(edgeattn_isa isa_arg) {
    switch (edgeattn::detail::enum_as_int(isa_arg)) {
        case EDGEATTN_ISA_AUTO: return "auto";
        case EDGEATTN_ISA_SCALAR: return "scalar";
        case EDGEATTN_ISA_SSE2: return "sse2";
        case EDGEATTN_ISA_AVX2: return "avx2";
        case EDGEATTN_ISA_AVX512: return "avx512";
        case EDGEATTN_ISA_NEON: return "neon";
        case EDGEATTN_ISA_HELIUM: return "helium";
    }
    return "unknown";
}
