// FakeQuant and the straight-through estimator (core/train/fake_quant.h): values and statistics bit-identical
// to apply_scheme for every granularity (nearest rounding), codes that decode (times their group's scale from
// scale_rule.h) to the values, the clip mask equal to the encoder's overflow count, delayed scaling from the
// amax history, STE unchanged / zeroed where clipped, and the errors.
// Run: ninja -C build tst_fakequant && build/tests/core/tst_fakequant
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "format/format.h"
#include "format/scale_rule.h"
#include "quant/scheme.h"
#include "test_files.h"
#include "test_rng.h"
#include "train/fake_quant.h"
#include "train/shard_pool.h"

namespace {

// rows x cols with a magnitude per row (2^(r % 7 - 3)), a few exact zeros and (optionally) one NaN.
std::vector<float> matrix(Rng& rng, int rows, int cols, bool with_nan) {
  std::vector<float> m(std::size_t(rows) * std::size_t(cols));
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const double mag = std::ldexp(1.0, r % 7 - 3);
      float v = float(rng.normal() * mag);
      if (rng.next() % 11 == 0) v = 0.0f;
      m[std::size_t(r) * std::size_t(cols) + std::size_t(c)] = v;
    }
  if (with_nan && m.size() > 3) m[m.size() / 3] = std::nanf("");
  return m;
}

// The same bits, or a failure naming the first difference.
::testing::AssertionResult same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << "sizes differ: " << a.size() << " vs " << b.size();
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], 4) != 0)
      return ::testing::AssertionFailure() << "index " << i << ": " << ::testing::PrintToString(a[i]) << " vs "
                                           << ::testing::PrintToString(b[i]);
  return ::testing::AssertionSuccess();
}

// The group of each element of a rows x cols matrix under the scheme, written out plainly: one group
// (tensor), a row (channel:0), a column (channel:1 / -1), or blocks of s.block along each row.
std::vector<std::size_t> groups_of(const qs::Scheme& s, int rows, int cols) {
  std::vector<std::size_t> g(std::size_t(rows) * std::size_t(cols), 0);
  const std::size_t per_row = s.granularity == qs::Granularity::Block ? (std::size_t(cols) + s.block - 1) / s.block : 0;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      std::size_t& gi = g[std::size_t(r) * std::size_t(cols) + std::size_t(c)];
      if (s.granularity == qs::Granularity::Channel) gi = (s.axis == 0 || s.axis == -2) ? std::size_t(r) : std::size_t(c);
      else if (s.granularity == qs::Granularity::Block) gi = std::size_t(r) * per_row + std::size_t(c) / s.block;
    }
  return g;
}

}  // namespace

TEST(FakeQuant, MatchesApplyScheme) {
  const char* schemes[] = {"e4m3fn/tensor", "e5m2/tensor",  "int8/tensor",         "e4m3fn/channel:0",
                           "int8/channel:1", "e3m2fn/channel:-1", "e4m3fn/block:32", "e2m1fn/block:32:e8m0fnu",
                           "e2m1fn/block:16:e4m3fn", "int4/block:7", "uint8/tensor", "bf16/tensor",
                           "e5m2/block:5:e8m0fnu",
                           // 16-bit block scales (the block path: group_scale rounds them into their format)
                           "e4m3fn/block:32:bf16", "int4/block:16:fp16",
                           // no scale (a plain cast): FakeQuant::apply once looped forever on these
                           "e4m3fn/none", "e2m1fn/none", "int8/none"};
  struct Shape { int r, c; };
  const Shape shapes[] = {{1, 1}, {3, 5}, {17, 33}, {64, 100}};
  int n = 0;
  for (const char* scheme : schemes)
    for (const Shape& sh : shapes) {
      const bool pool = (n++ % 2) == 1;
      const int rows = sh.r, cols = sh.c;
      const std::string name = std::string(scheme) + "/" + std::to_string(rows) + "x" + std::to_string(cols) + (pool ? "/pool" : "");
      SCOPED_TRACE(name);
      Rng rng = Rng::from_tag(name.c_str());
      const std::vector<float> x = matrix(rng, rows, cols, true);
      const qs::Scheme s = qs::parse_scheme(scheme);
      std::vector<float> ref(x.size()), got(x.size());
      const qs::SchemeOutput out = qs::apply_scheme(s, x.data(), {rows, cols}, ref.data());
      qs::FakeQuant fq(s);
      qs::ShardPool sp(2);
      const qs::FakeQuantResult r = fq.apply(x.data(), std::size_t(rows), std::size_t(cols), got.data(), nullptr, nullptr, 0,
                                             true, pool ? &sp : nullptr);
      EXPECT_TRUE(same_bits(ref, got));
      EXPECT_EQ(r.stats.overflow, out.stats.overflow);
      EXPECT_EQ(r.stats.underflow, out.stats.underflow);
      EXPECT_EQ(r.stats.nan, out.stats.nan);
      EXPECT_EQ(r.amax, out.amax);
      if (s.granularity == qs::Granularity::Tensor && fq.has_codes()) {
        EXPECT_EQ(r.scale, qs::amax_scale(s.format, out.amax));
      }
    }
}

