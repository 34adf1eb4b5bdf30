// The sinusoidal table against a float64 reference (std::pow, std::sin,
// std::cos), its relative-position property, the compile-time table, and
// adding it at a start position (edgeattn_positional_encoding_add_at).
#include <doctest/doctest.h>

#include <edgeattn/edgeattn.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace {

// d2l's table in double: angle i / 10000^(2j/d).
double reference(std::size_t i, std::size_t col, std::size_t d) {
    const double angle = static_cast<double>(i) / std::pow(10000.0, 2.0 * static_cast<double>(col / 2) / d);
    return col % 2 == 0 ? std::sin(angle) : std::cos(angle);
}

std::vector<float> runtime_table(std::size_t max_len, std::size_t d) {
    std::vector<float> P(max_len * d, -7.0f);
    REQUIRE(edgeattn_positional_encoding_table(max_len, d, P.data()) == EDGEATTN_OK);
    return P;
}

// FORMAT.md: max |P - ref| <= 2.5e-7 for a float table made in double.
constexpr double table_bound = 2.5e-7;

}  // namespace

TEST_CASE("the runtime table is within 2.5e-7 of float64 for even and odd d") {
    const std::size_t shapes[][2] = {{1000, 32}, {50, 7}, {4096, 100}, {1, 1}, {20000, 33}, {300, 2}};
    for (const auto &shape : shapes) {
        const std::size_t max_len = shape[0], d = shape[1];
        const std::vector<float> P = runtime_table(max_len, d);
        double worst = 0.0;
        for (std::size_t i = 0; i < max_len; ++i)
            for (std::size_t c = 0; c < d; ++c)
                worst = std::fmax(worst, std::fabs(P[i * d + c] - reference(i, c, d)));
        INFO("max_len " << max_len << " d " << d << " max error " << worst);
        CHECK(worst <= table_bound);
    }
}

TEST_CASE("the compile-time table is bit-identical to the runtime table") {
    constexpr const auto &P = edgeattn::positional_encoding_table<1000, 32>;
    static_assert(P(0, 0) == 0.0f && P(0, 1) == 1.0f, "row 0 is (sin 0, cos 0, ...)");
    static_assert(P.max_len == 1000 && P.dim == 32, "shape");
    const std::vector<float> R = runtime_table(1000, 32);
    for (std::size_t i = 0; i < R.size(); ++i) REQUIRE(P.data()[i] == R[i]);

    constexpr const auto &odd = edgeattn::positional_encoding_table<50, 7>;
    const std::vector<float> R_odd = runtime_table(50, 7);
    for (std::size_t i = 0; i < R_odd.size(); ++i) REQUIRE(odd.data()[i] == R_odd[i]);
}

// d2l 11.6.3: for a fixed offset delta, a 2x2 rotation that depends on delta
// but not on i maps (P[i, 2j], P[i, 2j+1]) to (P[i+delta, 2j], P[i+delta, 2j+1]):
//   [ cos(delta w_j)  sin(delta w_j) ] [ P[i, 2j]   ]
//   [-sin(delta w_j)  cos(delta w_j) ] [ P[i, 2j+1] ]
TEST_CASE("relative positions: a fixed rotation maps row i to row i + delta") {
    const std::size_t max_len = 200, d = 32;
    const std::vector<float> P = runtime_table(max_len, d);
    for (std::size_t delta : {1u, 2u, 5u, 17u, 60u}) {
        double worst = 0.0;
        for (std::size_t j = 0; j < d / 2; ++j) {
            const double w = 1.0 / std::pow(10000.0, 2.0 * static_cast<double>(j) / d);
            const double c = std::cos(delta * w), s = std::sin(delta * w);
            for (std::size_t i = 0; i + delta < max_len; ++i) {
                const double sin_i = P[i * d + 2 * j], cos_i = P[i * d + 2 * j + 1];
                const double sin_next = c * sin_i + s * cos_i;
                const double cos_next = -s * sin_i + c * cos_i;
                worst = std::fmax(worst, std::fabs(sin_next - P[(i + delta) * d + 2 * j]));
                worst = std::fmax(worst, std::fabs(cos_next - P[(i + delta) * d + 2 * j + 1]));
            }
        }
        INFO("delta " << delta << " worst " << worst);
        CHECK(worst <= 2.0 * table_bound);  // two float roundings
        CHECK(worst > 0.0);                 // the check reads real data
    }
}

