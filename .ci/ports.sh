#!/usr/bin/env bash
# CI for the ports (docs/ports.md); .ci/run calls it after the native
# builds, and it runs alone from a clean clone too:
#
#   1. installs the cross toolchains and QEMU;
#   2. aarch64-linux-gnu and arm-linux-gnueabihf: the whole test suite,
#      cross-built and run by CTest under qemu-user; no test may be skipped,
#      so the neon path runs (not only the scalar one);
#   3. cortex-m4f: the test firmware under qemu-system-arm (golden cases
#      through both APIs, library hygiene, tables in flash, footprint,
#      examples/llama's int8 model decoding past its window cache),
#      built Release and MinSizeRel (compact kernels, flash budget);
#      cortex-m55: the same firmware on QEMU's mps3-an547, Release;
#   4. make PORT=... builds each port's library; the make-built Cortex-M
#      archive passes the same hygiene check;
#   5. install: cmake --install and make install write the same package
#      files (and toolchain files, conformance tools, golden cases, Python
#      tools, which run from the install tree); examples/consumer builds and
#      runs against them (find_package, pkg-config) and through
#      add_subdirectory; examples/consumer-c, a strict C11 C-only project,
#      against both install trees. Every consumer stops with #error if the
#      package puts -fopenmp on its compile (OpenMP's runtime reaches its
#      link only). Cross: both consumers against the aarch64 install and
#      examples/consumer-c as Cortex-M4F firmware against the cortex-m4f
#      install, each configured with the toolchain file installed there.
#
# It uses the build directories of docs/ports.md (build-<port>) and build-ports/, and
# removes them first.
set -euo pipefail
cd "$(dirname "$0")/.."

bash .ci/apt_install.sh \
    g++ make cmake libxsimd-dev doctest-dev binutils pkg-config python3-numpy \
    g++-aarch64-linux-gnu g++-arm-linux-gnueabihf \
    gcc-arm-none-eabi libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib \
    qemu-user qemu-system-arm

jobs=$(nproc)
root=$PWD
work=$root/build-ports
rm -rf build-aarch64-linux-gnu build-arm-linux-gnueabihf build-cortex-m4f build-cortex-m4f-minsize build-cortex-m4f-lean build-cortex-m55 build-cortex-m55-minsize "$work" \
       build-make-aarch64-linux-gnu build-make-arm-linux-gnueabihf build-make-cortex-m4f build-make-cortex-m55
mkdir -p "$work"
step_start=$SECONDS
step() {
    echo "== ports: $* (at $((SECONDS - step_start)) s)"
}

# CTest for one build directory; fails on a failed or skipped test.
run_ctest() {
    local dir=$1 log
    log=$work/$(basename "$dir").ctest.log
    ctest --test-dir "$dir" --output-on-failure -j"$jobs" --timeout 1500 2>&1 | tee "$log"
    if grep -qE '\*\*\*Skipped|Not Run|Disabled' "$log"; then
        echo "ports: $dir: a test was skipped or not run; every kernel path of the port must run" >&2
        exit 1
    fi
}

for port in aarch64-linux-gnu arm-linux-gnueabihf; do
    step "$port: test suite under qemu-user"
    cmake -S . -B "build-$port" -DCMAKE_TOOLCHAIN_FILE="ports/$port.cmake"
    cmake --build "build-$port" -j"$jobs"
    run_ctest "build-$port"
done
# qemu-aarch64's default CPU has the dot product (SDOT); the int8 products
# of a CPU without it (Cortex-A72: VMULL/VMLAL) again, bit for bit.
QEMU_CPU=cortex-a72 ctest --test-dir build-aarch64-linux-gnu --output-on-failure -R '^test_integer_arithmetic$'

# A Cortex-M build of the test firmware, run on its QEMU board: build
# folder, the firmware tests whose report is printed (the firmware's own,
# the footprint of one module: docs/ports.md's tables, examples/llama's
# model decoding on the board), then cmake's arguments.
firmware() {
    local dir=$1 report=$2
    shift 2
    cmake -S . -B "$dir" "$@"
    cmake --build "$dir" -j"$jobs"
    run_ctest "$dir"
    ctest --test-dir "$dir" -R "firmware\\.($report)" -V 2>&1 | sed -n 's/^[0-9]*: //p' \
        | grep -vE '^(Test command|Working Directory|Test timeout)'
}

step "cortex-m4f: test firmware under qemu-system-arm (mps2-an386)"
firmware build-cortex-m4f 'golden|kernels|footprint|llama' -DCMAKE_TOOLCHAIN_FILE=ports/cortex-m4f.cmake

step "cortex-m4f MinSizeRel: compact kernels on the board, footprint budget"
# -Os gives the plain C++ path its compact kernels (src/kernels/compact.hpp):
# the golden cases run through them on the board, and
# firmware.footprint_budget holds d2l's int8 block to the 63,800 B of docs/ports.md.
firmware build-cortex-m4f-minsize 'footprint|llama' -DCMAKE_TOOLCHAIN_FILE=ports/cortex-m4f.cmake \
    -DCMAKE_BUILD_TYPE=MinSizeRel

step "cortex-m4f MinSizeRel, the library without what d2l's block does not call"
# include/edgeattn/config.h: each refused call and d2l's ops on the board,
# the int8 block held to 57,700 B (docs/ports.md, leaving features out).
firmware build-cortex-m4f-lean 'footprint|features' -DCMAKE_TOOLCHAIN_FILE=ports/cortex-m4f.cmake \
    -DCMAKE_BUILD_TYPE=MinSizeRel "-DEDGEATTN_LEAVE_OUT=score_options;alibi;mask_bias;long_rows;half;int8_arithmetic"

