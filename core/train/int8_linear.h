// The trainable int8 linear layer of the Triton homework's seed (CPU reference of qs::cuda::Int8LinearCuda in
// cuda/train_cuda.cuh): forward quantizes X per tensor (or per row) and W per output channel (or per tensor)
// with the symmetric int8 rule of quant/int8_quant.h, runs the exact int8 GEMM with the fused dequantizing
// epilogue and bias, and keeps (X_q, s_x, W_q, s_w) for the backward; backward computes dX from the
// dequantized W, dW from the dequantized X and db, in float32 (straight-through: the rounding is not
// differentiated). Exercise: tests/core/tst_int8_linear.cpp, `quantscope-cli selftest --backend cuda`
// (cases int8-linear/...: the CUDA layer against this one), `quantscope-cli train --backend cuda --int8`.
//
//   qs::Int8Linear lin(784, 256, /*seed=*/1);          // Kaiming-uniform (a = sqrt 5) W, bias U(+-1/sqrt in)
//   lin.forward(x.data(), rows, y.data());             // y = dequant(Xq Wq^T) + b, context kept
//   lin.backward(dy.data(), dx.data());                // lin.dW, lin.db filled; dx may be null
//
// What is computed, bit for bit in forward (the CUDA layer gives the same bits):
//   Xq, s_x = quantize_int8_ref(X, rows, in, per_row = x_per_row)    s = max(amax / 127, 1e-8)
//   Wq, s_w = quantize_int8_ref(W, out, in, per_row = w_per_channel)
//   Y[i][j] = ((float(sum_k Xq[i][k] Wq[j][k]) * s_x[i or 0]) * s_w[j or 0]) + b[j]
// and in backward, with x~ = float(Xq) * s_x and w~ = float(Wq) * s_w rounded once (linear_backward_ref.h):
//   dX = dY w~ (rows x in), dW = dY^T x~ (out x in), db = column sums of dY; float32 sums in an order of
//   their own, so the CUDA layer agrees within linear_backward_tol, not bit for bit.
#pragma once

#include <cstdint>
#include <vector>

namespace qs {

struct Int8LinearConfig {
  bool x_per_row = false;     // activations: one scale per tensor (the seed's default) or per row
  bool w_per_channel = true;  // weights: one scale per output channel or per tensor
};

// W ~ U(-1/sqrt(in), 1/sqrt(in)) (torch's kaiming_uniform_ with a = sqrt(5): gain sqrt(2 / (1 + 5)), bound
// gain * sqrt(3 / in)), b ~ U(-1/sqrt(in), 1/sqrt(in)), from the counter-based generator keyed by seed.
void int8_linear_init(int in, int out, uint64_t seed, float* W, float* b);

class Int8Linear {
 public:
  // Throws std::invalid_argument for sizes outside 1..65536.
  Int8Linear(int in, int out, uint64_t seed = 1, Int8LinearConfig cfg = {});

  int in() const { return in_; }
  int out() const { return out_; }
  const Int8LinearConfig& config() const { return cfg_; }

  std::vector<float> W, b;     // out x in row-major, out
  std::vector<float> dW, db;   // gradients of the last backward

  // x: rows x in; y: rows x out. Keeps the context for backward. rows >= 1.
  void forward(const float* x, int rows, float* y, int threads = 1);
  // dy: rows x out of the last forward; dx: rows x in (null: not computed). Fills dW and db.
  // Throws std::logic_error without a forward before it.
  void backward(const float* dy, float* dx);

  // The saved context of the last forward.
  const std::vector<int8_t>& x_codes() const { return xq_; }
  const std::vector<float>& x_scales() const { return sx_; }
  const std::vector<int8_t>& w_codes() const { return wq_; }
  const std::vector<float>& w_scales() const { return sw_; }
  int rows() const { return rows_; }

 private:
  int in_, out_;
  Int8LinearConfig cfg_;
  int rows_ = 0;
  std::vector<int8_t> xq_, wq_;
  std::vector<float> sx_, sw_;
};

}  // namespace qs
