#!/usr/bin/env python3
"""Independent check of `quantscope-cli analyze`: per-tensor SQNR of each scheme recomputed with
numpy (+ ml_dtypes for the float casts), on a generated .safetensors and .npz, and on any real
model given after the CLI (an .onnx is read with the `onnx` package if installed, else skipped).

  python3 tests/oracle/check_analyze.py build/quantscope-cli [model.onnx|model.safetensors ...]

The numpy side implements the schemes of docs/DESIGN.md (Schemes and scale rules) directly: x / s in
float32, clamp to +-max (saturate), round with the ml_dtypes cast (nearest even), times s in float32."""
import csv
import json
import math
import os
import struct
import subprocess
import sys
import tempfile

import ml_dtypes
import numpy as np

cli = sys.argv[1]
extra = sys.argv[2:]
work = tempfile.mkdtemp()
rng = np.random.default_rng(7)
F8 = {"e4m3fn": (ml_dtypes.float8_e4m3fn, 448.0), "e5m2": (ml_dtypes.float8_e5m2, 57344.0),
      "e2m1fn": (ml_dtypes.float4_e2m1fn, 6.0)}


def cast(y, fmt):
    dt, mx = F8[fmt]
    return np.clip(y, -mx, mx).astype(dt).astype(np.float32)


_E4M3_CODES = np.arange(256, dtype=np.uint8)
_E4M3_VALS = _E4M3_CODES.view(ml_dtypes.float8_e4m3fn).astype(np.float64)
_E4M3_POS = sorted((v, int(c)) for v, c in zip(_E4M3_VALS, _E4M3_CODES) if np.isfinite(v) and v >= 0 and c < 0x80)


def e4m3_from_double(want):
    """Round a non-negative double to e4m3fn once (nearest, ties to the even code), saturating at 448.
    ml_dtypes' float64 cast may go through float32 (double rounding), so the oracle does it by hand."""
    want = min(float(want), 448.0)
    vals = [v for v, _ in _E4M3_POS]
    i = int(np.searchsorted(vals, want))
    if i < len(vals) and vals[i] == want:
        return want
    lo, clo = _E4M3_POS[i - 1]
    hi, chi = _E4M3_POS[i]
    if want - lo < hi - want:
        return lo
    if want - lo > hi - want:
        return hi
    return lo if clo % 2 == 0 else hi


def fq_scale(x, fmt, s):
    s = np.float32(s)
    return cast(x / s, fmt) * s


def amax_scale(fmt, amax):
    mx = 127.0 if fmt == "int8" else F8[fmt][1]
    return np.float32(1.0) if amax == 0 else max(np.float32(amax) / np.float32(mx), np.float32(np.finfo(np.float32).tiny))


def scheme(x, text):
    fmt, gran = text.split("/")
    x = x.astype(np.float32)
    if fmt == "int8":
        def q(v, s):
            s = np.float32(s)
            return np.clip(np.rint(v / s), -127, 127).astype(np.float32) * s
    else:
        def q(v, s):
            return fq_scale(v, fmt, s)
    if gran == "tensor":
        return q(x, amax_scale(fmt, float(np.max(np.abs(x)))))
    if gran.startswith("channel:"):
        ax = int(gran.split(":")[1])
        xm = np.moveaxis(x, ax, 0)
        out = np.empty_like(xm)
        for c in range(xm.shape[0]):
            out[c] = q(xm[c], amax_scale(fmt, float(np.max(np.abs(xm[c])))))
        return np.moveaxis(out, 0, ax)
    parts = gran.split(":")
    n = int(parts[1])
    sf = parts[2] if len(parts) > 2 else None
    rows = x.reshape(-1, x.shape[-1])
    out = np.empty_like(rows)
    ts = np.float32(1.0)
    if sf == "e4m3fn":
        am = float(np.max(np.abs(x)))
        ts = max(np.float32(am) / np.float32(448.0 * F8[fmt][1]), np.float32(np.finfo(np.float32).tiny)) if am else np.float32(1)
    for r in range(rows.shape[0]):
        for b0 in range(0, rows.shape[1], n):
            blk = rows[r, b0:b0 + n]
            am = float(np.max(np.abs(blk)))
            if sf == "e8m0fnu":
                s = np.float32(1.0) if am == 0 else np.float32(2.0 ** max(-127, min(127, math.floor(math.log2(am)) - math.floor(math.log2(F8[fmt][1])))))
            elif sf == "e4m3fn":
                want = np.float64(am) / (F8[fmt][1] * np.float64(ts))  # rounded once, from double
                sb = np.float32(e4m3_from_double(want))
                s = sb * ts if am > 0 else np.float32(1.0)
                if s == 0:
                    out[r, b0:b0 + n] = 0
                    continue
            else:
                s = amax_scale(fmt, am)
            out[r, b0:b0 + n] = q(blk, s)
    return out.reshape(x.shape)


