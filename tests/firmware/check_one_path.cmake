# An image that never calls edgeattn_set_isa links one kernel path, the
# build's default (Helium where built; src/path_tables.hpp): its symbols
# name Helium's batch type and not the plain C++ path's.
# Run as: cmake -DNM=arm-none-eabi-nm -DIMAGE=image.elf -P check_one_path.cmake
execute_process(COMMAND ${NM} -C ${IMAGE} OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} failed on ${IMAGE}")
endif()
if(NOT symbols MATCHES "mve_batch")
  message(FATAL_ERROR "${IMAGE}: no Helium kernels")
endif()
if(symbols MATCHES "scalar_batch")
  string(REGEX MATCHALL "[^\n]*scalar_batch[^\n]*" found "${symbols}")
  list(LENGTH found count)
  message(FATAL_ERROR "${IMAGE}: ${count} symbols of the plain C++ path, in an image that never chooses a path")
endif()
message("${IMAGE}: the Helium path alone")
