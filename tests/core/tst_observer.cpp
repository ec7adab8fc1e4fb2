// Observers (core/quant/observer.h) against the PyTorch formulas for the same inputs, computed here:
// MinMax and MovingAverageMinMax ranges and their qparams (symmetric int8 on [-127, 127], affine
// uint8), the histogram percentile (with re-binning), the MSE clipping search and delayed scaling.
// Run: ctest --test-dir build -R tst_observer (GoogleTest; the same rows as the former Qt Test suite, each
// row's name in its failure messages), or build/tests/core/tst_observer --gtest_filter='Observer.MinMax'
#include "test_text.h"
#include "format/format.h"

#include <gtest/gtest.h>

#include "test_rng.h"
#include "format/quantize.h"
#include "quant/observer.h"
#include "quant/scheme.h"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

namespace {

constexpr uint64_t kDataSeed = 0x0b5e7e5eedULL;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr double kU = DBL_EPSILON / 2;  // unit roundoff of double
constexpr double kSigmas = 5.0;         // statistical checks: 5 standard deviations


uint32_t bitsOf(float v) { return std::bit_cast<uint32_t>(v); }

// `count` batches of `size` values: normal * sigma_k + offset, sigma_k varying per batch; with
// `specials`, NaN and +-inf sprinkled in (and one batch of NaN only).
std::vector<std::vector<float>> batches(int count, int size, double offset, uint64_t seed, bool specials) {
  Rng r{seed};
  std::vector<std::vector<float>> out(static_cast<std::size_t>(count));
  for (int b = 0; b < count; ++b) {
    const double sigma = 0.5 + 2.0 * r.open01();
    for (int i = 0; i < size; ++i) out[std::size_t(b)].push_back(static_cast<float>(r.normal() * sigma + offset));
    if (specials) {
      std::vector<float>& v = out[std::size_t(b)];
      v[std::size_t(b) % v.size()] = kNaN;
      v[std::size_t(3 * b + 1) % v.size()] = (b % 2) ? kInf : -kInf;
    }
  }
  if (specials) out.insert(out.begin() + 1, std::vector<float>(7, kNaN));
  return out;
}

// Batch range over finite values; false when there is none (PyTorch's observers see no NaN here).
bool finiteRange(const std::vector<float>& v, float& lo, float& hi) {
  bool any = false;
  for (float x : v) {
    if (!std::isfinite(x)) continue;
    lo = any ? std::min(lo, x) : x;
    hi = any ? std::max(hi, x) : x;
    any = true;
  }
  return any;
}

// Round half to even (torch.round), written out.
float roundHalfEven(float v) {
  const float fl = std::floor(v);
  const float frac = v - fl;
  if (frac > 0.5f) return fl + 1;
  if (frac < 0.5f) return fl;
  return std::fmod(fl, 2.0f) == 0 ? fl : fl + 1;
}

// torch.ao.quantization's _calculate_qparams in float32.
// Symmetric qint8 with quant range [-127, 127]: scale = max(-min_neg, max_pos) / ((127 - -127) / 2).
float torchSymmetricScale(float lo, float hi) {
  const float minNeg = std::min(lo, 0.0f), maxPos = std::max(hi, 0.0f);
  return std::max(-minNeg, maxPos) / (float(127 - (-127)) / 2.0f);
}
// Affine quint8 [0, 255]: scale = max((max_pos - min_neg) / 255, eps), zp = clamp(0 - round(min_neg / scale)).
void torchAffine(float lo, float hi, float& scale, int& zp) {
  const float minNeg = std::min(lo, 0.0f), maxPos = std::max(hi, 0.0f);
  scale = std::max((maxPos - minNeg) / float(255 - 0), FLT_EPSILON);
  zp = int(std::clamp(0.0f - roundHalfEven(minNeg / scale), 0.0f, 255.0f));
}

// The p-th percentile (0-100) of |x| over finite x: the value of rank ceil(p n / 100) (1-based).
double empiricalPercentile(std::vector<double> a, double p) {
  std::sort(a.begin(), a.end());
  const std::size_t rank = std::max<std::size_t>(1, std::size_t(std::ceil(p / 100.0 * double(a.size()))));
  return a[std::min(rank, a.size()) - 1];
}

// MSE of quantizing x with s = clip / max_finite, through encode_ref/decode_ref (nearest, saturate).
long double mseOracle(const qs::Format& f, const std::vector<float>& x, double clip) {
  const float s = std::max(float(clip) / float(f.max_finite), FLT_MIN);
  long double se = 0;
  for (float v : x) {
    const float y = v / s;
    const uint32_t code = qs::encode_ref(f, y, qs::Rounding::Nearest, qs::Overflow::Saturate, 0);
    const float q = static_cast<float>(qs::decode_ref(f, code)) * s;
    const long double e = (long double)v - q;
    se += e * e;
  }
  return se / (long double)x.size();
}

#define EXPECT_NEAR_TOL(got, want, tol)                                                                    \
  EXPECT_LE(std::fabs(double(got) - double(want)), double(tol))                                            \
      << #got << " = " << g17(double(got)) << ", expected " << g17(double(want)) << " (tolerance " << g6(double(tol)) \
      << ")"

}  // namespace

