// .npy tensor files (format versions 1.0, 2.0 and 3.0): read and write float32, float64, float16,
// int8, uint8, int32 and uint16 arrays, little-endian, C order. Fortran-order files are refused.
// Exercise: tests/tst_npy.cpp, `quantscope-cli quantize --in X.npy --out Y.npy`.
//
//   qs::NpyArray a = qs::read_npy("w.npy");          // throws qs::IoError with one clear line
//   std::vector<float> x = qs::to_float32(a);
//   qs::write_npy("out.npy", qs::make_npy(qs::DType::F32, a.shape, x.data()));  // atomic
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "format/float16.h"  // half_to_float / float_to_half, which .npy files need
#include "io/dtype.h"

namespace qs {



struct NpyArray {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;   // empty = 0-d scalar (numel 1)
  std::vector<uint8_t> data;    // numel * dtype_size bytes, little-endian, C order
  std::size_t numel() const;
};

// Dtype, shape and where the data starts in a .npy image, without copying any data.
struct NpyHeader {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;   // empty = 0-d scalar (numel 1)
  std::size_t data_offset = 0;  // bytes from the start of the image
  std::size_t nbytes = 0;       // numel * dtype_size; equals total_size - data_offset
};

// Validates the header of a .npy image of `total_size` bytes whose first `size` bytes are at
// `bytes` (size <= total_size; the header itself must lie within those first bytes), including
// that the data is exactly numel * dtype_size bytes. `name` prefixes error messages. Lets a
// caller check a memory-mapped file or the first few KB of a zip member before reading the rest.
//   qs::NpyHeader h = qs::parse_npy_header(map, map_size, "w.npy");  // data at map + h.data_offset
NpyHeader parse_npy_header(const uint8_t* bytes, std::size_t size, const std::string& name);
NpyHeader parse_npy_header(const uint8_t* bytes, std::size_t size, std::size_t total_size, const std::string& name);

NpyArray read_npy(const std::string& path);
// Parses an in-memory .npy image; `name` is used in error messages.
NpyArray parse_npy(const uint8_t* bytes, std::size_t size, const std::string& name);
// Serialises to a .npy (version 1.0 when the header fits, else 2.0) image.
std::vector<uint8_t> serialize_npy(const NpyArray& a);
// Writes atomically (temp file in the same folder, then rename); throws IoError.
void write_npy(const std::string& path, const NpyArray& a);

// Builds an array by copying numel elements of the given dtype from `data`.
NpyArray make_npy(DType dtype, const std::vector<int64_t>& shape, const void* data);

// Converts any supported dtype (float16 exactly) to float32 / float64.
std::vector<float> to_float32(const NpyArray& a);
std::vector<double> to_float64(const NpyArray& a);

}  // namespace qs
