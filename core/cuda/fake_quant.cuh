// CUDA fake quantization / encoding with the CPU's bit-level algorithm (format/encode_bits.h), so
// codes and values equal the CPU's bit for bit, stochastic rounding included. No CUDA types here.
// Exercise: `quantscope-cli selftest --backend cuda`, `quantscope-cli bench quantize --backend cuda`
// (bench_quantize_cuda.cuh).
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/encode_simd.h"

namespace qs::cuda {

// The EncodeJob contract of encode_f32 with host pointers: copies x to the device, runs the kernel,
// copies values / codes16 back (codes8 too). Throws std::runtime_error with a one-line CUDA message.
EncodeStats encode_f32_cuda(const Format& f, const EncodeOptions& opt, const EncodeJob& job);

// The counters encode_f32_device adds to (device memory; zero them before the first call).
struct EncodeCountsDevice {
  unsigned long long overflow = 0, underflow = 0, nan = 0;
};

// The same on device memory: x (n values), y (n values or null), codes (n codes or null), counts; every
// pointer 16-byte aligned (cudaMalloc's are). `scale` divides x before encoding (encode_f32's job.scale),
// `index0` is the stochastic-rounding index of x[0]. `stream` is a cudaStream_t (nullptr: the default
// stream). Asynchronous. Throws std::invalid_argument (bad scale, null or misaligned pointer) or
// std::runtime_error (launch error).
void encode_f32_device(const Format& f, const EncodeOptions& opt, float scale, const float* x, float* y, uint16_t* codes,
                       std::size_t n, uint64_t index0, EncodeCountsDevice* counts, void* stream = nullptr);

}  // namespace qs::cuda
