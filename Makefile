# Plain-make build of edgeattn: the same sources as CMakeLists.txt (both read
# cmake/EdgeattnSources.cmake). CMake + CTest is the main build; this one is
# for firmware trees that use make.
#
#   make                 libedgeattn.a in $(BUILD)
#   make test            build and run the test suite
#   make demo            build and run edgeattn-demo
#   make install PREFIX=/usr/local
#
# Variables: CXX, CXXFLAGS, LDFLAGS, SIMD=0/1, OPENMP=0/1, BUILD=dir, PREFIX,
# XSIMD_INCLUDE=dir (where xsimd/xsimd.hpp is, if not on the default path).

CXX      ?= g++
AR       ?= ar
SIMD     ?= 1
OPENMP   ?= 1
BUILD    ?= build-make
PREFIX   ?= /usr/local
CXXFLAGS ?= -O2
XSIMD_INCLUDE ?=

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
isa_name  = $(word 1,$(subst |, ,$(1)))
isa_file  = $(word 2,$(subst |, ,$(1)))
isa_flags = $(subst ~, ,$(word 3,$(subst |, ,$(1))))
ISA_SOURCES := $(foreach e,$(ISA_ENTRIES),$(call isa_file,$(e)))
ISA_DEFINES := $(foreach e,$(ISA_ENTRIES),-DEDGEATTN_HAVE_$(shell echo $(call isa_name,$(e)) | tr a-z A-Z))

LIB_CXXFLAGS := -std=c++17 $(CXXFLAGS) -fno-exceptions -fno-rtti -Wall -Wextra -Iinclude -Isrc $(ISA_DEFINES)
ifneq ($(XSIMD_INCLUDE),)
  LIB_CXXFLAGS += -I$(XSIMD_INCLUDE)  # xsimd outside the compiler's search path
endif
ifneq ($(OPENMP),0)
  OPENMP_FLAGS := -fopenmp
  LIB_CXXFLAGS += -fopenmp -DEDGEATTN_HAVE_OPENMP
endif

LIB := $(BUILD)/libedgeattn.a
LIB_OBJECTS := $(patsubst %.cpp,$(BUILD)/%.o,$(CORE_SOURCES) $(ISA_SOURCES))

.PHONY: all lib test demo install clean
.SECONDARY:  # keep test objects between runs
all: lib
lib: $(LIB)

$(LIB): $(LIB_OBJECTS)
	rm -f $@
	$(AR) rcs $@ $^

# Each ISA file gets its own flags; everything else the common ones.
$(BUILD)/src/%.o: src/%.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(LIB_CXXFLAGS) $(foreach e,$(ISA_ENTRIES),$(if $(filter $<,$(call isa_file,$(e))),$(call isa_flags,$(e)))) -MMD -MP -c $< -o $@

-include $(LIB_OBJECTS:.o=.d)

include tests/tests.mk
include examples/demo/demo.mk

install: $(LIB)
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/edgeattn/detail
	install -m 644 $(LIB) $(DESTDIR)$(PREFIX)/lib/
	install -m 644 include/edgeattn/*.h include/edgeattn/*.hpp $(DESTDIR)$(PREFIX)/include/edgeattn/
	install -m 644 include/edgeattn/detail/*.hpp $(DESTDIR)$(PREFIX)/include/edgeattn/detail/

clean:
	rm -rf $(BUILD)
