// Chooses the kernel path once: the best one the build has and the CPU
// runs, unless EDGEATTN_ISA or edgeattn_set_isa() (isa_choice.cpp) forces
// another, so the tests can run every path on one machine; and gives each
// op the tables of the path in use (path_tables.hpp says how a bare-metal
// image links one path's).
#include <stdlib.h>
#include <string.h>

#include <atomic>

#if defined(EDGEATTN_HAVE_AVX2)
#include <cpuid.h>
#endif

#include "path_tables.hpp"
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

}  // namespace

// No table is named here: an image links the tables its operations ask
// for (the accessors below).
bool path_supported(int isa) {
    switch (isa) {
        case EDGEATTN_ISA_SCALAR: return true;
#if defined(EDGEATTN_HAVE_SSE2)
        case EDGEATTN_ISA_SSE2: return __builtin_cpu_supports("sse2");
#endif
#if defined(EDGEATTN_HAVE_AVX2)
        case EDGEATTN_ISA_AVX2:
            // F16C widens fp16 weights; every AVX2 processor has it.
            return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
#endif
#if defined(EDGEATTN_HAVE_AVX512)
        case EDGEATTN_ISA_AVX512: return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
#endif
#if defined(EDGEATTN_HAVE_NEON)
        // The NEON file is only built when the target's flags enable NEON
        // (always on AArch64; -mfpu=neon on ARMv7), so the CPU has it.
        case EDGEATTN_ISA_NEON: return true;
#endif
#if defined(EDGEATTN_HAVE_HELIUM)
        // Likewise: built only for targets with MVE floating point.
        case EDGEATTN_ISA_HELIUM: return true;
#endif
        default: return false;
    }
}

int best_path() {
    const edgeattn_isa best_first[] = {EDGEATTN_ISA_AVX512, EDGEATTN_ISA_AVX2, EDGEATTN_ISA_NEON,
                                       EDGEATTN_ISA_HELIUM, EDGEATTN_ISA_SSE2};
    for (edgeattn_isa isa : best_first)
        if (path_supported(isa)) return isa;
    return EDGEATTN_ISA_SCALAR;
}

namespace {

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
int initial_path() {
#if !defined(EDGEATTN_BARE_METAL)
    if (const char *name = getenv("EDGEATTN_ISA")) {
        const int isa = isa_from_name(name);
        if (isa != EDGEATTN_ISA_AUTO && path_supported(isa)) return isa;
    }
#endif
    return best_path();
}

}  // namespace

std::atomic<int> chosen_path{EDGEATTN_ISA_AUTO};

edgeattn_isa active_path() {
    int isa = chosen_path.load(std::memory_order_acquire);
    if (isa == EDGEATTN_ISA_AUTO) {
        isa = initial_path();  // idempotent: racing first calls agree
        chosen_path.store(isa, std::memory_order_release);
    }
    return static_cast<edgeattn_isa>(isa);
}

// Each family's table of path `isa`: a switch rather than a pointer in
// kernel_table, so only images whose operations call a family's accessor
// carry its kernels. Bare metal: the default path's here, any other's
// through isa_choice.cpp (weak: present only with edgeattn_set_isa, the
// one way `isa` can be another path).
#if !defined(EDGEATTN_HAVE_SSE2) && !defined(EDGEATTN_HAVE_AVX2) && !defined(EDGEATTN_HAVE_AVX512) && \
    !defined(EDGEATTN_HAVE_NEON) && !defined(EDGEATTN_HAVE_HELIUM)
// The plain C++ path alone (the Cortex-M4F): nothing to choose.
#define EDGEATTN_FAMILY_TABLE_OF(isa, family) \
    (void)(isa);                              \
    return scalar_##family;
#elif defined(EDGEATTN_BARE_METAL)
#if defined(EDGEATTN_HAVE_HELIUM)
#define EDGEATTN_DEFAULT_PATH_TABLE(family) helium_##family
constexpr int default_path = EDGEATTN_ISA_HELIUM;
#else
#define EDGEATTN_DEFAULT_PATH_TABLE(family) scalar_##family
constexpr int default_path = EDGEATTN_ISA_SCALAR;
#endif
#define EDGEATTN_FAMILY_TABLE_OF(isa, family)                                 \
    const int path = isa;                                                     \
    if (path == default_path || !&chosen_path_##family) return EDGEATTN_DEFAULT_PATH_TABLE(family); \
    return chosen_path_##family(path);
#else
#define EDGEATTN_FAMILY_TABLE_OF(isa, family) EDGEATTN_SWITCH_PATH_TABLE(isa, family)
#endif

const kernel_table &active_kernels() { EDGEATTN_FAMILY_TABLE_OF(active_path(), kernels) }
const softmax_kernel_table &active_softmax_kernels() { EDGEATTN_FAMILY_TABLE_OF(active_path(), softmax_kernels) }
const add_kernel_table &active_add_kernels() { EDGEATTN_FAMILY_TABLE_OF(active_path(), add_kernels) }
const additive_kernel_table &additive_kernels_of(const kernel_table &k) {
    EDGEATTN_FAMILY_TABLE_OF(k.isa, additive_kernels)
}
const stored_weight_kernels &stored_kernels(const kernel_table &k, edgeattn_dtype type) {
    const stored_weight_table &t = [&]() -> const stored_weight_table & {
        EDGEATTN_FAMILY_TABLE_OF(k.isa, stored_weight_kernels)
    }();
    return type == EDGEATTN_DTYPE_INT8 ? t.int8_weights : t.half_weights;
}
const cache_kernel_table &cache_kernels_of(const kernel_table &k) { EDGEATTN_FAMILY_TABLE_OF(k.isa, cache_kernels) }
const integer_kernel_table &integer_kernels_of(const kernel_table &k) {
    EDGEATTN_FAMILY_TABLE_OF(k.isa, integer_kernels)
}

}  // namespace detail
}  // namespace edgeattn

extern "C" edgeattn_isa edgeattn_current_isa(void) { return edgeattn::detail::active_path(); }

extern "C" int edgeattn_isa_supported(edgeattn_isa isa_arg) {
    const int isa = edgeattn::detail::enum_as_int(isa_arg);
    return isa != EDGEATTN_ISA_AUTO && edgeattn::detail::path_supported(isa);
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
