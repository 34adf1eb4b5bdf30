# Bare-metal Cortex-M4F (STM32F4, nRF52, i.MX RT5xx, ... and QEMU's
# mps2-an386 board, where the tests run): arm-none-eabi, Thumb-2, FPv4-SP
# single-precision hard float, the scalar kernel path, no OpenMP, no OS,
# no exceptions, no RTTI.
#
#   cmake -S . -B build-cortex-m4f -DCMAKE_TOOLCHAIN_FILE=ports/cortex-m4f.cmake
#
# Installed with the package as <prefix>/share/edgeattn/toolchains/cortex-m4f.cmake
# (with cortex-m4f/ beside it), for a consumer of a Cortex-M4F install:
#
#   cmake -S app -B build-app -DCMAKE_TOOLCHAIN_FILE=<prefix>/share/edgeattn/toolchains/cortex-m4f.cmake \
#         -DCMAKE_FIND_ROOT_PATH=<prefix>
#
# Needs gcc-arm-none-eabi, libnewlib-arm-none-eabi and
# libstdc++-arm-none-eabi-newlib; qemu-system-arm for the tests. With
# CMAKE_SYSTEM_NAME Generic the top-level CMakeLists.txt defaults to
# EDGEATTN_BARE_METAL=ON, EDGEATTN_SIMD=OFF, EDGEATTN_OPENMP=OFF and, for the
# tests, builds the firmware in tests/firmware/ instead of the hosted suite.
# Startup code, linker script and semihosting glue live in ports/cortex-m4f/.
#
# Another Cortex-M: -DEDGEATTN_PORT_FLAGS="-mcpu=cortex-m7 -mthumb
# -mfpu=fpv5-d16 -mfloat-abi=hard" (M7, double-precision FPU) or
# "-mcpu=cortex-m33 -mthumb -mfpu=fpv5-sp-d16 -mfloat-abi=hard" (M33); the
# firmware test itself is written for the mps2-an386 memory map.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)

set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_CXX_COMPILER arm-none-eabi-g++)
set(CMAKE_ASM_COMPILER arm-none-eabi-gcc)
# No OS to link a test program against: CMake's compiler checks build a
# static library instead of an executable.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

if(NOT DEFINED EDGEATTN_PORT_FLAGS)
  set(EDGEATTN_PORT_FLAGS "-mcpu=cortex-m4 -mthumb -mfpu=fpv4-sp-d16 -mfloat-abi=hard")
endif()
set(CMAKE_C_FLAGS_INIT "${EDGEATTN_PORT_FLAGS} -ffunction-sections -fdata-sections")
set(CMAKE_CXX_FLAGS_INIT
    "${EDGEATTN_PORT_FLAGS} -ffunction-sections -fdata-sections -fno-exceptions -fno-rtti -fno-threadsafe-statics")
set(CMAKE_ASM_FLAGS_INIT "${EDGEATTN_PORT_FLAGS}")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,--gc-sections")

# Only the toolchain's own sysroot: never the build machine's /usr/include.
# A -DCMAKE_FIND_ROOT_PATH=<prefix> given on the command line comes first,
# so a consumer finds a Cortex-M4F install of edgeattn there (find_package).
list(APPEND CMAKE_FIND_ROOT_PATH /usr/lib/arm-none-eabi)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# Firmware runs on QEMU's MPS2 AN386 (Cortex-M4F), semihosting on, its
# exit() status becoming qemu's. ports/cortex-m55.cmake sets the board
# (EDGEATTN_FIRMWARE_BOARD: the linker script in ports/<port>/ and QEMU's
# machine) and the CPU before it includes this file.
if(NOT DEFINED EDGEATTN_FIRMWARE_BOARD)
  set(EDGEATTN_FIRMWARE_BOARD mps2-an386)
  set(EDGEATTN_QEMU_CPU cortex-m4)
endif()
find_program(EDGEATTN_QEMU_SYSTEM_ARM qemu-system-arm)
if(NOT EDGEATTN_QEMU_SYSTEM_ARM)
  set(EDGEATTN_QEMU_SYSTEM_ARM qemu-system-arm)
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR
    ${EDGEATTN_QEMU_SYSTEM_ARM} -M ${EDGEATTN_FIRMWARE_BOARD} -cpu ${EDGEATTN_QEMU_CPU} -nographic -monitor none
    -serial null -semihosting-config enable=on,target=native -kernel)
