/// @file
/// The sinusoidal positional-encoding table of d2l, computed by the compiler.
///
///     P[i, 2j]   = sin(i / 10000^(2j/d))
///     P[i, 2j+1] = cos(i / 10000^(2j/d))     (odd d: the last column is a sine)
///
/// Declared constexpr, the table is evaluated at compile time in double
/// precision, rounded to float, and placed in .rodata: flash, not RAM, on a
/// microcontroller. Use the variable template, which is always constexpr:
///
///     const float *P = edgeattn::positional_encoding_table<1000, 32>.data();
///
/// Compile time: about 1.5 s for a 1000 x 100 table with GCC 12.
#ifndef EDGEATTN_POSITIONAL_ENCODING_HPP
#define EDGEATTN_POSITIONAL_ENCODING_HPP

#include <cstddef>

#include "detail/constexpr_math.hpp"

namespace edgeattn {

/// The table P (MaxLen, Dim), float, bit-identical to
/// edgeattn_positional_encoding_table(). Size: MaxLen * Dim * 4 bytes.
/// @tparam MaxLen positions (rows) @tparam Dim encoding dimension d (columns)
template <std::size_t MaxLen, std::size_t Dim>
struct PositionalEncodingTable {
    static_assert(MaxLen > 0 && Dim > 0, "the table needs at least one position and column");
    static constexpr std::size_t max_len = MaxLen;  ///< rows: positions
    static constexpr std::size_t dim = Dim;          ///< columns: d

    float values[MaxLen * Dim];  ///< (max_len, d), row-major

    /// Fills the table (at compile time when constant-evaluated).
    constexpr PositionalEncodingTable() : values{} {
        detail::fill_positional_encoding(values, MaxLen, Dim);
    }

    /// @return the table as a (max_len, d) row-major array, for the C API's P
    constexpr const float *data() const { return values; }
    /// @param position row, < max_len
    /// @param column   column, < d
    /// @return P[position, column]
    constexpr float operator()(std::size_t position, std::size_t column) const {
        return values[position * Dim + column];
    }
};

/// The one instance per shape, evaluated at compile time, in .rodata.
/// @tparam MaxLen positions @tparam Dim encoding dimension
template <std::size_t MaxLen, std::size_t Dim>
inline constexpr PositionalEncodingTable<MaxLen, Dim> positional_encoding_table{};

}  // namespace edgeattn

#endif
