// Error metrics (core/quant/metrics.h): MSE, SQNR, max / mean absolute error, the clipping and
// rounding split, log2 histograms (absolute, relative, binade), merging and the histogram CSV rows.
// Expected values are computed here (long double sums, std::ilogb bins), not taken from the engine.
// Run: ctest --test-dir build -R tst_metrics (GoogleTest; the same rows as the former Qt Test suite, each
// row's name in its failure messages), or build/tests/core/tst_metrics --gtest_filter='Metrics.Sums'
#include "test_text.h"
#include "format/format.h"

#include <gtest/gtest.h>

#include "test_rng.h"
#include "quant/metrics.h"
#include "quant/reduce_simd.h"

#include <algorithm>
#include <cctype>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numbers>
#include <set>
#include <string>
#include <vector>

namespace {

constexpr uint64_t kDataSeed = 0x3e7a1c5eedULL;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr double kU = DBL_EPSILON / 2;  // unit roundoff of double


// A symmetric grid quantizer written here: q = clamp(round_half_even(x / s), -m, m) * s in double,
// rounded to float; bound B = m * s. Clipped elements land exactly on +-B when B is a float.
struct Grid {
  double s = 0.05;
  double m = 40;  // B = 2
  float operator()(float x) const {
    const double r = std::nearbyint(double(x) / s);
    return static_cast<float>(std::clamp(r, -m, m) * s);
  }
  double bound() const { return m * s; }
};

// Seeded data: normal * sigma, and q from the grid (or q = x + small noise when grid is null).
void makeData(std::size_t n, double sigma, uint64_t seed, const Grid& g, std::vector<float>& x, std::vector<float>& q) {
  Rng r{seed};
  x.resize(n);
  q.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(r.normal() * sigma);
    q[i] = g(x[i]);
  }
}

struct LongSums {
  std::size_t count = 0;
  long double x2 = 0, e2 = 0, abs_e = 0, max_abs_e = 0, clip2 = 0, round2 = 0;
  uint64_t clipped = 0;
};

LongSums longSums(const std::vector<float>& x, const std::vector<float>& q, long double bound) {
  LongSums s;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i])) continue;
    const long double xi = x[i], e = xi - (long double)q[i];
    ++s.count;
    s.x2 += xi * xi;
    s.e2 += e * e;
    s.abs_e += std::fabs(e);
    s.max_abs_e = std::max(s.max_abs_e, std::fabs(e));
    const long double c = std::clamp(xi, -bound, bound);
    s.clip2 += (xi - c) * (xi - c);
    s.round2 += (c - q[i]) * (c - q[i]);
    if (std::fabs(xi) > bound) ++s.clipped;
  }
  return s;
}

// Recursive summation of n non-negative double terms (each term itself rounded once): relative
// error at most (n + 1) u.
double sumTol(std::size_t n) { return (double(n) + 1) * kU; }

#define EXPECT_CLOSE(got, want, rel)                                                                         \
  EXPECT_LE(std::fabs(double(got) - double(want)), (rel) * std::fabs(double(want)))                         \
      << #got << " = " << g17(double(got)) << ", expected " << g17(double(want)) << " (relative tolerance " \
      << double(rel) << ")"

uint64_t histTotal(const qs::Log2Histogram& h) {
  uint64_t t = h.zeros;
  for (uint64_t c : h.counts) t += c;
  return t;
}

// Count in the bin of binary exponent e.
uint64_t binCount(const qs::Log2Histogram& h, int e) {
  return h.counts[std::size_t(e - qs::Log2Histogram::kMinExp)];
}

// The only non-empty bin of h (kNone when empty, kZero when the only count is in zeros).
constexpr int kNone = 1000, kZero = -1000;
int onlyBin(const qs::Log2Histogram& h) {
  if (histTotal(h) == 0) return kNone;
  if (histTotal(h) != 1) return kNone - 1;
  if (h.zeros) return kZero;
  for (std::size_t i = 0; i < h.counts.size(); ++i)
    if (h.counts[i]) return int(i) + qs::Log2Histogram::kMinExp;
  return kNone;
}

}  // namespace

