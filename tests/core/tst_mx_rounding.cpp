// The four E8M0 exponent roundings of MX block scales (format/scale_rule.h MxRounding; torchao's FLOOR, CEIL,
// EVEN, RCEIL), pinned on hand-computed amax values, including those where the rules disagree, and the
// scheme spelling "e2m1fn/block:32:e8m0fnu:rceil".
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "quant/scheme.h"

namespace {

float mxScale(const char* element, qs::MxRounding m, double amax) {
  qs::ScaleRuleParams p = qs::scale_rule_params(qs::ScaleRule::MxE8m0, qs::parse_format(element));
  p.mx = m;
  return qs::group_scale(p, qs::GroupStats{amax}).scale;
}

}  // namespace

TEST(MxRounding, HandComputedScales) {
  using M = qs::MxRounding;
  struct Case {
    const char* element;
    double amax;
    float floor_, ceil_, even_, rceil_;
  };
  // e2m1fn: max 6 = 1.5 * 2^2 (emax 2, 1 mantissa bit: Even rounds the significand up from 1.75).
  // e4m3fn: max 448 = 1.75 * 2^8 (emax 8, 3 mantissa bits: Even rounds up from 1.9375).
  // Rceil is ceil(log2(amax * float(1 / max))): 6 * float(1/6) is 1 in float32, so amax = max gives s = 1.
  const Case cases[] = {
      {"e2m1fn", 6.0, 1.0f, 2.0f, 1.0f, 1.0f},         // log2 6 = 2.58
      {"e2m1fn", 7.0, 1.0f, 2.0f, 2.0f, 2.0f},         // 1.75 * 4: Even carries; 7/6 > 1
      {"e2m1fn", 6.5, 1.0f, 2.0f, 1.0f, 2.0f},         // 1.625 * 4: Floor and Even clip 6.5 to 6, Rceil does not
      {"e2m1fn", 4.0, 1.0f, 1.0f, 1.0f, 1.0f},         // a power of two: Ceil = Floor
      {"e2m1fn", 3.0, 0.5f, 1.0f, 0.5f, 0.5f},         // 3/6 = 0.5 exactly
      {"e2m1fn", 0.75, 0.125f, 0.25f, 0.125f, 0.125f}, // 0.75 * float(1/6) rounds to 0.125
      {"e4m3fn", 480.0, 1.0f, 2.0f, 1.0f, 2.0f},       // 1.875 * 256 < 1.9375 * 256
      {"e4m3fn", 500.0, 1.0f, 2.0f, 2.0f, 2.0f},       // 1.953 * 256 >= 1.9375 * 256
      {"e4m3fn", 448.0, 1.0f, 2.0f, 1.0f, 1.0f},       // max itself
      {"e4m3fn", 1e-40, 0x1p-127f, 0x1p-127f, 0x1p-127f, 0x1p-127f},  // clamped to E8M0's smallest
      {"e4m3fn", 1e38, 0x1p118f, 0x1p119f, 0x1p118f, 0x1p118f},       // log2 1e38 = 126.2; 1e38 / 448: 117.4
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.element) + " amax " + std::to_string(c.amax));
    EXPECT_EQ(mxScale(c.element, M::Floor, c.amax), c.floor_);
    EXPECT_EQ(mxScale(c.element, M::Ceil, c.amax), c.ceil_);
    EXPECT_EQ(mxScale(c.element, M::Even, c.amax), c.even_);
    EXPECT_EQ(mxScale(c.element, M::Rceil, c.amax), c.rceil_);
  }
  // amax 0: every rule gives 1 (as every scale rule does).
  for (M m : {M::Floor, M::Ceil, M::Even, M::Rceil}) EXPECT_EQ(mxScale("e2m1fn", m, 0.0), 1.0f);
  // The largest float amax stays inside E8M0's range for every element format (no saturation reached).
  EXPECT_EQ(mxScale("e2m1fn", M::Floor, 3.4e38), 0x1p125f);
  EXPECT_EQ(mxScale("e2m1fn", M::Rceil, 3.4e38), 0x1p126f);
}

TEST(MxRounding, SchemeSpellings) {
  struct Case {
    const char* in;
    const char* text;
    qs::MxRounding m;
  };
  const Case cases[] = {{"e2m1fn/block:32:e8m0fnu", "e2m1fn/block:32:e8m0fnu", qs::MxRounding::Floor},
                        {"e2m1fn/block:32:e8m0fnu:floor", "e2m1fn/block:32:e8m0fnu", qs::MxRounding::Floor},
                        {"e2m1fn/block:32:e8m0fnu:rceil", "e2m1fn/block:32:e8m0fnu:rceil", qs::MxRounding::Rceil},
                        {"E4M3FN/BLOCK:32:E8M0FNU:CEIL", "e4m3fn/block:32:e8m0fnu:ceil", qs::MxRounding::Ceil},
                        {"e2m1fn/block:32:e8m0fnu:even/axis:0", "e2m1fn/block:32:e8m0fnu:even/axis:0",
                         qs::MxRounding::Even}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.in);
    const qs::Scheme s = qs::parse_scheme(c.in);
    EXPECT_EQ(s.text, c.text);
    EXPECT_EQ(s.mx, c.m);
    EXPECT_EQ(s.rule, qs::ScaleRule::MxE8m0);
    EXPECT_EQ(qs::parse_scheme(s.text).mx, c.m);
  }
  for (const char* bad : {"e2m1fn/block:32:e8m0fnu:nearest", "e2m1fn/block:16:e4m3fn:rceil", "e2m1fn/block:32:fp32:ceil"}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(qs::parse_scheme(bad), qs::FormatError);
  }
}

// Through apply_scheme: a block whose amax is 7.5 clips under Floor (s = 1; 7.5 is beyond e2m1's overflow
// threshold 7, so it saturates to 6) and not under Rceil (s = 2: 3.75 -> 4, back to 8); the price of Rceil's
// larger scale is at the small end: 0.5 / 2 = 0.25, a tie between 0 and e2m1's 0.5, rounds to 0.
TEST(MxRounding, ApplySchemeClipsUnderFloorOnly) {
  std::vector<float> x(32, 0.5f);
  x[3] = 7.5f;
  std::vector<float> y(32);
  qs::ErrorMetrics floor_m, rceil_m;
  qs::apply_scheme(qs::parse_scheme("e2m1fn/block:32:e8m0fnu"), x.data(), {32}, y.data(), 1, {}, &floor_m);
  EXPECT_EQ(y[3], 6.0f);
  EXPECT_EQ(y[0], 0.5f);
  EXPECT_EQ(floor_m.clipped, 1u);
  qs::apply_scheme(qs::parse_scheme("e2m1fn/block:32:e8m0fnu:rceil"), x.data(), {32}, y.data(), 1, {}, &rceil_m);
  EXPECT_EQ(y[3], 8.0f);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(rceil_m.clipped, 0u);
}
