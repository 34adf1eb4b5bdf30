# The conformance tools, for the tests and for installing: a port (or a
# model exported with tools/export_torch.py) is checked by running
#
#   edgeattn-conform IN.case OUT.case          (the library on the case's inputs)
#   edgeattn-check-result IN.case OUT.case     (OUT against IN's answers, FORMAT.md's bar)
#
# Built when EDGEATTN_BUILD_TOOLS (hosted top-level default) or the hosted
# tests are on; installed with the golden cases, FORMAT.md and the Python
# tools (EdgeattnInstall.cmake). Sources: tests/conform/.
set(_edgeattn_conform_dir ${CMAKE_CURRENT_LIST_DIR}/../tests/conform)
add_library(edgeattn_conform STATIC
  ${_edgeattn_conform_dir}/case_file.cpp
  ${_edgeattn_conform_dir}/accuracy.cpp
  ${_edgeattn_conform_dir}/run_case.cpp)
target_include_directories(edgeattn_conform PUBLIC ${_edgeattn_conform_dir}/..)
target_link_libraries(edgeattn_conform PUBLIC edgeattn::edgeattn)
if(EDGEATTN_OPENMP AND OpenMP_CXX_FOUND)
  # run_case.cpp sets the case's thread count (omp_set_num_threads), and the
  # library passes on only OpenMP's runtime.
  target_link_libraries(edgeattn_conform PUBLIC OpenMP::OpenMP_CXX)
endif()

add_executable(edgeattn-conform ${_edgeattn_conform_dir}/conform_main.cpp)
target_link_libraries(edgeattn-conform PRIVATE edgeattn_conform)
add_executable(edgeattn-check-result ${_edgeattn_conform_dir}/check_result_main.cpp)
target_link_libraries(edgeattn-check-result PRIVATE edgeattn_conform)

foreach(target edgeattn_conform edgeattn-conform edgeattn-check-result)
  target_compile_features(${target} PRIVATE cxx_std_17)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE -Wall -Wextra)
  endif()
endforeach()
unset(_edgeattn_conform_dir)
