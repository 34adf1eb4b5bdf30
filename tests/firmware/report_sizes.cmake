# Prints `size` (Berkeley format: text = flash, data = flash and RAM, bss =
# RAM) of each firmware image, and flash/RAM totals.
# Run as: cmake -DSIZE=arm-none-eabi-size -DFILES=a.elf|b.elf -P report_sizes.cmake
# With -DFLASH_BUDGET=bytes it fails when an image's flash is above it.
string(REPLACE "|" ";" files "${FILES}")
foreach(file IN LISTS files)
  execute_process(COMMAND ${SIZE} ${file} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${SIZE} failed on ${file}")
  endif()
  if(NOT out MATCHES "\n[ \t]*([0-9]+)[ \t]+([0-9]+)[ \t]+([0-9]+)[ \t]")
    message(FATAL_ERROR "cannot read the output of ${SIZE}:\n${out}")
  endif()
  math(EXPR flash "${CMAKE_MATCH_1} + ${CMAKE_MATCH_2}")
  math(EXPR ram "${CMAKE_MATCH_2} + ${CMAKE_MATCH_3}")
  get_filename_component(name "${file}" NAME)
  message("${out}${name}: flash ${flash} bytes (text + data), static RAM ${ram} bytes (data + bss)\n")
  if(DEFINED FLASH_BUDGET AND flash GREATER FLASH_BUDGET)
    message(FATAL_ERROR "${name}: flash ${flash} bytes, above the budget of ${FLASH_BUDGET} bytes")
  endif()
endforeach()
