#!/usr/bin/env bash
# The GPU machine's training checks (issue 18) in one command: build core + CLI with CUDA, the CUDA self-test
# (int8 layer, optimizers, fake quantization and short training runs included), then Fashion-MNIST trained on
# the GPU in each mode (fp32, int8 layers, E4M3 QAT, GridOptim) and fp32 on the CPU for the epoch time beside it.
# Usage: tests/gpu/train_checks.sh OUT_DIR [epochs] [cmake args]   (data: .deps/fashion-mnist, tests/gpu/make_deps.sh)
set -u
out=${1:?usage: tests/gpu/train_checks.sh OUT_DIR [epochs] [cmake args]}; shift
epochs=${1:-15}; shift || true
mkdir -p "$out"
cd "$(dirname "$0")/../.."
cli=build-gpu/quantscope-cli
cmake -S . -B build-gpu -G Ninja -DQS_BUILD_GUI=OFF -DQS_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a "$@" > "$out/configure.log" 2>&1 &&
  cmake --build build-gpu -j"$(nproc)" > "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
$cli selftest --backend cuda --verbose > "$out/selftest_cuda.log" 2>&1
grep -E "^FAIL|passed," "$out/selftest_cuda.log" | tail -30
grep -E "^ok +train/" "$out/selftest_cuda.log"
data=".deps/fashion-mnist"
run() {  # name, args...
  local name=$1; shift
  $cli train --data-dir "$data" --no-ptq --csv "$out/steps_$name.csv" "$@" > "$out/train_$name.log" 2>&1
  echo "$name: $(grep -E '^epoch_time_s|^done' "$out/train_$name.log" | tr '\n' ' ')"
  grep -E "^train:|error|rror" "$out/train_$name.log" | head -2
}
run gpu-fp32 --epochs "$epochs" --backend cuda
run gpu-int8 --epochs "$epochs" --backend cuda --int8
run gpu-int8-row --epochs "$epochs" --backend cuda --int8 --int8-x row
run gpu-qat-e4m3 --epochs "$epochs" --backend cuda --weights e4m3fn/tensor --acts e4m3fn/tensor
run gpu-qat-e4m3-delayed --epochs "$epochs" --backend cuda --weights e4m3fn/tensor --acts e4m3fn/tensor --scaling delayed
run gpu-grid --epochs "$epochs" --backend cuda --optimizer grid
# NVFP4 (two-level e4m3fn block scales) on the device, weights and activations; beside it one CPU epoch.
run gpu-qat-nvfp4 --epochs "$epochs" --backend cuda --weights e2m1fn/block:16:e4m3fn --acts e2m1fn/block:16:e4m3fn
run cpu-qat-nvfp4-1ep --backend cpu --epochs 1 --threads 2 --weights e2m1fn/block:16:e4m3fn --acts e2m1fn/block:16:e4m3fn
run cpu-fp32-2ep --backend cpu --epochs 2 --threads 2
# GridOptim step by step: the same first epoch on the CPU and the GPU (steps CSVs compared by the caller).
run cpu-grid-1ep --backend cpu --optimizer grid --epochs 1 --threads 2
run gpu-grid-1ep --backend cuda --optimizer grid --epochs 1
