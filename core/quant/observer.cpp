// Observers: running ranges, a re-binning |x| histogram, an MSE clipping search and delayed scaling.
#include "quant/observer.h"

#include <algorithm>
#include <cmath>

#include "format/encode_simd.h"
#include "quant/scheme.h"

namespace qs {

namespace {
bool batch_range(const float* x, std::size_t n, double& lo, double& hi) {
  bool any = false;
  for (std::size_t i = 0; i < n; ++i) {
    const double v = x[i];
    if (!std::isfinite(v)) continue;
    lo = any ? std::min(lo, v) : v;
    hi = any ? std::max(hi, v) : v;
    any = true;
  }
  return any;
}
}  // namespace

void MinMaxObserver::observe(const float* x, std::size_t n) {
  double lo = 0, hi = 0;
  if (!batch_range(x, n, lo, hi)) return;
  lo_ = seen_ ? std::min(lo_, lo) : lo;
  hi_ = seen_ ? std::max(hi_, hi) : hi;
  seen_ = true;
}

void MovingAverageMinMaxObserver::observe(const float* x, std::size_t n) {
  double lo = 0, hi = 0;
  if (!batch_range(x, n, lo, hi)) return;
  if (!seen_) {
    lo_ = lo;
    hi_ = hi;
    seen_ = true;
    return;
  }
  lo_ = lo_ + c_ * (lo - lo_);
  hi_ = hi_ + c_ * (hi - hi_);
}

HistogramPercentileObserver::HistogramPercentileObserver(double percentile, int bins)
    : pct_(std::clamp(percentile, 0.0, 100.0)), hist_(std::size_t(std::max(bins, 1)), 0) {}

void HistogramPercentileObserver::observe(const float* x, std::size_t n) {
  double bmax = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (std::isfinite(x[i])) bmax = std::max(bmax, double(std::fabs(x[i])));
  const std::size_t B = hist_.size();
  if (bmax > top_) {
    // Re-bin: each old bin's count moves to the new bin that holds the old bin's centre.
    std::vector<uint64_t> h(B, 0);
    if (top_ > 0)
      for (std::size_t i = 0; i < B; ++i) {
        if (!hist_[i]) continue;
        const double centre = (double(i) + 0.5) * top_ / double(B);
        h[std::min(B - 1, std::size_t(centre / bmax * double(B)))] += hist_[i];
      }
    hist_.swap(h);
    top_ = bmax;
  }
  if (top_ == 0) {  // all zeros so far: they sit in bin 0
    for (std::size_t i = 0; i < n; ++i)
      if (x[i] == 0) hist_[0]++, ++total_;
    return;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) continue;
    const double a = std::fabs(x[i]);
    hist_[std::min(B - 1, std::size_t(a / top_ * double(B)))]++;
    ++total_;
  }
}

double HistogramPercentileObserver::amax() const {
  if (total_ == 0 || top_ == 0) return 0.0;
  const double target = pct_ / 100.0 * double(total_);
  const std::size_t B = hist_.size();
  double cum = 0;
  for (std::size_t i = 0; i < B; ++i) {
    const double next = cum + double(hist_[i]);
    if (next >= target && hist_[i] > 0) {
      const double frac = (target - cum) / double(hist_[i]);
      return (double(i) + std::clamp(frac, 0.0, 1.0)) * top_ / double(B);
    }
    cum = next;
  }
  return top_;
}

MseObserver::MseObserver(Format format, std::size_t sample, uint64_t seed)
    : f_(std::move(format)), cap_(std::max<std::size_t>(sample, 1)), gen_(seed) {}

void MseObserver::observe(const float* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) continue;
    amax_ = std::max(amax_, double(std::fabs(x[i])));
    ++seen_;
    if (reservoir_.size() < cap_) {
      reservoir_.push_back(x[i]);
    } else {  // reservoir sampling keeps a uniform sample of everything seen
      const uint64_t j = std::uniform_int_distribution<uint64_t>(0, seen_ - 1)(gen_);
      if (j < cap_) reservoir_[j] = x[i];
    }
  }
}

double MseObserver::mse_at(double clip) const {
  if (reservoir_.empty() || !(clip > 0)) return 0.0;
  std::vector<float> y(reservoir_.size());
  EncodeJob job;
  job.x = reservoir_.data();
  job.n = reservoir_.size();
  job.scale = amax_scale(f_, clip);
  job.values = y.data();
  encode_f32(f_, EncodeOptions{}, job);
  double se = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double e = double(reservoir_[i]) - double(y[i]);
    se += e * e;
  }
  return se / double(y.size());
}

double MseObserver::amax() const {
  if (amax_ == 0) return 0.0;
  double best = amax_, best_mse = mse_at(amax_);
  for (int k = 1; k < 100; ++k) {
    const double c = amax_ * k / 100.0;
    const double m = mse_at(c);
    if (m < best_mse) best_mse = m, best = c;
  }
  const double step = amax_ / 100.0;
  const double lo = std::max(step / 100.0, best - step);
  for (int k = 0; k <= 100; ++k) {
    const double c = std::min(amax_, lo + (2 * step) * k / 100.0);
    const double m = mse_at(c);
    if (m < best_mse) best_mse = m, best = c;
  }
  return best;
}

DelayedScaling::DelayedScaling(int length, Algo algo, int margin)
    : len_(std::max(length, 1)), margin_(margin), algo_(algo) {}

void DelayedScaling::push(double amax) {
  if (!std::isfinite(amax)) return;  // a step with inf/NaN does not poison the history
  hist_.push_back(std::fabs(amax));
  while (int(hist_.size()) > len_) hist_.pop_front();
}

double DelayedScaling::history_amax() const {
  if (hist_.empty()) return 0.0;
  if (algo_ == Algo::MostRecent) return hist_.back();
  return *std::max_element(hist_.begin(), hist_.end());
}

float DelayedScaling::scale(const Format& f) const {
  return amax_scale(f, std::ldexp(history_amax(), margin_));
}

}  // namespace qs
