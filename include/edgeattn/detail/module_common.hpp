/// @file
/// What the fixed-size C++ modules share: the Status and ValidLens names,
/// the member workspace, and compile-time size checks.
#ifndef EDGEATTN_DETAIL_MODULE_COMMON_HPP
#define EDGEATTN_DETAIL_MODULE_COMMON_HPP

#include <cstddef>

#include "../types.h"
#include "workspace_layout.hpp"

/// The C++ API: fixed-size modules over the C API, and the compile-time
/// positional-encoding table.
namespace edgeattn {

/// ::edgeattn_status: ::EDGEATTN_OK (0) or a negative error code.
using Status = edgeattn_status;
/// ::edgeattn_valid_lens: d2l's valid_lens (nullptr: no mask).
using ValidLens = edgeattn_valid_lens;

namespace detail {
// A module's valid lengths as the options of the C call.
inline edgeattn_attention_options options_of(const ValidLens *valid_lens) {
    edgeattn_attention_options o{};
    if (valid_lens) o.valid_lens = *valid_lens;
    return o;
}

template <std::size_t Bytes>
struct workspace_storage {
    static_assert(Bytes != 0, "the workspace of these dimensions overflows size_t");
    alignas(64) float floats[Bytes / sizeof(float)];
    void *data() { return floats; }
    static constexpr std::size_t bytes = Bytes;
};

// Whether a float tensor of these dimensions has a byte size that fits in
// size_t (the C API's EDGEATTN_ERR_SIZE_OVERFLOW, found at compile time).
constexpr bool tensor_fits(std::size_t a, std::size_t b, std::size_t c = 1, std::size_t d = 1) {
    std::size_t ab = 0, abc = 0, abcd = 0, bytes = 0;
    return !mul_overflows(a, b, ab) && !mul_overflows(ab, c, abc) && !mul_overflows(abc, d, abcd) &&
           !mul_overflows(abcd, sizeof(float), bytes);
}
}  // namespace detail

}  // namespace edgeattn

#endif
