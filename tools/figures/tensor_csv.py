"""Reader of the dump format that tensor_csv.hpp writes (one tensor per CSV).

Header: one index column per leading axis, then "<axis>_<j>" for every index
j of the last axis; one line per index of the leading axes, row-major.
"""
import csv

import numpy as np


def read(path):
    """Returns (axis names, numpy float64 array of the tensor's shape)."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header, lines = rows[0], rows[1:]
    if header == ["value"]:
        return [], np.array(float(lines[0][0]))
    last_axis = header[-1].rpartition("_")[0]
    leading = [name for name in header if not name.startswith(last_axis + "_")]
    n_index = len(leading)
    values = np.array([[float(v) for v in line[n_index:]] for line in lines])
    if n_index == 0:
        return [last_axis], values[0]
    index = np.array([[int(v) for v in line[:n_index]] for line in lines])
    shape = tuple(int(m) + 1 for m in index.max(axis=0)) + (values.shape[1],)
    return leading + [last_axis], values.reshape(shape)
