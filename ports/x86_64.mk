# make PORT=x86_64: the native x86-64 build, the same as no PORT at all. The
# library needs no -march: the SSE2, AVX2+FMA and AVX-512 kernels are built
# with their own flags and picked at run time by what the CPU has, so one
# binary runs on any x86-64. Set MARCH only to tune the rest of the code for
# one machine, e.g. MARCH=native, x86-64-v3 (Haswell and later) or
# x86-64-v2; the result then needs that CPU.
PORT_TRIPLE :=
PORT_FLAGS  ?= $(if $(MARCH),-march=$(MARCH))
PORT_LDFLAGS ?=
