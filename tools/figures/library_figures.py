"""Figures of d2l's attention chapter from what edgeattn computed (a dump
directory of edgeattn-demo --dump or edgeattn-conform --dump)."""
import os

import numpy as np

import tensor_csv


def attention_heatmaps(plt, dump_dir, out_path):
    """Every head's attention weights, one heatmap each: d2l's show_heatmaps
    (xlabel Keys, ylabel Queries, cmap Reds, one colour bar). Rows are batch
    elements, columns heads. False when the dump has no attention weights."""
    path = os.path.join(dump_dir, "attention_weights.csv")
    if not os.path.exists(path):
        return False
    _, weights = tensor_csv.read(path)
    if weights.ndim == 3:  # (batch, query, key): one head
        weights = weights[:, None]
    batch, heads = weights.shape[:2]
    valid_lens = None
    lens_path = os.path.join(dump_dir, "valid_lens.csv")
    if os.path.exists(lens_path):
        _, valid_lens = tensor_csv.read(lens_path)

    fig, axes = plt.subplots(batch, heads, figsize=(1.6 * heads + 1.2, 1.7 * batch + 0.6),
                             sharex=True, sharey=True, squeeze=False)
    image = None
    for b in range(batch):
        for h in range(heads):
            ax = axes[b, h]
            image = ax.imshow(weights[b, h], cmap="Reds", vmin=0.0, vmax=weights.max())
            queries, keys = weights.shape[2:]
            ax.set_xticks(range(keys))
            ax.set_yticks(range(queries))
            if b == batch - 1:
                ax.set_xlabel("Keys")
            if h == 0:
                label = "Queries"
                if valid_lens is not None and valid_lens.ndim == 1:
                    label = f"batch {b}, valid_len {int(valid_lens[b])}\nQueries"
                ax.set_ylabel(label)
            if b == 0:
                ax.set_title(f"head {h}")
    fig.colorbar(image, ax=axes, shrink=0.6)
    fig.suptitle("edgeattn: attention weights of every head", x=0.45)
    fig.savefig(out_path)
    plt.close(fig)
    return True


def positional_table(dump_dir):
    """edgeattn's positional table P (positions, columns), or None."""
    path = os.path.join(dump_dir, "positional_encoding.csv")
    return tensor_csv.read(path)[1] if os.path.exists(path) else None


def positional_columns(plt, table, out_path, columns=range(6, 10)):
    """d2l's plot of columns 6-9 of P against the position."""
    positions = np.arange(table.shape[0])
    fig, ax = plt.subplots(figsize=(6, 2.5))
    for column in columns:
        ax.plot(positions, table[:, column], label=f"Col {column}")
    ax.set_xlabel("Row (position)")
    ax.set_title(f"edgeattn: positional encoding, d = {table.shape[1]}, "
                 f"{table.shape[0]} positions")
    ax.legend()
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(out_path)
    plt.close(fig)


def positional_heatmap(plt, table, out_path):
    """d2l's heatmap of the whole table (cmap Blues)."""
    fig, ax = plt.subplots(figsize=(3.5, 4))
    image = ax.imshow(table, cmap="Blues", aspect="auto")
    ax.set_xlabel("Column (encoding dimension)")
    ax.set_ylabel("Row (position)")
    ax.set_title("edgeattn: positional table", fontsize=10)
    fig.colorbar(image, ax=ax, shrink=0.6)
    fig.tight_layout()
    fig.savefig(out_path)
    plt.close(fig)


def draw(plt, dump_dir, out_dir):
    """Draws every figure the dump has data for; returns the paths written."""
    written = []
    path = os.path.join(out_dir, "attention_heads.png")
    if attention_heatmaps(plt, dump_dir, path):
        written.append(path)
    table = positional_table(dump_dir)
    if table is not None:
        path = os.path.join(out_dir, "positional_columns.png")
        positional_columns(plt, table, path)
        written.append(path)
        path = os.path.join(out_dir, "positional_table.png")
        positional_heatmap(plt, table, path)
        written.append(path)
    return written
