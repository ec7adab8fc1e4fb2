// Int8Linear (core/train/int8_linear.h), the CPU reference of the CUDA trainable int8 layer: forward bit for bit
// equal to quantizing by hand (quantize_int8_ref) and the scalar GEMM oracle (gemm_int8_ref + dequant_ref) in
// every scale mode; backward within linear_backward_tol of the exact sums (linear_backward_ref); dX and dW
// against central finite differences of the dequantized forward (in double); the seed's initialisation
// bounds; bad input. The CUDA layer is checked against this one by `selftest --backend cuda` (int8-linear/...).
// Run: ninja -C build tst_int8_linear && build/tests/core/tst_int8_linear
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "gemm/gemm.h"
#include "gemm/linear_backward_ref.h"
#include "quant/int8_quant.h"
#include "test_rng.h"
#include "train/int8_linear.h"

namespace {

struct Mode {
  bool x_per_row, w_per_channel;
};
const Mode kModes[] = {{false, true}, {true, true}, {false, false}, {true, false}};
std::string mode_name(const Mode& m) {
  return std::string(m.x_per_row ? "x-row" : "x-tensor") + "/" + (m.w_per_channel ? "w-channel" : "w-tensor");
}

std::vector<float> random_values(Rng& rng, std::size_t n, double mag) {
  std::vector<float> v(n);
  for (auto& x : v) x = float(rng.between(-mag, mag));
  return v;
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

TEST(Int8Linear, ForwardEqualsQuantizeByHandAndTheOracle) {
  const int shapes[][3] = {{1, 1, 1}, {3, 17, 5}, {16, 64, 48}, {37, 100, 13}, {128, 784, 256}};
  for (const Mode& m : kModes)
    for (const auto& s : shapes) {
      const int R = s[0], I = s[1], O = s[2];
      const std::string tag = mode_name(m) + " " + std::to_string(R) + "x" + std::to_string(I) + "x" + std::to_string(O);
      Rng rng = Rng::from_tag(tag.c_str());
      qs::Int8Linear lin(I, O, 7, {m.x_per_row, m.w_per_channel});
      std::vector<float> x = random_values(rng, std::size_t(R) * I, 3.0);
      if (R > 2) for (int k = 0; k < I; ++k) x[std::size_t(2) * I + k] *= 0.01f;  // a row of another magnitude
      std::vector<float> y(std::size_t(R) * O);
      lin.forward(x.data(), R, y.data());

      std::vector<int8_t> xq(x.size()), wq(lin.W.size());
      std::vector<float> sx(m.x_per_row ? R : 1), sw(m.w_per_channel ? O : 1);
      qs::quantize_int8_ref(x.data(), R, I, m.x_per_row, xq.data(), sx.data());
      qs::quantize_int8_ref(lin.W.data(), O, I, m.w_per_channel, wq.data(), sw.data());
      ASSERT_EQ(xq, lin.x_codes()) << tag;
      ASSERT_EQ(wq, lin.w_codes()) << tag;
      ASSERT_EQ(sx, lin.x_scales()) << tag;
      ASSERT_EQ(sw, lin.w_scales()) << tag;
      std::vector<int8_t> wt(std::size_t(I) * O);  // K x N for the oracle
      for (int j = 0; j < O; ++j)
        for (int k = 0; k < I; ++k) wt[std::size_t(k) * O + j] = wq[std::size_t(j) * I + k];
      std::vector<int32_t> acc(std::size_t(R) * O);
      qs::gemm_int8_ref(xq.data(), wt.data(), acc.data(), R, I, O);
      std::vector<float> want(y.size());
      qs::dequant_ref(acc.data(), R, O, 0, qs::Dequant{sx, sw, lin.b}, want.data());
      for (std::size_t i = 0; i < y.size(); ++i)
        ASSERT_EQ(bits(y[i]), bits(want[i])) << tag << " element " << i << ": " << y[i] << " vs " << want[i];
      // And the layer is close to the float product: |error| within the quantization's bound.
      double worst = 0;
      for (int r = 0; r < R; ++r)
        for (int j = 0; j < O; ++j) {
          double exact = lin.b[j];
          for (int k = 0; k < I; ++k) exact += double(x[std::size_t(r) * I + k]) * lin.W[std::size_t(j) * I + k];
          worst = std::max(worst, std::fabs(exact - y[std::size_t(r) * O + j]));
        }
      // Each product's error is at most |x| s_w / 2 + |w| s_x / 2 + s_x s_w / 4 with |x| <= 3, |w| <= 1/sqrt(I).
      const double sxm = *std::max_element(sx.begin(), sx.end()), swm = *std::max_element(sw.begin(), sw.end());
      const double bound = I * (3.0 * swm / 2 + sxm / std::sqrt(double(I)) / 2 + sxm * swm / 4) + 1e-5;
      EXPECT_LE(worst, bound) << tag;
    }
}

TEST(Int8Linear, BackwardWithinToleranceOfTheExactSums) {
  const int shapes[][3] = {{1, 1, 1}, {5, 33, 7}, {64, 128, 10}, {128, 256, 128}};
  for (const Mode& m : kModes)
    for (const auto& s : shapes) {
      const int R = s[0], I = s[1], O = s[2];
      const std::string tag = mode_name(m) + " " + std::to_string(R) + "x" + std::to_string(I) + "x" + std::to_string(O);
      Rng rng = Rng::from_tag(("bwd " + tag).c_str());
      qs::Int8Linear lin(I, O, 3, {m.x_per_row, m.w_per_channel});
      const std::vector<float> x = random_values(rng, std::size_t(R) * I, 2.0), dy = random_values(rng, std::size_t(R) * O, 0.1);
      std::vector<float> y(std::size_t(R) * O), dx(std::size_t(R) * I);
      lin.forward(x.data(), R, y.data());
      lin.backward(dy.data(), dx.data());
      const qs::LinearGradRef g =
          qs::linear_backward_ref(dy.data(), R, O, lin.x_codes().data(), lin.x_scales().data(), m.x_per_row,
                                  lin.w_codes().data(), lin.w_scales().data(), m.w_per_channel, I);
      for (std::size_t i = 0; i < dx.size(); ++i)
        ASSERT_LE(std::fabs(dx[i] - g.dx[i]), qs::linear_backward_tol(g.dx[i], g.dx_mag[i], O, false)) << tag << " dx " << i;
      for (std::size_t i = 0; i < lin.dW.size(); ++i)
        ASSERT_LE(std::fabs(lin.dW[i] - g.dw[i]), qs::linear_backward_tol(g.dw[i], g.dw_mag[i], R, false)) << tag << " dW " << i;
      for (std::size_t j = 0; j < lin.db.size(); ++j)
        ASSERT_LE(std::fabs(lin.db[j] - g.db[j]), qs::linear_backward_tol(g.db[j], g.db_mag[j], R, false)) << tag << " db " << j;
    }
}

// L = sum_ij G[i][j] * Y[i][j] with Y = x~ w~^T + b evaluated in double on the dequantized operands; its
// central differences in x~ and w~ against dX and dW for dY = G. The forward is linear in each operand, so
// the differences are exact up to the double rounding.
TEST(Int8Linear, GradientsMatchFiniteDifferencesOfTheDequantizedForward) {
  for (const Mode& m : kModes) {
    const int R = 6, I = 20, O = 9;
    const std::string tag = mode_name(m);
    Rng rng = Rng::from_tag(("fd " + tag).c_str());
    qs::Int8Linear lin(I, O, 11, {m.x_per_row, m.w_per_channel});
    const std::vector<float> x = random_values(rng, std::size_t(R) * I, 1.5), G = random_values(rng, std::size_t(R) * O, 1.0);
    std::vector<float> y(std::size_t(R) * O), dx(std::size_t(R) * I);
    lin.forward(x.data(), R, y.data());
    lin.backward(G.data(), dx.data());
    std::vector<double> xd(x.size()), wd(lin.W.size());
    for (int r = 0; r < R; ++r)
      for (int k = 0; k < I; ++k)
        xd[std::size_t(r) * I + k] = double(float(lin.x_codes()[std::size_t(r) * I + k]) * lin.x_scales()[m.x_per_row ? r : 0]);
    for (int j = 0; j < O; ++j)
      for (int k = 0; k < I; ++k)
        wd[std::size_t(j) * I + k] = double(float(lin.w_codes()[std::size_t(j) * I + k]) * lin.w_scales()[m.w_per_channel ? j : 0]);
    auto loss = [&] {
      double L = 0;
      for (int r = 0; r < R; ++r)
        for (int j = 0; j < O; ++j) {
          double yv = lin.b[j];
          for (int k = 0; k < I; ++k) yv += xd[std::size_t(r) * I + k] * wd[std::size_t(j) * I + k];
          L += double(G[std::size_t(r) * O + j]) * yv;
        }
      return L;
    };
    const double h = 1e-3;
    auto fd = [&](std::vector<double>& v, std::size_t i) {
      const double keep = v[i];
      v[i] = keep + h;
      const double up = loss();
      v[i] = keep - h;
      const double down = loss();
      v[i] = keep;
      return (up - down) / (2 * h);
    };
    for (std::size_t i = 0; i < xd.size(); ++i) {
      const double want = fd(xd, i);
      ASSERT_NEAR(dx[i], want, 1e-5 * (1 + std::fabs(want))) << tag << " dX " << i;
    }
    for (std::size_t i = 0; i < wd.size(); ++i) {
      const double want = fd(wd, i);
      ASSERT_NEAR(lin.dW[i], want, 1e-5 * (1 + std::fabs(want))) << tag << " dW " << i;
    }
    for (int j = 0; j < O; ++j) {  // dL/db_j = sum_i G[i][j]
      double want = 0;
      for (int r = 0; r < R; ++r) want += G[std::size_t(r) * O + j];
      ASSERT_NEAR(lin.db[std::size_t(j)], want, 1e-5 * (1 + std::fabs(want))) << tag << " db " << j;
    }
  }
}

TEST(Int8Linear, SeedInitialisation) {
  const int I = 300, O = 200;
  qs::Int8Linear a(I, O, 5), b(I, O, 5), c(I, O, 6);
  EXPECT_EQ(a.W, b.W);
  EXPECT_EQ(a.b, b.b);
  EXPECT_NE(a.W, c.W);
  const double bound = 1.0 / std::sqrt(double(I));
  double sum = 0, sq = 0, top = 0;
  for (float w : a.W) {
    ASSERT_LE(std::fabs(w), bound);
    sum += w;
    sq += double(w) * w;
    top = std::max(top, double(std::fabs(w)));
  }
  const double n = double(a.W.size());
  EXPECT_NEAR(sum / n, 0.0, 4 * bound / std::sqrt(3 * n));        // mean 0, 4 sigma
  EXPECT_NEAR(sq / n, bound * bound / 3, 0.02 * bound * bound);   // variance of U(-bound, bound)
  EXPECT_GT(top, 0.99 * bound);                                  // the whole range is used
  for (float v : a.b) ASSERT_LE(std::fabs(v), bound);
  EXPECT_NE(a.b, std::vector<float>(std::size_t(O), 0.0f));
}

TEST(Int8Linear, BadInput) {
  EXPECT_THROW(qs::Int8Linear(0, 3), std::invalid_argument);
  EXPECT_THROW(qs::Int8Linear(3, 70000), std::invalid_argument);
  qs::Int8Linear lin(4, 2);
  std::vector<float> dy(2), y(2), x(4, 1.0f);
  EXPECT_THROW(lin.backward(dy.data(), nullptr), std::logic_error);
  EXPECT_THROW(lin.forward(x.data(), 0, y.data()), std::invalid_argument);
  // NaN and inf in x: NaN -> code 0, inf -> +-127 (quantize_int8_ref's rule), the output stays finite.
  x = {std::nanf(""), INFINITY, -INFINITY, 1.0f};
  lin.forward(x.data(), 1, y.data());
  EXPECT_EQ(lin.x_codes(), (std::vector<int8_t>{0, 127, -127, 127}));
  EXPECT_TRUE(std::isfinite(y[0]) && std::isfinite(y[1]));
}

}  // namespace
