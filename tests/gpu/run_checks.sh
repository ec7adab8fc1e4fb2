#!/usr/bin/env bash
# The GPU machine's checks in one command (no Qt there): build core + CLI with CUDA, run the CLI
# tests, the CUDA self-test (GEMM and backward cases included), the quantize / GEMM / analyze benchmarks
# and the independent oracles (numpy, ml_dtypes, torch for GEMM timings).
# Usage: tests/gpu/run_checks.sh OUT_DIR [tests|bench|all] [extra cmake args]
#   OUT_DIR receives one log per step; a summary goes to stdout. The whole run no longer fits one 10-minute call
#   of the device tool (H200, session 23: build 60 s, ctest 120 s when serial, each of the five self-test runs
#   50 s; the first GEMM benchmark alone over 150 s), so run `tests` (build, ctest, the CUDA self-test and its
#   variants, the oracles) and `bench` (build, the benchmarks) in two calls. Default: all.
# Needs: cmake, ninja, nvcc, Eigen; CLI11 and nlohmann-json headers (pass -DQS_DEPS_DIR=<prefix>
# -DCMAKE_PREFIX_PATH=<prefix> where they are not installed); python3 with numpy and ml_dtypes.
set -u
out=${1:?usage: tests/gpu/run_checks.sh OUT_DIR [tests|bench|all] [cmake args]}; shift
part=all
case "${1:-}" in tests | bench | all) part=$1; shift ;; esac
want() { [ "$part" = all ] || [ "$part" = "$1" ]; }
mkdir -p "$out"
cd "$(dirname "$0")/../.."
cli=build-gpu/quantscope-cli
cmake -S . -B build-gpu -G Ninja -DQS_BUILD_GUI=OFF -DQS_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a "$@" > "$out/configure.log" 2>&1 &&
  cmake --build build-gpu -j"$(nproc)" > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
# ptxas serializes a wgmma pipeline ("Potential Performance Loss": info C7515 when a non-wgmma instruction may
# define accumulator registers between a wgmma and its wait, as a lane-dependent branch there did in session 12;
# C7520 for a branch between them, even a uniform one, session 20: 2x the cycles). The kernels stay correct and
# get much slower, so say it loudly.
grep -q "Potential Performance Loss" "$out/build.log" &&
  echo "WARNING: ptxas serialized a wgmma pipeline: see $out/build.log"
