// doctest's main(), compiled once and shared by the test executables that
// need nothing before the tests run.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