// MSE, SQNR, max and mean absolute error on seeded data against long double sums.
TEST(Metrics, Sums) {
  for (int n : {1, 17, 1000, 100003})
    for (double sigma : {0.01, 1.0, 300.0})
      for (auto [step, levels] : {std::pair{0.05, 40.0}, std::pair{1.0 / 127, 127.0}, std::pair{0.25, 7.0}}) {
        SCOPED_TRACE("n=" + std::to_string(n) + "/normal*" + g6(sigma) + "/grid " + g6(step) + " x " + g6(levels));
        const Grid g{step, levels};
        std::vector<float> x, q;
        makeData(std::size_t(n), sigma, kDataSeed + uint64_t(n), g, x, q);
        qs::ErrorMetrics m;
        qs::accumulate_metrics(m, x.data(), q.data(), x.size(), float(step), g.bound());
        const LongSums want = longSums(x, q, g.bound());
        EXPECT_EQ(m.count, uint64_t(n));
        // x - q is exact in double (two floats within 2^29 of each other's exponent), so the maximum is exact.
        EXPECT_DOUBLE_EQ(m.max_abs_e, double(want.max_abs_e));
        const double tol = sumTol(x.size()) + kU;
        EXPECT_CLOSE(m.mse(), want.e2 / n, tol + kU);
        EXPECT_CLOSE(m.mean_abs_error(), want.abs_e / n, tol + kU);
        EXPECT_CLOSE(m.sum_x2, want.x2, tol);
        EXPECT_EQ(m.clipped, want.clipped);
        if (want.e2 == 0) {
          EXPECT_EQ(m.sqnr_db(), std::numeric_limits<double>::infinity());
        } else {
          const long double db = 10 * std::log10(want.x2 / want.e2);
          // Ratio of two sums, each within tol: 2 tol relative, 10 / ln 10 times that in dB, plus log10's ulps.
          const double dbTol = 10 / std::numbers::ln10 * 2 * tol + 4 * DBL_EPSILON * std::fabs(double(db));
          EXPECT_LE(std::fabs(m.sqnr_db() - double(db)), dbTol)
              << "SQNR " << g17(m.sqnr_db()) << ", expected " << g17(double(db));
        }
      }
}

// q == x: no error, SQNR +inf, MSE and errors 0, every abs error in the zeros bin.
TEST(Metrics, SqnrExactIsInfinite) {
  std::vector<float> x, q;
  makeData(1000, 1.0, kDataSeed, Grid{}, x, q);
  x[10] = 0.0f;
  qs::ErrorMetrics m;
  qs::accumulate_metrics(m, x.data(), x.data(), x.size(), 1.0f, 1e30);
  EXPECT_EQ(m.sqnr_db(), std::numeric_limits<double>::infinity());
  EXPECT_DOUBLE_EQ(m.mse(), 0.0);
  EXPECT_DOUBLE_EQ(m.max_abs_e, 0.0);
  EXPECT_DOUBLE_EQ(m.mean_abs_error(), 0.0);
  EXPECT_EQ(m.abs_error.zeros, uint64_t(x.size()));
  EXPECT_EQ(m.clipped, uint64_t(0));
  // All zeros and exact: still +inf (nothing lost), not NaN.
  const std::vector<float> z(8, 0.0f);
  qs::ErrorMetrics mz;
  qs::accumulate_metrics(mz, z.data(), z.data(), z.size(), 1.0f, 1.0);
  EXPECT_EQ(mz.sqnr_db(), std::numeric_limits<double>::infinity());
}

TEST(Metrics, SqnrEmptyIsNan) {
  qs::ErrorMetrics m;
  EXPECT_TRUE(std::isnan(m.sqnr_db()));
  EXPECT_DOUBLE_EQ(m.mse(), 0.0);
  EXPECT_DOUBLE_EQ(m.mean_abs_error(), 0.0);
  const float x[] = {kNaN, kInf}, q[] = {0, 0};
  qs::accumulate_metrics(m, x, q, 2, 1.0f, 1.0);
  EXPECT_EQ(m.count, uint64_t(0));
  EXPECT_TRUE(std::isnan(m.sqnr_db()));
}

// Clipped elements are clamped exactly to +-B (the grid's top is B): each element has one kind of
// error only, so sum clip^2 + sum round^2 = sum e^2 up to the summation error of the three sums;
// each part matches its long double sum and `clipped` counts |x| > B.
TEST(Metrics, ClipRoundSplit) {
  for (double sigma : {0.5, 1.0, 3.0})
    for (auto [step, levels] : {std::pair{0.0625, 16.0}, std::pair{0.25, 7.0}, std::pair{0.5, 3.0}}) {
      SCOPED_TRACE("normal*" + g6(sigma) + "/grid " + g6(step) + " x " + g6(levels));
      const Grid g{step, levels};
      std::vector<float> x, q;
      makeData(50000, sigma, kDataSeed + 3, g, x, q);
      qs::ErrorMetrics m;
      qs::accumulate_metrics(m, x.data(), q.data(), x.size(), float(step), g.bound());
      const LongSums want = longSums(x, q, g.bound());
      EXPECT_GT(want.clipped, 0u) << "row without clipping";
      EXPECT_CLOSE(want.clip2 + want.round2, want.e2, 1e-15L);  // the premise, in long double
      const double tol = sumTol(x.size());
      EXPECT_CLOSE(m.sum_clip2 + m.sum_round2, m.sum_e2, 3 * tol);
      EXPECT_CLOSE(m.sum_clip2, want.clip2, tol);
      EXPECT_CLOSE(m.sum_round2, want.round2, tol);
      EXPECT_EQ(m.clipped, want.clipped);
    }
}

