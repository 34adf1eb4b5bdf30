# CTest helper: edgeattn-conform IN OUT, then edgeattn-check-result IN OUT.
#   cmake -DCONFORM=exe -DCHECK=exe -DIN_CASE=case -DOUT_CASE=case [-DEMULATOR=a|b] -P run_conform.cmake
# EMULATOR is CMAKE_CROSSCOMPILING_EMULATOR with '|' for ';' (empty natively).
foreach(var CONFORM CHECK IN_CASE OUT_CASE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_conform.cmake needs -D${var}=...")
  endif()
endforeach()
string(REPLACE "|" ";" emulator "${EMULATOR}")

file(REMOVE "${OUT_CASE}") # a stale file from an earlier run must not pass for this one
execute_process(COMMAND ${emulator} "${CONFORM}" "${IN_CASE}" "${OUT_CASE}" RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "edgeattn-conform exited ${rc}: ${err}")
endif()
execute_process(COMMAND ${emulator} "${CHECK}" "${IN_CASE}" "${OUT_CASE}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "edgeattn-check-result exited ${rc}")
endif()
