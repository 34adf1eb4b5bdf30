# `make demo`: build and run edgeattn-demo (included from the top-level Makefile).
DEMO := $(BUILD)/examples/edgeattn-demo
DEMO_SOURCES := $(wildcard examples/demo/*.cpp)

$(DEMO): $(DEMO_SOURCES) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 $(CXXFLAGS) -Iinclude $(OPENMP_FLAGS) $(DEMO_SOURCES) $(LIB) $(LDFLAGS) $(OPENMP_FLAGS) -o $@

.PHONY: demo demo-program
demo-program: $(DEMO)
demo: $(DEMO)
	$(DEMO)
