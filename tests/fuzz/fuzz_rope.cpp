// libFuzzer harness of rotary position embedding (edgeattn/rope.h): the
// input picks a table config (any sizes, theta and position_scale any
// double, NaN and inf too), then an apply's dims, rope fields (a layout of
// any int, a table NULL or misaligned, rotary_dims any, first positions
// any int32), in place or not, and at most one spoiled pointer (NULL,
// misaligned, or Y aimed into X, the table or the positions). Then:
//
//   - the status is the one the headers' rules call for (written here from
//     rope.h and types.h, not from src/): OK exactly when nothing is wrong;
//   - on an error, no byte of any buffer changed;
//   - a table made is within float rounding of float64's cos and sin;
//   - an apply's output is, pair by pair, within 3 float roundings of the
//     float64 rotation (x cos - y sin, y cos + x sin at the token's
//     position), and the features past rotary_dims are X's bits.
#include <fuzzer/FuzzedDataProvider.h>

#include <edgeattn/edgeattn.h>

#include "fuzz_check.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace {

using fuzz::fail;

constexpr std::size_t kMaxElements = 1 << 14;

bool finite_positive(double x) { return std::isfinite(x) && x > 0.0; }

// A double the input picks: ordinary values mostly, the edges sometimes.
double pick_double(FuzzedDataProvider &in, double usual) {
    switch (in.ConsumeIntegralInRange<int>(0, 9)) {
        case 0: return 0.0;
        case 1: return -usual;
        case 2: return std::numeric_limits<double>::quiet_NaN();
        case 3: return in.ConsumeBool() ? INFINITY : -INFINITY;
        case 4: return in.ConsumeFloatingPoint<double>();
        case 5: return std::ldexp(1.0, in.ConsumeIntegralInRange<int>(-60, 60));
        default: return usual * in.ConsumeFloatingPointInRange<double>(0.01, 100.0);
    }
}

std::size_t pick_size(FuzzedDataProvider &in, std::size_t small_max) {
    switch (in.ConsumeIntegralInRange<int>(0, 15)) {
        case 0: return 0;
        case 1: return SIZE_MAX / in.ConsumeIntegralInRange<std::size_t>(1, 64);
        default: return in.ConsumeIntegralInRange<std::size_t>(1, small_max);
    }
}

// The headers' rule for a table's largest angle: (max_positions - 1) /
// position_scale times the largest frequency, or a frequency, above 2^24
// radians is EDGEATTN_ERR_BAD_ROPE. Near the edge either status is allowed
// (the library's log / exp and std::pow differ in the last bits).
enum class angle_verdict { fine, too_large, either };

angle_verdict angle_rule(std::size_t max_positions, std::size_t r, double theta, double scale) {
    const double top = std::pow(theta, -static_cast<double>(r - 2) / static_cast<double>(r));
    const double largest_frequency = top > 1.0 ? top : 1.0;
    const double largest = std::fmax(static_cast<double>(max_positions - 1) / scale * largest_frequency,
                                     largest_frequency);
    const double limit = 16777216.0;
    if (largest <= limit * (1 - 1e-12)) return angle_verdict::fine;
    if (largest > limit * (1 + 1e-12) || !std::isfinite(largest)) return angle_verdict::too_large;
    return angle_verdict::either;
}

// The angle's double error, either side: its frequency theta^x = exp(x
// log theta) is good to some ulps of x log theta (|x| <= 1), relatively.
double angle_error(double angle, double theta) {
    return std::fabs(angle) * (4.0 + 2.0 * std::fabs(std::log(theta))) * 0x1p-53;
}

double angle_of(double p, std::size_t i, std::size_t r, double theta, double scale) {
    return p / scale * (1.0 / std::pow(theta, 2.0 * static_cast<double>(i) / static_cast<double>(r)));
}

