#!/bin/bash
# Prepared in session 29 for session 30 (NOT RUN on a GPU; needs no diff). About 3-4 minutes on nvidia-h200, carry
# [".deps"]. From the repository root:   (device) timeout 400 bash notes/issue18-session30-prepared.sh
# The skinny kernel's float32 gap (16 x 4096 x 4096) against the length of a burst (session 29, call 6: +1.4-1.6 % in
# bursts of 100, +2.5-4.1 % in bursts of 20, +2.1-4.3 % per call; ncu within 1 %):
#  1. bursts of 1 (per call), 5, 20, 100 and 500, three rounds, with each timed block's median (QS_BENCH_BLOCKS=1):
#     if T(b) = t + c / b, the two builds' c and t come out of a fit; a gap in t is the kernel's, a gap in c the burst's.
#  2. the same with 20 ms of untimed calls of the kernel itself before each block (QS_BENCH_WARM_MS=20): whatever the
#     other kernel leaves behind (L2 lines, instruction cache, clock) is then gone.
set -u
export PATH=/usr/local/cuda/bin:$PWD/.deps/bin:$PATH LD_LIBRARY_PATH=$PWD/.deps/lib
t0=$(date +%s); el() { echo "t=$(( $(date +%s)-t0 ))"; }; before() { [ $(( $(date +%s)-t0 )) -lt $1 ]; }
R=$OUT/r; mkdir -p $R
cmake -S . -B build-gpu -G Ninja -DQS_BUILD_GUI=OFF -DQS_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DQS_DEPS_DIR=$PWD/.deps -DCMAKE_PREFIX_PATH=$PWD/.deps > $R/cfg.log 2>&1 &&
  cmake --build build-gpu --target quantscope-cli -j16 > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
cli=build-gpu/quantscope-cli; el
gap() { awk -F, '{k=$3"x"$5"x"$4} $2=="int8-wgmma"{w[k]=$7} $2=="int8-wgmma-dq"{d[k]=$7} END{for(k in w) printf "%s wg %.3f dq %.3f us %+.1f%%; ",k,w[k]*1000,d[k]*1000,(d[k]/w[k]-1)*100}' $1; }
for warm in 0 20; do for i in 1 2 3; do for b in 1 5 20 100 500; do before 330 || break
  QS_BENCH_WARM_MS=$warm QS_BENCH_BATCH=$b QS_BENCH_BLOCKS=1 $cli bench gemm --backend cuda --shape 16x4096x4096 \
    --kernels int8-wgmma,int8-wgmma-dq --reps 2000 > $R/s_${warm}_${b}_$i.csv 2> $R/s_${warm}_${b}_$i.log
  echo "warm $warm round $i batch $b: $(gap $R/s_${warm}_${b}_$i.csv)"
done; done; done | tee $R/s.txt
el
tar -czf $OUT/r.tgz -C $OUT r && rm -rf $R
