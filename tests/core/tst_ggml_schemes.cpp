// llama.cpp's block formats as schemes (format/ggml_quantize.h, quant/scheme.h): the reference quantizer's
// decisions pinned on hand-checked blocks (expected codes and scales derived here from the definitions in
// ggml-quants.c, not from the code under test), the block layouts, apply_scheme / analyze / the Error view on
// ggml schemes, bits per value. The byte-for-byte comparison with ggml's own C is
// tests/oracle/ggml_quants_oracle.sh (it needs a ggml checkout).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>
#include <limits>
#include <numeric>
#include <vector>

#include "format/float16.h"
#include "format/ggml_quantize.h"
#include "format/ggml_quantize_simd.h"
#include "quant/error_view.h"
#include "quant/scheme.h"
#include "test_rng.h"

using qs::ggml::BlockType;

namespace {

std::vector<uint8_t> quantize(BlockType t, const std::vector<float>& x) {
  std::vector<uint8_t> b(qs::ggml::quantized_bytes(t, x.size()));
  qs::ggml::quantize_ref(t, x.data(), x.size(), b.data());
  return b;
}
std::vector<float> decode(BlockType t, const std::vector<uint8_t>& b, std::size_t n) {
  std::vector<float> y(n);
  qs::ggml::dequantize(t, b.data(), n, y.data());
  return y;
}
uint16_t half_bits(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

}  // namespace

TEST(GgmlBlocks, LayoutsMatchGgmlCommon) {
  struct Case {
    BlockType t;
    unsigned elems, bytes;
    int id;
  };
  // sizeof(block_*) in ggml-common.h: 2 + 16, 2*2 + 16, 2 + 4 + 16, 2*2 + 4 + 16, 2 + 32; K: 2*2 + 12 + 128,
  // 2*2 + 12 + 32 + 128, 128 + 64 + 16 + 2.
  const Case cases[] = {{BlockType::Q4_0, 32, 18, 2},    {BlockType::Q4_1, 32, 20, 3},
                        {BlockType::Q5_0, 32, 22, 6},    {BlockType::Q5_1, 32, 24, 7},
                        {BlockType::Q8_0, 32, 34, 8},    {BlockType::Q4_K, 256, 144, 12},
                        {BlockType::Q5_K, 256, 176, 13}, {BlockType::Q6_K, 256, 210, 14}};
  for (const Case& c : cases) {
    const auto& b = qs::ggml::block_info(c.t);
    SCOPED_TRACE(b.name);
    EXPECT_EQ(b.block_elems, c.elems);
    EXPECT_EQ(b.block_bytes, c.bytes);
    EXPECT_EQ(b.ggml_type, c.id);
    ASSERT_TRUE(qs::ggml::block_type_from_ggml(c.id).has_value());
    EXPECT_EQ(*qs::ggml::block_type_from_ggml(c.id), c.t);
    EXPECT_TRUE(qs::ggml::has_quantizer(c.t));
  }
}

// Q4_0: d = m / -8 with m the element of largest |x| (sign kept), codes min(15, trunc(x / d + 8.5)).
TEST(GgmlBlocks, Q4_0DecisionsByHand) {
  std::vector<float> x(32, 0.0f);
  x[0] = -2.0f;     // the max |x|: d = -2 / -8 = 0.25, code trunc(-8 + 8.5) = 0 -> (0 - 8) * 0.25 = -2
  x[1] = 2.0f;      // 8 + 8.5 = 16.5 -> 16 -> min(15) -> 7 * 0.25 = 1.75: the opposite extreme clips
  x[2] = 0.3f;      // 1.2 + 8.5 = 9.7 -> 9 -> 0.25
  x[3] = 0.375f;    // 1.5 + 8.5 = 10 -> 10 -> 0.5 (a half step rounds up)
  x[4] = -0.375f;   // -1.5 + 8.5 = 7 -> 7 -> -0.25 (and up again: toward +inf, not away from 0)
  x[17] = 1.0f;     // element 17 is the high nibble of byte 1: 4 + 8.5 -> 12 -> 1.0
  const auto b = quantize(BlockType::Q4_0, x);
  ASSERT_EQ(b.size(), 18u);
  EXPECT_EQ(half_bits(b.data()), qs::float_to_half(0.25f));
  const int want_codes[] = {0, 15, 9, 10, 7};
  for (int j = 0; j < 5; ++j) EXPECT_EQ(b[2 + j] & 0xF, want_codes[j]) << j;
  EXPECT_EQ(b[2 + 1] >> 4, 12);  // x[17]
  EXPECT_EQ(b[2 + 5] & 0xF, 8);  // x = 0 -> 0 + 8.5 -> 8 -> 0
  const auto y = decode(BlockType::Q4_0, b, 32);
  EXPECT_EQ(y[0], -2.0f);
  EXPECT_EQ(y[1], 1.75f);
  EXPECT_EQ(y[2], 0.25f);
  EXPECT_EQ(y[3], 0.5f);
  EXPECT_EQ(y[4], -0.25f);
  EXPECT_EQ(y[17], 1.0f);
  EXPECT_EQ(y[5], 0.0f);
}

// Q4_1: d = (max - min) / 15, m = min, codes trunc((x - min) / d + 0.5).
TEST(GgmlBlocks, Q4_1DecisionsByHand) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[std::size_t(j)] = 1.0f + 0.5f * float(j % 16);  // min 1, max 8.5: d = 0.5
  x[5] = 1.25f;  // (0.25 / 0.5) + 0.5 = 1 -> code 1 -> 1.5 (a half step rounds up)
  const auto b = quantize(BlockType::Q4_1, x);
  EXPECT_EQ(half_bits(b.data()), qs::float_to_half(0.5f));
  EXPECT_EQ(half_bits(b.data() + 2), qs::float_to_half(1.0f));
  const auto y = decode(BlockType::Q4_1, b, 32);
  for (int j = 0; j < 32; ++j) {
    if (j != 5) {
      EXPECT_EQ(y[std::size_t(j)], x[std::size_t(j)]) << j;
    }
  }
  EXPECT_EQ(y[5], 1.5f);
}

