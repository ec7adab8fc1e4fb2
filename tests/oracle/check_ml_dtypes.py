#!/usr/bin/env python3
"""Independent oracle check of quantscope-cli against ml_dtypes / numpy / torch (run where they are
installed, e.g. the GPU machine; they are never dependencies of QuantScope).

  python3 tests/oracle/check_ml_dtypes.py build/quantscope-cli [workdir]

For every ml_dtypes format: the value of every code (`grid`), and the codes that `quantize
--scale none --overflow ieee` gives for float32 and float64 inputs (every grid value, its float32
neighbours, every midpoint and its neighbours, random bit patterns, random magnitudes) against
ml_dtypes' own round-to-nearest-even cast. Prints one line per format; exits 1 on any mismatch."""
import csv
import subprocess
import sys
import tempfile

import ml_dtypes
import numpy as np

cli = sys.argv[1]
work = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp()
FORMATS = {
    "e4m3fn": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2,
    "e4m3fnuz": ml_dtypes.float8_e4m3fnuz, "e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
    "e4m3b11fnuz": ml_dtypes.float8_e4m3b11fnuz, "e4m3": getattr(ml_dtypes, "float8_e4m3", None),
    "e3m4": getattr(ml_dtypes, "float8_e3m4", None), "e8m0fnu": getattr(ml_dtypes, "float8_e8m0fnu", None),
    "e2m3fn": getattr(ml_dtypes, "float6_e2m3fn", None), "e3m2fn": getattr(ml_dtypes, "float6_e3m2fn", None),
    "e2m1fn": getattr(ml_dtypes, "float4_e2m1fn", None), "bf16": ml_dtypes.bfloat16, "fp16": np.float16,
}
rng = np.random.default_rng(2026)
failed = 0


def codes_of(arr, dtype):
    bits = 16 if np.dtype(dtype).itemsize == 2 else 8
    return arr.astype(dtype).view(np.uint16 if bits == 16 else np.uint8).astype(np.uint32)


for name, dt in FORMATS.items():
    if dt is None:
        print(f"{name}: SKIP (this ml_dtypes has no such type)")
        continue
    nbits = 16 if np.dtype(dt).itemsize == 2 else 8
    allcodes = np.arange(1 << nbits, dtype=np.uint32)
    ref_vals = allcodes.astype(np.uint16 if nbits == 16 else np.uint8).view(dt).astype(np.float64)
    # Sub-byte formats: ml_dtypes keeps them in a byte; only codes below 2^bits are meaningful.
    out = subprocess.run([cli, "grid", "--format", name], capture_output=True, text=True, check=True).stdout
    rows = list(csv.DictReader(out.splitlines()))
    ncodes = len(rows)
    ours = np.array([float(r["value"]) for r in rows])
    ref = ref_vals[:ncodes]
    grid_bad = int(np.sum(~((ours == ref) | (np.isnan(ours) & np.isnan(ref)))))

    finite = np.unique(ref[np.isfinite(ref)])
    mids = (finite[:-1] + finite[1:]) / 2
    base = np.concatenate([finite, -finite, mids, -mids]).astype(np.float32)
    near = np.concatenate([base, np.nextafter(base, np.float32(np.inf)), np.nextafter(base, np.float32(-np.inf))])
    rand_bits = rng.integers(0, 2**32, 400000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    lo, hi = np.log2(finite[finite > 0].min()) - 4, np.log2(np.abs(finite).max()) + 2
    mags = (np.exp2(rng.uniform(lo, hi, 400000)) * rng.choice([-1, 1], 400000)).astype(np.float32)
    x32 = np.concatenate([near, rand_bits, mags, np.array([0, -0.0, np.inf, -np.inf, np.nan], np.float32)])
    results = []
    for tag, x in (("f32", x32), ("f64", np.concatenate([x32.astype(np.float64),
                                                          rng.standard_normal(100000) * np.abs(finite).max() / 4]))):
        if tag == "f64" and name in ("bf16", "fp16"):
            pass
        np.save(f"{work}/{name}_{tag}_x.npy", x)
        subprocess.run([cli, "quantize", "--format", name, "--scale", "none", "--overflow", "ieee",
                        "--in", f"{work}/{name}_{tag}_x.npy", "--out", f"{work}/{name}_{tag}_y.npy",
                        "--codes", f"{work}/{name}_{tag}_c.npy"], check=True, capture_output=True)
        ours_c = np.load(f"{work}/{name}_{tag}_c.npy").astype(np.uint32)
        with np.errstate(all="ignore"):
            ref_c = codes_of(x, dt)
        ref_v = ref_vals[ref_c]
        ours_v = ref_vals[ours_c] if ours_c.max() < len(ref_vals) else None
        same = ours_c == ref_c
        both_nan = np.isnan(ref_v) & np.isnan(ref_vals[ours_c])
        bad = ~(same | both_nan)
        # ml_dtypes rounds float32 subnormal inputs to E8M0 (below 2^-126) as if code 0 were zero;
        # QuantScope rounds them to the nearest of 2^-127 / 2^-126 (report, do not count).
        note = ""
        if name in ("e2m3fn", "e3m2fn", "e2m1fn"):
            # No NaN in these formats: docs/DESIGN.md (Encoding rules) maps NaN to 0; ml_dtypes gives a
            # zero too, with the sign flipped (-0 for +NaN). Same value: report, do not count.
            z = np.isnan(x) & (ref_v == 0) & (ref_vals[ours_c] == 0)
            if np.any(bad & z):
                note = f" ({int(np.sum(bad & z))} NaN inputs -> zero of the other sign than ml_dtypes)"
            bad &= ~z
        if name == "e8m0fnu":
            sub = (np.abs(x) < 2.0**-126) & (x > 0)
            if np.any(bad & sub):
                note = f" ({int(np.sum(bad & sub))} E8M0 inputs below 2^-126 differ by design)"
            bad &= ~sub
        nbad = int(np.sum(bad))
        nan_sign = int(np.sum(~same & both_nan))
        results.append(f"{tag}: {len(x)} inputs, {nbad} code mismatches, {nan_sign} NaN-sign-only{note}")
        if nbad:
            i = int(np.flatnonzero(bad)[0])
            results.append(f"  first: x={x[i]!r} ours=0x{ours_c[i]:x} ml_dtypes=0x{ref_c[i]:x}")
        failed += nbad
    failed += grid_bad
    print(f"{name}: grid {ncodes} codes, {grid_bad} value mismatches; " + "; ".join(results))

# Integers: round half to even and the narrow symmetric range, against numpy.
for name, qmax, qmin in (("int8", 127, -127), ("int4", 7, -7), ("uint8", 255, 0), ("uint4", 15, 0)):
    x = np.concatenate([np.arange(-300, 300, 0.25), rng.standard_normal(100000) * 50]).astype(np.float32)
    np.save(f"{work}/{name}_x.npy", x)
    subprocess.run([cli, "quantize", "--format", name, "--scale", "none", "--in", f"{work}/{name}_x.npy",
                    "--out", f"{work}/{name}_y.npy"], check=True, capture_output=True)
    ours = np.load(f"{work}/{name}_y.npy")
    ref = np.clip(np.rint(x), qmin, qmax).astype(np.float32)
    nbad = int(np.sum(ours != ref))
    failed += nbad
    print(f"{name}: {len(x)} inputs, {nbad} mismatches against clip(rint(x))")

print("ORACLE:", "PASS" if failed == 0 else f"FAIL ({failed} mismatches)")
sys.exit(1 if failed else 0)
