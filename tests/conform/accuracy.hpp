// The accuracy bar of tests/golden/FORMAT.md, in one place for the golden
// test, the reference-shape test and edgeattn-check-result.
#ifndef EDGEATTN_TESTS_ACCURACY_HPP
#define EDGEATTN_TESTS_ACCURACY_HPP

#include "case_file.hpp"

#include <cstddef>
#include <string>

namespace edgeattn_conform {

constexpr double kMaxRelL2 = 1e-5;         // every expected tensor
constexpr double kMaxPTableAbs = 2.5e-7;   // the positional table P itself

struct Verdict {
    bool ok = false;
    std::string message; // one line: the tensor, the numbers, and why it failed
};

// Compares `got` (n values) with `ref`: every value finite and
// ||got - ref||2 / ||ref||2 <= kMaxRelL2 (an absolute bound when ref is all
// zero); with `p_table`, also max |got - ref| <= kMaxPTableAbs.
Verdict check_values(const std::string &name, const double *got, const double *ref, std::size_t n,
                     bool p_table);

// Whether FORMAT.md's table bar applies to this expected tensor.
bool is_p_table(const std::string &op, const std::string &tensor_name);

// Checks every `expect` tensor of `in` against the `result` tensor of the same
// name in `out` (shape and values; an i32 tensor exactly, every other one
// with check_values). Appends one line per tensor to `report`.
bool check_results(const Case &in, const Case &out, std::string &report);

} // namespace edgeattn_conform

#endif