if want tests; then
  ctest --test-dir build-gpu --output-on-failure -j"$(nproc)" -E tst_cuda_selftest > "$out/ctest.log" 2>&1; grep -E "tests passed|FAILED" "$out/ctest.log"
  # The CUDA correctness suite through its ctest entry (the cases `selftest --backend cuda` prints).
  ctest --test-dir build-gpu -V -R tst_cuda_selftest > "$out/selftest_cuda.log" 2>&1
  grep -E "Failure|passed,|tests passed|Skipped|SKIP" "$out/selftest_cuda.log" | tail -8
  # The same cases with the ping-pong GEMM kernel forced on every wgmma product (every output, tile shape 128 x 256
  # for the kernels it falls back to), with its int32 / float32 tiles stored through the staging buffers instead of
  # by TMA store (the path float16 out and rows of other widths take), with its last round in whole units instead
  # of halves, and turned off (the one-block-per-tile kernels everywhere).
  for pp in "QS_WGMMA_PP=1 QS_WGMMA_TILE=128x256" "QS_PP_TMA_STORE=0" "QS_PP_HALVES=0" "QS_WGMMA_PP=0"; do
    env $pp $cli selftest --backend cuda > "$out/selftest_cuda_pp.log" 2>&1
    echo "selftest --backend cuda with $pp: $(grep -E 'passed,' "$out/selftest_cuda_pp.log" | tail -1)"
    grep -E "^FAIL" "$out/selftest_cuda_pp.log" | head -5
  done
  python3 tests/oracle/check_conventions.py $cli "$(mktemp -d)" > "$out/oracle_conventions.log" 2>&1; grep -c "^ok" "$out/oracle_conventions.log"; grep "^FAIL" "$out/oracle_conventions.log" | head
  python3 tests/oracle/check_ml_dtypes.py $cli "$(mktemp -d)" > "$out/oracle_ml_dtypes.log" 2>&1; tail -1 "$out/oracle_ml_dtypes.log"
  models=$(ls .deps/models/*.onnx 2>/dev/null)
  python3 tests/oracle/check_analyze.py $cli $models > "$out/oracle_analyze.log" 2>&1; tail -6 "$out/oracle_analyze.log"
fi
if want bench; then
  for r in nearest stochastic; do
    $cli bench quantize --backend cuda --format e4m3fn --n 268435456 --rounding $r --reps 20 2>/dev/null
  done | tee "$out/bench_quantize_cuda.csv"
  for per in row tensor; do for dt in fp32 fp16; do
    $cli bench quantize-int8 --backend cuda --rows 8192 --cols 8192 --per $per --dtype $dt 2>&1
  done; done | tee "$out/bench_quantize_int8_cuda.csv"
  for r in nearest stochastic; do
    $cli bench quantize --backend cpu --format e4m3fn --n 67108864 --threads 1 --rounding $r 2>/dev/null
  done | tee "$out/bench_quantize_cpu.csv"
  # GEMM on the GPU: cuBLAS / cuBLASLt baselines and our kernels, ratios against int8-cublaslt on stderr;
  # torch._int_mm and torch.matmul as an independent timing of the same shapes.
  $cli bench gemm --backend cuda --sizes 4096,8192 --shape 16x4096x4096 --shape 2048x4096x11008 \
    2> "$out/bench_gemm_cuda.log" | tee "$out/bench_gemm_cuda.csv"; grep -E "FAILED|cublaslt$" "$out/bench_gemm_cuda.log" | head
  # The same timed back to back (20 calls per event pair: the kernels' steady rate, without the host's
  # submission time that the default timing includes).
  QS_BENCH_BATCH=20 $cli bench gemm --backend cuda --sizes 4096,8192 --shape 16x4096x4096 --shape 2048x4096x11008 \
    --kernels int8-cublaslt,int8-wgmma,int8-wgmma-dq 2> "$out/bench_gemm_cuda_b2b.log" > "$out/bench_gemm_cuda_b2b.csv"
  grep -E "FAILED|x int8-cublaslt" "$out/bench_gemm_cuda_b2b.log" | grep -v "1.000x" | sed "s/^#   /back to back: /"
  # And sustained (about a second per int8 kernel, as in a training loop; cuBLAS fp32, which always runs, takes
  # most of the minute), with the SM clock each kernel ran at: a power-capped card slows down by the power a
  # kernel draws, so short bursts and sustained runs give different ratios.
  QS_BENCH_CLOCK=1 QS_BENCH_BATCH=20 $cli bench gemm --backend cuda --sizes 4096 --shape 2048x4096x11008 \
    --kernels int8-cublaslt,int8-wgmma,int8-wgmma-dq --reps 10000 2> "$out/bench_gemm_cuda_sustained.log" \
    > "$out/bench_gemm_cuda_sustained.csv"
  grep -E "FAILED|x int8-cublaslt|SM clock" "$out/bench_gemm_cuda_sustained.log" | grep -v "1.000x" | sed "s/^#   /sustained: /"
  python3 tests/gpu/torch_gemm_oracle.py 4096 8192 16x4096x4096 > "$out/torch_gemm.csv" 2>&1; cat "$out/torch_gemm.csv"
  $cli bench gemm --backend cpu --threads 1 --sizes 1024,2048 --shape 1x4096x4096 --shape 16x4096x4096 2>/dev/null | tee "$out/bench_gemm_cpu.csv"
  $cli bench analyze --size-mb 1024 --tensors 256 --threads 1 | tee "$out/bench_analyze.csv"
fi
