// A wrapped window KV cache's logical keys as the runs of rows that lie
// contiguously (attention_slice::ring): read by ring_cache_rows.cpp and by
// the decode path (decode_rows.cpp).
#ifndef EDGEATTN_RING_RUNS_HPP
#define EDGEATTN_RING_RUNS_HPP

#include <stddef.h>

#include "attention_rows.hpp"

namespace edgeattn {
namespace detail {

// Logical keys [key0, key0 + n) as runs: the sinks, the ring from its
// oldest row to its end, the ring from its start (at most three; a run's
// keys start at `logical`, its rows at `physical`).
struct key_run {
    size_t physical, logical, n;
};

inline size_t ring_runs(const ring_layout &r, size_t key0, size_t n, key_run runs[3]) {
    const size_t end = key0 + n, split = r.first + r.rows - r.oldest;
    size_t count = 0;
    for (size_t j = key0; j < end && count < 3;) {
        size_t run_end = end, physical = j - split + r.first;  // the ring's start
        if (j < r.first) {
            run_end = r.first;
            physical = j;
        } else if (j < split) {
            run_end = split;
            physical = j + r.oldest;
        }
        const size_t m = (run_end < end ? run_end : end) - j;
        runs[count++] = {physical, j, m};
        j += m;
    }
    return count;
}

}  // namespace detail
}  // namespace edgeattn

#endif
