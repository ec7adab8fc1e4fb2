// Symmetric int8 quantization of a row-major matrix, the contract of a classic quantized-linear
// layer: s = max(max|X| / 127, 1e-8) per tensor or per row (float32; ScaleRule::Int8Symmetric127,
// int8_symmetric127_scale in format/scale_rule.h), Q = clamp(rint(X / s), -127, 127) with X / s in float32. The scalar reference for the CUDA kernels (core/cuda/quantize_int8.cu).
// Exercise: `quantscope-cli selftest --backend cuda`, tests/tst_quantize.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

namespace qs {

// x: rows x cols float32 (or float16 bit patterns with the _f16 variant); q: rows x cols;
// scales: rows entries when per_row, else 1. Non-finite inputs: NaN -> 0, +-inf -> +-127 (amax over
// finite values).
void quantize_int8_ref(const float* x, std::size_t rows, std::size_t cols, bool per_row, int8_t* q, float* scales);
void quantize_int8_ref_f16(const uint16_t* x, std::size_t rows, std::size_t cols, bool per_row, int8_t* q,
                           float* scales);

}  // namespace qs
