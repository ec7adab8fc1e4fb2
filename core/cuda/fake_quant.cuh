// CUDA fake quantization / encoding with the CPU's bit-level algorithm (format/encode_bits.h), so
// codes and values equal the CPU's bit for bit, stochastic rounding included. No CUDA types here.
// Exercise: `quantscope-cli selftest --backend cuda`, `quantscope-cli bench quantize --backend cuda`.
#pragma once

#include "bench/bench.h"
#include "format/encode_simd.h"

namespace qs::cuda {

// The EncodeJob contract of encode_f32 with host pointers: copies x to the device, runs the kernel,
// copies values / codes16 back (codes8 too). Throws std::runtime_error with a one-line CUDA message.
EncodeStats encode_f32_cuda(const Format& f, const EncodeOptions& opt, const EncodeJob& job);

// Fake-quant fp32 -> format -> fp32 on cfg.n device-resident values against a device-to-device
// copy of the same bytes, same run (GB/s counting bytes read + written). Checks a sample of the
// device result against encode_ref before timing.
BenchQuantizeResult bench_quantize_cuda(const BenchQuantizeConfig& cfg);

}  // namespace qs::cuda
