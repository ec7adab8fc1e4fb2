// Oracle for the quantized linear layer's backward pass: plain loops over float64, dequantizing the codes
// to float32 exactly as the kernels do. See linear_backward_ref.h.
#include "gemm/linear_backward_ref.h"

#include <cmath>
#include <cstddef>
#include <stdexcept>

namespace qs {

LinearGradRef linear_backward_ref(const float* dY, int M, int N, const int8_t* Xq, const float* s_x, bool s_x_per_row,
                                  const int8_t* Wq, const float* s_w, bool s_w_per_row, int K) {
  if (M <= 0 || N <= 0 || K <= 0) throw std::invalid_argument("linear_backward_ref: sizes must be positive");
  if (!dY || !Xq || !s_x || !Wq || !s_w) throw std::invalid_argument("linear_backward_ref: null pointer");
  const std::size_t MK = std::size_t(M) * K, NK = std::size_t(N) * K;
  std::vector<float> x(MK), w(NK);
  for (std::size_t i = 0; i < MK; ++i) x[i] = float(Xq[i]) * s_x[s_x_per_row ? i / K : 0];
  for (std::size_t i = 0; i < NK; ++i) w[i] = float(Wq[i]) * s_w[s_w_per_row ? i / K : 0];
  LinearGradRef g;
  g.dx.assign(MK, 0.0);
  g.dx_mag.assign(MK, 0.0);
  g.dw.assign(NK, 0.0);
  g.dw_mag.assign(NK, 0.0);
  g.db.assign(std::size_t(N), 0.0);
  g.db_mag.assign(std::size_t(N), 0.0);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      const double d = dY[std::size_t(i) * N + j];
      g.db[j] += d;
      g.db_mag[j] += std::fabs(d);
      const float* wr = &w[std::size_t(j) * K];
      const float* xr = &x[std::size_t(i) * K];
      double* dx = &g.dx[std::size_t(i) * K];
      double* dxm = &g.dx_mag[std::size_t(i) * K];
      double* dw = &g.dw[std::size_t(j) * K];
      double* dwm = &g.dw_mag[std::size_t(j) * K];
      for (int k = 0; k < K; ++k) {
        const double a = d * double(wr[k]), b = d * double(xr[k]);  // exact: 24 x 24 bits
        dx[k] += a;
        dxm[k] += std::fabs(a);
        dw[k] += b;
        dwm[k] += std::fabs(b);
      }
    }
  return g;
}

double linear_backward_tol(double ref, double mag, int n, bool fp16_out) {
  double tol = (double(n) + kLinearBwdExtraRoundings) * kF32UnitRoundoff * mag;
  if (fp16_out) tol += std::fmax(kF16UnitRoundoff * (std::fabs(ref) + tol), kF16HalfMinSubnormal);
  return tol;
}

}  // namespace qs
