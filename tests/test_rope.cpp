// Rotary position embedding (edgeattn/rope.h, edgeattn/rope.hpp): the table
// against float64 (std::pow, std::cos, std::sin), the compile-time table
// bit-identical to the runtime one, and edgeattn_rope_apply against the
// forms PyTorch models use, written here in float64: Llama / GPT-NeoX
// q cos + rotate_half(q) sin with cos, sin = cat(freqs, freqs), and GPT-J
// q cos + rotate_every_two(q) sin with repeat_interleave'd cos, sin; partial
// rotary, linear scaling, theta 500000, per-batch and negative positions,
// in place, rows split over threads; every bad argument refused with its
// own status, nothing written.
#include <doctest/doctest.h>

#include <edgeattn/edgeattn.h>
#include <edgeattn/rope.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "path_helpers.hpp"

namespace {

// ------------------------------------------------------------ float64 side

// The angle of pair i at position p: p / scale * 1 / theta^(2i / r) (HF's
// inv_freq = 1 / base^(arange(0, r, 2) / r), t / scaling_factor).
double ref_angle(double p, std::size_t i, std::size_t r, double theta, double scale) {
    return p / scale * (1.0 / std::pow(theta, 2.0 * static_cast<double>(i) / static_cast<double>(r)));
}

// Half an ulp of the float nearest to x: the table's rounding.
double half_ulp(double x) {
    if (std::fabs(x) < 0x1p-126) return 0x1p-150;  // subnormal floats
    int e = 0;
    std::frexp(x, &e);  // x = m 2^e, 0.5 <= |m| < 1: ulp 2^(e - 24)
    return std::ldexp(1.0, e - 25);
}

// The table's bound: float rounding of a value whose double computation
// (log, exp, the angle's reduction, the 32-step rotation recurrence) and
// the reference's (std::pow) differ by a few ulps of the angle: its
// frequency theta^x = exp(x log theta), |x| <= 1, is good to some ulps of
// x log theta, relatively.
double table_bound(double ref, double angle, double theta) {
    return half_ulp(ref) + 1e-14 + std::fabs(angle) * (4.0 + 2.0 * std::fabs(std::log(theta))) * 0x1p-53;
}

// Rotation of float64 rows (B, T, heads, head_size) by the PyTorch forms.
// positions: (B) first positions or empty (0).
enum class form { rotate_half, rotate_every_two };

std::vector<double> torch_rope(const std::vector<float> &X, std::size_t B, std::size_t T, std::size_t heads,
                               std::size_t head_size, std::size_t r, double theta, double scale,
                               const std::vector<std::int32_t> &positions, form f) {
    std::vector<double> Y(X.begin(), X.end());
    std::vector<double> cos_r(r), sin_r(r), q(r), rotated(r);
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t) {
            const double p = (positions.empty() ? 0.0 : positions[b]) + static_cast<double>(t);
            for (std::size_t j = 0; j < r; ++j) {
                // cat(freqs, freqs) vs freqs.repeat_interleave(2)
                const std::size_t i = f == form::rotate_half ? j % (r / 2) : j / 2;
                cos_r[j] = std::cos(ref_angle(p, i, r, theta, scale));
                sin_r[j] = std::sin(ref_angle(p, i, r, theta, scale));
            }
            for (std::size_t h = 0; h < heads; ++h) {
                double *y = &Y[((b * T + t) * heads + h) * head_size];
                for (std::size_t j = 0; j < r; ++j) q[j] = y[j];
                for (std::size_t j = 0; j < r; ++j) {
                    if (f == form::rotate_half)  // cat(-x2, x1)
                        rotated[j] = j < r / 2 ? -q[j + r / 2] : q[j - r / 2];
                    else  // stack(-x[1::2], x[::2]).flatten
                        rotated[j] = j % 2 == 0 ? -q[j + 1] : q[j - 1];
                }
                for (std::size_t j = 0; j < r; ++j) y[j] = q[j] * cos_r[j] + rotated[j] * sin_r[j];
            }
        }
    return Y;
}

// ------------------------------------------------------------ library side

edgeattn_rope_table_config table_config(std::size_t max_positions, std::size_t r, double theta = 0.0,
                                        double scale = 0.0) {
    edgeattn_rope_table_config c{};
    c.max_positions = max_positions;
    c.rotary_dims = r;
    c.theta = theta;
    c.position_scale = scale;
    return c;
}

std::vector<float> runtime_table(const edgeattn_rope_table_config &c) {
    std::vector<float> table(c.max_positions * c.rotary_dims, -7.0f);
    REQUIRE(edgeattn_rope_table(&c, table.data(), table.size()) == EDGEATTN_OK);
    return table;
}

