# 32-bit ARMv7-A Linux, hard float (Raspberry Pi 2/3 with a 32-bit OS,
# BeagleBone, i.MX 6, Zynq-7000): ARMv7 NEON kernels + OpenMP, tests under
# qemu-arm.
#
#   cmake -S . -B build-arm-linux-gnueabihf -DCMAKE_TOOLCHAIN_FILE=ports/arm-linux-gnueabihf.cmake
#
# Needs g++-arm-linux-gnueabihf and qemu-user. Debian's armhf compiler
# defaults to -march=armv7-a -mfpu=vfpv3-d16, which has no NEON: -mfpu=neon
# here is what builds the neon path (src/arch/arm_neon.cpp). ARMv7 NEON has
# no fused multiply-add and no vector divide (xsimd refines a reciprocal
# estimate); on a Cortex-A7/A15/A17 -mfpu=neon-vfpv4 adds VFMA:
#   -DEDGEATTN_PORT_FLAGS="-mcpu=cortex-a7 -mfpu=neon-vfpv4 -mfloat-abi=hard"
set(EDGEATTN_PORT_TRIPLE arm-linux-gnueabihf)
set(EDGEATTN_PORT_PROCESSOR armv7l)
set(EDGEATTN_PORT_QEMU qemu-arm)
if(NOT DEFINED EDGEATTN_PORT_FLAGS)
  set(EDGEATTN_PORT_FLAGS "-march=armv7-a -mfpu=neon -mfloat-abi=hard")
endif()
include(${CMAKE_CURRENT_LIST_DIR}/linux-cross.cmake)
