#!/usr/bin/env python3
"""Independent oracle for `quantscope-cli compare-conventions` (run where ml_dtypes and torch are installed,
e.g. the GPU machine; never a QuantScope dependency).

  python3 tests/oracle/check_conventions.py build/quantscope-cli [workdir]

Inputs: the format's probe inputs (the CLI's own, from its CSV) plus 200,000 random float32 bit patterns and
200,000 random magnitudes around the format's range. Compared code by code:
  ml_dtypes   x.astype(ml_dtypes.<format>)                 every ml_dtypes format
  torch       torch.from_numpy(x).to(torch.<format>)       the float8 formats torch converts
  satfinite   torch.clamp(x, -max, max).to(torch.<format>) (NaN stays NaN: TensorRT / __NV_SATFINITE's rule)
  torch-qint8, torch-affine-uint8: torch.ao MinMaxObserver + torch.quantize_per_tensor, int_repr()
Prints one line per check; exits 1 on any mismatch."""
import csv
import os
import subprocess
import sys
import tempfile

import ml_dtypes
import numpy as np
import torch

cli = sys.argv[1]
work = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp()
os.makedirs(work, exist_ok=True)
rng = np.random.default_rng(1915)
failed = 0

FLOATS = {  # name: (ml_dtypes type, torch dtype or None)
    "e4m3fn": (ml_dtypes.float8_e4m3fn, torch.float8_e4m3fn),
    "e5m2": (ml_dtypes.float8_e5m2, torch.float8_e5m2),
    "e4m3fnuz": (ml_dtypes.float8_e4m3fnuz, getattr(torch, "float8_e4m3fnuz", None)),
    "e5m2fnuz": (ml_dtypes.float8_e5m2fnuz, getattr(torch, "float8_e5m2fnuz", None)),
    "e2m3fn": (getattr(ml_dtypes, "float6_e2m3fn", None), None),
    "e3m2fn": (getattr(ml_dtypes, "float6_e3m2fn", None), None),
    "e2m1fn": (getattr(ml_dtypes, "float4_e2m1fn", None), None),
}


def run(fmt, convs, x):
    path = os.path.join(work, f"{fmt}_in.npy")
    np.save(path, x.astype(np.float32))
    out = os.path.join(work, f"{fmt}_{'_'.join(convs)}.csv")
    subprocess.run([cli, "compare-conventions", "--format", fmt, "--conventions", ",".join(convs), "--in", path,
                    "--csv", out, "--show", "0"], check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(x), (len(rows), len(x))
    return {c: np.array([int(r[c + "_code"], 16) for r in rows], dtype=np.int64) for c in convs}


def probes(fmt):
    out = os.path.join(work, f"{fmt}_probes.csv")
    subprocess.run([cli, "compare-conventions", "--format", fmt, "--conventions", "ml_dtypes,satfinite", "--csv", out,
                    "--show", "0"], check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        return np.array([float(r["input"]) for r in csv.DictReader(f)], dtype=np.float32)


def report(name, got, want, x):
    global failed
    bad = np.nonzero(got != want)[0]
    if len(bad):
        failed += 1
        i = bad[0]
        print(f"FAIL {name}: {len(bad)} of {len(x)} codes differ; first input {x[i]!r}: ours 0x{got[i]:02x}, "
              f"theirs 0x{want[i]:02x}")
    else:
        print(f"ok   {name}: {len(x)} inputs, every code equal")


for fmt, (mlt, tt) in FLOATS.items():
    if mlt is None:
        continue
    mx = float(ml_dtypes.finfo(mlt).max)
    x = np.concatenate([probes(fmt),
                        rng.integers(0, 2**32, 200000, dtype=np.uint64).astype(np.uint32).view(np.float32),
                        (rng.standard_normal(200000) * mx * np.exp2(rng.integers(-12, 3, 200000))).astype(np.float32)])
    convs = ["ml_dtypes", "satfinite"] + (["torch"] if tt is not None else [])
    ours = run(fmt, convs, x)
    bits = 8 if fmt.startswith("e4") or fmt.startswith("e5") else (6 if "m3fn" in fmt or "e3m2" in fmt else 4)
    mask = (1 << bits) - 1
    report(f"{fmt} ml_dtypes", ours["ml_dtypes"], x.astype(mlt).view(np.uint8).astype(np.int64) & mask, x)
    if tt is not None:
        tx = torch.from_numpy(x)
        report(f"{fmt} torch", ours["torch"], tx.to(tt).view(torch.uint8).numpy().astype(np.int64), x)
    # satfinite: clamp, then the library cast (torch's where torch converts: its NaN codes are CUDA's).
    clamped = np.where(np.isnan(x), x, np.clip(x, -mx, mx)).astype(np.float32)
    if tt is not None:
        sat = torch.from_numpy(clamped).to(tt).view(torch.uint8).numpy().astype(np.int64)
        report(f"{fmt} satfinite", ours["satfinite"], sat, x)
    else:  # no NaN code and no CUDA conversion to compare with: the finite and infinite inputs only
        keep = ~np.isnan(x)
        sat = clamped[keep].astype(mlt).view(np.uint8).astype(np.int64) & mask
        report(f"{fmt} satfinite (non-NaN inputs)", ours["satfinite"][keep], sat, x[keep])

for name, fmt, qscheme, dtype in [("torch-qint8", "int8", torch.per_tensor_symmetric, torch.qint8),
                                  ("torch-affine-uint8", "uint8", torch.per_tensor_affine, torch.quint8)]:
    for trial in range(20):
        n = 100000
        x = (rng.standard_normal(n) * np.exp2(rng.integers(-20, 20))).astype(np.float32)
        if trial % 2:
            x = np.abs(x) + np.float32(rng.random())  # all positive: the affine range without forcing 0 is different
        other = "narrow-symmetric" if fmt == "int8" else "tight-affine-uint8"
        ours = run(fmt, [name, other], x)
        obs = torch.ao.quantization.MinMaxObserver(qscheme=qscheme, dtype=dtype)
        tx = torch.from_numpy(x)
        obs(tx)
        s, z = obs.calculate_qparams()
        q = torch.quantize_per_tensor(tx, float(s), int(z), dtype).int_repr().numpy().astype(np.int64)
        report(f"{name} trial {trial} (scale {float(s):.6g}, zero point {int(z)})", ours[name], q & 0xff, x)

sys.exit(1 if failed else 0)
