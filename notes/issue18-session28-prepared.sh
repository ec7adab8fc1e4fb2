#!/bin/bash
# Prepared in session 27 for session 28 (NOT RUN on a GPU; needs no diff: only existing switches and ncu).
# Two open float32-epilogue gaps (notes/issue18-gemm-tma.md, "Session 27"):
#  1. wgmma split-K in clusters at 32 x 8192 x 4096: float32 out +12.8 % (+1.9 us) over int32 out, on the same path.
#     Does the gap grow with K (the two kernels' K loops differ; ptxas gives them 110 and 106 registers) or not
#     (the band epilogue)? Times K = 4096, 8192, 16384 at M = 32 (all 7-block clusters on an H200), then ncu on
#     both kernels at K = 8192 and their SASS (main loop: diff the two listings between the first and last WGMMA).
#  2. The skinny kernel at 16 x 4096 x 4096: float32 out +3.1 % back to back, within 1 % under ncu with its caches
#     flushed. ncu again with --cache-control none after 20 warm launches of the same kernel.
# About 5 minutes on nvidia-h200, carry [".deps"]. From the repository root:
#   (device) timeout 400 bash notes/issue18-session28-prepared.sh      (one archive comes back)
set -u
export PATH=/usr/local/cuda/bin:$PWD/.deps/bin:$PATH LD_LIBRARY_PATH=$PWD/.deps/lib
t0=$(date +%s); el() { echo "t=$(( $(date +%s)-t0 ))"; }; before() { [ $(( $(date +%s)-t0 )) -lt $1 ]; }
R=$OUT/r; mkdir -p $R
cmake -S . -B build-gpu -G Ninja -DQS_BUILD_GUI=OFF -DQS_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DQS_DEPS_DIR=$PWD/.deps -DCMAKE_PREFIX_PATH=$PWD/.deps > $R/cfg.log 2>&1 &&
  cmake --build build-gpu --target quantscope-cli -j16 > $R/build.log 2>&1
rc=$?; echo "build rc $rc $(el)"
[ $rc = 0 ] || { grep -m5 -B2 -A5 error $R/build.log; tar -czf $OUT/r.tgz -C $OUT r; exit 1; }
cli=build-gpu/quantscope-cli
ncu=$(ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
# 0. The CUDA self-test: since session 27 every GEMM case also asserts that its call noted its plan
#    (gemm_int8_take_plan, landed without a GPU run).
timeout 100 $cli selftest --backend cuda > $R/selftest.log 2>&1; rc=$?
echo "selftest: rc $rc, $(grep -E 'passed,' $R/selftest.log | tail -1)"; grep "^FAIL" $R/selftest.log | head -5
el
# 1a. The gap against K at M = 32 (MxKxN), back to back and per call, two rounds.
g() { env "$@" $cli bench gemm --backend cuda --shape 32x4096x4096 --shape 32x8192x4096 --shape 32x16384x4096 --kernels int8-cublaslt,int8-wgmma,int8-wgmma-dq; }
for i in 1 2; do
  for m in pc b2b; do
    if [ $m = b2b ]; then g QS_BENCH_BATCH=20 > $R/k_${m}_$i.csv 2> $R/k_${m}_$i.log; else g D=1 > $R/k_${m}_$i.csv 2> $R/k_${m}_$i.log; fi
    echo "round $i $m: $(awk -F, '$2=="int8-wgmma"{w[$5]=$7} $2=="int8-wgmma-dq"{d[$5]=$7} $2=="int8-cublaslt"{c[$5]=$7} END{for(k in w) printf "K=%s wg %.4f dq %.4f lt %.4f wg/lt %.3f dq-wg %.2f us; ",k,w[k],d[k],c[k],c[k]/w[k],(d[k]-w[k])*1000}' $R/k_${m}_$i.csv)"
  done
done | tee $R/k.txt
grep -hE "^#   int8-[a-z0-9-]+ [0-9x]+: (the |wgmma|mma|dp4a)" $R/k_pc_1.log | sort -u   # which path each row ran
el
# 1b. ncu on both split-K kernels at 32 x 8192 x 4096 (two launches each), and their SASS.
for k in int8-wgmma int8-wgmma-dq; do before 200 || break
  timeout 60 $ncu --clock-control none --kernel-name regex:gemm_int8_wgmma_kernel --launch-count 2 \
    --section SpeedOfLight --section WarpStateStats --section InstructionStats --section SchedulerStats --section LaunchStats \
    $cli bench gemm --backend cuda --shape 32x8192x4096 --kernels $k --reps 1 --min-time 0 > $R/ncu_split_$k.txt 2>&1
  echo "ncu $k: $(grep -E 'Duration|Executed Instructions  |Registers Per|Cluster Size|Warp Cycles Per Issued' $R/ncu_split_$k.txt | sed -E 's/ +/ /g' | head -10 | tr '\n' ';')"
done
obj=$(find build-gpu -name 'gemm_int8_sm90.cu.o' | head -1)
cuobjdump -sass $obj > $R/sm90.sass 2>&1
for o in 0 1; do
  awk -v o=$o '$0 ~ "Function : .*gemm_int8_wgmma_kernelINS.*WgCfgILi128ELi64ELi6ELi4ELi2EEELi" o "E"{f=1; next} f && /Function :/{f=0} f' $R/sm90.sass > $R/twin_$o.sass
  echo "twin kernel out $o: $(wc -l < $R/twin_$o.sass) lines, $(grep -c WGMMA $R/twin_$o.sass) WGMMA, loop: $(awk '/WGMMA/{if(!a)a=NR; b=NR} END{print a"-"b}' $R/twin_$o.sass)"
done
el
# 2. The skinny kernel warm: skip the check and 20 launches, then three, caches not flushed.
for k in int8-wgmma int8-wgmma-dq; do before 300 || break
  timeout 60 $ncu --clock-control none --cache-control none --kernel-name regex:skinny --launch-skip 20 --launch-count 3 \
    --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis \
    $cli bench gemm --backend cuda --shape 16x4096x4096 --kernels $k --reps 40 --min-time 0 > $R/ncu_skinny_$k.txt 2>&1
  echo "ncu warm skinny $k: $(grep -E 'Duration|DRAM Throughput|L2 Hit' $R/ncu_skinny_$k.txt | sed -E 's/ +/ /g' | head -9 | tr '\n' ';')"
done
el
tar -czf $OUT/r.tgz -C $OUT r && rm -rf $R
