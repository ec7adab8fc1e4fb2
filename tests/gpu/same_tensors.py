#!/usr/bin/env python3
"""Whether two .safetensors files hold the same tensors: names, dtypes, shapes and data bytes (the metadata,
which names the backend that trained them, is not compared). Usage: same_tensors.py A B; exit 0 when equal."""
import json
import struct
import sys


def tensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    header.pop("__metadata__", None)
    return header, blob[8 + n:]


ha, da = tensors(sys.argv[1])
hb, db = tensors(sys.argv[2])
if ha == hb and da == db:
    print(f"  same tensors: {len(ha)} tensors, {len(da)} bytes of data identical")
    sys.exit(0)
diff = next((i for i in range(min(len(da), len(db))) if da[i] != db[i]), None)
print(f"  tensors DIFFER: headers {'equal' if ha == hb else 'differ'}, first differing data byte {diff}")
sys.exit(1)