edgeattn_rope make_rope(const std::vector<float> &table, std::size_t max_positions, std::size_t r,
                        edgeattn_rope_layout layout, const std::vector<std::int32_t> &positions) {
    edgeattn_rope rope{};
    rope.table = table.data();
    rope.max_positions = max_positions;
    rope.rotary_dims = r;
    rope.layout = layout;
    rope.positions = positions.empty() ? nullptr : positions.data();
    return rope;
}

edgeattn_rope_dims make_dims(std::size_t B, std::size_t T, std::size_t heads, std::size_t head_size) {
    return edgeattn_rope_dims{B, T, heads, head_size};
}

// The formula's bits from the table's floats: each product rounded to
// float, then one float add or subtract (no fused multiply-add). A product
// of two floats is exact in double, so the cast rounds it once.
float product(float a, float b) { return static_cast<float>(static_cast<double>(a) * static_cast<double>(b)); }

std::vector<float> formula_bits(const std::vector<float> &X, const std::vector<float> &table, std::size_t B,
                                std::size_t T, std::size_t heads, std::size_t head_size, std::size_t r,
                                edgeattn_rope_layout layout, const std::vector<std::int32_t> &positions) {
    std::vector<float> Y = X;
    const std::size_t half = r / 2;
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t) {
            const long long p = (positions.empty() ? 0 : positions[b]) + static_cast<long long>(t);
            const float *row = &table[static_cast<std::size_t>(p < 0 ? -p : p) * r];
            for (std::size_t h = 0; h < heads; ++h) {
                float *y = &Y[((b * T + t) * heads + h) * head_size];
                for (std::size_t i = 0; i < half; ++i) {
                    const std::size_t a = layout == EDGEATTN_ROPE_NEOX ? i : 2 * i;
                    const std::size_t e = layout == EDGEATTN_ROPE_NEOX ? i + half : 2 * i + 1;
                    const float c = row[i], s = p < 0 ? -row[half + i] : row[half + i];
                    const float x = y[a], z = y[e];
                    y[a] = product(x, c) - product(z, s);
                    y[e] = product(z, c) + product(x, s);
                }
            }
        }
    return Y;
}

// One apply case: the library against the PyTorch form in float64 (each
// output within 3 float roundings of its pair's inputs: the table's and
// the two products' and the sum's), the formula's bits exactly, every
// feature past r copied bit for bit, in place equal, and the same bits on
// every kernel path.
void check_apply(std::size_t B, std::size_t T, std::size_t heads, std::size_t head_size, std::size_t r,
                 std::size_t max_positions, double theta, double scale, edgeattn_rope_layout layout,
                 const std::vector<std::int32_t> &positions, unsigned seed) {
    INFO("B " << B << " T " << T << " heads " << heads << " head_size " << head_size << " r " << r << " theta "
              << theta << " scale " << scale << " layout " << static_cast<int>(layout));
    const std::vector<float> table = runtime_table(table_config(max_positions, r, theta, scale));
    const edgeattn_rope rope = make_rope(table, max_positions, r, layout, positions);
    const edgeattn_rope_dims dims = make_dims(B, T, heads, head_size);
    const std::vector<float> X = test_paths::random_floats(B * T * heads * head_size, seed, 2.0f);
    std::vector<float> Y(X.size(), -7.0f);
    REQUIRE(edgeattn_rope_apply(&dims, &rope, X.data(), Y.data()) == EDGEATTN_OK);

    const std::vector<double> want = torch_rope(X, B, T, heads, head_size, r, theta == 0.0 ? 10000.0 : theta,
                                                scale == 0.0 ? 1.0 : scale, positions,
                                                layout == EDGEATTN_ROPE_NEOX ? form::rotate_half
                                                                             : form::rotate_every_two);
    const std::size_t half = r / 2;
    double worst = 0.0;
    std::size_t copied = 0;
    for (std::size_t row = 0; row < B * T * heads; ++row) {
        const std::size_t base = row * head_size;
        for (std::size_t i = 0; i < half; ++i) {
            const std::size_t a = base + (layout == EDGEATTN_ROPE_NEOX ? i : 2 * i);
            const std::size_t e = base + (layout == EDGEATTN_ROPE_NEOX ? i + half : 2 * i + 1);
            const double scale_of_pair = std::fabs(X[a]) + std::fabs(X[e]);
            for (std::size_t k : {a, e}) {
                const double err = std::fabs(Y[k] - want[k]);
                worst = std::fmax(worst, err / scale_of_pair);
                CHECK(err <= 3.0 * 0x1p-24 * scale_of_pair);
            }
        }
        for (std::size_t j = r; j < head_size; ++j, ++copied)
            CHECK(std::memcmp(&Y[base + j], &X[base + j], sizeof(float)) == 0);
    }
    INFO("worst error / (|x| + |y|): " << worst << " = " << worst / 0x1p-24 << " x 2^-24");
    CHECK(worst > 0.0);  // the check reads real data
    CHECK(copied == B * T * heads * (head_size - r));
    CHECK(Y == formula_bits(X, table, B, T, heads, head_size, r, layout, positions));

    std::vector<float> in_place = X;
    REQUIRE(edgeattn_rope_apply(&dims, &rope, in_place.data(), in_place.data()) == EDGEATTN_OK);
    CHECK(std::memcmp(in_place.data(), Y.data(), Y.size() * sizeof(float)) == 0);

    test_paths::path_guard guard;
    for (edgeattn_isa isa : test_paths::paths()) {
        REQUIRE(edgeattn_set_isa(isa) == EDGEATTN_OK);
        for (int threads : {1, 3}) {
            test_paths::set_threads(threads);
            std::vector<float> again(X.size(), 5.0f);
            REQUIRE(edgeattn_rope_apply(&dims, &rope, X.data(), again.data()) == EDGEATTN_OK);
            CHECK(std::memcmp(again.data(), Y.data(), Y.size() * sizeof(float)) == 0);
        }
    }
    test_paths::set_threads(1);
}

}  // namespace

