// Every golden case through the C API, held to FORMAT.md's bar.
// main() is isa_main.cpp: CTest runs this once per kernel path.
#include <doctest/doctest.h>

#include "conform/accuracy.hpp"
#include "conform/case_file.hpp"
#include "conform/run_case.hpp"

#include "golden_files.hpp"

#include <algorithm>
#include <string>

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

} // namespace

TEST_CASE("golden cases meet FORMAT.md's bar") {
    std::vector<std::string> files = golden_files();
    REQUIRE_MESSAGE(files.size() >= kMinGoldenCases, "found " << files.size() << " cases in " EDGEATTN_GOLDEN_DIR);
    for (const std::string &f : files) {
        Case in;
        std::string err;
        bool read = read_case_file(f, in, err);
        CHECK_MESSAGE(read, err);
        if (read) check_case(in, base_name(f));
    }
}

// Without attention_weights requested the library may take another path
// (no scores matrix); the output must meet the same bar.
TEST_CASE("golden outputs without attention weights requested") {
    std::size_t with_weights = 0;
    for (const std::string &f : golden_files()) {
        Case in;
        std::string err;
        REQUIRE_MESSAGE(read_case_file(f, in, err), err);
        auto is_weights = [](const Tensor &t) { return t.role == Role::expect && t.name == "attention_weights"; };
        auto it = std::remove_if(in.tensors.begin(), in.tensors.end(), is_weights);
        if (it == in.tensors.end()) continue;
        in.tensors.erase(it, in.tensors.end());
        ++with_weights;
        check_case(in, base_name(f) + " (output only)");
    }
    CHECK(with_weights >= 9); // every attention case expects weights
}

// A workspace sized for one thread must give a correct (serial) call too.
TEST_CASE("golden cases with a one-thread workspace") {
    for (const std::string &f : golden_files()) {
        Case in;
        std::string err;
        REQUIRE_MESSAGE(read_case_file(f, in, err), err);
        check_case(in, base_name(f) + " (1 thread)", 1);
    }
}

// Multi-head and self-attention with weights packed once
// (edgeattn_mha_pack_weights + the *_packed entry points), with and without
// attention weights requested.
TEST_CASE("golden multi-head cases through weights packed once") {
    std::size_t packed = 0;
    for (const std::string &f : golden_files()) {
        Case in;
        std::string err;
        REQUIRE_MESSAGE(read_case_file(f, in, err), err);
        if (in.op != "multi_head_attention" && in.op != "self_attention") continue;
        ++packed;
        check_case(in, base_name(f) + " (packed weights)", 0, true);
        auto is_weights = [](const Tensor &t) { return t.role == Role::expect && t.name == "attention_weights"; };
        in.tensors.erase(std::remove_if(in.tensors.begin(), in.tensors.end(), is_weights), in.tensors.end());
        check_case(in, base_name(f) + " (packed weights, output only)", 1, true);
    }
    CHECK(packed >= 4);
}
