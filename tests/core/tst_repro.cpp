// train/repro_math.h: the training lab's exp, log and softmax cross-entropy row, which the CPU and the CUDA
// kernels share so that both compute the same bits. Here: accuracy against the C library (within 2 ulp over
// the double range, subnormals and special values included) and the softmax row against a long-double
// reference (loss, gradient, the first-largest rule for hits). The CPU = GPU equality itself runs on the GPU
// machine: `quantscope-cli selftest --backend cuda`, cases train-equal/....
// Run: ninja -C build tst_repro && build/tests/core/tst_repro
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "test_rng.h"
#include "train/repro_math.h"

namespace {

// Distance in ulps between two finite doubles of the same sign (or both zero).
double ulps(double got, double want) {
  if (got == want) return 0;
  const double u = std::nextafter(std::fabs(want), INFINITY) - std::fabs(want);
  return std::fabs(got - want) / u;
}

TEST(Repro, ExpWithin2UlpOfTheLibrary) {
  Rng rng = Rng::from_tag("repro-exp");
  double worst = 0;
  for (int i = 0; i < 400000; ++i) {
    const double x = i % 4 == 0 ? rng.between(-1, 1) : i % 4 == 1 ? rng.between(-40, 5) : rng.between(-708, 709.7);
    const double d = ulps(qs::repro_exp(x), std::exp(x));
    worst = std::max(worst, d);
    if (d > 2) FAIL() << "exp(" << x << ") = " << qs::repro_exp(x) << ", the library gives " << std::exp(x);
  }
  for (double x : {0.0, -0.0, 1.0, -1.0, 0.5 * M_LN2, -0.5 * M_LN2, 709.0, -708.0, 1e-300, -1e-300})
    EXPECT_LE(ulps(qs::repro_exp(x), std::exp(x)), 2) << x;
  EXPECT_EQ(qs::repro_exp(0.0), 1.0);
  EXPECT_EQ(qs::repro_exp(710.0), INFINITY);
  EXPECT_EQ(qs::repro_exp(INFINITY), INFINITY);
  EXPECT_EQ(qs::repro_exp(-709.0), 0.0);  // below 2^-1021: flushed (no float derived from it can see it)
  EXPECT_EQ(qs::repro_exp(-INFINITY), 0.0);
  EXPECT_TRUE(std::isnan(qs::repro_exp(NAN)));
  RecordProperty("worst_exp_ulps", std::to_string(worst));
}

TEST(Repro, LogWithin2UlpOfTheLibrary) {
  Rng rng = Rng::from_tag("repro-log");
  for (int i = 0; i < 400000; ++i) {
    double x;
    if (i % 3 == 0) x = rng.between(0.5, 2.0);  // around 1, where log is smallest
    else if (i % 3 == 1) x = rng.between(1.0, 10.0);  // softmax sums of 10 classes
    else {  // any positive double, subnormals included
      const uint64_t bits = rng.next() & 0x7fefffffffffffffULL;
      std::memcpy(&x, &bits, 8);
      if (!(x > 0)) x = 1e-310;
    }
    const double got = qs::repro_log(x), want = std::log(x);
    if (ulps(got, want) > 2) FAIL() << "log(" << x << ") = " << got << ", the library gives " << want;
  }
  EXPECT_EQ(qs::repro_log(1.0), 0.0);
  EXPECT_LE(ulps(qs::repro_log(std::numeric_limits<double>::denorm_min()), std::log(std::numeric_limits<double>::denorm_min())), 2);
  EXPECT_LE(ulps(qs::repro_log(std::numeric_limits<double>::max()), std::log(std::numeric_limits<double>::max())), 2);
  EXPECT_EQ(qs::repro_log(0.0), -INFINITY);
  EXPECT_EQ(qs::repro_log(INFINITY), INFINITY);
  EXPECT_TRUE(std::isnan(qs::repro_log(-1.0)));
  EXPECT_TRUE(std::isnan(qs::repro_log(NAN)));
}

TEST(Repro, SoftmaxRowAgainstLongDouble) {
  Rng rng = Rng::from_tag("repro-softmax");
  const float invB = 1.0f / 64.0f;
  for (int t = 0; t < 2000; ++t) {
    const int C = 1 + t % 12, label = t % C;
    std::vector<float> z(static_cast<std::size_t>(C)), dz(static_cast<std::size_t>(C));
    const double spread = t % 3 == 0 ? 50.0 : 5.0;
    for (float& v : z) v = float(rng.between(-spread, spread));
    bool hit = false;
    const double loss = qs::softmax_ce_row(z.data(), C, label, invB, dz.data(), &hit);
    long double zmax = z[0];
    int arg = 0;
    for (int j = 1; j < C; ++j)
      if (z[std::size_t(j)] > zmax) zmax = z[std::size_t(j)], arg = j;
    long double sum = 0;
    for (float v : z) sum += std::exp((long double)v - zmax);
    const long double lse = zmax + std::log(sum);
    ASSERT_NEAR(loss, double(lse - z[std::size_t(label)]), 1e-12 * (1 + std::fabs(double(lse)))) << t;
    ASSERT_EQ(hit, arg == label) << t;
    for (int j = 0; j < C; ++j) {
      const double p = double(std::exp((long double)z[std::size_t(j)] - lse));
      const float want = float(p - (j == label ? 1.0 : 0.0)) * invB;
      // p = e^(z - lse) carries lse's rounding (an ulp of |lse|, as in any double softmax) as an absolute error.
      const double tol = 1e-6 * std::fabs(want) + 4 * std::numeric_limits<double>::epsilon() * (1 + std::fabs(double(lse))) * invB;
      ASSERT_NEAR(dz[std::size_t(j)], want, tol) << t << " " << j;
    }
  }
  // Ties: the first largest logit is the prediction (as std::max_element and the GPU's argmax).
  const float tie[] = {1.0f, 3.0f, 3.0f};
  bool hit = true;
  qs::softmax_ce_row(tie, 3, 2, 1.0f, nullptr, &hit);
  EXPECT_FALSE(hit);
  qs::softmax_ce_row(tie, 3, 1, 1.0f, nullptr, &hit);
  EXPECT_TRUE(hit);
  // A NaN logit makes the loss NaN (the lab reports divergence) instead of a finite lie.
  const float bad[] = {0.0f, NAN, 1.0f};
  EXPECT_TRUE(std::isnan(qs::softmax_ce_row(bad, 3, 0, 1.0f, nullptr, &hit)));
}

}  // namespace
