# README's first ```cpp block (the fixed-size C++ example) compiles
# warning-free under -Wall -Wextra -Werror, as users paste it.
# Run as: cmake -DREADME=README.md -DCXX=c++ -DINCLUDE=include -DOUT=dir -P check_readme_snippet.cmake
file(READ "${README}" text)
string(FIND "${text}" "```cpp\n" start)
if(start EQUAL -1)
  message(FATAL_ERROR "no ```cpp block in ${README}")
endif()
math(EXPR start "${start} + 7")
string(SUBSTRING "${text}" ${start} -1 rest)
string(FIND "${rest}" "```" stop)
string(SUBSTRING "${rest}" 0 ${stop} snippet)
file(WRITE "${OUT}/readme_snippet.cpp" "${snippet}")
execute_process(COMMAND ${CXX} -std=c++17 -Wall -Wextra -Werror -fsyntax-only -I${INCLUDE}
                        ${OUT}/readme_snippet.cpp
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "README's C++ example does not compile warning-free:\n${out}")
endif()
message("README's C++ example: compiles with -Wall -Wextra -Werror")
