#!/usr/bin/env python3
"""Draw edgeattn's figures (README, "Figures").

    plot_figures.py [--dump DIR] [--sweep-json FILE...] [--ratio-json FILE...] --out DIR

--dump DIR         a directory written by edgeattn-demo --dump (or
                   edgeattn-conform --dump): attention_heads.png (every head's
                   weights), positional_columns.png (columns 6-9 of P against
                   the position) and positional_table.png (P as a heatmap),
                   each for what is there
--sweep-json FILE  Google Benchmark JSON of the sweep programs
                   (edgeattn-sweep*): time_vs_seq.png, log-log
--ratio-json FILE  Google Benchmark JSON of edgeattn-bench and its peers:
                   speed_ratios.png, peer time / edgeattn time per shape

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
import bench_figures  # noqa: E402
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
    parser.add_argument("--dump", help="edgeattn-demo --dump directory")
    parser.add_argument("--sweep-json", nargs="+", default=[], help="sweep programs' JSON")
    parser.add_argument("--ratio-json", nargs="+", default=[], help="bench programs' JSON")
    parser.add_argument("--out", required=True, help="directory for the PNGs")
    args = parser.parse_args()
    if not (args.dump or args.sweep_json or args.ratio_json):
        parser.error("nothing to draw: give --dump, --sweep-json or --ratio-json")
    os.makedirs(args.out, exist_ok=True)

    written = []
    if args.dump:
        found = library_figures.draw(plt, args.dump, args.out)
        if not found:
            sys.exit(f"plot_figures.py: {args.dump}: no attention_weights.csv or "
                     "positional_encoding.csv")
        written += found
    if args.sweep_json:
        times, description = bench_figures.load(args.sweep_json)
        path = os.path.join(args.out, "time_vs_seq.png")
        bench_figures.time_vs_seq(plt, times, description, path)
        written.append(path)
    if args.ratio_json:
        times, description = bench_figures.load(args.ratio_json)
        path = os.path.join(args.out, "speed_ratios.png")
        bench_figures.speed_ratios(plt, times, description, path)
        written.append(path)
    for path in written:
        shrink_png(path)
        print(f"wrote {path} ({os.path.getsize(path) // 1024} KiB)")


if __name__ == "__main__":
    main()