// Dyadic data with few bits (multiples of 1/16 below 2^10): every square and every partial sum is
// exact in double, so the split is exactly equal.
TEST(Metrics, ClipRoundSplitExactDyadic) {
  Rng r{kDataSeed + 4};
  const Grid g{0.5, 6};  // B = 3
  std::vector<float> x(4096), q(4096);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = float(int(r.next() % 161) - 80) / 16.0f;  // [-5, 5] in steps of 1/16
    q[i] = g(x[i]);
  }
  qs::ErrorMetrics m;
  qs::accumulate_metrics(m, x.data(), q.data(), x.size(), 0.5f, g.bound());
  EXPECT_GT(m.clipped, 0u);
  EXPECT_DOUBLE_EQ(m.sum_clip2 + m.sum_round2, m.sum_e2);
  const LongSums want = longSums(x, q, g.bound());
  EXPECT_DOUBLE_EQ(m.sum_e2, double(want.e2));
  EXPECT_DOUBLE_EQ(m.sum_clip2, double(want.clip2));
  EXPECT_DOUBLE_EQ(m.sum_round2, double(want.round2));
}

// When a clipped element is also rounded inward (B not on the grid), its error has both parts with
// the same sign: e^2 = c^2 + r^2 + 2 c r > c^2 + r^2. Known values: B = 2.5, grid of 1, x = 4 -> q = 2:
// clip 1.5, round 0.5, e 2.
TEST(Metrics, ClipRoundBothKinds) {
  const float x[] = {4.0f, -4.0f, 1.25f};
  const float q[] = {2.0f, -2.0f, 1.0f};
  qs::ErrorMetrics m;
  qs::accumulate_metrics(m, x, q, 3, 1.0f, 2.5);
  EXPECT_DOUBLE_EQ(m.sum_e2, 4.0 + 4.0 + 0.0625);
  EXPECT_DOUBLE_EQ(m.sum_clip2, 2.25 + 2.25);
  EXPECT_DOUBLE_EQ(m.sum_round2, 0.25 + 0.25 + 0.0625);
  EXPECT_GT(m.sum_e2, m.sum_clip2 + m.sum_round2);
  EXPECT_EQ(m.clipped, uint64_t(2));
}

// |x| == B is not clipped; the next float above is.
TEST(Metrics, ClippedCountsStrictlyAbove) {
  const float B = 448.0f;
  const float x[] = {B, -B, std::nextafter(B, 1e9f), -std::nextafter(B, 1e9f), 1.0f, 0.0f};
  const float q[] = {B, -B, B, -B, 1.0f, 0.0f};
  qs::ErrorMetrics m;
  qs::accumulate_metrics(m, x, q, 6, 1.0f, B);
  EXPECT_EQ(m.clipped, uint64_t(2));
  const double d = double(std::nextafter(B, 1e9f)) - B;
  EXPECT_DOUBLE_EQ(m.sum_clip2, 2 * d * d);
  EXPECT_DOUBLE_EQ(m.sum_round2, 0.0);
}

// One element at a time: the bin each histogram puts it in, against the exponent given by the row
// (worked out by hand) and by std::ilogb of the same float.
TEST(Metrics, HistogramBins) {
  struct Row {
    const char* row;
    float x, q, scale;
    int absBin;     // binary exponent of |x - q| (kZero: the zeros bin)
    int relBin;     // of |x - q| / |x| (kNone: x = 0, not checked)
    int binadeBin;  // of |x / scale|
  };
  const Row rows[] = {
      {"|e|=0.75 -> [0.5,1)", 3.0f, 2.25f, 1.0f, -1, -2, 1},
      {"|e|=0.5 -> [0.5,1)", -2.5f, -2.0f, 0.5f, -1, -3, 2},
      {"|e|=1 -> [1,2)", 5.0f, 4.0f, 1.0f, 0, -3, 2},
      {"|e|=0.999 -> [0.5,1)", 1.999f, 1.0f, 2.0f, -1, -2, -1},
      {"e=0 -> zeros", 6.0f, 6.0f, 1.0f, kZero, kZero, 2},
      {"x=0 q=0 -> zeros", 0.0f, 0.0f, 1.0f, kZero, kNone, kZero},
      {"x=-0 -> zeros", -0.0f, 0.0f, 1.0f, kZero, kNone, kZero},
      {"big error 2^100", 0x1p100f, 0.0f, 0x1p90f, 100, 0, 10},
      // float32 subnormals: errors and scaled values below 2^-126 keep their true binade.
      {"subnormal e 2^-140", 0x1p-140f, 0.0f, 1.0f, -140, 0, -140},
      {"subnormal e 3*2^-149", 0x1p-147f, 0x1p-149f, 1.0f, -148, -1, -147},
      {"smallest subnormal e 2^-149", 0x1p-149f, 0.0f, 1.0f, -149, 0, -149},
      {"normal x, subnormal e", 0x1.000002p-126f, 0x1p-126f, 1.0f, -149, -24, -126},
      {"scaled value subnormal", 0x1p-130f, 0x1p-130f, 0x1p10f, kZero, kZero, -140},
      {"rel error 2^100", 0x1p-90f, 0x1p10f, 1.0f, 10, 100, -90},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.row);
    const float x = r.x, q = r.q, scale = r.scale;
    // The rows' hand-worked exponents agree with ilogb.
    const float ae = static_cast<float>(std::fabs(double(x) - double(q)));
    EXPECT_EQ(r.absBin, ae == 0 ? kZero : std::ilogb(ae));
    if (x != 0) {
      EXPECT_EQ(r.relBin,
                ae == 0 ? kZero : std::ilogb(static_cast<float>(std::fabs(double(x) - double(q)) / std::fabs(double(x)))));
    }
    EXPECT_EQ(r.binadeBin, x == 0 ? kZero : std::ilogb(x / scale));

    qs::ErrorMetrics m;
    qs::accumulate_metrics(m, &x, &q, 1, scale, 1e300);
    EXPECT_EQ(m.count, uint64_t(1));
    EXPECT_EQ(onlyBin(m.abs_error), r.absBin);
    if (r.relBin != kNone) {
      EXPECT_EQ(onlyBin(m.rel_error), r.relBin);
    }
    EXPECT_EQ(onlyBin(m.binade), r.binadeBin);
    if (r.absBin != kZero) {
      EXPECT_EQ(binCount(m.abs_error, r.absBin), uint64_t(1));
    }
  }
}

