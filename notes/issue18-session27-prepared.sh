#!/bin/bash
# Prepared in session 26 for session 27 (built here with a full nvcc -c for sm_90a; NOT RUN on a GPU).
# notes/issue18-session27-splitk-ticket.diff: ticket split-K for the fused (float32 / float16) epilogue, switched
# by QS_SPLITK_TICKET=1. Today the last block of a tile to arrive (after its own adds, a fence and the arrival
# atomic) reads the tile's sums back and dequantizes them. With tickets, each block takes a ticket per tile before
# its K loop (the atomic's result is read after the loop); the block holding the last ticket adds nothing, waits
# (ld.acquire) until the blocks with earlier tickets have added and arrived, and dequantizes its own tile plus
# their sums. No deadlock: the blocks it waits for have started (they took tickets), so they are resident and wait
# on nothing. Aim: the float32 epilogue's extra 0.3 us at 16 x 4096 x 4096 (back to back 3.8 % over int32 out in
# session 26).
# Also QS_FQ_WAVES=k in fake_quant.cu: the lean fake-quant kernel with up to k waves of blocks instead of one (plain
# copies reached 0.91-0.94 of cudaMemcpy in one wave of grid-striding blocks, 0.98-1.0 with every block at once;
# the lean kernel with every block at once 0.738), k = 1, 2, 4, 8.
# About 8 minutes on nvidia-h200, carry [".deps"]. From the repository root:
#   git apply notes/issue18-session27-splitk-ticket.diff
#   (device) timeout 560 bash notes/issue18-session27-prepared.sh      (one archive comes back)
# If a QS_FQ_WAVES value beats 1 for both roundings, make it the launch's default (the self-test runs at small sizes
# either way; run it once more on that binary).
# If the self-tests pass and tickets are faster: keep it as the only path (drop the switch, the counters + tiles
# layout stays), run the CUDA self-test on that binary before landing. Else git checkout core/ and note it.
set -u
export PATH=/usr/local/cuda/bin:$PWD/.deps/bin:$PATH LD_LIBRARY_PATH=$PWD/.deps/lib
t0=$(date +%s); el() { echo "t=$(( $(date +%s)-t0 ))"; }; before() { [ $(( $(date +%s)-t0 )) -lt $1 ]; }
R=$OUT/r; mkdir -p $R
grep -q QS_SPLITK_TICKET core/cuda/gemm_int8_sm90.cu || { echo "apply notes/issue18-session27-splitk-ticket.diff first"; exit 1; }
cmake -S . -B build-gpu -G Ninja -DQS_BUILD_GUI=OFF -DQS_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a \
  -DQS_DEPS_DIR=$PWD/.deps -DCMAKE_PREFIX_PATH=$PWD/.deps > $R/cfg.log 2>&1 &&
  cmake --build build-gpu --target quantscope-cli -j16 > $R/build.log 2>&1
rc=$?; echo "build rc $rc $(el)"
[ $rc = 0 ] || { grep -m5 -B2 -A5 error $R/build.log; tar -czf $OUT/r.tgz -C $OUT r; exit 1; }
grep -q "Potential Performance Loss" $R/build.log && echo "WARNING: ptxas serialized a wgmma pipeline"
cli=build-gpu/quantscope-cli
# Correctness: tickets on the self-test's split-K shapes.
timeout 120 env QS_SPLITK_TICKET=1 $cli selftest --backend cuda > $R/selftest.log 2>&1; rc=$?
echo "selftest with QS_SPLITK_TICKET=1: rc $rc, $(grep -E 'passed,' $R/selftest.log | tail -1)"; grep "^FAIL" $R/selftest.log | head -5
el
# Timing, A/B in rounds: per call and 20 back to back; the decode shape and one more split-K shape.
g() { $cli bench gemm --backend cuda --shape 16x4096x4096 --shape 32x8192x4096 --kernels int8-cublaslt,int8-wgmma,int8-wgmma-dq "$@"; }
for i in 1 2 3; do before 260 || break
  for t in 0 1; do
    QS_SPLITK_TICKET=$t g 2> $R/pc_${t}_$i.log > $R/pc_${t}_$i.csv
    QS_SPLITK_TICKET=$t QS_BENCH_BATCH=20 g 2> $R/b2b_${t}_$i.log > $R/b2b_${t}_$i.csv
    for m in pc b2b; do
      echo "round $i ticket $t $m: $(awk -F, '$2=="int8-wgmma"{w[$3]=$7} $2=="int8-wgmma-dq"{d[$3]=$7} $2=="int8-cublaslt"{c[$3]=$7} END{for(k in w) printf "M=%s wg %.4f dq %.4f lt %.4f dq/wg-1 %+.2f%%; ",k,w[k],d[k],c[k],(d[k]/w[k]-1)*100}' $R/${m}_${t}_$i.csv)"
    done
  done
done | tee $R/ab.txt
el
# Fake quantization with up to k waves of blocks (QS_FQ_WAVES), two rounds.
b() { $cli bench quantize --backend cuda --format e4m3fn --n 268435456 --reps 20 "$@"; }
for i in 1 2; do before 420 || break
  for k in 1 2 4 8; do for r in stochastic nearest; do
    echo "QS_FQ_WAVES=$k $r round $i: $(QS_FQ_WAVES=$k b --rounding $r 2>/dev/null | tail -1)"
  done; done
done | tee $R/waves.txt
el
# The ticket path with 4 splits forced on every wgmma product (large shapes too, where the blocks of a tile are not
# all resident at once), and the forced splits without tickets.
for v in "QS_SPLITK_TICKET=1 QS_WGMMA_SPLITK=4" "QS_WGMMA_SPLITK=4"; do before 480 || break
  timeout 70 env $v $cli selftest --backend cuda > $R/selftest_f.log 2>&1; rc=$?
  echo "selftest with $v: rc $rc, $(grep -E 'passed,' $R/selftest_f.log | tail -1)"; grep "^FAIL" $R/selftest_f.log | head -5
done
el
tar -czf $OUT/r.tgz -C $OUT r && rm -rf $R
