// Synthetic tensors: counter-based uniforms (hash of seed and index) turned into each distribution by
// inversion or Box-Muller, so generation parallelizes without changing a single value.
#include "quant/synthetic.h"

#include <cmath>
#include <cstdio>
#include <numbers>
#include <stdexcept>

#include "format/rng.h"

namespace qs {

namespace {

// Two independent 32-bit draws for element i and stream k, mapped to (0, 1) (never 0 or 1).
inline double uniform01(uint64_t seed, uint64_t i, uint32_t stream) {
  const uint32_t key = stochastic_key(seed ^ (uint64_t(stream) * 0x9e3779b97f4a7c15ull), uint32_t(i >> 32));
  const uint32_t a = hash32(key ^ hash32(uint32_t(i)));
  const uint32_t b = hash32(a ^ 0x85ebca6bu ^ uint32_t(i));
  const uint64_t bits53 = (uint64_t(a) << 21) ^ uint64_t(b >> 11);
  return (double(bits53 & ((1ull << 53) - 1)) + 0.5) * 0x1p-53;
}

inline double standard_normal(uint64_t seed, uint64_t i, uint32_t stream) {
  const double u1 = uniform01(seed, i, stream), u2 = uniform01(seed, i, stream + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

// Student-t by Bailey's polar method; its rejection step draws from fresh streams of the same
// element, so the value still depends only on (seed, index).
double student_t(uint64_t seed, uint64_t i, double nu) {
  for (uint32_t attempt = 0; attempt < 64; ++attempt) {
    const double u = 2.0 * uniform01(seed, i, 10 + 2 * attempt) - 1.0;
    const double v = 2.0 * uniform01(seed, i, 11 + 2 * attempt) - 1.0;
    const double w = u * u + v * v;
    if (w <= 0.0 || w >= 1.0) continue;
    // Bailey (1994): T = U * sqrt(nu (W^(-2/nu) - 1) / W).
    return u * std::sqrt(nu * (std::pow(w, -2.0 / nu) - 1.0) / w);
  }
  return 0.0;  // probability (1 - pi/4)^64 ~ 1e-43
}

}  // namespace

std::string_view distribution_name(Distribution d) {
  switch (d) {
    case Distribution::Normal: return "normal";
    case Distribution::Laplace: return "laplace";
    case Distribution::Uniform: return "uniform";
    case Distribution::StudentT: return "student-t";
    case Distribution::Outliers: return "outliers";
  }
  return "normal";
}

std::vector<Distribution> all_distributions() {
  return {Distribution::Normal, Distribution::Laplace, Distribution::Uniform, Distribution::StudentT,
          Distribution::Outliers};
}

Distribution parse_distribution(std::string_view name) {
  for (Distribution d : all_distributions())
    if (distribution_name(d) == name) return d;
  throw std::invalid_argument("unknown distribution '" + std::string(name) +
                              "' (normal, laplace, uniform, student-t, outliers)");
}

std::vector<float> make_synthetic(const SyntheticSpec& s, int threads, const ProgressFn& progress) {
  if (s.n == 0) throw std::invalid_argument("synthetic data needs at least one value");
  if (s.cols == 0 || s.n % s.cols != 0)
    throw std::invalid_argument("synthetic data: " + std::to_string(s.n) + " values do not fill rows of " +
                                std::to_string(s.cols));
  if (!(s.sigma > 0) || !std::isfinite(s.sigma)) throw std::invalid_argument("synthetic data: sigma must be > 0");
  if (s.dist == Distribution::StudentT && !(s.dof > 0)) throw std::invalid_argument("Student-t: dof must be > 0");
  if (!(s.outlier_fraction >= 0 && s.outlier_fraction <= 1))
    throw std::invalid_argument("outliers: fraction must be within [0, 1]");
  if (!(s.outlier_scale > 0)) throw std::invalid_argument("outliers: scale must be > 0");
  std::vector<float> x(s.n);
  const std::size_t rows = s.n / s.cols;
  const std::size_t hot_rows = std::min(s.outlier_rows, rows);
  // Hot rows spread evenly, so they are not all at the start of the tensor.
  auto is_hot_row = [&](std::size_t r) {
    if (hot_rows == 0) return true;
    const std::size_t stride = rows / hot_rows;
    return r % stride == stride / 2 && r / stride < hot_rows;
  };
  const double hot_share = hot_rows == 0 ? 1.0 : double(rows) / double(hot_rows);
  const double p_hot = std::min(1.0, s.outlier_fraction * hot_share);
  const bool ok = parallel_chunks(
      s.n, 1 << 16, threads,
      [&](std::size_t b, std::size_t e) {
        for (std::size_t i = b; i < e; ++i) {
          double v = 0;
          switch (s.dist) {
            case Distribution::Normal: v = s.sigma * standard_normal(s.seed, i, 0); break;
            case Distribution::Laplace: {
              const double u = uniform01(s.seed, i, 0) - 0.5;
              v = -s.sigma * std::copysign(std::log1p(-2.0 * std::abs(u)), u);
              break;
            }
            case Distribution::Uniform: v = s.sigma * (2.0 * uniform01(s.seed, i, 0) - 1.0); break;
            case Distribution::StudentT: v = s.sigma * student_t(s.seed, i, s.dof); break;
            case Distribution::Outliers: {
              v = s.sigma * standard_normal(s.seed, i, 0);
              if (is_hot_row(i / s.cols) && uniform01(s.seed, i, 5) < p_hot) v *= s.outlier_scale;
              break;
            }
          }
          x[i] = float(v);
        }
      },
      progress);
  if (!ok) return {};
  return x;
}

std::string describe(const SyntheticSpec& s) {
  char buf[160];
  switch (s.dist) {
    case Distribution::StudentT: std::snprintf(buf, sizeof buf, "student-t(ν=%g, scale %g)", s.dof, s.sigma); break;
    case Distribution::Outliers:
      std::snprintf(buf, sizeof buf, "normal(σ=%g) + %g%% outliers ×%g in %zu rows", s.sigma,
                    s.outlier_fraction * 100, s.outlier_scale, s.outlier_rows);
      break;
    default:
      std::snprintf(buf, sizeof buf, "%s(%s=%g)", std::string(distribution_name(s.dist)).c_str(),
                    s.dist == Distribution::Normal ? "σ" : s.dist == Distribution::Laplace ? "b" : "a", s.sigma);
  }
  return std::string(buf) + ", " + std::to_string(s.n) + " values = " + std::to_string(s.n / s.cols) + " x " +
         std::to_string(s.cols) + ", seed " + std::to_string(s.seed);
}

}  // namespace qs
