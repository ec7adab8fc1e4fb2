// Conventions (format/convention.h): the headline disagreements of issue 15, pinned from their sources'
// definitions (worked by hand in the comments), and the comparison's bookkeeping.
#include <cfloat>
#include <cmath>

#include <gtest/gtest.h>

#include "format/convention.h"

namespace {

qs::ConventionCode enc(const char* fmt, const char* conv, float x) {
  return qs::encode_convention(qs::parse_format(fmt), qs::find_convention(conv), x);
}

TEST(Convention, E4m3fnMlDtypesVsSatfinite) {
  // 464 is the midpoint of 448 (mantissa 110) and 480 (beyond max): ties to even keep 448 everywhere.
  EXPECT_EQ(enc("e4m3fn", "ml_dtypes", 464.0f).value, 448.0);
  EXPECT_EQ(enc("e4m3fn", "satfinite", 464.0f).value, 448.0);
  // 465 rounds to 480: ml_dtypes (non-saturating) gives NaN 0x7f, satfinite clamps to 448 (0x7e).
  EXPECT_EQ(enc("e4m3fn", "ml_dtypes", 465.0f).code, 0x7fu);
  EXPECT_TRUE(std::isnan(enc("e4m3fn", "ml_dtypes", 465.0f).value));
  EXPECT_EQ(enc("e4m3fn", "ml_dtypes", -465.0f).code, 0xffu);
  EXPECT_EQ(enc("e4m3fn", "satfinite", 465.0f).code, 0x7eu);
  EXPECT_EQ(enc("e4m3fn", "satfinite", -INFINITY).value, -448.0);
  EXPECT_TRUE(std::isnan(enc("e4m3fn", "satfinite", NAN).value));
}

TEST(Convention, TiesAwayAndTruncation) {
  // 1.0625 is the midpoint of 1 (even mantissa 000) and 1.125 (001); 1.9375 of 1.875 (111) and 2.
  EXPECT_EQ(enc("e4m3fn", "ml_dtypes", 1.0625f).value, 1.0);
  EXPECT_EQ(enc("e4m3fn", "mx-nearest", 1.0625f).value, 1.125);
  EXPECT_EQ(enc("e4m3fn", "mx-even", 1.0625f).value, 1.0);
  EXPECT_EQ(enc("e4m3fn", "toward-zero", 1.0625f).value, 1.0);
  EXPECT_EQ(enc("e4m3fn", "toward-zero", 1.9375f).value, 1.875);
  EXPECT_EQ(enc("e4m3fn", "toward-zero", -1.99f).value, -1.875);
  // Truncation keeps everything below 480 at 448 and overflows (NaN) from 480 on.
  EXPECT_EQ(enc("e4m3fn", "toward-zero", 479.0f).value, 448.0);
  EXPECT_TRUE(std::isnan(enc("e4m3fn", "toward-zero", 480.0f).value));
  // microxcaling's 957 (issue #4): a block of max 957 gets the E8M0 scale 2^(9 - 8) = 2, and 957 / 2 = 478.5
  // is clamped to 448 (saturate_normals), so 957 comes back as 896; non-saturating rounding gives NaN there.
  EXPECT_EQ(enc("e4m3fn", "mx-nearest", 478.5f).value * 2, 896.0);
  EXPECT_TRUE(std::isnan(enc("e4m3fn", "ml_dtypes", 478.5f).value));
  // e2m1fn: 5 is the midpoint of 4 (even) and 6: ties away give 6.
  EXPECT_EQ(enc("e2m1fn", "mx-even", 5.0f).value, 4.0);
  EXPECT_EQ(enc("e2m1fn", "mx-nearest", 5.0f).value, 6.0);
  // microxcaling keeps ±inf; e4m3fn can only show it as NaN, e2m1fn (no inf, no NaN) as its clamp to ±6.
  EXPECT_TRUE(std::isnan(enc("e4m3fn", "mx-nearest", INFINITY).value));
  EXPECT_EQ(enc("e2m1fn", "mx-nearest", -INFINITY).value, -6.0);
}

TEST(Convention, TorchNanCodes) {
  // torch's fp8e5m2_from_fp32_value writes 0x7f (| sign) for NaN; ml_dtypes' canonical e5m2 NaN is 0x7e.
  EXPECT_EQ(enc("e5m2", "torch", NAN).code, 0x7fu);
  EXPECT_EQ(enc("e5m2", "torch", -NAN).code, 0xffu);
  EXPECT_EQ(enc("e5m2", "ml_dtypes", NAN).code, 0x7eu);
  // e4m3fn's only NaN magnitude is 0x7f in both.
  EXPECT_EQ(enc("e4m3fn", "torch", NAN).code, enc("e4m3fn", "ml_dtypes", NAN).code);
  EXPECT_EQ(enc("e5m2", "torch", 1e6f).code, enc("e5m2", "ml_dtypes", 1e6f).code);  // both inf 0x7c
}

TEST(Convention, MlDtypesNanWithoutNanCode) {
  // e2m1fn has no NaN: ml_dtypes writes the zero of the other sign (0x8 = -0 for +NaN), the engine's plain
  // cast writes +0; satfinite and mx keep the engine's rule.
  EXPECT_EQ(enc("e2m1fn", "ml_dtypes", NAN).code, 0x8u);
  EXPECT_EQ(enc("e2m1fn", "ml_dtypes", -NAN).code, 0x0u);
  EXPECT_EQ(enc("e2m1fn", "satfinite", NAN).code, 0x0u);
  EXPECT_EQ(enc("e2m3fn", "ml_dtypes", NAN).code, 0x20u);
  EXPECT_EQ(enc("e4m3fn", "ml_dtypes", NAN).code, 0x7fu);  // formats with NaN: their NaN
}

TEST(Convention, QPyTorchAllFinite) {
  const qs::Format f = qs::convention_format(qs::parse_format("e4m3fn"), qs::find_convention("qpytorch"));
  EXPECT_EQ(f.max_finite, 480.0);  // exponent field 15 is a number: 2^8 * 1.875
  EXPECT_FALSE(f.has_nan);
  EXPECT_EQ(enc("e4m3fn", "qpytorch", 500.0f).value, 480.0);
  EXPECT_EQ(enc("e4m3fn", "qpytorch", 465.0f).value, 480.0);
  EXPECT_EQ(enc("e4m3fn", "qpytorch", NAN).value, 480.0);   // its exponent clip sees NaN as large
  EXPECT_EQ(enc("e4m3fn", "qpytorch", -NAN).value, -480.0);
  EXPECT_EQ(enc("e4m3fn", "qpytorch", 1.0625f).value, 1.125);  // round_bitwise adds half: ties away
  // Subnormals: QPyTorch first rounds x + 2^-6 in float32 (quantum 2^-29). x = 2^-10 - 2^-32 lies 2^-32 below
  // the tie between 0 and 2^-9, so it becomes the tie and goes away to 2^-9; exact ties-away gives 0.
  const float x = std::ldexp(1.0f, -10) - std::ldexp(1.0f, -32);
  EXPECT_EQ(enc("e4m3fn", "qpytorch", x).value, std::ldexp(1.0, -9));
  EXPECT_EQ(enc("e4m3fn", "mx-nearest", x).value, 0.0);
}

TEST(Convention, IntegerScaleRules) {
  const float t[] = {-1.0f, 0.25f, 1.0f};
  const qs::IntParams torch = qs::int_params(qs::find_convention("torch-qint8"), t, 3);
  const qs::IntParams narrow = qs::int_params(qs::find_convention("narrow-symmetric"), t, 3);
  EXPECT_EQ(torch.scale, 1.0f / 127.5f);
  EXPECT_EQ(narrow.scale, 1.0f / 127.0f);
  EXPECT_EQ(torch.qmin, -128);
  EXPECT_EQ(narrow.qmin, -127);
  // torch: x * (1 / s), rounded half to even, in [-128, 127].
  const float inv = 1.0f / (1.0f / 127.5f);
  const int want = int(std::max(-128.0f, std::nearbyint(-1.0f * inv)));
  EXPECT_EQ(int8_t(qs::encode_int(qs::find_convention("torch-qint8"), torch, -1.0f).code), want);
  EXPECT_EQ(int8_t(qs::encode_int(qs::find_convention("narrow-symmetric"), narrow, -1.0f).code), -127);
  EXPECT_EQ(int8_t(qs::encode_int(qs::find_convention("torch-qint8"), torch, 1.0f).code), 127);  // 127.5 clamps

  // The uint8 seed's tight affine on [1, 4]: s = 3/255, 1 -> code 0 = 1 exactly. torch's affine forces 0 into
  // the range: s = 4/255, zero point 0, and 1 -> nearbyint(63.75) = 64 -> 64 * 4/255.
  const float u[] = {1.0f, 2.5f, 4.0f};
  const qs::Convention& tight = qs::find_convention("tight-affine-uint8");
  const qs::Convention& taff = qs::find_convention("torch-affine-uint8");
  const qs::IntParams tp = qs::int_params(tight, u, 3), ap = qs::int_params(taff, u, 3);
  EXPECT_EQ(tp.scale, 3.0f / 255.0f);
  EXPECT_EQ(ap.scale, 4.0f / 255.0f);
  EXPECT_EQ(ap.zero_point, 0);
  EXPECT_EQ(qs::encode_int(tight, tp, 1.0f).code, 0u);
  EXPECT_EQ(qs::encode_int(tight, tp, 1.0f).value, 1.0);
  EXPECT_EQ(qs::encode_int(tight, tp, 4.0f).code, 255u);
  EXPECT_EQ(qs::encode_int(taff, ap, 1.0f).code, 64u);
  EXPECT_EQ(qs::encode_int(taff, ap, 1.0f).value, double(64.0f * (4.0f / 255.0f)));
}

TEST(Convention, ComparisonRangesOnProbes) {
  // ml_dtypes vs satfinite on e4m3fn part exactly above 464 (to inf) and at ±inf: two ranges, one per sign,
  // starting at the float after 464.
  const qs::ConventionComparison c = qs::compare_conventions(qs::parse_format("e4m3fn"), {"ml_dtypes", "satfinite"});
  ASSERT_EQ(c.ranges.size(), 2u);
  EXPECT_EQ(c.ranges[0].lo, -INFINITY);
  EXPECT_EQ(c.ranges[0].hi, -std::nextafter(464.0f, INFINITY));
  EXPECT_EQ(c.ranges[1].lo, std::nextafter(464.0f, INFINITY));
  EXPECT_EQ(c.ranges[1].hi, INFINITY);
  EXPECT_EQ(c.stats[1].nan_out, 0u);
  EXPECT_GT(c.stats[0].nan_out, 0u);
  // ml_dtypes vs torch agree on every e4m3fn probe, NaNs included.
  EXPECT_EQ(qs::compare_conventions(qs::parse_format("e4m3fn"), {"ml_dtypes", "torch"}).differing, 0u);
  // ... and part on e5m2 only at the NaN inputs.
  const qs::ConventionComparison e5 = qs::compare_conventions(qs::parse_format("e5m2"), {"ml_dtypes", "torch"});
  EXPECT_EQ(e5.differing, 2u);
  for (std::size_t i = 0; i < e5.inputs.size(); ++i)
    EXPECT_TRUE(!e5.differ[i] || std::isnan(e5.inputs[i])) << e5.inputs[i];
  // Ties even vs away: single points (the midpoints whose lower neighbour is even), never a wider range.
  const qs::ConventionComparison ta = qs::compare_conventions(qs::parse_format("e2m1fn"), {"mx-even", "mx-nearest"});
  ASSERT_FALSE(ta.ranges.empty());
  for (const qs::ConventionRange& r : ta.ranges) EXPECT_EQ(r.lo, r.hi);
}

TEST(Convention, SixteenBitFormats) {
  // bf16 has no all-finite variant (e8m7 with every code finite exceeds float32), so QPyTorch cannot take it,
  // but the other conventions compare: they part only beyond max (ml_dtypes: inf, satfinite: max) and on NaN.
  const qs::ConventionComparison c = qs::compare_conventions(qs::parse_format("bf16"), {"ml_dtypes", "satfinite"});
  EXPECT_GT(c.differing, 0u);
  for (std::size_t i = 0; i < c.inputs.size(); ++i)
    EXPECT_TRUE(!c.differ[i] || std::isnan(c.inputs[i]) || std::fabs(c.inputs[i]) > 3.3e38f) << c.inputs[i];
  EXPECT_THROW(qs::compare_conventions(qs::parse_format("bf16"), {"ml_dtypes", "qpytorch"}), qs::FormatError);
  EXPECT_GT(qs::compare_conventions(qs::parse_format("fp16"), {"ml_dtypes", "satfinite"}).differing, 0u);
}

TEST(Convention, RefusesWhatItCannotCompare) {
  EXPECT_THROW(qs::compare_conventions(qs::parse_format("e4m3fn"), {"ml_dtypes"}), qs::FormatError);
  EXPECT_THROW(qs::compare_conventions(qs::parse_format("e4m3fn"), {"ml_dtypes", "nope"}), qs::FormatError);
  EXPECT_THROW(qs::compare_conventions(qs::parse_format("int8"), {"ml_dtypes", "satfinite"}), qs::FormatError);
  EXPECT_THROW(qs::compare_conventions(qs::parse_format("uint8"), {"torch-qint8", "narrow-symmetric"}), qs::FormatError);
  EXPECT_THROW(qs::compare_conventions(qs::parse_format("int8"), {"torch-qint8", "satfinite"}), qs::FormatError);
}

}  // namespace
