#!/bin/bash
# Prepared in session 25 for session 26 (the full build here, sm_90a included; NOT RUN on a GPU).
# notes/issue18-session26-experiments.diff holds two experiments:
#  1. fq_lean_kernel, stochastic fake quantization with fewer instructions per value (the default with the diff;
#     QS_FQ_LEAN=0 gives the landed fq_stoch_kernel, QS_FQ_LEAN=5 the lean kernel with 5 resident blocks per SM,
#     48 registers, 8 bytes of spills). Its element, stoch_lean (encode_bits.h), takes a value only when |y| is in
#     [2^emin, max finite] or x is a zero the format has (one range test, one zero test; everything else goes to
#     encode_bits, which counts it), so it has no clip counts and no overflow mode; when the call's first index is
#     a multiple of 4 the hash's first xor-shift is done once per group of four. About 29 PTX instructions per
#     value against about 40. Checked here: the CPU self-test compares stoch_lean with encode_bits on every probe
#     input (and fails when the range or the zero test is broken on purpose); a separate random check, 640 M
#     values over every named and 8-bit sweep format, four scales, both overflow modes, found no difference.
#     The CUDA self-test gains a stochastic values-only run from index 4096 (the folded hash).
#  2. QS_BENCH_COPY_STRUCT=1: plain copies in the fake-quant kernels' structure against cudaMemcpy (also with every
#     block at once, and with L2-only hints), to see whether the structure alone caps the kernels (nearest
#     rounding, with little arithmetic, stops at 0.855); and QS_FQ_GRID=1, the lean kernel with every block at
#     once instead of one wave.
# Also the SASS of fake_quant.cu (cuobjdump) and one ncu profile of each stochastic kernel and of nearest.
# About 6-7 minutes on nvidia-h200, carry [".deps"]. From the repository root:
#   git apply notes/issue18-session26-experiments.diff
#   (device) timeout 580 bash notes/issue18-session26-prepared.sh      (one archive comes back)
#   git checkout core/   (the five files)
#   If the lean kernel is faster and its self-test passes: git apply notes/issue18-session26-lean-landing.diff (the
#   lean kernel as the only path, without the switches and copy kernels; built here, CPU self-test 1408 passed),
#   then one device call for `selftest --backend cuda` of that binary before landing it (with QS_FQ_LEAN=5 the
#   winner, add __launch_bounds__(256, 5) there first).
set -u
export PATH=/usr/local/cuda/bin:$PWD/.deps/bin:$PATH LD_LIBRARY_PATH=$PWD/.deps/lib
t0=$(date +%s); el() { echo "t=$(( $(date +%s)-t0 ))"; }; before() { [ $(( $(date +%s)-t0 )) -lt $1 ]; }
R=$OUT/r; mkdir -p $R
grep -q QS_FQ_LEAN core/cuda/fake_quant.cu || { echo "apply notes/issue18-session26-experiments.diff first"; exit 1; }
cmake -S . -B build-gpu -G Ninja -DQS_BUILD_GUI=OFF -DQS_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DQS_DEPS_DIR=$PWD/.deps -DCMAKE_PREFIX_PATH=$PWD/.deps > $R/cfg.log 2>&1 &&
  cmake --build build-gpu --target quantscope-cli -j16 > $R/build.log 2>&1
rc=$?; echo "build rc $rc $(el)"
[ $rc = 0 ] || { grep -m5 -B2 -A5 error $R/build.log; tar -czf $OUT/r.tgz -C $OUT r; exit 1; }
cli=build-gpu/quantscope-cli
b() { $cli bench quantize --backend cuda --format e4m3fn --n 268435456 --reps 20 "$@"; }
$cli selftest --backend cuda > $R/selftest_lean.log 2>&1
echo "selftest, lean kernel: $(grep -E 'passed,' $R/selftest_lean.log | tail -1)"; grep "^FAIL" $R/selftest_lean.log | head -5
el
for i in 1 2; do before 230 || break
  for v in 0 1 5; do echo "QS_FQ_LEAN=$v round $i: $(QS_FQ_LEAN=$v b --rounding stochastic 2>/dev/null | tail -1)"; done
done | tee $R/lean.txt
el
before 260 && { QS_FQ_LEAN=5 $cli selftest --backend cuda > $R/selftest_lean5.log 2>&1
  echo "selftest, lean kernel, 5 blocks: $(grep -E 'passed,' $R/selftest_lean5.log | tail -1)"; grep "^FAIL" $R/selftest_lean5.log | head -5; }
el
for i in 1; do before 330 || break
  for r in nearest stochastic; do
    echo "$r $i: $(QS_BENCH_COPY_STRUCT=1 b --rounding $r 2> $R/struct_${r}_$i.log | tail -1)"; grep "copy structure" $R/struct_${r}_$i.log
  done
  echo "stochastic (lean), every block at once, $i: $(QS_FQ_GRID=1 b --rounding stochastic 2>/dev/null | tail -1)"
done | tee $R/struct.txt
el
# The SASS of the stochastic kernels, and the instruction count of each.
obj=$(find build-gpu -name 'fake_quant.cu.o' | head -1)
which cuobjdump > /dev/null && cuobjdump -sass "$obj" > $R/fake_quant.sass 2>&1
grep -c "" $R/fake_quant.sass 2>/dev/null
NCU=$(ls -d /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1); [ -n "$NCU" ] || NCU=$(which ncu)
for rv in stochastic:1 stochastic:0 nearest:1; do before 470 || break
  r=${rv%%:*}; v=${rv##*:}
  QS_FQ_LEAN=$v timeout 90 $NCU --clock-control none -k regex:'fq_stoch|fq_lean|fq_nearest' -c 1 --section SpeedOfLight \
    --section Occupancy --section SchedulerStats --section WarpStateStats --section MemoryWorkloadAnalysis \
    --section InstructionStats $cli bench quantize --backend cuda --format e4m3fn --n 268435456 --reps 2 --rounding $r \
    > $R/ncu_${r}_$v.txt 2>&1
  echo "ncu $r QS_FQ_LEAN=$v:"
  grep -E "SM Frequency|Duration|Issue Slots Busy|Executed Instructions  |Achieved Occupancy|Memory Throughput|DRAM Throughput|Warp Cycles Per Issued" $R/ncu_${r}_$v.txt | head -12
done
el
tar -czf $OUT/r.tgz -C $OUT r && rm -rf $R
