// Dynamic quantization of float32 activations for the int8 GEMM (the end-to-end path: quantize,
// multiply, dequantize in the epilogue). Codes are exactly those of the `int8` format's encoder.
// Exercise: `quantscope-cli bench gemm` (rows *-e2e), tests/tst_gemm.cpp.
//
//   std::vector<int8_t> q(M * K); std::vector<float> s(M);
//   qs::quantize_act_int8(X, M, K, K, /*per_row=*/true, q.data(), K, s.data(), threads);
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/encode_simd.h"
#include "format/format.h"

namespace qs {

// X: M x K row-major (ldx >= K), Q: M x K int8 (ldq >= K). Symmetric int8, narrow range: s = amax / 127
// over the finite values of the row (per_row) or of the whole matrix (scales[0]); s = 1 when amax is 0
// (an all-zero input gives zero codes, never a division by zero); q = round-half-even(x / s) clamped to
// [-127, 127]. NaN becomes 0 and +-inf saturates to +-127; both are counted in the returned statistics
// (nan, overflow; underflow counts non-zero inputs that became 0). scales: M values (per_row) or 1.
// threads <= 0: all cores. The Avx512 level runs a dedicated kernel; the others go through encode_f32.
EncodeStats quantize_act_int8(const float* X, int M, int K, std::ptrdiff_t ldx, bool per_row, int8_t* Q,
                              std::ptrdiff_t ldq, float* scales, int threads = 1, SimdLevel level = best_simd_level());

}  // namespace qs
