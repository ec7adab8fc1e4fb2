// IEEE 754 binary16 (float16, "half") <-> float32, exact and portable (no F16C needed): every half is a
// float32 value, and float32 -> half rounds to nearest, ties to even, overflowing to inf at 65520 (max +
// half an ulp). NaN payloads keep their top 10 bits (a payload only in the low 13 bits becomes 0x200), so
// every half NaN round-trips, as numpy's do. Used by the .npy / safetensors / GGUF readers, ggml's block
// scales, the int8 GEMM's float16 output and its checks. Exercise: tests/core/tst_npy.cpp (every code).
//
//   uint16_t h = qs::float_to_half(0.1f);     // 0x2E66
//   float f = qs::half_to_float(h);           // 0.0999755859375
#pragma once

#include <cstdint>

namespace qs {

float half_to_float(uint16_t h);
uint16_t float_to_half(float f);

}  // namespace qs
