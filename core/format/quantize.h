// Whole-tensor fake quantization with one scale: y = decode(encode(x / s)) * s, codes, statistics
// and SQNR, on several threads. (Per-channel and block schemes come with core/quant/.)
// Exercise: `quantscope-cli quantize --format e4m3fn --in x.npy --out y.npy`, tests/tst_quantize.cpp.
//
//   qs::QuantizeResult r = qs::quantize_f32(qs::parse_format("int8"), {}, qs::ScaleChoice{},
//                                           x.data(), x.size(), y.data(), nullptr, nullptr, 2);
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "format/encode_simd.h"
#include "format/format.h"
#include "util/parallel.h"

namespace qs {

// `amax` (s = amax / max_finite; 1 when amax = 0), `none` (s = 1) or a positive number.
struct ScaleChoice {
  enum Kind { Amax, None, Value } kind = Amax;
  double value = 1.0;
};
ScaleChoice parse_scale(std::string_view s);  // throws FormatError

struct QuantizeResult {
  std::size_t count = 0;
  double scale = 1.0;
  int32_t zero_point = 0;   // unsigned integer formats under `amax` (PyTorch MinMax affine rule)
  double amax = 0.0;        // max |x| over finite x
  EncodeStats stats;
  double sqnr_db = 0.0;     // 10 log10(sum x^2 / sum (x - y)^2) over finite x; +inf when exact
  bool cancelled = false;
};

// Max |x| over finite elements (NaN and +-inf follow the format's rules instead of setting the scale).
double amax_f32(const float* x, std::size_t n, int threads = 1);

// x: n float32 inputs; values (float32), codes16 / codes8: optional outputs of n elements.
// Unsigned integer formats with ScaleChoice::Amax use the affine rule: lo = min(x_min, 0),
// hi = max(x_max, 0), s = (hi - lo) / qmax, zp = clamp(round(-lo / s), 0, qmax), q = clamp(round(x / s) + zp).
QuantizeResult quantize_f32(const Format& f, const EncodeOptions& opt, ScaleChoice scale,
                            const float* x, std::size_t n, float* values, uint16_t* codes16,
                            uint8_t* codes8, int threads = 1, const ProgressFn& progress = {},
                            SimdLevel level = best_simd_level());

// float64 inputs: the scale and x / s are computed in double and encoded exactly (reference path);
// values are decode(code) * s rounded once to float32.
QuantizeResult quantize_f64(const Format& f, const EncodeOptions& opt, ScaleChoice scale,
                            const double* x, std::size_t n, float* values, uint16_t* codes16,
                            uint8_t* codes8, int threads = 1, const ProgressFn& progress = {});

// The PyTorch MinMax affine parameters for an unsigned integer format (float32 arithmetic):
// lo = min(lo_x, 0), hi = max(hi_x, 0), s = max((hi - lo) / qmax, FLT_EPSILON), zp = clamp(round(-lo / s)).
void affine_params(const Format& f, double lo_x, double hi_x, float& scale, int32_t& zero_point);
// q = clamp(round(x / s) + zp, 0, qmax), values = (q - zp) * s; stochastic draws index0 + i.
EncodeStats encode_affine_f32(const Format& f, const EncodeOptions& opt, const float* x, std::size_t n,
                              uint64_t index0, float scale, int32_t zero_point, float* values);

// SQNR in dB computed in double over finite x.
double sqnr_db(const float* x, const float* y, std::size_t n);
double sqnr_db(const double* x, const float* y, std::size_t n);

}  // namespace qs
