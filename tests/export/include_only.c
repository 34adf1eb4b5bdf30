/* Every exported header included and nothing used: a firmware's other
 * translation units do that; it must compile warning-free (-Wall -Wextra),
 * as C and as C++ (tests/CMakeLists.txt: also strict C11 and C++17 with
 * -pedantic). */
#include "exported_headers.h"
