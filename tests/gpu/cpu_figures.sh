#!/usr/bin/env bash
# Issue 17's CPU figures on the GPU machine's Xeon (AVX-512 VNNI and, pinned, its AVX2 level), from an
# existing build: fake quantization against memcpy, the Error view's demo schemes, bench analyze thread
# scaling, and the int8 GEMM against oneDNN (build with .deps from `tests/gpu/make_deps.sh --onednn`).
# Usage: tests/gpu/cpu_figures.sh CLI OUT_DIR    (one CSV / log per part in OUT_DIR, a summary on stdout)
set -u
cli=${1:?usage: cpu_figures.sh CLI OUT_DIR}; out=${2:?usage: cpu_figures.sh CLI OUT_DIR}
mkdir -p "$out"
lscpu | grep -E "Model name|^CPU\(s\)|Flags" | cut -c1-200 > "$out/cpu.txt"; head -2 "$out/cpu.txt"
# oneDNN's own ISA cap for its AVX2 rows (2.x reads DNNL_MAX_CPU_ISA, 3.x ONEDNN_MAX_CPU_ISA).
isa() { if [ "$1" = avx2 ]; then echo "DNNL_MAX_CPU_ISA=AVX2 ONEDNN_MAX_CPU_ISA=AVX2"; else echo "QS_NONE=1"; fi; }
for round in 1 2; do
  for lvl in avx2 avx512; do for r in nearest stochastic; do
    QS_SIMD_LEVEL=$lvl taskset -c 2 $cli bench quantize --backend cpu --format e4m3fn --n 67108864 --threads 1 --rounding $r 2>/dev/null | tail -1 | sed "s/^/$lvl,$round,/"
  done; done
done | tee "$out/quantize.csv"
for lvl in avx2 avx512; do
  for s in e4m3fn/tensor e5m2/tensor int8/tensor int8/channel:0 e2m1fn/block:32:e8m0fnu e2m1fn/block:16:e4m3fn q4_k e2m1fn/block:16:e4m3fn:mse; do
    QS_SIMD_LEVEL=$lvl taskset -c 2 $cli bench error-view --scheme $s --reps 5 --threads 1 2>&1 | grep -vE "^#" | tail -1 | sed "s/^/$lvl,/"
  done
done | tee "$out/error_view.csv"
for lvl in avx2 avx512; do for t in 1 2 4; do
  QS_SIMD_LEVEL=$lvl $cli bench analyze --size-mb 512 --tensors 128 --threads $t 2>/dev/null | tail -1 | sed "s/^/$lvl,/"
done; done | tee "$out/analyze.csv"
for lvl in avx2 avx512; do
  env $(isa $lvl) QS_GEMM_AVX2_KERNEL=avx2 taskset -c 2 $cli bench gemm --backend cpu --threads 1 --sizes 1024,2048 \
    --shape 1x4096x4096 --shape 16x4096x4096 --kernels int8-avx2,int8-vnni,int8-onednn 2>"$out/gemm_$lvl.log" | grep -E "onednn|int8-avx2|int8-vnni|fp32" | sed "s/^/$lvl,/"
done | tee "$out/gemm.csv"
env DNNL_MAX_CPU_ISA=AVX2 ONEDNN_MAX_CPU_ISA=AVX2 taskset -c 2,3 $cli bench gemm --backend cpu --threads 2 --sizes 2048 \
  --kernels int8-avx2,int8-onednn 2>/dev/null | grep -E "int8" | sed "s/^/2threads,/" | tee -a "$out/gemm.csv"