// ---------------------------------------------------------------- the table

TEST_CASE("the runtime table is float64's cos and sin rounded to float") {
    struct shape {
        std::size_t max_positions, r;
        double theta, scale;
    };
    const shape shapes[] = {{2048, 64, 10000.0, 1.0}, {4096, 128, 500000.0, 1.0}, {100, 6, 0.0, 0.0},
                            {1000, 2, 1e6, 1.0},      {2048, 64, 10000.0, 4.0},   {300, 16, 10000.0, 0.5},
                            {50, 8, 0.5, 1.0},        {1, 2, 0.0, 0.0},           {33, 96, 1e300, 1e-3},
                            {1, 4, 10000.0, 1e-300}};  // one row: any scale
    for (const shape &s : shapes) {
        const std::vector<float> T = runtime_table(table_config(s.max_positions, s.r, s.theta, s.scale));
        const double theta = s.theta == 0.0 ? 10000.0 : s.theta, scale = s.scale == 0.0 ? 1.0 : s.scale;
        double worst = 0.0;  // in half-ulps
        for (std::size_t p = 0; p < s.max_positions; ++p)
            for (std::size_t i = 0; i < s.r / 2; ++i) {
                const double a = ref_angle(static_cast<double>(p), i, s.r, theta, scale);
                const double c = std::cos(a), sn = std::sin(a);
                const float got_c = T[p * s.r + i], got_s = T[p * s.r + s.r / 2 + i];
                CHECK(std::fabs(got_c - c) <= table_bound(c, a, theta));
                CHECK(std::fabs(got_s - sn) <= table_bound(sn, a, theta));
                worst = std::fmax(worst, std::fabs(got_c - c) / half_ulp(c));
                worst = std::fmax(worst, std::fabs(got_s - sn) / half_ulp(sn));
            }
        INFO("max_positions " << s.max_positions << " r " << s.r << " theta " << theta << " scale " << scale
                              << ": worst " << worst << " half-ulps");
        CHECK(T[0] == 1.0f);
        CHECK(T[s.r / 2] == 0.0f);
    }
}

// 2^24 radians is the largest angle a table may hold: the reduction of so
// large an angle is within 1e-9 of exact (and the angle itself is only
// known to an ulp, 4e-9).
TEST_CASE("the largest angle a table holds, 2^24 radians, is still within float's rounding") {
    const double scale = 1.0 / 16777216.0;  // position 1 at 2^24 radians
    const std::vector<float> T = runtime_table(table_config(2, 4, 10000.0, scale));
    for (std::size_t i = 0; i < 2; ++i) {
        const double a = ref_angle(1.0, i, 4, 10000.0, scale);
        CHECK(std::fabs(T[4 + i] - std::cos(a)) <= half_ulp(std::cos(a)) + 1e-8);
        CHECK(std::fabs(T[6 + i] - std::sin(a)) <= half_ulp(std::sin(a)) + 1e-8);
    }
    // Just past it: refused.
    const edgeattn_rope_table_config past = table_config(2, 4, 10000.0, scale * (1.0 - 1e-15));
    std::vector<float> untouched(8, 3.0f);
    CHECK(edgeattn_rope_table(&past, untouched.data(), 8) == EDGEATTN_ERR_BAD_ROPE);
    CHECK(untouched == std::vector<float>(8, 3.0f));
}

