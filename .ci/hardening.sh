#!/usr/bin/env bash
# Hardening (docs/contract.md):
#   1. ASan + UBSan build with Clang (build-asan): the CTest suite but for
#      the tests labelled `long` (here and in 2. and 3.: they run natively), and
#      the libFuzzer harnesses replaying their committed corpora;
#   2. ThreadSanitizer build with LLVM's OpenMP (build-tsan): the whole suite
#      with 4 threads;
#   3. the whole CTest suite under valgrind --error-exitcode=1 (build-valgrind);
#   4. each fuzzer for a bounded time (FUZZ_SECONDS, default 60) from its
#      committed seed corpus; a crash fails CI and leaves crash-* files in
#      build-asan/fuzz-out/ to turn into a unit test.
# Installs what it needs. About 15 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."

bash .ci/apt_install.sh \
    g++ make cmake libxsimd-dev doctest-dev binutils clang libclang-rt-dev libomp-dev valgrind

jobs=$(nproc)
fuzz_seconds=${FUZZ_SECONDS:-60}
t0=$(date +%s)

echo "== hardening (at $(( $(date +%s) - t0 )) s): ASan + UBSan build (Clang), libFuzzer harnesses included"
CC=clang CXX=clang++ cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEDGEATTN_FUZZ=ON \
    -DEDGEATTN_BUILD_EXAMPLES=OFF >/dev/null
cmake --build build-asan -j"$jobs"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS="suppressions=$PWD/.ci/lsan.supp:print_suppressions=0"  # LLVM OpenMP's thread pool
ctest --test-dir build-asan --output-on-failure -j"$jobs" -LE long

echo "== hardening (at $(( $(date +%s) - t0 )) s): ThreadSanitizer build (Clang, LLVM's OpenMP with its Archer tool), 4 threads"
# Every test, with 4 OpenMP threads (the determinism tests set 1..8
# themselves): a race between the threads of any op fails the run. Archer
# tells TSan what libomp's barriers order; the runtime itself is not
# instrumented, so its own accesses are left out (ignore_noninstrumented_modules).
# How rows are split between threads does not depend on the path: the tests
# that loop over the paths themselves take AVX2's alone (EDGEATTN_TEST_PATHS).
CC=clang CXX=clang++ cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEDGEATTN_SANITIZE_THREAD=ON \
    -DEDGEATTN_BUILD_EXAMPLES=OFF >/dev/null
cmake --build build-tsan -j"$jobs"
archer=$(ls /usr/lib/llvm-*/lib/libarcher.so | head -1)
TSAN_OPTIONS="halt_on_error=1 ignore_noninstrumented_modules=1" OMP_TOOL_LIBRARIES="$archer" OMP_NUM_THREADS=4 \
    EDGEATTN_TEST_PATHS=avx2 ctest --test-dir build-tsan --output-on-failure -j"$jobs" --timeout 900 -LE long

echo "== hardening (at $(( $(date +%s) - t0 )) s): the suite under valgrind --error-exitcode=1"
# Every test program (and edgeattn-conform / -check-result inside the conform
# tests) runs through valgrind as the tests' emulator. valgrind has no
# AVX-512, so the avx512 variants report "skipped" (CPUID says no); the
# hygiene checks run nm/objdump, not our code.
cmake -S . -B build-valgrind -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEDGEATTN_BUILD_EXAMPLES=OFF \
    "-DCMAKE_CROSSCOMPILING_EMULATOR=valgrind;--error-exitcode=1;-q;--trace-children=no" >/dev/null
cmake --build build-valgrind -j"$jobs"
wrapped=$(ctest --test-dir build-valgrind -N -V | grep -c "Test command: .*valgrind" || true)
if [ "$wrapped" -eq 0 ]; then
    echo "hardening: this CMake does not run native tests through CMAKE_CROSSCOMPILING_EMULATOR" >&2
    exit 1
fi
# Left out: test_alloc_free, the one test that cannot run under valgrind (it
# replaces malloc and operator new itself, and valgrind substitutes its own
# allocator for them; it runs in the ASan-free builds of CI instead); and the
# tests registered for the AVX2 path, which repeat their unsuffixed runs here
# (valgrind's CPU has no AVX-512, so AUTO picks AVX2); and test_split_invariance,
# whose subject, the same bits under every split between threads, is
# ThreadSanitizer's above (valgrind runs the threads one at a time; the
# ops it calls run here in test_determinism and test_workspace_bounds). The
# tests that loop over the paths themselves take AVX2's alone
# (EDGEATTN_TEST_PATHS): the plain and SSE2 paths run under valgrind through
# their own registrations.
OMP_WAIT_POLICY=passive EDGEATTN_TEST_PATHS=avx2 \
    ctest --test-dir build-valgrind --output-on-failure -j"$jobs" --timeout 900 \
    -E '^test_alloc_free$|^test_split_invariance$|\.avx2$' -LE long

echo "== hardening (at $(( $(date +%s) - t0 )) s): fuzzing, ${fuzz_seconds} s each"
for f in c_api case_file reduced_precision; do
    out=build-asan/fuzz-out/$f
    rm -rf "$out" && mkdir -p "$out"
    # new inputs go to $out (the committed corpus stays as it is); crashes too
    (cd "$out" && "../../tests/fuzz/fuzz_$f" -max_total_time="$fuzz_seconds" -max_len=4096 \
        -print_final_stats=1 . "../../../tests/fuzz/corpus/$f" 2>&1 | tail -15)
    if ls "$out"/crash-* "$out"/leak-* "$out"/timeout-* >/dev/null 2>&1; then
        echo "hardening: fuzz_$f found a failure: $(ls "$out"/crash-* "$out"/leak-* "$out"/timeout-* 2>/dev/null)" >&2
        exit 1
    fi
done
echo "== hardening: all passed in $(( $(date +%s) - t0 )) s"