// Q5_0: like Q4_0 with -16 and 31; the fifth bits of elements j and j + 16 are bits j and j + 16 of qh.
TEST(GgmlBlocks, Q5_0HighBits) {
  std::vector<float> x(32, 0.0f);
  x[0] = -4.0f;  // d = 0.25: code 0
  x[3] = 1.0f;   // 4 + 16.5 -> 20: low nibble 4, fifth bit set (qh bit 3)
  x[19] = 3.5f;  // 14 + 16.5 -> 30: low nibble 14 in byte 3's high half, qh bit 19
  const auto b = quantize(BlockType::Q5_0, x);
  ASSERT_EQ(b.size(), 22u);
  const uint32_t qh = uint32_t(b[2]) | uint32_t(b[3]) << 8 | uint32_t(b[4]) << 16 | uint32_t(b[5]) << 24;
  EXPECT_EQ(b[6 + 3] & 0xF, 4);
  EXPECT_EQ(b[6 + 3] >> 4, 14);
  EXPECT_TRUE(qh >> 3 & 1);
  EXPECT_TRUE(qh >> 19 & 1);
  EXPECT_FALSE(qh & 1);  // code 0 has no fifth bit
  const auto y = decode(BlockType::Q5_0, b, 32);
  EXPECT_EQ(y[0], -4.0f);
  EXPECT_EQ(y[3], 1.0f);
  EXPECT_EQ(y[19], 3.5f);
}

