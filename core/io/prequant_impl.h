// Internals shared by io/prequant.cpp (recognition, reading) and quant/requant_check.cpp (the re-quantization
// check, the only part that needs quant/, one layer up): a recognised group's description and the walk over
// its elements. Exercise: tests/core/tst_prequant.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "io/prequant.h"

namespace qs {

namespace prequant_detail {
enum class Conv { ScaledWeight, Mx, CtPacked, Nvfp4, OnnxQdq };
enum class Layout { Stream, CtWords };

constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
}  // namespace prequant_detail

struct PrequantizedFile::Group {
  prequant_detail::Conv conv = prequant_detail::Conv::ScaledWeight;
  PrequantInfo info;
  std::string name;
  std::vector<int64_t> shape;   // of the dequantized tensor
  std::size_t numel = 0, rows = 0, cols = 0;
  // Codes.
  std::size_t codes = prequant_detail::kNone;    // raw index
  prequant_detail::Layout layout = prequant_detail::Layout::Stream;
  DType code_dtype = DType::U8; // Stream: the dtype whose little-endian stream holds the codes
  unsigned bits = 8;            // CtWords: bits per value
  std::size_t words_per_row = 0;
  bool code32 = false;          // 32-bit codes (ONNX int32): value = the int32 itself
  std::vector<float> values;    // the value of each code
  // Scales.
  std::size_t scale = prequant_detail::kNone, zero_point = prequant_detail::kNone, global = prequant_detail::kNone;
  // NVFP4's tensor scale: compressed-tensors' weight_global_scale divides (eff = scale / global), ModelOpt's
  // weight_scale_2 multiplies (eff = scale * scale_2).
  bool global_divides = true;
  // MX: E8M0 255 is NaN (OCP, gpt-oss); compressed-tensors' decompress_mx_scale computes 2^(255 - 127) = inf.
  bool e8m0_255_nan = true;
  bool zp_packed = false;       // compressed-tensors: zero points packed along rows in int32 words
  std::vector<std::size_t> blk;     // per axis: elements per scale (0 on the last axis: gidx)
  std::vector<uint32_t> gidx;       // the group of each column (activation order)
  std::size_t gidx_groups = 0;      // and how many groups the scales hold
  std::vector<std::size_t> sstride; // C-order strides of the scale grid
  std::size_t nscales = 1;
  // The re-quantization scheme ("" = none); the check counts one-ulp scale differences for fp32 scales only
  // (16-bit and power-of-two scales come back exactly when the rule matches).
  std::string scheme;
  bool fp32_scale = false;
  bool compare_sb = false;      // NVFP4: compare the e4m3 block scale, not the product
  std::string stored;           // TensorInfo::stored
  uint64_t stored_bytes = 0;
};

namespace prequant_detail {

using Group = PrequantizedFile::Group;

// The code of element e = (r, c).
struct CodeReader {
  const Group& g;
  const uint8_t* data;
  uint32_t at(std::size_t e, std::size_t r, std::size_t c) const {
    if (g.layout == Layout::CtWords) {
      const std::size_t pf = 32 / g.bits;
      uint32_t w;
      std::memcpy(&w, data + 4 * (r * g.words_per_row + c / pf), 4);
      return (w >> ((c % pf) * g.bits)) & ((1u << g.bits) - 1);
    }
    switch (dtype_bits(g.code_dtype)) {
      case 2: return (data[e >> 2] >> ((e & 3) * 2)) & 3u;
      case 4: return (data[e >> 1] >> ((e & 1) * 4)) & 15u;
      case 8: return data[e];
      case 16: { uint16_t v; std::memcpy(&v, data + 2 * e, 2); return v; }
      default: { uint32_t v; std::memcpy(&v, data + 4 * e, 4); return v; }
    }
  }
};

// Calls f(e, r, c, k) for every element in C order, k = its scale.
template <class F>
void walk(const Group& g, F&& f) {
  const std::size_t rank = g.shape.size();
  const std::size_t blast = rank ? g.blk[rank - 1] : 1;
  for (std::size_t r = 0; r < g.rows; ++r) {
    std::size_t base = 0, t = r;
    for (std::size_t a = rank >= 1 ? rank - 1 : 0; a-- > 0;) {
      const std::size_t D = static_cast<std::size_t>(g.shape[a]);
      base += (t % D) / g.blk[a] * g.sstride[a];
      t /= D;
    }
    for (std::size_t c = 0; c < g.cols; ++c) {
      const std::size_t k = base + (blast == 0 ? g.gidx[c] : c / blast);
      f(r * g.cols + c, r, c, k);
    }
  }
}

// What read() needs beyond the codes: the multiplier and zero point of each scale, and the stored scale the
// check compares (the multiplier, or NVFP4's e4m3 block scale).
struct Loaded {
  TensorBytes codes;
  std::vector<float> eff, zp, cmp;
  float global = 1;
};

Loaded load(const TensorFile& raw, const Group& g);

inline float code_value(const Group& g, uint32_t code) {
  return g.code32 ? static_cast<float>(static_cast<int32_t>(code)) : g.values[code];
}

}  // namespace prequant_detail

}  // namespace qs
