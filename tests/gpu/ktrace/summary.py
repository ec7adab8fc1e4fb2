#!/usr/bin/env python3
"""Per-kernel GPU durations and launch gaps from a ktrace CSV (tests/gpu/ktrace/ktrace.cpp).

A gap is the idle time between two consecutive runs of the same kernel, so with QS_BENCH_BATCH=n it measures
what back-to-back launches cost between kernels; medians and deciles in microseconds. Kernels with fewer than
--min runs are left out."""
import argparse
import csv
import statistics


def label(name):
    # The GEMM benchmark's kernels by short names: ours by output type (template argument O), cuBLAS by tile.
    if 'pingpong_kernel' in name:
        o = name[name.find('pingpong_kernelILi') + len('pingpong_kernelILi'):][:1]
        return 'ours ping-pong, out ' + {'0': 'int32', '1': 'float32', '2': 'float16'}.get(o, o)
    return name[:90]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('trace')
    ap.add_argument('--min', type=int, default=50)
    a = ap.parse_args()
    runs = sorted((int(r['start']), int(r['end']), r['name']) for r in csv.DictReader(open(a.trace)))
    by = {}
    for (s0, e0, n0), (s1, e1, n1) in zip(runs, runs[1:]):
        if n0 == n1:
            by.setdefault(n1, []).append((e1 - s1, s1 - e0))
    for name, v in sorted(by.items(), key=lambda kv: -len(kv[1])):
        if len(v) < a.min:
            continue
        d = sorted(x for x, _ in v)
        g = sorted(y for _, y in v)
        dec = lambda xs, q: xs[min(len(xs) - 1, q * len(xs) // 10)] / 1e3
        print(f'{label(name)}: {len(v)} runs, duration median {statistics.median(d) / 1e3:.2f} us '
              f'(p10 {dec(d, 1):.2f}), gap median {statistics.median(g) / 1e3:.2f} us '
              f'(p10 {dec(g, 1):.2f}, p90 {dec(g, 9):.2f})')


if __name__ == '__main__':
    main()
