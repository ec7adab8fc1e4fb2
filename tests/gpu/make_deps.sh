#!/usr/bin/env bash
# Assembles .deps/ (git-ignored) on a Debian 12 development machine: the headers, libraries and CMake
# configs that the GPU machine (Ubuntu, no apt, no network) lacks, for the device tool's `carry`:
#   CLI11, nlohmann-json, GoogleTest, protobuf (headers, libprotobuf/libprotoc, protoc), oneDNN (headers,
#   libdnnl.so.2 and its OpenCL loader) for the vendor rows of `bench gemm --backend cpu`.
# Use there:  export LD_LIBRARY_PATH=$PWD/.deps/lib PATH=$PWD/.deps/bin:$PATH
#             tests/gpu/run_checks.sh $OUT/checks -DQS_DEPS_DIR=$PWD/.deps -DCMAKE_PREFIX_PATH=$PWD/.deps
set -euo pipefail
cd "$(dirname "$0")/../.."
onednn=0
[ "${1:-}" = --onednn ] && onednn=1
d=.deps; ml=/usr/lib/x86_64-linux-gnu
rm -rf "$d"; mkdir -p "$d/include" "$d/lib/cmake" "$d/bin" "$d/share/cmake"
cp -r /usr/include/CLI /usr/include/nlohmann /usr/include/gtest /usr/include/gmock /usr/include/google "$d/include/"
cp -r /usr/share/cmake/nlohmann_json "$d/share/cmake/"
mkdir -p "$d/lib/x86_64-linux-gnu/cmake"   # GTest's config finds its libraries relative to itself
cp -r $ml/cmake/GTest "$d/lib/x86_64-linux-gnu/cmake/"
cp -a $ml/libgtest*.a $ml/libgmock*.a "$d/lib/x86_64-linux-gnu/"
cp -a $ml/libprotobuf.so* $ml/libprotoc.so* "$d/lib/"
if [ $onednn = 1 ]; then
  cp -r /usr/include/oneapi /usr/include/dnnl*.h* "$d/include/"
  cp -a $ml/libdnnl.so* $ml/libOpenCL.so* "$d/lib/"
else
  mkdir -p "$d/fashion-mnist"
  cp /usr/share/datasets/fashion-mnist/*.gz "$d/fashion-mnist/"
fi
cp /usr/bin/protoc "$d/bin/"
du -sh "$d"
