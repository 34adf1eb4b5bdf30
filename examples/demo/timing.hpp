// Median wall time of a call, for the demo's one informative timing line.
// Not a benchmark: no warm-up control, no CPU pinning, no statistics beyond
// the median, which shrugs off the odd interrupt or page fault.
#ifndef EDGEATTN_DEMO_TIMING_HPP
#define EDGEATTN_DEMO_TIMING_HPP

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <vector>

namespace demo {

// Times `calls` runs of call() one by one and returns the median in
// microseconds. call() returns false to stop early (a failed status); then
// ok is set to false and the result is meaningless.
template <class Call>
double median_microseconds(std::size_t calls, Call call, bool &ok) {
    using clock = std::chrono::steady_clock;
    std::vector<double> times;
    times.reserve(calls);
    ok = true;
    for (std::size_t i = 0; i < calls; ++i) {
        const clock::time_point start = clock::now();
        const bool call_ok = call();
        const clock::time_point stop = clock::now();
        if (!call_ok) {
            ok = false;
            return 0.0;
        }
        times.push_back(std::chrono::duration<double, std::micro>(stop - start).count());
    }
    if (times.empty()) return 0.0;
    const auto middle = times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2);
    std::nth_element(times.begin(), middle, times.end());
    return *middle;
}

}  // namespace demo

#endif