// Q8_0: d = amax / 127, codes roundf(x / d): halves away from zero.
TEST(GgmlBlocks, Q8_0DecisionsByHand) {
  std::vector<float> x(32, 0.0f);
  const float d = 0.0625f;
  x[0] = 127 * d;    // amax: d = 127 d / 127
  x[1] = 2.5f * d;   // -> 3
  x[2] = -2.5f * d;  // -> -3
  x[3] = 2.25f * d;  // -> 2
  const auto b = quantize(BlockType::Q8_0, x);
  EXPECT_EQ(half_bits(b.data()), qs::float_to_half(d));
  EXPECT_EQ(int8_t(b[2]), 127);
  EXPECT_EQ(int8_t(b[3]), 3);
  EXPECT_EQ(int8_t(b[4]), -3);
  EXPECT_EQ(int8_t(b[5]), 2);
}

// Q4_K: sub-block j holds 0, s_j, 2 s_j, ..., 15 s_j twice (s_j = 1 + j % 7, max 7). Each sub-block's fit is
// exact (scale s_j, min 0), so the 6-bit scale codes are nearest(63 / 7 * s_j) = 9 s_j with no tie, the mins
// are 0 (dmin = 0), d = fp16(7 / 63), and the codes, chosen again with d * ls, are the integers i.
TEST(GgmlBlocks, Q4_KScalesByHand) {
  std::vector<float> x(256);
  for (int j = 0; j < 8; ++j)
    for (int l = 0; l < 32; ++l) x[std::size_t(32 * j + l)] = float((l % 16) * (1 + j % 7));
  const auto b = quantize(BlockType::Q4_K, x);
  ASSERT_EQ(b.size(), 144u);
  EXPECT_EQ(half_bits(b.data()), qs::float_to_half(7.0f / 63.f));
  EXPECT_EQ(half_bits(b.data() + 2), qs::float_to_half(0.0f));
  const float d = qs::half_to_float(qs::float_to_half(7.0f / 63.f));
  const uint8_t* sc = b.data() + 4;
  for (int j = 0; j < 8; ++j) {
    const int ls = 9 * (1 + j % 7);
    // get_scale_min_k4's packing: j < 4 in the low 6 bits of byte j; j >= 4 split over byte j + 4 (low 4
    // bits) and the top 2 bits of byte j - 4.
    const int got = j < 4 ? (sc[j] & 63) : ((sc[j + 4] & 0xF) | ((sc[j - 4] >> 6) << 4));
    EXPECT_EQ(got, ls) << "sub-block " << j;
  }
  const auto y = decode(BlockType::Q4_K, b, 256);
  for (int j = 0; j < 8; ++j) {
    const float d1 = d * float(9 * (1 + j % 7));
    for (int l = 0; l < 32; ++l)
      EXPECT_EQ(bits(y[std::size_t(32 * j + l)]), bits(d1 * float(l % 16) - 0.0f)) << j << "," << l;
  }
}

// Q6_K on a constant block: every sub-block's scale is -c / 32 (code -32 for c), the int8 scales are
// nearest(-128 / (-c / 32) * (-c / 32)) = -128, d = fp16(c / 4096), and c comes back exactly when c / 4096 is
// an fp16.
TEST(GgmlBlocks, Q6_KConstantBlockExact) {
  for (float c : {1.0f, 3.0f, -0.5f}) {
    SCOPED_TRACE(c);
    const std::vector<float> x(256, c);
    const auto b = quantize(BlockType::Q6_K, x);
    ASSERT_EQ(b.size(), 210u);
    for (int j = 0; j < 16; ++j) EXPECT_EQ(int8_t(b[192 + j]), -128);
    EXPECT_EQ(half_bits(b.data() + 208), qs::float_to_half(c / 4096.f));
    const auto y = decode(BlockType::Q6_K, b, 256);
    for (float v : y) ASSERT_EQ(v, c);
  }
}