// ---------------------------------------------------------------------------------------------------
// MinMax and MovingAverageMinMax

// Running min and max over finite values of all batches (torch MinMaxObserver), and the qparams
// torch derives from them: symmetric int8 on [-127, 127] is amax_scale(int8, amax); affine uint8 is
// affine_params.
TEST(Observer, MinMax) {
  for (int count : {1, 5})
    for (double offset : {0.0, 3.0, -4.0, 50.0})
      for (bool specials : {false, true}) {
        const int size = 999;
        SCOPED_TRACE(std::to_string(count) + " batches x 999/offset " + g6(offset) + (specials ? "/nan+-inf" : ""));
        const auto data = batches(count, size, offset, kDataSeed, specials);
        qs::MinMaxObserver obs;
        float lo = 0, hi = 0;
        bool seen = false;
        for (const auto& b : data) {
          obs.observe(b.data(), b.size());
          float bl, bh;
          if (!finiteRange(b, bl, bh)) continue;
          lo = seen ? std::min(lo, bl) : bl;
          hi = seen ? std::max(hi, bh) : bh;
          seen = true;
          EXPECT_DOUBLE_EQ(obs.min(), double(lo));
          EXPECT_DOUBLE_EQ(obs.max(), double(hi));
        }
        EXPECT_DOUBLE_EQ(obs.amax(), double(std::max(std::fabs(lo), std::fabs(hi))));
        const qs::Format int8 = qs::parse_format("int8"), uint8 = qs::parse_format("uint8");
        EXPECT_EQ(bitsOf(qs::amax_scale(int8, obs.amax())), bitsOf(torchSymmetricScale(lo, hi)));
        float s = 0, ts = 0;
        int32_t zp = -1;
        int tzp = -2;
        qs::affine_params(uint8, obs.min(), obs.max(), s, zp);
        torchAffine(lo, hi, ts, tzp);
        EXPECT_EQ(bitsOf(s), bitsOf(ts));
        EXPECT_EQ(int(zp), tzp);
        if (lo >= 0) {
          EXPECT_EQ(int(zp), 0);  // all positive: zero point at the bottom
        }
        if (hi <= 0) {
          EXPECT_EQ(int(zp), 255);  // all negative: at the top
        }
      }
}

