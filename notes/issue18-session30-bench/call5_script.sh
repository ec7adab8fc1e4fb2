#!/bin/bash
# session 30 call 5: final figures of d212ccd (L2 flushed before each block by default): self-test, the four targets
# per call and back to back (two rounds), the skinny shapes and M = 32 split-K
set -u
export PATH=/usr/local/cuda/bin:$PWD/.deps/bin:$PATH LD_LIBRARY_PATH=$PWD/.deps/lib
t0=$(date +%s); el() { echo "t=$(( $(date +%s)-t0 ))"; }; before() { [ $(( $(date +%s)-t0 )) -lt $1 ]; }
R=$OUT/r; mkdir -p $R
cmake -S . -B build-gpu -G Ninja -DQS_BUILD_GUI=OFF -DQS_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DQS_DEPS_DIR=$PWD/.deps -DCMAKE_PREFIX_PATH=$PWD/.deps > $R/cfg.log 2>&1 &&
  cmake --build build-gpu --target quantscope-cli -j16 > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
cli=build-gpu/quantscope-cli; el
timeout 120 $cli selftest --backend cuda > $R/selftest.log 2>&1
echo "selftest rc $? $(grep -E 'passed,' $R/selftest.log | tail -1)"; grep -m5 "^FAIL" $R/selftest.log
el
sum() { awk -F, '{k=$3"x"$5"x"$4} $2=="int8-wgmma"{w[k]=$7} $2=="int8-wgmma-dq"{d[k]=$7} $2=="int8-cublaslt"{l[k]=$7} END{for(k in w) printf "%s wg %.2f dq %.2f lt %.2f us int32/lt %.3f dq %+.1f%%; ",k,w[k]*1000,d[k]*1000,l[k]*1000,l[k]/w[k],(d[k]/w[k]-1)*100}' $1; }
for i in 1 2; do for m in b2b pc; do before 470 || break
  if [ $m = b2b ]; then export QS_BENCH_BATCH=20; else unset QS_BENCH_BATCH; fi
  $cli bench gemm --backend cuda --shape 4096x4096x4096 --shape 8192x8192x8192 --shape 2048x4096x11008 --shape 16x4096x4096 \
    --kernels int8-cublaslt,int8-wgmma,int8-wgmma-dq > $R/t_${m}_$i.csv 2> $R/t_${m}_$i.log
  echo "$i $m: $(sum $R/t_${m}_$i.csv)"
done; done | tee $R/t.txt
unset QS_BENCH_BATCH
el
for m in b2b pc; do before 540 || break
  if [ $m = b2b ]; then export QS_BENCH_BATCH=20; else unset QS_BENCH_BATCH; fi
  $cli bench gemm --backend cuda --shape 1x4096x4096,16x4096x11008,32x4096x4096,32x8192x4096 \
    --kernels int8-cublaslt,int8-wgmma,int8-wgmma-dq > $R/k_${m}.csv 2> $R/k_${m}.log
  echo "$m: $(sum $R/k_${m}.csv)"
done | tee $R/k.txt
el
tar -czf $OUT/r.tgz -C $OUT r && rm -rf $R