TEST(GgmlBlocks, BadLengthsRefused) {
  std::vector<float> x(48, 1.0f);
  std::vector<uint8_t> b(64);
  EXPECT_THROW(qs::ggml::quantize_ref(BlockType::Q4_0, x.data(), 48, b.data()), std::invalid_argument);
  EXPECT_THROW(qs::ggml::dequantize(BlockType::Q4_K, b.data(), 48, x.data()), std::invalid_argument);
}

TEST(GgmlSchemes, ParseAndBitsPerValue) {
  struct Case {
    const char* text;
    BlockType t;
    int block;
    double bpv;
  };
  const Case cases[] = {{"q4_0", BlockType::Q4_0, 32, 4.5},  {"Q4_1", BlockType::Q4_1, 32, 5.0},
                        {"q5_0", BlockType::Q5_0, 32, 5.5},  {"q5_1", BlockType::Q5_1, 32, 6.0},
                        {"q8_0", BlockType::Q8_0, 32, 8.5},  {"Q4_K", BlockType::Q4_K, 256, 4.5},
                        {"q5_k", BlockType::Q5_K, 256, 5.5}, {"q6_k", BlockType::Q6_K, 256, 6.5625}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    const qs::Scheme s = qs::parse_scheme(c.text);
    ASSERT_TRUE(s.ggml.has_value());
    EXPECT_EQ(*s.ggml, c.t);
    EXPECT_EQ(s.rule, qs::ScaleRule::GgmlBlock);
    EXPECT_EQ(s.block, c.block);
    EXPECT_EQ(qs::bits_per_value(s, {4096, 4096}), c.bpv);
  }
  EXPECT_THROW(qs::parse_scheme("q3_k"), qs::FormatError);  // no quantizer: not a scheme
  // The other schemes' overhead: MX FP4 = 4 + 8 / 32; NVFP4 = 4 + 8 / 16 + 32 / n; int8 per channel of 4096.
  EXPECT_EQ(qs::bits_per_value(qs::parse_scheme("e2m1fn/block:32:e8m0fnu"), {4096, 4096}), 4.25);
  EXPECT_EQ(qs::bits_per_value(qs::parse_scheme("e2m1fn/block:16:e4m3fn"), {64, 64}), 4.5 + 32.0 / 4096);
  EXPECT_EQ(qs::bits_per_value(qs::parse_scheme("int8/channel:0"), {4096, 4096}), 8 + 32.0 / 4096);
  EXPECT_EQ(qs::bits_per_value(qs::parse_scheme("uint8/tensor"), {1024}), 8 + 40.0 / 1024);
  EXPECT_EQ(qs::bits_per_value(qs::parse_scheme("e4m3fn/none"), {1024}), 8.0);
}

