// CUDA backward pass of the quantized linear layer Y = dequant(X_q) * dequant(W_q)^T + b: dX and dW as
// float32 GEMMs on the dequantized int8 operands (code * scale, rounded once): for float32 gradients the
// operands are dequantized into stream-ordered scratch and cuBLAS SGEMM runs the products; for float16
// gradients (or QS_LINEAR_BWD=fused) tiled kernels dequantize the tiles on the fly in shared memory. db as
// column sums; float32 accumulation, float32 or float16 gradients. Checked against linear_backward_ref (gemm/linear_backward_ref.h) within
// linear_backward_tol. No CUDA types here. Exercise: `quantscope-cli selftest --backend cuda`.
//
//   qs::cuda::LinearBackwardArgs a{.dY = dy, .Xq = xq, .s_x = sx, .Wq = wq, .s_w = sw, .M = M, .N = N, .K = K,
//                                  .dX = dx, .dW = dw, .db = db};
//   qs::cuda::linear_backward_cuda(a);   // host pointers
#pragma once

#include <cstdint>

namespace qs::cuda {

enum class GradType : uint8_t { F32, F16 };  // dY and the gradients: float or float16 bit patterns

// Shapes as in linear_backward_ref.h: dY M x N, X_q M x K (scales s_x: M or 1), W_q N x K (scales s_w: N or
// 1); outputs dX M x K, dW N x K, db N, each optional (nullptr skips it). All row-major.
struct LinearBackwardArgs {
  const void* dY = nullptr;
  GradType type = GradType::F32;
  const int8_t* Xq = nullptr;
  const float* s_x = nullptr;
  bool s_x_per_row = true;
  const int8_t* Wq = nullptr;
  const float* s_w = nullptr;
  bool s_w_per_row = true;
  int M = 0, N = 0, K = 0;
  void* dX = nullptr;
  void* dW = nullptr;
  void* db = nullptr;
};

// Host pointers in and out (copies through the device). Throws std::invalid_argument on bad shapes or
// missing inputs, std::runtime_error on CUDA errors.
void linear_backward_cuda(const LinearBackwardArgs& a);
// Device pointers; `stream` is a cudaStream_t (nullptr: the default stream). Asynchronous (no host wait).
void linear_backward_device(const LinearBackwardArgs& a, void* stream = nullptr);

}  // namespace qs::cuda
