// Observers that pick a range for activations from batches (docs/DESIGN.md, Observers): MinMax,
// MovingAverageMinMax, histogram percentile, MSE-optimal clipping search, and delayed scaling from an amax
// history.
// Exercise: tests/tst_observer.cpp.
//
//   qs::MovingAverageMinMaxObserver obs(0.01);
//   for (auto& batch : batches) obs.observe(batch.data(), batch.size());
//   float s = qs::amax_scale(fmt, obs.amax());
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <random>
#include <vector>

#include "format/format.h"

namespace qs {

class Observer {
 public:
  virtual ~Observer() = default;
  // Non-finite values are ignored.
  virtual void observe(const float* x, std::size_t n) = 0;
  virtual double min() const = 0;
  virtual double max() const = 0;
  // The clipping magnitude that sets a symmetric scale (s = amax / max_finite).
  virtual double amax() const { return std::max(std::abs(min()), std::abs(max())); }
};

// torch.ao.quantization.MinMaxObserver: running min and max.
class MinMaxObserver : public Observer {
 public:
  void observe(const float* x, std::size_t n) override;
  double min() const override { return lo_; }
  double max() const override { return hi_; }
 protected:
  double lo_ = 0, hi_ = 0;
  bool seen_ = false;
};

// torch.ao.quantization.MovingAverageMinMaxObserver: the first batch sets the range, then
// min += c (batch_min - min), max += c (batch_max - max).
class MovingAverageMinMaxObserver : public MinMaxObserver {
 public:
  explicit MovingAverageMinMaxObserver(double averaging_constant = 0.01) : c_(averaging_constant) {}
  void observe(const float* x, std::size_t n) override;
 private:
  double c_;
};

// A histogram of |x| (`bins` equal bins over [0, running max], re-binned when the max grows); amax()
// is the `percentile` (0-100) of |x|, interpolated linearly inside its bin.
class HistogramPercentileObserver : public Observer {
 public:
  explicit HistogramPercentileObserver(double percentile = 99.99, int bins = 2048);
  void observe(const float* x, std::size_t n) override;
  double min() const override { return -amax(); }
  double max() const override { return amax(); }
  double amax() const override;
  uint64_t count() const { return total_; }
 private:
  double pct_, top_ = 0;
  std::vector<uint64_t> hist_;
  uint64_t total_ = 0;
};

// Searches the clipping value c in (0, amax] that minimises the MSE of quantizing the observed data
// (a seeded reservoir of at most `sample` values) with s = c / max_finite: a coarse grid of 100
// fractions of amax, then 100 finer steps around the best.
class MseObserver : public Observer {
 public:
  explicit MseObserver(Format format, std::size_t sample = 1 << 20, uint64_t seed = 1);
  void observe(const float* x, std::size_t n) override;
  double min() const override { return -amax(); }
  double max() const override { return amax(); }
  double amax() const override;  // the best clipping value (computed on demand)
  double mse_at(double clip) const;
 private:
  Format f_;
  std::size_t cap_;
  std::vector<float> reservoir_;
  uint64_t seen_ = 0;
  double amax_ = 0;
  std::mt19937_64 gen_;
};

// Transformer-Engine-style delayed scaling: the amax of each step goes into a history of `length`;
// the scale uses the max of the history (or the most recent value) and a power-of-two margin:
// s = amax_h * 2^margin / max_finite.
class DelayedScaling {
 public:
  enum class Algo { Max, MostRecent };
  explicit DelayedScaling(int length = 16, Algo algo = Algo::Max, int margin = 0);
  void push(double amax);
  double history_amax() const;
  float scale(const Format& f) const;
  const std::deque<double>& history() const { return hist_; }
 private:
  int len_, margin_;
  Algo algo_;
  std::deque<double> hist_;
};

}  // namespace qs
