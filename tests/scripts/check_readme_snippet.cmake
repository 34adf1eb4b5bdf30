# A page's first ```c (or ```cpp) code block is held to a built example: it
# must appear verbatim in EXAMPLE (a program the tests build and run), and
# with COMPILE=ON it must compile on its own, warning-free and without the
# 0.x names (-DEDGEATTN_NO_DEPRECATED), as a reader pastes it.
# Run as:
#   cmake -DDOC=README.md -DLANG=c -DEXAMPLE=examples/readme/c_example.c
#         [-DCOMPILE=ON -DCOMPILER=cc -DINCLUDE=include -DOUT=dir]
#         -P check_readme_snippet.cmake
if(NOT LANG)
  set(LANG c)
endif()
file(READ "${DOC}" text)
set(fence "```${LANG}\n")
string(FIND "${text}" "${fence}" start)
if(start EQUAL -1)
  message(FATAL_ERROR "no ```${LANG} block in ${DOC}")
endif()
string(LENGTH "${fence}" fence_length)
math(EXPR start "${start} + ${fence_length}")
string(SUBSTRING "${text}" ${start} -1 rest)
string(FIND "${rest}" "```" stop)
string(SUBSTRING "${rest}" 0 ${stop} snippet)

file(READ "${EXAMPLE}" example)
string(FIND "${example}" "${snippet}" found)
if(found EQUAL -1)
  message(FATAL_ERROR "The first ```${LANG} block of ${DOC} is not a verbatim part of ${EXAMPLE}: "
                      "copy the block from the example (or the example from the block)")
endif()
message("The first ```${LANG} block of ${DOC} is a verbatim part of ${EXAMPLE}")

if(COMPILE)
  if(LANG STREQUAL "c")
    set(flags -std=c99 -x c)
    set(source "${OUT}/doc_snippet.c")
  else()
    set(flags -std=c++17 -x c++)
    set(source "${OUT}/doc_snippet.cpp")
  endif()
  file(WRITE "${source}" "${snippet}")
  execute_process(COMMAND ${COMPILER} ${flags} -pedantic -Wall -Wextra -Werror -fsyntax-only
                          -DEDGEATTN_NO_DEPRECATED -I${INCLUDE} ${source}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "The ```${LANG} block of ${DOC} does not compile warning-free:\n${out}")
  endif()
  message("It compiles on its own with -pedantic -Wall -Wextra -Werror -DEDGEATTN_NO_DEPRECATED")
endif()