// torch MovingAverageMinMaxObserver: the first batch sets min and max, then x += c (batch - x) for
// each later batch with finite values; evaluated here as (1 - c) x + c batch in long double. Each
// step rounds at most 3 times relative to max |value| and the recurrence does not amplify errors,
// so the tolerance is 4 u max|value| per batch. The qparams follow the float32 range.
TEST(Observer, MovingAverage) {
  for (double c : {0.01, 0.3, 1.0, 0.0})
    for (int count : {1, 2, 40})
      for (bool specials : {false, true}) {
        SCOPED_TRACE("c=" + g6(c) + "/" + std::to_string(count) + " batches" + (specials ? "/nan+-inf" : ""));
        const auto data = batches(count, 500, 1.0, kDataSeed + 1, specials);
        qs::MovingAverageMinMaxObserver obs(c);
        long double lo = 0, hi = 0, mag = 0;
        bool seen = false;
        int steps = 0;
        float firstLo = 0, firstHi = 0, lastLo = 0, lastHi = 0;
        for (const auto& b : data) {
          obs.observe(b.data(), b.size());
          float bl, bh;
          if (!finiteRange(b, bl, bh)) continue;
          mag = std::max({mag, (long double)std::fabs(bl), (long double)std::fabs(bh)});
          if (!seen) {
            lo = bl, hi = bh, firstLo = bl, firstHi = bh;
            seen = true;
          } else {
            lo = (1 - (long double)c) * lo + (long double)c * bl;
            hi = (1 - (long double)c) * hi + (long double)c * bh;
          }
          lastLo = bl, lastHi = bh;
          ++steps;
          const double tol = 4 * kU * double(mag) * steps;
          EXPECT_NEAR_TOL(obs.min(), lo, tol);
          EXPECT_NEAR_TOL(obs.max(), hi, tol);
        }
        if (c == 0) {  // never moves from the first batch
          EXPECT_DOUBLE_EQ(obs.min(), double(firstLo));
          EXPECT_DOUBLE_EQ(obs.max(), double(firstHi));
        }
        if (c == 1) {  // follows the last batch exactly
          EXPECT_DOUBLE_EQ(obs.min(), double(lastLo));
          EXPECT_DOUBLE_EQ(obs.max(), double(lastHi));
        }
        // qparams: torch keeps min/max in float32; the scale is one float division away from it.
        const float flo = float(lo), fhi = float(hi);
        const float want = torchSymmetricScale(flo, fhi);
        const float got = qs::amax_scale(qs::parse_format("int8"), obs.amax());
        EXPECT_NEAR_TOL(got, want, 2 * FLT_EPSILON * want);
        float s = 0, ts = 0;
        int32_t zp = -1;
        int tzp = -2;
        qs::affine_params(qs::parse_format("uint8"), obs.min(), obs.max(), s, zp);
        torchAffine(flo, fhi, ts, tzp);
        EXPECT_NEAR_TOL(s, ts, 2 * FLT_EPSILON * ts);
        EXPECT_LE(std::abs(int(zp) - tzp), 1) << "zp " << zp << ", torch " << tzp;  // a float32 ulp of the range can move a rounding tie
      }
}

TEST(Observer, MovingAverageDefaultConstant) {
  const auto data = batches(10, 300, -0.5, kDataSeed + 2, false);
  qs::MovingAverageMinMaxObserver a, b(0.01);
  for (const auto& v : data) a.observe(v.data(), v.size()), b.observe(v.data(), v.size());
  EXPECT_DOUBLE_EQ(a.min(), b.min());
  EXPECT_DOUBLE_EQ(a.max(), b.max());
}

// ---------------------------------------------------------------------------------------------------
// Histogram percentile

// 10^6 seeded uniform [-1, 1] values in 10 batches: |x| is uniform on [0, 1], so the p-th percentile
// is p / 100. The estimate is within one bin width (plus the half-bin shift of re-binning, as later
// batches raise the max a little) of the sample's own percentile, and that is within 5 standard
// deviations (sqrt(q (1 - q) / n) at density 1) of p / 100.
TEST(Observer, PercentileUniform) {
  const int n = 1000000, batchCount = 10;
  // The same data for every row: generated once, kept as batches and as sorted |x|.
  std::vector<std::vector<float>> data;
  std::vector<double> sorted;
  double top = 0;
  {
    Rng r{kDataSeed + 3};
    for (int b = 0; b < batchCount; ++b) {
      std::vector<float> v(n / batchCount);
      for (float& x : v) x = static_cast<float>(r.uniform(-1, 1)), sorted.push_back(std::fabs(x)), top = std::max(top, double(std::fabs(x)));
      data.push_back(std::move(v));
    }
    std::sort(sorted.begin(), sorted.end());
  }
  for (double pct : {99.0, 50.0, 99.9, 90.0})
    for (int bins : {2048, 300}) {
      std::string row = "p";  // built piecewise: "literal" + std::string trips GCC 12's -Wrestrict here
      row += g6(pct) + "/bins=" + std::to_string(bins);
      SCOPED_TRACE(row);
      qs::HistogramPercentileObserver obs(pct, bins);
      for (const auto& v : data) obs.observe(v.data(), v.size());
      EXPECT_EQ(obs.count(), uint64_t(n));
      const double width = top / bins;
      const double emp = empiricalPercentile(sorted, pct);
      EXPECT_NEAR_TOL(obs.amax(), emp, 1.5 * width + 1.0 / n);
      const double q = pct / 100, sd = std::sqrt(q * (1 - q) / n);
      EXPECT_NEAR_TOL(obs.amax(), q, 1.5 * width + kSigmas * sd);
      EXPECT_DOUBLE_EQ(obs.max(), obs.amax());
      EXPECT_DOUBLE_EQ(obs.min(), -obs.amax());
    }
}

