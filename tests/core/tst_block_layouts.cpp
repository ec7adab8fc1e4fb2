// Block schemes beyond runs of the last axis (quant/scheme.h): 2-D tiles ("block:128x128", DeepSeek-V3's FP8
// weight scales), 1-D blocks along another axis ("block:32/axis:1", a conv weight's input channels), and block
// scales rounded into a 16-bit float ("int4/block:128:bf16", the Rounded16 rule of GPTQ-style checkpoints).
// Each layout is checked against a different path through the engine: a tile or an axis block quantized on
// its own as a /tensor scheme (same amax rule) must give the same values.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "quant/error_view.h"
#include "quant/scheme.h"
#include "test_rng.h"

namespace {

std::vector<float> randomTensor(const char* tag, std::size_t n, double sigma = 1.0) {
  Rng r = Rng::from_tag(tag);
  std::vector<float> x(n);
  for (float& v : x) v = float(r.laplace() * sigma);
  return x;
}

std::vector<float> quantizeTensorScheme(const char* fmt, const std::vector<float>& xs) {
  std::vector<float> ys(xs.size());
  qs::apply_scheme(qs::parse_scheme(std::string(fmt) + "/tensor"), xs.data(), {int64_t(xs.size())}, ys.data());
  return ys;
}

// bfloat16 rounding of a positive finite float by its bits (nearest, ties to even): the test's own oracle.
float bf16Round(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  u += 0x7fffu + ((u >> 16) & 1u);
  return std::bit_cast<float>(u & 0xffff0000u);
}

}  // namespace

TEST(BlockLayouts, ParseSpellings) {
  struct Case {
    const char* in;
    const char* text;
    int rows, block, axis;
    qs::ScaleRule rule;
  };
  const Case cases[] = {
      {"e4m3fn/block:128x128", "e4m3fn/block:128x128", 128, 128, -1, qs::ScaleRule::Amax},
      {"E4M3FN/BLOCK:2x3", "e4m3fn/block:2x3", 2, 3, -1, qs::ScaleRule::Amax},
      {"e4m3fn/block:1x32", "e4m3fn/block:32", 0, 32, -1, qs::ScaleRule::Amax},
      {"e2m1fn/block:32:e8m0fnu/axis:1", "e2m1fn/block:32:e8m0fnu/axis:1", 0, 32, 1, qs::ScaleRule::MxE8m0},
      {"int8/block:16/axis:-1", "int8/block:16", 0, 16, -1, qs::ScaleRule::Amax},
      {"int4/block:128:bf16", "int4/block:128:bf16", 0, 128, -1, qs::ScaleRule::Rounded16},
      {"int4/block:64:fp16", "int4/block:64:fp16", 0, 64, -1, qs::ScaleRule::Rounded16},
      {"e2m1fn/block:16:e4m3fn", "e2m1fn/block:16:e4m3fn", 0, 16, -1, qs::ScaleRule::TwoLevel},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.in);
    const qs::Scheme s = qs::parse_scheme(c.in);
    EXPECT_EQ(s.text, c.text);
    EXPECT_EQ(s.block_rows, c.rows);
    EXPECT_EQ(s.block, c.block);
    EXPECT_EQ(s.block_axis, c.axis);
    EXPECT_EQ(s.rule, c.rule);
    EXPECT_EQ(qs::parse_scheme(s.text).text, s.text);  // the canonical text reads back as itself
  }
  for (const char* bad : {"e4m3fn/block:0x4", "e4m3fn/block:2x", "e4m3fn/block:2x3/axis:1", "e4m3fn/block:32/axis:x",
                          "e4m3fn/block:x32"}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(qs::parse_scheme(bad), qs::FormatError);
  }
}

// A 5x7 tensor in 2x3 tiles (ragged at both edges: 3 x 3 tiles), two outer slices: each tile's values are what
// the /tensor scheme gives for the tile alone.
TEST(BlockLayouts, TilesMatchTensorSchemePerTile) {
  for (const char* fmt : {"e4m3fn", "int8", "e2m1fn"}) {
    SCOPED_TRACE(fmt);
    const std::size_t O = 2, M = 5, N = 7;
    const auto x = randomTensor(fmt, O * M * N);
    std::vector<float> y(x.size());
    qs::ErrorMetrics m;
    const qs::SchemeOutput out = qs::apply_scheme(qs::parse_scheme(std::string(fmt) + "/block:2x3"), x.data(),
                                                  {int64_t(O), int64_t(M), int64_t(N)}, y.data(), 2, {}, &m);
    EXPECT_EQ(out.groups, O * 3 * 3);
    EXPECT_EQ(m.count, x.size());
    for (std::size_t o = 0; o < O; ++o)
      for (std::size_t ti = 0; ti < M; ti += 2)
        for (std::size_t tj = 0; tj < N; tj += 3) {
          std::vector<float> xs;
          std::vector<std::size_t> at;
          for (std::size_t r = ti; r < std::min(M, ti + 2); ++r)
            for (std::size_t c = tj; c < std::min(N, tj + 3); ++c) at.push_back(o * M * N + r * N + c), xs.push_back(x[at.back()]);
          const auto want = quantizeTensorScheme(fmt, xs);
          for (std::size_t k = 0; k < at.size(); ++k) ASSERT_EQ(y[at[k]], want[k]) << "tile " << o << "," << ti << "," << tj;
        }
  }
}

