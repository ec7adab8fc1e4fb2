// The Error tab's engine (core/quant/error_view.h) against a brute-force element loop written here:
// value histogram, absolute/relative error histograms split by clipping (group bounds recomputed from
// the scale rules, their clipped total checked against apply_scheme's), NaN/inf inputs, empty tensors,
// the grid overlay, cancel, thread independence, and the element codes at every SIMD level (one test per
// level; a level this CPU lacks is reported as skipped).
// Run: ninja -C build tst_error_view && build/tests/core/tst_error_view --gtest_filter='ErrorView.GridOverlay'
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "format/encode_simd.h"
#include "format/quantize.h"
#include "quant/error_view.h"
#include "quant/error_view_simd.h"
#include "format/scale_rule.h"
#include "quant/scheme.h"
#include "test_files.h"
#include "test_rng.h"

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// "64x257" -> {64, 257}
std::vector<int64_t> parseShape(const std::string& s) {
  std::vector<int64_t> shape;
  std::istringstream in(s);
  for (std::string d; std::getline(in, d, 'x');) shape.push_back(std::stoll(d));
  return shape;
}

std::size_t numel(const std::vector<int64_t>& shape) {
  std::size_t n = 1;
  for (int64_t d : shape) n *= std::size_t(d);
  return n;
}

// Normal data named by the row, with optional large outliers and NaN/inf sprinkled at known places.
std::vector<float> makeData(const char* tag, std::size_t n, bool outliers, bool specials) {
  Rng rng = Rng::from_tag(tag);
  std::vector<float> x(n);
  for (float& v : x) v = float(rng.normal());
  if (outliers)
    for (std::size_t i = 0; i < n; i += 97) x[i] = float(rng.sign() * rng.between(20, 60));
  if (n > 8) x[n / 3] = 0.0f, x[n / 5] = -0.0f;  // relative error of zero is undefined
  if (specials && n >= 16) {
    x[1] = kNaN;
    x[n - 2] = kInf;
    x[n / 2] = -kInf;
    x[n / 2 + 1] = kNaN;
  }
  return x;
}

bool affine(const qs::Format& f) { return f.is_int() && !f.is_signed; }

// Each element's clip bound, from the scale rules written out plainly (amax per group in double).
std::vector<double> elementBounds(const qs::Scheme& s, const std::vector<float>& x, const std::vector<int64_t>& shape,
                                  float tensorScale) {
  const std::size_t n = x.size();
  std::vector<std::size_t> group(n, 0);
  std::size_t groups = 1;
  if (s.granularity == qs::Granularity::Channel) {
    const int rank = int(shape.size());
    const int axis = s.axis < 0 ? s.axis + rank : s.axis;
    std::size_t inner = 1;
    for (int d = axis + 1; d < rank; ++d) inner *= std::size_t(shape[d]);
    groups = std::size_t(shape[axis]);
    for (std::size_t i = 0; i < n; ++i) group[i] = (i / inner) % groups;
  } else if (s.granularity == qs::Granularity::Block) {
    const std::size_t L = std::size_t(shape.back()), bl = std::size_t(s.block), perRow = (L + bl - 1) / bl;
    groups = (n / L) * perRow;
    for (std::size_t i = 0; i < n; ++i) group[i] = (i / L) * perRow + (i % L) / bl;
  }
  std::vector<double> lo(groups, 0), hi(groups, 0);
  std::vector<bool> any(groups, false);
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) continue;
    const std::size_t g = group[i];
    lo[g] = any[g] ? std::min(lo[g], double(x[i])) : x[i];
    hi[g] = any[g] ? std::max(hi[g], double(x[i])) : x[i];
    any[g] = true;
  }
  std::vector<double> bound(groups);
  const qs::Format& f = s.format;
  if (s.granularity == qs::Granularity::None) return std::vector<double>(n, f.overflow_threshold);  // scale 1
  for (std::size_t g = 0; g < groups; ++g) {
    const double amax = std::max(std::fabs(lo[g]), std::fabs(hi[g]));
    if (affine(f)) {
      bound[g] = amax;
      continue;
    }
    float scale;
    if (s.scale_format && s.scale_format->name == "e8m0fnu") {
      scale = qs::mx_scale(f, amax);
    } else if (s.scale_format) {
      const double want = amax / (f.max_finite * double(tensorScale));
      const auto code = qs::encode_ref(*s.scale_format, want, qs::Rounding::Nearest, qs::Overflow::Saturate, 0);
      scale = amax > 0 ? float(qs::decode_ref(*s.scale_format, code)) * tensorScale : 1.0f;
      if (!(scale > 0)) scale = 1.0f;  // the block underflowed: all zero, bound at scale 1
    } else {
      scale = qs::amax_scale(f, amax);
    }
    bound[g] = double(scale) * f.overflow_threshold;  // where nearest rounding leaves the range
  }
  std::vector<double> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = bound[group[i]];
  return out;
}