// The integers 1..1000 (signs alternating, shuffled by a seeded permutation) in one batch: the
// percentile is the integer of that rank, within one bin width (1000 / 2048).
TEST(Observer, PercentileIntegers) {
  struct Row {
    const char* row;
    double pct;
    double expected;  // value of rank ceil(p n / 100) among 1..1000
  };
  const Row rows[] = {{"p99", 99.0, 990.0}, {"p50", 50.0, 500.0}, {"p99.95", 99.95, 1000.0},
                      {"p100", 100.0, 1000.0}, {"p10", 10.0, 100.0}};
  for (const Row& row : rows) {
    SCOPED_TRACE(row.row);
    const double pct = row.pct, expected = row.expected;
    std::vector<float> v;
    for (int i = 1; i <= 1000; ++i) v.push_back(float((i % 2) ? i : -i));
    Rng r{kDataSeed + 4};
    for (std::size_t i = v.size() - 1; i > 0; --i) std::swap(v[i], v[r.next() % (i + 1)]);
    qs::HistogramPercentileObserver obs(pct, 2048);
    obs.observe(v.data(), v.size());
    EXPECT_EQ(obs.count(), uint64_t(1000));
    std::vector<double> a;
    for (float x : v) a.push_back(std::fabs(x));
    EXPECT_DOUBLE_EQ(empiricalPercentile(a, pct), expected);
    EXPECT_NEAR_TOL(obs.amax(), expected, 1000.0 / 2048);
    if (pct == 100) {
      EXPECT_NEAR_TOL(obs.amax(), 1000.0, 1000.0 * 4 * kU);
    }
  }
}

// Later batches with a larger max re-bin the histogram: the total count is kept, and the estimate
// stays within the widths of every histogram it went through (each re-bin moves a count by at most
// half an old bin plus one new bin) of the sample's own percentile.
TEST(Observer, PercentileRebinKeepsCount) {
  struct Amps {
    const char* name;
    std::vector<double> amplitudes;
  };
  const Amps sets[] = {{"amplitudes 1,10", {1, 10}}, {"amplitudes 1,2,4,8", {1, 2, 4, 8}}, {"amplitudes 3,1,7", {3, 1, 7}}};
  for (double pct : {40.0, 90.0, 99.0})
    for (const Amps& set : sets) {
      std::string row = "p";
      row += g6(pct) + "/" + set.name;
      SCOPED_TRACE(row);
      const int bins = 2048, perBatch = 100000;
      Rng r{kDataSeed + 5};
      qs::HistogramPercentileObserver obs(pct, bins);
      std::vector<double> all;
      double top = 0, widths = 0;
      uint64_t expectCount = 0;
      bool ok = true;
      for (double amp : set.amplitudes) {
        std::vector<float> v(perBatch);
        double bmax = 0;
        for (float& x : v) x = static_cast<float>(r.uniform(-amp, amp)), all.push_back(std::fabs(x)), bmax = std::max(bmax, double(std::fabs(x)));
        if (bmax > top) top = bmax, widths += top / bins;
        obs.observe(v.data(), v.size());
        expectCount += v.size();
        EXPECT_EQ(obs.count(), expectCount);
        if (obs.count() != expectCount) {  // the row stops here, as QCOMPARE did
          ok = false;
          break;
        }
      }
      if (!ok) continue;
      EXPECT_NEAR_TOL(obs.amax(), empiricalPercentile(all, pct), 1.5 * widths + top / bins);
    }
}

// NaN and +-inf are ignored: the same data with them added gives the same histogram.
TEST(Observer, PercentileIgnoresNonFinite) {
  Rng r{kDataSeed + 6};
  std::vector<float> v(5000);
  for (float& x : v) x = static_cast<float>(r.normal());
  std::vector<float> w = v;
  w.insert(w.begin() + 10, kNaN);
  w.insert(w.begin() + 100, kInf);
  w.push_back(-kInf);
  qs::HistogramPercentileObserver a(99.0), b(99.0);
  a.observe(v.data(), v.size());
  b.observe(w.data(), w.size());
  const float only[] = {kNaN, kInf, -kInf};
  b.observe(only, 3);
  EXPECT_EQ(b.count(), a.count());
  EXPECT_DOUBLE_EQ(b.amax(), a.amax());
  EXPECT_TRUE(std::isfinite(b.amax()));
  // Nothing finite yet: 0.
  qs::HistogramPercentileObserver c(99.0);
  c.observe(only, 3);
  EXPECT_EQ(c.count(), uint64_t(0));
  EXPECT_DOUBLE_EQ(c.amax(), 0.0);
}

