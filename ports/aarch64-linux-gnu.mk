# make PORT=aarch64-linux-gnu: AArch64 Linux, NEON64 kernels + OpenMP, static
# programs (see aarch64-linux-gnu.cmake). Included by the top-level Makefile
# before its defaults; anything here can be overridden on the command line.
PORT_TRIPLE := aarch64-linux-gnu
PORT_FLAGS  ?=
PORT_LDFLAGS ?= -static
