# Checks that a compile-time positional-encoding table landed in .rodata
# (flash on a microcontroller), not .data or .bss.
# Run as: cmake -DOBJDUMP=objdump -DBINARY=test_positional_encoding -P check_rodata.cmake
execute_process(COMMAND ${OBJDUMP} -t -C ${BINARY} OUTPUT_VARIABLE table RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${OBJDUMP} failed on ${BINARY}")
endif()
string(REGEX MATCHALL "[^\n]*edgeattn::positional_encoding_table<[^\n]*" found "${table}")
if(NOT found)
  message(FATAL_ERROR "no edgeattn::positional_encoding_table symbol in ${BINARY}")
endif()
foreach(line IN LISTS found)
  if(NOT line MATCHES "[ \t]\\.rodata")
    message(FATAL_ERROR "the positional table is not in .rodata:\n  ${line}")
  endif()
  message(STATUS "in .rodata: ${line}")
endforeach()