def sqnr(x, y):
    x = x.astype(np.float64)
    e = x - y.astype(np.float64)
    se = float(np.sum(e * e))
    return math.inf if se == 0 else 10 * math.log10(float(np.sum(x * x)) / se)


# --- A minimal protobuf wire-format walk of ONNX files, independent of QuantScope's reader ---------
def _varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def _fields(b):
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        elif wt == 2:
            n, i = _varint(b, i)
            v, i = b[i:i + n], i + n
        else:
            raise ValueError("unsupported wire type")
        yield num, wt, v


def _tensor(b):
    dims, dtype, name, raw, floats, i32, dbl = [], 0, "", None, [], [], []
    for num, wt, v in _fields(b):
        if num == 1:
            if wt == 2:
                j = 0
                while j < len(v):
                    d, j = _varint(v, j)
                    dims.append(d)
            else:
                dims.append(v)
        elif num == 2:
            dtype = v
        elif num == 8:
            name = v.decode()
        elif num == 9:
            raw = v
        elif num == 4:
            floats.append(np.frombuffer(v, "<f4") if wt == 2 else np.frombuffer(v, "<f4"))
        elif num == 5:
            if wt == 2:
                j = 0
                while j < len(v):
                    d, j = _varint(v, j)
                    i32.append(d)
            else:
                i32.append(v)
        elif num == 10:
            dbl.append(np.frombuffer(v, "<f8"))
    np_dt = {1: np.float32, 10: np.float16, 11: np.float64, 16: ml_dtypes.bfloat16}.get(dtype)
    if np_dt is None:
        return name, None
    if raw is not None:
        arr = np.frombuffer(raw, np_dt)
    elif dtype == 1:
        arr = np.concatenate(floats) if floats else np.zeros(0, np.float32)
    elif dtype == 11:
        arr = np.concatenate(dbl) if dbl else np.zeros(0, np.float64)
    else:
        arr = np.array(i32, np.uint16).view(np_dt)
    return name, arr.reshape(dims).astype(np.float32)


def _graph(b, prefix, out):
    nodes = []
    for num, wt, v in _fields(b):
        if num == 5:
            name, arr = _tensor(v)
            out[prefix + name] = arr
        elif num == 1:
            nodes.append(v)
    for k, nb in enumerate(nodes):
        name = outputs0 = op = ""
        attrs = []
        for num, wt, v in _fields(nb):
            if num == 3:
                name = v.decode()
            elif num == 2 and not outputs0:
                outputs0 = v.decode()
            elif num == 4:
                op = v.decode()
            elif num == 5:
                attrs.append(v)
        label = name or outputs0 or f"{op}#{k}"
        for ab in attrs:
            aname, graphs, t = "", [], None
            for num, wt, v in _fields(ab):
                if num == 1:
                    aname = v.decode()
                elif num == 5:
                    t = v
                elif num in (6, 11):
                    graphs.append((num, v))
            if op == "Constant" and aname == "value" and t is not None:
                tname, arr = _tensor(t)
                out[prefix + (tname or outputs0)] = arr
            for j, (num, g) in enumerate(graphs):
                sub = f"{aname}[{j}]" if num == 11 else aname
                _graph(g, prefix + label + "/" + sub + "/", out)


