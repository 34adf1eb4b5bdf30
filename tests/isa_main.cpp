// main() for tests that CTest runs once per kernel path with EDGEATTN_ISA set
// (see tests/CMakeLists.txt): a path this build or CPU lacks is a skip
// (exit 77, CTest's SKIP_RETURN_CODE), not a failure, so one test list
// serves every machine.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <edgeattn/edgeattn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

// The ISA named by EDGEATTN_ISA (the library's own names), AUTO when unset.
bool forced_isa(edgeattn_isa &isa, const char *&name) {
    name = std::getenv("EDGEATTN_ISA");
    isa = EDGEATTN_ISA_AUTO;
    if (!name || !*name) return true;
    for (int i = EDGEATTN_ISA_AUTO; i <= EDGEATTN_ISA_HELIUM; ++i) {
        if (std::strcmp(name, edgeattn_isa_name(static_cast<edgeattn_isa>(i))) == 0) {
            isa = static_cast<edgeattn_isa>(i);
            return true;
        }
    }
    return false;
}

} // namespace

TEST_CASE("the kernel path forced by EDGEATTN_ISA is the one in use") {
    edgeattn_isa isa;
    const char *name;
    REQUIRE(forced_isa(isa, name));
    MESSAGE("kernel path in use: " << std::string(edgeattn_isa_name(edgeattn_current_isa())));
    CHECK(edgeattn_current_isa() != EDGEATTN_ISA_AUTO);
    if (isa != EDGEATTN_ISA_AUTO) CHECK(edgeattn_current_isa() == isa);
}

int main(int argc, char **argv) {
    edgeattn_isa isa;
    const char *name;
    if (!forced_isa(isa, name)) {
        std::fprintf(stderr, "EDGEATTN_ISA=%s is not a kernel path name (scalar, sse2, avx2, avx512, neon, auto)\n",
                     name);
        return 1;
    }
    if (isa != EDGEATTN_ISA_AUTO && !edgeattn_isa_supported(isa)) {
        std::printf("skipped: EDGEATTN_ISA=%s is not built in or not supported by this CPU\n", name);
        return 77;
    }
    doctest::Context context(argc, argv);
    return context.run();
}
