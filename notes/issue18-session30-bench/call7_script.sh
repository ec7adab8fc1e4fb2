#!/bin/bash
# session 30 call 7: the four targets of d212ccd, more rounds: six per call and six back to back (4 x 4 design), and
# three back to back with the design repeated three times (QS_BENCH_ROUNDS=12)
set -u
export PATH=/usr/local/cuda/bin:$PWD/.deps/bin:$PATH LD_LIBRARY_PATH=$PWD/.deps/lib
t0=$(date +%s); el() { echo "t=$(( $(date +%s)-t0 ))"; }; before() { [ $(( $(date +%s)-t0 )) -lt $1 ]; }
R=$OUT/r; mkdir -p $R
cmake -S . -B build-gpu -G Ninja -DQS_BUILD_GUI=OFF -DQS_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DQS_DEPS_DIR=$PWD/.deps -DCMAKE_PREFIX_PATH=$PWD/.deps > $R/cfg.log 2>&1 &&
  cmake --build build-gpu --target quantscope-cli -j16 > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
cli=build-gpu/quantscope-cli; el
sum() { awk -F, '{k=$3"x"$5"x"$4} $2=="int8-wgmma"{w[k]=$7} $2=="int8-wgmma-dq"{d[k]=$7} $2=="int8-cublaslt"{l[k]=$7} END{for(k in w) printf "%s wg %.2f dq %.2f lt %.2f us int32/lt %.3f dq %+.1f%%; ",k,w[k]*1000,d[k]*1000,l[k]*1000,l[k]/w[k],(d[k]/w[k]-1)*100}' $1; }
T="--shape 4096x4096x4096 --shape 8192x8192x8192 --shape 2048x4096x11008 --shape 16x4096x4096 --kernels int8-cublaslt,int8-wgmma,int8-wgmma-dq"
for i in 1 2 3 4 5 6; do for m in b2b pc; do before 300 || break
  if [ $m = b2b ]; then export QS_BENCH_BATCH=20; else unset QS_BENCH_BATCH; fi
  QS_BENCH_BLOCKS=1 $cli bench gemm --backend cuda $T > $R/t_${m}_$i.csv 2> $R/t_${m}_$i.log
  echo "$i $m: $(sum $R/t_${m}_$i.csv)"
done; done | tee $R/t.txt
for i in 1 2 3; do before 440 || break
  QS_BENCH_BATCH=20 QS_BENCH_ROUNDS=12 QS_BENCH_BLOCKS=1 $cli bench gemm --backend cuda $T --reps 3000 > $R/r12_$i.csv 2> $R/r12_$i.log
  echo "$i b2b rounds 12: $(sum $R/r12_$i.csv)"
done | tee $R/r12.txt
el
tar -czf $OUT/r.tgz -C $OUT r && rm -rf $R
