# `make test`: the CTest suite's programs, built and run by make (included
# from the top-level Makefile, which defines LIB, BUILD and the flags).

TEST_CXXFLAGS := -std=c++17 $(CXXFLAGS) -Wall -Wextra -Iinclude -Itests -Isrc $(OPENMP_FLAGS) \
                 -DEDGEATTN_GOLDEN_DIR='"$(CURDIR)/tests/golden"'
TEST_LDFLAGS  := $(LDFLAGS) $(OPENMP_FLAGS)
TEST_BIN      := $(BUILD)/tests

CONFORM_OBJECTS := $(patsubst %.cpp,$(BUILD)/%.o,tests/conform/case_file.cpp tests/conform/accuracy.cpp \
                                                 tests/conform/run_case.cpp)
ISA_MAIN     := $(BUILD)/tests/isa_main.o
DOCTEST_MAIN := $(BUILD)/tests/doctest_main.o

# Tests run once per kernel path this architecture can have (skipped with
# exit 77 where the build or the CPU lacks it).
ifneq ($(filter x86_64% i%86%,$(MACHINE)),)
  TEST_ISAS := scalar sse2 avx2 avx512
else ifneq ($(filter aarch64% arm%,$(MACHINE)),)
  TEST_ISAS := scalar neon
else
  TEST_ISAS := scalar
endif

ISA_TESTS   := test_golden_c test_reference_shapes test_fixed_size_api
PLAIN_TESTS := test_positional_encoding test_rope test_status test_determinism test_kernels test_streaming \
               test_packed_weights
# Own doctest main, no conform objects: hardening tests.
HARDENING_TESTS := test_numeric_edges test_alloc_free
# Decoder: the KV cache module; linked like the hardening tests.
HARDENING_TESTS += test_kv_cache_module test_decoder
# Reduced precision: int8 / fp16 weights.
HARDENING_TESTS += test_reduced_precision
# The int8 arithmetic of dense layers and multi-head attention: float64 model, every path bit for bit.
HARDENING_TESTS += test_integer_arithmetic
# The int8 arithmetic of an attend's scores over an int8 KV cache.
HARDENING_TESTS += test_integer_cache_scores
# Bits independent of the work split (threads, workspace sizing, masks);
# the threads a call uses by its workspace's size.
HARDENING_TESTS += test_split_invariance test_thread_use
# Workspace bounds: guard bytes around every sized buffer, once per kernel path.
ISA_TESTS += test_workspace_bounds
# The KV cache's contract: arguments read first, edited structs, int8 rows.
HARDENING_TESTS += test_kv_cache_contract
# Argument placement: structs inside outputs and the workspace, overlaps, enums holding any int.
HARDENING_TESTS += test_argument_placement
# The 0.x names: each deprecated wrapper gives its 1.0 call's bits.
HARDENING_TESTS += test_deprecated_names
# The workspace query for one call and for a decoder step's set of calls.
HARDENING_TESTS += test_workspace_query
# Window KV caches, projection-free cache calls, the sliding-window mask;
# a 100,000-token stream through a window cache.
HARDENING_TESTS += test_window_cache test_window_stream
# RoPE fused into the KV cache calls.
HARDENING_TESTS += test_rope_cache
# ONNX Attention's score semantics against the float64 reference.
HARDENING_TESTS += test_score_semantics
# ONNX Attention's shapes: value heads of their own width, projection-free MHA, fp16 tensors.
HARDENING_TESTS += test_attention_shapes
TEST_PROGRAMS := $(addprefix $(TEST_BIN)/,$(ISA_TESTS) $(PLAIN_TESTS) $(HARDENING_TESTS) test_case_file)

# test_rope computes the rotation's float bits itself: unfused, as the library.
$(BUILD)/tests/test_rope.o: TEST_CXXFLAGS += -ffp-contract=off
# test_kernels checks the path AUTO picks against the CPU's features and the
# paths this build compiles (their names, space-separated).
$(BUILD)/tests/test_kernels.o: TEST_CXXFLAGS += \
  -DEDGEATTN_TEST_KERNEL_PATHS='"$(strip scalar $(foreach e,$(ISA_ENTRIES),$(call isa_name,$(e))))"'
$(BUILD)/tests/%.o: tests/%.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(TEST_CXXFLAGS) -MMD -MP -c $< -o $@

