// Reader and writer of the golden case format (tests/golden/FORMAT.md).
//
// The reader takes arbitrary bytes: it is meant to be fuzzed, so every
// failure is a `false` with a one-line message (never a crash, never an
// exception), and it allocates in proportion to what the input really holds,
// never to what a header merely claims.
#ifndef EDGEATTN_TESTS_CASE_FILE_HPP
#define EDGEATTN_TESTS_CASE_FILE_HPP

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace edgeattn_conform {

enum class Role { input, expect, result };
enum class Kind { f32, f64, i32 };

const char *role_name(Role role);
const char *kind_name(Kind kind);

// Limits that keep a hostile file from exhausting memory: the golden cases
// are far below all of them.
constexpr std::size_t kMaxRank = 8;
constexpr std::uint64_t kMaxElements = std::uint64_t(64) << 20; // per tensor and per file
constexpr std::size_t kMaxNameLength = 64;
constexpr std::size_t kMaxTensors = 256;
constexpr std::size_t kMaxParams = 64;
constexpr std::uint64_t kMaxFileBytes = std::uint64_t(1) << 30;

struct Tensor {
    Role role = Role::input;
    std::string name;
    Kind kind = Kind::f32;
    std::vector<std::size_t> shape;
    // Every f32 and i32 value is exact in double, so one storage serves all kinds.
    std::vector<double> values;

    std::size_t count() const; // product of shape (1 for rank 0)
};

struct Param {
    std::string key;
    std::int64_t value = 0;
};

struct Case {
    int version = 1;
    std::string op;
    std::vector<Param> params;   // in file order
    std::vector<Tensor> tensors; // in file order

    const Tensor *find(Role role, const std::string &name) const;
    const Param *find_param(const std::string &key) const;
};

// "(2,5,3)": how shapes appear in messages.
std::string shape_string(const std::vector<std::size_t> &shape);

// Parses a whole file's bytes. On failure `err` is one line, "line N: ...".
bool parse_case(const std::string &text, Case &out, std::string &err);
// As parse_case, reading PATH first; `err` starts with the path.
bool read_case_file(const std::string &path, Case &out, std::string &err);

// The file text: f32 as %.9g, f64 as the shortest %.Ng that round-trips,
// i32 as %d, 8 values a line, as make_golden.py writes them.
std::string format_case(const Case &c);
// Writes format_case(c) to PATH; on failure removes what it wrote.
bool write_case_file(const std::string &path, const Case &c, std::string &err);

} // namespace edgeattn_conform

#endif