// ---------------------------------------------------------------------------------------------------
// MSE clipping search

// Laplace(1) data (3 * 10^4 values, seeded) and an optional outlier: the chosen clip is in (0, amax], its
// MSE is no larger than at amax and at amax / 2; for int4 with the outlier, it is far below the
// outlier (the optimum for Laplace data at 4 bits is a few scale units, not 100).
TEST(Observer, MseSearch) {
  for (const char* specName : {"int4", "int8", "e4m3fn", "e2m1fn", "e5m2"})
    for (double outlier : {0.0, 100.0}) {
      const std::string spec = specName;
      SCOPED_TRACE(spec + "/laplace" + (outlier ? "+outlier 100" : ""));
      const qs::Format f = qs::parse_format(spec);
      Rng r{kDataSeed + 7};
      std::vector<float> x(30000);
      for (float& v : x) v = static_cast<float>(r.laplace());
      if (outlier > 0) x[777] = float(outlier);
      double amax = 0;
      for (float v : x) amax = std::max(amax, double(std::fabs(v)));
      qs::MseObserver obs(f);
      obs.observe(x.data(), x.size() / 2);
      obs.observe(x.data() + x.size() / 2, x.size() - x.size() / 2);
      const double c = obs.amax();
      EXPECT_TRUE(c > 0 && c <= amax) << "clip " << c << ", amax " << amax;
      EXPECT_LE(obs.mse_at(c), obs.mse_at(amax));
      EXPECT_LE(obs.mse_at(c), obs.mse_at(0.5 * amax));
      EXPECT_DOUBLE_EQ(obs.max(), c);
      EXPECT_DOUBLE_EQ(obs.min(), -c);
      // The same holds for the oracle's MSE (to its rounding).
      const long double mc = mseOracle(f, x, c), ma = mseOracle(f, x, amax);
      EXPECT_TRUE(mc <= ma * (1 + 1e-12L)) << "oracle MSE " << double(mc) << " at the clip, " << double(ma) << " at amax";
      if (spec == "int4" && outlier > 0) {
        EXPECT_LT(c, 0.2 * outlier) << "int4 clip " << c << " with an outlier at " << outlier;
        EXPECT_TRUE(mc < 0.5L * ma) << "oracle MSE " << double(mc) << " at the clip, " << double(ma) << " at amax";
      }
    }
}

// mse_at(clip) is the MSE of quantizing the observed values with s = clip / max_finite (all of them:
// the sample is larger than the data), against encode_ref/decode_ref, within the double summation error.
TEST(Observer, MseMatchesOracle) {
  for (const char* spec : {"int4", "int8", "e4m3fn", "e2m1fn"})
    for (double fraction : {1.0, 0.5, 0.137, 0.01}) {  // clip = fraction * amax
      SCOPED_TRACE(std::string(spec) + "/clip=" + g6(fraction) + "*amax");
      const qs::Format f = qs::parse_format(spec);
      Rng r{kDataSeed + 8};
      std::vector<float> x(20000);
      double amax = 0;
      for (float& v : x) v = static_cast<float>(r.laplace() * 3), amax = std::max(amax, double(std::fabs(v)));
      qs::MseObserver obs(f);
      obs.observe(x.data(), x.size());
      const double clip = fraction * amax;
      const long double want = mseOracle(f, x, clip);
      EXPECT_NEAR_TOL(obs.mse_at(clip), want, (double(x.size()) + 3) * kU * 2 * double(want));
    }
}

// A reservoir smaller than the data still gives a clip in (0, amax], deterministically for a seed;
// no data or only zeros give 0.
TEST(Observer, MseSampledAndEmpty) {
  const qs::Format f = qs::parse_format("int8");
  Rng r{kDataSeed + 9};
  std::vector<float> x(50000);
  double amax = 0;
  for (float& v : x) v = static_cast<float>(r.normal()), amax = std::max(amax, double(std::fabs(v)));
  x[1234] = kNaN;
  x[4321] = kInf;
  qs::MseObserver a(f, 1000, 42), b(f, 1000, 42);
  a.observe(x.data(), x.size());
  b.observe(x.data(), x.size());
  EXPECT_TRUE(a.amax() > 0 && a.amax() <= amax) << "clip " << a.amax() << ", amax " << amax;
  EXPECT_DOUBLE_EQ(a.amax(), b.amax());
  qs::MseObserver empty(f), zeros(f);
  EXPECT_DOUBLE_EQ(empty.amax(), 0.0);
  const std::vector<float> z(100, 0.0f);
  zeros.observe(z.data(), z.size());
  EXPECT_DOUBLE_EQ(zeros.amax(), 0.0);
}

