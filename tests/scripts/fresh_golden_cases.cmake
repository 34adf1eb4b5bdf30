# Fresh golden cases from the project's own generator, through the library:
# tools/golden/make_golden.py write OUT (new inputs, float64 answers), then
# edgeattn-conform and edgeattn-check-result on every case it wrote.
# Run as: cmake -DPYTHON=python3 -DGENERATOR=make_golden.py -DOUT=dir
#               -DCONFORM=exe -DCHECK=exe [-DEMULATOR=a|b] -P fresh_golden_cases.cmake
# (EMULATOR: how the tools run, e.g. under valgrind; '|' for ';'.)
# Prints "SKIP" (the test's skip expression) when numpy is missing.
string(REPLACE "|" ";" emulator "${EMULATOR}")
file(REMOVE_RECURSE "${OUT}")
execute_process(COMMAND "${PYTHON}" "${GENERATOR}" write "${OUT}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 77)
  message("SKIP: ${err}")
  return()
elseif(NOT rc EQUAL 0)
  message(FATAL_ERROR "${GENERATOR} write exited ${rc}:\n${out}${err}")
endif()
file(GLOB cases "${OUT}/*.case")
list(LENGTH cases count)
if(count EQUAL 0)
  message(FATAL_ERROR "${GENERATOR} wrote no case into ${OUT}")
endif()
file(MAKE_DIRECTORY "${OUT}/results")
foreach(case IN LISTS cases)
  get_filename_component(name "${case}" NAME)
  execute_process(COMMAND ${emulator} "${CONFORM}" "${case}" "${OUT}/results/${name}" RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "edgeattn-conform ${name} exited ${rc}: ${err}")
  endif()
  execute_process(COMMAND ${emulator} "${CHECK}" "${case}" "${OUT}/results/${name}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "edgeattn-check-result ${name} exited ${rc}")
  endif()
endforeach()
message("${count} fresh cases from ${GENERATOR}: all within the bar")
