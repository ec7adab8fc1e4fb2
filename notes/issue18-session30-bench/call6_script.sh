#!/bin/bash
# session 30 call 6: 2048 x 4096 x 11008 and 4096^3 back to back / per call, L2 flushed per block (default) and not,
# three rounds, block notes, nvidia-smi clock and power in the background
set -u
export PATH=/usr/local/cuda/bin:$PWD/.deps/bin:$PATH LD_LIBRARY_PATH=$PWD/.deps/lib
t0=$(date +%s); el() { echo "t=$(( $(date +%s)-t0 ))"; }; before() { [ $(( $(date +%s)-t0 )) -lt $1 ]; }
R=$OUT/r; mkdir -p $R
cmake -S . -B build-gpu -G Ninja -DQS_BUILD_GUI=OFF -DQS_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DQS_DEPS_DIR=$PWD/.deps -DCMAKE_PREFIX_PATH=$PWD/.deps > $R/cfg.log 2>&1 &&
  cmake --build build-gpu --target quantscope-cli -j16 > $R/build.log 2>&1 || { tail -30 $R/build.log; exit 1; }
cli=build-gpu/quantscope-cli; el
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active --format=csv -lms 20 > $R/smi.csv 2>&1 &
smi=$!
sum() { awk -F, '{k=$3"x"$5"x"$4} $2=="int8-wgmma"{w[k]=$7} $2=="int8-wgmma-dq"{d[k]=$7} $2=="int8-cublaslt"{l[k]=$7} END{for(k in w) printf "%s wg %.2f dq %.2f lt %.2f us int32/lt %.3f dq %+.1f%%; ",k,w[k]*1000,d[k]*1000,l[k]*1000,l[k]/w[k],(d[k]/w[k]-1)*100}' $1; }
for i in 1 2 3; do for m in b2b pc; do for fl in block none; do before 420 || break
  if [ $m = b2b ]; then export QS_BENCH_BATCH=20; else unset QS_BENCH_BATCH; fi
  echo "== $i $m $fl $(date +%s.%N)" >> $R/marks.txt
  QS_BENCH_FLUSH=$fl QS_BENCH_BLOCKS=1 $cli bench gemm --backend cuda --shape 2048x4096x11008 --shape 4096x4096x4096 \
    --kernels int8-cublaslt,int8-wgmma,int8-wgmma-dq > $R/t_${m}_${fl}_$i.csv 2> $R/t_${m}_${fl}_$i.log
  echo "$i $m $fl: $(sum $R/t_${m}_${fl}_$i.csv)"
done; done; done | tee $R/t.txt
kill $smi
el
tar -czf $OUT/r.tgz -C $OUT r && rm -rf $R
