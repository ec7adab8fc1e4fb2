// Element types of tensor files and their exact conversion to float32 / float64.
// Exercise: tests/tst_npy.cpp, tests/tst_tensorfile.cpp, tests/tst_onnx.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>

namespace qs {

// Any file-level problem: one line naming the file (and tensor) and what is wrong.
struct IoError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// .npy supports F32..U16; .safetensors / .onnx add the rest.
// The low-bit float types decode through the format engine (format/format.h) by their table name:
// F8E4M3 "e4m3fn", F8E5M2 "e5m2", F8E4M3FNUZ "e4m3fnuz", F8E5M2FNUZ "e5m2fnuz", F8E8M0 "e8m0fnu",
// F4E2M1 "e2m1fn", F6E2M3 "e2m3fn", F6E3M2 "e3m2fn".
// Packed (sub-byte) types -- F4E2M1, F6E2M3, F6E3M2, I4, U4, I2, U2 -- store element i at bits
// [i*b, i*b + b) of the little-endian bit stream: the first element in the least significant bits of
// the first byte (ONNX: "first element in the 4 LSB"; 2-bit: x0 | x1 << 2 | x2 << 4 | x3 << 6), a 6-bit
// element crossing into the next byte continues in its low bits. The bits after the last element are
// padding. A tensor of n elements occupies dtype_nbytes(t, n) = ceil(n * b / 8) bytes.
enum class DType {
  F32, F64, F16, I8, U8, I32, U16, BF16, I16, I64, U32, U64, F8E4M3, F8E5M2, Bool,
  F8E4M3FNUZ, F8E5M2FNUZ, F8E8M0, F4E2M1, F6E2M3, F6E3M2, I4, U4, I2, U2,
};
const char* to_string(DType t);   // "float32", "bfloat16", "float8_e4m3fn", "float4_e2m1fn", "int4", ...
unsigned dtype_bits(DType t);     // bits per element: 64 ... 8, and 6, 4, 2 for the packed types
bool dtype_is_packed(DType t);    // fewer than 8 bits per element
// Bytes per element for whole-byte types. Packed types answer 1 (the byte that holds two or more of
// them), so numel * dtype_size(t) is never a byte size for them: use dtype_nbytes.
std::size_t dtype_size(DType t);
// Bytes that `numel` elements occupy: numel * dtype_size(t), or ceil(numel * bits / 8) when packed.
// The unchecked form is for sizes already validated (as every reader does at open); the checked form
// returns false when the byte count overflows 64 bits.
std::size_t dtype_nbytes(DType t, std::size_t numel);
bool dtype_nbytes(DType t, uint64_t numel, uint64_t* nbytes);
// Float-like for the analysis (the values are real numbers on a grid): F32, F64, F16, BF16 and every
// float8 / float6 / float4 type, F8E8M0 included. E8M0 is an unsigned power-of-two scale format (no
// zero, no sign, 0xFF = NaN); its codes are still exact values 2^(c-127), so analysing them is allowed
// (a scale tensor then shows its own dynamic range). The integer types, packed ones included, are not.
bool dtype_is_float(DType t);

// n little-endian elements of `t` at `src` to float32 / float64 (dtype_nbytes(t, n) bytes are read).
// Floats widen exactly (F64 -> F32 rounds to nearest; every float8/6/4 code, NaN codes as NaN, is a
// float32 value); integers convert as static_cast does (packed ones sign-extended); Bool gives 0/1.
// F16 and BF16 widen with F16C / AVX-512 where the CPU has them (format/float16.h, the same bits) and, for
// n >= kBulkThreadMin (2^20), on up to `threads` threads (<= 0: all cores); the other types ignore it.
void convert_to_f32(DType t, const void* src, std::size_t n, float* dst, int threads = 1);
void convert_to_f64(DType t, const void* src, std::size_t n, double* dst);

}  // namespace qs
