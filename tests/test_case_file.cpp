// The case reader and writer: round trips of every golden case, a catalogue
// of malformed files each refused with one line, and a fixed-seed mutation
// run (a small fuzz) over the reader and run_case that must never crash.
#include <doctest/doctest.h>

#include "conform/case_file.hpp"
#include "conform/run_case.hpp"
#include "golden_files.hpp"

#include <cstdint>
#include <string>

using namespace edgeattn_conform;

namespace {

// A refusal must be one non-empty line: edgeattn-conform prints it as is.
void check_refused(const std::string &text, const char *why) {
    Case c;
    std::string err;
    bool ok = parse_case(text, c, err);
    CHECK_MESSAGE(!ok, why);
    CHECK_MESSAGE(!err.empty(), why);
    CHECK_MESSAGE(err.find('\n') == std::string::npos, why << ": " << err);
}

const char *const kHead = "edgeattn-case 1\nop masked_softmax\n";

} // namespace

TEST_CASE("every golden case survives a write and a read unchanged") {
    std::vector<std::string> files = golden_files();
    REQUIRE(files.size() >= kMinGoldenCases);
    for (const std::string &f : files) {
        Case a, b;
        std::string err;
        REQUIRE_MESSAGE(read_case_file(f, a, err), err);
        REQUIRE_MESSAGE(parse_case(format_case(a), b, err), base_name(f) << ": " << err);
        CHECK(b.op == a.op);
        CHECK(b.params.size() == a.params.size());
        REQUIRE(b.tensors.size() == a.tensors.size());
        for (std::size_t i = 0; i < a.tensors.size(); ++i) {
            const Tensor &x = a.tensors[i], &y = b.tensors[i];
            CHECK_MESSAGE((x.role == y.role && x.name == y.name && x.kind == y.kind && x.shape == y.shape),
                          base_name(f) << " tensor " << x.name);
            CHECK_MESSAGE(x.values == y.values, base_name(f) << " tensor " << x.name << ": values changed");
        }
    }
}

TEST_CASE("a minimal case parses as the grammar says") {
    Case c;
    std::string err;
    const std::string text = std::string(kHead) +
                             "param p -7\n"
                             "input X f32 3 1 1 3\n1.5 -2 nan\n"
                             "input valid_lens i32 1 1\n2\n"
                             "expect Y f64 3 1 1 3 0.25 0.75\n0\n" // line breaks inside a tensor are free
                             "input s f32 0\n3\n"                  // rank 0: one value
                             "input e f32 2 0 4\n"                 // zero elements
                             "end\n";
    REQUIRE_MESSAGE(parse_case(text, c, err), err);
    CHECK(c.op == "masked_softmax");
    REQUIRE(c.find_param("p"));
    CHECK(c.find_param("p")->value == -7);
    const Tensor *X = c.find(Role::input, "X");
    REQUIRE(X);
    CHECK(X->shape == std::vector<std::size_t>{1, 1, 3});
    CHECK(X->values[0] == 1.5);
    CHECK(X->values[2] != X->values[2]); // nan
    CHECK(c.find(Role::expect, "Y")->values[1] == 0.75);
    CHECK(c.find(Role::input, "s")->values.size() == 1);
    CHECK(c.find(Role::input, "e")->count() == 0);
}