// floor(log2 m) for a finite non-zero float, by frexp, as a histogram bin (subnormals in bin 0).
int log2Bin(float m) {
  int e = 0;
  std::frexp(m, &e);
  return std::clamp(e - 1 + 127, 0, 254);
}

struct Oracle {
  std::vector<uint64_t> values;
  uint64_t below = 0, above = 0, nan = 0, posInf = 0, negInf = 0;
  qs::Log2ErrorHistogram abs, rel;
  uint64_t clipped = 0;
};

Oracle bruteForce(const std::vector<float>& x, const std::vector<float>& q, const std::vector<double>& bound, double lo,
                  double hi, int bins) {
  Oracle o;
  o.values.assign(std::size_t(bins), 0);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float xi = x[i];
    if (std::isnan(xi)) { ++o.nan; continue; }
    if (std::isinf(xi)) { ++(xi > 0 ? o.posInf : o.negInf); continue; }
    const double xd = xi;
    if (xd < lo) ++o.below;
    else if (xd > hi) ++o.above;
    else ++o.values[std::size_t(std::min(std::floor((xd - lo) * (double(bins) / (hi - lo))), double(bins - 1)))];
    const bool clip = std::fabs(xd) > bound[i];
    o.clipped += clip;
    const float e = std::fabs(xi - q[i]);
    auto add = [&](qs::Log2ErrorHistogram& h, float m) {
      if (m == 0) ++h.zeros;
      else if (!std::isfinite(m)) ++h.non_finite;
      else ++(clip ? h.clipping : h.rounding)[std::size_t(log2Bin(m))];
    };
    add(o.abs, e);
    if (!std::isfinite(e)) ++o.rel.non_finite;
    else if (xi == 0) ++o.rel.undefined;
    else if (e == 0) ++o.rel.zeros;
    else ++(clip ? o.rel.clipping : o.rel.rounding)[std::size_t(std::min(log2Bin(std::fabs(e / xi)), 254))];
  }
  return o;
}

std::string describe(const qs::Log2ErrorHistogram& h) {
  std::string s;
  for (int k = 0; k < qs::Log2ErrorHistogram::kBins; ++k)
    if (h.rounding[k] || h.clipping[k])
      s += std::to_string(k - 127) + ":" + std::to_string(h.rounding[k]) + "/" + std::to_string(h.clipping[k]) + " ";
  return s + "zeros " + std::to_string(h.zeros) + " nonfinite " + std::to_string(h.non_finite) + " undefined " +
         std::to_string(h.undefined);
}

// Equal histograms, or a failure that prints both.
::testing::AssertionResult sameHistogram(const qs::Log2ErrorHistogram& a, const qs::Log2ErrorHistogram& b) {
  if (a.rounding == b.rounding && a.clipping == b.clipping && a.zeros == b.zeros && a.non_finite == b.non_finite &&
      a.undefined == b.undefined)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << describe(a) << "\n  vs " << describe(b);
}

bool sameBitsOrBothNaN(float a, float b) {
  return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b) || (std::isnan(a) && std::isnan(b));
}

}  // namespace

