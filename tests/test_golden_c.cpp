// Every golden case through the C API, held to FORMAT.md's bar.
// main() is isa_main.cpp: CTest runs this once per kernel path.
#include <doctest/doctest.h>

#include "conform/accuracy.hpp"
#include "conform/case_file.hpp"
#include "conform/run_case.hpp"

#include "golden_files.hpp"

#include <algorithm>
#include <string>
#include <utility>

using namespace edgeattn_conform;

namespace {

// Runs `in` with a workspace for `threads` (0: the default) and checks every
// expected tensor; `label` names the run in messages.
void check_case(const Case &in, const std::string &label, std::size_t threads = 0, bool packed_weights = false) {
    Case out;
    std::string err;
    bool ran = run_case(in, out, err, threads, packed_weights);
    CHECK_MESSAGE(ran, label << ": " << err);
    if (!ran) return;
    std::string report;
    bool ok = check_results(in, out, report);
    CHECK_MESSAGE(ok, label << ":\n" << report);
}

// Drops the expected attention_weights of a case (so the run does not ask
// for them); false when it had none.
bool drop_expected_weights(Case &c) {
    auto is_weights = [](const Tensor &t) { return t.role == Role::expect && t.name == "attention_weights"; };
    auto it = std::remove_if(c.tensors.begin(), c.tensors.end(), is_weights);
    if (it == c.tensors.end()) return false;
    c.tensors.erase(it, c.tensors.end());
    return true;
}

// Every golden case file, read, with its name.
std::vector<std::pair<std::string, Case>> golden_cases() {
    std::vector<std::pair<std::string, Case>> cases;
    for (const std::string &f : golden_files()) {
        Case in;
        std::string err;
        REQUIRE_MESSAGE(read_case_file(f, in, err), err);
        cases.emplace_back(base_name(f), in);
    }
    return cases;
}

} // namespace

TEST_CASE("golden cases meet FORMAT.md's bar") {
    const auto cases = golden_cases();
    REQUIRE_MESSAGE(cases.size() >= kMinGoldenCases, "found " << cases.size() << " cases in " EDGEATTN_GOLDEN_DIR);
    for (const auto &[name, in] : cases) check_case(in, name);
}

// Without attention_weights requested the library may take another path
// (no scores matrix); the output must meet the same bar.
TEST_CASE("golden outputs without attention weights requested") {
    std::size_t with_weights = 0;
    for (auto &[name, in] : golden_cases()) {
        if (!drop_expected_weights(in)) continue;
        ++with_weights;
        check_case(in, name + " (output only)");
    }
    CHECK(with_weights >= 9); // every attention case expects weights
}

// A workspace sized for one thread must give a correct (serial) call too.
TEST_CASE("golden cases with a one-thread workspace") {
    for (const auto &[name, in] : golden_cases()) check_case(in, name + " (1 thread)", 1);
}

// Multi-head and self-attention with weights packed once
// (edgeattn_mha_pack_weights + the *_packed entry points), with and without
// attention weights requested.
TEST_CASE("golden multi-head cases through weights packed once") {
    std::size_t packed = 0;
    for (auto &[name, in] : golden_cases()) {
        if (in.op != "multi_head_attention" && in.op != "self_attention") continue;
        ++packed;
        check_case(in, name + " (packed weights)", 0, true);
        drop_expected_weights(in);
        check_case(in, name + " (packed weights, output only)", 1, true);
    }
    CHECK(packed >= 4);
}
