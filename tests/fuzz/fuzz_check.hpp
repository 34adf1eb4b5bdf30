// What the libFuzzer harnesses share: a failed check names the harness, the
// op under test and the status, then aborts (libFuzzer keeps the input).
#ifndef EDGEATTN_FUZZ_CHECK_HPP
#define EDGEATTN_FUZZ_CHECK_HPP

#include <edgeattn/edgeattn.h>

#include <cstdio>
#include <cstdlib>

namespace fuzz {

inline const char *g_harness = "";  // set once by the harness
inline const char *g_op = "";       // set before each call, for messages

[[noreturn]] inline void fail(const char *what, int status = 0) {
    std::fprintf(stderr, "%s: %s: %s (status %d: %s)\n", g_harness, g_op, what, status,
                 edgeattn_status_str(static_cast<edgeattn_status>(status)));
    std::abort();
}

}  // namespace fuzz

#define FUZZ_CHECK(cond, what, status)         \
    do {                                       \
        if (!(cond)) ::fuzz::fail(what, status); \
    } while (0)

#endif