TEST(ErrorView, MatchesBruteForce) {
  struct Case {
    const char* name;
    const char* scheme;
    const char* shape;
    const char* overflow;
    bool outliers, specials;
    int bins;
  };
  const Case cases[] = {
      {"e4m3fn/tensor", "e4m3fn/tensor", "64x257", "saturate", false, false, 512},
      {"e4m3fn/tensor specials", "e4m3fn/tensor", "64x257", "saturate", false, true, 300},
      {"e5m2/tensor outliers", "e5m2/tensor", "33x100", "ieee", true, false, 1024},
      {"int8/tensor", "int8/tensor", "4096", "saturate", false, false, 256},
      {"int8/channel:0 outliers", "int8/channel:0", "48x130", "saturate", true, false, 512},
      {"int8/channel:1 (stride 1)", "int8/channel:1", "130x48", "saturate", true, true, 512},
      {"int4/channel:-2 3d", "int4/channel:-2", "3x20x17", "saturate", false, false, 64},
      {"uint8/tensor", "uint8/tensor", "5000", "saturate", false, true, 512},
      {"uint8/channel:0", "uint8/channel:0", "16x300", "saturate", true, false, 512},
      {"e2m1fn/block:32:e8m0fnu (MX clips)", "e2m1fn/block:32:e8m0fnu", "50x320", "saturate", true, false, 512},
      {"e4m3fn/block:32:e8m0fnu ieee (clips to NaN)", "e4m3fn/block:32:e8m0fnu", "40x96", "ieee", true, true, 512},
      {"e5m2/block:32:e8m0fnu ieee (clips to inf)", "e5m2/block:32:e8m0fnu", "40x96", "ieee", true, false, 512},
      {"e2m1fn/block:16:e4m3fn (NVFP4)", "e2m1fn/block:16:e4m3fn", "30x200", "saturate", true, false, 512},
      {"e3m2fn/block:7 short tail", "e3m2fn/block:7", "9x30", "saturate", false, true, 100},
      {"fp16/tensor", "fp16/tensor", "3000", "saturate", false, false, 2048},
      {"bf16/block:64", "bf16/block:64", "20x128", "saturate", true, false, 512},
      {"e2m1fn/none (a plain cast clips)", "e2m1fn/none", "40x50", "saturate", true, true, 512},
      {"e3m4/none ieee (clips to inf)", "e3m4/none", "40x50", "ieee", true, false, 512},
      {"e3m4/tensor one bin", "e3m4/tensor", "777", "saturate", false, false, 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    qs::EncodeOptions eo;
    eo.overflow = qs::parse_overflow(c.overflow);
    const qs::Scheme s = qs::parse_scheme(c.scheme, eo);
    const std::vector<int64_t> sh = parseShape(c.shape);
    const std::vector<float> x = makeData(c.name, numel(sh), c.outliers, c.specials);

    qs::ErrorViewOptions opt;
    opt.value_bins = c.bins;
    std::vector<float> q;
    const qs::ErrorView v = qs::compute_error_view(s, x.data(), sh, opt, {}, &q);
    EXPECT_FALSE(v.cancelled);
    EXPECT_EQ(v.n, x.size());
    ASSERT_EQ(q.size(), x.size());

    // The quantized tensor and the metrics are apply_scheme's.
    std::vector<float> y(x.size());
    qs::ErrorMetrics m;
    const qs::SchemeOutput out = qs::apply_scheme(s, x.data(), sh, y.data(), 1, {}, &m);
    EXPECT_TRUE(std::equal(y.begin(), y.end(), q.begin(), sameBitsOrBothNaN));
    EXPECT_EQ(v.metrics.count, m.count);
    // The same pass on one thread: the same sum, NaN where a value clipped to NaN (as Qt's QCOMPARE had it).
    EXPECT_TRUE(v.metrics.sum_e2 == m.sum_e2 || (std::isnan(v.metrics.sum_e2) && std::isnan(m.sum_e2)))
        << v.metrics.sum_e2 << " vs " << m.sum_e2;
    EXPECT_EQ(v.out.stats.overflow, out.stats.overflow);
    EXPECT_EQ(v.out.stats.underflow, out.stats.underflow);
    EXPECT_EQ(v.out.stats.nan, out.stats.nan);

    // The value range defaults to [-amax, amax].
    EXPECT_EQ(v.values.hi, out.amax);
    EXPECT_EQ(v.values.lo, -out.amax);
    EXPECT_EQ(v.values.bins(), c.bins);

    const std::vector<double> bound = elementBounds(s, x, sh, out.tensor_scale);
    const Oracle o = bruteForce(x, q, bound, v.values.lo, v.values.hi, c.bins);
    EXPECT_EQ(o.clipped, m.clipped);  // the oracle's bounds are apply_scheme's
    EXPECT_EQ(v.clipped, o.clipped);
    EXPECT_EQ(v.values.counts, o.values);
    EXPECT_EQ(v.values.below, o.below);
    EXPECT_EQ(v.values.above, o.above);
    EXPECT_EQ(v.values.nan, o.nan);
    EXPECT_EQ(v.values.pos_inf, o.posInf);
    EXPECT_EQ(v.values.neg_inf, o.negInf);
    EXPECT_TRUE(sameHistogram(v.abs_error, o.abs));
    EXPECT_TRUE(sameHistogram(v.rel_error, o.rel));

    // Every element exactly once.
    EXPECT_EQ(v.values.total(), uint64_t(x.size()));
    EXPECT_EQ(v.finite + v.nan + v.pos_inf + v.neg_inf, uint64_t(x.size()));
    EXPECT_EQ(v.abs_error.total(), v.finite);
    EXPECT_EQ(v.rel_error.total(), v.finite);
    EXPECT_EQ(v.abs_error.undefined, 0u);

    // Thread count changes nothing.
    opt.threads = 3;
    const qs::ErrorView v3 = qs::compute_error_view(s, x.data(), sh, opt);
    EXPECT_EQ(v3.values.counts, v.values.counts);
    EXPECT_TRUE(sameHistogram(v3.abs_error, v.abs_error));
    EXPECT_TRUE(sameHistogram(v3.rel_error, v.rel_error));
    EXPECT_EQ(v3.grid.values, v.grid.values);
  }
}

TEST(ErrorView, ChosenRange) {
  const qs::Scheme s = qs::parse_scheme("int8/tensor");
  const std::vector<float> x = makeData("chosenRange", 10000, true, true);
  qs::ErrorViewOptions opt;
  opt.value_bins = 40;
  opt.range_lo = -1.0;
  opt.range_hi = 1.5;
  std::vector<float> q;
  const qs::ErrorView v = qs::compute_error_view(s, x.data(), {10000}, opt, {}, &q);
  EXPECT_EQ(v.values.lo, -1.0);
  EXPECT_EQ(v.values.hi, 1.5);
  const Oracle o = bruteForce(x, q, std::vector<double>(x.size(), INFINITY), -1.0, 1.5, 40);
  EXPECT_EQ(v.values.counts, o.values);
  EXPECT_EQ(v.values.below, o.below);
  EXPECT_EQ(v.values.above, o.above);
  EXPECT_GT(v.values.below, 1000u);
  EXPECT_GT(v.values.above, 500u);
  EXPECT_EQ(v.values.total(), uint64_t(x.size()));
  // The grid is cut to the range too.
  ASSERT_GE(v.grid.values.size(), 2u);
  EXPECT_TRUE(v.grid.values.front() < -1.0 && v.grid.values[1] >= -1.0);  // the nearest value beyond each end
  EXPECT_TRUE(v.grid.values.back() > 1.5 && v.grid.values.rbegin()[1] <= 1.5);
  EXPECT_GT(v.grid.total_values, v.grid.values.size());
}

TEST(ErrorView, SpecialsCounted) {
  std::vector<float> x = {1.0f, kNaN, -2.0f, kInf, kInf, -kInf, 0.5f, kNaN, kNaN, 3.0f, -0.0f, 0.25f};
  for (const char* scheme : {"e4m3fn/tensor", "int8/channel:0", "e2m1fn/block:4:e8m0fnu", "uint8/tensor"}) {
    SCOPED_TRACE(scheme);
    const qs::Scheme s = qs::parse_scheme(scheme);
    const qs::ErrorView v = qs::compute_error_view(s, x.data(), {3, 4});
    EXPECT_FALSE(v.cancelled);
    EXPECT_EQ(v.nan, 3u);
    EXPECT_EQ(v.pos_inf, 2u);
    EXPECT_EQ(v.neg_inf, 1u);
    EXPECT_EQ(v.finite, 6u);
    EXPECT_EQ(v.out.stats.nan, 3u);
    EXPECT_EQ(v.values.nan + v.values.pos_inf + v.values.neg_inf, 6u);
    EXPECT_EQ(v.values.total(), uint64_t(x.size()));
    EXPECT_EQ(v.abs_error.total(), 6u);
    EXPECT_EQ(v.rel_error.undefined, 1u);  // -0.0
    EXPECT_EQ(v.metrics.count, 6u);
    EXPECT_FALSE(std::isnan(v.metrics.sqnr_db()));  // +inf where these few values are exact
    EXPECT_EQ(v.values.hi, 3.0);                    // amax over finite values only
  }
  // Nothing finite at all: a default range, no error to measure.
  const std::vector<float> all = {kNaN, kInf, -kInf, kNaN};
  const qs::ErrorView v = qs::compute_error_view(qs::parse_scheme("e5m2/tensor"), all.data(), {4});
  EXPECT_EQ(v.finite, 0u);
  EXPECT_EQ(v.values.total(), 4u);
  EXPECT_EQ(v.values.lo, -1.0);
  EXPECT_EQ(v.values.hi, 1.0);
  EXPECT_EQ(v.abs_error.total(), 0u);
  EXPECT_TRUE(std::isnan(v.metrics.sqnr_db()));
}

TEST(ErrorView, EmptyInput) {
  struct Case {
    const char* name;
    const char* scheme;
    const char* shape;
  };
  const Case cases[] = {{"tensor 0", "e4m3fn/tensor", "0"},
                        {"channel 0x16", "int8/channel:0", "0x16"},
                        {"channel 16x0", "int8/channel:0", "16x0"},
                        {"block 0x32", "e2m1fn/block:32:e8m0fnu", "0x32"},
                        {"block 4x0", "e2m1fn/block:32", "4x0"},
                        {"affine 0", "uint8/tensor", "0"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const float dummy = 0;
    const qs::ErrorView v = qs::compute_error_view(qs::parse_scheme(c.scheme), &dummy, parseShape(c.shape), {},
                                                   [](std::size_t, std::size_t) { return true; });
    EXPECT_FALSE(v.cancelled);
    EXPECT_EQ(v.n, 0u);
    EXPECT_EQ(v.values.total(), 0u);
    EXPECT_EQ(v.values.bins(), 512);
    EXPECT_EQ(v.abs_error.total(), 0u);
    EXPECT_TRUE(std::isnan(v.metrics.sqnr_db()));
    EXPECT_GT(v.abs_error.first_bin(), v.abs_error.last_bin());
  }
}

TEST(ErrorView, Cancel) {
  struct Case {
    const char* name;
    const char* scheme;
    int stopAfter;  // progress calls answered true before the false
  };
  const Case cases[] = {{"tensor at once", "e4m3fn/tensor", 0},
                        {"tensor in the pass", "e4m3fn/tensor", 40},  // 32 chunks of 2^16 in apply_scheme
                        {"channel in the pass", "int8/channel:0", 2060},  // 2048 channels + 1 in apply_scheme
                        {"block in the pass", "e2m1fn/block:32:e8m0fnu", 40}};
  const std::vector<float> x = makeData("cancel", std::size_t(1) << 21, false, false);
  const std::vector<int64_t> shape{2048, 1024};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::size_t calls = 0, lastDone = 0, lastTotal = 0;
    bool monotone = true;
    const qs::ErrorView v = qs::compute_error_view(qs::parse_scheme(c.scheme), x.data(), shape, {},
                                                   [&](std::size_t done, std::size_t total) {
      monotone &= done >= lastDone && done <= total;
      lastDone = done;
      lastTotal = total;
      return int(calls++) < c.stopAfter;
    });
    EXPECT_TRUE(v.cancelled);
    EXPECT_TRUE(monotone);
    EXPECT_EQ(lastTotal, 2 * x.size());
    EXPECT_EQ(calls, std::size_t(c.stopAfter) + 1);  // no call after the refusal
    if (c.stopAfter >= 20) {
      EXPECT_GE(lastDone, x.size());  // the refusal came in the histogram pass
    }

    // Without cancelling, progress ends at total.
    lastDone = 0;
    const qs::ErrorView full = qs::compute_error_view(qs::parse_scheme(c.scheme), x.data(), shape, {},
                                                      [&](std::size_t done, std::size_t total) {
      lastDone = done;
      lastTotal = total;
      return true;
    });
    EXPECT_FALSE(full.cancelled);
    EXPECT_EQ(lastDone, lastTotal);
    EXPECT_EQ(full.values.total(), uint64_t(x.size()));
  }
}

TEST(ErrorView, GridOverlay) {
  struct Case {
    const char* name;
    const char* scheme;
    qs::GridGroup which;
    const char* noteStart;
  };
  using G = qs::GridGroup;
  const Case cases[] = {{"e4m3fn/tensor", "e4m3fn/tensor", G::Largest, "per-tensor scale"},
                        {"int8/tensor", "int8/tensor", G::Largest, "per-tensor scale"},
                        {"uint8/tensor", "uint8/tensor", G::Largest, "per-tensor scale"},
                        {"int8/channel:0 largest", "int8/channel:0", G::Largest, "channel "},
                        {"int8/channel:0 median", "int8/channel:0", G::Median, "channel "},
                        {"mx largest", "e2m1fn/block:32:e8m0fnu", G::Largest, "block "},
                        {"mx median", "e2m1fn/block:32:e8m0fnu", G::Median, "block "},
                        {"uint8/block:64 median", "uint8/block:64", G::Median, "block "},
                        {"uint4/channel:0 median", "uint4/channel:0", G::Median, "channel "},
                        {"nvfp4 largest", "e2m1fn/block:16:e4m3fn", G::Largest, "block "},
                        {"nvfp4 median", "e2m1fn/block:16:e4m3fn", G::Median, "block "},
                        {"e4m3fn/block:32 median", "e4m3fn/block:32", G::Median, "block "},
                        {"e3m2fn/none", "e3m2fn/none", G::Largest, "no scale"}};
  const std::vector<int64_t> shape{32, 256};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const qs::Scheme s = qs::parse_scheme(c.scheme);
    const std::vector<float> x = makeData(c.name, numel(shape), true, false);
    qs::ErrorViewOptions opt;
    opt.grid_group = c.which;
    std::vector<float> q;
    const qs::ErrorView v = qs::compute_error_view(s, x.data(), shape, opt, {}, &q);
    const std::string& note = v.grid.note;
    EXPECT_EQ(note.rfind(c.noteStart, 0), 0u) << note;
    EXPECT_TRUE(std::is_sorted(v.grid.values.begin(), v.grid.values.end()));
    EXPECT_TRUE(std::adjacent_find(v.grid.values.begin(), v.grid.values.end()) == v.grid.values.end());
    // Within the range, but for at most one value beyond each end.
    EXPECT_TRUE(v.grid.values.size() < 2 ||
                (v.grid.values[1] >= v.values.lo && v.grid.values.rbegin()[1] <= v.values.hi));

    // The picked group's quantized values all lie on the grid drawn.
    std::vector<std::size_t> members;
    if (s.granularity == qs::Granularity::Tensor || s.granularity == qs::Granularity::None) {
      EXPECT_EQ(v.grid.groups, 1u);
      for (std::size_t i = 0; i < x.size(); ++i) members.push_back(i);
    } else if (s.granularity == qs::Granularity::Channel) {
      EXPECT_EQ(v.grid.groups, 32u);
      for (std::size_t i = 0; i < 256; ++i) members.push_back(v.grid.group * 256 + i);
    } else {
      EXPECT_EQ(v.grid.groups, std::size_t(32 * 256 / s.block));
      for (std::size_t i = 0; i < std::size_t(s.block); ++i) members.push_back(v.grid.group * s.block + i);
    }
    const std::set<double> grid(v.grid.values.begin(), v.grid.values.end());
    for (std::size_t i : members) EXPECT_TRUE(grid.count(double(q[i]))) << "element " << i << ": " << q[i];
    // The grid's scale and zero point are the scheme's rule (scale_rule.h, the one apply_scheme uses) applied
    // to the picked group's statistics.
    qs::GroupStats st;
    bool any = false;
    for (std::size_t i : members) {
      if (!std::isfinite(x[i])) continue;
      st.lo = any ? std::min(st.lo, double(x[i])) : x[i];
      st.hi = any ? std::max(st.hi, double(x[i])) : x[i];
      any = true;
    }
    st.amax = std::max(std::fabs(st.lo), std::fabs(st.hi));
    const qs::GroupScale want =
        qs::group_scale(qs::scale_rule_params(s), st, v.out.tensor_scale, qs::scale_format_round(s));
    EXPECT_EQ(std::bit_cast<uint32_t>(v.grid.scale), std::bit_cast<uint32_t>(want.scale));
    EXPECT_EQ(v.grid.zero_point, want.zero_point);
    // Largest: no group has a larger amax; so the grid spans the value axis.
    if (c.which == G::Largest && v.grid.groups > 1) {
      double amax = 0;
      for (std::size_t i : members) amax = std::max(amax, double(std::fabs(x[i])));
      EXPECT_EQ(amax, v.out.amax);
    }
    if (c.which == G::Median) {
      EXPECT_TRUE(qs_test::contains(note, "median scale")) << note;
    }
  }
}