// Over seeded data with zeros: every finite element is in exactly one bin (or zeros) of the absolute
// error and binade histograms; the bins hold the counts of a direct ilogb tally.
TEST(Metrics, HistogramTotals) {
  std::vector<float> x, q;
  const Grid g{0.01, 100};
  makeData(20000, 2.0, kDataSeed + 5, g, x, q);
  for (std::size_t i = 0; i < x.size(); i += 97) x[i] = 0.0f, q[i] = 0.0f;
  qs::ErrorMetrics m;
  qs::accumulate_metrics(m, x.data(), q.data(), x.size(), 0.01f, g.bound());
  EXPECT_EQ(histTotal(m.abs_error), uint64_t(x.size()));
  EXPECT_EQ(histTotal(m.binade), uint64_t(x.size()));
  std::vector<uint64_t> absTally(m.abs_error.counts.size()), binTally(m.binade.counts.size());
  uint64_t absZeros = 0, binZeros = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float ae = static_cast<float>(std::fabs(double(x[i]) - double(q[i])));
    if (ae == 0) ++absZeros;
    else absTally[std::size_t(std::ilogb(ae) - qs::Log2Histogram::kMinExp)]++;
    const float sv = x[i] / 0.01f;
    if (sv == 0) ++binZeros;
    else binTally[std::size_t(std::ilogb(sv) - qs::Log2Histogram::kMinExp)]++;
  }
  EXPECT_EQ(m.abs_error.zeros, absZeros);
  EXPECT_EQ(m.binade.zeros, binZeros);
  EXPECT_TRUE(std::equal(absTally.begin(), absTally.end(), m.abs_error.counts.begin()));
  EXPECT_TRUE(std::equal(binTally.begin(), binTally.end(), m.binade.counts.begin()));
}

// Accumulating pieces into separate metrics and merging with += gives the counts, maximum and
// histograms of one call over everything, and the sums to rounding.
TEST(Metrics, MergeEqualsOneCall) {
  for (int pieces : {2, 3, 7}) {
    SCOPED_TRACE(std::to_string(pieces) + " pieces");
    std::vector<float> x, q;
    const Grid g{0.1, 20};
    makeData(10007, 1.5, kDataSeed + 6, g, x, q);
    x[5] = kNaN;
    qs::ErrorMetrics whole;
    qs::accumulate_metrics(whole, x.data(), q.data(), x.size(), 0.1f, g.bound());
    qs::ErrorMetrics merged;
    const std::size_t step = (x.size() + std::size_t(pieces) - 1) / std::size_t(pieces);
    for (std::size_t b = 0; b < x.size(); b += step) {
      qs::ErrorMetrics part;
      const std::size_t n = std::min(step, x.size() - b);
      qs::accumulate_metrics(part, x.data() + b, q.data() + b, n, 0.1f, g.bound());
      merged += part;
    }
    EXPECT_EQ(merged.count, whole.count);
    EXPECT_EQ(merged.count, uint64_t(x.size() - 1));
    EXPECT_EQ(merged.clipped, whole.clipped);
    EXPECT_DOUBLE_EQ(merged.max_abs_e, whole.max_abs_e);
    EXPECT_TRUE(merged.abs_error.counts == whole.abs_error.counts && merged.abs_error.zeros == whole.abs_error.zeros);
    EXPECT_TRUE(merged.rel_error.counts == whole.rel_error.counts && merged.rel_error.zeros == whole.rel_error.zeros);
    EXPECT_TRUE(merged.binade.counts == whole.binade.counts && merged.binade.zeros == whole.binade.zeros);
    const double tol = 2 * sumTol(x.size());
    EXPECT_CLOSE(merged.sum_x2, whole.sum_x2, tol);
    EXPECT_CLOSE(merged.sum_e2, whole.sum_e2, tol);
    EXPECT_CLOSE(merged.sum_abs_e, whole.sum_abs_e, tol);
    EXPECT_CLOSE(merged.sum_clip2, whole.sum_clip2, tol);
    EXPECT_CLOSE(merged.sum_round2, whole.sum_round2, tol);
    // Merging into an empty one is a copy; the histogram operator adds bin by bin.
    qs::ErrorMetrics copy;
    copy += whole;
    EXPECT_DOUBLE_EQ(copy.sum_e2, whole.sum_e2);
    EXPECT_EQ(copy.count, whole.count);
    qs::Log2Histogram h;
    h.add_exponent(3);
    h.zeros = 2;
    h += h;
    EXPECT_EQ(binCount(h, 3), uint64_t(2));
    EXPECT_EQ(h.zeros, uint64_t(4));
  }
}

