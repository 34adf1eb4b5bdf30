#!/usr/bin/env bash
# Re-measures the data of the benchmark figures (docs/figures/bench/*.json):
#
#   bash tools/figures/measure_bench.sh && bash tools/figures/make_figures.sh
#
# builds the benchmark programs and the sequence sweeps (CMake, Release, in
# $BUILD, default build-figures-bench; needs libbenchmark-dev and the peers'
# -dev packages, bench/README.md), runs each on one thread, $REPETITIONS
# times (default 3; the figures read the median) with
# --benchmark_min_time=$MIN_TIME (default 0.1 s; about four minutes in all on
# a 2-core machine) and writes one JSON per
# program plus machine.txt (CPU from lscpu, commit, date) to docs/figures/bench/.
# The sweeps run only their attention benchmarks (sdpa, mha and the
# *_weights variants); the programs run all of theirs.
set -euo pipefail
cd "$(dirname "$0")/../.."

build=${BUILD:-build-figures-bench}
data=docs/figures/bench
min_time=${MIN_TIME:-0.1}
repetitions=${REPETITIONS:-3}
cpus=$(getconf _NPROCESSORS_ONLN)  # not nproc: it obeys OMP_NUM_THREADS

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DEDGEATTN_BUILD_BENCH=ON \
    -DEDGEATTN_BUILD_TESTS=OFF -DEDGEATTN_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$build" --target edgeattn-benchmarks edgeattn-sweeps -j"${JOBS:-$(nproc)}"

mkdir -p "$data"
rm -f "$data"/*.json
export OMP_NUM_THREADS=1 EDGEATTN_BENCH_THREADS=1 OPENBLAS_NUM_THREADS=1
for program in "$build"/bench/edgeattn-bench* "$build"/bench/edgeattn-sweep*; do
    [ -x "$program" ] && [ -f "$program" ] || continue
    name=$(basename "$program")
    filter=.
    case $name in edgeattn-sweep*) filter='^(sdpa|mha)' ;; esac
    echo "== $name"
    "$program" --benchmark_filter="$filter" --benchmark_min_time="$min_time" \
        --benchmark_repetitions="$repetitions" --benchmark_report_aggregates_only=true \
        --benchmark_out="$data/$name-1t.json" --benchmark_out_format=json >/dev/null
done

{
    echo "CPU: $(LC_ALL=C lscpu | sed -n 's/^Model name: *//p' | head -1), $cpus CPUs"
    echo "edgeattn commit: ${EDGEATTN_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
    echo "date: $(date -u +%Y-%m-%d)"
    echo "threads: 1; --benchmark_min_time=$min_time; median of $repetitions repetitions"
} >"$data/machine.txt"
cat "$data/machine.txt"
