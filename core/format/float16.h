// IEEE 754 binary16 (float16, "half") <-> float32, exact and portable (no F16C needed): every half is a
// float32 value, and float32 -> half rounds to nearest, ties to even, overflowing to inf at 65520 (max +
// half an ulp). NaN payloads keep their top 10 bits (a payload only in the low 13 bits becomes 0x200), so
// every half NaN round-trips, as numpy's do. Used by the .npy / safetensors / GGUF readers, ggml's block
// scales, the int8 GEMM's float16 output and its checks. Exercise: tests/core/tst_npy.cpp (every code).
//
//   uint16_t h = qs::float_to_half(0.1f);     // 0x2E66
//   float f = qs::half_to_float(h);           // 0.0999755859375
//
// Bulk widening (issue 17 item 5): half_to_float_n / bf16_to_float_n give, element for element, exactly
// the bits of half_to_float / bf16_to_float (every one of the 65536 codes, signalling NaNs and NaN
// payloads included: F16C's vcvtph2ps sets the quiet bit of a signalling NaN, the kernels clear it again),
// with F16C + AVX2 or AVX-512 chosen at run time (format/encode_simd.h's SimdLevel) and, from
// kBulkThreadMin elements on, on up to `threads` threads of the engine's pool (util/parallel.h).
// The readers widen float16 / bfloat16 tensors through them (io/dtype.h convert_to_f32). Exercise:
// tests/core/tst_float16.cpp, `quantscope-cli bench convert`.
//
//   qs::half_to_float_n(bytes, n, out.data(), /*threads=*/0);   // any alignment of `bytes`
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace qs {

enum class SimdLevel;  // format/encode_simd.h

float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
// bfloat16 is the top half of a float32: widening is exact and keeps every bit (NaNs included).
inline float bf16_to_float(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }

// n little-endian 16-bit codes at `src` (any alignment) to dst[0, n). threads <= 0: all cores; arrays
// shorter than kBulkThreadMin (2^20: 4 MiB of output, past L2) use one thread whatever is asked: below it
// one thread takes under ~25 us (in cache), about what waking a worker costs.
inline constexpr std::size_t kBulkThreadMin = std::size_t(1) << 20;
void half_to_float_n(const void* src, std::size_t n, float* dst, int threads = 1);
void bf16_to_float_n(const void* src, std::size_t n, float* dst, int threads = 1);
// The same on one thread at one SIMD level (tests, benchmarks); a level this binary or CPU lacks
// (F16C missing for Avx2 included) throws std::invalid_argument.
void half_to_float_n_at(SimdLevel level, const void* src, std::size_t n, float* dst);
void bf16_to_float_n_at(SimdLevel level, const void* src, std::size_t n, float* dst);
// The level half_to_float_n uses on this CPU (bf16 uses the same).
SimdLevel float16_simd_level();

namespace detail {
// The kernels (one thread, any n); declared here for format/float16.cpp's dispatch.
void half_to_float_generic(const uint8_t* src, std::size_t n, float* dst);
void bf16_to_float_generic(const uint8_t* src, std::size_t n, float* dst);
void half_to_float_f16c(const uint8_t* src, std::size_t n, float* dst);    // -mavx2 -mf16c
void bf16_to_float_avx2(const uint8_t* src, std::size_t n, float* dst);    // -mavx2 -mf16c
void half_to_float_avx512(const uint8_t* src, std::size_t n, float* dst);  // AVX-512 F/BW/VL
void bf16_to_float_avx512(const uint8_t* src, std::size_t n, float* dst);  // AVX-512 F/BW/VL
}  // namespace detail

}  // namespace qs
