// Splits independent work items over OpenMP threads. Every item is computed
// by one thread from its inputs alone, with no reduction across items, so the
// results are bitwise identical for any thread count. Without OpenMP (or
// for work too small to pay for a thread team) the loop runs serially.
#ifndef EDGEATTN_PARALLEL_HPP
#define EDGEATTN_PARALLEL_HPP

#include <stddef.h>

#if defined(EDGEATTN_HAVE_OPENMP)
#include <omp.h>
#endif

namespace edgeattn {
namespace detail {

// Work estimates are float, not double: the Cortex-M4F has no double FPU.
// Below this many floating-point operations per thread (about 10 us of
// work), waking a team costs more than it saves: d2l's (2,4,100,5) MHA ran
// 2x slower on 2..16 threads when its 8-row projections were split.
constexpr float min_flops_per_thread = 1000000.0f;

// Threads a parallel_for may use now (1 without OpenMP).
inline size_t available_threads() {
#if defined(EDGEATTN_HAVE_OPENMP)
    return static_cast<size_t>(omp_get_max_threads());
#else
    return 1;
#endif
}

// Calls body(slot, begin, end) for contiguous ranges covering [0, items),
// slot < max_slots naming the thread's scratch. flops_per_item sizes the team.
template <class Body>
void parallel_for(size_t items, size_t max_slots, float flops_per_item, Body body) {
    if (items == 0) return;
#if defined(EDGEATTN_HAVE_OPENMP)
    size_t threads = static_cast<size_t>(omp_get_max_threads());
    if (threads > max_slots) threads = max_slots;
    if (threads > items) threads = items;
    const float by_work = static_cast<float>(items) * flops_per_item / min_flops_per_thread;
    if (by_work < static_cast<float>(threads)) threads = by_work < 1.0f ? 1 : static_cast<size_t>(by_work);
    if (threads > 1) {
        // The team is always omp_get_max_threads() strong and threads past
        // `threads` get no work: libgomp reuses a team's descriptor only for
        // a team of the same size, so teams sized per loop would malloc and
        // free one at every region of a call (tests/test_alloc_free.cpp).
#pragma omp parallel num_threads(omp_get_max_threads())
        {
            const size_t t = static_cast<size_t>(omp_get_thread_num());
            const size_t team = static_cast<size_t>(omp_get_num_threads());
            const size_t n = threads < team ? threads : team;
            const size_t begin = items * t / n, end = items * (t + 1) / n;
            if (t < n && begin < end) body(t, begin, end);
        }
        return;
    }
#else
    (void)max_slots;
    (void)flops_per_item;
#endif
    body(size_t{0}, size_t{0}, items);
}

}  // namespace detail
}  // namespace edgeattn

#endif