TEST_CASE("the compile-time table is bit-identical to the runtime table") {
    static constexpr auto llama = edgeattn::rope_table<2048, 64>(500000.0);
    static_assert(llama.cos(0, 5) == 1.0f && llama.sin(0, 5) == 0.0f, "row 0 is (cos 0, ..., sin 0, ...)");
    static_assert(llama.max_positions == 2048 && llama.rotary_dims == 64, "shape");
    const std::vector<float> R = runtime_table(table_config(2048, 64, 500000.0, 0.0));
    CHECK(std::memcmp(llama.data(), R.data(), R.size() * sizeof(float)) == 0);

    static constexpr auto scaled = edgeattn::rope_table<77, 10>(10000.0, 4.0);
    const std::vector<float> S = runtime_table(table_config(77, 10, 0.0, 4.0));
    CHECK(std::memcmp(scaled.data(), S.data(), S.size() * sizeof(float)) == 0);

    static constexpr auto defaults = edgeattn::rope_table<40, 8>();
    const std::vector<float> D = runtime_table(table_config(40, 8, 10000.0, 1.0));
    CHECK(std::memcmp(defaults.data(), D.data(), D.size() * sizeof(float)) == 0);

    // Its option struct, and an apply through it.
    static constexpr std::int32_t first[] = {3};
    const edgeattn_rope rope = scaled.rope(EDGEATTN_ROPE_GPTJ, first);
    CHECK(rope.table == scaled.data());
    CHECK(rope.max_positions == 77);
    CHECK(rope.rotary_dims == 10);
    CHECK(rope.layout == EDGEATTN_ROPE_GPTJ);
    CHECK(rope.positions == first);
    const edgeattn_rope_dims dims = make_dims(1, 2, 1, 12);
    const std::vector<float> X = test_paths::random_floats(24, 7);
    std::vector<float> Y(24);
    REQUIRE(edgeattn_rope_apply(&dims, &rope, X.data(), Y.data()) == EDGEATTN_OK);
    CHECK(Y == formula_bits(X, S, 1, 2, 1, 12, 10, EDGEATTN_ROPE_GPTJ, {3}));
}

// ---------------------------------------------------------------- apply

TEST_CASE("apply, NeoX layout: Llama's q cos + rotate_half(q) sin") {
    check_apply(2, 5, 3, 8, 8, 64, 10000.0, 1.0, EDGEATTN_ROPE_NEOX, {}, 1);
    check_apply(1, 17, 2, 64, 64, 2048, 500000.0, 1.0, EDGEATTN_ROPE_NEOX, {2000}, 2);  // Llama 3's theta
    check_apply(3, 4, 4, 128, 128, 4096, 1000000.0, 1.0, EDGEATTN_ROPE_NEOX, {7, 4000, 123}, 3);
    check_apply(1, 9, 1, 2, 2, 16, 0.0, 0.0, EDGEATTN_ROPE_NEOX, {}, 4);  // one pair
}

TEST_CASE("apply, GPT-J layout: q cos + rotate_every_two(q) sin") {
    check_apply(2, 5, 3, 8, 8, 64, 10000.0, 1.0, EDGEATTN_ROPE_GPTJ, {}, 5);
    check_apply(2, 6, 2, 64, 64, 512, 0.0, 0.0, EDGEATTN_ROPE_GPTJ, {100, 500}, 6);
}

TEST_CASE("apply, partial rotary: features past rotary_dims pass unchanged") {
    check_apply(2, 4, 3, 10, 4, 32, 10000.0, 1.0, EDGEATTN_ROPE_NEOX, {}, 7);
    check_apply(2, 4, 3, 256, 64, 32, 10000.0, 1.0, EDGEATTN_ROPE_GPTJ, {1, 20}, 8);  // GPT-J 6B: 64 of 256
    check_apply(1, 3, 2, 80, 32, 16, 10000.0, 1.0, EDGEATTN_ROPE_NEOX, {}, 9);        // Phi: 32 of 80
}

TEST_CASE("apply, linear position scaling and a large theta") {
    check_apply(2, 8, 2, 16, 16, 256, 10000.0, 4.0, EDGEATTN_ROPE_NEOX, {0, 240}, 10);
    check_apply(1, 8, 2, 16, 16, 256, 500000.0, 8.0, EDGEATTN_ROPE_GPTJ, {100}, 11);
}

// Left padding: a batch element's first real token at position 0, its pad
// tokens before it at -1, -2, ...: their rotation is the inverse one.
TEST_CASE("apply, per-batch positions, negative ones (left padding)") {
    check_apply(3, 6, 2, 12, 12, 16, 10000.0, 1.0, EDGEATTN_ROPE_NEOX, {-3, 0, 9}, 12);
    check_apply(2, 6, 2, 12, 8, 16, 10000.0, 1.0, EDGEATTN_ROPE_GPTJ, {-15, -6}, 13);

    // Rotating by p and then by -p is the identity up to rounding.
    const std::vector<float> table = runtime_table(table_config(64, 16));
    const std::vector<float> X = test_paths::random_floats(4 * 16, 14);
    const edgeattn_rope_dims dims = make_dims(4, 1, 1, 16);
    const std::vector<std::int32_t> forward = {5, 17, 40, 63}, back = {-5, -17, -40, -63};
    const edgeattn_rope there = make_rope(table, 64, 16, EDGEATTN_ROPE_NEOX, forward);
    const edgeattn_rope home = make_rope(table, 64, 16, EDGEATTN_ROPE_NEOX, back);
    std::vector<float> Y = X;
    REQUIRE(edgeattn_rope_apply(&dims, &there, Y.data(), Y.data()) == EDGEATTN_OK);
    REQUIRE(edgeattn_rope_apply(&dims, &home, Y.data(), Y.data()) == EDGEATTN_OK);
    for (std::size_t i = 0; i < X.size(); ++i) CHECK(std::fabs(Y[i] - X[i]) <= 1e-6 * (1 + std::fabs(X[i])));
}