def onnx_tensors(path):
    out = {}
    with open(path, "rb") as f:
        data = f.read()
    for num, wt, v in _fields(data):
        if num == 7:
            _graph(v, "", out)
    return {k: v for k, v in out.items() if v is not None}


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, arr, dt in tensors:
        b = arr.tobytes()
        header[name] = {"dtype": dt, "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


w1 = rng.standard_normal((64, 96)).astype(np.float32)
w1[3, 7] = 25.0  # an outlier
w2 = (rng.laplace(size=(32, 4, 48)) * 0.02).astype(np.float32)
w3 = rng.standard_normal((128, 40)).astype(ml_dtypes.bfloat16)
w4 = rng.standard_normal((16, 64)).astype(np.float16)
tensors = {"w1": w1, "w2": w2, "w3": w3.astype(np.float32), "w4": w4.astype(np.float32)}
st = os.path.join(work, "model.safetensors")
write_safetensors(st, [("w1", w1, "F32"), ("w2", w2, "F32"), ("w3", w3, "BF16"), ("w4", w4, "F16")])
npz = os.path.join(work, "model.npz")
np.savez_compressed(npz, w1=w1, w2=w2)
schemes = ["e4m3fn/tensor", "e5m2/tensor", "int8/tensor", "int8/channel:0", "e4m3fn/channel:-1",
           "e2m1fn/block:32:e8m0fnu", "e2m1fn/block:16:e4m3fn", "e4m3fn/block:32"]
failed = 0
for path in [st, npz] + extra:
    cmd = [cli, "analyze", "--in", path] + sum([["--scheme", s] for s in schemes], [])
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0 and "this build has no" in out.stderr:
        print(f"{path}: SKIP ({out.stderr.strip()})")
        continue
    if out.returncode != 0:
        print(f"{path}: analyze failed: {out.stderr.strip()}")
        failed += 1
        continue
    rows = list(csv.DictReader(out.stdout.splitlines()))
    arrays = tensors if path in (st, npz) else {}
    if path.endswith(".onnx"):
        arrays = onnx_tensors(path)
    if path.endswith(".safetensors") and path != st:
        with open(path, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            hdr = json.loads(f.read(n))
            base = 8 + n
            for k, v in hdr.items():
                if k == "__metadata__" or v["dtype"] not in ("F32", "F16", "BF16"):
                    continue
                f.seek(base + v["data_offsets"][0])
                raw = f.read(v["data_offsets"][1] - v["data_offsets"][0])
                dt = {"F32": np.float32, "F16": np.float16, "BF16": ml_dtypes.bfloat16}[v["dtype"]]
                arrays[k] = np.frombuffer(raw, dt).reshape(v["shape"]).astype(np.float32)
    checked = worst = 0
    for r in rows:
        x = arrays.get(r["tensor"])
        if x is None or x.size < 2:
            continue
        if r["scheme"].split("/")[1].startswith("channel") and x.ndim < 1:
            continue
        ref = sqnr(x, scheme(x, r["scheme"]))
        ours = float(r["sqnr_db"])
        diff = 0 if (math.isinf(ref) and math.isinf(ours)) else abs(ours - ref)
        worst = max(worst, diff)
        checked += 1
        if diff > 1e-9 * max(1.0, abs(ref)):
            failed += 1
            print(f"  MISMATCH {r['tensor']} {r['scheme']}: ours {ours} numpy {ref}")
    print(f"{path}: {len(rows)} rows, {checked} checked against numpy, max |dSQNR| = {worst:.3g} dB")
    if checked < len(rows):
        failed += 1
        print(f"  {len(rows) - checked} rows had no independently read tensor")
print("ANALYZE ORACLE:", "PASS" if failed == 0 else f"FAIL ({failed})")
sys.exit(1 if failed else 0)
