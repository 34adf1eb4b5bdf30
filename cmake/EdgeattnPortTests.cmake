# Adjustments of the hosted test suite (tests/) for the ARM ports; included
# from the top-level CMakeLists.txt after add_subdirectory(tests), so the
# tests added here live in the top-level directory.

# GCC 12 for AArch64 dies with an internal compiler error (in
# vect_transform_reduction) vectorising test_kernels.cpp's std::fmax
# reduction loops at -O3. Test code only: the library keeps its flags.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13
   AND CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$" AND TARGET test_kernels)
  target_compile_options(test_kernels PRIVATE -fno-tree-loop-vectorize)
endif()

# The per-path tests (test_golden_c.neon, ...) exit 77, a CTest skip, when a
# path is not built in or the CPU lacks it. On an ARM build with the neon
# path that would hide a broken port, so here a skip is a failure: the forced
# path must be the one in use.
if(TARGET test_golden_c AND EDGEATTN_ISAS MATCHES "(^|;)neon(;|$)")
  add_test(NAME port.neon_path_in_use
    COMMAND test_golden_c "--test-case=the kernel path forced by EDGEATTN_ISA is the one in use")
  set_tests_properties(port.neon_path_in_use PROPERTIES ENVIRONMENT EDGEATTN_ISA=neon)
endif()
