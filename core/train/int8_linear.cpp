// Int8Linear: quantize_int8_ref for both operands, the exact int8 GEMM with the fused epilogue, float32
// backward products through train_gemm on the dequantized operands.
#include "train/int8_linear.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "format/rng.h"
#include "gemm/gemm.h"
#include "quant/int8_quant.h"
#include "train/train_gemm.h"
#include "util/mix64.h"

namespace qs {

void int8_linear_init(int in, int out, uint64_t seed, float* W, float* b) {
  const double bound = 1.0 / std::sqrt(double(in));
  const uint64_t kw = mix64(seed * 0x9e3779b97f4a7c15ULL + 0x11), kb = mix64(seed * 0x9e3779b97f4a7c15ULL + 0x22);
  auto uniform = [](uint64_t key, std::size_t i) { return (double(stochastic_bits(key, i) >> 8) + 0.5) * 0x1p-24; };
  const std::size_t n = std::size_t(in) * std::size_t(out);
  for (std::size_t i = 0; i < n; ++i) W[i] = float((2 * uniform(kw, i) - 1) * bound);
  for (std::size_t j = 0; j < std::size_t(out); ++j) b[j] = float((2 * uniform(kb, j) - 1) * bound);
}

Int8Linear::Int8Linear(int in, int out, uint64_t seed, Int8LinearConfig cfg) : in_(in), out_(out), cfg_(cfg) {
  if (in < 1 || in > 65536 || out < 1 || out > 65536)
    throw std::invalid_argument("int8 linear: sizes must be in 1..65536 (got " + std::to_string(in) + " x " +
                                std::to_string(out) + ")");
  W.resize(std::size_t(in) * std::size_t(out));
  b.resize(std::size_t(out));
  int8_linear_init(in, out, seed, W.data(), b.data());
}

void Int8Linear::forward(const float* x, int rows, float* y, int threads) {
  if (rows < 1) throw std::invalid_argument("int8 linear: rows must be >= 1");
  const std::size_t R = std::size_t(rows), I = std::size_t(in_), O = std::size_t(out_);
  xq_.resize(R * I);
  sx_.resize(cfg_.x_per_row ? R : 1);
  wq_.resize(O * I);
  sw_.resize(cfg_.w_per_channel ? O : 1);
  quantize_int8_ref(x, R, I, cfg_.x_per_row, xq_.data(), sx_.data());
  quantize_int8_ref(W.data(), O, I, cfg_.w_per_channel, wq_.data(), sw_.data());
  const PackedB packed = pack_b_int8(wq_.data(), in_, out_, 0, BLayout::NxK);
  QMatrixA a;
  a.data = xq_.data();
  a.type = QType::S8;
  a.M = rows;
  a.K = in_;
  gemm_q8_dequant(a, packed, Dequant{sx_, sw_, b}, y, out_, threads);
  rows_ = rows;
}

void Int8Linear::backward(const float* dy, float* dx) {
  if (rows_ < 1) throw std::logic_error("int8 linear: backward needs a forward first");
  const std::size_t R = std::size_t(rows_), I = std::size_t(in_), O = std::size_t(out_);
  std::vector<float> xd(R * I), wd(O * I);
  for (std::size_t r = 0; r < R; ++r) {
    const float s = sx_[cfg_.x_per_row ? r : 0];
    for (std::size_t k = 0; k < I; ++k) xd[r * I + k] = float(xq_[r * I + k]) * s;
  }
  for (std::size_t j = 0; j < O; ++j) {
    const float s = sw_[cfg_.w_per_channel ? j : 0];
    for (std::size_t k = 0; k < I; ++k) wd[j * I + k] = float(wq_[j * I + k]) * s;
  }
  dW.resize(O * I);
  db.assign(O, 0.0f);
  train_gemm(true, false, out_, in_, rows_, dy, out_, xd.data(), in_, dW.data(), in_, false);  // dY^T x~
  for (std::size_t r = 0; r < R; ++r)
    for (std::size_t j = 0; j < O; ++j) db[j] += dy[r * O + j];
  if (dx) train_gemm(false, false, rows_, in_, out_, dy, out_, wd.data(), in_, dx, in_, false);  // dY w~
}

}  // namespace qs