// The mask marks exactly the elements the encoder counted as overflow; every code decodes, times its group's
// scale (the scheme's rule in scale_rule.h applied to the group's amax), to the value bit for bit.
TEST(FakeQuant, ClipMaskAndCodes) {
  const char* schemes[] = {"e4m3fn/tensor",
                           "int8/channel:0",
                           "int8/channel:1",
                           "e2m1fn/block:32:e8m0fnu",  // MX scales clip
                           "e4m3fn/block:16:e8m0fnu",
                           "e2m1fn/block:16:e4m3fn",
                           "e5m2/block:8",
                           "e4m3fn/block:32:bf16",  // 16-bit block scales: codes and clip mask too
                           "int4/block:16:fp16"};
  for (const char* scheme : schemes) {
    SCOPED_TRACE(scheme);
    const std::string name = scheme;
    Rng rng = Rng::from_tag(scheme);
    const int rows = 24, cols = 96;
    const std::vector<float> x = matrix(rng, rows, cols, false);
    const qs::Scheme s = qs::parse_scheme(scheme);
    qs::FakeQuant fq(s);
    std::vector<float> y(x.size());
    std::vector<uint16_t> codes(x.size());
    std::vector<uint8_t> clip(x.size(), 7);
    const qs::FakeQuantResult r = fq.apply(x.data(), rows, cols, y.data(), codes.data(), clip.data());
    uint64_t marked = 0;
    for (uint8_t c : clip) {
      EXPECT_TRUE(c == 0 || c == 1) << int(c);
      marked += c;
    }
    EXPECT_EQ(marked, r.clipped);
    EXPECT_EQ(r.clipped, r.stats.overflow);
    if (qs_test::contains(name, "e8m0fnu")) {
      EXPECT_GT(r.clipped, 0u) << "MX scales should clip some of this data";
    } else if (!qs_test::contains(name, ":e4m3fn")) {
      EXPECT_EQ(r.clipped, 0u);  // amax scales never clip
    }

    // Each group's scale from its statistics (the two-level rule also needs apply_scheme's tensor scale).
    std::vector<float> unused(x.size());
    const qs::SchemeOutput out = qs::apply_scheme(s, x.data(), {rows, cols}, unused.data());
    const std::vector<std::size_t> group = groups_of(s, rows, cols);
    const std::size_t ngroups = *std::max_element(group.begin(), group.end()) + 1;
    std::vector<qs::GroupStats> st(ngroups);
    std::vector<bool> any(ngroups, false);
    for (std::size_t i = 0; i < x.size(); ++i) {
      qs::GroupStats& g = st[group[i]];
      g.lo = any[group[i]] ? std::min(g.lo, double(x[i])) : x[i];
      g.hi = any[group[i]] ? std::max(g.hi, double(x[i])) : x[i];
      any[group[i]] = true;
    }
    std::vector<float> scale(ngroups);
    for (std::size_t g = 0; g < ngroups; ++g) {
      st[g].amax = std::max(std::fabs(st[g].lo), std::fabs(st[g].hi));
      scale[g] = qs::group_scale(qs::scale_rule_params(s), st[g], out.tensor_scale, qs::scale_format_round(s)).scale;
    }

    const qs::Format& f = fq.scheme().format;
    std::size_t bad = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double v = qs::decode_ref(f, codes[i]);
      ASSERT_TRUE(std::isfinite(v)) << "code " << codes[i] << " at " << i;
      const float sg = scale[group[i]];
      const float want = qs::scale_is_usable(sg) ? float(v) * sg : 0.0f;
      if (!(y[i] == want) && bad++ == 0)  // exact; +0 and -0 alike
        ADD_FAILURE() << "element " << i << " (group " << group[i] << ", scale " << sg << "): code " << codes[i] << " -> "
                      << v << ", value " << y[i] << ", want " << want;
      if (clip[i]) {
        EXPECT_EQ(std::fabs(v), f.max_finite) << "element " << i;  // clipped values saturate at the largest code
      }
    }
    EXPECT_EQ(bad, 0u) << "values that are not decode(code) * group scale";
  }
}

