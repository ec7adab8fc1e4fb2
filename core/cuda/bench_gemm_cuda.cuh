// `bench gemm --backend cuda`: cuBLAS fp32 (the speedup baseline), TF32 and bf16, cuBLASLt int8 (the line
// our int8 kernels are compared with) and our dp4a / mma / wgmma kernels with int32, fused float32 and
// float16 epilogues and end to end (activation quantization on the device + GEMM), on the shapes and data
// of the CPU benchmark (make_gemm_bench_data), each checked on the host before it is timed with CUDA events.
// No CUDA types here. Exercise: `quantscope-cli bench gemm --backend cuda --sizes 4096`.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "bench/gemm_bench.h"

namespace qs::cuda {

// Kernel names this build and device can run, in the order they are timed (fp32-cublas and int8-cublaslt
// always run: they are the baselines of the speedup column and of the int8 ratios).
std::vector<std::string> bench_gemm_cuda_kernels();
std::string bench_gemm_cuda_comparison();  // e.g. "cuBLASLt 13.0.0"

// Rows as on the CPU (backend "cuda", threads 0); speedup_vs_fp32 is against fp32-cublas of the same shape.
// A kernel whose check fails is reported through on_note and not timed; the others go on, and the call
// throws std::runtime_error at the end naming the failures. on_note also says which kernels a shape
// skips (a tensor-core kernel on K % 16 != 0) and which cuBLASLt algorithm was chosen.
std::vector<BenchGemmRow> bench_gemm_cuda(const BenchGemmConfig& cfg,
                                          const std::function<void(const BenchGemmRow&)>& on_row = {},
                                          const std::function<void(const std::string&)>& on_note = {},
                                          const ProgressFn& progress = {});

}  // namespace qs::cuda
