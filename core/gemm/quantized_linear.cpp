// QuantizedLinear: weights quantized and packed once, activations quantized per call (dynamic or static),
// int8 GEMM with the fused dequant epilogue. Exercise: tests/tst_quantized_linear.cpp.
#include "gemm/quantized_linear.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <mutex>
#include <string>

#include "gemm/gemm_quant.h"
#include "quant/scheme.h"
#include "util/parallel.h"

namespace qs {

const char* to_string(WeightGranularity g) {
  return g == WeightGranularity::PerChannel ? "channel" : "tensor";
}

const char* to_string(ActQuant a) {
  switch (a) {
    case ActQuant::DynamicPerRow: return "dynamic-row";
    case ActQuant::DynamicPerTensor: return "dynamic-tensor";
    case ActQuant::Static: return "static";
  }
  return "?";
}

namespace {
const Format& int8_format() {
  static const Format f = parse_format("int8");
  return f;
}
}  // namespace

QuantizedLinear::QuantizedLinear(const float* W, int out_features, int in_features, const float* bias,
                                 WeightGranularity granularity, ActQuant act, int threads)
    : out_(out_features), in_(in_features), gran_(granularity), act_(act),
      obs_(std::make_unique<MinMaxObserver>()) {
  if (!W) throw std::invalid_argument("QuantizedLinear: null weight pointer");
  if (out_features <= 0 || in_features <= 0)
    throw std::invalid_argument("QuantizedLinear: out_features and in_features must be positive, got " +
                                std::to_string(out_features) + " x " + std::to_string(in_features));
  const bool per_channel = granularity == WeightGranularity::PerChannel;
  // Codes live only until they are packed: the layer holds the packed copy, not a second one.
  std::vector<int8_t> q(std::size_t(out_) * std::size_t(in_));
  w_scales_.assign(per_channel ? std::size_t(out_) : 1, 0.0f);
  w_stats_ = quantize_act_int8(W, out_, in_, in_, per_channel, q.data(), in_, w_scales_.data(), threads);
  packed_ = pack_b_int8(q.data(), in_, out_, in_, BLayout::NxK);
  if (bias) bias_.assign(bias, bias + out_);
}

std::size_t QuantizedLinear::weight_bytes() const { return packed_.bytes() + w_scales_.size() * sizeof(float); }

void QuantizedLinear::set_observer(std::unique_ptr<Observer> obs) {
  obs_ = obs ? std::move(obs) : std::make_unique<MinMaxObserver>();
  calib_rows_ = 0;
  frozen_ = false;
  s_static_ = 0.0f;
}

void QuantizedLinear::calibrate(const float* x, std::size_t rows) {
  if (rows == 0) return;
  if (!x) throw std::invalid_argument("QuantizedLinear::calibrate: null input");
  obs_->observe(x, rows * std::size_t(in_));
  calib_rows_ += rows;
}

void QuantizedLinear::freeze() {
  if (calib_rows_ == 0) throw std::logic_error("QuantizedLinear::freeze: no calibration data (call calibrate first)");
  const double a = obs_->amax();
  if (!std::isfinite(a))
    throw std::logic_error("QuantizedLinear::freeze: observer amax is not finite (" + std::to_string(a) + ")");
  s_static_ = amax_scale(int8_format(), a);  // 1 when amax is 0: zero codes, never a division by zero
  frozen_ = true;
}

EncodeStats QuantizedLinear::forward(const float* x, std::size_t rows, float* y, int threads,
                                     SimdLevel gemm_level) const {
  if (!x || !y) throw std::invalid_argument("QuantizedLinear::forward: null pointer");
  if (rows == 0 || rows > std::size_t(INT_MAX))
    throw std::invalid_argument("QuantizedLinear::forward: rows must be in [1, INT_MAX], got " + std::to_string(rows));
  if (act_ == ActQuant::Static && !frozen_)
    throw std::logic_error("QuantizedLinear::forward: static activation quantization needs calibrate() and freeze()");
  const int M = int(rows);
  std::vector<int8_t> q(rows * std::size_t(in_));
  std::vector<float> s_x(act_ == ActQuant::DynamicPerRow ? rows : 1);
  EncodeStats st;
  if (act_ == ActQuant::Static) {
    s_x[0] = s_static_;
    const std::size_t rows_per = std::max<std::size_t>(1, (std::size_t(1) << 16) / std::size_t(in_));
    std::mutex mu;
    parallel_chunks(rows, rows_per, resolve_threads(threads), [&](std::size_t b, std::size_t e) {
      EncodeJob job;
      job.x = x + b * std::size_t(in_);
      job.n = (e - b) * std::size_t(in_);
      job.scale = s_static_;
      job.codes8 = reinterpret_cast<uint8_t*>(q.data() + b * std::size_t(in_));  // two's complement codes
      job.index0 = b * std::size_t(in_);
      const EncodeStats part = encode_f32(int8_format(), EncodeOptions{}, job);
      std::lock_guard<std::mutex> lock(mu);
      st += part;
    });
  } else {
    st = quantize_act_int8(x, M, in_, in_, act_ == ActQuant::DynamicPerRow, q.data(), in_, s_x.data(), threads);
  }
  QMatrixA A;
  A.data = q.data();
  A.type = QType::S8;
  A.M = M;
  A.K = in_;
  A.ld = in_;
  Dequant dq;
  dq.scale_a = s_x;
  dq.scale_b = w_scales_;
  dq.bias = bias_;
  gemm_q8_dequant(A, packed_, dq, y, out_, threads, gemm_level);
  return st;
}

}  // namespace qs
