// edgeattn-check-result IN.case OUT.case
//
// Holds each `result` tensor of OUT (written by edgeattn-conform, possibly on
// another machine) to FORMAT.md's bar against the `expect` tensor of the same
// name in IN. Prints one line per tensor.
//
// Exit status: 0 all pass; 1 a tensor fails or is missing; 2 usage error or
// a file that cannot be read.
#include "accuracy.hpp"
#include "case_file.hpp"

#include <cstdio>
#include <string>

int main(int argc, char **argv) {
    using namespace edgeattn_conform;
    if (argc != 3) {
        std::fprintf(stderr, "usage: edgeattn-check-result IN.case OUT.case\n");
        return 2;
    }
    Case in, out;
    std::string err;
    if (!read_case_file(argv[1], in, err) || !read_case_file(argv[2], out, err)) {
        std::fprintf(stderr, "edgeattn-check-result: %s\n", err.c_str());
        return 2;
    }
    if (in.op != out.op) {
        std::fprintf(stderr, "edgeattn-check-result: %s is op %s but %s is op %s\n", argv[1], in.op.c_str(),
                     argv[2], out.op.c_str());
        return 1;
    }
    std::string report;
    bool ok = check_results(in, out, report);
    std::fputs(report.c_str(), stdout);
    std::printf("%s: %s\n", argv[2], ok ? "pass" : "FAIL");
    return ok ? 0 : 1;
}