// apply_scheme on a ggml scheme: each row of the last axis is exactly dequantize(quantize_ref(row)); non-finite
// x pass through, are counted, and do not move their block's scales; clipped elements are counted.
TEST(GgmlSchemes, ApplySchemeRowByRow) {
  for (const char* name : {"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q4_k", "q5_k", "q6_k"}) {
    SCOPED_TRACE(name);
    const qs::Scheme s = qs::parse_scheme(name);
    const std::size_t rows = 6, L = 512;
    Rng r = Rng::from_tag(name);
    std::vector<float> x(rows * L);
    for (float& v : x) v = float(r.normal() * 0.05);
    x[7] = std::numeric_limits<float>::quiet_NaN();
    x[L + 9] = std::numeric_limits<float>::infinity();
    std::vector<float> y(x.size()), y3(x.size());
    qs::ErrorMetrics m, m3;
    const qs::SchemeOutput out = qs::apply_scheme(s, x.data(), {int64_t(rows), int64_t(L)}, y.data(), 1, {}, &m);
    const qs::SchemeOutput out3 = qs::apply_scheme(s, x.data(), {int64_t(rows), int64_t(L)}, y3.data(), 3, {}, &m3);
    for (std::size_t row = 0; row < rows; ++row) {
      std::vector<float> xr(x.begin() + std::ptrdiff_t(row * L), x.begin() + std::ptrdiff_t((row + 1) * L));
      for (float& v : xr)
        if (!std::isfinite(v)) v = 0.0f;
      const auto want = decode(*s.ggml, quantize(*s.ggml, xr), L);
      for (std::size_t i = 0; i < L; ++i) {
        const float xv = x[row * L + i], yv = y[row * L + i];
        if (!std::isfinite(xv)) EXPECT_EQ(bits(yv), bits(xv));
        else ASSERT_EQ(bits(yv), bits(want[i])) << "row " << row << " element " << i;
      }
    }
    EXPECT_EQ(out.stats.nan, 1u);
    EXPECT_EQ(m.count, rows * L - 2);
    EXPECT_EQ(out.groups, rows * L / qs::ggml::sub_block_elems(*s.ggml));
    // The clip ranges say which elements were clipped: count them independently of the metrics.
    std::vector<double> lo(rows * L / qs::ggml::sub_block_elems(*s.ggml)), hi(lo.size());
    uint64_t clipped = 0;
    for (std::size_t row = 0; row < rows; ++row) {
      std::vector<float> xr(x.begin() + std::ptrdiff_t(row * L), x.begin() + std::ptrdiff_t((row + 1) * L));
      for (float& v : xr)
        if (!std::isfinite(v)) v = 0.0f;
      const std::size_t per = L / qs::ggml::sub_block_elems(*s.ggml);
      qs::ggml::clip_ranges(*s.ggml, quantize(*s.ggml, xr).data(), L, lo.data() + row * per, hi.data() + row * per);
    }
    for (std::size_t i = 0; i < x.size(); ++i) {
      const std::size_t g = i / qs::ggml::sub_block_elems(*s.ggml);
      if (std::isfinite(x[i]) && (x[i] < lo[g] || x[i] > hi[g])) ++clipped;
    }
    EXPECT_EQ(m.clipped, clipped);
    EXPECT_EQ(out.stats.overflow, clipped + 1);  // + the inf
    // Threads change nothing.
    EXPECT_TRUE(std::memcmp(y.data(), y3.data(), y.size() * 4) == 0);
    EXPECT_EQ(m3.sum_e2, m.sum_e2);
    EXPECT_EQ(m3.clipped, m.clipped);
    EXPECT_EQ(out3.stats.overflow, out.stats.overflow);
  }
}

// Q4_0's asymmetric grid: the element opposite the max |x| clips (to 7d), and the metrics say so.
TEST(GgmlSchemes, Q4_0OppositeExtremeClips) {
  std::vector<float> x(32, 0.0f);
  x[0] = -2.0f;
  x[1] = 2.0f;
  std::vector<float> y(32);
  qs::ErrorMetrics m;
  const qs::SchemeOutput out = qs::apply_scheme(qs::parse_scheme("q4_0"), x.data(), {32}, y.data(), 1, {}, &m);
  EXPECT_EQ(m.clipped, 1u);
  EXPECT_EQ(out.stats.overflow, 1u);
  // Clipping part: 2 - (1.75 + 0.125) beyond the half step; rounding part: 0.125.
  EXPECT_DOUBLE_EQ(m.sum_clip2, 0.125 * 0.125);
  EXPECT_DOUBLE_EQ(m.sum_round2, 0.125 * 0.125);
  EXPECT_DOUBLE_EQ(m.sum_e2, 0.25 * 0.25);
}

TEST(GgmlSchemes, RowsMustBeWholeBlocks) {
  std::vector<float> x(300, 1.0f), y(300);
  EXPECT_THROW(qs::apply_scheme(qs::parse_scheme("q4_k"), x.data(), {300}, y.data()), qs::FormatError);
  EXPECT_THROW(qs::apply_scheme(qs::parse_scheme("q8_0"), x.data(), {}, y.data()), qs::FormatError);
  EXPECT_FALSE(qs::ggml_rows_fit(qs::parse_scheme("q4_k"), {3, 100}));
  EXPECT_TRUE(qs::ggml_rows_fit(qs::parse_scheme("q4_k"), {3, 512}));
  EXPECT_TRUE(qs::ggml_rows_fit(qs::parse_scheme("e4m3fn/tensor"), {3, 100}));
}

