#!/usr/bin/env bash
# Builds the kernel-trace library and runs a command under it, then prints the per-kernel summary.
# Usage: tests/gpu/ktrace/run.sh OUT.csv command args...   (e.g. QS_BENCH_BATCH=20 build-gpu/quantscope-cli bench gemm ...)
set -eu
out=${1:?usage: tests/gpu/ktrace/run.sh OUT.csv command args...}; shift
here=$(cd "$(dirname "$0")" && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
inc=$(dirname "$(find "$cuda/" -name cupti.h | head -1)")
lib=$(dirname "$(find "$cuda/" -name 'libcupti.so' | head -1)")
so=$(mktemp -d)/libktrace.so
g++ -shared -fPIC -O2 -I"$inc" -I"$cuda/include" "$here/ktrace.cpp" -o "$so" -L"$lib" -lcupti -Wl,-rpath,"$lib"
CUDA_INJECTION64_PATH=$so KTRACE_OUT=$out "$@"
python3 "$here/summary.py" "$out"
