// The float32 baseline the int8 kernels are measured against: C = A · B through Eigen's GEMM, built once
// per SIMD level (Eigen chooses its kernels at compile time) and dispatched at run time like the int8
// kernels. Exercise: `quantscope-cli bench gemm --backend cpu` (row fp32-eigen), tests/tst_gemm.cpp.
//
//   qs::gemm_f32_eigen(A.data(), W.data(), Y.data(), M, K, N, threads);  // Y = A · W
#pragma once

#include "format/encode_simd.h"

namespace qs {

// A: M x K, B: K x N, C: M x N, all dense row-major float32. Eigen 3.4 threads its GEMM only through
// OpenMP, which the engine does not use, so `threads` (<= 0: all cores) split the columns of B and C
// into one Eigen product per thread, the same split the int8 kernel uses. Throws std::invalid_argument
// on non-positive sizes or a level outside available_simd_levels().
void gemm_f32_eigen(const float* A, const float* B, float* C, int M, int K, int N, int threads = 1,
                    SimdLevel level = best_simd_level());

}  // namespace qs
