// What the programs that time edgeattn itself (bench_edgeattn.cpp,
// bench_decoder.cpp) share: the thread count workspaces are sized for, and
// how a refused call marks its benchmark.
#ifndef EDGEATTN_BENCH_EDGEATTN_BENCH_HPP
#define EDGEATTN_BENCH_EDGEATTN_BENCH_HPP

#include <cstddef>
#include <string>

#include "common.hpp"
#include "edgeattn/edgeattn.h"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace ebench {

// Threads a call may use: workspaces are sized for this many.
inline std::size_t max_threads() {
#if defined(_OPENMP)
    return static_cast<std::size_t>(omp_get_max_threads());
#else
    return 1;
#endif
}

inline void fail(benchmark::State &state, const char *what, edgeattn_status st) {
    state.SkipWithError((std::string(what) + ": " + edgeattn_status_str(st)).c_str());
}

}  // namespace ebench

#endif
