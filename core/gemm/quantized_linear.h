// A linear layer y = x · Wᵀ + b run through the exact int8 GEMM (core/gemm/gemm.h): the weights are
// quantized once (int8 symmetric, narrow range, per output channel or per tensor) and packed once; the
// activations are quantized per call, dynamically or with a static scale from calibration, and the
// product is dequantized (and biased) in the GEMM's fused epilogue. Exercise: tests/tst_quantized_linear.cpp.
//
//   qs::QuantizedLinear lin(W.data(), out, in, b.data());          // W: out x in row-major, b: out (or null)
//   lin.forward(x.data(), rows, y.data(), threads);                 // dynamic: one scale per row of x
//   lin.set_act_quant(qs::ActQuant::Static);
//   for (auto& batch : calib) lin.calibrate(batch.data(), batch_rows); // feeds the observer (MinMax default)
//   lin.freeze();                                                    // s_x = amax_scale(int8, observer.amax())
//   lin.forward(x.data(), rows, y.data(), threads);
//
// What forward computes, bit for bit (the contract the tests check):
//   weights   Wq, s_w = quantize_act_int8(W, out, in, per_row = per channel) — the `int8` format's encoder:
//             s = amax / 127 (1 when amax is 0), q = round-half-even(w / s) clamped to [-127, 127];
//             packed = pack_b_int8(Wq, in, out, in, BLayout::NxK).
//   dynamic   Xq, s_x = quantize_act_int8(x, rows, in, per_row = (mode == DynamicPerRow)).
//   static    s_x = amax_scale(int8, observer.amax()) fixed at freeze(); Xq = encode_f32(int8, {}, x / s_x)
//             (values beyond the calibrated range saturate to +-127).
//   y         = gemm_q8_dequant({Xq, rows x in}, packed, {s_x, s_w, bias}, y, out, threads, level), i.e.
//             ((float(acc) * s_x[row or tensor]) * s_w[col or tensor]) + b[col].
// Per-row dynamic scales are the default: the epilogue takes a per-row scale at no cost, accuracy is better
// than one scale per batch, and each output row then depends only on its own input row (batching does not
// change results). DynamicPerTensor gives the classic "one scale per batch" instead.
// NaN in x or W becomes code 0 and +-inf saturates; both are counted in the returned EncodeStats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

#include "format/encode_simd.h"
#include "format/format.h"
#include "gemm/gemm.h"
#include "quant/observer.h"

namespace qs {

enum class WeightGranularity : uint8_t { PerChannel, PerTensor };
enum class ActQuant : uint8_t { DynamicPerRow, DynamicPerTensor, Static };
const char* to_string(WeightGranularity g);  // "channel", "tensor"
const char* to_string(ActQuant a);           // "dynamic-row", "dynamic-tensor", "static"

class QuantizedLinear {
 public:
  // W: out_features x in_features row-major float32; bias: out_features values or null. Throws
  // std::invalid_argument for null W, non-positive sizes or sizes beyond int range.
  QuantizedLinear(const float* W, int out_features, int in_features, const float* bias = nullptr,
                  WeightGranularity granularity = WeightGranularity::PerChannel,
                  ActQuant act = ActQuant::DynamicPerRow, int threads = 1);

  QuantizedLinear(QuantizedLinear&&) noexcept = default;
  QuantizedLinear& operator=(QuantizedLinear&&) noexcept = default;

  int in_features() const { return in_; }
  int out_features() const { return out_; }
  WeightGranularity weight_granularity() const { return gran_; }
  ActQuant act_quant() const { return act_; }
  void set_act_quant(ActQuant a) { act_ = a; }

  // Weight scales: out_features values (PerChannel) or 1 (PerTensor). Bias: empty or out_features.
  std::span<const float> weight_scales() const { return w_scales_; }
  std::span<const float> bias() const { return bias_; }
  const PackedB& packed_weights() const { return packed_; }
  const EncodeStats& weight_stats() const { return w_stats_; }  // NaN / inf / underflow in W

  // Memory of the quantized weights: packed int8 data (with its padding and per-column terms) plus the
  // float32 weight scales; against 4 * out * in for the float32 matrix. The bias is float32 in both and
  // counted in neither.
  std::size_t weight_bytes() const;
  std::size_t float_weight_bytes() const { return std::size_t(4) * std::size_t(out_) * std::size_t(in_); }

  // Static activation scale. calibrate() feeds rows x in_features values to the observer (non-finite
  // values ignored by the observer); freeze() sets s_x = amax_scale(int8, observer().amax()) and throws
  // std::logic_error when nothing was calibrated (or the amax is not finite). set_observer() replaces the
  // observer (any qs::Observer; null: a fresh MinMaxObserver) and forgets calibration and the frozen scale.
  // calibrate() after freeze() keeps the frozen scale until freeze() is called again.
  void set_observer(std::unique_ptr<Observer> obs);
  Observer& observer() { return *obs_; }
  const Observer& observer() const { return *obs_; }
  void calibrate(const float* x, std::size_t rows);
  std::size_t calibrated_rows() const { return calib_rows_; }
  void freeze();
  bool frozen() const { return frozen_; }
  float static_scale() const { return s_static_; }  // 0 until frozen

  // y: rows x out_features row-major. threads <= 0: all cores. gemm_level must be in
  // available_gemm_levels(); activations are quantized at best_simd_level(). Throws std::invalid_argument
  // for null pointers or rows == 0 / beyond int range, std::logic_error for ActQuant::Static before
  // freeze(), GemmError when in_features exceeds the GEMM's int32-safe depth. Returns the activation
  // quantization statistics (NaN, saturated, underflowed inputs).
  EncodeStats forward(const float* x, std::size_t rows, float* y, int threads = 1,
                      SimdLevel gemm_level = best_gemm_level()) const;

 private:
  int out_ = 0, in_ = 0;
  WeightGranularity gran_ = WeightGranularity::PerChannel;
  ActQuant act_ = ActQuant::DynamicPerRow;
  PackedB packed_;
  std::vector<float> w_scales_, bias_;
  EncodeStats w_stats_;
  std::unique_ptr<Observer> obs_;
  std::size_t calib_rows_ = 0;
  bool frozen_ = false;
  float s_static_ = 0.0f;
};

}  // namespace qs