// Calls with rows enough for a thread team: the (B * T) token rows split
// into contiguous blocks, one per thread, as soon as a call has about a
// million flops a thread (3 * heads * rotary_dims a row: 3072 for 8 heads
// rotating 128 features, so 3000 rows are enough for 9 threads; the
// smallest call here, 2331 rows of 2304, for 5), and a block may start
// anywhere inside a batch element. Every token must still rotate at its own
// position, first position + t: the outputs of 1, 2, 3, 5 and 7 threads
// are the formula's bits and within float roundings of the float64
// rotation, token by token. (Without OpenMP every count is one thread.)
TEST_CASE("apply, rows split over threads: every token at its own position, whatever block it falls in") {
    struct shape {
        std::size_t B, T, heads, head_size, r;
        edgeattn_rope_layout layout;
        std::vector<std::int32_t> positions;
    };
    const shape shapes[] = {
        {1, 3000, 8, 128, 128, EDGEATTN_ROPE_NEOX, {}},             // one element, split inside it
        {2, 1501, 8, 128, 128, EDGEATTN_ROPE_GPTJ, {7, 2000}},      // odd T: blocks cross elements
        {3, 777, 8, 128, 96, EDGEATTN_ROPE_NEOX, {-300, 0, 3300}},  // partial rotary, negative positions
    };
    const std::size_t max_positions = 4096;
    const std::vector<float> table_128 = runtime_table(table_config(max_positions, 128));
    const std::vector<float> table_96 = runtime_table(table_config(max_positions, 96));
    unsigned seed = 20;
    for (const shape &s : shapes) {
        INFO("B " << s.B << " T " << s.T << " heads " << s.heads << " head_size " << s.head_size << " r " << s.r);
        const std::vector<float> &table = s.r == 128 ? table_128 : table_96;
        const edgeattn_rope rope = make_rope(table, max_positions, s.r, s.layout, s.positions);
        const edgeattn_rope_dims dims = make_dims(s.B, s.T, s.heads, s.head_size);
        const std::vector<float> X = test_paths::random_floats(s.B * s.T * s.heads * s.head_size, seed++, 2.0f);
        const std::vector<double> want =
            torch_rope(X, s.B, s.T, s.heads, s.head_size, s.r, 10000.0, 1.0, s.positions,
                       s.layout == EDGEATTN_ROPE_NEOX ? form::rotate_half : form::rotate_every_two);
        const std::vector<float> bits = formula_bits(X, table, s.B, s.T, s.heads, s.head_size, s.r, s.layout,
                                                     s.positions);
        const std::size_t half = s.r / 2, row = s.heads * s.head_size;
        std::vector<float> one_thread;
        for (int threads : {1, 2, 3, 5, 7}) {
            INFO("threads " << threads);
            test_paths::set_threads(threads);
            std::vector<float> Y(X.size(), -7.0f);
            REQUIRE(edgeattn_rope_apply(&dims, &rope, X.data(), Y.data()) == EDGEATTN_OK);
            // Token by token against float64 (3 float roundings of the
            // pair's size, as check_apply); the first token off is named.
            std::size_t tokens_off = 0, first_off = 0;
            double worst = 0.0;
            for (std::size_t token = 0; token < s.B * s.T; ++token) {
                bool off = false;
                for (std::size_t h = 0; h < s.heads; ++h)
                    for (std::size_t i = 0; i < half; ++i) {
                        const std::size_t base = token * row + h * s.head_size;
                        const std::size_t a = base + (s.layout == EDGEATTN_ROPE_NEOX ? i : 2 * i);
                        const std::size_t e = base + (s.layout == EDGEATTN_ROPE_NEOX ? i + half : 2 * i + 1);
                        const double pair = std::fabs(X[a]) + std::fabs(X[e]);
                        for (std::size_t k : {a, e}) {
                            const double err = std::fabs(Y[k] - want[k]) / pair;
                            worst = std::fmax(worst, err);
                            off = off || !(err <= 3.0 * 0x1p-24);
                        }
                    }
                if (off && tokens_off++ == 0) first_off = token;
            }
            INFO("tokens off: " << tokens_off << " (the first: batch element "
                                << (tokens_off ? first_off / s.T : 0) << " token " << (tokens_off ? first_off % s.T : 0)
                                << "); worst error / (|x| + |y|) " << worst / 0x1p-24 << " x 2^-24");
            CHECK(tokens_off == 0);
            CHECK(worst > 0.0);  // the check reads real data
            CHECK(std::memcmp(Y.data(), bits.data(), Y.size() * sizeof(float)) == 0);
            if (one_thread.empty()) one_thread = Y;
            CHECK(std::memcmp(Y.data(), one_thread.data(), Y.size() * sizeof(float)) == 0);
            // In place, on the same split.
            std::vector<float> in_place = X;
            REQUIRE(edgeattn_rope_apply(&dims, &rope, in_place.data(), in_place.data()) == EDGEATTN_OK);
            CHECK(std::memcmp(in_place.data(), bits.data(), bits.size() * sizeof(float)) == 0);
        }
    }
    test_paths::set_threads(1);
}