bool bytes_equal(const std::vector<float> &a, const std::vector<float> &b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct Table {
    std::vector<float> values;
    std::size_t max_positions = 0, rotary_dims = 0;
    double theta = 0, scale = 0;
};

// edgeattn_rope_table with any config; the table made when it is OK.
bool fuzz_table(FuzzedDataProvider &in, Table &t) {
    fuzz::g_op = "edgeattn_rope_table";
    edgeattn_rope_table_config c{};
    c.max_positions = pick_size(in, 300);
    c.rotary_dims = pick_size(in, 40);
    c.theta = pick_double(in, 10000.0);
    c.position_scale = pick_double(in, 1.0);
    const double theta = c.theta == 0.0 ? 10000.0 : c.theta;
    const double scale = c.position_scale == 0.0 ? 1.0 : c.position_scale;
    const bool wrong_size = in.ConsumeIntegralInRange<int>(0, 15) == 0;
    const int spoil = in.ConsumeIntegralInRange<int>(0, 20);  // 0: NULL config, 1: NULL table, 2: misaligned

    // The status by rope.h's list, in its order.
    edgeattn_status want = EDGEATTN_OK;
    bool either = false;
    std::size_t count = 0;
    const bool overflows = c.rotary_dims != 0 && c.max_positions > SIZE_MAX / sizeof(float) / c.rotary_dims;
    if (!overflows) count = c.max_positions * c.rotary_dims;
    if (spoil <= 1) want = EDGEATTN_ERR_NULL_POINTER;
    else if (c.max_positions == 0 || c.rotary_dims == 0) want = EDGEATTN_ERR_ZERO_DIMENSION;
    else if (c.rotary_dims % 2 != 0 || !finite_positive(theta) || !finite_positive(scale)) want = EDGEATTN_ERR_BAD_ROPE;
    else {
        const angle_verdict v = angle_rule(c.max_positions, c.rotary_dims, theta, scale);
        if (v == angle_verdict::too_large) want = EDGEATTN_ERR_BAD_ROPE;
        else {
            either = v == angle_verdict::either;
            if (overflows) want = EDGEATTN_ERR_SIZE_OVERFLOW;
            else if (count > kMaxElements) return false;  // a table too large to fuzz
            else if (wrong_size) want = EDGEATTN_ERR_WORKSPACE_TOO_SMALL;
            else if (spoil == 2) want = EDGEATTN_ERR_MISALIGNED;
        }
    }
    const std::size_t floats = count <= kMaxElements ? count : 4;
    std::vector<float> buffer(floats + 1, -3.0f);
    const std::vector<float> before = buffer;
    float *table = spoil == 1 ? nullptr
                   : spoil == 2 ? reinterpret_cast<float *>(reinterpret_cast<unsigned char *>(buffer.data()) + 2)
                                : buffer.data();
    const std::size_t given = wrong_size && count > 0 ? count - 1 : floats;
    const edgeattn_status st = edgeattn_rope_table(spoil == 0 ? nullptr : &c, table, given);
    FUZZ_CHECK(st == want || (either && st == EDGEATTN_ERR_BAD_ROPE), "unexpected status", st);
    if (st != EDGEATTN_OK) {
        FUZZ_CHECK(bytes_equal(buffer, before), "a refused table call wrote", st);
        return false;
    }
    FUZZ_CHECK(buffer[count] == -3.0f, "the table call wrote past its table", st);
    const std::size_t half = c.rotary_dims / 2;
    for (std::size_t p = 0; p < c.max_positions; ++p)
        for (std::size_t i = 0; i < half; ++i) {
            const double a = angle_of(static_cast<double>(p), i, c.rotary_dims, theta, scale);
            // Float rounding (2^-25 near 1) plus both sides' double error in the angle.
            const double bound = 0x1p-25 + 1e-14 + angle_error(a, theta);
            FUZZ_CHECK(std::fabs(buffer[p * c.rotary_dims + i] - std::cos(a)) <= bound, "table cos", st);
            FUZZ_CHECK(std::fabs(buffer[p * c.rotary_dims + half + i] - std::sin(a)) <= bound, "table sin", st);
        }
    buffer.pop_back();
    t.values = std::move(buffer);
    t.max_positions = c.max_positions;
    t.rotary_dims = c.rotary_dims;
    t.theta = theta;
    t.scale = scale;
    return true;
}

void fuzz_apply(FuzzedDataProvider &in, const Table &t) {
    fuzz::g_op = "edgeattn_rope_apply";
    edgeattn_rope_dims d{};
    d.batch = pick_size(in, 3);
    d.tokens = pick_size(in, 6);
    d.heads = pick_size(in, 3);
    d.head_size = t.rotary_dims + (in.ConsumeIntegralInRange<int>(0, 7) == 0 ? pick_size(in, 8)
                                                                             : in.ConsumeIntegralInRange<std::size_t>(0, 8));
    edgeattn_rope rope{};
    rope.table = t.values.data();
    rope.max_positions = t.max_positions;
    rope.rotary_dims = t.rotary_dims;
    int layout = in.ConsumeIntegralInRange<int>(0, 1);
    switch (in.ConsumeIntegralInRange<int>(0, 40)) {  // one spoiled rope field, sometimes
        case 0: layout = in.ConsumeIntegral<int>(); break;
        case 1: rope.rotary_dims = pick_size(in, 64); break;
        case 2: rope.max_positions = in.ConsumeBool() ? 0 : pick_size(in, 400); break;
        case 3: rope.table = nullptr; break;
        default: break;
    }
    std::memcpy(&rope.layout, &layout, sizeof layout);  // any int, as C may store
    const bool has_positions = in.ConsumeBool();
    std::size_t total = 0;
    const bool dims_overflow = [&] {
        std::size_t n = 1;
        for (std::size_t k : {d.batch, d.tokens, d.heads, d.head_size, sizeof(float)}) {
            if (k != 0 && n > SIZE_MAX / k) return true;
            n *= k;
        }
        total = n / sizeof(float);
        return false;
    }();
    const bool zero = d.batch == 0 || d.tokens == 0 || d.heads == 0 || d.head_size == 0;
    if (!zero && !dims_overflow && total > kMaxElements) return;  // too large to run
    const std::size_t count = zero || dims_overflow ? 4 : total;
    const std::size_t batch = zero || dims_overflow ? 1 : d.batch;

    std::vector<std::int32_t> positions(batch + 1);
    for (std::int32_t &p : positions)
        p = in.ConsumeBool() ? in.ConsumeIntegral<std::int32_t>()
                             : in.ConsumeIntegralInRange<std::int32_t>(-static_cast<std::int32_t>(t.max_positions),
                                                                       static_cast<std::int32_t>(t.max_positions));
    rope.positions = has_positions ? positions.data() : nullptr;
    // X and Y in one block: apart, the same (in place), or overlapping.
    std::vector<float> block(3 * count + 8);
    for (float &x : block) x = in.ConsumeFloatingPointInRange<float>(-4.0f, 4.0f);
    float *X = block.data();
    float *Y = block.data() + count + 4;
    const int spoil = in.ConsumeIntegralInRange<int>(0, 24);
    bool overlap = false, misaligned = false, null_pointer = false;
    std::vector<float> table_copy;
    switch (spoil) {
        case 0: null_pointer = true; X = nullptr; break;
        case 1: null_pointer = true; Y = nullptr; break;
        case 2: Y = X; break;
        case 3: {
            const std::size_t shift = in.ConsumeIntegralInRange<std::size_t>(1, count);
            Y = X + shift;
            overlap = shift < count;  // X + count: adjacent, apart
            break;
        }
        case 4: Y = reinterpret_cast<float *>(reinterpret_cast<unsigned char *>(Y) + 1); misaligned = true; break;
        case 5: rope.positions = reinterpret_cast<const std::int32_t *>(
                    reinterpret_cast<const unsigned char *>(positions.data()) + 2);
                misaligned = has_positions;
                if (!has_positions) rope.positions = nullptr;
                break;
        case 6:  // the table inside Y
            if (rope.table) {
                std::memcpy(Y + count / 2, t.values.data(),
                            std::min(t.values.size(), count - count / 2) * sizeof(float));
                rope.table = Y + count / 2;
                overlap = true;
            }
            break;
        default: break;
    }
    const bool dims_null = spoil == 7, rope_null = spoil == 8;
    if (dims_null || rope_null) null_pointer = true;

    // rope.h / types.h, in the order of the lists.
    const std::size_t r = rope.rotary_dims;
    edgeattn_status want = EDGEATTN_OK;
    const bool table_overflow = r != 0 && rope.max_positions > SIZE_MAX / sizeof(float) / r;
    if (null_pointer) want = EDGEATTN_ERR_NULL_POINTER;
    else if (zero) want = EDGEATTN_ERR_ZERO_DIMENSION;
    else if (dims_overflow) want = EDGEATTN_ERR_SIZE_OVERFLOW;
    else if (!rope.table || r == 0 || r % 2 != 0 || r > d.head_size || rope.max_positions == 0 ||
             (layout != EDGEATTN_ROPE_NEOX && layout != EDGEATTN_ROPE_GPTJ))
        want = EDGEATTN_ERR_BAD_ROPE;
    else if (table_overflow) want = EDGEATTN_ERR_SIZE_OVERFLOW;
    else if (misaligned) want = EDGEATTN_ERR_MISALIGNED;
    else {
        for (std::size_t b = 0; b < d.batch && want == EDGEATTN_OK; ++b) {
            const long long first = has_positions ? positions[b] : 0;
            const long long last = first + static_cast<long long>(d.tokens) - 1;
            const long long limit = static_cast<long long>(rope.max_positions);
            if (first <= -limit || last >= limit) want = EDGEATTN_ERR_ROPE_POSITION;
        }
        if (want == EDGEATTN_OK && overlap) want = EDGEATTN_ERR_OVERLAP;
    }
    // The table and max_positions disagree when a field was spoiled: only
    // refusals may then be run (the library reads what it is told).
    if (want == EDGEATTN_OK && (rope.max_positions > t.max_positions || rope.rotary_dims != t.rotary_dims ||
                                rope.table != t.values.data()))
        return;

    const std::vector<float> before = block;
    const edgeattn_status st = edgeattn_rope_apply(dims_null ? nullptr : &d, rope_null ? nullptr : &rope, X, Y);
    FUZZ_CHECK(st == want, "unexpected status", st);
    if (st != EDGEATTN_OK) {
        FUZZ_CHECK(bytes_equal(block, before), "a refused apply wrote", st);
        return;
    }
    const float *Xb = before.data() + (X - block.data());
    const std::size_t half = r / 2;
    for (std::size_t b = 0; b < d.batch; ++b)
        for (std::size_t tk = 0; tk < d.tokens; ++tk) {
            const double p = (has_positions ? positions[b] : 0) + static_cast<double>(tk);
            for (std::size_t h = 0; h < d.heads; ++h) {
                const std::size_t base = ((b * d.tokens + tk) * d.heads + h) * d.head_size;
                for (std::size_t i = 0; i < half; ++i) {
                    const std::size_t a = base + (layout == EDGEATTN_ROPE_NEOX ? i : 2 * i);
                    const std::size_t e = base + (layout == EDGEATTN_ROPE_NEOX ? i + half : 2 * i + 1);
                    const double angle = angle_of(p, i, r, t.theta, t.scale);
                    const double c = std::cos(angle), s = std::sin(angle), x = Xb[a], y = Xb[e];
                    const double bound = (3.0 * 0x1p-24 + angle_error(angle, t.theta)) * (std::fabs(x) + std::fabs(y));
                    FUZZ_CHECK(std::fabs(Y[a] - (x * c - y * s)) <= bound, "rotated x", st);
                    FUZZ_CHECK(std::fabs(Y[e] - (y * c + x * s)) <= bound, "rotated y", st);
                }
                FUZZ_CHECK(std::memcmp(Y + base + r, Xb + base + r, (d.head_size - r) * sizeof(float)) == 0,
                           "features past rotary_dims changed", st);
            }
        }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
    fuzz::g_harness = "fuzz_rope";
    FuzzedDataProvider in(data, size);
    const std::uint8_t head = in.ConsumeIntegral<std::uint8_t>();
    const edgeattn_isa isa = static_cast<edgeattn_isa>(EDGEATTN_ISA_SCALAR + (head >> 2) % 5);
    edgeattn_set_isa(edgeattn_isa_supported(isa) ? isa : EDGEATTN_ISA_SCALAR);
    Table t;
    if (fuzz_table(in, t)) fuzz_apply(in, t);
    return 0;
}
