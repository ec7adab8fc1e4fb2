// Element types of tensor files and their exact conversion to float32 / float64.
// Exercise: tests/tst_npy.cpp, tests/tst_tensorfile.cpp.
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
enum class DType { F32, F64, F16, I8, U8, I32, U16, BF16, I16, I64, U32, U64, F8E4M3, F8E5M2, Bool };
const char* to_string(DType t);   // "float32", "bfloat16", "float8_e4m3fn", ...
std::size_t dtype_size(DType t);
bool dtype_is_float(DType t);     // F32, F64, F16, BF16, F8E4M3, F8E5M2

// n little-endian elements of `t` at `src` to float32 / float64. Floats widen exactly (F64 -> F32
// rounds to nearest); integers convert as static_cast does; Bool gives 0/1.
void convert_to_f32(DType t, const void* src, std::size_t n, float* dst);
void convert_to_f64(DType t, const void* src, std::size_t n, double* dst);

}  // namespace qs
