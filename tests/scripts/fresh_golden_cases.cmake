# Fresh golden cases from the project's own generator, through the library:
# tools/golden/make_golden.py write OUT (new inputs, float64 answers), then
# edgeattn-conform and edgeattn-check-result on every case it wrote
# (conform/run_conform.cmake).
# Run as: cmake -DPYTHON=python3 -DGENERATOR=make_golden.py -DOUT=dir
#               -DCONFORM=exe -DCHECK=exe [-DEMULATOR=a|b] -P fresh_golden_cases.cmake
# (EMULATOR: how the tools run, e.g. under valgrind; '|' for ';'.)
# Prints "SKIP" (the test's skip expression) when numpy is missing.
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
  execute_process(COMMAND ${CMAKE_COMMAND} -DCONFORM=${CONFORM} -DCHECK=${CHECK} -DIN_CASE=${case}
                          -DOUT_CASE=${OUT}/results/${name} -DEMULATOR=${EMULATOR}
                          -P ${CMAKE_CURRENT_LIST_DIR}/../conform/run_conform.cmake
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}: edgeattn-conform or edgeattn-check-result failed")
  endif()
endforeach()
message("${count} fresh cases from ${GENERATOR}: all within the bar")
