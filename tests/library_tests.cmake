# Tests of the library's own promises (included from tests/CMakeLists.txt):
#
#   test_fixed_size_api        every golden case through the C++17 modules
#   test_positional_encoding   table accuracy, relative-position rotation,
#                              compile-time == runtime table
#   test_rope                  RoPE table vs float64, compile-time == runtime
#                              table, the rotation vs PyTorch's forms in
#                              float64 (also split over 1..7 threads), refusals
#   test_status                each bad argument: its status, outputs untouched
#   test_streaming             the online-softmax path over several key blocks
#                              against the float64 reference, every path
#   test_determinism           bitwise-identical results for 1, 2 and 8 threads
#   test_packed_weights        edgeattn_mha_pack_weights: refusals, one packed
#                              buffer on every path, thread-count independence
#   test_kernels               exp's ULP bound and range, the packed GEMM, the
#                              streaming softmax, on every path the CPU runs;
#                              AUTO's path vs the CPU's features, each path's
#                              tables holding its own kernels
#   test_numeric_edges         +-1e30, +-inf, NaN, all-masked rows, K = 1, huge d
#                              on every path, against the float64 reference
#   test_alloc_free            counting malloc/free/new/delete: no call in the
#                              steady state of any op (OpenMP: after a warm-up)
#   test_thread_use            a workspace sized for one thread gives a call
#                              that opens no OpenMP parallel region
#   hygiene.library_symbols    libedgeattn.a references no heap, exceptions,
#                              RTTI, iostream, stdio or static guards
#   hygiene.table_in_rodata    the constexpr positional table is in .rodata

foreach(t test_fixed_size_api test_positional_encoding test_rope test_status test_kernels test_determinism
          test_streaming test_packed_weights)
  add_executable(${t} ${t}.cpp $<TARGET_OBJECTS:edgeattn_isa_main>)
  target_link_libraries(${t} PRIVATE edgeattn_conform edgeattn_doctest)
  target_compile_definitions(${t} PRIVATE EDGEATTN_GOLDEN_DIR="${EDGEATTN_GOLDEN_DIR}")
  edgeattn_test_options(${t})
  if(t STREQUAL "test_determinism")
    add_test(NAME ${t} COMMAND ${t} "--test-case-exclude=head sizes above 256*")
  else()
    add_test(NAME ${t} COMMAND ${t})
  endif()
endforeach()
# Head sizes above 256 over 1 to 8 threads on every path: label `long`,
# which the instrumented runs leave out (minutes under valgrind).
add_test(NAME test_determinism.head_sizes COMMAND test_determinism "--test-case=head sizes above 256*")
set_tests_properties(test_determinism.head_sizes PROPERTIES LABELS long)
# test_kernels reaches the kernel table, which is internal.
target_include_directories(test_kernels PRIVATE ${PROJECT_SOURCE_DIR}/src)
# test_kernels checks the path AUTO picks against the CPU's features and the
# paths this build compiled (their names, space-separated).
string(REPLACE ";" " " test_kernel_paths "${EDGEATTN_ISAS}")
target_compile_definitions(test_kernels PRIVATE "EDGEATTN_TEST_KERNEL_PATHS=\"${test_kernel_paths}\"")
target_sources(test_streaming PRIVATE reference.cpp)
# test_rope computes the rotation's float bits itself: unfused, as the library.
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  target_compile_options(test_rope PRIVATE -ffp-contract=off)
endif()
target_sources(test_packed_weights PRIVATE reference.cpp)

# One doctest program, tests/<name>.cpp with the extra sources given, built
# with the tests' options and run by CTest under its own name.
function(edgeattn_doctest_test name)
  add_executable(${name} ${name}.cpp ${ARGN} $<TARGET_OBJECTS:edgeattn_doctest_main>)
  target_link_libraries(${name} PRIVATE edgeattn::edgeattn edgeattn_doctest)
  edgeattn_test_options(${name})
  add_test(NAME ${name} COMMAND ${name})
