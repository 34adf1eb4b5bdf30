# make PORT=arm-linux-gnueabihf: ARMv7-A Linux, hard float, NEON kernels +
# OpenMP, static programs (see arm-linux-gnueabihf.cmake). -mfpu=neon is what
# builds the neon path: Debian's armhf default FPU has no NEON.
PORT_TRIPLE := arm-linux-gnueabihf
PORT_FLAGS  ?= -march=armv7-a -mfpu=neon -mfloat-abi=hard
PORT_LDFLAGS ?= -static
