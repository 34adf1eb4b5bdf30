/**
 * @file
 * edgeattn C API: which kernel path the calls use. The library picks the
 * best path the CPU runs at the first call; a program may force one, to
 * test every path on one machine or to compare them.
 */
#ifndef EDGEATTN_DISPATCH_H
#define EDGEATTN_DISPATCH_H

#include "edgeattn/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Kernel paths. Which exist depends on the build and the machine. */
typedef enum edgeattn_isa {
    EDGEATTN_ISA_AUTO = 0,   /**< best available (the default; EDGEATTN_ISA overrides) */
    EDGEATTN_ISA_SCALAR = 1, /**< plain C++, every target */
    EDGEATTN_ISA_SSE2 = 2,   /**< x86 SSE2 */
    EDGEATTN_ISA_AVX2 = 3,   /**< AVX2 + FMA */
    EDGEATTN_ISA_AVX512 = 4, /**< AVX-512 F + DQ */
    EDGEATTN_ISA_NEON = 5,   /**< ARMv7 NEON or AArch64 NEON */
    EDGEATTN_ISA_HELIUM = 6, /**< Armv8.1-M Helium (MVE with floating point: Cortex-M55, M85); since 1.3 */
    EDGEATTN_ISA_FORCE_INT = 0x7FFFFFFF /**< int-sized under -fshort-enums; not a path */
} edgeattn_isa;

/**
 * Force a kernel path for every later call (EDGEATTN_ISA_AUTO: pick the
 * best). Returns EDGEATTN_ERR_UNSUPPORTED_ISA, changing nothing, when that
 * path is not built in or the CPU lacks it. Not thread-safe against calls in
 * flight: set it before computing. Programs may also set the environment
 * variable EDGEATTN_ISA to scalar, sse2, avx2, avx512, neon or helium, read
 * at the first call (bare-metal builds read no environment).
 * @param isa the path, or ::EDGEATTN_ISA_AUTO
 * @return ::EDGEATTN_OK, or ::EDGEATTN_ERR_UNSUPPORTED_ISA
 */
edgeattn_status edgeattn_set_isa(edgeattn_isa isa);

/** The path calls use now.
 *  @return the path in effect (never ::EDGEATTN_ISA_AUTO) */
edgeattn_isa edgeattn_current_isa(void);

/** Whether a path can run here.
 *  @param isa a path
 *  @return 1 when the path is built in and this CPU runs it, else 0 (also for
 *          ::EDGEATTN_ISA_AUTO, which is not a path) */
int edgeattn_isa_supported(edgeattn_isa isa);

/** A path's name, as EDGEATTN_ISA spells it.
 *  @param isa any value
 *  @return "scalar", "sse2", "avx2", "avx512", "neon", "helium", "auto", or "unknown"
 *          outside the enum (a static string) */
const char *edgeattn_isa_name(edgeattn_isa isa);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* EDGEATTN_DISPATCH_H */