endfunction()

# Hardening: numeric edge cases on every path (the test loops over
# the paths itself).
edgeattn_doctest_test(test_numeric_edges reference.cpp)

# Allocation-freedom at run time: replaces malloc & co. and operator new /
# delete with counting versions (glibc's __libc_* underneath). Not under the
# sanitizers (they own the allocator) nor in cross builds (static glibc).
if(NOT EDGEATTN_SANITIZE AND NOT EDGEATTN_SANITIZE_THREAD AND NOT CMAKE_CROSSCOMPILING AND CMAKE_SYSTEM_NAME STREQUAL "Linux")
  add_executable(test_alloc_free test_alloc_free.cpp $<TARGET_OBJECTS:edgeattn_doctest_main>)
  target_link_libraries(test_alloc_free PRIVATE edgeattn::edgeattn edgeattn_doctest)
  edgeattn_test_options(test_alloc_free)
  add_test(NAME test_alloc_free COMMAND test_alloc_free)
  # Threads a call uses, by workspace size: replaces libgomp's GOMP_parallel
  # with a counting one (forwarded through dlsym), so glibc and native only too.
  # Label `long`: thread teams under valgrind take minutes.
  edgeattn_doctest_test(test_thread_use)
  target_link_libraries(test_thread_use PRIVATE ${CMAKE_DL_LIBS})
  set_tests_properties(test_thread_use PROPERTIES LABELS long)
endif()
foreach(isa IN LISTS EDGEATTN_TEST_ISAS)
  add_test(NAME test_fixed_size_api.${isa} COMMAND test_fixed_size_api)
  set_tests_properties(test_fixed_size_api.${isa} PROPERTIES ENVIRONMENT EDGEATTN_ISA=${isa} SKIP_RETURN_CODE 77)
endforeach()

add_test(NAME hygiene.library_symbols
  COMMAND ${CMAKE_COMMAND} -DNM=${CMAKE_NM} -DLIB=$<TARGET_FILE:edgeattn>
    -P ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_library_symbols.cmake)
add_test(NAME hygiene.public_api
  COMMAND ${CMAKE_COMMAND} -DNM=${CMAKE_NM} -DLIB=$<TARGET_FILE:edgeattn>
    -DINCLUDE=${PROJECT_SOURCE_DIR}/include -DMAX=36
    -P ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_public_api.cmake)
add_test(NAME hygiene.version
  COMMAND ${CMAKE_COMMAND} -DHEADER=${PROJECT_SOURCE_DIR}/include/edgeattn/types.h
    -DVERSION=${PROJECT_VERSION} -P ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_version.cmake)
# Documentation: README.md at most 250 lines, every relative link and
# anchor of README.md, CHANGELOG.md and docs/*.md resolving, README's
# commands the ones .ci/run runs, every 0.x name in CHANGELOG.md.
add_test(NAME docs.links_and_readme
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DMAX_README_LINES=250
    -P ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_docs.cmake)
# Headers by op: no include cycle, and each compiles on its own as strict
# C11 and as C++17 (the C++ ones as C++17), with and without the 0.x names.
add_test(NAME hygiene.include_graph
  COMMAND ${CMAKE_COMMAND} -DINCLUDE=${PROJECT_SOURCE_DIR}/include
    -P ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_include_graph.cmake)
foreach(header config types attention kv_cache dense convert positional rope dispatch deprecated edgeattn)
  add_test(NAME compile_time.header_${header}_c11
    COMMAND ${CMAKE_C_COMPILER} -std=c11 -pedantic -Wall -Wextra -Werror -fsyntax-only
      -I${PROJECT_SOURCE_DIR}/include "-DHEADER=<edgeattn/${header}.h>"
      ${CMAKE_CURRENT_SOURCE_DIR}/headers/include_one.c)
  add_test(NAME compile_time.header_${header}_cxx
    COMMAND ${CMAKE_CXX_COMPILER} -std=c++17 -pedantic -Wall -Wextra -Werror -fsyntax-only -x c++
      -I${PROJECT_SOURCE_DIR}/include "-DHEADER=<edgeattn/${header}.h>"
      ${CMAKE_CURRENT_SOURCE_DIR}/headers/include_one.c)
