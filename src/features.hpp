// The features of this build (edgeattn/config.h) as constants the code
// tests: a branch on one that is false is dropped, and with it everything
// only that branch calls, so an image carries only what the build keeps.
#ifndef EDGEATTN_FEATURES_HPP
#define EDGEATTN_FEATURES_HPP

#include "edgeattn/config.h"

namespace edgeattn {
namespace detail {

constexpr bool with_score_options = EDGEATTN_WITH_SCORE_OPTIONS != 0;
constexpr bool with_alibi = EDGEATTN_WITH_ALIBI != 0;
constexpr bool with_mask_bias = EDGEATTN_WITH_MASK_BIAS != 0;
constexpr bool with_long_rows = EDGEATTN_WITH_LONG_ROWS != 0;
constexpr bool with_half = EDGEATTN_WITH_HALF != 0;
constexpr bool with_int8 = EDGEATTN_WITH_INT8 != 0;
constexpr bool with_int8_arithmetic = with_int8 && EDGEATTN_WITH_INT8_ARITHMETIC != 0;

// Whether a path of this build packs fp32 operands into panels: not when
// the plain C++ path built for size is its only path (make_kernel_table.hpp),
// and then the code that packs them is not compiled in. Only the library's
// sources see the EDGEATTN_HAVE_<path> macros: code outside it asks a
// kernel table whether it packs.
#if defined(__OPTIMIZE_SIZE__) && !defined(EDGEATTN_HAVE_SSE2) && !defined(EDGEATTN_HAVE_AVX2) && \
    !defined(EDGEATTN_HAVE_AVX512) && !defined(EDGEATTN_HAVE_NEON) && !defined(EDGEATTN_HAVE_HELIUM)
constexpr bool with_packing = false;
#else
constexpr bool with_packing = true;
#endif

}  // namespace detail
}  // namespace edgeattn

#endif
