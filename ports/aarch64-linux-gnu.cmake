# AArch64 Linux (Raspberry Pi 3/4/5 in 64-bit mode, Jetson, i.MX 8, RK3588):
# NEON64 kernels + OpenMP, tests under qemu-aarch64.
#
#   cmake -S . -B build-aarch64-linux-gnu -DCMAKE_TOOLCHAIN_FILE=ports/aarch64-linux-gnu.cmake
#
# Needs g++-aarch64-linux-gnu and qemu-user. NEON (Advanced SIMD) is part of
# ARMv8-A, so the default -march=armv8-a already builds the neon path; tune
# for a board with e.g. -DEDGEATTN_PORT_FLAGS="-mcpu=cortex-a72" (Pi 4),
# "-mcpu=cortex-a76" (Pi 5) or "-mcpu=cortex-a55".
set(EDGEATTN_PORT_TRIPLE aarch64-linux-gnu)
set(EDGEATTN_PORT_PROCESSOR aarch64)
set(EDGEATTN_PORT_QEMU qemu-aarch64)
if(NOT DEFINED EDGEATTN_PORT_FLAGS)
  set(EDGEATTN_PORT_FLAGS "")
endif()
include(${CMAKE_CURRENT_LIST_DIR}/linux-cross.cmake)