// "prefix kind,bin_lo,bin_hi,count": kinds in the order abs_error, rel_error, binade; the zeros bin
// as 0,0; then non-empty bins in increasing order with bin_hi = 2 bin_lo, a power of two.
TEST(Metrics, HistogramCsv) {
  // |e| = 0.75 (bin [0.5, 1)) twice, e = 0 once, a subnormal error 2^-140 once; binade: x / s = 3, 2, 6
  // -> [2, 4) twice, [4, 8) once; rel 0.25, 0, 0.125, 1.
  const float x[] = {3.0f, 2.0f, 6.0f, 0x1p-140f};
  const float q[] = {2.25f, 2.0f, 5.25f, 0.0f};
  qs::ErrorMetrics m;
  qs::accumulate_metrics(m, x, q, 4, 1.0f, 100.0);
  const std::string prefix = "w.npy,layer.0/weight,e4m3fn/tensor,";
  const std::string csv = qs::histogram_csv_rows(m, prefix);
  ASSERT_FALSE(csv.empty());
  EXPECT_EQ(csv.back(), '\n');
  // csv.trimmed().split('\n')
  std::vector<std::string> lines;
  {
    std::string t = csv;
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
    std::size_t b = 0;
    while (b < t.size() && std::isspace(static_cast<unsigned char>(t[b]))) ++b;
    t = t.substr(b);
    for (std::size_t p = 0;;) {
      const std::size_t nl = t.find('\n', p);
      lines.push_back(t.substr(p, nl == std::string::npos ? std::string::npos : nl - p));
      if (nl == std::string::npos) break;
      p = nl + 1;
    }
  }
  auto has = [&](const std::string& l) { return std::find(lines.begin(), lines.end(), l) != lines.end(); };
  EXPECT_TRUE(has("w.npy,layer.0/weight,e4m3fn/tensor,abs_error,0.5,1,2")) << csv;
  EXPECT_TRUE(has("w.npy,layer.0/weight,e4m3fn/tensor,abs_error,0,0,1")) << csv;
  EXPECT_TRUE(has("w.npy,layer.0/weight,e4m3fn/tensor,binade,2,4,2")) << csv;
  EXPECT_TRUE(has("w.npy,layer.0/weight,e4m3fn/tensor,binade,4,8,1")) << csv;
  // Parse every line and rebuild the histograms from them.
  const std::vector<std::string> kinds{"abs_error", "rel_error", "binade"};
  qs::Log2Histogram rebuilt[3];
  int lastKind = 0;
  double lastLo = -1;
  for (const std::string& line : lines) {
    ASSERT_EQ(line.rfind(prefix, 0), 0u) << line;
    std::vector<std::string> f;
    {
      const std::string rest = line.substr(prefix.size());
      for (std::size_t p = 0;;) {
        const std::size_t c = rest.find(',', p);
        f.push_back(rest.substr(p, c == std::string::npos ? std::string::npos : c - p));
        if (c == std::string::npos) break;
        p = c + 1;
      }
    }
    ASSERT_EQ(f.size(), 4u) << line;
    const int k = int(std::find(kinds.begin(), kinds.end(), f[0]) - kinds.begin());
    ASSERT_LT(k, 3) << line;
    ASSERT_GE(k, lastKind) << "kinds out of order: " << line;
    if (k != lastKind) lastLo = -1;
    lastKind = k;
    char* e1 = nullptr;
    char* e2 = nullptr;
    char* e3 = nullptr;
    const double lo = std::strtod(f[1].c_str(), &e1), hi = std::strtod(f[2].c_str(), &e2);
    const unsigned long long count = std::strtoull(f[3].c_str(), &e3, 10);
    const bool ok1 = !f[1].empty() && *e1 == 0, ok2 = !f[2].empty() && *e2 == 0,
               ok3 = !f[3].empty() && *e3 == 0 && f[3][0] != '-' && f[3][0] != '+' && !std::isspace(static_cast<unsigned char>(f[3][0]));
    ASSERT_TRUE(ok1 && ok2 && ok3) << line;
    ASSERT_GT(count, 0u) << "empty bin written: " << line;
    ASSERT_GT(lo, lastLo) << "bins out of order: " << line;
    lastLo = lo;
    if (lo == 0) {
      ASSERT_DOUBLE_EQ(hi, 0.0) << line;
      rebuilt[k].zeros += count;
    } else {
      int e = 0;
      ASSERT_DOUBLE_EQ(std::frexp(lo, &e), 0.5) << line;  // a power of two (printed with enough digits to be exact)
      ASSERT_DOUBLE_EQ(hi, 2 * lo) << line;
      rebuilt[k].counts[std::size_t(std::ilogb(lo) - qs::Log2Histogram::kMinExp)] += count;
    }
  }
  const qs::Log2Histogram* orig[3] = {&m.abs_error, &m.rel_error, &m.binade};
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(rebuilt[k].zeros, orig[k]->zeros) << kinds[k];
    EXPECT_TRUE(rebuilt[k].counts == orig[k]->counts) << kinds[k];
  }
  EXPECT_EQ(binCount(rebuilt[0], -140), uint64_t(1));
}

