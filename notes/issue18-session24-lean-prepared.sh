#!/bin/bash
# Prepared in session 23 for a session with device time: the lean float32 epilogue
# (notes/issue18-session24-lean-epilogue.diff: boxes outer, each box's column scales and biases loaded once for
# both halves and, for interior tiles with per-column scales, as pairs per lane instead of shuffles; 608 instead
# of 936 instructions per consumer warp and tile over int32 out, counted in the sm_90a code built here; no
# spills, no ptxas warnings). RUN in session 24 and landed (362b9d9); results in notes/issue18-gemm-tma.md. Correctness first (self-test, also with the ping-pong forced everywhere),
# then ncu and timed A/B against the landed kernel in the same call (about 7 minutes).
# From the repository root, on nvidia-h200 with carry [".deps"], after `bash tests/gpu/make_deps.sh` here:
#   git show HEAD:core/cuda/gemm_int8_sm90.cu > scratch_sm90_head.cu
#   git apply notes/issue18-session24-lean-epilogue.diff
#   (device) timeout 560 bash notes/issue18-session24-lean-prepared.sh      (one archive comes back)
# Keep it (commit the applied diff) only if the self-tests pass and the cycles drop; then rm scratch_sm90_head.cu.
set -u
export PATH=/usr/local/cuda/bin:$PWD/.deps/bin:$PATH LD_LIBRARY_PATH=$PWD/.deps/lib
t0=$(date +%s); el() { echo "t=$(( $(date +%s)-t0 ))"; }; before() { [ $(( $(date +%s)-t0 )) -lt $1 ]; }
R=$OUT/r; mkdir -p $R
E=core/cuda/gemm_int8_sm90.cu
grep -q kPpZeros $E && [ -f scratch_sm90_head.cu ] ||
  { echo "apply notes/issue18-session24-lean-epilogue.diff and write scratch_sm90_head.cu first"; exit 1; }
cmake -S . -B build-gpu -G Ninja -DQS_BUILD_GUI=OFF -DQS_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DQS_DEPS_DIR=$PWD/.deps -DCMAKE_PREFIX_PATH=$PWD/.deps > $R/cfg.log 2>&1 &&
  cmake --build build-gpu --target quantscope-cli -j16 > $R/build_lean.log 2>&1
rc=$?; echo "build lean rc $rc $(el) perf-loss lines: $(grep -c 'Potential Performance Loss' $R/build_lean.log)"
[ $rc = 0 ] || { grep -m5 error $R/build_lean.log; tar -czf $OUT/r.tgz -C $OUT r; exit 1; }
cp build-gpu/quantscope-cli /tmp/cli-lean
cp $E /tmp/lean.cu; cp scratch_sm90_head.cu $E
cmake --build build-gpu --target quantscope-cli -j16 > $R/build_head.log 2>&1; echo "build head rc $? $(el)"
cp build-gpu/quantscope-cli /tmp/cli-head; cp /tmp/lean.cu $E
for pp in "QS_NONE=1" "QS_WGMMA_PP=1 QS_WGMMA_TILE=128x256" "QS_PP_HALVES=0"; do
  env $pp /tmp/cli-lean selftest --backend cuda > $R/selftest.log 2>&1
  echo "selftest lean ($pp): $(grep -E 'passed,' $R/selftest.log | tail -1) $(el)"; grep -E "^FAIL" $R/selftest.log | head -5
done
export PATH=/opt/nvidia/nsight-compute/2025.3.1:$PATH
M=sm__cycles_elapsed.max,sm__cycles_active.avg,sm__cycles_active.max,smsp__inst_executed.sum
for i in 1 2; do for s in 4096x4096x4096 2048x4096x11008; do
  for v in head:int8-wgmma head:int8-wgmma-dq lean:int8-wgmma lean:int8-wgmma-dq; do before 260 || break
    timeout 30 ncu --clock-control none -k regex:pingpong -c 1 --metrics $M --csv /tmp/cli-${v%%:*} bench gemm \
      --backend cuda --shape $s --kernels ${v#*:} --reps 1 --min-time 0 2>/dev/null | grep -E '"s' |
      awk -F'","' '{printf "%s=%s ", $(NF-2), $NF}' | sed 's/"//g; s/sm__cycles_//g; s/smsp__inst_executed.sum/inst/'
    echo " <- $s $v $i"
  done; done; done | tee $R/ncu.txt
el
sum() { awk -v tag="$2" '/x int8-cublaslt/ {k=$2 " " $3; r[k]=$(NF-1)}
  END {for (k in r) if (k ~ /^int8-wgmma /) {split(k,a," "); printf "%-22s %-18s wg %s dq %s\n", tag, a[2], r[k], r["int8-wgmma-dq " a[2]]}}' "$1"; }
SH="--sizes 4096,8192 --shape 16x4096x4096 --shape 2048x4096x11008"
K=int8-cublaslt,int8-wgmma,int8-wgmma-dq
for i in 1 2; do for v in lean head; do for b in 20 1; do before 420 || break
  f=$R/t_${v}_b${b}_$i.log
  QS_BENCH_BATCH=$b timeout 60 /tmp/cli-$v bench gemm --backend cuda $SH --kernels $K 2> $f > /dev/null || echo "rc $? $f"
  sum $f "$v b$b #$i"
done; done; done | tee $R/timed.txt
for i in 1 2; do for v in lean head; do before 490 || break
  f=$R/long_${v}_$i.log
  QS_BENCH_BATCH=20 timeout 40 /tmp/cli-$v bench gemm --backend cuda --sizes 4096 --reps 4000 --kernels $K 2> $f > /dev/null
  sum $f "$v long #$i"
done; done | tee -a $R/timed.txt
el
tar -czf $OUT/r.tgz -C $OUT r && rm -rf $R