TEST_CASE("apply, positions at the ends of the table: accepted inside, EDGEATTN_ERR_ROPE_POSITION outside") {
    const std::size_t max_positions = 20, T = 4;
    const std::vector<float> table = runtime_table(table_config(max_positions, 4));
    const edgeattn_rope_dims dims = make_dims(1, T, 1, 4);
    const std::vector<float> X(4 * T, 1.0f);
    const std::int32_t good[] = {0, 16, -19, -19 + 3, 5};
    const std::int32_t bad[] = {17, 20, -20, -100, INT32_MAX, INT32_MIN, INT32_MAX - 2};
    for (std::int32_t first : good) {
        INFO("first " << first);
        std::vector<float> Y(X.size(), 3.0f);
        const std::vector<std::int32_t> positions = {first};
        const edgeattn_rope rope = make_rope(table, max_positions, 4, EDGEATTN_ROPE_NEOX, positions);
        CHECK(edgeattn_rope_apply(&dims, &rope, X.data(), Y.data()) == EDGEATTN_OK);
    }
    for (std::int32_t first : bad) {
        INFO("first " << first);
        std::vector<float> Y(X.size(), 3.0f);
        const std::vector<std::int32_t> positions = {first};
        const edgeattn_rope rope = make_rope(table, max_positions, 4, EDGEATTN_ROPE_NEOX, positions);
        CHECK(edgeattn_rope_apply(&dims, &rope, X.data(), Y.data()) == EDGEATTN_ERR_ROPE_POSITION);
        CHECK(Y == std::vector<float>(X.size(), 3.0f));
    }
    // Without positions: tokens 0 .. T - 1, so T > max_positions is refused.
    const edgeattn_rope no_positions = make_rope(table, max_positions, 4, EDGEATTN_ROPE_NEOX, {});
    const edgeattn_rope_dims long_dims = make_dims(1, max_positions + 1, 1, 4);
    const std::vector<float> long_X(4 * (max_positions + 1), 1.0f);
    std::vector<float> long_Y(long_X.size(), 3.0f);
    CHECK(edgeattn_rope_apply(&long_dims, &no_positions, long_X.data(), long_Y.data()) ==
          EDGEATTN_ERR_ROPE_POSITION);
    CHECK(long_Y == std::vector<float>(long_X.size(), 3.0f));
}

// The argument structs may lie inside the output: they are read first.
TEST_CASE("apply reads dims and rope before it writes Y") {
    const std::vector<float> table = runtime_table(table_config(16, 8));
    const std::vector<float> X = test_paths::random_floats(2 * 3 * 2 * 8, 15);
    const edgeattn_rope rope = make_rope(table, 16, 8, EDGEATTN_ROPE_GPTJ, {});
    const edgeattn_rope_dims dims = make_dims(2, 3, 2, 8);
    std::vector<float> want(X.size());
    REQUIRE(edgeattn_rope_apply(&dims, &rope, X.data(), want.data()) == EDGEATTN_OK);
    std::vector<float> Y(X.size());
    std::memcpy(Y.data(), &dims, sizeof dims);
    std::memcpy(Y.data() + 16, &rope, sizeof rope);
    REQUIRE(edgeattn_rope_apply(reinterpret_cast<const edgeattn_rope_dims *>(Y.data()),
                                reinterpret_cast<const edgeattn_rope *>(Y.data() + 16), X.data(),
                                Y.data()) == EDGEATTN_OK);
    CHECK(Y == want);
}

// ---------------------------------------------------------------- refusals

