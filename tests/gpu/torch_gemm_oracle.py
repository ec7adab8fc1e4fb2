#!/usr/bin/env python3
"""Independent reference for `bench gemm --backend cuda`: times torch._int_mm (cuBLASLt int8 through
PyTorch) in its best layout (A row-major, B column-major) and torch.matmul in fp32/TF32/bf16 on the same
shapes, after checking _int_mm against an exact int64 product on sampled rows. Not a project dependency.
Usage: python3 tests/gpu/torch_gemm_oracle.py 4096 8192 16x4096x4096   (square sizes or MxKxN)
Prints CSV rows with the columns of `bench gemm` (backend torch)."""
import sys

import torch


def timed(fn, reps=20):
    fn()
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for a, b in ev:
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    ms = sorted(a.elapsed_time(b) for a, b in ev)
    return ms[len(ms) // 2]


def main():
    shapes = []
    for arg in sys.argv[1:] or ["4096", "8192"]:
        p = [int(v) for v in arg.split("x")]
        shapes.append((p[0], p[0], p[0]) if len(p) == 1 else tuple(p))
    print("backend,kernel,M,N,K,threads,median_ms,gops,speedup_vs_fp32,max_abs_err_vs_ref")
    g = torch.Generator(device="cuda").manual_seed(1)
    for M, K, N in shapes:
        a = torch.randint(-127, 128, (M, K), dtype=torch.int8, device="cuda", generator=g)
        w = torch.randint(-127, 128, (N, K), dtype=torch.int8, device="cuda", generator=g)
        b = w.t()  # K x N, column-major: the layout _int_mm is fastest with
        int_mm = M > 16  # torch._int_mm refuses M <= 16
        if int_mm:
            c = torch._int_mm(a, b)
            rows = torch.linspace(0, M - 1, min(M, 16)).long().cuda()
            exact = (a[rows].long().cpu() @ w.long().cpu().t())
            assert torch.equal(c[rows].long().cpu(), exact), "torch._int_mm differs from the exact product"
        else:
            print(f"# {M}x{K}x{N}: torch._int_mm needs M > 16, no int8 row", file=sys.stderr)
        x = torch.randn(M, K, device="cuda", generator=g)
        wf = torch.randn(N, K, device="cuda", generator=g)
        ops = 2.0 * M * N * K
        torch.backends.cuda.matmul.allow_tf32 = False
        t32 = timed(lambda: x @ wf.t())
        res = [("fp32-torch", t32)]
        torch.backends.cuda.matmul.allow_tf32 = True
        res.append(("tf32-torch", timed(lambda: x @ wf.t())))
        torch.backends.cuda.matmul.allow_tf32 = False
        xb, wb = x.bfloat16(), wf.bfloat16()
        res.append(("bf16-torch", timed(lambda: xb @ wb.t())))
        if int_mm:
            res.append(("int8-torch-int_mm", timed(lambda: torch._int_mm(a, b))))
        for name, ms in res:
            print(f"torch,{name},{M},{N},{K},0,{ms:.6g},{ops / ms / 1e6:.2f},{t32 / ms:.3f},0")


if __name__ == "__main__":
    main()
