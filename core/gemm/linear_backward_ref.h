// The gradients of the quantized linear layer Y = dequant(X_q) * dequant(W_q)^T + b, computed exactly
// (float64 sums of the float32 terms) as the oracle for the CUDA backward kernels, with the tolerance they
// are held to. Exercise: `quantscope-cli selftest --backend cuda` (cases linear-bwd/...).
//
//   qs::LinearGradRef g = qs::linear_backward_ref(dY, M, N, Xq, sx, true, Wq, sw, true, K);
//   bool ok = std::fabs(got - g.dx[i]) <= qs::linear_backward_tol(g.dx[i], g.dx_mag[i], N, false);
//
// Shapes and meaning: X_q is M x K int8 with scales s_x (per row, or one), W_q is N x K int8 (out x in)
// with scales s_w (per output row, or one), dY is M x N. The dequantized operands are float32 products
// x = float(q) * s, rounded once (what the kernels compute from the codes on the fly). Then
//   dX[i][k] = sum_j dY[i][j] * w[j][k]   (M x K, the layout of X)
//   dW[j][k] = sum_i dY[i][j] * x[i][k]   (N x K, the layout of W_q)
//   db[j]    = sum_i dY[i][j]             (N)
#pragma once

#include <cstdint>
#include <vector>

namespace qs {

struct LinearGradRef {
  std::vector<double> dx, dw, db;              // the exact sums of the float32 terms
  std::vector<double> dx_mag, dw_mag, db_mag;  // the sums of their magnitudes (for linear_backward_tol)
};

LinearGradRef linear_backward_ref(const float* dY, int M, int N, const int8_t* Xq, const float* s_x, bool s_x_per_row,
                                  const int8_t* Wq, const float* s_w, bool s_w_per_row, int K);

// Float32 accumulation of n terms in any order, each product or addition rounded once (FMA or not):
// |error| <= (n + kLinearBwdExtraRoundings) * 2^-24 * sum |terms|. A float16 output adds its own rounding,
// half an ulp: 2^-11 * |value| for normal values, 2^-25 absolute in the subnormal range.
inline constexpr double kLinearBwdExtraRoundings = 2;
inline constexpr double kF32UnitRoundoff = 0x1p-24, kF16UnitRoundoff = 0x1p-11, kF16HalfMinSubnormal = 0x1p-25;
double linear_backward_tol(double ref, double mag, int n, bool fp16_out);

}  // namespace qs
