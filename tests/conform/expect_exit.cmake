# CTest helper: runs a command and checks its exit status, and optionally
# that it left no OUT file and wrote exactly one line to stderr.
#   cmake -DCOMMAND=a|b|c -DEXPECT_RC=N [-DOUT=path] [-DONE_LINE_STDERR=ON] -P expect_exit.cmake
# COMMAND uses '|' for ';' so add_test passes it as one argument; empty
# elements (no emulator) drop out.
if(NOT DEFINED COMMAND OR NOT DEFINED EXPECT_RC)
  message(FATAL_ERROR "expect_exit.cmake needs -DCOMMAND=... and -DEXPECT_RC=...")
endif()
string(REPLACE "|" ";" cmd "${COMMAND}")
if(DEFINED OUT)
  file(REMOVE "${OUT}")
endif()
execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("exit ${rc}; stdout: ${out}; stderr: ${err}")
if(NOT "${rc}" STREQUAL "${EXPECT_RC}")
  message(FATAL_ERROR "expected exit status ${EXPECT_RC}, got ${rc}")
endif()
if(DEFINED OUT AND EXISTS "${OUT}")
  message(FATAL_ERROR "${OUT} was created although the command failed")
endif()
if(ONE_LINE_STDERR AND NOT err MATCHES "^[^\n]+\n$")
  message(FATAL_ERROR "stderr is not exactly one line")
endif()
