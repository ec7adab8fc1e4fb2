// CUDA symmetric int8 quantization per tensor or per row (see quant/int8_quant.h for the contract),
// float32 or float16 input; bit-identical to quantize_int8_ref. No CUDA types here.
// Exercise: `quantscope-cli selftest --backend cuda`, `quantscope-cli bench quantize-int8 --backend cuda`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace qs::cuda {

// Host pointers in and out (copies through the device); x16 holds float16 bit patterns.
void quantize_int8_cuda(const float* x, const uint16_t* x16, std::size_t rows, std::size_t cols, bool per_row,
                        int8_t* q, float* scales);

// Device pointers: x (float32, rows x cols), q, scales (rows or 1 values) and amax_scratch (one 4-byte
// word, used per tensor); `stream` is a cudaStream_t (nullptr: the default stream). Asynchronous.
void quantize_int8_device(const float* x, std::size_t rows, std::size_t cols, bool per_row, int8_t* q, float* scales,
                          void* amax_scratch, void* stream = nullptr);

struct BenchInt8Result {
  std::string kernel;    // "int8-quant-row-fp32", ...
  double quant_gbps = 0, memcpy_gbps = 0, ratio = 0;  // bytes read + written / s
  std::size_t checked = 0;
};
// Times the kernel on device-resident data against a device-to-device copy of the input bytes, after
// checking its codes and scales against the CPU reference.
BenchInt8Result bench_quantize_int8_cuda(std::size_t rows, std::size_t cols, bool per_row, bool fp16, int reps);

}  // namespace qs::cuda