TEST(FakeQuant, DelayedScaling) {
  const qs::Scheme s = qs::parse_scheme("e4m3fn/tensor");
  qs::FakeQuant fq(s, qs::ScalingMode::Delayed, 4);
  std::vector<float> x = {0.5f, -1.0f, 0.25f, 2.0f}, y(4);
  std::vector<uint8_t> clip(4);
  // First call: no history yet, its own amax.
  qs::FakeQuantResult r = fq.apply(x.data(), 1, 4, y.data(), nullptr, clip.data());
  EXPECT_EQ(r.scale, qs::amax_scale(s.format, 2.0));
  EXPECT_EQ(r.clipped, 0u);
  // Larger data: the scale still comes from the history (amax 2), so 8 and -6 clip and saturate at 2.
  std::vector<float> big = {8.0f, -6.0f, 1.0f, 0.0f};
  r = fq.apply(big.data(), 1, 4, y.data(), nullptr, clip.data());
  EXPECT_EQ(r.scale, qs::amax_scale(s.format, 2.0));
  EXPECT_EQ(r.amax, 8.0);
  EXPECT_EQ(r.clipped, 2u);
  EXPECT_EQ(clip, (std::vector<uint8_t>{1, 1, 0, 0}));
  EXPECT_EQ(y[0], 2.0f);
  EXPECT_EQ(y[1], -2.0f);
  // Now the history holds 8: the next call uses it. record = false leaves the history alone.
  r = fq.apply(x.data(), 1, 4, y.data(), nullptr, clip.data(), 0, false);
  EXPECT_EQ(r.scale, qs::amax_scale(s.format, 8.0));
  EXPECT_EQ(fq.history().history().size(), 2u);
  // The history is 4 long: after four small calls the 8 is forgotten.
  for (int i = 0; i < 4; ++i) fq.apply(x.data(), 1, 4, y.data());
  EXPECT_EQ(fq.tensor_scale(0.0), qs::amax_scale(s.format, 2.0));
}

// A two-level (NVFP4) block scale that rounds to 0 (scale_is_usable false): FakeQuant writes the block as zeros,
// codes 0 and nothing clipped, counting its non-zero inputs as underflow, as apply_scheme does.
TEST(FakeQuant, TwoLevelBlockUnderflowIsZero) {
  const qs::Scheme s = qs::parse_scheme("e2m1fn/block:16:e4m3fn");
  ASSERT_EQ(int(s.rule), int(qs::ScaleRule::TwoLevel));
  std::vector<float> x(32, 0.0f);
  x[0] = 2688.0f;                                         // ts = 2688 / (448 * 6) = 1
  for (int i = 16; i < 32; ++i) x[std::size_t(i)] = (i % 2 ? 1e-6f : -2e-6f);  // want ~ 3e-7: sb rounds to 0
  x[20] = 0.0f;
  std::vector<float> ref(x.size()), got(x.size());
  std::vector<uint16_t> codes(x.size(), 0xffff);
  std::vector<uint8_t> clipped(x.size(), 0xff);
  const qs::SchemeOutput out = qs::apply_scheme(s, x.data(), {1, 32}, ref.data());
  EXPECT_EQ(out.tensor_scale, 1.0f);
  qs::FakeQuant fq(s);
  const qs::FakeQuantResult r = fq.apply(x.data(), 1, 32, got.data(), codes.data(), clipped.data());
  EXPECT_TRUE(same_bits(ref, got));
  for (std::size_t i = 16; i < 32; ++i) {
    SCOPED_TRACE("element " + std::to_string(i));
    EXPECT_EQ(got[i], 0.0f);
    EXPECT_EQ(codes[i], 0u);
    EXPECT_EQ(clipped[i], 0u);
  }
  EXPECT_EQ(r.stats.underflow, out.stats.underflow);
  EXPECT_EQ(r.stats.underflow, 15u);  // the block's 15 non-zero inputs
  EXPECT_EQ(r.clipped, 0u);
}