// The element codes (value bin, log2 |error| bin, log2 relative error bin) of every SIMD level against the
// scalar definition error_code_one. One test per level; a level this CPU cannot run is reported as skipped.
class ErrorViewLevel : public ::testing::TestWithParam<qs::SimdLevel> {};

TEST_P(ErrorViewLevel, CodesMatchDefinition) {
  const qs::SimdLevel level = GetParam();
  const auto& levels = qs::available_simd_levels();
  if (std::find(levels.begin(), levels.end(), level) == levels.end())
    GTEST_SKIP() << qs::to_string(level) << " is not available on this CPU";
  Rng rng = Rng::from_tag("simd levels");
  const std::size_t n = 1000;  // not a multiple of any lane count: the tails run too
  std::vector<float> x(n), q(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double kind = rng.unit();
    x[i] = kind < 0.05 ? kNaN : kind < 0.08 ? float(rng.sign()) * kInf : kind < 0.12 ? 0.0f
         : kind < 0.15 ? float(rng.sign() * 1e-40) : float(rng.normal() * std::ldexp(1.0, int(rng.between(-30, 30))));
    const double qk = rng.unit();
    q[i] = qk < 0.1 ? x[i] : qk < 0.15 ? 0.0f : qk < 0.18 ? kInf : qk < 0.2 ? kNaN : float(x[i] * (1 + rng.between(-0.1, 0.1)));
  }
  x[7] = 1e-45f, q[7] = 3e38f;  // relative error past FLT_MAX
  for (double hiV : {1.0, 1e6}) {
    SCOPED_TRACE("range +-" + std::to_string(hiV));
    const qs::detail::ErrorCodeParams p{-hiV, hiV, 97.0 / (2 * hiV), 0.5 * hiV, 97};
    std::vector<int32_t> v0(n), a0(n), r0(n);
    for (std::size_t i = 0; i < n; ++i) qs::detail::error_code_one(x[i], q[i], p, v0[i], a0[i], r0[i]);
    EXPECT_EQ(a0[7], 254);  // |e| ~ 3e38: exponent field 127 + 127
    EXPECT_EQ(r0[7] % qs::detail::kErrCodes, 254);
    std::vector<int32_t> v(n), a(n), r(n);
    qs::detail::error_codes(x.data(), q.data(), n, p, v.data(), a.data(), r.data(), level);
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_TRUE(v[i] == v0[i] && a[i] == a0[i] && r[i] == r0[i])
          << qs::to_string(level) << " element " << i << ": x=" << x[i] << " q=" << q[i];
    // Groups with their own intervals (ggml's sub-blocks: not symmetric, possibly not holding 0), groups of
    // 8 and 16 (1000 is not a whole number of 16: a partial last group, in the tail).
    for (std::size_t group : {8u, 16u}) {
      const std::size_t groups = (n + group - 1) / group;
      std::vector<double> glo(groups), ghi(groups);
      for (std::size_t g = 0; g < groups; ++g) {
        const double c = rng.normal() * hiV * 0.3, w = rng.unit() * hiV;
        glo[g] = g % 5 == 0 ? c : c - w;  // g % 5 == 0: the interval [c, c + w] need not hold 0
        ghi[g] = c + w;
      }
      qs::detail::ErrorCodeParams pg = p;
      pg.group = group;
      pg.group_lo = glo.data();
      pg.group_hi = ghi.data();
      qs::detail::error_codes(x.data(), q.data(), n, pg, v.data(), a.data(), r.data(), level);
      for (std::size_t i = 0; i < n; ++i) {
        qs::detail::ErrorCodeParams one = p;
        one.interval = true;
        one.clip_lo = glo[i / group];
        one.clip_hi = ghi[i / group];
        qs::detail::error_code_one(x[i], q[i], one, v0[i], a0[i], r0[i]);
        ASSERT_TRUE(v[i] == v0[i] && a[i] == a0[i] && r[i] == r0[i])
            << qs::to_string(level) << " group " << group << " element " << i << ": x=" << x[i] << " q=" << q[i];
      }
    }
  }
}

