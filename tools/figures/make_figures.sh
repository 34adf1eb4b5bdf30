#!/usr/bin/env bash
# Regenerates every figure of README's "Figures" section:
#
#   bash tools/figures/make_figures.sh [OUT_DIR]        (default: docs/figures)
#
# builds edgeattn-demo (CMake, Release, in $BUILD, default build-figures),
# runs it with --dump into a temporary directory and draws from that dump
# attention_heads.png, positional_columns.png and positional_table.png; the
# benchmark figures time_vs_seq.png and speed_ratios.png are drawn from the
# Google Benchmark JSON in docs/figures/bench/ (a committed run, see
# machine.txt there; tools/figures/measure_bench.sh measures anew).
# Needs cmake, a C++17 compiler, python3-matplotlib and python3-numpy.
# Environment: BUILD, JOBS (default: every core), PYTHON (default
# /usr/bin/python3, Debian's, which has matplotlib).
set -euo pipefail
cd "$(dirname "$0")/../.."

out=${1:-docs/figures}
build=${BUILD:-build-figures}
python=${PYTHON:-/usr/bin/python3}
bench_data=docs/figures/bench

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DEDGEATTN_BUILD_EXAMPLES=ON \
    -DEDGEATTN_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" --target edgeattn-demo -j"${JOBS:-$(nproc)}" >/dev/null

dump=$(mktemp -d)
trap 'rm -rf "$dump"' EXIT
"$build/examples/demo/edgeattn-demo" --dump "$dump" >/dev/null

args=(--dump "$dump" --out "$out")
shopt -s nullglob
sweep_json=("$bench_data"/edgeattn-sweep*.json)
ratio_json=("$bench_data"/edgeattn-bench*.json)
((${#sweep_json[@]})) && args+=(--sweep-json "${sweep_json[@]}")
((${#ratio_json[@]})) && args+=(--ratio-json "${ratio_json[@]}")
"$python" tools/figures/plot_figures.py "${args[@]}"