TEST_CASE("malformed files are refused with one line") {
    const std::string h = kHead;
    check_refused("", "empty file");
    check_refused("hello world", "not a case file");
    check_refused("edgeattn-case", "no version");
    check_refused("edgeattn-case 2\nop x\nend\n", "unknown version");
    check_refused("edgeattn-case 1\nend\n", "no op");
    check_refused("edgeattn-case 1\nop a-b\nend\n", "bad op name");
    check_refused(h, "no end");
    check_refused(h + "end\nextra\n", "text after end");
    check_refused(h + "param\n", "param without name");
    check_refused(h + "param k\n", "param without value");
    check_refused(h + "param k 1.5\nend\n", "non-integer param");
    check_refused(h + "param k 99999999999999999999\nend\n", "param overflows int64");
    check_refused(h + "param k 1\nparam k 2\nend\n", "duplicate param");
    check_refused(h + "input X f32 1 1\n1\nparam k 1\nend\n", "param after a tensor");
    check_refused(h + "output X f32 1 1\n1\nend\n", "unknown role");
    check_refused(h + "input X f16 1 1\n1\nend\n", "unknown kind");
    check_refused(h + "input X f32 9 1 1 1 1 1 1 1 1 1\n1\nend\n", "rank over 8");
    check_refused(h + "input X f32 -1\nend\n", "negative rank");
    check_refused(h + "input X f32 1 -1\nend\n", "negative dimension");
    check_refused(h + "input X f32 2 4294967296 4294967296\nend\n", "product overflows 64 bits");
    check_refused(h + "input X f32 2 65536 1025\nend\n", "over 64M elements");
    check_refused(h + "input X f32 8 256 256 256 256 256 256 256 256\nend\n", "product overflows, rank 8");
    check_refused(h + "input X f32 1 67108864\n1 2 3\nend\n", "64M claimed, 3 given");
    check_refused(h + "input X f32 1 3\n1 2\nend\n", "too few values");
    check_refused(h + "input X f32 1 2\n1 2 3\nend\n", "too many values");
    check_refused(h + "input X f32 1 2\n1 2", "file ends inside a tensor");
    check_refused(h + "input X f32 1 2\n1 1.0.0\nend\n", "bad number");
    check_refused(h + "input X f32 1 1\n1e39\nend\n", "f32 overflow");
    check_refused(h + "input X f64 1 1\n1e999\nend\n", "f64 overflow");
    check_refused(h + "input X i32 1 1\n2147483648\nend\n", "i32 overflow");
    check_refused(h + "input X i32 1 1\n1.5\nend\n", "non-integer i32");
    check_refused(h + "input X f32 1 1\n1\ninput X f32 1 1\n2\nend\n", "duplicate tensor");
    check_refused(h + "input X\xff f32 1 1\n1\nend\n", "non-ASCII name");
    check_refused(h + "input " + std::string(65, 'a') + " f32 1 1\n1\nend\n", "name too long");
    check_refused(h + "input X f32 1 1\n" + std::string(100, '1') + "\nend\n", "numeral too long");
    check_refused(h + "input X f32 1 1\n1" + std::string(1, '\0') + "2\nend\n", "NUL inside a value");
    const char nul_op[] = "edgeattn-case 1\nop masked_softmax\0\nend\n";
    check_refused(std::string(nul_op, sizeof nul_op - 1), "NUL after the op name");
}

TEST_CASE("the same name may be both input and expect (but not twice in one role)") {
    Case c;
    std::string err;
    CHECK(parse_case(std::string(kHead) + "input Y f32 1 1\n1\nexpect Y f64 1 1\n1\nresult Y f32 1 1\n1\nend\n", c,
                     err));
}

// Byte flips, insertions, deletions and truncations of real cases. The
// reader must refuse cleanly or return a case that writes back and reads
// again the same; run_case then must not crash on whatever was accepted.
TEST_CASE("mutated cases never crash the reader or run_case") {
    std::string seeds[3];
    const char *names[3] = {"/softmax_seed_2d.case", "/dot_seed.case", "/posenc_odd_dim.case"};
    for (int i = 0; i < 3; ++i) {
        Case c;
        std::string err;
        REQUIRE_MESSAGE(read_case_file(std::string(EDGEATTN_GOLDEN_DIR) + names[i], c, err), err);
        seeds[i] = format_case(c);
    }
    std::uint64_t s = 12345;
    auto next = [&s]() { // xorshift64: fixed sequence everywhere
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return s;
    };
    const char alphabet[] = "0123456789 \n-.eEnaif+x\0\xff";
    std::size_t accepted = 0, ran = 0;
    for (int iter = 0; iter < 6000; ++iter) {
        std::string t = seeds[iter % 3];
        for (int m = 1 + static_cast<int>(next() % 4); m > 0 && !t.empty(); --m) {
            std::size_t pos = next() % t.size();
            char ch = alphabet[next() % (sizeof alphabet - 1)];
            switch (next() % 4) {
            case 0: t[pos] = ch; break;
            case 1: t.insert(t.begin() + static_cast<std::ptrdiff_t>(pos), ch); break;
            case 2: t.erase(pos, 1 + next() % 8); break;
            default: t.resize(pos); break;
            }
        }
        Case c, back, out;
        std::string err;
        if (!parse_case(t, c, err)) {
            REQUIRE_MESSAGE(err.find('\n') == std::string::npos, err);
            continue;
        }
        ++accepted;
        REQUIRE_MESSAGE(parse_case(format_case(c), back, err), err);
        CHECK(back.tensors.size() == c.tensors.size());
        if (run_case(c, out, err)) ++ran;
        else REQUIRE_MESSAGE(err.find('\n') == std::string::npos, err);
    }
    MESSAGE(accepted << " of 6000 mutated cases parsed, " << ran << " of those ran");
    CHECK(accepted > 0);
}
