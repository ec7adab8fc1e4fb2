#!/bin/bash
# session 30 call 4: skinny kernel's scales and bias by cp.async before the K loop (new) against without (old);
# L2 flushed before each block / after each run (QS_BENCH_FLUSH) and not; CUDA self-test of new
set -u
export PATH=/usr/local/cuda/bin:$PWD/.deps/bin:$PATH LD_LIBRARY_PATH=$PWD/.deps/lib
t0=$(date +%s); el() { echo "t=$(( $(date +%s)-t0 ))"; }; before() { [ $(( $(date +%s)-t0 )) -lt $1 ]; }
R=$OUT/r; mkdir -p $R
b() { cmake --build build-gpu --target quantscope-cli -j16 > $R/build_$1.log 2>&1 || { tail -30 $R/build_$1.log; exit 1; }; cp build-gpu/quantscope-cli /tmp/$1; }
cmake -S . -B build-gpu -G Ninja -DQS_BUILD_GUI=OFF -DQS_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DQS_DEPS_DIR=$PWD/.deps -DCMAKE_PREFIX_PATH=$PWD/.deps > $R/cfg.log 2>&1 || exit 1
b new
cp core/cuda/gemm_int8.cu /tmp/n1; cp core/cuda/gemm_int8_common.cuh /tmp/n2
cp old_gemm_int8.cu core/cuda/gemm_int8.cu; cp old_gemm_int8_common.cuh core/cuda/gemm_int8_common.cuh
b old
cp /tmp/n1 core/cuda/gemm_int8.cu; cp /tmp/n2 core/cuda/gemm_int8_common.cuh
el
timeout 120 /tmp/new selftest --backend cuda > $R/selftest.log 2>&1
echo "selftest new rc $? $(grep -E 'passed,' $R/selftest.log | tail -1)"; grep -m5 "^FAIL" $R/selftest.log
el
gap() { awk -F, '{k=$3"x"$5"x"$4} $2=="int8-wgmma"{w[k]=$7} $2=="int8-wgmma-dq"{d[k]=$7} $2=="int8-cublaslt"{l[k]=$7} END{for(k in w) printf "%s wg %.3f dq %.3f %+.1f%% lt/wg %.3f; ",k,w[k]*1000,d[k]*1000,(d[k]/w[k]-1)*100,l[k]/w[k]}' $1; }
for i in 1 2; do for m in none:20 block:20 block:100 run:1 none:1; do for v in old new; do before 480 || break
  fl=${m%:*}; bt=${m#*:}
  QS_BENCH_FLUSH=$fl QS_BENCH_BATCH=$bt QS_BENCH_BLOCKS=1 /tmp/$v bench gemm --backend cuda --shape 16x4096x4096,1x4096x4096,16x4096x11008 \
    --kernels int8-wgmma,int8-wgmma-dq --reps 2000 > $R/ab_${v}_${fl}_${bt}_$i.csv 2> $R/ab_${v}_${fl}_${bt}_$i.log
  echo "$i $fl b$bt $v: $(gap $R/ab_${v}_${fl}_${bt}_$i.csv)"
done; done; done | tee $R/ab.txt
el
tar -czf $OUT/r.tgz -C $OUT r && rm -rf $R
