# Fails when the static library references the heap, exceptions, RTTI,
# iostream, or the guards of function-local statics (libstdc++'s: a C
# program linking the library would fail on them). Run as: cmake -DNM=nm -DLIB=libedgeattn.a -P check_library_symbols.cmake
execute_process(COMMAND ${NM} -C ${LIB} OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} failed on ${LIB}")
endif()
string(REGEX MATCHALL "[^\n]+" lines "${symbols}")
set(forbidden "")
foreach(line IN LISTS lines)
  # undefined (U) or defined references to what firmware cannot have
  if(line MATCHES " (U|T|W|V) (malloc|calloc|realloc|free|posix_memalign|aligned_alloc|operator new|operator delete|__cxa_throw|__cxa_allocate_exception|__cxa_begin_catch|__cxa_guard_acquire|__cxa_guard_release|__gxx_personality_v0|typeinfo for|std::ios_base|std::basic_ostream|std::cout|std::cerr|printf|puts)")
    list(APPEND forbidden "${line}")
  endif()
endforeach()
list(LENGTH lines count)
if(count LESS 10)
  message(FATAL_ERROR "only ${count} lines from nm: is ${LIB} the library?")
endif()
if(forbidden)
  string(REPLACE ";" "\n  " shown "${forbidden}")
  message(FATAL_ERROR "${LIB} references what the library must not use:\n  ${shown}")
endif()
message(STATUS "${LIB}: ${count} symbol lines, no heap / exception / RTTI / iostream / stdio / static-guard references")
