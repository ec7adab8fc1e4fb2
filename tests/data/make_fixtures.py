#!/usr/bin/env python3
"""Writes the small .npy fixtures used by tests/cli/*.cmake (plain Python, no numpy).
Run from this folder: python3 make_fixtures.py"""
import struct


def npy(path, descr, shape, fmt, values):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (
        descr, "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")")
    total = 10 + len(header) + 1
    header += " " * ((64 - total % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (len(values), fmt), *values))


inf, nan = float("inf"), float("nan")
# e4m3fn probes with --scale none: 464 ties to 448, 465 saturates, -0, 1, 0.0625, tiny underflow,
# NaN, -inf, 3.5, -448.
probe = [464.0, 465.0, -0.0, 1.0, 0.0625, 1e-4, nan, -inf, 3.5, -448.0]
npy("probe_f32.npy", "<f4", (2, 5), "f", probe)
npy("probe_f64.npy", "<f8", (10,), "d", probe)
npy("ramp_i8.npy", "|i1", (6,), "b", [-128, -1, 0, 1, 64, 127])
npy("ramp_u16.npy", "<u2", (3,), "H", [0, 1000, 65535])
npy("empty_f32.npy", "<f4", (0, 3), "f", [])
