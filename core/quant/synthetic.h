// Synthetic tensors for the explorer and the demos: normal, Laplace, uniform, Student-t and normal
// with a few large outliers (the shape of LLM weights). Element i is a pure function of (seed, i), so
// the same spec gives the same tensor on every machine and for any thread count.
// Exercise: tests/tst_synthetic.cpp; `quantscope` setup dock → Data → Synthetic.
//
//   qs::SyntheticSpec spec{.dist = qs::Distribution::Outliers, .n = 1 << 20, .seed = 7};
//   std::vector<float> x = qs::make_synthetic(spec);
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/parallel.h"

namespace qs {

enum class Distribution { Normal, Laplace, Uniform, StudentT, Outliers };

struct SyntheticSpec {
  Distribution dist = Distribution::Normal;
  std::size_t n = 1 << 20;      // elements, laid out as rows x cols (rows = n / cols)
  std::size_t cols = 1024;      // last-axis length; n must be a multiple of it (channels = rows)
  uint64_t seed = 1;
  double sigma = 1.0;           // scale: std-dev (normal, outliers' bulk), b (Laplace), half-width (uniform)
  double dof = 3.0;             // Student-t degrees of freedom (> 0)
  double outlier_fraction = 1e-3;  // Outliers: share of elements drawn from the wide component
  double outlier_scale = 50.0;     // Outliers: their std-dev in units of sigma
  // Outliers concentrate in a few channels (rows) as in LLM activations/weights: this many rows hold
  // them (0 = spread over the whole tensor).
  std::size_t outlier_rows = 4;
};

// Names used by the GUI, the presets and settings.json: "normal", "laplace", "uniform", "student-t",
// "outliers". parse_distribution throws std::invalid_argument for anything else.
std::string_view distribution_name(Distribution d);
Distribution parse_distribution(std::string_view name);
std::vector<Distribution> all_distributions();

// Throws std::invalid_argument for n == 0, cols == 0, n % cols != 0, sigma <= 0, dof <= 0, or a
// fraction outside [0, 1]. `progress` may cancel: the vector is then returned empty.
std::vector<float> make_synthetic(const SyntheticSpec& spec, int threads = 1, const ProgressFn& progress = {});

// One-line description: "normal(σ=1), 1048576 values = 1024 x 1024, seed 1".
std::string describe(const SyntheticSpec& spec);

}  // namespace qs
