#!/bin/bash
# Prepared in session 21 for a session with device time (the structure of session 21's calls, which ran; this
# script itself has been checked with `bash -n` only). From the repository root, after `bash
# tests/gpu/make_deps.sh` here, on nvidia-h100-x1 with carry [".deps"]:
#   timeout 560 bash notes/issue18-session22-prepared.sh        (about 7 minutes; one archive comes back)
# It asks the two questions that session 21's notes leave open:
#   1. energy per call: the board's power while each kernel runs (QS_BENCH_POWER=1, new in session 21 and not
#      yet run on a GPU) in bursts and in contiguous runs of 3,000 calls; is our kernel's lower clock a
#      higher energy per GEMM, or the same energy spent faster?
#   2. L2 fabric traffic against tile order: ncu's fabric sectors, DRAM reads and cycles, and the burst clock
#      and power, for the orders the launcher already offers (QS_PP_GROUP, QS_PP_PLACE=0).
set -u
export PATH=/opt/nvidia/nsight-compute/2025.3.1:/usr/local/cuda/bin:$PWD/.deps/bin:$PATH LD_LIBRARY_PATH=$PWD/.deps/lib
t0=$(date +%s); el() { echo "t=$(( $(date +%s)-t0 ))"; }
mkdir -p $OUT/r
cmake -S . -B build-gpu -G Ninja -DQS_BUILD_GUI=OFF -DQS_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DQS_DEPS_DIR=$PWD/.deps -DCMAKE_PREFIX_PATH=$PWD/.deps > $OUT/r/cfg.log 2>&1 &&
  cmake --build build-gpu --target quantscope-cli -j16 > $OUT/r/build.log 2>&1
echo "build rc $? perf-loss $(grep -c 'Potential Performance Loss' $OUT/r/build.log) $(el)"
A=build-gpu/quantscope-cli
[ -x $A ] || { tail -20 $OUT/r/build.log; exit 1; }
timeout 120 $A selftest --backend cuda > $OUT/r/st.txt 2>&1; echo "selftest: rc $? $(grep -E 'passed,' $OUT/r/st.txt | tail -1) $(el)"
K=int8-cublaslt,int8-wgmma,int8-wgmma-dq
pick() { grep -E "FAILED|x int8-cublaslt|SM clock|board power|QS_BENCH_POWER" "$1" | grep -v "1.000x" | grep -v fp32 |
  sed "s/^#  */$2 /; s/ after its timed runs//; s/outputs checked, //; s/ timed runs//; s/ samples in its//"; }
# 1. Energy per call: bursts (rounds interleaved, 20 calls per event pair) and contiguous runs (QS_BENCH_ROUNDS=1).
for s in 4096x4096x4096 2048x4096x11008; do
  QS_BENCH_POWER=1 QS_BENCH_CLOCK=1 QS_BENCH_BATCH=20 timeout 60 $A bench gemm --backend cuda --shape $s --kernels $K \
    2> $OUT/r/pw_burst_$s.log > $OUT/r/pw_burst_$s.csv; pick $OUT/r/pw_burst_$s.log "burst"
  QS_BENCH_POWER=1 QS_BENCH_CLOCK=1 QS_BENCH_BATCH=20 QS_BENCH_ROUNDS=1 timeout 90 $A bench gemm --backend cuda --shape $s \
    --kernels $K --reps 3000 2> $OUT/r/pw_long_$s.log > $OUT/r/pw_long_$s.csv; pick $OUT/r/pw_long_$s.log "long"
done
el
# 2. Tile orders: ncu (one launch each) and bursts with clock and power.
M=sm__cycles_elapsed.max,lts__t_sectors_srcunit_ltcfabric.sum,dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read.sum
for s in 4096x4096x4096 2048x4096x11008; do
  timeout 40 ncu --clock-control none -k regex:sm90_xmma_gemm_i8 -c 1 --metrics $M --csv $A bench gemm --backend cuda \
    --shape $s --kernels int8-cublaslt --reps 1 --min-time 0 2>/dev/null | grep -E '"(sm__|lts__|dram__)' |
    awk -F'","' '{printf "%s=%s ", $(NF-2), $NF}' | sed 's/"//g'; echo " <- $s cuBLASLt"
  for o in "QS_PP_X=1" "QS_PP_GROUP=1" "QS_PP_GROUP=2" "QS_PP_GROUP=4" "QS_PP_GROUP=-1" "QS_PP_PLACE=0"; do
    env $o timeout 40 ncu --clock-control none -k regex:pingpong -c 1 --metrics $M --csv $A bench gemm --backend cuda \
      --shape $s --kernels int8-wgmma --reps 1 --min-time 0 2>/dev/null | grep -E '"(sm__|lts__|dram__)' |
      awk -F'","' '{printf "%s=%s ", $(NF-2), $NF}' | sed 's/"//g'; echo " <- $s $o"
    env $o QS_BENCH_POWER=1 QS_BENCH_CLOCK=1 QS_BENCH_BATCH=20 timeout 40 $A bench gemm --backend cuda --shape $s \
      --kernels int8-cublaslt,int8-wgmma 2> $OUT/r/order_${s}_${o//=/_}.log > /dev/null; pick $OUT/r/order_${s}_${o//=/_}.log "$o"
  done
done | sed 's/sm__cycles_elapsed.max/cyc/; s/lts__t_sectors_srcunit_ltcfabric.sum/fabric/; s/dram__bytes_read.sum/dramrd/; s/lts__t_sectors_srcunit_tex_op_read.sum/L2rd/'
el
tar -czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