// The Error view on a ggml scheme: its clipped count (from the fused pass, per sub-block interval) equals the
// metrics', and the grid is the sub-block holding the amax: 16 values for a 4-bit type, evenly spaced.
TEST(GgmlSchemes, ErrorViewAgreesWithMetrics) {
  for (const char* name : {"q4_0", "q4_k", "q6_k", "q8_0"}) {
    SCOPED_TRACE(name);
    Rng r = Rng::from_tag(name);
    std::vector<float> x(8 * 1024);
    for (float& v : x) v = float(r.laplace());
    const qs::ErrorView v = qs::compute_error_view(qs::parse_scheme(name), x.data(), {8, 1024});
    EXPECT_EQ(v.clipped, v.metrics.clipped);
    EXPECT_FALSE(v.grid.values.empty());
    EXPECT_EQ(v.grid.total_values, qs::ggml::sub_block_code_count(*qs::parse_scheme(name).ggml));
    for (std::size_t i = 1; i < v.grid.values.size(); ++i)
      EXPECT_NEAR(v.grid.values[i] - v.grid.values[i - 1], double(v.grid.scale), 1e-6 * std::fabs(v.grid.scale));
  }
}

namespace {
// The first byte where the Q4_K / Q5_K blocks quantize_ref writes at `level` differ from the scalar
// reference's (SIZE_MAX: none).
std::size_t firstKquantDifference(BlockType t, const std::vector<float>& x, qs::SimdLevel level) {
  std::vector<uint8_t> ref(qs::ggml::quantized_bytes(t, x.size())), got(ref.size(), 0xAA);
  qs::ggml::quantize_ref(t, x.data(), x.size(), ref.data(), qs::SimdLevel::Generic);
  qs::ggml::quantize_ref(t, x.data(), x.size(), got.data(), level);
  for (std::size_t i = 0; i < ref.size(); ++i)
    if (got[i] != ref[i]) return i;
  return SIZE_MAX;
}
}  // namespace

