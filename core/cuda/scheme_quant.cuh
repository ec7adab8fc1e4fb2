// CUDA fake quantization with one scale per channel or per block (fp32 or E8M0 / OCP MX scales), the
// group amaxes and scales computed on the device with the CPU's rules, so results equal
// qs::apply_scheme bit for bit. No CUDA types here. Exercise: `quantscope-cli selftest --backend cuda`.
#pragma once

#include <cstdint>
#include <vector>

#include "quant/scheme.h"

namespace qs::cuda {

// Host pointers in and out. Supports tensor, channel:<axis> and block:<n>[:e8m0fnu] schemes of float
// formats and int8/int4 (signed); throws std::runtime_error for the others (two-level block scales,
// unsigned affine integers), naming the scheme.
SchemeOutput apply_scheme_cuda(const Scheme& s, const float* x, const std::vector<int64_t>& shape, float* y);

}  // namespace qs::cuda