endforeach()
foreach(header attention kv_cache positional_encoding rope edgeattn)
  add_test(NAME compile_time.header_${header}_hpp
    COMMAND ${CMAKE_CXX_COMPILER} -std=c++17 -pedantic -Wall -Wextra -Werror -fsyntax-only -x c++
      -I${PROJECT_SOURCE_DIR}/include "-DHEADER=<edgeattn/${header}.hpp>"
      ${CMAKE_CURRENT_SOURCE_DIR}/headers/include_one.c)
endforeach()
add_test(NAME compile_time.without_deprecated_names
  COMMAND ${CMAKE_CXX_COMPILER} -std=c++17 -pedantic -Wall -Wextra -Werror -fsyntax-only -x c++
    -DEDGEATTN_NO_DEPRECATED -I${PROJECT_SOURCE_DIR}/include "-DHEADER=<edgeattn/edgeattn.hpp>"
    ${CMAKE_CURRENT_SOURCE_DIR}/headers/include_one.c)
# The fixed-size C++ API refuses at compile time (static_assert) what the C
# API refuses at run time: overflowing sizes, heads that do not divide,
# n > max_len, zero dimensions; case 0 is the control that must compile.
foreach(case 0 1 2 3 4 5)
  add_test(NAME compile_time.fixed_size_rejects_${case}
    COMMAND ${CMAKE_CXX_COMPILER} -std=c++17 -fsyntax-only -I${PROJECT_SOURCE_DIR}/include -DCASE=${case}
      ${CMAKE_CURRENT_SOURCE_DIR}/compile_fail/fixed_size_rejects.cpp)
  if(NOT case EQUAL 0)
    set_tests_properties(compile_time.fixed_size_rejects_${case} PROPERTIES PASS_REGULAR_EXPRESSION "static.assert")
  endif()
endforeach()

# An instrumented archive references the sanitizer runtime (its allocator
# among it): the symbol check is about the real library, so not there.
if(EDGEATTN_SANITIZE OR EDGEATTN_SANITIZE_THREAD)
  set_tests_properties(hygiene.library_symbols hygiene.public_api PROPERTIES DISABLED TRUE)
endif()
add_test(NAME hygiene.table_in_rodata
  COMMAND ${CMAKE_COMMAND} -DOBJDUMP=${CMAKE_OBJDUMP} -DBINARY=$<TARGET_FILE:test_positional_encoding>
    -P ${CMAKE_CURRENT_SOURCE_DIR}/scripts/check_rodata.cmake)

# Decoder: edgeattn::KVCache (kv_cache.hpp) against the float64
# reference on every path (the test loops over the paths itself).
edgeattn_doctest_test(test_kv_cache_module reference.cpp)

# Decoder: masks, grouped-query heads, the KV cache and the
# projection against the float64 reference on long shapes, and every
# refusal of the decoder calls (the test loops over the paths itself).
edgeattn_doctest_test(test_decoder reference.cpp)

# Reduced precision: int8 / fp16 weights against the float64
# reference with the dequantised weights, the converters, the refusals
# (the test loops over the paths itself).
edgeattn_doctest_test(test_reduced_precision reference.cpp)

# The int8 arithmetic of dense layers: against a float64 model of its
# quantisation, every path bit for bit the plain one, any thread count,
# zeros / NaN / inf rows, the largest input size, refusals (the test loops
# over the paths itself).
edgeattn_doctest_test(test_integer_arithmetic reference.cpp)

