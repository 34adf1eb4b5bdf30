# Bare-metal Cortex-M55 (Arm's MPS3 AN547 and QEMU's mps3-an547 board, where
# the tests run; STM32N6, Alif Ensemble): arm-none-eabi, Armv8.1-M with the
# M-profile vector extension (Helium: MVE integer and floating point) and
# the FPv5 FPU, hard float. Everything else is the Cortex-M4F port's
# (ports/cortex-m4f.cmake: no OpenMP, no OS, no exceptions, no RTTI; the
# start-up code and semihosting in ports/cortex-m4f/ serve both), with the
# AN547 memory map of ports/cortex-m55/mps3-an547.ld.
#
#   cmake -S . -B build-cortex-m55 -DCMAKE_TOOLCHAIN_FILE=ports/cortex-m55.cmake
#
# The Cortex-M85 (MPS3 AN555 on a board; QEMU has no model of it): -DEDGEATTN_PORT_FLAGS="-mcpu=cortex-m85
# -mthumb -mfloat-abi=hard" with GCC 13 or later.
if(NOT DEFINED EDGEATTN_PORT_FLAGS)
  set(EDGEATTN_PORT_FLAGS "-mcpu=cortex-m55 -mthumb -mfloat-abi=hard")
endif()
set(EDGEATTN_FIRMWARE_BOARD mps3-an547)
set(EDGEATTN_QEMU_CPU cortex-m55)
include(${CMAKE_CURRENT_LIST_DIR}/cortex-m4f.cmake)
