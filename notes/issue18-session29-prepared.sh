#!/bin/bash
# Prepared in session 28 for session 29 (NOT RUN on a GPU; needs no diff). About 5 minutes on nvidia-h200, carry
# [".deps"]. From the repository root:   (device) timeout 500 bash notes/issue18-session29-prepared.sh
#  0. c60e96c (fake quant: lean_ok, one nearest test, each QS_FQ_* switch its own value) never ran on a GPU: the CUDA
#     self-test (the fake-quant kernels bit for bit against the CPU) and the fake-quant timings, by default and with
#     each switch (the switch must still change the kernel: its ratio moves).
#  1. Final figures of session 28's split-K changes (d82a61b; 0abc7a3 has identical PTX): 32 x K x 4096 for
#     K = 4096, 8192, 16384 and the four targets, back to back and per call, two rounds.
#  2. What is left of the float32 gap at 32 x 4096 x 4096 (+4 % back to back): ncu SourceCounters of both kernels,
#     warm; the source pages come back as CSV (segment them at the K loop's end and the two UCGABAR_WAITs, as in
#     notes/issue18-gemm-tma.md "Session 28", call 5).
set -u
export PATH=/usr/local/cuda/bin:$PWD/.deps/bin:$PATH LD_LIBRARY_PATH=$PWD/.deps/lib
t0=$(date +%s); el() { echo "t=$(( $(date +%s)-t0 ))"; }; before() { [ $(( $(date +%s)-t0 )) -lt $1 ]; }
R=$OUT/r; mkdir -p $R
cmake -S . -B build-gpu -G Ninja -DQS_BUILD_GUI=OFF -DQS_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DQS_DEPS_DIR=$PWD/.deps -DCMAKE_PREFIX_PATH=$PWD/.deps > $R/cfg.log 2>&1 &&
  cmake --build build-gpu --target quantscope-cli -j16 > $R/build.log 2>&1
rc=$?; echo "build rc $rc $(el)"
[ $rc = 0 ] || { grep -m5 -B2 -A5 error $R/build.log; tar -czf $OUT/r.tgz -C $OUT r; exit 1; }
grep -E "C75[0-9][0-9]" $R/build.log | head -3
cli=build-gpu/quantscope-cli; ncu=$(ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
# 0. Self-test, then fake quantization of 256 M values (CSV: ..., quant GB/s, copy GB/s, ratio to the copy).
timeout 100 $cli selftest --backend cuda > $R/selftest.log 2>&1
echo "selftest rc $? $(grep -E 'passed,' $R/selftest.log | tail -1)"; grep -m5 "^FAIL" $R/selftest.log
for sw in "" QS_FQ_STOCH=generic QS_FQ_NEAREST=old QS_FQ_STOCH=old QS_FQ_NEAREST=generic; do
  for r in nearest stochastic; do
    echo "fake quant [$sw] $r: $(env $sw $cli bench quantize --backend cuda --format e4m3fn --n 268435456 --rounding $r --reps 20 2> $R/fq.log | grep '^cuda')"
  done
done | tee $R/fq.txt
el
# 1. Final split-K and target figures.
g() { env "$@" $cli bench gemm --backend cuda --shape 32x4096x4096 --shape 32x8192x4096 --shape 32x16384x4096 --kernels int8-cublaslt,int8-wgmma,int8-wgmma-dq; }
for i in 1 2; do for m in b2b pc; do
  if [ $m = b2b ]; then g QS_BENCH_BATCH=20 > $R/k_${m}_$i.csv 2> $R/k_${m}_$i.log; else g D=1 > $R/k_${m}_$i.csv 2> $R/k_${m}_$i.log; fi
  echo "$i $m: $(awk -F, '$2=="int8-wgmma"{w[$5]=$7} $2=="int8-wgmma-dq"{d[$5]=$7} $2=="int8-cublaslt"{c[$5]=$7} END{for(k in w) printf "K=%s wg %.2f dq %.2f lt %.2f wg/lt %.3f dq/wg %+.1f%%; ",k,w[k]*1000,d[k]*1000,c[k]*1000,c[k]/w[k],(d[k]/w[k]-1)*100}' $R/k_${m}_$i.csv)"
done; done | tee $R/k.txt
for i in 1 2; do for m in b2b pc; do
  if [ $m = b2b ]; then export QS_BENCH_BATCH=20; else unset QS_BENCH_BATCH; fi
  $cli bench gemm --backend cuda --shape 4096x4096x4096 --shape 8192x8192x8192 --shape 2048x4096x11008 --shape 16x4096x4096 --kernels int8-cublaslt,int8-wgmma,int8-wgmma-dq > $R/t_${m}_$i.csv 2> $R/t_${m}_$i.log
  echo "$i $m: $(awk -F, '{k=$3"x"$5"x"$4} $2=="int8-wgmma"{w[k]=$7} $2=="int8-wgmma-dq"{d[k]=$7} $2=="int8-cublaslt"{c[k]=$7} END{for(k in w) printf "%s wg/lt %.3f dq/wg %+.1f%%; ",k,c[k]/w[k],(d[k]/w[k]-1)*100}' $R/t_${m}_$i.csv)"
done; done | tee $R/t.txt
unset QS_BENCH_BATCH
el
# 2. ncu source pages at 32 x 4096 x 4096 (warm: caches kept, the fourth launch).
for k in int8-wgmma int8-wgmma-dq; do before 420 || break
  timeout 90 $ncu --clock-control none --cache-control none --kernel-name regex:gemm_int8_wgmma_kernel --launch-skip 3 --launch-count 1 \
    --section SpeedOfLight --section SourceCounters --section WarpStateStats --section InstructionStats -o $R/rep_$k \
    $cli bench gemm --backend cuda --shape 32x4096x4096 --kernels $k --reps 8 --min-time 0 > $R/ncu_$k.log 2>&1
  timeout 60 $ncu -i $R/rep_$k.ncu-rep --page details > $R/ncu_$k.txt 2>&1
  timeout 60 $ncu -i $R/rep_$k.ncu-rep --page source --csv --print-source sass > $R/src_$k.csv 2> $R/src_$k.err
  echo "ncu $k: $(grep -E 'Duration|SM Active Cycles|Executed Instructions  ' $R/ncu_$k.txt | sed -E 's/ +/ /g' | tr '\n' ';')"
done
el
tar -czf $OUT/r.tgz -C $OUT r && rm -rf $R
