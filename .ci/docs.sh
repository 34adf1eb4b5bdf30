#!/usr/bin/env bash
# CI: the API reference builds warning-free (an undocumented public symbol,
# parameter or return value fails it: docs/Doxyfile), the figures command
# regenerates d2l's figures from a fresh build (into a temporary directory),
# and docs/performance.md with its speed figures is what the committed
# benchmark run (bench/results/performance/) gives (no benchmark runs here).
set -euo pipefail
cd "$(dirname "$0")/.."

bash .ci/apt_install.sh \
    doxygen python3-matplotlib python3-numpy

echo "== API reference: doxygen docs/Doxyfile (any warning fails)"
rm -rf build-docs
doxygen docs/Doxyfile
test -s build-docs/html/index.html

echo "== figures: tools/figures/make_figures.sh into a temporary directory"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
BUILD=build-docs-figures bash tools/figures/make_figures.sh "$out"
for figure in attention_heads positional_columns positional_table; do
    test -s "$out/$figure.png" || { echo "docs.sh: $figure.png was not drawn" >&2; exit 1; }
done

echo "== performance page: bench/make_performance_page --check"
/usr/bin/python3 bench/make_performance_page --check
echo "== docs: passed"
