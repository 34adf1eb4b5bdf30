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

}  // namespace detail
}  // namespace edgeattn

#endif
