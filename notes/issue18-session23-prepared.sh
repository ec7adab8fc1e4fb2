#!/bin/bash
# Prepared in session 22 for a session with device time; checked with `bash -n` only (QS_BENCH_WARM_MS is
# compiled, not yet run on a GPU). From the repository root, after `bash tests/gpu/make_deps.sh` here, on
# nvidia-h100-x1 with carry [".deps"]:
#   timeout 560 bash notes/issue18-session23-prepared.sh        (about 7 minutes; one archive comes back)
# It asks: timed after itself (QS_BENCH_WARM_MS: untimed calls of each kernel before each of its blocks), where
# do int32 and float32 out stand against cuBLASLt, whatever the set of kernels? Two sets: all three int8 rows,
# and cuBLASLt with int8-wgmma alone (no second kernel of ours to precede cuBLASLt). Then ncu on where the
# float32 epilogue's extra cycles at 4096^3 go (the SMs' active cycles: mean against maximum).
set -u
export PATH=/usr/local/cuda/bin:$PWD/.deps/bin:$PATH LD_LIBRARY_PATH=$PWD/.deps/lib
t0=$(date +%s); el() { echo "t=$(( $(date +%s)-t0 ))"; }
mkdir -p $OUT/r
cmake -S . -B build-gpu -G Ninja -DQS_BUILD_GUI=OFF -DQS_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DQS_DEPS_DIR=$PWD/.deps -DCMAKE_PREFIX_PATH=$PWD/.deps > $OUT/r/cfg.log 2>&1 &&
  cmake --build build-gpu --target quantscope-cli -j16 > $OUT/r/build.log 2>&1
echo "build rc $? $(el)"
A=build-gpu/quantscope-cli
[ -x $A ] || { tail -20 $OUT/r/build.log; exit 1; }
sum() { awk -v tag="$2" '/SM clock/ {k=$2; c[k]=$(NF-5)} /x int8-cublaslt/ {k=$2; r[k]=$(NF-1)}
  END {printf "%-34s wg %s dq %s | MHz lt %s wg %s dq %s\n", tag, r["int8-wgmma"], r["int8-wgmma-dq"], c["int8-cublaslt"], c["int8-wgmma"], c["int8-wgmma-dq"]}' "$1"; }
for s in 4096x4096x4096 2048x4096x11008; do
  for b in 20 1; do for w in 0 30; do for K in int8-cublaslt,int8-wgmma,int8-wgmma-dq int8-cublaslt,int8-wgmma; do
    for i in 1 2; do
      f=$OUT/r/${s}_b${b}_w${w}_$(echo $K | tr -cd ',' | wc -c)_$i.log
      QS_BENCH_WARM_MS=$w QS_BENCH_BLOCKS=1 QS_BENCH_CLOCK=1 QS_BENCH_BATCH=$b timeout 90 $A bench gemm --backend cuda \
        --shape $s --kernels $K 2> $f > /dev/null || echo "rc $? $f"
      sum $f "$s b$b warm$w k$(echo $K | tr -cd ',' | wc -c) $i"
    done
  done; done; done
  el
done | tee $OUT/r/summary.txt
# Where float32's 1.6 % of cycles at 4096^3 go: if the SMs' active cycles differ only in their maximum (the
# last tile's epilogue, which no MMAs hide), it is the tail; if the mean moves too, it is every tile.
export PATH=/opt/nvidia/nsight-compute/2025.3.1:$PATH
M=sm__cycles_elapsed.max,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_active.min
for s in 4096x4096x4096 2048x4096x11008; do for k in int8-wgmma int8-wgmma-dq; do for i in 1 2; do
  timeout 40 ncu --clock-control none -k regex:pingpong -c 1 --metrics $M --csv $A bench gemm --backend cuda \
    --shape $s --kernels $k --reps 1 --min-time 0 2>/dev/null | grep -E '"sm__' |
    awk -F'","' '{printf "%s=%s ", $(NF-2), $NF}' | sed 's/"//g'; echo " <- $s $k $i"
done; done; done | tee $OUT/r/ncu_tail.txt
el
tar -czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
