// Which table of which path: the switch from a path (edgeattn_isa) to its
// table of one family (kernel_table.hpp), and what src/dispatch.cpp and
// src/isa_choice.cpp share.
//
// A bare-metal build has one path it runs unless edgeattn_set_isa chooses
// another: Helium where it is built, else the plain C++ one. dispatch.cpp
// names that path's tables alone; the switch over every path lives in
// isa_choice.cpp with edgeattn_set_isa, and dispatch.cpp reaches it
// through weak references, which a linker resolves from an archive member
// only when something else pulls that member in. So an image that never
// calls edgeattn_set_isa links one path (a Cortex-M55 image: Helium's
// kernels, not the plain C++ path's too), and one that does, all of them.
// Hosted builds choose among their paths by the CPU at run time and name
// every path in dispatch.cpp.
#ifndef EDGEATTN_PATH_TABLES_HPP
#define EDGEATTN_PATH_TABLES_HPP

#include <atomic>

#include "kernels/kernel_table.hpp"

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

// return path `isa`'s table of `family` (scalar_<family>, helium_<family>, ...).
#define EDGEATTN_SWITCH_PATH_TABLE(isa, family)                              \
    switch (isa) {                                                           \
        EDGEATTN_IF_SSE2(case EDGEATTN_ISA_SSE2: return sse2_##family;)      \
        EDGEATTN_IF_AVX2(case EDGEATTN_ISA_AVX2: return avx2_##family;)      \
        EDGEATTN_IF_AVX512(case EDGEATTN_ISA_AVX512: return avx512_##family;) \
        EDGEATTN_IF_NEON(case EDGEATTN_ISA_NEON: return neon_##family;)      \
        EDGEATTN_IF_HELIUM(case EDGEATTN_ISA_HELIUM: return helium_##family;) \
        default: return scalar_##family;                                      \
    }

// The families, as X(type, family): every table a path has.
#define EDGEATTN_PATH_FAMILIES(X)                  \
    X(kernel_table, kernels)                       \
    X(softmax_kernel_table, softmax_kernels)       \
    X(add_kernel_table, add_kernels)               \
    X(stored_weight_table, stored_weight_kernels)  \
    X(additive_kernel_table, additive_kernels)     \
    X(cache_kernel_table, cache_kernels)           \
    X(integer_kernel_table, integer_kernels)

namespace edgeattn {
namespace detail {

// The path in use: EDGEATTN_ISA_AUTO until the first call chooses it.
extern std::atomic<int> chosen_path;

// Whether this build has path `isa` and the CPU runs it (`isa` as an int:
// the C calls pass on whatever int a caller gave them), and the best such.
bool path_supported(int isa);
int best_path();

#if defined(EDGEATTN_BARE_METAL)
// Path `isa`'s table of each family, any path (isa_choice.cpp); weak, so
// referring to them pulls in no code.
#define EDGEATTN_DECLARE_CHOSEN(type, family) __attribute__((weak)) const type &chosen_path_##family(int isa);
EDGEATTN_PATH_FAMILIES(EDGEATTN_DECLARE_CHOSEN)
#undef EDGEATTN_DECLARE_CHOSEN
#endif

}  // namespace detail
}  // namespace edgeattn

#endif
