// The golden case files, for the tests that walk all of them.
// EDGEATTN_GOLDEN_DIR (tests/golden) is set in tests/CMakeLists.txt.
#ifndef EDGEATTN_TESTS_GOLDEN_FILES_HPP
#define EDGEATTN_TESTS_GOLDEN_FILES_HPP

#include <algorithm>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#ifndef EDGEATTN_GOLDEN_DIR
#error "EDGEATTN_GOLDEN_DIR must name tests/golden (set in tests/CMakeLists.txt)"
#endif

namespace edgeattn_conform {

// The 17 cases make_golden.py writes; fewer means the directory is wrong.
constexpr std::size_t kMinGoldenCases = 17;

// Paths of the *.case files, sorted; no exceptions (tests may build without them).
inline std::vector<std::string> golden_files() {
    std::vector<std::string> files;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(EDGEATTN_GOLDEN_DIR, ec), end; !ec && it != end; it.increment(ec))
        if (it->path().extension() == ".case") files.push_back(it->path().string());
    std::sort(files.begin(), files.end());
    return files;
}

inline std::string base_name(const std::string &path) { return std::filesystem::path(path).filename().string(); }

} // namespace edgeattn_conform

#endif