TEST_CASE("adding the table at start 0: X + P[:n], in place, and n > max_len rejected") {
    const std::size_t B = 2, n = 5, d = 6, max_len = 8;
    const std::vector<float> P = runtime_table(max_len, d);
    std::vector<float> X(B * n * d), Y(B * n * d, 0.0f);
    for (std::size_t i = 0; i < X.size(); ++i) X[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
    REQUIRE(edgeattn_positional_encoding_add_at(B, n, d, 0, X.data(), P.data(), max_len, Y.data()) == EDGEATTN_OK);
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t c = 0; c < d; ++c) {
                const std::size_t at = (b * n + i) * d + c;
                CHECK(std::fabs(Y[at] - (X[at] + reference(i, c, d))) <= 1e-6);
            }
    std::vector<float> in_place = X;
    REQUIRE(edgeattn_positional_encoding_add_at(B, n, d, 0, in_place.data(), P.data(), max_len, in_place.data()) ==
            EDGEATTN_OK);
    CHECK(in_place == Y);

    std::vector<float> untouched(B * 9 * d, 3.0f);
    const std::vector<float> longer(B * 9 * d, 1.0f);
    CHECK(edgeattn_positional_encoding_add_at(B, 9, d, 0, longer.data(), P.data(), max_len, untouched.data()) ==
          EDGEATTN_ERR_SEQUENCE_TOO_LONG);
    CHECK(untouched == std::vector<float>(B * 9 * d, 3.0f));
}

// A decode step at position p adds P[p : p + n]: rows start .. start + n - 1
// of the table against the float64 formula, for an odd d too; in place;
// the last rows of the table (start + n == max_len) are accepted.
TEST_CASE("adding the table at a start position: X + P[start : start + n] against float64") {
    const std::size_t B = 2, max_len = 40;
    for (const std::size_t d : {6u, 7u})
        for (const std::size_t n : {1u, 3u, 5u}) {
            const std::vector<float> P = runtime_table(max_len, d);
            std::vector<float> X(B * n * d);
            for (std::size_t i = 0; i < X.size(); ++i) X[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
            for (const std::size_t start : {std::size_t{1}, std::size_t{3}, std::size_t{17}, max_len - n - 1,
                                            max_len - n}) {
                INFO("d " << d << " n " << n << " start " << start);
                std::vector<float> Y(B * n * d, -7.0f);
                REQUIRE(edgeattn_positional_encoding_add_at(B, n, d, start, X.data(), P.data(), max_len,
                                                            Y.data()) == EDGEATTN_OK);
                double worst = 0.0;
                for (std::size_t b = 0; b < B; ++b)
                    for (std::size_t i = 0; i < n; ++i)
                        for (std::size_t c = 0; c < d; ++c) {
                            const std::size_t at = (b * n + i) * d + c;
                            const double want = static_cast<double>(X[at]) + reference(start + i, c, d);
                            worst = std::fmax(worst, std::fabs(Y[at] - want));
                        }
                // The table's bound plus the rounding of the float sum (|X + P| < 2).
                CHECK(worst <= table_bound + 0x1p-23);
                std::vector<float> in_place = X;
                REQUIRE(edgeattn_positional_encoding_add_at(B, n, d, start, in_place.data(), P.data(), max_len,
                                                            in_place.data()) == EDGEATTN_OK);
                CHECK(in_place == Y);
            }
        }
}

// start + n > max_len is refused whatever the start, also where start + n
// wraps around size_t, and nothing is written (Y apart, and Y = X).
TEST_CASE("adding the table past its end: start + n > max_len is EDGEATTN_ERR_SEQUENCE_TOO_LONG") {
    const std::size_t B = 2, n = 4, d = 5, max_len = 12;
    const std::vector<float> P = runtime_table(max_len, d);
    const std::vector<float> X(B * n * d, 1.0f), untouched(B * n * d, 3.0f);
    const std::size_t starts[] = {max_len - n + 1, max_len - 1, max_len, max_len + 1, 1000,
                                  SIZE_MAX / 2,    SIZE_MAX - n, SIZE_MAX - n + 1, SIZE_MAX - 1, SIZE_MAX};
    for (std::size_t start : starts) {
        INFO("start " << start);
        std::vector<float> Y = untouched;
        CHECK(edgeattn_positional_encoding_add_at(B, n, d, start, X.data(), P.data(), max_len, Y.data()) ==
              EDGEATTN_ERR_SEQUENCE_TOO_LONG);
        CHECK(Y == untouched);
        std::vector<float> in_place = untouched;
        CHECK(edgeattn_positional_encoding_add_at(B, n, d, start, in_place.data(), P.data(), max_len,
                                                  in_place.data()) == EDGEATTN_ERR_SEQUENCE_TOO_LONG);
        CHECK(in_place == untouched);
    }
    // The largest accepted start, for contrast: start + n == max_len.
    std::vector<float> Y = untouched;
    CHECK(edgeattn_positional_encoding_add_at(B, n, d, max_len - n, X.data(), P.data(), max_len, Y.data()) ==
          EDGEATTN_OK);
    CHECK(Y != untouched);
}