// Q4_K / Q5_K's sub-block search runs vectorized across sub-blocks (format/ggml_quantize_simd.h): every compiled
// level must write the scalar reference's bytes (SimdLevel::Generic, the code checked against ggml's C by
// tests/oracle) on random rows and on sub-blocks built to hit each branch of make_qkx2_quants: zeros, a
// constant (max == min), one outlier, denormals, huge values (sums overflow to inf), one-signed, ties of the
// candidate scales, and non-finite values (ggml leaves them undefined; the levels must still agree). Odd
// block counts exercise the kernels' padded calls (fewer super-blocks than their width).
TEST(GgmlBlocks, KquantLevelsMatchReference) {
  Rng r = Rng::from_tag("kquant-levels");
  const int kinds = 14;
  std::size_t checked = 0;
  for (int trial = 0; trial < 120; ++trial) {
    const std::size_t blocks = std::size_t(1 + trial % 5);
    std::vector<float> x(256 * blocks);
    const double sigma = std::ldexp(1.0, int(r.unit() * 60) - 30);
    for (std::size_t sb = 0; sb < x.size() / 32; ++sb) {
      float* v = x.data() + 32 * sb;
      const int kind = int((sb + std::size_t(trial)) % kinds);
      for (int i = 0; i < 32; ++i) v[i] = float(r.normal() * sigma);
      switch (kind) {
        case 0: for (int i = 0; i < 32; ++i) v[i] = 0.0f; break;
        case 1: for (int i = 0; i < 32; ++i) v[i] = float(sigma); break;                    // constant > 0
        case 2: for (int i = 0; i < 32; ++i) v[i] = -float(sigma); break;                   // constant < 0
        case 3: for (int i = 0; i < 32; ++i) v[i] = 0.0f; v[r.next() % 32] = float(sigma); break;  // one value
        case 4: v[r.next() % 32] = float(300 * sigma); break;                               // one outlier
        case 5: for (int i = 0; i < 32; ++i) v[i] = float(r.normal() * 1e-39); break;      // denormals
        case 6: for (int i = 0; i < 32; ++i) v[i] = float(r.normal() * 1e37); break;       // sum x^2 -> inf
        case 7: for (int i = 0; i < 32; ++i) v[i] = -std::fabs(v[i]); break;               // negative only
        case 8: for (int i = 0; i < 32; ++i) v[i] = std::fabs(v[i]); break;                // positive only
        case 9: for (int i = 0; i < 32; ++i) v[i] = float(int(r.unit() * 16) - 8) * float(sigma); break;  // on a grid
        case 10: for (int i = 0; i < 32; ++i) v[i] = (i % 2 ? 1.0f : -1.0f) * float(sigma); break;        // two values
        case 11: v[r.next() % 32] = std::numeric_limits<float>::quiet_NaN(); break;
        case 12: v[r.next() % 32] = (r.next() & 1 ? 1.0f : -1.0f) * std::numeric_limits<float>::infinity(); break;
        default: break;  // plain normal
      }
    }
    // The search's own outputs, bit for bit (most float differences would vanish in the 6-bit scales):
    // every super-block (AVX2) and every pair (AVX-512) against the reference.
    for (const qs::ggml::detail::KquantKernel& k : qs::ggml::detail::kquant_kernels()) {
      if (std::find(qs::available_simd_levels().begin(), qs::available_simd_levels().end(), k.level) ==
          qs::available_simd_levels().end())
        continue;
      const std::size_t per = std::min(blocks, std::size_t(k.blocks));  // 1 .. kernel width: padded calls too
      for (const auto& p : {std::tuple{15, -1.f, 20}, std::tuple{31, -0.5f, 15}}) {
        const auto [nmax, rmin, nstep] = p;
        for (std::size_t b = 0; b + per <= blocks; ++b) {
          float rs[32], rm[32], gs[32], gm[32];
          uint8_t rl[1024], gl[1024];
          qs::ggml::detail::KquantStep steps[32];
          for (std::size_t q = 0; q < per; ++q)
            qs::ggml::detail::kquant_subblocks_ref(x.data() + 256 * (b + q), nmax, rmin, nstep, rs + 8 * q, rm + 8 * q,
                                                   rl + 256 * q);
          k.run(x.data() + 256 * b, int(per), nmax, rmin, nstep, gs, gm, steps);
          // the codes of each sub-block's winning step
          for (std::size_t j = 0; j < 8 * per; ++j)
            qs::ggml::detail::kquant_codes(x.data() + 256 * b + 32 * j, steps[j], nmax, gl + 32 * j);
          for (std::size_t j = 0; j < 8 * per; ++j) {
            ASSERT_EQ(bits(gs[j]), bits(rs[j])) << qs::to_string(k.level) << " trial " << trial << " sub-block " << j;
            ASSERT_EQ(bits(gm[j]), bits(rm[j])) << qs::to_string(k.level) << " trial " << trial << " sub-block " << j;
          }
          ASSERT_EQ(std::memcmp(gl, rl, 256 * per), 0) << qs::to_string(k.level) << " trial " << trial;
          ++checked;
        }
      }
    }
    for (BlockType t : {BlockType::Q4_K, BlockType::Q5_K})
      for (qs::SimdLevel level : qs::available_simd_levels()) {
        const std::size_t i = firstKquantDifference(t, x, level);
        ASSERT_EQ(i, SIZE_MAX) << qs::ggml::block_info(t).name << " " << qs::to_string(level) << " trial " << trial
                               << " byte " << i << " (block " << i / qs::ggml::block_info(t).block_bytes << ")";
        ++checked;
      }
  }
  EXPECT_GE(checked, 240u + (qs::available_simd_levels().size() > 1 ? 200u : 0u));
}

