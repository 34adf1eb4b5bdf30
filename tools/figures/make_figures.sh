#!/usr/bin/env bash
# Regenerates the figures of d2l's attention chapter from edgeattn's numbers:
#
#   bash tools/figures/make_figures.sh [OUT_DIR]        (default: docs/figures)
#
# builds edgeattn-demo (CMake, Release, in $BUILD, default build-figures),
# runs it with --dump into a temporary directory and draws from that dump
# attention_heads.png, positional_columns.png and positional_table.png. The
# speed figures (speed_ratios.png, time_vs_seq.png) belong to
# docs/performance.md: bench/make_performance_page draws them.
# Needs cmake, a C++17 compiler, python3-matplotlib and python3-numpy.
# Environment: BUILD, JOBS (default: every core), PYTHON (default
# /usr/bin/python3, Debian's, which has matplotlib).
set -euo pipefail
cd "$(dirname "$0")/../.."

out=${1:-docs/figures}
build=${BUILD:-build-figures}
python=${PYTHON:-/usr/bin/python3}

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DEDGEATTN_BUILD_EXAMPLES=ON \
    -DEDGEATTN_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" --target edgeattn-demo -j"${JOBS:-$(nproc)}" >/dev/null

dump=$(mktemp -d)
trap 'rm -rf "$dump"' EXIT
"$build/examples/demo/edgeattn-demo" --dump "$dump" >/dev/null

"$python" tools/figures/plot_figures.py --dump "$dump" --out "$out"
