#!/usr/bin/env python3
"""Compares two steps CSVs of `quantscope-cli train --csv` (e.g. the same GridOptim run on the CPU and on the GPU):
the steps whose loss and flip counts are identical, the first step that differs, and how far apart the runs
are afterwards. Usage: compare_steps.py A.csv B.csv [label]"""
import csv
import sys


def rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


a, b = rows(sys.argv[1]), rows(sys.argv[2])
label = sys.argv[3] if len(sys.argv) > 3 else "runs"
n = min(len(a), len(b))
first = None
for i in range(n):
    if a[i] != b[i]:  # every column: loss, accuracies, flips, updates, bit-stalls, overflow, underflow
        first = i
        break
same = n if first is None else first
print(f"{label}: {n} steps compared ({len(a)} and {len(b)} in the files); every column identical for the first {same} steps")
if first is not None:
    r = first
    print(f"  first difference at step {a[r]['step']}: loss {a[r]['loss']} vs {b[r]['loss']}, "
          f"flips {a[r]['flips']} vs {b[r]['flips']}")
    rel = [abs(int(x["flips"]) - int(y["flips"])) / max(1, int(x["flips"])) for x, y in zip(a[first:n], b[first:n])]
    dl = [abs(float(x["loss"]) - float(y["loss"])) for x, y in zip(a[first:n], b[first:n])]
    print(f"  afterwards: mean |flips difference| {100 * sum(rel) / len(rel):.2f} % of the first run's, "
          f"mean |loss difference| {sum(dl) / len(dl):.4f}")