// A sub-block whose 6-bit scale quantizes to 0 (its scale under 1/126 of the block's largest) keeps the
// search's codes, which Q4_K writes as they are: the vectorized levels compute them only there
// (kquant_codes from the winning step). Super-blocks with one loud sub-block and seven quiet ones, not flat and
// not one-signed; the reference bytes must show such sub-blocks with nonzero codes, or the test tests nothing.
TEST(GgmlBlocks, KquantZeroScaleSubBlocksKeepSearchCodes) {
  Rng r = Rng::from_tag("kquant-zero-scale");
  const std::size_t nsb = 64;
  std::vector<float> x(256 * nsb);
  for (std::size_t sb = 0; sb < nsb; ++sb)
    for (int j = 0; j < 8; ++j) {
      const double mag = j == int(sb % 8) ? 1000.0 : 0.01 * (1 + j);
      for (int i = 0; i < 32; ++i) x[256 * sb + 32 * j + i] = float((r.normal() + 0.3) * mag);
    }
  std::vector<uint8_t> ref(qs::ggml::quantized_bytes(BlockType::Q4_K, x.size()));
  qs::ggml::quantize_ref(BlockType::Q4_K, x.data(), x.size(), ref.data(), qs::SimdLevel::Generic);
  std::size_t kept = 0;  // sub-blocks with scale 0 and codes not all 0
  for (std::size_t sb = 0; sb < nsb; ++sb) {
    const uint8_t* b = ref.data() + 144 * sb;
    const uint8_t* q = b + 4;  // scales[12]
    for (int j = 0; j < 8; ++j) {
      const int sc = j < 4 ? (q[j] & 63) : ((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
      bool nonzero = false;
      for (int i = 0; i < 32; ++i) nonzero |= ((b[16 + 32 * (j / 2) + i] >> (4 * (j % 2))) & 0xF) != 0;
      kept += sc == 0 && nonzero;
    }
  }
  EXPECT_GE(kept, nsb * 4);
  for (BlockType t : {BlockType::Q4_K, BlockType::Q5_K})
    for (qs::SimdLevel level : qs::available_simd_levels())
      EXPECT_EQ(firstKquantDifference(t, x, level), SIZE_MAX) << qs::ggml::block_info(t).name << " " << qs::to_string(level);
}

// The same on many plain random super-blocks (normal, Laplace, uniform, one-signed; 4096 of them), where the
// search's steps compete closely: a step's codes taken one too high (16 for Q4_K: num reaches 16) or its
// decision to take a candidate made on a wrong sum shows here as different scales, mins or codes.
TEST(GgmlBlocks, KquantLevelsMatchReferenceRandom) {
  Rng r = Rng::from_tag("kquant-random");
  std::vector<float> x(256 * 4096);
  for (std::size_t sb = 0; sb < x.size() / 256; ++sb) {
    const double sigma = std::ldexp(1.0, int(r.unit() * 20) - 10);
    for (std::size_t i = 0; i < 256; ++i) {
      const int kind = int(sb % 4);
      const double v = kind == 0 ? r.normal() : kind == 1 ? r.laplace() : kind == 2 ? r.unit() - 0.3 : std::fabs(r.normal());
      x[256 * sb + i] = float(v * sigma);
    }
  }
  std::size_t checked = 0;
  for (BlockType t : {BlockType::Q4_K, BlockType::Q5_K})
    for (qs::SimdLevel level : qs::available_simd_levels()) {
      EXPECT_EQ(firstKquantDifference(t, x, level), SIZE_MAX) << qs::ggml::block_info(t).name << " " << qs::to_string(level);
      ++checked;
    }
  EXPECT_EQ(checked, 2 * qs::available_simd_levels().size());
}