// The kernels decide the value bin in float with a margin and the clip test on the float ends of the double
// intervals: x at every bin edge and clip end, and the floats beside them, for ranges whose margin is small
// (symmetric, shifted, 1 and 65536 bins) or too large for the float bin (far from 0, narrow: the double
// formula), tiny and huge ranges; groups of 8, 16, 24 and 64 with bounds and with intervals.
TEST_P(ErrorViewLevel, CodesAtBinAndClipEdges) {
  const qs::SimdLevel level = GetParam();
  const auto& levels = qs::available_simd_levels();
  if (std::find(levels.begin(), levels.end(), level) == levels.end())
    GTEST_SKIP() << qs::to_string(level) << " is not available on this CPU";
  struct Range {
    const char* name;
    double lo, hi;
    int bins;
  };
  const Range ranges[] = {{"symmetric 512", -1.7, 1.7, 512},     {"symmetric 97", -3.25, 3.25, 97},
                          {"shifted 300", -0.3, 0.7, 300},        {"one bin", -2.0, 2.0, 1},
                          {"65536 bins", -5.0, 5.0, 65536},       {"far from 0", 1000.0, 1000.5, 64},
                          {"narrow", 0.5, 0.5 + 1e-6, 65536},     {"tiny", -3e-38, 1e-38, 200},
                          {"huge", -3e37, 2e37, 7},               {"past FLT_MAX / 4", -1e38, 1e38, 512},
                          {"x - lo overflows", -3.2e38, 3.2e38, 512}};
  for (const Range& rg : ranges) {
    SCOPED_TRACE(rg.name);
    Rng rng = Rng::from_tag(rg.name);
    const qs::detail::ErrorCodeParams p{rg.lo, rg.hi, double(rg.bins) / (rg.hi - rg.lo), (rg.hi - rg.lo) * 0.3, rg.bins};
    std::vector<float> x, q;
    auto add = [&](double d) {  // the float nearest d and the three floats either side
      float f = static_cast<float>(d);
      for (int k = 0; k < 3; ++k) f = std::nextafter(f, -kInf);
      for (int k = 0; k < 7; ++k, f = std::nextafter(f, kInf)) {
        x.push_back(f);
        q.push_back(float(f * (1 + rng.between(-0.2, 0.2))));
      }
    };
    for (int k = 0; k <= rg.bins; k += rg.bins > 2000 ? int(rng.between(1, 60)) : 1)
      add(rg.lo + (rg.hi - rg.lo) * k / rg.bins);
    for (double c : {p.bound, -p.bound, rg.lo, rg.hi, 0.0}) add(c);
    for (int k = 0; k < 500; ++k) add(rng.between(rg.lo - 0.1 * (rg.hi - rg.lo), rg.hi + 0.1 * (rg.hi - rg.lo)));
    const std::size_t n = x.size();
    std::vector<int32_t> v0(n), a0(n), r0(n), v(n), a(n), r(n);
    for (std::size_t i = 0; i < n; ++i) qs::detail::error_code_one(x[i], q[i], p, v0[i], a0[i], r0[i]);
    qs::detail::error_codes(x.data(), q.data(), n, p, v.data(), a.data(), r.data(), level);
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_TRUE(v[i] == v0[i] && a[i] == a0[i] && r[i] == r0[i])
          << qs::to_string(level) << " element " << i << ": x=" << x[i] << " v=" << v[i] << " want " << v0[i];
    // Groups whose clip ends sit on the elements: group g's bound (or interval ends) is element g * group's x,
    // or a double just beside it.
    for (std::size_t group : {8u, 16u, 24u, 64u}) {
      const std::size_t groups = (n + group - 1) / group;
      std::vector<double> bound(groups), glo(groups), ghi(groups);
      for (std::size_t g = 0; g < groups; ++g) {
        const double e = double(x[g * group]) * (1 + (rng.unit() < 0.5 ? 0.0 : rng.between(-1e-12, 1e-12)));
        bound[g] = std::fabs(e);
        const double w = std::fabs(e) * rng.unit();  // the element's value as the low end, the high end, or +-|e|
        glo[g] = g % 3 == 0 ? e : g % 3 == 1 ? e - w : -w;
        ghi[g] = g % 3 == 0 ? e + w : g % 3 == 1 ? e : std::fabs(e);
      }
      for (int intervals = 0; intervals < 2; ++intervals) {
        qs::detail::ErrorCodeParams pg = p;
        pg.group = group;
        if (intervals) pg.group_lo = glo.data(), pg.group_hi = ghi.data();
        else pg.bounds = bound.data();
        qs::detail::error_codes(x.data(), q.data(), n, pg, v.data(), a.data(), r.data(), level);
        for (std::size_t i = 0; i < n; ++i) {
          qs::detail::ErrorCodeParams one = p;
          one.interval = intervals != 0;
          one.bound = bound[i / group];
          one.clip_lo = glo[i / group];
          one.clip_hi = ghi[i / group];
          qs::detail::error_code_one(x[i], q[i], one, v0[i], a0[i], r0[i]);
          ASSERT_TRUE(v[i] == v0[i] && a[i] == a0[i] && r[i] == r0[i])
              << qs::to_string(level) << " group " << group << (intervals ? " intervals" : " bounds") << " element " << i
              << ": x=" << x[i];
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllLevels, ErrorViewLevel,
                         ::testing::Values(qs::SimdLevel::Generic, qs::SimdLevel::Avx2, qs::SimdLevel::Avx512),
                         [](const ::testing::TestParamInfo<qs::SimdLevel>& i) { return std::string(qs::to_string(i.param)); });

TEST(ErrorView, BadOptions) {
  const std::vector<float> x(16, 1.0f);
  qs::ErrorViewOptions opt;
  opt.value_bins = 0;
  EXPECT_THROW(qs::compute_error_view(qs::parse_scheme("int8"), x.data(), {16}, opt), std::invalid_argument);
  opt.value_bins = 70000;
  EXPECT_THROW(qs::compute_error_view(qs::parse_scheme("int8"), x.data(), {16}, opt), std::invalid_argument);
  EXPECT_THROW(qs::compute_error_view(qs::parse_scheme("int8/channel:2"), x.data(), {4, 4}), qs::FormatError);
  // A reversed or empty range falls back to [-amax, amax].
  opt.value_bins = 8;
  opt.range_lo = 2;
  opt.range_hi = 2;
  const qs::ErrorView v = qs::compute_error_view(qs::parse_scheme("int8"), x.data(), {16}, opt);
  EXPECT_EQ(v.values.lo, -1.0);
  ASSERT_FALSE(v.values.counts.empty());
  EXPECT_EQ(v.values.counts.back(), 16u);  // x == hi lands in the last bin
}

TEST(ErrorView, Csv) {
  const std::vector<float> x = makeData("csv", 4096, true, true);
  const qs::ErrorView v = qs::compute_error_view(qs::parse_scheme("e2m1fn/block:32:e8m0fnu"), x.data(), {4096});
  const std::string text = qs::error_view_histogram_csv(v, "mx,");
  uint64_t absSum = 0, relSum = 0;
  bool sawClipping = false;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    SCOPED_TRACE(line);
    std::vector<std::string> f;
    std::istringstream cells(line);
    for (std::string cell; std::getline(cells, cell, ',');) f.push_back(cell);
    ASSERT_EQ(f.size(), 6u);
    EXPECT_EQ(f[0], "mx");
    (f[1] == "abs_error" ? absSum : relSum) += std::stoull(f[5]);
    sawClipping |= f[2] == "clipping";
  }
  EXPECT_EQ(absSum, v.finite);
  EXPECT_EQ(relSum, v.finite);
  EXPECT_TRUE(sawClipping);
}
