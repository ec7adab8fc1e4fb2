// Tests of the synthetic tensors: deterministic per (seed, index) for any thread count, the moments of
// each distribution within statistical bounds, outliers confined to a few rows, bad specs refused.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "quant/synthetic.h"
#include "test_files.h"

TEST(Synthetic, ThreadsAgree) {
  for (qs::Distribution d : qs::all_distributions()) {
    SCOPED_TRACE(std::string(qs::distribution_name(d)));
    qs::SyntheticSpec s;
    s.dist = d;
    s.n = 300'000;
    s.cols = 1000;
    s.seed = 9;
    const auto a = qs::make_synthetic(s, 1), b = qs::make_synthetic(s, 3);
    ASSERT_EQ(a.size(), s.n);
    EXPECT_TRUE(a == b);
    s.seed = 10;
    EXPECT_TRUE(qs::make_synthetic(s, 2) != a);
    std::size_t nonfinite = 0;
    for (float v : a) nonfinite += std::isfinite(v) ? 0 : 1;
    EXPECT_EQ(nonfinite, 0u);
  }
}

// Mean and variance within 6 standard errors of the distribution's values.
TEST(Synthetic, Moments) {
  struct Case {
    const char* dist;
    double sigma, variance;  // the scale, and the variance of the distribution with that scale
  };
  const Case cases[] = {{"normal", 2.0, 4.0},
                        {"laplace", 1.5, 2 * 1.5 * 1.5},
                        {"uniform", 3.0, 9.0 / 3.0},
                        {"student-t", 1.0, 5.0 / 3.0}};  // dof 5
  for (const Case& c : cases) {
    SCOPED_TRACE(c.dist);
    qs::SyntheticSpec s;
    s.dist = qs::parse_distribution(c.dist);
    s.n = 1 << 20;
    s.sigma = c.sigma;
    s.dof = 5;
    const auto x = qs::make_synthetic(s, 2);
    double sum = 0, sum2 = 0;
    for (float v : x) sum += v, sum2 += double(v) * v;
    const double n = double(x.size()), mean = sum / n, var = sum2 / n - mean * mean;
    EXPECT_LT(std::abs(mean), 6 * std::sqrt(c.variance / n));
    // Student-t with 5 dof has a large fourth moment: a looser bound on its variance.
    const double tol = std::string(c.dist) == "student-t" ? 0.05 : 0.01;
    EXPECT_LT(std::abs(var / c.variance - 1), tol);
  }
}

TEST(Synthetic, OutliersInFewRows) {
  qs::SyntheticSpec s;
  s.dist = qs::Distribution::Outliers;
  s.n = 1 << 20;
  s.cols = 1024;
  s.outlier_rows = 4;
  s.outlier_fraction = 1e-3;
  s.outlier_scale = 100;
  const auto x = qs::make_synthetic(s, 2);
  std::size_t rowsWithBig = 0, big = 0;
  for (std::size_t r = 0; r < 1024; ++r) {
    std::size_t inRow = 0;
    for (std::size_t c = 0; c < 1024; ++c) inRow += std::abs(x[r * 1024 + c]) > 8 ? 1 : 0;  // > 8 sigma of the bulk
    rowsWithBig += inRow ? 1 : 0;
    big += inRow;
  }
  EXPECT_EQ(rowsWithBig, 4u);
  // About fraction * n outliers, nearly all beyond 8 sigma at scale 100.
  EXPECT_GT(big, 700u);
  EXPECT_LT(big, 1300u);
}

TEST(Synthetic, BadSpecsRefused) {
  struct Case {
    const char* name;
    std::size_t n, cols;
    double sigma;
  };
  const Case cases[] = {{"empty", 0, 1, 1.0},
                        {"ragged", 1000, 3, 1.0},
                        {"zero cols", 1000, 0, 1.0},
                        {"sigma 0", 1000, 10, 0.0},
                        {"sigma nan", 1000, 10, std::nan("")}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    qs::SyntheticSpec s;
    s.n = c.n;
    s.cols = c.cols;
    s.sigma = c.sigma;
    EXPECT_THROW(qs::make_synthetic(s), std::invalid_argument);
  }
}

TEST(Synthetic, Names) {
  for (qs::Distribution d : qs::all_distributions()) EXPECT_EQ(qs::parse_distribution(qs::distribution_name(d)), d);
  EXPECT_THROW(qs::parse_distribution("gauss"), std::invalid_argument);
  qs::SyntheticSpec s;
  EXPECT_TRUE(qs_test::contains(qs::describe(s), "1048576 values = 1024 x 1024")) << qs::describe(s);
}

TEST(Synthetic, CancelReturnsNothing) {
  qs::SyntheticSpec s;
  s.n = 1 << 22;
  const auto x = qs::make_synthetic(s, 1, [](std::size_t, std::size_t) { return false; });
  EXPECT_TRUE(x.empty());
}
