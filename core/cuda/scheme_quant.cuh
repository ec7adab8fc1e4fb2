// CUDA fake quantization with one scale per tensor, channel or block (fp32, E8M0 / OCP MX or two-level
// NVFP4 scales; unsigned integers affine with zero points), the group statistics and scales computed on the
// device with the CPU's rules, so results equal qs::apply_scheme bit for bit. No CUDA types here. Exercise: `quantscope-cli selftest --backend cuda`.
#pragma once

#include <cstdint>
#include <vector>

#include "quant/scheme.h"

namespace qs::cuda {

// Host pointers in and out. Supports tensor, channel:<axis> and block:<n>[:<scale format>] schemes: float
// formats and signed integers with fp32, E8M0 (MX, every exponent rounding) or two-level (NVFP4: e4m3fn under
// an fp32 tensor scale; ":mse" searches each block's scale on the device) scales, observer clips on tensor and
// channel scales (":p99.9", ":mse": the observer runs on the host, as a calibration, the kernel applies its
// scales), and unsigned affine integers (uint8, uint4) with a scale and zero point per group. Throws
// std::runtime_error, naming the scheme, for granularity none, ggml blocks, 16-bit block scales, 2-D tiles
// and blocks along another axis (CPU only).
SchemeOutput apply_scheme_cuda(const Scheme& s, const float* x, const std::vector<int64_t>& shape, float* y);

}  // namespace qs::cuda
