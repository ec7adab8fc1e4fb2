#!/usr/bin/env bash
# Interleaved A/B rounds of the CUDA int8 GEMM kernels against cuBLASLt in one build: each round runs
# `bench gemm --backend cuda` once per variant (an environment setting such as QS_WGMMA_KERNEL=tma), so
# cuBLASLt's own drift between rounds hits every variant alike. Ratios to int8-cublaslt go to stderr, which
# this script keeps beside the CSV. Usage: tests/gpu/gemm_ab.sh CLI OUT_DIR ROUNDS "VAR=a" "VAR=b" ... -- bench args
set -u
cli=${1:?cli}; out=${2:?out dir}; rounds=${3:?rounds}; shift 3
variants=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do variants+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  for v in "${variants[@]}"; do
    tag=$(echo "$v" | tr -c 'A-Za-z0-9=_\n' '_')
    env "$v" "$cli" bench gemm --backend cuda "$@" > "$out/r${r}_${tag}.csv" 2> "$out/r${r}_${tag}.log"
    echo "== round $r $v"
    grep -E "x int8-cublaslt|FAILED|rror" "$out/r${r}_${tag}.log" | head -20
  done
done
