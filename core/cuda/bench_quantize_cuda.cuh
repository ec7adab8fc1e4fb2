// The CUDA bandwidth benchmarks of the quantization ops (fake_quant.cuh, quantize_int8.cuh): correctness
// against the CPU reference first, then GB/s against a device-to-device copy timed in the same run.
// No CUDA types here. Exercise: `quantscope-cli bench quantize --backend cuda`,
// `quantscope-cli bench quantize-int8 --backend cuda`.
#pragma once

#include <cstddef>
#include <string>

#include "bench/bench.h"

namespace qs::cuda {

// Fake-quant fp32 -> format -> fp32 on cfg.n device-resident values against a device-to-device
// copy of the same bytes, same run (GB/s counting bytes read + written). Checks a sample of the
// device result against encode_ref before timing.
BenchQuantizeResult bench_quantize_cuda(const BenchQuantizeConfig& cfg);

struct BenchInt8Result {
  std::string kernel;    // "int8-quant-row-fp32", ...
  double quant_gbps = 0, memcpy_gbps = 0, ratio = 0;  // bytes read + written / s
  std::size_t checked = 0;
};
// Times int8 quantization (quantize_int8_device) on device-resident data against a device-to-device copy
// of the input bytes, after checking its codes and scales against the CPU reference.
BenchInt8Result bench_quantize_int8_cuda(std::size_t rows, std::size_t cols, bool per_row, bool fp16, int reps);

}  // namespace qs::cuda
