#!/usr/bin/env python3
"""Draw edgeattn's figures of d2l's attention chapter from what it computed.

    plot_figures.py --dump DIR --out DIR

--dump DIR         a directory written by edgeattn-demo --dump (or
                   edgeattn-conform --dump): attention_heads.png (every head's
                   weights), positional_columns.png (columns 6-9 of P against
                   the position) and positional_table.png (P as a heatmap),
                   each for what is there

The speed figures (speed_ratios.png, time_vs_seq.png) are drawn by
bench/make_performance_page from the run behind docs/performance.md.

Needs Debian's python3-matplotlib and python3-numpy (run with
/usr/bin/python3 where another python3 comes first on PATH).
"""
import argparse
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import library_figures  # noqa: E402

# Modest PNGs for the README (~100 dpi).
plt.rcParams.update({"savefig.dpi": 100, "figure.dpi": 100})


def shrink_png(path, colours=128):
    """Re-saves a PNG with a palette of `colours`: plots use few colours, and
    the file gets about half as large (README figures stay under ~100 KB)."""
    from PIL import Image  # python3-pil, a dependency of python3-matplotlib

    with Image.open(path) as image:
        palette = image.convert("RGB").quantize(colors=colours)
    palette.save(path, optimize=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1].strip())
    parser.add_argument("--dump", required=True, help="edgeattn-demo --dump directory")
    parser.add_argument("--out", required=True, help="directory for the PNGs")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    written = library_figures.draw(plt, args.dump, args.out)
    if not written:
        sys.exit(f"plot_figures.py: {args.dump}: no attention_weights.csv or "
                 "positional_encoding.csv")
    for path in written:
        shrink_png(path)
        print(f"wrote {path} ({os.path.getsize(path) // 1024} KiB)")


if __name__ == "__main__":
    main()
