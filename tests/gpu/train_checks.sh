#!/usr/bin/env bash
# The GPU machine's training checks (issue 18) in one command: build core + CLI with CUDA, the CUDA self-test
# (int8 layer, optimizers, fake quantization and short training runs included), then Fashion-MNIST trained on
# the GPU in each mode (fp32, int8 layers, E4M3 QAT, GridOptim), then the same runs on the CPU lab compared with
# the GPU's step by step (steps CSVs) and weight by weight (the saved .safetensors), with the CPU's epoch times.
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
# CPU = GPU, whole runs (issue 18): the same runs on the CPU lab, steps CSVs and saved weights compared.
same() {  # name, epochs, args...
  local name=$1 ep=$2; shift 2
  run "cpu-$name" --backend cpu --threads 2 --epochs "$ep" --save "$out/cpu-$name.safetensors" "$@"
  run "gpu-$name-cmp" --backend cuda --epochs "$ep" --save "$out/gpu-$name.safetensors" "$@"
  python3 tests/gpu/compare_steps.py "$out/steps_cpu-$name.csv" "$out/steps_gpu-$name-cmp.csv" "$name CPU vs GPU"
  python3 tests/gpu/same_tensors.py "$out/cpu-$name.safetensors" "$out/gpu-$name.safetensors"
}
same fp32 "$epochs"
same grid "$epochs" --optimizer grid
same qat-e4m3 "$epochs" --weights e4m3fn/tensor --acts e4m3fn/tensor
same qat-nvfp4 3 --weights e2m1fn/block:16:e4m3fn --acts e2m1fn/block:16:e4m3fn
