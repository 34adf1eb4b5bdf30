// What the programs that time edgeattn itself (bench_edgeattn.cpp,
// bench_decoder.cpp) share: the thread count workspaces are sized for, the
// workspace query of one call, and how a refused call marks its benchmark.
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

// Workspace bytes of one call of `op` on `dims` (`tokens`: what a KV cache
// store takes) for max_threads() threads: edgeattn_workspace_size with one
// request.
inline edgeattn_status workspace_size(edgeattn_op op, const edgeattn_attention_dims &dims,
                                      std::size_t tokens, std::size_t &bytes,
                                      edgeattn_arithmetic arithmetic = EDGEATTN_ARITHMETIC_FLOAT) {
    edgeattn_workspace_request request{};
    request.op = op;
    request.dims = dims;
    request.tokens = tokens;
    request.arithmetic = arithmetic;
    return edgeattn_workspace_size(&request, 1, max_threads(), &bytes);
}

inline void fail(benchmark::State &state, const char *what, edgeattn_status st) {
    state.SkipWithError((std::string(what) + ": " + edgeattn_status_str(st)).c_str());
}

}  // namespace ebench

#endif
