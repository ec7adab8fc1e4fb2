#!/usr/bin/env bash
# Builds tests/oracle/ggml_quants_oracle.cpp against ggml's own ggml-quants.c and runs it.
#   tests/oracle/ggml_quants_oracle.sh GGML_SRC [BUILD_DIR]
# GGML_SRC: a ggml checkout (its src/ and include/) or llama.cpp's ggml/ folder; BUILD_DIR: a QuantScope build
# folder holding core/libqs_format.a and core/libqs_util.a, the engine layers ggml's quantizers live in
# (default: build). Prints one line per type; exits 1 on any difference.
set -euo pipefail
src=${1:?usage: ggml_quants_oracle.sh GGML_SRC [BUILD_DIR]}
build=${2:-build}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -std=c11 -O2 -ffp-contract=off -c "$src/src/ggml-quants.c" -I"$src/src" -I"$src/include" -o "$work/q.o"
g++ -std=c++20 -O2 -ffp-contract=off -I"$here/../../core" "$here/ggml_quants_oracle.cpp" "$work/q.o" \
    "$build/core/libqs_format.a" "$build/core/libqs_util.a" -lpthread -o "$work/oracle"
"$work/oracle"