// DeepSeek-V3's layout: 128x128 tiles of a 256 x 384 weight, 6 scales.
TEST(BlockLayouts, DeepSeekTilesCount) {
  const auto x = randomTensor("deepseek", 256 * 384, 0.02);
  std::vector<float> y(x.size());
  const qs::Scheme s = qs::parse_scheme("e4m3fn/block:128x128");
  const qs::SchemeOutput out = qs::apply_scheme(s, x.data(), {256, 384}, y.data());
  EXPECT_EQ(out.groups, 6u);
  EXPECT_DOUBLE_EQ(qs::bits_per_value(s, {256, 384}), 8 + 6 * 32.0 / (256 * 384));
}

// Blocks of 32 along axis 1 of a 4 x 65 x 3 conv weight: the block (o, b, tap) holds input channels
// [32 b, 32 b + 32) of output o at that tap; each equals the /tensor scheme on its 32 (or 1) values.
TEST(BlockLayouts, AxisBlocksMatchTensorSchemePerBlock) {
  const std::size_t O = 4, C = 65, K = 3;
  const auto x = randomTensor("conv", O * C * K);
  std::vector<float> y(x.size());
  const qs::Scheme s = qs::parse_scheme("e4m3fn/block:32/axis:1");
  const qs::SchemeOutput out = qs::apply_scheme(s, x.data(), {int64_t(O), int64_t(C), int64_t(K)}, y.data(), 3);
  EXPECT_EQ(out.groups, O * 3 * K);
  for (std::size_t o = 0; o < O; ++o)
    for (std::size_t b = 0; b < C; b += 32)
      for (std::size_t k = 0; k < K; ++k) {
        std::vector<float> xs;
        std::vector<std::size_t> at;
        for (std::size_t c = b; c < std::min(C, b + 32); ++c) at.push_back((o * C + c) * K + k), xs.push_back(x[at.back()]);
        const auto want = quantizeTensorScheme("e4m3fn", xs);
        for (std::size_t i = 0; i < at.size(); ++i) ASSERT_EQ(y[at[i]], want[i]);
      }
  // The same scheme on the last axis is the ordinary contiguous path; an axis beyond the rank is refused.
  std::vector<float> y2(x.size());
  EXPECT_THROW(qs::apply_scheme(qs::parse_scheme("e4m3fn/block:32/axis:3"), x.data(), {4, 65, 3}, y2.data()),
               qs::FormatError);
  EXPECT_FALSE(qs::block_axis_fits(qs::parse_scheme("e4m3fn/block:32/axis:3"), {4, 65, 3}));
  EXPECT_TRUE(qs::block_axis_fits(qs::parse_scheme("e4m3fn/block:32/axis:-3"), {4, 65, 3}));
}

// Rounded16: each block's scale is bf16(amax / 7), and int4 codes are round-half-even of x / s, clamped to 7.
TEST(BlockLayouts, Bf16BlockScalesRounded) {
  const std::size_t B = 128, blocks = 6;
  auto x = randomTensor("bf16 scales", B * blocks);
  std::vector<float> y(x.size());
  qs::apply_scheme(qs::parse_scheme("int4/block:128:bf16"), x.data(), {int64_t(blocks), int64_t(B)}, y.data());
  for (std::size_t b = 0; b < blocks; ++b) {
    float amax = 0;
    for (std::size_t i = 0; i < B; ++i) amax = std::max(amax, std::fabs(x[b * B + i]));
    const float s = bf16Round(amax / 7.0f);
    ASSERT_NE(s, amax / 7.0f) << "block " << b << " does not exercise the rounding";
    for (std::size_t i = 0; i < B; ++i) {
      const double q = std::clamp(std::nearbyint(double(x[b * B + i]) / double(s)), -7.0, 7.0);
      ASSERT_EQ(y[b * B + i], float(q) * s) << "block " << b << " element " << i;
    }
  }
}

// The Error view on the new layouts: its clipped count (the fused pass, per gathered group) equals the metrics'.
TEST(BlockLayouts, ErrorViewAgrees) {
  const auto x = randomTensor("view", 4 * 65 * 3, 3.0);
  for (const char* name : {"e2m1fn/block:2x3", "e2m1fn/block:16:e8m0fnu/axis:1", "int4/block:32:bf16/axis:0"}) {
    SCOPED_TRACE(name);
    const qs::ErrorView v = qs::compute_error_view(qs::parse_scheme(name), x.data(), {4, 65, 3});
    EXPECT_EQ(v.clipped, v.metrics.clipped);
    EXPECT_GT(v.metrics.count, 0u);
    EXPECT_EQ(v.grid.groups, v.out.groups);
  }
}
