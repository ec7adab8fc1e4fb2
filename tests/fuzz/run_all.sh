#!/usr/bin/env bash
# Fuzzing as a routine: builds every libFuzzer target (tests/fuzz/README.md) and runs each for SECONDS
# (default 600), as many at a time as there are cores, then prints one line per target: executions,
# new corpus entries, crashes. Exits non-zero if any target found a crash, leak or timeout.
#   tests/fuzz/run_all.sh [SECONDS] [TARGET...]        e.g. tests/fuzz/run_all.sh 60 npy spec
# Findings: build-fuzz/crash-<target>-*; replay with build-fuzz/tests/fuzz/fuzz_<target> FILE.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-600}
shift || true
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DQS_BUILD_FUZZ=ON -DQS_BUILD_GUI=OFF -DQS_WITH_CUDA=OFF >/dev/null
cmake --build build-fuzz --target qs_fuzz
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in build-fuzz/tests/fuzz/fuzz_*; do [ -x "$f" ] && targets+=("${f##*/fuzz_}"); done
fi
jobs=$(nproc 2>/dev/null || echo 2)
run_one() {
  local t=$1 log=build-fuzz/fuzz-$1.log
  mkdir -p "build-fuzz/corpus-$t"
  local seeds=() dict=()
  [ -d "tests/fuzz/corpus/$t" ] && seeds=("tests/fuzz/corpus/$t")
  [ -f "tests/fuzz/$t.dict" ] && dict=("-dict=tests/fuzz/$t.dict")
  set +e
  "build-fuzz/tests/fuzz/fuzz_$t" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=30 -print_final_stats=1 \
    "${dict[@]}" -artifact_prefix="build-fuzz/crash-$t-" "build-fuzz/corpus-$t" "${seeds[@]}" >"$log" 2>&1
  echo $? >"build-fuzz/fuzz-$t.rc"
}
running=0
for t in "${targets[@]}"; do
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
done
wait
fail=0
for t in "${targets[@]}"; do
  log=build-fuzz/fuzz-$t.log
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  corpus=$(find "build-fuzz/corpus-$t" -type f | wc -l)
  crashes=$(find build-fuzz -maxdepth 1 -name "crash-$t-*" | wc -l)
  rc=$(cat "build-fuzz/fuzz-$t.rc")
  echo "fuzz_$t: ${secs}s, $execs executions, corpus $corpus files, $crashes findings, exit $rc"
  if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then fail=1; fi
done
exit $fail
