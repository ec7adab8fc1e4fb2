// CUDA symmetric int8 quantization per tensor or per row (see quant/int8_quant.h for the contract),
// float32 or float16 input; bit-identical to quantize_int8_ref. No CUDA types here.
// Exercise: `quantscope-cli selftest --backend cuda`, `quantscope-cli bench quantize-int8 --backend cuda`
// (bench_quantize_cuda.cuh).
#pragma once

#include <cstddef>
#include <cstdint>

namespace qs::cuda {

// Host pointers in and out (copies through the device); x16 holds float16 bit patterns.
void quantize_int8_cuda(const float* x, const uint16_t* x16, std::size_t rows, std::size_t cols, bool per_row,
                        int8_t* q, float* scales);

// Device pointers: x (float32) or x16 (float16 bits), exactly one, rows x cols; q, scales (rows or 1 values)
// and amax_scratch (one 4-byte word, used per tensor); `stream` is a cudaStream_t (nullptr: the default
// stream). Asynchronous; throws std::invalid_argument on null pointers.
void quantize_int8_device(const float* x, const uint16_t* x16, std::size_t rows, std::size_t cols, bool per_row, int8_t* q,
                          float* scales, void* amax_scratch, void* stream = nullptr);

}  // namespace qs::cuda