TEST_CASE("edgeattn_rope_table: each bad argument has its status and writes nothing") {
    const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
    struct bad_case {
        edgeattn_rope_table_config config;
        edgeattn_status status;
    };
    const std::size_t huge = SIZE_MAX / 2;
    const bad_case cases[] = {
        {table_config(0, 4), EDGEATTN_ERR_ZERO_DIMENSION},
        {table_config(8, 0), EDGEATTN_ERR_ZERO_DIMENSION},
        {table_config(8, 3), EDGEATTN_ERR_BAD_ROPE},
        {table_config(8, 4, -1.0), EDGEATTN_ERR_BAD_ROPE},
        {table_config(8, 4, -0.5), EDGEATTN_ERR_BAD_ROPE},
        {table_config(8, 4, nan), EDGEATTN_ERR_BAD_ROPE},
        {table_config(8, 4, inf), EDGEATTN_ERR_BAD_ROPE},
        {table_config(8, 4, -inf), EDGEATTN_ERR_BAD_ROPE},
        {table_config(8, 4, 0.0, -1.0), EDGEATTN_ERR_BAD_ROPE},
        {table_config(8, 4, 0.0, nan), EDGEATTN_ERR_BAD_ROPE},
        {table_config(8, 4, 0.0, inf), EDGEATTN_ERR_BAD_ROPE},
        {table_config(8, 4, 0.0, -inf), EDGEATTN_ERR_BAD_ROPE},
        {table_config(8, 4, 0.0, 1e-300), EDGEATTN_ERR_BAD_ROPE},    // angles past 2^24
        {table_config(8, 4, 1e-300, 1.0), EDGEATTN_ERR_BAD_ROPE},    // a frequency past 2^24
        {table_config(huge, 4), EDGEATTN_ERR_BAD_ROPE},              // angles past 2^24
        {table_config(huge, 4, 0.0, 1e300), EDGEATTN_ERR_SIZE_OVERFLOW},
        {table_config(8, 4), EDGEATTN_ERR_WORKSPACE_TOO_SMALL},      // table_floats 31
    };
    std::vector<float> table(33, 3.0f);
    for (const bad_case &c : cases) {
        INFO("max_positions " << c.config.max_positions << " r " << c.config.rotary_dims << " theta "
                              << c.config.theta << " scale " << c.config.position_scale);
        CHECK(edgeattn_rope_table(&c.config, table.data(), 31) == c.status);
        CHECK(table == std::vector<float>(33, 3.0f));
    }
    const edgeattn_rope_table_config good = table_config(8, 4);
    CHECK(edgeattn_rope_table(nullptr, table.data(), 32) == EDGEATTN_ERR_NULL_POINTER);
    CHECK(edgeattn_rope_table(&good, nullptr, 32) == EDGEATTN_ERR_NULL_POINTER);
    float *misaligned = reinterpret_cast<float *>(reinterpret_cast<unsigned char *>(table.data()) + 1);
    CHECK(edgeattn_rope_table(&good, misaligned, 32) == EDGEATTN_ERR_MISALIGNED);
    CHECK(table == std::vector<float>(33, 3.0f));
    CHECK(edgeattn_rope_table(&good, table.data(), 32) == EDGEATTN_OK);
    CHECK(table[32] == 3.0f);  // nothing past table_floats' 32
}

