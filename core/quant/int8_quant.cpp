// Scalar reference of the symmetric int8 quantization (see int8_quant.h).
#include "quant/int8_quant.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "io/npy.h"
#include "format/scale_rule.h"

namespace qs {

namespace {
inline int8_t q8(float v, float s) {
  if (std::isnan(v)) return 0;
  const float r = std::rint(v / s);
  return static_cast<int8_t>(std::clamp(r, -127.0f, 127.0f));
}

template <typename Load>
void quantize_impl(Load load, std::size_t rows, std::size_t cols, bool per_row, int8_t* q, float* scales) {
  float tensor_amax = 0;
  std::vector<float> row_amax(rows, 0.0f);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      const float v = load(r * cols + c);
      if (std::isfinite(v)) row_amax[r] = std::max(row_amax[r], std::fabs(v));
    }
  for (float a : row_amax) tensor_amax = std::max(tensor_amax, a);
  if (!per_row) scales[0] = int8_symmetric127_scale(tensor_amax);
  for (std::size_t r = 0; r < rows; ++r) {
    const float s = per_row ? int8_symmetric127_scale(row_amax[r]) : scales[0];
    if (per_row) scales[r] = s;
    for (std::size_t c = 0; c < cols; ++c) q[r * cols + c] = q8(load(r * cols + c), s);
  }
}
}  // namespace

void quantize_int8_ref(const float* x, std::size_t rows, std::size_t cols, bool per_row, int8_t* q, float* scales) {
  quantize_impl([x](std::size_t i) { return x[i]; }, rows, cols, per_row, q, scales);
}

void quantize_int8_ref_f16(const uint16_t* x, std::size_t rows, std::size_t cols, bool per_row, int8_t* q,
                           float* scales) {
  quantize_impl([x](std::size_t i) { return half_to_float(x[i]); }, rows, cols, per_row, q, scales);
}

}  // namespace qs