-include $(wildcard $(BUILD)/tests/*.d $(BUILD)/tests/conform/*.d)

$(TEST_BIN)/test_case_file: $(BUILD)/tests/test_case_file.o $(DOCTEST_MAIN) $(CONFORM_OBJECTS) $(LIB)
$(TEST_BIN)/test_reference_shapes: $(BUILD)/tests/test_reference_shapes.o $(BUILD)/tests/reference.o \
                                   $(ISA_MAIN) $(CONFORM_OBJECTS) $(LIB)
$(TEST_BIN)/test_%: $(BUILD)/tests/test_%.o $(ISA_MAIN) $(CONFORM_OBJECTS) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(filter %.o %.a,$^) $(TEST_LDFLAGS) -o $@
$(TEST_BIN)/test_streaming: $(BUILD)/tests/test_streaming.o $(BUILD)/tests/reference.o \
                            $(ISA_MAIN) $(CONFORM_OBJECTS) $(LIB)
$(TEST_BIN)/test_packed_weights: $(BUILD)/tests/test_packed_weights.o $(BUILD)/tests/reference.o \
                                 $(ISA_MAIN) $(CONFORM_OBJECTS) $(LIB)
$(TEST_BIN)/test_case_file $(TEST_BIN)/test_reference_shapes $(TEST_BIN)/test_streaming \
$(TEST_BIN)/test_packed_weights:
	@mkdir -p $(dir $@)
	$(CXX) $(filter %.o %.a,$^) $(TEST_LDFLAGS) -o $@

$(TEST_BIN)/test_numeric_edges: $(BUILD)/tests/test_numeric_edges.o $(BUILD)/tests/reference.o $(DOCTEST_MAIN) $(LIB)
$(TEST_BIN)/test_alloc_free: $(BUILD)/tests/test_alloc_free.o $(DOCTEST_MAIN) $(LIB)
$(TEST_BIN)/test_numeric_edges $(TEST_BIN)/test_alloc_free:
	@mkdir -p $(dir $@)
	$(CXX) $(filter %.o %.a,$^) $(TEST_LDFLAGS) -o $@

$(TEST_BIN)/edgeattn-conform: $(BUILD)/tests/conform/conform_main.o $(CONFORM_OBJECTS) $(LIB)
	$(CXX) $(filter %.o %.a,$^) $(TEST_LDFLAGS) -o $@
$(TEST_BIN)/edgeattn-check-result: $(BUILD)/tests/conform/check_result_main.o $(CONFORM_OBJECTS) $(LIB)
	$(CXX) $(filter %.o %.a,$^) $(TEST_LDFLAGS) -o $@

.PHONY: test test-programs conform
test-programs: $(TEST_PROGRAMS) $(TEST_BIN)/edgeattn-conform $(TEST_BIN)/edgeattn-check-result
conform: $(TEST_BIN)/edgeattn-conform

# Runs everything, counts, and fails at the end if anything failed.
test: test-programs
	@pass=0; fail=0; skip=0; \
	run() { name=$$1; shift; out=$$("$$@" 2>&1); rc=$$?; \
	  if [ $$rc -eq 0 ]; then pass=$$((pass+1)); echo "  ok    $$name"; \
	  elif [ $$rc -eq 77 ]; then skip=$$((skip+1)); echo "  skip  $$name"; \
	  else fail=$$((fail+1)); echo "  FAIL  $$name"; echo "$$out" | tail -20; fi; }; \
	for t in $(ISA_TESTS) $(PLAIN_TESTS) $(HARDENING_TESTS) test_case_file; do run $$t $(TEST_BIN)/$$t; done; \
	for t in $(ISA_TESTS); do for isa in $(TEST_ISAS); do \
	  run "$$t.$$isa" env EDGEATTN_ISA=$$isa $(TEST_BIN)/$$t; done; done; \
	mkdir -p $(BUILD)/conform_out; \
	for c in tests/golden/*.case; do n=$$(basename $$c .case); \
	  run "conform.$$n" sh -c "$(TEST_BIN)/edgeattn-conform $$c $(BUILD)/conform_out/$$n.case && \
	    $(TEST_BIN)/edgeattn-check-result $$c $(BUILD)/conform_out/$$n.case"; done; \
	run hygiene.library_symbols sh -c "! nm -C $(LIB) | grep -E ' (U|T|W) (malloc|calloc|realloc|free|operator new|operator delete|__cxa_throw|__cxa_guard_acquire|typeinfo for|std::ios_base|printf|puts)'"; \
	echo "$$pass passed, $$fail failed, $$skip skipped"; \
	[ $$fail -eq 0 ]

$(TEST_BIN)/test_attention_shapes: $(BUILD)/tests/test_attention_shapes.o $(BUILD)/tests/reference.o $(DOCTEST_MAIN) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(filter %.o %.a,$^) $(TEST_LDFLAGS) -o $@

# Decoder: the fixed-size KV cache against the float64 reference.
$(TEST_BIN)/test_kv_cache_module: $(BUILD)/tests/test_kv_cache_module.o $(BUILD)/tests/reference.o $(DOCTEST_MAIN) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(filter %.o %.a,$^) $(TEST_LDFLAGS) -o $@

# Decoder: masks, GQA, the KV cache and the projection vs the float64 reference.
$(TEST_BIN)/test_decoder: $(BUILD)/tests/test_decoder.o $(BUILD)/tests/reference.o $(DOCTEST_MAIN) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(filter %.o %.a,$^) $(TEST_LDFLAGS) -o $@

# Reduced precision: int8 / fp16 weights vs the float64 reference.
$(TEST_BIN)/test_reduced_precision: $(BUILD)/tests/test_reduced_precision.o $(BUILD)/tests/reference.o $(DOCTEST_MAIN) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(filter %.o %.a,$^) $(TEST_LDFLAGS) -o $@

$(TEST_BIN)/test_deprecated_names: $(BUILD)/tests/test_deprecated_names.o $(BUILD)/tests/reference.o $(DOCTEST_MAIN) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(filter %.o %.a,$^) $(TEST_LDFLAGS) -o $@

$(TEST_BIN)/test_workspace_query: $(BUILD)/tests/test_workspace_query.o $(DOCTEST_MAIN) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(filter %.o %.a,$^) $(TEST_LDFLAGS) -o $@

$(TEST_BIN)/test_split_invariance: $(BUILD)/tests/test_split_invariance.o $(DOCTEST_MAIN) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(filter %.o %.a,$^) $(TEST_LDFLAGS) -o $@

# Workspace bounds: guard bytes around every sized buffer vs the float64 reference.
$(TEST_BIN)/test_workspace_bounds: $(BUILD)/tests/test_workspace_bounds.o $(BUILD)/tests/reference.o $(ISA_MAIN) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(filter %.o %.a,$^) $(TEST_LDFLAGS) -o $@

# The KV cache's contract vs an independent computation and the fp32 cache.
$(TEST_BIN)/test_kv_cache_contract: $(BUILD)/tests/test_kv_cache_contract.o $(BUILD)/tests/reference.o $(DOCTEST_MAIN) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(filter %.o %.a,$^) $(TEST_LDFLAGS) -o $@

# Argument placement; its C part passes enums by value as a C caller does.
$(BUILD)/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=c99 $(CFLAGS) -Wall -Wextra -Iinclude -Itests -MMD -MP -c $< -o $@
$(TEST_BIN)/test_argument_placement: $(BUILD)/tests/test_argument_placement.o $(BUILD)/tests/enum_args_from_c.o \
                                     $(BUILD)/tests/reference.o $(DOCTEST_MAIN) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(filter %.o %.a,$^) $(TEST_LDFLAGS) -o $@

# The int8 arithmetic: multi-head attention's heads against the float64 reference.
$(TEST_BIN)/test_integer_arithmetic: $(BUILD)/tests/test_integer_arithmetic.o $(BUILD)/tests/reference.o $(DOCTEST_MAIN) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(filter %.o %.a,$^) $(TEST_LDFLAGS) -o $@

$(TEST_BIN)/test_integer_cache_scores: $(BUILD)/tests/test_integer_cache_scores.o $(DOCTEST_MAIN) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(filter %.o %.a,$^) $(TEST_LDFLAGS) -o $@

# Window KV caches and the long stream through one vs the float64 reference.
$(TEST_BIN)/test_window_cache: $(BUILD)/tests/test_window_cache.o $(BUILD)/tests/reference.o $(DOCTEST_MAIN) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(filter %.o %.a,$^) $(TEST_LDFLAGS) -o $@
$(TEST_BIN)/test_rope_cache: $(BUILD)/tests/test_rope_cache.o $(BUILD)/tests/reference.o $(DOCTEST_MAIN) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(filter %.o %.a,$^) $(TEST_LDFLAGS) -o $@
$(TEST_BIN)/test_score_semantics: $(BUILD)/tests/test_score_semantics.o $(BUILD)/tests/reference.o $(DOCTEST_MAIN) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(filter %.o %.a,$^) $(TEST_LDFLAGS) -o $@
$(TEST_BIN)/test_window_stream: $(BUILD)/tests/test_window_stream.o $(BUILD)/tests/reference.o $(DOCTEST_MAIN) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(filter %.o %.a,$^) $(TEST_LDFLAGS) -o $@
