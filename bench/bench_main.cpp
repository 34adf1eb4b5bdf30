// main() of every benchmark program: applies the thread count, registers
// the program's benchmarks and runs them.
#include <string>

#include "common.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

int main(int argc, char **argv) {
    const int threads = ebench::bench_threads();
#if defined(_OPENMP)
    // edgeattn and oneDNN (Debian's is built on libgomp) read this.
    omp_set_num_threads(threads);
#endif
    benchmark::AddCustomContext("bench_threads", std::to_string(threads));
    // The compiler of this program, which built edgeattn in the same CMake
    // build (bench/make_performance_page names it).
#if defined(__clang__)
    benchmark::AddCustomContext("compiler", "clang " __clang_version__);
#elif defined(__GNUC__)
    benchmark::AddCustomContext("compiler", "gcc " __VERSION__);
#endif
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    ebench::register_benchmarks();
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
