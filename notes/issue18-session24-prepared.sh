#!/bin/bash
# Prepared in session 23 for a session with device time; checked with `bash -n` and the experiment diff compiled
# locally (sm_90a, no spills, no ptxas warnings), not run. Two questions, one call (about 6-7 minutes):
#  1. Float32 out's extra cycles (2.8 % at 4096^3 on the H200): the epilogue's loads and shuffles with no float
#     arithmetic (QS_EPI_EXP=4), or its conversion and arithmetic with no loads (5)? Against int32 and the landed
#     float32 (0), ncu, two runs each. Variants 1-3 ran in session 23 (notes/issue18-gemm-tma.md, "Session 23").
#  2. Stochastic fake quantization (0.80 of a copy on the H200, latency-bound per ncu): does an L2 prefetch
#     QS_FQ_PF iterations ahead, or __launch_bounds__(256, 6) (QS_FQ_MINB), put more bytes in flight? Against the
#     landed kernel; then the self-test with both on.
# From the repository root, on nvidia-h200 with carry [".deps"], after `bash tests/gpu/make_deps.sh` here:
#   git show HEAD:core/cuda/fake_quant.cu > scratch_fq_head.cu
#   git apply notes/issue18-session24-experiments.diff
#   (device) timeout 560 bash notes/issue18-session24-prepared.sh       (one archive comes back)
#   git checkout core/cuda/fake_quant.cu core/cuda/gemm_int8_sm90.cu; rm scratch_fq_head.cu
set -u
export PATH=/usr/local/cuda/bin:$PWD/.deps/bin:$PATH LD_LIBRARY_PATH=$PWD/.deps/lib
t0=$(date +%s); el() { echo "t=$(( $(date +%s)-t0 ))"; }; before() { [ $(( $(date +%s)-t0 )) -lt $1 ]; }
R=$OUT/r; mkdir -p $R
E=core/cuda/gemm_int8_sm90.cu; Q=core/cuda/fake_quant.cu
grep -q "^#define QS_EPI_EXP" $E && grep -q "^#define QS_FQ_MINB" $Q && [ -f scratch_fq_head.cu ] ||
  { echo "apply notes/issue18-session24-experiments.diff and write scratch_fq_head.cu first"; exit 1; }
build() {  # name: build the CLI as the tree stands, copy it to /tmp/cli-name
  cmake --build build-gpu --target quantscope-cli -j16 > $R/build_$1.log 2>&1; echo "build $1 rc $? $(el)"
  cp build-gpu/quantscope-cli /tmp/cli-$1
}
cmake -S . -B build-gpu -G Ninja -DQS_BUILD_GUI=OFF -DQS_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DQS_DEPS_DIR=$PWD/.deps -DCMAKE_PREFIX_PATH=$PWD/.deps > $R/cfg.log 2>&1
build e0                                                   # epilogue as landed; fake quant with QS_FQ_PF, MINB 1
grep -c "Potential Performance Loss" $R/build_e0.log
for v in 4 5; do sed -i "s/^#define QS_EPI_EXP [0-9]/#define QS_EPI_EXP $v/" $E; build e$v; done
sed -i "s/^#define QS_EPI_EXP [0-9]/#define QS_EPI_EXP 0/" $E
sed -i "s/^#define QS_FQ_MINB [0-9]/#define QS_FQ_MINB 6/" $Q; build f6
cp $Q /tmp/fq_exp.cu; cp scratch_fq_head.cu $Q; build f0; cp /tmp/fq_exp.cu $Q   # the landed fake quant
export PATH=/opt/nvidia/nsight-compute/2025.3.1:$PATH
M=sm__cycles_elapsed.max,sm__cycles_active.avg,sm__cycles_active.max,smsp__inst_executed.sum
for i in 1 2; do for s in 4096x4096x4096 2048x4096x11008; do
  for v in e0:int8-wgmma e0:int8-wgmma-dq e4:int8-wgmma-dq e5:int8-wgmma-dq; do before 330 || break
    b=/tmp/cli-${v%%:*}; k=${v#*:}
    timeout 30 ncu --clock-control none -k regex:pingpong -c 1 --metrics $M --csv $b bench gemm --backend cuda \
      --shape $s --kernels $k --reps 1 --min-time 0 2>/dev/null | grep -E '"s' |
      awk -F'","' '{printf "%s=%s ", $(NF-2), $NF}' | sed 's/"//g; s/sm__cycles_//g; s/smsp__inst_executed.sum/inst/'
    echo " <- $s $v $i"
  done; done; done | tee $R/ncu_epi.txt
el
for i in 1 2; do for c in f0:0 e0:0 e0:2 e0:4 f6:0 f6:2 f6:4; do before 440 || break
  echo "$c $i $(QS_FQ_PF=${c#*:} /tmp/cli-${c%%:*} bench quantize --backend cuda --format e4m3fn --n 268435456 \
    --rounding stochastic --reps 20 2>/dev/null | tail -1)"
done; done | tee $R/fq.txt
el
before 500 && { QS_FQ_PF=2 /tmp/cli-f6 selftest --backend cuda > $R/selftest_f6_pf2.log 2>&1
  echo "selftest (MINB 6, QS_FQ_PF=2): $(grep -E 'passed,' $R/selftest_f6_pf2.log | tail -1)"; grep "^FAIL" $R/selftest_f6_pf2.log | head -5; }
el
tar -czf $OUT/r.tgz -C $OUT r && rm -rf $R