TEST(FakeQuant, StochasticRounding) {
  qs::EncodeOptions opt;
  opt.rounding = qs::Rounding::Stochastic;
  const qs::Scheme s = qs::parse_scheme("int8/tensor", opt);
  qs::FakeQuant fq(s);
  std::vector<float> x(4096), a(x.size()), b(x.size()), c(x.size());
  x[0] = 127.0f;  // sets the scale to 1: the grid is the integers
  for (std::size_t i = 1; i < x.size(); ++i) x[i] = 10.25f;
  fq.apply(x.data(), 1, x.size(), a.data(), nullptr, nullptr, 1);
  fq.apply(x.data(), 1, x.size(), b.data(), nullptr, nullptr, 1);
  fq.apply(x.data(), 1, x.size(), c.data(), nullptr, nullptr, 2);
  EXPECT_TRUE(a == b);  // the same seed draws the same numbers
  EXPECT_TRUE(a != c);  // another seed other ones
  double mean = 0;
  for (std::size_t i = 1; i < a.size(); ++i) {
    EXPECT_TRUE(a[i] == 10.0f || a[i] == 11.0f) << "element " << i << ": " << a[i];
    mean += a[i];
  }
  mean /= double(a.size() - 1);
  EXPECT_LT(std::fabs(mean - 10.25), 0.03) << mean;  // unbiased (sd of the mean 0.007)
}

TEST(FakeQuant, SteBackward) {
  const std::vector<float> dy = {1.5f, -2.0f, 0.0f, std::nanf(""), 3.0f};
  std::vector<float> dx(dy.size(), 9.0f);
  qs::ste_backward(dy.data(), nullptr, dy.size(), dx.data());
  EXPECT_TRUE(same_bits(dx, dy));  // unchanged, NaN included
  const std::vector<uint8_t> clip = {0, 1, 0, 0, 1};
  qs::ste_backward(dy.data(), clip.data(), dy.size(), dx.data());
  EXPECT_EQ(dx[0], 1.5f);
  EXPECT_EQ(dx[1], 0.0f);
  EXPECT_EQ(dx[2], 0.0f);
  EXPECT_TRUE(std::isnan(dx[3]));
  EXPECT_EQ(dx[4], 0.0f);
  // In place.
  std::vector<float> io = dy;
  qs::ste_backward(io.data(), clip.data(), io.size(), io.data());
  EXPECT_EQ(io[1], 0.0f);
  EXPECT_EQ(io[0], 1.5f);
}

TEST(FakeQuant, Errors) {
  EXPECT_THROW(qs::FakeQuant(qs::parse_scheme("int8/channel:0"), qs::ScalingMode::Delayed), qs::FormatError);
  EXPECT_THROW(qs::FakeQuant(qs::parse_scheme("uint8/tensor"), qs::ScalingMode::Delayed), qs::FormatError);
  EXPECT_THROW(qs::FakeQuant(qs::parse_scheme("e4m3fn"), qs::ScalingMode::Delayed, 0), qs::FormatError);
  EXPECT_THROW(qs::parse_scaling_mode("sometimes"), qs::FormatError);
  EXPECT_EQ(qs::parse_scaling_mode("delayed"), qs::ScalingMode::Delayed);
  qs::FakeQuant fq(qs::parse_scheme("e4m3fn/channel:2"));
  std::vector<float> x(6), y(6);
  EXPECT_THROW(fq.apply(x.data(), 2, 3, y.data()), qs::FormatError);
}