// ---------------------------------------------------------------------------------------------------
// Delayed scaling

// The history keeps the last `length` amaxes, oldest first.
TEST(Observer, DelayedHistory) {
  qs::DelayedScaling d(4);
  const double seq[] = {5, 1, 9, 2, 3, 4};
  for (double v : seq) d.push(v);
  EXPECT_EQ(d.history(), (std::deque<double>{9, 2, 3, 4}));
  d.push(1);
  EXPECT_EQ(d.history(), (std::deque<double>{2, 3, 4, 1}));
  EXPECT_DOUBLE_EQ(d.history_amax(), 4.0);
  qs::DelayedScaling one(1);
  for (double v : seq) one.push(v);
  EXPECT_EQ(one.history(), (std::deque<double>{4}));
  qs::DelayedScaling empty(16);
  EXPECT_DOUBLE_EQ(empty.history_amax(), 0.0);
  EXPECT_FLOAT_EQ(empty.scale(qs::parse_format("e4m3fn")), 1.0f);  // amax 0: scale 1
}

TEST(Observer, DelayedAlgo) {
  struct Row {
    const char* row;
    int length;
    bool mostRecent;
    double expected;
  };
  // Pushed: 5, 1, 9, 2, 3, 4.
  const Row rows[] = {
      {"max/len 16", 16, false, 9.0},        {"max/len 4", 4, false, 9.0},
      {"max/len 3 (9 dropped)", 3, false, 4.0}, {"most recent/len 16", 16, true, 4.0},
      {"most recent/len 1", 1, true, 4.0},   {"max/len 1", 1, false, 4.0},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.row);
    qs::DelayedScaling d(r.length, r.mostRecent ? qs::DelayedScaling::Algo::MostRecent : qs::DelayedScaling::Algo::Max);
    for (double v : {5.0, 1.0, 9.0, 2.0, 3.0, 4.0}) d.push(v);
    EXPECT_DOUBLE_EQ(d.history_amax(), r.expected);
  }
}

// s = amax_h 2^margin / max_finite (to float32 rounding of the division); each unit of margin doubles it.
TEST(Observer, DelayedMargin) {
  for (const char* spec : {"e4m3fn", "e5m2", "int8"})
    for (int margin : {0, 1, 2, -1}) {
      SCOPED_TRACE(std::string(spec) + "/margin " + std::to_string(margin));
      const qs::Format f = qs::parse_format(spec);
      qs::DelayedScaling d(8, qs::DelayedScaling::Algo::Max, margin), d0(8, qs::DelayedScaling::Algo::Max, 0);
      Rng r{kDataSeed + 10};
      double hmax = 0;
      for (int i = 0; i < 12; ++i) {
        const double a = 10 * r.open01();
        d.push(a), d0.push(a);
        if (i >= 12 - 8) hmax = std::max(hmax, a);  // the last 8 stay in the history
      }
      EXPECT_DOUBLE_EQ(d.history_amax(), hmax);
      const long double want = (long double)hmax * std::ldexp(1.0L, margin) / (long double)f.max_finite;
      EXPECT_NEAR_TOL(d.scale(f), want, 1.5 * FLT_EPSILON * double(want));
      EXPECT_EQ(bitsOf(d.scale(f)), bitsOf(std::ldexp(d0.scale(f), margin)));
    }
}

// An inf or NaN amax (an overflowed step) is not pushed.
TEST(Observer, DelayedIgnoresNonFinite) {
  qs::DelayedScaling d(4);
  d.push(2.0);
  d.push(std::numeric_limits<double>::infinity());
  d.push(std::numeric_limits<double>::quiet_NaN());
  d.push(-std::numeric_limits<double>::infinity());
  d.push(3.0);
  EXPECT_EQ(d.history(), (std::deque<double>{2.0, 3.0}));
  EXPECT_DOUBLE_EQ(d.history_amax(), 3.0);
  EXPECT_TRUE(std::isfinite(d.scale(qs::parse_format("e4m3fn"))));
}
