# Plain-make build of edgeattn: the same sources as CMakeLists.txt (both read
# cmake/EdgeattnSources.cmake). CMake + CTest is the main build; this one is
# for firmware trees that use make.
#
#   make                 libedgeattn.a in $(BUILD)
#   make test            build and run the test suite
#   make demo            build and run edgeattn-demo
#   make install PREFIX=/usr/local   headers, libedgeattn.a, CMake package, edgeattn.pc,
#                        the ports' toolchain files; hosted: the conformance tools,
#                        golden cases, Python tools
#   make PORT=aarch64-linux-gnu      cross-build for a port (below)
#
# Variables: CXX, CXXFLAGS, LDFLAGS, SIMD=0/1, HELIUM=0/1, OPENMP=0/1, BUILD=dir, PREFIX,
# XSIMD_INCLUDE=dir (where xsimd/xsimd.hpp is, if not on the default path),
# PORT.

# PORT=aarch64-linux-gnu | arm-linux-gnueabihf | cortex-m4f | cortex-m55 | x86_64 builds
# for that target with ports/$(PORT).mk (the CMake build's ports/$(PORT).cmake
# says the same): its cross compiler (CXX=... on the command line wins), its
# flags (PORT_FLAGS, PORT_LDFLAGS), its defaults (cortex-m4f, cortex-m55: SIMD=0 OPENMP=0)
# and BUILD=build-make-$(PORT). No PORT is the native build (x86_64 here).
# Cross-built test programs run under an emulator: use CMake + CTest for those.
PORT ?=
ifneq ($(PORT),)
  ifeq ($(wildcard ports/$(PORT).mk),)
    $(error PORT=$(PORT): there is no ports/$(PORT).mk (ports: $(basename $(notdir $(wildcard ports/*.mk)))))
  endif
  include ports/$(PORT).mk
  ifneq ($(PORT_TRIPLE),)
    PORT_CROSS := 1
    ifneq ($(origin CXX),command line)
      CXX := $(PORT_TRIPLE)-g++
    endif
    ifneq ($(origin AR),command line)
      AR := $(PORT_TRIPLE)-ar
    endif
  endif
  BUILD ?= build-make-$(PORT)
  ifneq ($(PORT_CROSS),)
    ifneq ($(filter test demo,$(MAKECMDGOALS)),)
      $(error make PORT=$(PORT) $(filter test demo,$(MAKECMDGOALS)): cross-built programs run under an emulator, through CTest: see docs/ports.md)
    endif
  endif
endif

CXX      ?= g++
AR       ?= ar
SIMD     ?= 1
OPENMP   ?= 1
BUILD    ?= build-make
PREFIX   ?= /usr/local
CXXFLAGS ?= -O2
XSIMD_INCLUDE ?=
ifneq ($(PORT),)
  override CXXFLAGS += $(PORT_FLAGS)
  override LDFLAGS += $(PORT_LDFLAGS)
endif

SOURCES_CMAKE := cmake/EdgeattnSources.cmake
CORE_SOURCES := $(shell sed -n '/set(EDGEATTN_CORE_SOURCES/,/)/p' $(SOURCES_CMAKE) | grep -o 'src/[A-Za-z0-9_/]*\.cpp')

# Per-ISA files for this machine's processor: "isa|file|flags" entries.
MACHINE := $(shell $(CXX) -dumpmachine)
ifneq ($(filter x86_64% i%86%,$(MACHINE)),)
  ISA_ENTRIES := $(shell grep -o '"[a-z0-9]*|src/arch/x86_[^"]*"' $(SOURCES_CMAKE) | tr -d '"' | tr ' ' '~')
else ifneq ($(filter aarch64% arm%,$(MACHINE)),)
  ISA_ENTRIES := $(shell $(CXX) $(CXXFLAGS) -dM -E -x c++ /dev/null | grep -q __ARM_NEON && echo 'neon|src/arch/arm_neon.cpp|')
endif
ifeq ($(SIMD),0)
  ISA_ENTRIES :=
endif
# Helium (MVE with floating point: -mcpu=cortex-m55 / cortex-m85) needs no
# xsimd: built whenever the flags enable it, unless HELIUM=0.
ifneq ($(filter arm%,$(MACHINE)),)
  ifneq ($(HELIUM),0)
    ISA_ENTRIES += $(shell $(CXX) $(CXXFLAGS) -dM -E -x c++ /dev/null | grep -Eq '__ARM_FEATURE_MVE (2|3)$$' && echo 'helium|src/arch/arm_helium.cpp|')
  endif
endif
isa_name  = $(word 1,$(subst |, ,$(1)))
isa_file  = $(word 2,$(subst |, ,$(1)))
isa_flags = $(subst ~, ,$(word 3,$(subst |, ,$(1))))
ISA_SOURCES := $(foreach e,$(ISA_ENTRIES),$(call isa_file,$(e)))
ISA_DEFINES := $(foreach e,$(ISA_ENTRIES),-DEDGEATTN_HAVE_$(shell echo $(call isa_name,$(e)) | tr a-z A-Z))

# -fno-math-errno: sqrtf is the FPU instruction (CMakeLists.txt says why).
LIB_CXXFLAGS := -std=c++17 $(CXXFLAGS) -fno-exceptions -fno-rtti -fno-math-errno -Wall -Wextra -Iinclude -Isrc $(ISA_DEFINES)
ifneq ($(XSIMD_INCLUDE),)
  LIB_CXXFLAGS += -I$(XSIMD_INCLUDE)  # xsimd outside the compiler's search path
endif
ifneq ($(OPENMP),0)
  OPENMP_FLAGS := -fopenmp
  LIB_CXXFLAGS += -fopenmp -DEDGEATTN_HAVE_OPENMP
  # OpenMP's runtime libraries, which edgeattn.pc names instead of -fopenmp
  # (GCC: -lgomp -lpthread): the -l options the compiler's link line has with
  # -fopenmp and lacks without it, as CMake's FindOpenMP finds them.
  OPENMP_LIBS := $(shell link_libs() { $(CXX) $(CXXFLAGS) $(LDFLAGS) "$$@" -\#\#\# -x c++ /dev/null 2>&1 \
    | grep '^ ' | tail -1 | tr ' ' '\n' | tr -d '"' | grep '^-l'; }; plain=" $$(link_libs | tr '\n' ' ') "; \
    out=""; for l in $$(link_libs -fopenmp); do case "$$plain$$out " in (*" $$l "*) ;; (*) out="$$out $$l";; esac; done; \
    echo $$out)
endif

LIB := $(BUILD)/libedgeattn.a
LIB_OBJECTS := $(patsubst %.cpp,$(BUILD)/%.o,$(CORE_SOURCES) $(ISA_SOURCES))

.PHONY: all lib test demo install clean bench-mcu
.SECONDARY:  # keep test objects between runs
all: lib
lib: $(LIB)

$(LIB): $(LIB_OBJECTS)
	rm -f $@
	$(AR) rcs $@ $^

# Each ISA file gets its own flags; everything else the common ones.
# The RoPE table and rotation: no fused multiply-add (CMakeLists.txt says why).
$(BUILD)/src/rope.o $(BUILD)/src/rope_rotate.o $(BUILD)/src/integer_linear.o $(BUILD)/src/integer_scores.o: LIB_CXXFLAGS += -ffp-contract=off
$(BUILD)/src/%.o: src/%.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(LIB_CXXFLAGS) $(foreach e,$(ISA_ENTRIES),$(if $(filter $<,$(call isa_file,$(e))),$(call isa_flags,$(e)))) -MMD -MP -c $< -o $@

-include $(LIB_OBJECTS:.o=.d)

include tests/tests.mk
include examples/demo/demo.mk

# The same files as `cmake --install`: the package files are the templates
# in cmake/ filled in with sed (find_package(edgeattn), pkg-config edgeattn).
VERSION := $(shell sed -n 's/^project.edgeattn VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
PKG_DIR := $(DESTDIR)$(PREFIX)/lib/cmake/edgeattn
PC_DIR  := $(DESTDIR)$(PREFIX)/lib/pkgconfig
empty :=
KERNEL_PATHS := $(subst $(empty) $(empty),;,$(strip scalar $(foreach e,$(ISA_ENTRIES),$(call isa_name,$(e)))))
PACKAGE_SED := sed -e 's|@EDGEATTN_VERSION@|$(VERSION)|g' \
  -e 's|@EDGEATTN_CONFIG_TO_PREFIX@|../../..|g' \
  -e 's|@EDGEATTN_CONFIG_LIBDIR@|lib|g' -e 's|@EDGEATTN_CONFIG_INCLUDEDIR@|include|g' \
  -e 's|@EDGEATTN_CONFIG_DATADIR@|share|g' \
  -e 's|@EDGEATTN_CONFIG_OPENMP@|$(if $(filter-out 0,$(OPENMP)),ON,OFF)|g' \
  -e 's|@EDGEATTN_CONFIG_BARE_METAL@|$(if $(PORT_BARE_METAL),ON,OFF)|g' \
  -e 's|@EDGEATTN_CONFIG_KERNEL_PATHS@|$(KERNEL_PATHS)|g' \
  -e "s|@EDGEATTN_CONFIG_SIZEOF_VOID_P@|$$($(CXX) $(CXXFLAGS) -dM -E -x c++ /dev/null | sed -n 's/^\#define __SIZEOF_POINTER__ //p')|g" \
  -e 's|@EDGEATTN_PC_PREFIX@|$(PREFIX)|g' \
  -e 's|@EDGEATTN_PC_LIBS@|$(if $(filter-out 0,$(OPENMP)),$(OPENMP_LIBS) )-lm|g'

# The conformance tools and what they run on (as cmake/EdgeattnInstall.cmake),
# on hosted targets only: a bare-metal port has no files to read.
SHARE_DIR := $(DESTDIR)$(PREFIX)/share/edgeattn
ifeq ($(PORT_BARE_METAL),)
  INSTALL_TOOLS := $(TEST_BIN)/edgeattn-conform $(TEST_BIN)/edgeattn-check-result
endif

install: $(LIB) $(INSTALL_TOOLS)
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/edgeattn/detail $(PKG_DIR) $(PC_DIR)
ifneq ($(INSTALL_TOOLS),)
	install -d $(DESTDIR)$(PREFIX)/bin $(SHARE_DIR)/golden $(SHARE_DIR)/tools/golden
	install -m 755 $(INSTALL_TOOLS) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 tests/golden/*.case tests/golden/FORMAT.md $(SHARE_DIR)/golden/
	install -m 755 tools/export_torch.py tools/llama_model.py $(SHARE_DIR)/tools/
	install -m 755 tools/golden/*.py $(SHARE_DIR)/tools/golden/
endif
	install -m 644 $(LIB) $(DESTDIR)$(PREFIX)/lib/
	install -m 644 include/edgeattn/*.h include/edgeattn/*.hpp $(DESTDIR)$(PREFIX)/include/edgeattn/
	install -m 644 include/edgeattn/detail/*.hpp $(DESTDIR)$(PREFIX)/include/edgeattn/detail/
	install -d $(SHARE_DIR)/toolchains/cortex-m4f $(SHARE_DIR)/toolchains/cortex-m55
	install -m 644 ports/*.cmake $(SHARE_DIR)/toolchains/
	install -m 644 ports/cortex-m4f/* $(SHARE_DIR)/toolchains/cortex-m4f/
	install -m 644 ports/cortex-m55/* $(SHARE_DIR)/toolchains/cortex-m55/
	$(PACKAGE_SED) cmake/edgeattnConfig.cmake.in > $(PKG_DIR)/edgeattnConfig.cmake
	$(PACKAGE_SED) cmake/edgeattnConfigVersion.cmake.in > $(PKG_DIR)/edgeattnConfigVersion.cmake
	$(PACKAGE_SED) cmake/edgeattn.pc.in > $(PC_DIR)/edgeattn.pc
	@if grep -n '@[A-Z_]*@' $(PKG_DIR)/edgeattnConfig.cmake $(PKG_DIR)/edgeattnConfigVersion.cmake \
	    $(PC_DIR)/edgeattn.pc; then echo "make install: the lines above kept a placeholder" >&2; exit 1; fi

# Instructions per call on the Cortex-M4F and M55 boards under QEMU, beside
# naive loops (tests/firmware/bench_mcu.cpp): the table of
# docs/microcontrollers.md and its plot, built with CMake in
# build-bench-mcu-* (the plot needs Debian's python3-matplotlib).
# CMSIS_DSP=<checkout> CMSIS_CORE=<CMSIS_6>/CMSIS/Core/Include add the
# CMSIS-DSP compositions' table (benchmark only).
bench-mcu:
	/usr/bin/python3 bench/mcu_table --write docs/microcontrollers.md --plot docs/figures/mcu_instructions.png \
	  $(if $(CMSIS_DSP),--cmsis-dsp $(CMSIS_DSP) --cmsis-core $(CMSIS_CORE))

clean:
	rm -rf $(BUILD)