TEST(Metrics, HistogramCsvEmpty) { EXPECT_EQ(qs::histogram_csv_rows(qs::ErrorMetrics{}, "p,"), std::string()); }

// NaN and +-inf inputs are not measured: the metrics equal those of the finite elements alone.
TEST(Metrics, NonFiniteSkipped) {
  const float x[] = {kNaN, 1.5f, kInf, -2.0f, -kInf, 0.25f};
  const float q[] = {0.0f, 1.0f, 448.0f, -2.0f, -448.0f, 0.0f};
  const float xf[] = {1.5f, -2.0f, 0.25f};
  const float qf[] = {1.0f, -2.0f, 0.0f};
  qs::ErrorMetrics m, mf;
  qs::accumulate_metrics(m, x, q, 6, 1.0f, 448.0);
  qs::accumulate_metrics(mf, xf, qf, 3, 1.0f, 448.0);
  EXPECT_EQ(m.count, uint64_t(3));
  EXPECT_DOUBLE_EQ(m.sum_x2, 2.25 + 4.0 + 0.0625);
  EXPECT_DOUBLE_EQ(m.sum_e2, 0.25 + 0.0625);
  EXPECT_DOUBLE_EQ(m.sum_abs_e, 0.75);
  EXPECT_DOUBLE_EQ(m.max_abs_e, 0.5);
  EXPECT_EQ(m.clipped, uint64_t(0));
  EXPECT_DOUBLE_EQ(m.sum_clip2, 0.0);
  EXPECT_DOUBLE_EQ(m.sum_e2, mf.sum_e2);
  EXPECT_TRUE(m.abs_error.counts == mf.abs_error.counts && m.abs_error.zeros == mf.abs_error.zeros);
  EXPECT_TRUE(m.rel_error.counts == mf.rel_error.counts && m.rel_error.zeros == mf.rel_error.zeros);
  EXPECT_TRUE(m.binade.counts == mf.binade.counts && m.binade.zeros == mf.binade.zeros);
  EXPECT_TRUE(std::isfinite(m.sqnr_db()));
}

// The error sums of x against q in long double, element i clipped at [lo(i), hi(i)] (a NaN end clips nothing,
// as the kernels' selects), and the check of a kernel's ErrorSums against them: counts, clipped and max |e|
// exact, each sum within 2 (n + 1) u relative.
namespace {
struct RefSums {
  long double sx2 = 0, se2 = 0, sae = 0, sc2 = 0, sr2 = 0;
  double mae = 0;
  uint64_t count = 0, clipped = 0;
};
template <class Lo, class Hi>
RefSums ref_sums(const std::vector<float>& x, const std::vector<float>& q, Lo lo, Hi hi) {
  RefSums r;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i])) continue;
    const long double xi = x[i], qi = q[i], e = xi - qi;
    long double cx = xi;
    if (xi < (long double)lo(i)) cx = lo(i);
    if (xi > (long double)hi(i)) cx = hi(i);
    ++r.count;
    r.sx2 += xi * xi;
    r.se2 += e * e;
    r.sae += std::fabs(e);
    r.mae = std::max(r.mae, double(std::fabs(e)));
    r.sc2 += (xi - cx) * (xi - cx);
    r.sr2 += (cx - qi) * (cx - qi);
    r.clipped += xi != cx;
  }
  return r;
}
void expect_sums(const qs::ErrorSums& s, const RefSums& r, std::size_t n) {
  EXPECT_EQ(s.count, r.count);
  EXPECT_EQ(s.clipped, r.clipped);
  EXPECT_EQ(s.mae, r.mae);
  const long double tol = 2.0L * (long double)(n + 1) * kU;
  for (auto [got, want] : {std::pair{s.sx2, r.sx2}, std::pair{s.se2, r.se2}, std::pair{s.sae, r.sae},
                           std::pair{s.sc2, r.sc2}, std::pair{s.sr2, r.sr2}})
    EXPECT_LE(std::fabs((long double)got - want), tol * want) << g17(got) << " vs " << g17(double(want));
}
}  // namespace

