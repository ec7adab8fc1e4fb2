#!/usr/bin/env python3
"""Writes PyTorch checkpoints with real torch.save, and the expected values beside them, for QuantScope's
PyTorch reader to be checked against (tests/core/tst_torch.cpp, test RealTorchFiles):

  python3 tests/gpu/torch_save_oracle.py OUT_DIR      (where torch is installed, e.g. the GPU machine)
  QS_TORCH_ORACLE_DIR=OUT_DIR build/tests/core/tst_torch --gtest_filter=Torch.RealTorchFiles

OUT_DIR gets the .pt files, one <file>.<n>.f32 sidecar per tensor (its values as float32, C order, computed
by torch: .float().contiguous()) and manifest.txt (file, tensor name, sidecar; tab-separated). Covered: a
real nn.Module state dict (conv, linear, batch norm with its int64 counter), every float and int dtype a
state dict holds, the float8s, views sharing a storage (transpose, slices, a row, a 0-d element, an empty
slice), nn.Parameter, nested dicts with non-tensor entries."""
import os
import sys

import numpy as np
import torch

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
manifest = []


def save(name, obj):
    path = os.path.join(out, name)
    torch.save(obj, path)

    def walk(prefix, v):
        if isinstance(v, torch.Tensor):
            side = f"{name}.{len(manifest)}.f32"
            arr = v.detach().float().contiguous().numpy().astype(np.float32)
            arr.tofile(os.path.join(out, side))
            manifest.append(f"{name}\t{prefix}\t{side}")
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(f"{prefix}.{k}" if prefix else str(k), x)
    walk("", obj)


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.Flatten(),
                            torch.nn.Linear(8 * 6 * 6, 10))
model(torch.randn(4, 3, 8, 8))  # batch norm statistics and num_batches_tracked become non-trivial
save("model.pt", model.state_dict())

save("dtypes.pt", {
    "f32": torch.randn(3, 5),
    "f64": torch.randn(4, dtype=torch.float64),
    "f16": torch.randn(5, 7).half(),
    "bf16": torch.randn(9).bfloat16(),
    "i64": torch.tensor([-3, 0, 7, 1 << 40]),
    "i32": torch.arange(-4, 4, dtype=torch.int32),
    "i16": torch.tensor([-32768, 5, 32767], dtype=torch.int16),
    "i8": torch.tensor([-128, 0, 127], dtype=torch.int8),
    "u8": torch.tensor([0, 200, 255], dtype=torch.uint8),
    "bool": torch.tensor([True, False, True]),
    "f8e4m3": (torch.randn(16) * 30).to(torch.float8_e4m3fn),
    "f8e5m2": (torch.randn(16) * 1000).to(torch.float8_e5m2),
    "f8e4m3fnuz": torch.randn(8).to(torch.float8_e4m3fnuz),
    "f8e5m2fnuz": torch.randn(8).to(torch.float8_e5m2fnuz),
    "e8m0": torch.tensor([0.25, 1.0, 1024.0]).to(torch.float8_e8m0fnu),
    "u16": torch.tensor([0, 1, 2, 65535]).to(torch.uint16),
})

base = torch.arange(24.0).reshape(4, 6)
save("views.pt", {"base": base, "t": base.t(), "slice": base[1:3, 2:5], "row": base[2], "scalar": base[1, 1],
                  "empty": base[:0], "step": base[:, ::2]})
save("nested.pt", {"model": {"layer": {"weight": torch.randn(2, 3)}}, "epoch": 3, "name": "run-1",
                   "p": torch.nn.Parameter(torch.randn(4))})

with open(os.path.join(out, "manifest.txt"), "w") as f:
    f.write("\n".join(manifest) + "\n")
print(f"wrote {len(manifest)} tensors in 4 files with torch {torch.__version__}")
