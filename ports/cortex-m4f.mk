# make PORT=cortex-m4f: bare-metal Cortex-M4F (see cortex-m4f.cmake): the
# scalar path only, no OpenMP, no OS, no exceptions, no RTTI. Builds
# libedgeattn.a for a firmware tree; link it with your start-up code and
# linker script (ports/cortex-m4f/ has ones for QEMU's mps2-an386). The test
# firmware is built and run by the CMake build (tests/firmware/).
PORT_TRIPLE := arm-none-eabi
PORT_FLAGS  ?= -mcpu=cortex-m4 -mthumb -mfpu=fpv4-sp-d16 -mfloat-abi=hard
PORT_FLAGS  += -ffunction-sections -fdata-sections -DEDGEATTN_BARE_METAL
PORT_LDFLAGS ?=
PORT_BARE_METAL := 1
SIMD   ?= 0
OPENMP ?= 0
