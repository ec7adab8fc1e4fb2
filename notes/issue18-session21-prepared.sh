#!/bin/bash
# Prepared in session 20 for a session with device time (not yet run). From the repository root on
# nvidia-h100-x1: `timeout 560 bash notes/issue18-session21-prepared.sh`, about 6 minutes. It measures what
# session 20's notes list as next steps for the GEMM targets of issue 18:
#   1. ncu cycles, SM clock, L2 sectors and tensor-pipe share of cuBLASLt's kernel and ours in the same call
#      (4096^3, 2048 x 4096 x 11008; ours with int32 and float32 out);
#   2. the SM clock and kernel duration of each kernel over 3,000 calls back to back (QS_BENCH_CLOCK=1 with
#      tests/gpu/ktrace): cycles per call in a burst against ncu's single-launch cycles;
#   3. kernel durations and launch gaps back to back (tests/gpu/ktrace) with QS_PP_HALVES=0 / 1.
set -u
export PATH=/opt/nvidia/nsight-compute/2025.3.1:/usr/local/cuda/bin:$PATH
cli=build-gpu/quantscope-cli
cmake -S . -B build-gpu -G Ninja -DQS_BUILD_GUI=OFF -DQS_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a > $OUT/cfg.log 2>&1 &&
  cmake --build build-gpu --target quantscope-cli -j16 > $OUT/build.log 2>&1
echo "build rc $? perf-loss $(grep -c 'Potential Performance Loss' $OUT/build.log)"
timeout 120 $cli selftest --backend cuda > $OUT/st.txt 2>&1; echo "selftest: rc $? $(tail -1 $OUT/st.txt)"
M=gpu__time_duration.sum,sm__cycles_elapsed.max,sm__cycles_elapsed.avg.per_second,lts__t_sectors_srcunit_tex_op_read.sum,sm__pipe_tensor_op_imma_cycles_active.avg.pct_of_peak_sustained_active
for sh in 4096x4096x4096 2048x4096x11008; do
  for k in int8-cublaslt:sm90_xmma_gemm_i8 int8-wgmma:pingpong int8-wgmma-dq:pingpong; do
    timeout 60 ncu --clock-control none -k regex:${k#*:} -c 1 --metrics $M --csv $cli bench gemm --backend cuda \
      --shape $sh --kernels ${k%%:*} --reps 1 --min-time 0 2>/dev/null | grep -E '"(gpu__|sm__|lts__)' |
      awk -F'","' '{printf "%s=%s ", $(NF-2), $NF}' | sed 's/"//g'
    echo " <- $sh ${k%%:*}"
  done
done | sed 's/gpu__time_duration.sum/ns/; s/sm__cycles_elapsed.max/cyc/; s/sm__cycles_elapsed.avg.per_second/Hz/; s/lts__t_sectors_srcunit_tex_op_read.sum/L2rd/; s/sm__pipe_tensor_op_imma_cycles_active.avg.pct_of_peak_sustained_active/imma%/' | tee $OUT/ncu.txt
# Back to back for 3,000 calls per kernel, with the SM clock each kernel ran at (QS_BENCH_CLOCK=1) and the
# kernel durations (ktrace): duration x clock gives the cycles each kernel takes in a burst, to set beside
# ncu's single-launch cycles above.
for sh in 4096x4096x4096 2048x4096x11008; do
  QS_BENCH_CLOCK=1 QS_BENCH_BATCH=20 timeout 150 bash tests/gpu/ktrace/run.sh $OUT/tr_clock.csv $cli bench gemm \
    --backend cuda --shape $sh --kernels int8-cublaslt,int8-wgmma,int8-wgmma-dq --reps 3000 2> $OUT/clock_$sh.log |
    grep -v f32f32 | sed "s/^/$sh: /"
  grep -E "SM clock|x int8-cublaslt" $OUT/clock_$sh.log | grep -v "1.000x" | sed "s/^#   /$sh: /"
done | tee $OUT/clock.txt
for hv in 0 1; do
  QS_PP_HALVES=$hv QS_BENCH_BATCH=20 timeout 120 bash tests/gpu/ktrace/run.sh $OUT/tr_$hv.csv $cli bench gemm \
    --backend cuda --shape 2048x4096x11008 --kernels int8-cublaslt,int8-wgmma,int8-wgmma-dq --reps 400 2>/dev/null |
    grep -v f32f32 | sed "s/^/halves $hv: /"
done | tee $OUT/trace.txt
rm -f $OUT/tr_*.csv $OUT/cfg.log
