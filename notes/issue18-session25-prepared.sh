#!/bin/bash
# Prepared in session 24 for session 25 (compiled here for sm_90a with a full `nvcc -c`, host pass included; NOT RUN).
# Two questions, one call (about 6 minutes on nvidia-h200, carry [".deps"]):
#  1. Stochastic fake quantization (0.80 of a copy on the H200, latency-bound per ncu; L2 prefetch, unroll and
#     launch-bound variants did not move it in session 24): does a ring of D iterations of input held in registers
#     (the next loads in flight while the warp computes) lift it? QS_FQ_RP=U,D: 2,0 (as landed), 2,1, 2,2, 1,2, 1,3
#     (registers of the scale-1 saturating kernel here: 47, 57, 64, 42, 48). Two rounds, then the self-test with
#     each variant.
#  2. Float32 GEMM out in seconds-long blocks (4.2-4.3 % over int32 at 4096^3 in session 24, 2.5 % in one launch's
#     cycles): does the SM clock fall under float32 out? QS_BENCH_CLOCK=1, blocks of 4,000 calls, two rounds.
# From the repository root, after `bash tests/gpu/make_deps.sh` here:
#   git apply notes/issue18-session25-fq-register-ring.diff
#   (device) timeout 560 bash notes/issue18-session25-prepared.sh       (one archive comes back)
#   git checkout core/cuda/fake_quant.cu        (or, if a variant wins and its self-test passes: make it the only one)
set -u
export PATH=/usr/local/cuda/bin:$PWD/.deps/bin:$PATH LD_LIBRARY_PATH=$PWD/.deps/lib
t0=$(date +%s); el() { echo "t=$(( $(date +%s)-t0 ))"; }; before() { [ $(( $(date +%s)-t0 )) -lt $1 ]; }
R=$OUT/r; mkdir -p $R
grep -q QS_FQ_RP core/cuda/fake_quant.cu || { echo "apply notes/issue18-session25-fq-register-ring.diff first"; exit 1; }
cmake -S . -B build-gpu -G Ninja -DQS_BUILD_GUI=OFF -DQS_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DQS_DEPS_DIR=$PWD/.deps -DCMAKE_PREFIX_PATH=$PWD/.deps > $R/cfg.log 2>&1 &&
  cmake --build build-gpu --target quantscope-cli -j16 > $R/build.log 2>&1
rc=$?; echo "build rc $rc $(el)"
[ $rc = 0 ] || { grep -m5 error $R/build.log; tar -czf $OUT/r.tgz -C $OUT r; exit 1; }
cli=build-gpu/quantscope-cli
for i in 1 2; do for rp in 2,0 2,1 2,2 1,2 1,3; do before 170 || break
  echo "$rp $i $(QS_FQ_RP=$rp $cli bench quantize --backend cuda --format e4m3fn --n 268435456 --rounding stochastic \
    --reps 20 2>/dev/null | tail -1)"
done; done | tee $R/fq.txt
el
for i in 1 2; do before 300 || break
  QS_BENCH_CLOCK=1 QS_BENCH_BATCH=20 timeout 60 $cli bench gemm --backend cuda --sizes 4096 --reps 4000 \
    --kernels int8-cublaslt,int8-wgmma,int8-wgmma-dq 2> $R/clock_$i.log > /dev/null
  grep -E "x int8-cublaslt|clock|MHz" $R/clock_$i.log | head -12
done
el
for rp in 2,1 1,2 2,2 1,3; do before 500 || break
  QS_FQ_RP=$rp $cli selftest --backend cuda > $R/selftest_$rp.log 2>&1
  echo "selftest QS_FQ_RP=$rp: $(grep -E 'passed,' $R/selftest_$rp.log | tail -1)"; grep "^FAIL" $R/selftest_$rp.log | head -5
done
el
tar -czf $OUT/r.tgz -C $OUT r && rm -rf $R
