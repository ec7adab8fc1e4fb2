// ggml's block formats (llama.cpp, GGUF) as data, and their exact decoders: ggml's reference dequantizers
// (ggml-quants.c dequantize_row_*) written again from the block definitions of ggml-common.h. Each block
// holds block_elems values in block_bytes bytes, fp16 fields little-endian; quantized weights are read
// by the GGUF reader (io/gguf_file.cpp) and made by format/ggml_quantize.h's reference quantizers.
// Exercise: tests/core/tst_gguf.cpp, tests/core/tst_ggml_schemes.cpp.
//
//   const qs::ggml::BlockInfo& b = qs::ggml::block_info(qs::ggml::BlockType::Q4_K);  // 256 values, 144 bytes
//   qs::ggml::dequantize(qs::ggml::BlockType::Q4_K, bytes, 256 * rows, out);
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace qs::ggml {

enum class BlockType { Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K, MXFP4 };

struct BlockInfo {
  const char* name;       // "Q4_K", as ggml prints it
  unsigned block_elems;   // values per block
  unsigned block_bytes;   // bytes per block
  int ggml_type;          // GGML_TYPE_* id (GGUF's tensor type)
};

const BlockInfo& block_info(BlockType t);
std::optional<BlockType> block_type_from_ggml(int ggml_type);

// n elements (a multiple of block_elems) from n / block_elems * block_bytes bytes at src into dst; exactly
// ggml's reference dequantizer (fp16 fields through an exact fp16 -> float conversion, float32 arithmetic
// in ggml's order). Throws std::invalid_argument for a bad n or a type this build does not decode.
void dequantize(BlockType t, const uint8_t* src, std::size_t n, float* dst);

}  // namespace qs::ggml