# The int8 arithmetic of an attend over an int8 KV cache: against a float64
# model of its query quantisation, each score's bits the rule's on every
# path, decode and prefill, a wrapped window, any thread count, NaN rows,
# refusals (the test loops over the paths itself).
edgeattn_doctest_test(test_integer_cache_scores)

# Bits independent of the work split: every masked op at 1..8 threads and
# workspaces sized for 1, 3 and 8, NaN / inf at masked positions (the test
# loops over the paths itself).
# edgeattn_workspace_size for one call and for a decoder step's set.
edgeattn_doctest_test(test_workspace_query)

# The 0.x names: each deprecated wrapper gives its 1.0 call's bits and the
# float64 answer.
edgeattn_doctest_test(test_deprecated_names reference.cpp)

edgeattn_doctest_test(test_split_invariance)

# Workspace bounds: every op with a workspace given exactly
# *_workspace_size() bytes between guard bytes (outputs, packed weights and
# cache memory too), for several thread counts, against the float64
# reference; once per kernel path (EDGEATTN_ISA).
add_executable(test_workspace_bounds test_workspace_bounds.cpp reference.cpp $<TARGET_OBJECTS:edgeattn_isa_main>)
target_link_libraries(test_workspace_bounds PRIVATE edgeattn::edgeattn edgeattn_doctest)
edgeattn_test_options(test_workspace_bounds)
add_test(NAME test_workspace_bounds COMMAND test_workspace_bounds)
foreach(isa IN LISTS EDGEATTN_TEST_ISAS)
  add_test(NAME test_workspace_bounds.${isa} COMMAND test_workspace_bounds)
  set_tests_properties(test_workspace_bounds.${isa} PROPERTIES ENVIRONMENT EDGEATTN_ISA=${isa} SKIP_RETURN_CODE 77)
endforeach()

# The KV cache's contract: the cache struct, dims, mask and weights read
# before anything is written (so they may sit in the workspace or an
# output), edited structs refused, a refused append writing nothing, int8
# rows byte by byte against an independent computation, NaN and infinities
# against the fp32 cache, workspace sizes (the test loops over the paths itself).
edgeattn_doctest_test(test_kv_cache_contract reference.cpp)

# Argument placement: each struct a call takes by pointer, copied into the
# workspace or an output, gives the same bits; an output over an array the
# call reads is an overlap; enums holding any int get their status (the
# by-value ones passed from C: enum_args_from_c.c).
edgeattn_doctest_test(test_argument_placement enum_args_from_c.c reference.cpp)

# Window KV caches, projection-free cache calls and the sliding-window
# mask against the float64 reference: setup rules, ring placement,
# attention over wrapped rings in stream order, typed storage, truncation,
# thread-count independence (the test loops over the paths itself).
edgeattn_doctest_test(test_window_cache reference.cpp)

# RoPE fused into the KV cache calls: a wrapping window stream against
# float64 on every path and storage, and bit for bit the projection-free
# calls on rows rotated by edgeattn_rope_apply.
edgeattn_doctest_test(test_rope_cache reference.cpp)

# 100,000 tokens through a window cache, each step against the float64
# reference: label `long`, which the instrumented runs (valgrind, ASan,
# TSan in .ci/hardening.sh) leave out.
edgeattn_doctest_test(test_window_stream reference.cpp)
# ONNX Attention's shapes: value heads of their own width (MHA and the KV
# cache), projection-free MHA, fp16 tensors at the boundary, every path.
edgeattn_doctest_test(test_attention_shapes reference.cpp)
set_tests_properties(test_window_stream PROPERTIES LABELS long)

# ONNX Attention's score semantics (scale, softcap, masking, weights
# output, alignment, right window, ALiBi) against the float64 reference on
# every path: sdpa, grouped-query mha, KV caches of every storage in place
# and wrapped, 1 vs 4 threads (the test loops over the paths itself).
edgeattn_doctest_test(test_score_semantics reference.cpp)
