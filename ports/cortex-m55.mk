# make PORT=cortex-m55: bare-metal Cortex-M55 (see cortex-m55.cmake): as
# cortex-m4f.mk, for Armv8.1-M with Helium and FPv5. Builds libedgeattn.a
# for a firmware tree; ports/cortex-m55/ has a linker script for QEMU's
# mps3-an547 (the start-up code is ports/cortex-m4f/'s). The test firmware
# is built and run by the CMake build (tests/firmware/).
PORT_FLAGS ?= -mcpu=cortex-m55 -mthumb -mfloat-abi=hard
include ports/cortex-m4f.mk