// error_sums_f32 (quant/reduce_simd.h) on every SIMD level this CPU runs, against long double sums written
// here: runs of finite unclipped values (its fast steps), NaN / inf / clipped values scattered among them
// (its full steps), every length 0..70 and a long run, intervals symmetric, one-sided and not holding 0,
// huge and infinite bounds. Counts, clipped and max |e| exact; each sum within 2 n u (relative).
TEST(Metrics, ErrorSumsLevels) {
  Rng g{kDataSeed + 91};
  struct Bounds {
    double lo, hi;
  };
  const Bounds bounds[] = {{-2.0, 2.0},  {-1.5, 3.25},  {0.25, 3.0}, {-3.0, -0.5},
                           {-1e300, 1e300}, {-double(kInf), double(kInf)}, {-1e-3, 1e-3}, {-0.0, 0.0}};
  std::vector<std::size_t> lengths;
  for (std::size_t n = 0; n <= 70; ++n) lengths.push_back(n);
  lengths.push_back(5000 + 13);
  for (const Bounds& b : bounds)
    for (std::size_t n : lengths)
      for (int specials : {0, 1}) {
        std::vector<float> x(n), q(n);
        for (std::size_t i = 0; i < n; ++i) {
          x[i] = static_cast<float>(g.normal() * 0.8);
          q[i] = static_cast<float>(std::nearbyint(double(x[i]) * 16) / 16);
          if (specials && g.next() % 23 == 0) {
            const float sp[] = {kNaN, kInf, -kInf, 7.5f, -9.0f, 1e30f, -1e-30f};
            x[i] = sp[g.next() % 7];
            q[i] = std::isfinite(x[i]) ? std::clamp(x[i], -2.0f, 2.0f) : x[i];
          }
        }
        const RefSums ref = ref_sums(x, q, [&](std::size_t) { return b.lo; }, [&](std::size_t) { return b.hi; });
        for (qs::SimdLevel level : qs::available_simd_levels()) {
          SCOPED_TRACE("errorSumsLevels:[" + g17(b.lo) + ", " + g17(b.hi) + "]/n=" + std::to_string(n) +
                       (specials ? "/specials/" : "/") + qs::to_string(level));
          expect_sums(qs::error_sums_f32(x.data(), q.data(), n, b.lo, b.hi, level), ref, n);
        }
      }
}

// error_sums_ranges_f32 (a run of groups, group g clipped at [lo[g], hi[g]]: apply_scheme's ggml rows) and
// error_sums_groups_f32 ([-b[g], b[g]]) at every level against long double sums: groups of 16, 32 and 24 (a
// vector step straddles groups of 24 at AVX-512: the per-group fallback), intervals asymmetric (most elements
// on one side pass the smaller side's magnitude: the fast steps' test must use both ends), with ends between
// two floats, on a float, not holding 0, huge, infinite and NaN; NaN and inf among the x.
TEST(Metrics, ErrorSumsRangesLevels) {
  Rng g{kDataSeed + 92};
  for (std::size_t group : {16u, 32u, 24u})
    for (int specials : {0, 1}) {
      const std::size_t groups = 150, n = groups * group;
      std::vector<float> x(n), q(n);
      std::vector<double> lo(groups), hi(groups), b(groups), nlo(groups);
      for (std::size_t k = 0; k < groups; ++k) {
        const double c = g.normal(), w = 0.5 + g.unit();
        switch (k % 10) {
          case 0: lo[k] = -1e300, hi[k] = double(kInf); break;
          case 1: lo[k] = 0.25, hi[k] = 3.0; break;               // not holding 0
          case 2: lo[k] = -3.0, hi[k] = -0.5; break;
          case 3: lo[k] = std::nan(""), hi[k] = 1.0; break;
          case 4: lo[k] = -0.1, hi[k] = 1.0 / 3.0; break;         // ends between floats
          default: lo[k] = c - w * 0.3, hi[k] = c + w; break;     // asymmetric about 0
        }
        b[k] = k % 7 == 3 ? std::nan("") : std::fabs(c) * 2 + (k % 5 == 0 ? 1e-7 : 0.0);
        nlo[k] = -b[k];
      }
      for (std::size_t i = 0; i < n; ++i) {
        x[i] = static_cast<float>(g.normal() * 1.5);
        if (i % group == 3) x[i] = static_cast<float>(1.0 / 3.0);  // on hi's neighbours
        q[i] = static_cast<float>(std::nearbyint(double(x[i]) * 8) / 8);
        if (specials && g.next() % 19 == 0) {
          const float sp[] = {kNaN, kInf, -kInf, 1e30f, -1e-30f};
          x[i] = sp[g.next() % 5];
          q[i] = std::isfinite(x[i]) ? 0.0f : x[i];
        }
      }
      for (int kind = 0; kind < 2; ++kind) {  // 0: ranges, 1: symmetric groups
        const double* L = kind == 0 ? lo.data() : nlo.data();
        const double* H = kind == 0 ? hi.data() : b.data();
        const RefSums ref = ref_sums(x, q, [&](std::size_t i) { return L[i / group]; },
                                     [&](std::size_t i) { return H[i / group]; });
        for (qs::SimdLevel level : qs::available_simd_levels()) {
          SCOPED_TRACE(std::string(kind == 0 ? "ranges" : "groups") + "/group=" + std::to_string(group) +
                       (specials ? "/specials/" : "/") + qs::to_string(level));
          expect_sums(kind == 0 ? qs::error_sums_ranges_f32(x.data(), q.data(), n, group, L, H, level)
                                : qs::error_sums_groups_f32(x.data(), q.data(), n, group, H, level),
                      ref, n);
        }
      }
    }
}

