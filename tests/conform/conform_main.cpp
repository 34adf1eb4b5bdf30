// edgeattn-conform [--dump DIR] IN.case OUT.case
//
// Runs the op of IN through the C API and writes OUT: IN's header, params and
// input tensors, then one `result` tensor (f32) per expected tensor. A port
// (another target, an emulator, a board with a file system) runs this and
// hands OUT to edgeattn-check-result on any machine. --dump DIR also writes
// each result tensor (and the valid lengths) as DIR/<name>.csv
// (result_csv.hpp), e.g. for tools/figures/plot_figures.py.
//
// Exit status: 0 written; 2 usage error, malformed or unsupported case, or a
// library error (exactly one line on stderr, OUT not created); 1 OUT or a
// --dump file could not be written.
#include "case_file.hpp"
#include "result_csv.hpp"
#include "run_case.hpp"

#include <cstdio>
#include <string>

int main(int argc, char **argv) {
    using namespace edgeattn_conform;
    const char *dump_dir = nullptr;
    if (argc == 5 && std::string(argv[1]) == "--dump") {
        dump_dir = argv[2];
        argv += 2;
        argc -= 2;
    }
    if (argc != 3) {
        std::fprintf(stderr, "usage: edgeattn-conform [--dump DIR] IN.case OUT.case\n");
        return 2;
    }
    Case in, out;
    std::string err;
    if (!read_case_file(argv[1], in, err)) {
        std::fprintf(stderr, "edgeattn-conform: %s\n", err.c_str());
        return 2;
    }
    if (!run_case(in, out, err)) {
        std::fprintf(stderr, "edgeattn-conform: %s: %s\n", argv[1], err.c_str());
        return 2;
    }
    if (!write_case_file(argv[2], out, err)) {
        std::fprintf(stderr, "edgeattn-conform: %s\n", err.c_str());
        return 1;
    }
    if (dump_dir && !dump_results_csv(out, dump_dir, err)) {
        std::fprintf(stderr, "edgeattn-conform: --dump: %s\n", err.c_str());
        return 1;
    }
    return 0;
}