TEST_CASE("edgeattn_rope_apply: each bad argument has its status and writes nothing") {
    const std::size_t B = 2, T = 3, H = 2, D = 8, R = 4, P = 16, count = B * T * H * D;
    const std::vector<float> table = runtime_table(table_config(P, R));
    const std::vector<std::int32_t> positions = {1, 2};
    const edgeattn_rope good = make_rope(table, P, R, EDGEATTN_ROPE_NEOX, positions);
    const edgeattn_rope_dims dims = make_dims(B, T, H, D);
    // X and Y in one buffer, for the overlap cases; the positions and a
    // table copy in the buffer too.
    std::vector<float> buffer(4 * count + 64, 3.0f);
    float *X = buffer.data(), *Y = buffer.data() + 2 * count;
    const std::vector<float> X_values = test_paths::random_floats(count, 16);
    std::copy(X_values.begin(), X_values.end(), X);
    const std::vector<float> before = buffer;

    auto expect = [&](const edgeattn_rope_dims *d, const edgeattn_rope *r, const float *x, float *y,
                      edgeattn_status want) {
        CHECK(edgeattn_rope_apply(d, r, x, y) == want);
        CHECK(buffer == before);
    };
    auto with = [&](auto edit) {
        edgeattn_rope r = good;
        edit(r);
        return r;
    };
    auto expect_rope = [&](const edgeattn_rope &r, edgeattn_status want) { expect(&dims, &r, X, Y, want); };
    INFO("null pointers");
    expect(nullptr, &good, X, Y, EDGEATTN_ERR_NULL_POINTER);
    expect(&dims, nullptr, X, Y, EDGEATTN_ERR_NULL_POINTER);
    expect(&dims, &good, nullptr, Y, EDGEATTN_ERR_NULL_POINTER);
    expect(&dims, &good, X, nullptr, EDGEATTN_ERR_NULL_POINTER);
    for (int k = 0; k < 4; ++k) {
        INFO("zero dimension " << k);
        edgeattn_rope_dims d = dims;
        (k == 0 ? d.batch : k == 1 ? d.tokens : k == 2 ? d.heads : d.head_size) = 0;
        expect(&d, &good, X, Y, EDGEATTN_ERR_ZERO_DIMENSION);
    }
    {
        INFO("size overflow");
        const edgeattn_rope_dims d = make_dims(SIZE_MAX / 4, 2, 1, 8);
        expect(&d, &good, X, Y, EDGEATTN_ERR_SIZE_OVERFLOW);
        const edgeattn_rope r = with([](edgeattn_rope &e) { e.max_positions = SIZE_MAX / 4; });
        expect_rope(r, EDGEATTN_ERR_SIZE_OVERFLOW);
    }
    {
        INFO("bad rope fields");
        const edgeattn_rope none{};  // no rotation: not an apply
        expect_rope(none, EDGEATTN_ERR_BAD_ROPE);
        expect_rope(with([](edgeattn_rope &e) { e.table = nullptr; }), EDGEATTN_ERR_BAD_ROPE);
        const edgeattn_rope edits[] = {
            with([](edgeattn_rope &e) { e.rotary_dims = 3; }),
            with([](edgeattn_rope &e) { e.rotary_dims = 0; }),
            with([](edgeattn_rope &e) { e.rotary_dims = D + 2; }),
            with([](edgeattn_rope &e) { e.max_positions = 0; }),
        };
        for (const edgeattn_rope &r : edits) expect_rope(r, EDGEATTN_ERR_BAD_ROPE);
        for (int layout : {2, -1, 0x7FFFFFFF, INT32_MIN}) {
            INFO("layout " << layout);
            edgeattn_rope r = good;
            std::memcpy(&r.layout, &layout, sizeof layout);  // as a C caller may store it
            expect_rope(r, EDGEATTN_ERR_BAD_ROPE);
        }
    }
    {
        INFO("misaligned");
        const float *table_off = reinterpret_cast<const float *>(reinterpret_cast<const unsigned char *>(table.data()) + 2);
        const std::int32_t *pos_off =
            reinterpret_cast<const std::int32_t *>(reinterpret_cast<const unsigned char *>(positions.data()) + 1);
        expect_rope(with([&](edgeattn_rope &e) { e.table = table_off; }), EDGEATTN_ERR_MISALIGNED);
        expect_rope(with([&](edgeattn_rope &e) { e.positions = pos_off; }), EDGEATTN_ERR_MISALIGNED);
        const float *x_off = reinterpret_cast<const float *>(reinterpret_cast<const unsigned char *>(X) + 1);
        float *y_off = reinterpret_cast<float *>(reinterpret_cast<unsigned char *>(Y) + 3);
        expect(&dims, &good, x_off, Y, EDGEATTN_ERR_MISALIGNED);
        expect(&dims, &good, X, y_off, EDGEATTN_ERR_MISALIGNED);
    }
    {
        INFO("positions outside the table");
        const std::vector<std::int32_t> far = {1, 14};  // 14 + 2 = 16
        expect_rope(with([&](edgeattn_rope &e) { e.positions = far.data(); }), EDGEATTN_ERR_ROPE_POSITION);
    }
    {
        INFO("overlaps");
        expect(&dims, &good, X, X + 1, EDGEATTN_ERR_OVERLAP);
        expect(&dims, &good, X + 1, X, EDGEATTN_ERR_OVERLAP);
        expect(&dims, &good, X, X + count - 1, EDGEATTN_ERR_OVERLAP);
        // Y over the table or the positions (copies in the buffer).
        float *table_in_buffer = Y + count + 8;
        std::copy(table.begin(), table.end(), table_in_buffer);
        std::int32_t *positions_in_buffer = reinterpret_cast<std::int32_t *>(Y + count + 8);
        const std::vector<float> before_overlap = buffer;
        const edgeattn_rope over_table = with([&](edgeattn_rope &e) { e.table = table_in_buffer; });
        CHECK(edgeattn_rope_apply(&dims, &over_table, X, Y + 16) == EDGEATTN_ERR_OVERLAP);
        CHECK(buffer == before_overlap);
        std::memcpy(positions_in_buffer, positions.data(), 2 * sizeof(std::int32_t));
        const std::vector<float> before_positions = buffer;
        const edgeattn_rope over_positions = with([&](edgeattn_rope &e) { e.positions = positions_in_buffer; });
        CHECK(edgeattn_rope_apply(&dims, &over_positions, X, Y + 16) == EDGEATTN_ERR_OVERLAP);
        CHECK(buffer == before_positions);
        // Disjoint, for contrast.
        CHECK(edgeattn_rope_apply(&dims, &over_positions, X, Y) == EDGEATTN_OK);
    }
}