step "cortex-m55: test firmware under qemu-system-arm (mps3-an547)"
# The same firmware on Armv8.1-M (FPv5 with double precision): every golden
# case on the Helium path and on the plain C++ path, and the kernel checks.
firmware build-cortex-m55 'golden|kernels|footprint|llama' -DCMAKE_TOOLCHAIN_FILE=ports/cortex-m55.cmake

step "cortex-m55 MinSizeRel: the Helium path built for size, on the board"
firmware build-cortex-m55-minsize 'footprint' -DCMAKE_TOOLCHAIN_FILE=ports/cortex-m55.cmake \
    -DCMAKE_BUILD_TYPE=MinSizeRel

step "make PORT=...: each port's library"
for port in aarch64-linux-gnu arm-linux-gnueabihf cortex-m4f cortex-m55; do
    make -j"$jobs" PORT="$port"
done
for port in cortex-m4f cortex-m55; do
    cmake -DNM=arm-none-eabi-nm -DOBJDUMP=arm-none-eabi-objdump -DLIB="build-make-$port/libedgeattn.a" \
          -P tests/firmware/check_firmware_library.cmake
done

step "install: cmake --install and make install"
cmake -S . -B "$work/native" -DEDGEATTN_BUILD_TESTS=OFF -DEDGEATTN_BUILD_EXAMPLES=OFF
cmake --build "$work/native" -j"$jobs"
cmake --install "$work/native" --prefix "$work/cmake-prefix"
make -j"$jobs" BUILD="$work/make-native" install PREFIX="$work/make-prefix"
# The same files, and the same package files up to the prefix in edgeattn.pc.
diff <(cd "$work/cmake-prefix" && find . -type f | sort) <(cd "$work/make-prefix" && find . -type f | sort)
diff -r -x libedgeattn.a -x edgeattn.pc -x edgeattn-conform -x edgeattn-check-result \
    "$work/cmake-prefix" "$work/make-prefix"
diff <(sed 1d "$work/cmake-prefix/lib/pkgconfig/edgeattn.pc") <(sed 1d "$work/make-prefix/lib/pkgconfig/edgeattn.pc")

# The installed conformance tools on the installed golden cases, and the
# installed generator recomputing their answers (installed layout, no repository).
for prefix in cmake-prefix make-prefix; do
    share="$work/$prefix/share/edgeattn"
    for c in mha_seed decode_int8; do
        "$work/$prefix/bin/edgeattn-conform" "$share/golden/$c.case" "$work/$prefix-$c.case"
        "$work/$prefix/bin/edgeattn-check-result" "$share/golden/$c.case" "$work/$prefix-$c.case"
    done
    /usr/bin/python3 "$share/tools/golden/make_golden.py" check "$share/golden" | tail -1
done

step "examples/consumer: find_package (C and C++, and a C11-only project), pkg-config, add_subdirectory, cross"
for prefix in cmake-prefix make-prefix; do
    cmake -S examples/consumer -B "$work/consumer-$prefix" -DCMAKE_PREFIX_PATH="$work/$prefix"
    cmake --build "$work/consumer-$prefix" -j"$jobs"
    run_ctest "$work/consumer-$prefix"
    cmake -S examples/consumer-c -B "$work/consumer-c-$prefix" -DCMAKE_PREFIX_PATH="$work/$prefix"
    cmake --build "$work/consumer-c-$prefix" -j"$jobs"
    run_ctest "$work/consumer-c-$prefix"
done
make -C examples/consumer BUILD="$work/consumer-pkgconfig" PKG_CONFIG_PATH="$work/make-prefix/lib/pkgconfig" test
cmake -S examples/consumer -B "$work/consumer-subdir" -DEDGEATTN_SOURCE_DIR="$root"
cmake --build "$work/consumer-subdir" -j"$jobs"
run_ctest "$work/consumer-subdir"
# The cross packages, found through the root path of the toolchain file
# installed with them, run under qemu-user / qemu-system-arm.
cmake --install build-aarch64-linux-gnu --prefix "$work/aarch64-prefix"
for consumer in consumer consumer-c; do
    cmake -S "examples/$consumer" -B "$work/$consumer-aarch64" \
          -DCMAKE_TOOLCHAIN_FILE="$work/aarch64-prefix/share/edgeattn/toolchains/aarch64-linux-gnu.cmake" \
          -DCMAKE_FIND_ROOT_PATH="$work/aarch64-prefix"
    cmake --build "$work/$consumer-aarch64" -j"$jobs"
    run_ctest "$work/$consumer-aarch64"
done
cmake --install build-cortex-m4f --prefix "$work/cortex-m4f-prefix"
cmake -S examples/consumer-c -B "$work/consumer-c-cortex-m4f" \
      -DCMAKE_TOOLCHAIN_FILE="$work/cortex-m4f-prefix/share/edgeattn/toolchains/cortex-m4f.cmake" \
      -DCMAKE_FIND_ROOT_PATH="$work/cortex-m4f-prefix"
cmake --build "$work/consumer-c-cortex-m4f" -j"$jobs"
run_ctest "$work/consumer-c-cortex-m4f"

echo "== ports: all passed in $((SECONDS - step_start)) s"
