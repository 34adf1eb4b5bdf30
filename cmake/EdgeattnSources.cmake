# The library's sources, listed once for CMake; the Makefile reads the same
# lists from this file with sed, so a source is added in one place.

set(EDGEATTN_CORE_SOURCES
  src/status.cpp
  src/dispatch.cpp
  src/isa_choice.cpp
  src/arch/scalar.cpp
  src/attention_rows.cpp
  src/decode_rows.cpp
  src/stored_cache_rows.cpp
  src/ring_cache_rows.cpp
  src/attention_mask.cpp
  src/alibi.cpp
  src/score_options.cpp
  src/linear.cpp
  src/integer_linear.cpp
  src/integer_scores.cpp
  src/dense_api.cpp
  src/reduced_precision.cpp
  src/kv_cache_checks.cpp
  src/kv_cache_setup.cpp
  src/kv_cache_store.cpp
  src/kv_cache_attend.cpp
  src/workspace_query.cpp
  src/masked_softmax.cpp
  src/dot_product_attention.cpp
  src/additive_attention.cpp
  src/mha_weights.cpp
  src/multi_head_attention.cpp
  src/positional_encoding.cpp
  src/rope_rotate.cpp
  src/rope.cpp)

# Per-ISA kernel files for the target processor, as "isa|file|flags".
# (GCC 12's own avx512fintrin.h trips -W(maybe-)uninitialized: silenced there.)
function(edgeattn_isa_sources out)
  set(list "")
  string(TOLOWER "${CMAKE_SYSTEM_PROCESSOR}" proc)
  if(proc MATCHES "^(x86_64|amd64|i[3-6]86|x86)$")
    list(APPEND list
      "sse2|src/arch/x86_sse2.cpp|-msse2"
      "avx2|src/arch/x86_avx2.cpp|-mavx2 -mfma -mf16c"
      "avx512|src/arch/x86_avx512.cpp|-mavx512f -mavx512dq -mavx2 -mfma -Wno-uninitialized -Wno-maybe-uninitialized")
  elseif(proc MATCHES "^(aarch64|arm64|arm.*)$")
    include(CheckCXXSourceCompiles)
    check_cxx_source_compiles("
      #if !defined(__ARM_NEON)
      #error no neon
      #endif
      int main() { return 0; }" EDGEATTN_TARGET_HAS_NEON)
    if(EDGEATTN_TARGET_HAS_NEON)
      list(APPEND list "neon|src/arch/arm_neon.cpp|")
    endif()
  endif()
  set(${out} "${list}" PARENT_SCOPE)
endfunction()

# Whether the compiler, with the target's flags, has Helium's floating point
# (__ARM_FEATURE_MVE bit 2): then src/arch/arm_helium.cpp is built.
function(edgeattn_target_has_helium out)
  include(CheckCXXSourceCompiles)
  check_cxx_source_compiles("
    #if !(defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 2))
    #error no helium
    #endif
    int main() { return 0; }" EDGEATTN_COMPILER_HAS_HELIUM)
  set(${out} ${EDGEATTN_COMPILER_HAS_HELIUM} PARENT_SCOPE)
endfunction()
