/// @file
/// The RoPE table of edgeattn/rope.h, computed by the compiler.
///
///     table[p, i]             = cos(p / position_scale * theta^(-2i / rotary_dims))
///     table[p, rotary_dims/2 + i] = sin(...)              (i < rotary_dims / 2)
///
/// Declared constexpr, the table is evaluated at compile time in double
/// precision, rounded to float, and placed in .rodata: flash, not RAM, on a
/// microcontroller. Bit-identical to edgeattn_rope_table(). theta and
/// position_scale are doubles, which C++17 does not take as template
/// arguments, so the table is a function's value held by a constexpr
/// variable of the caller:
///
///     static constexpr auto table = edgeattn::rope_table<2048, 64>(500000.0);
///     edgeattn_rope rope = table.rope(EDGEATTN_ROPE_NEOX, positions);
///
/// Invalid arguments (theta or position_scale negative or not finite, or an
/// angle above 2^24 radians: edgeattn_rope_table()'s EDGEATTN_ERR_BAD_ROPE)
/// stop the compilation at rope_table_arguments_are_invalid(); evaluated at
/// run time instead, such a table stays zero.
///
/// Compile time and the compilers' constexpr limits (entries = MaxPositions
/// x RotaryDims; GCC 12, Clang 14, at their default limits): GCC builds a
/// 2048 x 64 table in about 2 s and up to 524288 entries (4096 x 128, 20 s);
/// larger ones need -fconstexpr-ops-limit=N with N = 64 x entries, and
/// MaxPositions above 262144 -fconstexpr-loop-limit=MaxPositions. Clang builds up to
/// 131072 entries (2048 x 64, 1 s); larger ones need
/// -fconstexpr-steps=N with N = 16 x entries (8192 x 128: 7 s; GCC with
/// -fconstexpr-ops-limit=67108864: 80 s).
#ifndef EDGEATTN_ROPE_HPP
#define EDGEATTN_ROPE_HPP

#include <cstddef>
#include <cstdint>

#include "detail/rope_table.hpp"
#include "rope.h"

namespace edgeattn {

namespace detail {
/// Reached only with invalid table arguments: not constexpr, so a table
/// evaluated at compile time with them is a compile error naming it.
inline void rope_table_arguments_are_invalid() {}
}  // namespace detail

/// The table (MaxPositions, RotaryDims), float, bit-identical to
/// edgeattn_rope_table() with the same theta and position_scale.
/// Size: MaxPositions * RotaryDims * 4 bytes.
/// @tparam MaxPositions rows: positions -MaxPositions < p < MaxPositions rotate
/// @tparam RotaryDims   rotated features per head (even)
template <std::size_t MaxPositions, std::size_t RotaryDims>
struct RopeTable {
    static_assert(MaxPositions > 0, "the table needs at least one position");
    static_assert(RotaryDims > 0 && RotaryDims % 2 == 0, "rotary_dims must be even and > 0");
    static_assert(MaxPositions <= SIZE_MAX / sizeof(float) / RotaryDims, "the table's size overflows size_t");
    static constexpr std::size_t max_positions = MaxPositions;  ///< rows
    static constexpr std::size_t rotary_dims = RotaryDims;      ///< columns: cosines, then sines

    float values[MaxPositions * RotaryDims];  ///< (max_positions, rotary_dims), row-major

    /// Fills the table (at compile time when constant-evaluated).
    /// @param theta          base of the frequencies; 0 means 10000
    /// @param position_scale linear position scaling; 0 means 1
    constexpr explicit RopeTable(double theta = 0.0, double position_scale = 0.0) : values{} {
        const double t = detail::rope_theta_or_default(theta);
        const double s = detail::rope_scale_or_default(position_scale);
        if (!detail::rope_table_arguments_valid(MaxPositions, RotaryDims, t, s)) {
            detail::rope_table_arguments_are_invalid();
            return;
        }
        detail::fill_rope_table(values, MaxPositions, RotaryDims, t, s);
    }

    /// @return the table as edgeattn_rope::table takes it
    constexpr const float *data() const { return values; }
    /// @param position a row, < MaxPositions
    /// @param pair     a pair, < RotaryDims / 2
    /// @return cos of pair `pair` at `position`
    constexpr float cos(std::size_t position, std::size_t pair) const { return values[position * RotaryDims + pair]; }
    /// @param position a row, < MaxPositions
    /// @param pair     a pair, < RotaryDims / 2
    /// @return sin of pair `pair` at `position`
    constexpr float sin(std::size_t position, std::size_t pair) const {
        return values[position * RotaryDims + RotaryDims / 2 + pair];
    }

    /// The option struct for this table (edgeattn_rope_apply(), or
    /// edgeattn_attention_options::rope of a KV cache call).
    /// @param layout    which features pair up
    /// @param positions (B) first positions, or NULL (see edgeattn_rope)
    /// @return an edgeattn_rope over this table
    constexpr edgeattn_rope rope(edgeattn_rope_layout layout = EDGEATTN_ROPE_NEOX,
                                 const std::int32_t *positions = nullptr) const {
        return edgeattn_rope{values, MaxPositions, RotaryDims, layout, positions};
    }
};

/// The table of theta and position_scale, for a constexpr variable:
/// `static constexpr auto table = edgeattn::rope_table<2048, 64>(500000.0);`
/// @tparam MaxPositions rows
/// @tparam RotaryDims   rotated features per head
/// @param theta          base of the frequencies; 0 means 10000
/// @param position_scale linear position scaling; 0 means 1
/// @return the table
template <std::size_t MaxPositions, std::size_t RotaryDims>
constexpr RopeTable<MaxPositions, RotaryDims> rope_table(double theta = 0.0, double position_scale = 0.0) {
    return RopeTable<MaxPositions, RotaryDims>(theta, position_scale);
}

}  // namespace edgeattn

#endif
