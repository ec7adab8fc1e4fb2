#!/bin/bash
# Prepared in session 25 for session 26 (compiled here with the full build, sm_90a; NOT RUN).
# Question: what does the fake-quant kernels' structure alone reach against cudaMemcpy on the H200? Nearest
# rounding, with little arithmetic, stops at 0.85-0.86 and stochastic at 0.81; if a plain copy of the same shape
# (one wave of 256-thread blocks, grid-stride float4, streaming hints) stops near 0.86 too, the structure is the
# ceiling, and a better one (contiguous range per block, plain hints, more blocks) should be tried on the kernel.
# Also: the stochastic kernel with every block at once (QS_FQ_GRID=1, no grid-stride), its SASS (instruction count
# per element of the main loop), and one ncu profile (warp states, issue, memory).
# About 4-5 minutes on nvidia-h200, carry [".deps"]. From the repository root:
#   git apply notes/issue18-session26-copy-structure-experiment.diff
#   (device) timeout 560 bash notes/issue18-session26-prepared.sh      (one archive comes back)
#   git checkout core/cuda/bench_quantize_cuda.cu core/cuda/fake_quant.cu
set -u
export PATH=/usr/local/cuda/bin:$PWD/.deps/bin:$PATH LD_LIBRARY_PATH=$PWD/.deps/lib
t0=$(date +%s); el() { echo "t=$(( $(date +%s)-t0 ))"; }; before() { [ $(( $(date +%s)-t0 )) -lt $1 ]; }
R=$OUT/r; mkdir -p $R
grep -q QS_BENCH_COPY_STRUCT core/cuda/bench_quantize_cuda.cu || { echo "apply notes/issue18-session26-copy-structure-experiment.diff first"; exit 1; }
cmake -S . -B build-gpu -G Ninja -DQS_BUILD_GUI=OFF -DQS_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DQS_DEPS_DIR=$PWD/.deps -DCMAKE_PREFIX_PATH=$PWD/.deps > $R/cfg.log 2>&1 &&
  cmake --build build-gpu --target quantscope-cli -j16 > $R/build.log 2>&1
rc=$?; echo "build rc $rc $(el)"
[ $rc = 0 ] || { grep -m5 -B2 -A5 error $R/build.log; tar -czf $OUT/r.tgz -C $OUT r; exit 1; }
cli=build-gpu/quantscope-cli
b() { $cli bench quantize --backend cuda --format e4m3fn --n 268435456 --reps 20 "$@"; }
for i in 1 2; do before 200 || break
  for r in nearest stochastic; do
    echo "$r $i: $(QS_BENCH_COPY_STRUCT=1 b --rounding $r 2> $R/struct_${r}_$i.log | tail -1)"; grep "copy structure" $R/struct_${r}_$i.log
  done
  echo "stochastic, every block at once, $i: $(QS_FQ_GRID=1 b --rounding stochastic 2>/dev/null | tail -1)"
done | tee $R/struct.txt
el
# The SASS of the stochastic kernels, and the instruction count of each.
obj=$(find build-gpu -name 'fake_quant.cu.o' | head -1)
which cuobjdump > /dev/null && cuobjdump -sass "$obj" > $R/fake_quant.sass 2>&1
grep -c "" $R/fake_quant.sass 2>/dev/null
NCU=$(ls -d /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1); [ -n "$NCU" ] || NCU=$(which ncu)
for r in stochastic nearest; do before 420 || break
  timeout 90 $NCU --clock-control none -k regex:'fq_stoch|fq_nearest' -c 1 --section SpeedOfLight --section Occupancy \
    --section SchedulerStats --section WarpStateStats --section MemoryWorkloadAnalysis --section InstructionStats \
    $cli bench quantize --backend cuda --format e4m3fn --n 268435456 --reps 2 --rounding $r > $R/ncu_$r.txt 2>&1
  grep -E "Duration|Issue Slots Busy|Executed Instructions  |Achieved Occupancy|Memory Throughput|DRAM Throughput|Stall|Warp Cycles Per Issued" $R/ncu_$r.txt | head -20
done
el
tar -czf $OUT/r.tgz -C $OUT r && rm -rf $R