// apply_scheme's ggml row checks (ggml_row_counts_f32, finite_copy_f32) at every level against their scalar
// definition: NaN, +-inf, zero, tiny and huge x and y, and clip intervals whose ends lie between two floats, on
// a float, at 0, infinite or NaN (float_interval's rounding of each end is what makes the float compares equal
// the double ones); groups of 16 and 32, and 24 (the fallback).
TEST(Metrics, GgmlRowCountsLevels) {
  Rng g{kDataSeed + 97};
  auto value = [&](double scale) {
    switch (g.next() % 12) {
      case 0: return kNaN;
      case 1: return float(g.sign()) * kInf;
      case 2: return 0.0f;
      case 3: return float(g.normal() * 1e-42);
      case 4: return float(g.normal() * 1e38);
      default: return float(g.normal() * scale);
    }
  };
  auto end = [&](double v) {  // an interval end: v itself, between two floats, or special
    switch (g.next() % 8) {
      case 0: return double(float(v));
      case 1: return double(float(v)) + double(float(v)) * 0x1p-30;
      case 2: return double(float(v)) - double(float(v)) * 0x1p-30;
      case 3: return 0.0;
      case 4: return double(kInf) * (v < 0 ? -1 : 1);
      case 5: return double(kNaN);
      case 6: return v * 1e300;
      default: return v;
    }
  };
  std::size_t rows = 0;
  for (std::size_t group : {16u, 32u, 24u}) {
    for (int trial = 0; trial < 300; ++trial) {
      const std::size_t groups = 1 + g.next() % 9, n = groups * group;
      const double scale = std::ldexp(1.0, int(g.next() % 40) - 20);
      std::vector<float> x(n), y(n);
      for (float& v : x) v = value(scale);
      for (std::size_t i = 0; i < n; ++i)  // y: often x's value, often 0
        y[i] = g.next() % 3 == 0 ? 0.0f : g.next() % 2 ? x[i] : value(scale);
      std::vector<double> lo(groups), hi(groups);
      std::vector<float> lo_f(groups), hi_f(groups);
      for (std::size_t k = 0; k < groups; ++k) {
        lo[k] = end(-g.unit() * 2 * scale);
        hi[k] = end(g.unit() * 2 * scale);
        if (g.next() % 4 == 0) lo[k] = end(double(x[k * group + g.next() % group]));  // an end on a value of x
        qs::float_interval(lo[k], hi[k], lo_f[k], hi_f[k]);
      }
      std::vector<float> want_y = y;
      const qs::RowCounts want = qs::ggml_row_counts_ref(x.data(), want_y.data(), n, group, lo.data(), hi.data());
      std::vector<float> row(n);
      for (qs::SimdLevel level : qs::available_simd_levels()) {
        std::vector<float> got_y = y;
        const qs::RowCounts got = qs::ggml_row_counts_f32(x.data(), got_y.data(), n, group, lo_f.data(), hi_f.data(), level);
        EXPECT_EQ(got.nan, want.nan) << qs::to_string(level) << " trial " << trial;
        EXPECT_EQ(got.inf, want.inf) << qs::to_string(level) << " trial " << trial;
        EXPECT_EQ(got.outside, want.outside) << qs::to_string(level) << " trial " << trial;
        EXPECT_EQ(got.underflow, want.underflow) << qs::to_string(level) << " trial " << trial;
        EXPECT_EQ(std::memcmp(got_y.data(), want_y.data(), n * 4), 0) << qs::to_string(level) << " trial " << trial;
        // finite_copy_f32 on odd lengths too.
        const std::size_t m = n - g.next() % 7;
        uint32_t amax = 0;
        std::vector<float> want_row(m);
        for (std::size_t i = 0; i < m; ++i) {
          want_row[i] = std::isfinite(x[i]) ? x[i] : 0.0f;
          uint32_t b;
          std::memcpy(&b, &want_row[i], 4);
          amax = std::max(amax, b & 0x7fffffffu);
        }
        EXPECT_EQ(qs::finite_copy_f32(x.data(), row.data(), m, level), amax) << qs::to_string(level);
        EXPECT_EQ(std::memcmp(row.data(), want_row.data(), m * 4), 0) << qs::to_string(level);
        ++rows;
      }
    }
  }
  EXPECT_EQ(rows, 900 * qs::available_simd_levels().size());
}
