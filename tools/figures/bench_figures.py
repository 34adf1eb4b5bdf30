"""Benchmark figures from Google Benchmark JSON (bench/README.md): time
against sequence length per implementation, and peer / edgeattn time ratios
per shape. Names are <op>/<impl>/<shape>[/real_time]."""
import json
import os

import numpy as np
from matplotlib.ticker import FixedLocator, NullLocator

IMPL_ORDER = ["edgeattn", "libtorch", "onednn", "xnnpack", "openblas", "eigen", "naive", "memcpy"]
IMPL_LABEL = {"edgeattn": "edgeattn", "libtorch": "libtorch 1.13", "onednn": "oneDNN 2.6",
              "xnnpack": "XNNPACK", "openblas": "OpenBLAS 0.3.21", "eigen": "Eigen 3.4",
              "naive": "naive loops", "memcpy": "memcpy (the bound)"}
IMPL_COLOUR = {impl: f"C{i}" for i, impl in enumerate(IMPL_ORDER)}
ATTENTION_OPS = ["sdpa", "sdpa_weights", "mha", "mha_weights"]
RATIO_OPS = ["softmax", "softmax_masked", "sdpa", "sdpa_weights", "mha", "mha_weights", "gemm",
             "posenc"]
SECONDS_PER_UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def load(paths):
    """{(op, impl, shape): seconds} and a one-line description of the runs.
    Per benchmark: the median aggregate when the run has repetitions, else
    the fastest run; across files the lowest (noise on a shared machine
    only adds time)."""
    medians, singles, contexts = {}, {}, []
    for path in paths:
        with open(path) as f:
            run = json.load(f)
        contexts.append(run.get("context", {}))
        for b in run.get("benchmarks", []):
            if b.get("error_occurred") or b.get("run_type") == "aggregate" and \
                    b.get("aggregate_name") != "median":
                continue
            parts = b.get("run_name", b["name"]).split("/")
            if len(parts) < 3:
                continue
            key = tuple(parts[:3])
            seconds = b["real_time"] * SECONDS_PER_UNIT[b.get("time_unit", "ns")]
            table = medians if b.get("run_type") == "aggregate" else singles
            table[key] = min(seconds, table.get(key, seconds))
    times = {**singles, **medians}
    threads = sorted({c.get("bench_threads", "?") for c in contexts})
    date = contexts[0].get("date", "")[:10] if contexts else ""
    return times, f"{machine(paths[0])}, {', '.join(threads)} thread(s), {date}"


def machine(json_path):
    """The CPU line of machine.txt beside the JSON (measure_bench.sh writes
    it), else the JSON's host name."""
    try:
        with open(os.path.join(os.path.dirname(json_path), "machine.txt")) as f:
            for line in f:
                if line.startswith("CPU:"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    with open(json_path) as f:
        return json.load(f).get("context", {}).get("host_name", "unknown machine")


def dims(shape):
    return tuple(int(x) for x in shape.split("x"))


def impls_in(times, op):
    present = {impl for (o, impl, _) in times if o == op}
    return [impl for impl in IMPL_ORDER if impl in present] + sorted(present - set(IMPL_ORDER))


def time_vs_seq(plt, times, description, out_path, d_model=256, heads=4):
    """Log-log time against seq for batch 1, d_model, heads: one panel per
    attention op, one line per implementation, a dotted n^2 guide."""
    fig, axes = plt.subplots(2, 2, figsize=(9, 6.5), sharex=True)
    for ax, op in zip(axes.flat, ATTENTION_OPS):
        for impl in impls_in(times, op):
            points = sorted((dims(s)[1], t) for (o, i, s), t in times.items()
                            if o == op and i == impl and len(dims(s)) == 4
                            and dims(s)[0] == 1 and dims(s)[2:] == (d_model, heads))
            if len(points) < 2:
                continue
            seq, seconds = zip(*points)
            ax.loglog(seq, np.array(seconds) * 1e3, "o-", ms=3.5, color=IMPL_COLOUR.get(impl),
                      label=IMPL_LABEL.get(impl, impl))
            if impl == "edgeattn":
                n = np.array(seq, dtype=float)
                guide = seconds[-1] * 1e3 * (n / n[-1]) ** 2
                ax.loglog(n, guide, ":", color="grey", label="∝ seq² (through edgeattn's last)")
        ax.set_title(f"{op}: 1 x seq x {d_model} x {heads}", fontsize=10)
        ax.set_ylabel("time per call (ms)")
        seqs = sorted({dims(s)[1] for (o, _, s) in times if o == op})
        ax.xaxis.set_major_locator(FixedLocator(seqs))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticklabels([str(n) for n in seqs])
        ax.grid(True, alpha=0.25)
        ax.legend(fontsize=7)
    for ax in axes[-1]:
        ax.set_xlabel("sequence length (queries = keys)")
    fig.suptitle(f"Time against sequence length, log-log\n({description})", fontsize=10)
    fig.tight_layout()
    fig.savefig(out_path)
    plt.close(fig)


def speed_ratios(plt, times, description, out_path):
    """Grouped bars per op: peer time / edgeattn time for every shape where
    both ran (> 1: edgeattn is faster), log scale, shapes by growing work."""
    ops = [op for op in RATIO_OPS if len(impls_in(times, op)) > 1]
    columns = 2
    rows = (len(ops) + columns - 1) // columns
    fig, axes = plt.subplots(rows, columns, figsize=(10, 2.6 * rows), squeeze=False)
    for ax in axes.flat[len(ops):]:
        ax.axis("off")
    for ax, op in zip(axes.flat, ops):
        peers = [impl for impl in impls_in(times, op) if impl != "edgeattn"]
        shapes = sorted({s for (o, i, s) in times if o == op and i == "edgeattn"},
                        key=lambda shape: (np.prod(dims(shape)), dims(shape)))
        width = 0.8 / len(peers)
        for p, peer in enumerate(peers):
            x, ratios = [], []
            for k, shape in enumerate(shapes):
                if (op, peer, shape) in times:
                    x.append(k + (p - (len(peers) - 1) / 2) * width)
                    ratios.append(times[(op, peer, shape)] / times[(op, "edgeattn", shape)])
            # From 1 up (edgeattn faster) or down (the peer faster).
            ax.bar(x, np.array(ratios) - 1.0, width, bottom=1.0, color=IMPL_COLOUR.get(peer),
                   label=IMPL_LABEL.get(peer, peer))
        ax.axhline(1.0, color="black", lw=0.8)
        ax.set_yscale("log")
        ax.set_xticks(range(len(shapes)))
        ax.set_xticklabels(shapes, fontsize=7)
        ax.set_title(op, fontsize=10)
        ax.set_ylabel("peer / edgeattn", fontsize=8)
        ax.grid(True, axis="y", which="both", alpha=0.25)
        highest = max([1.0] + [times[k] / times[(op, "edgeattn", k[2])] for k in times
                               if k[0] == op and k[1] != "edgeattn" and
                               (op, "edgeattn", k[2]) in times])
        ax.set_ylim(top=highest * 6)  # room for the legend above the bars
        ax.legend(fontsize=6.5, ncol=4, loc="upper left")
    fig.suptitle("Speed ratio per shape: peer time / edgeattn time, > 1: edgeattn faster\n"
                 f"({description})", fontsize=10)
    fig.tight_layout()
    fig.savefig(out_path)
    plt.close(fig)
