// What the tests that loop over the kernel paths themselves share: the
// paths this build has and this CPU runs, a guard that restores the best
// one however a test case ends, random inputs, and the golden bar's
// measure (relative L2 error against a float64 answer).
#ifndef EDGEATTN_TESTS_PATH_HELPERS_HPP
#define EDGEATTN_TESTS_PATH_HELPERS_HPP

#include <edgeattn/edgeattn.h>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace test_paths {

// The OpenMP thread count of later calls (nothing without OpenMP).
inline void set_threads(int n) {
#if defined(_OPENMP)
    omp_set_num_threads(n);
#else
    (void)n;
#endif
}

// Whether EDGEATTN_TEST_PATHS (path names, comma-separated) names `isa`;
// unset or empty names every path. The instrumented runs set it (valgrind
// runs ~50x slower): the tests registered once per path still run each.
inline bool path_selected(edgeattn_isa isa) {
    const char *list = std::getenv("EDGEATTN_TEST_PATHS");
    if (!list || !*list) return true;
    const std::string name = edgeattn_isa_name(isa), all = std::string(",") + list + ",";
    return all.find("," + name + ",") != std::string::npos;
}

// The paths this build has, this CPU runs and EDGEATTN_TEST_PATHS selects.
inline std::vector<edgeattn_isa> paths() {
    std::vector<edgeattn_isa> v;
    for (int i = EDGEATTN_ISA_SCALAR; i <= EDGEATTN_ISA_HELIUM; ++i) {
        const edgeattn_isa isa = static_cast<edgeattn_isa>(i);
        if (edgeattn_isa_supported(isa) && path_selected(isa)) v.push_back(isa);
    }
    if (v.empty()) {  // a test over no path would pass without testing anything
        std::fprintf(stderr, "EDGEATTN_TEST_PATHS=%s selects no path this build has and this CPU runs\n",
                     std::getenv("EDGEATTN_TEST_PATHS"));
        std::exit(1);
    }
    return v;
}

struct path_guard {
    ~path_guard() { edgeattn_set_isa(EDGEATTN_ISA_AUTO); }
};

// Normal(0, scale) floats, reproducible from `seed`.
inline std::vector<float> random_floats(std::size_t n, unsigned seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> g(0.0f, scale);
    std::vector<float> v(n);
    for (float &x : v) x = g(rng);
    return v;
}

inline std::vector<double> widen(const std::vector<float> &v) { return {v.begin(), v.end()}; }

// ||got - want|| / ||want||; infinite when got has a non-finite value.
inline double rel_l2(const float *got, const std::vector<double> &want) {
    double diff = 0, ref = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        if (!std::isfinite(got[i])) return INFINITY;
        diff += (got[i] - want[i]) * (got[i] - want[i]);
        ref += want[i] * want[i];
    }
    return std::sqrt(diff / ref);
}

}  // namespace test_paths

#endif
