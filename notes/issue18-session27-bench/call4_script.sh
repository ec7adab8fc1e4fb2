#!/bin/bash
set -u
export PATH=/usr/local/cuda/bin:$PWD/.deps/bin:$PATH LD_LIBRARY_PATH=$PWD/.deps/lib
t0=$(date +%s); el() { echo "t=$(( $(date +%s)-t0 ))"; }; before() { [ $(( $(date +%s)-t0 )) -lt $1 ]; }
R=$OUT/r; mkdir -p $R
cmake -S . -B build-gpu -G Ninja -DQS_BUILD_GUI=OFF -DQS_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DQS_DEPS_DIR=$PWD/.deps -DCMAKE_PREFIX_PATH=$PWD/.deps > $R/cfg.log 2>&1 &&
  cmake --build build-gpu --target quantscope-cli -j16 > $R/build.log 2>&1
rc=$?; echo "build rc $rc $(el)"
[ $rc = 0 ] || { grep -m5 -B2 -A5 error $R/build.log; tar -czf $OUT/r.tgz -C $OUT r; exit 1; }
grep -q "Potential Performance Loss" $R/build.log && echo "WARNING: ptxas serialized a wgmma pipeline"
cli=build-gpu/quantscope-cli
obj=$(find build-gpu -name 'gemm_int8.cu.o' | head -1)
cuobjdump -sass -fun '_ZN2qs4cuda12_GLOBAL__N_123gemm_int8_skinny_kernelILi1EEEvPKaS4_iiiNS0_6detail3EpiE' $obj > $R/skinny_f32.sass 2>&1
echo "skinny f32 sass: $(grep -nE 'LDG|IMMA|STG|BAR' $R/skinny_f32.sass | awk '{print $1, $2, $3}' | sed 's/\/\*[0-9a-f]*\*\///' | tr '\n' ';' | cut -c1-900)"
for v in "D=1" "QS_GEMM_SKINNY=0"; do
  timeout 100 env $v $cli selftest --backend cuda > $R/selftest.log 2>&1; rc=$?
  echo "selftest $v: rc $rc, $(grep -E 'passed,' $R/selftest.log | tail -1)"; grep "^FAIL" $R/selftest.log | head -5
done
el
g() { env "$@" $cli bench gemm --backend cuda --shape 16x4096x4096 --shape 32x8192x4096 --shape 16x11008x4096 --kernels int8-cublaslt,int8-wgmma,int8-wgmma-dq; }
for i in 1 2 3; do before 330 || break
  for v in "D=1" "QS_SPLITK_CLUSTER=0"; do
    t=$(echo $v | tr ' =' '__')
    g $v 2> $R/pc_${t}_$i.log > $R/pc_${t}_$i.csv
    g $v QS_BENCH_BATCH=20 2> $R/b2b_${t}_$i.log > $R/b2b_${t}_$i.csv
    for m in pc b2b; do
      echo "round $i [$v] $m: $(awk -F, '$2=="int8-wgmma"{w[$3"x"$5]=$7} $2=="int8-wgmma-dq"{d[$3"x"$5]=$7} $2=="int8-cublaslt"{c[$3"x"$5]=$7} END{for(k in w) printf "%s wg %.4f dq %.4f lt %.4f wg/lt %.3f dq/wg-1 %+.2f%%; ",k,w[k],d[k],c[k],c[k]/w[k],(d[k]/w[k]-1)*100}' $R/${m}_${t}_$i.csv)"
    done
  done
done | tee $R/ab.txt
el
h() { env "$@" $cli bench gemm --backend cuda --shape 4096x4096x4096 --shape 8192x8192x8192 --shape 2048x4096x11008 --kernels int8-cublaslt,int8-wgmma,int8-wgmma-dq; }
for i in 1 2; do before 480 || break
  h 2> $R/big_pc_$i.log > $R/big_pc_$i.csv
  h QS_BENCH_BATCH=20 2> $R/big_b2b_$i.log > $R/big_b2b_$i.csv
  for m in pc b2b; do
    echo "round $i big $m: $(awk -F, '$2=="int8-wgmma"{w[$3"x"$4"x"$5]=$7} $2=="int8-wgmma-dq"{d[$3"x"$4"x"$5]=$7} $2=="int8-cublaslt"{c[$3"x"$4"x"$5]=$7} END{for(k in w) printf "%s wg %.4f dq %.4f lt %.4f wg/lt %.3f dq/wg-1 %+.2f%%; ",k,w[k],d[k],c[k],c[k]/w[k],(d[k]/w[k]-1)*100}' $R/big_${m}_$i.csv)"
  done
done | tee $R/big.txt
el
tar -czf $OUT/r.tgz -C $OUT r && rm -rf $R
