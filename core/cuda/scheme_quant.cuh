// CUDA fake quantization with one scale per tensor, channel or block (fp32, E8M0 / OCP MX or two-level
// NVFP4 scales; unsigned integers affine with zero points), the group statistics and scales computed on the
// device with the CPU's rules, so results equal qs::apply_scheme bit for bit. No CUDA types here. Exercise: `quantscope-cli selftest --backend cuda`.
#pragma once

#include <cstdint>
#include <vector>

#include "quant/scheme.h"

namespace qs::cuda {

// Host pointers in and out. Supports tensor, channel:<axis> and block:<n>[:<scale format>] schemes: float
// formats and signed integers with fp32, E8M0 (MX) or two-level (NVFP4: e4m3fn under an fp32 tensor scale)
// scales, and unsigned affine integers (uint8, uint4) with a scale and zero point per group. Throws
// std::runtime_error for granularity none (CPU only), naming the scheme.
SchemeOutput apply_scheme_cuda(const Scheme& s, const float* x, const std::vector<int64_t>& shape, float* y);

}  // namespace qs::cuda
