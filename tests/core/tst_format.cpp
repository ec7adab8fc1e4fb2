// core/format/format.{h,cpp}: the table facts of docs/DESIGN.md (Named formats), every code of every named
// format and of the 8-bit sweep (round trips, ties to even at every midpoint), special inputs, stochastic
// rounding statistics and the spec parser.
// Run: ctest --test-dir build -R tst_format (GoogleTest; the same rows as the former Qt Test suite, each
// row's name in its failure messages), or build/tests/core/tst_format --gtest_filter='Format.SpecialInputs'
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "test_text.h"
#include "format/format.h"
#include "format/rng.h"
#include "test_files.h"

using namespace qs;

namespace {

std::vector<Format> allFormats() {
  std::vector<Format> v = named_formats();
  for (const std::string& s : sweep_8bit_specs()) v.push_back(parse_format(s));
  return v;
}

// Significand parity of a positive value on the format's grid: "even" in ties-to-even.
bool evenSignificand(const Format& f, uint32_t code) {
  if (f.mbits == 0 && f.ebits > 0 && decode_ref(f, code) != 0) return false;  // significand 1
  return (code & 1u) == 0;
}

// Positive finite values of the grid with their codes, ascending.
std::vector<std::pair<double, uint32_t>> positiveGrid(const Format& f) {
  std::vector<std::pair<double, uint32_t>> g;
  for (uint32_t c = 0; c < f.code_count(); ++c) {
    const double v = decode_ref(f, c);
    if (!std::isfinite(v) || v < 0 || std::signbit(v)) continue;
    if (f.is_int() && v > f.max_finite) continue;
    g.push_back({v, c});
  }
  std::sort(g.begin(), g.end());
  return g;
}

constexpr double kSigmas = 5.0;  // statistical tolerance of the stochastic-rounding tests

// Failures recorded so far in the running test (to stop a row at its first failure, as QCOMPARE did).
int failureCount() {
  return ::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count();
}

std::string hex4(uint32_t c) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04x", c);
  return buf;
}

}  // namespace

TEST(Format, TableFacts) {
  struct Row {
    const char* row;
    const char* name;
    int bits;
    double maxFinite, minNormal, minSubnormal;
    int distinct;
    bool hasInf, hasNan, hasNegZero;
  };
  // Facts from docs/DESIGN.md (Named formats) / the OCP and ml_dtypes definitions, derived by hand.
  const Row rows[] = {
      {"e4m3fn", "e4m3fn", 8, 448.0, 0x1p-6, 0x1p-9, 253, false, true, true},
      {"e5m2", "e5m2", 8, 57344.0, 0x1p-14, 0x1p-16, 249, true, true, true},
      {"e4m3fnuz", "e4m3fnuz", 8, 240.0, 0x1p-7, 0x1p-10, 255, false, true, false},
      {"e5m2fnuz", "e5m2fnuz", 8, 57344.0, 0x1p-15, 0x1p-17, 255, false, true, false},
      {"e4m3b11fnuz", "e4m3b11fnuz", 8, 30.0, 0x1p-10, 0x1p-13, 255, false, true, false},
      {"e4m3", "e4m3", 8, 240.0, 0x1p-6, 0x1p-9, 241, true, true, true},
      {"e3m4", "e3m4", 8, 15.5, 0x1p-2, 0x1p-6, 225, true, true, true},
      {"e8m0fnu", "e8m0fnu", 8, 0x1p127, 0x1p-127, 0x1p-127, 255, false, true, false},
      {"e2m3fn", "e2m3fn", 6, 7.5, 1.0, 0.125, 63, false, false, true},
      {"e3m2fn", "e3m2fn", 6, 28.0, 0.25, 0.0625, 63, false, false, true},
      {"e2m1fn", "e2m1fn", 4, 6.0, 1.0, 0.5, 15, false, false, true},
      {"bf16", "bf16", 16, double(0x1.fep127), 0x1p-126, 0x1p-133, 65281, true, true, true},
      {"fp16", "fp16", 16, 65504.0, 0x1p-14, 0x1p-24, 63489, true, true, true},
      {"int8", "int8", 8, 127.0, 1.0, 1.0, 255, false, false, false},
      {"uint8", "uint8", 8, 255.0, 1.0, 1.0, 256, false, false, false},
      {"int4", "int4", 4, 7.0, 1.0, 1.0, 15, false, false, false},
      {"uint4", "uint4", 4, 15.0, 1.0, 1.0, 16, false, false, false},
      // The 8-bit sweep: e0m7 = +-m/128; e1m6 bias 0 = steps of 1/32 up to 127/32; e3m4 bias 1;
      // e7m0 bias 63 = powers of two 2^-62 .. 2^64 and zero.
      {"e0m7", "e0m7", 8, 127.0 / 128, 1.0 / 128, 1.0 / 128, 255, false, false, true},
      {"e1m6:bias=0", "e1m6:bias=0:specials=none", 8, 127.0 / 32, 2.0, 1.0 / 32, 255, false, false, true},
      {"e3m4:bias=1", "e3m4:bias=1:specials=none", 8, 124.0, 1.0, 1.0 / 16, 255, false, false, true},
      {"e7m0:bias=63", "e7m0:bias=63:specials=none", 8, 0x1p64, 0x1p-62, 0x1p-62, 255, false, false, true},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.row);
    const Format f = parse_format(r.name);
    EXPECT_EQ(f.bits, r.bits);
    EXPECT_DOUBLE_EQ(f.max_finite, r.maxFinite);
    EXPECT_DOUBLE_EQ(f.min_normal, r.minNormal);
    EXPECT_DOUBLE_EQ(f.min_subnormal, r.minSubnormal);
    EXPECT_EQ(int(distinct_values(f).size()), r.distinct);
    EXPECT_EQ(f.has_inf, r.hasInf);
    EXPECT_EQ(f.has_nan, r.hasNan);
    EXPECT_EQ(f.has_negative_zero, r.hasNegZero);
    // The largest finite value is what the grid says, and every value is exact in float32.
    double gridMax = 0;
    for (const GridEntry& e : grid(f)) {
      if (std::isfinite(e.value)) {
        gridMax = std::max(gridMax, e.value);
        EXPECT_DOUBLE_EQ(double(float(e.value)), e.value);
      }
    }
    EXPECT_DOUBLE_EQ(gridMax, r.maxFinite);
  }
}

TEST(Format, HalfPrecisionAgreesWithHardware) {
  // fp16 and bf16 decoding against the compiler's own conversions, all 65536 codes; e5m2 is the
  // top byte of fp16.
  const Format fp16 = parse_format("fp16"), bf16 = parse_format("bf16"), e5m2 = parse_format("e5m2");
  for (uint32_t c = 0; c < 65536; ++c) {
    const _Float16 h = std::bit_cast<_Float16>(uint16_t(c));
    const double want = double(h);
    const double got = decode_ref(fp16, c);
    ASSERT_TRUE((std::isnan(want) && std::isnan(got)) || (want == got && std::signbit(want) == std::signbit(got)))
        << "fp16 code 0x" << hex4(c);
    const float b = std::bit_cast<float>(uint32_t(c) << 16);
    const double gotb = decode_ref(bf16, c);
    ASSERT_TRUE((std::isnan(b) && std::isnan(gotb)) || (double(b) == gotb && std::signbit(b) == std::signbit(gotb)))
        << "bf16 code 0x" << hex4(c);
    // encode(float32 -> fp16, nearest, ieee) agrees with the hardware conversion of a float.
    const float x = std::bit_cast<float>(uint32_t(c) * 65537u + 12345u);
    if (!std::isnan(x)) {
      const uint16_t hw = std::bit_cast<uint16_t>(static_cast<_Float16>(x));
      ASSERT_EQ(encode_ref(fp16, x, Rounding::Nearest, Overflow::Ieee, 0), uint32_t(hw)) << "code 0x" << hex4(c);
    }
  }
  for (uint32_t c = 0; c < 256; ++c) {
    const double want = double(std::bit_cast<_Float16>(uint16_t(c << 8)));
    const double got = decode_ref(e5m2, c);
    ASSERT_TRUE((std::isnan(want) && std::isnan(got)) || want == got) << "e5m2 code " << c;
  }
}

TEST(Format, EveryCodeRoundTrips) {
  for (const Format& fmt : allFormats()) {
    const std::string spec = fmt.name;
    SCOPED_TRACE(spec);
    const Format f = parse_format(spec);
    int checked = 0;
    bool ok = true;
    for (uint32_t c = 0; c < f.code_count() && ok; ++c) {
      const double v = decode_ref(f, c);
      if (std::isnan(v)) continue;
      if (f.is_int() && std::fabs(v) > f.max_finite) continue;  // int8 0x80 (-128) is outside the narrow range
      for (Rounding r : {Rounding::Nearest, Rounding::Stochastic})
        for (Overflow o : {Overflow::Saturate, Overflow::Ieee})
          for (uint32_t rnd : {0u, 1u, 0x80000000u, 0xffffffffu}) {
            if (std::isinf(v) && o == Overflow::Saturate) continue;  // inf saturates to max by design
            EncodeStats st;
            const uint32_t back = encode_ref(f, v, r, o, rnd, &st);
            if (back != c) {
              ADD_FAILURE() << spec << " code " << c << " value " << g17(v) << " -> " << back << " ("
                            << to_string(r) << "/" << to_string(o) << "/rnd " << rnd << ")";
              ok = false;  // a failing row stops at its first failure, as QVERIFY2 did
            }
            if (st.overflow + st.underflow + st.nan != uint64_t(0)) {
              ADD_FAILURE() << spec << " code " << c << ": overflow " << st.overflow << " underflow "
                            << st.underflow << " nan " << st.nan << ", want none";
              ok = false;
            }
          }
      ++checked;
    }
    EXPECT_GT(checked, 0);
  }
}

TEST(Format, MidpointsTieToEven) {
  for (const Format& fmt : allFormats()) {
    const std::string spec = fmt.name;
    SCOPED_TRACE(spec);
    const Format f = parse_format(spec);
    const auto g = positiveGrid(f);
    ASSERT_GT(g.size(), 1u);
    auto neg = [&](uint32_t code) {
      // The code of -value: sign bit for floats, two's complement for integers.
      if (f.is_int()) return ((1u << f.bits) - code) & ((1u << f.bits) - 1u);
      return code | f.sign_bit();
    };
    int failures = 0;
    for (std::size_t i = 0; i + 1 < g.size() && failures == 0; ++i) {
      const auto [lo, clo] = g[i];
      const auto [hi, chi] = g[i + 1];
      const double mid = 0.5 * (lo + hi);
      const int before = failureCount();
      EXPECT_DOUBLE_EQ(double(float(mid)), mid);  // midpoints are float32 numbers for every format here
      const uint32_t want = evenSignificand(f, clo) ? clo : chi;
      const uint32_t got = encode_ref(f, mid, Rounding::Nearest, Overflow::Ieee, 0);
      EXPECT_EQ(got, want) << spec << ": midpoint " << g17(mid) << " of " << lo << " and " << hi << " -> code "
                           << got << ", want " << want;
      const float below = std::nextafter(float(mid), -INFINITY), above = std::nextafter(float(mid), INFINITY);
      EXPECT_EQ(encode_ref(f, below, Rounding::Nearest, Overflow::Ieee, 0), clo) << "below midpoint " << g17(mid);
      EXPECT_EQ(encode_ref(f, above, Rounding::Nearest, Overflow::Ieee, 0), chi) << "above midpoint " << g17(mid);
      if (f.is_signed && lo > 0) {  // mirrored on the negative side
        EXPECT_EQ(encode_ref(f, -mid, Rounding::Nearest, Overflow::Ieee, 0), neg(want)) << "-" << g17(mid);
        EXPECT_EQ(encode_ref(f, -double(above), Rounding::Nearest, Overflow::Ieee, 0), neg(chi))
            << "-" << g17(double(above));
      }
      failures = failureCount() - before;
    }
  }
}

TEST(Format, SpecialInputs) {
  struct Row {
    const char* row;
    const char* spec;
    double input;
    const char* overflow;
    uint32_t code;
    int overflows, underflows, nans;
  };
  const double inf = INFINITY, nan = NAN;
  const Row rows[] = {
      // docs/DESIGN.md (Encoding rules): E4M3FN 464 -> 448 (tie to even), 465 -> NaN under ieee;
      // saturate clamps first.
      {"e4m3fn 464 ieee", "e4m3fn", 464.0, "ieee", 0x7eu, 0, 0, 0},
      {"e4m3fn 465 ieee", "e4m3fn", 465.0, "ieee", 0x7fu, 1, 0, 0},
      {"e4m3fn -465 ieee", "e4m3fn", -465.0, "ieee", 0xffu, 1, 0, 0},
      {"e4m3fn 465 saturate", "e4m3fn", 465.0, "saturate", 0x7eu, 1, 0, 0},
      {"e4m3fn inf saturate", "e4m3fn", inf, "saturate", 0x7eu, 1, 0, 0},
      {"e4m3fn -inf ieee", "e4m3fn", -inf, "ieee", 0xffu, 1, 0, 0},
      {"e4m3fn nan", "e4m3fn", nan, "saturate", 0x7fu, 0, 0, 1},
      {"e4m3fn -0", "e4m3fn", -0.0, "ieee", 0x80u, 0, 0, 0},
      {"e4m3fn 2^-11 underflow", "e4m3fn", 0x1p-11, "ieee", 0x00u, 0, 1, 0},
      {"e4m3fn -2^-11 underflow", "e4m3fn", -0x1p-11, "ieee", 0x80u, 0, 1, 0},
      {"e4m3fn 2^-10 tie to zero", "e4m3fn", 0x1p-10, "ieee", 0x00u, 0, 1, 0},
      {"e4m3fn 2^-10+ rounds up", "e4m3fn", 0x1.000002p-10, "ieee", 0x01u, 0, 0, 0},
      {"e5m2 inf ieee", "e5m2", inf, "ieee", 0x7cu, 0, 0, 0},
      {"e5m2 -inf ieee", "e5m2", -inf, "ieee", 0xfcu, 0, 0, 0},
      {"e5m2 61440 ieee -> inf", "e5m2", 61440.0, "ieee", 0x7cu, 1, 0, 0},
      {"e5m2 61439 ieee -> max", "e5m2", 61439.0, "ieee", 0x7bu, 0, 0, 0},
      {"e5m2 inf saturate", "e5m2", inf, "saturate", 0x7bu, 1, 0, 0},
      {"e5m2 nan", "e5m2", nan, "ieee", 0x7eu, 0, 0, 1},
      {"e5m2 -nan", "e5m2", -nan, "ieee", 0xfeu, 0, 0, 1},
      {"e4m3 248 ieee -> inf", "e4m3", 248.0, "ieee", 0x78u, 1, 0, 0},
      {"e3m4 16 ieee -> inf", "e3m4", 16.0, "ieee", 0x70u, 1, 0, 0},
      {"e4m3fnuz -0 -> +0", "e4m3fnuz", -0.0, "ieee", 0x00u, 0, 0, 0},
      {"e4m3fnuz -tiny -> +0", "e4m3fnuz", -1e-9, "ieee", 0x00u, 0, 1, 0},
      {"e4m3fnuz nan", "e4m3fnuz", -nan, "ieee", 0x80u, 0, 0, 1},
      {"e4m3fnuz 248 ieee -> nan", "e4m3fnuz", 248.0, "ieee", 0x80u, 1, 0, 0},
      {"e4m3fnuz inf ieee -> nan", "e4m3fnuz", inf, "ieee", 0x80u, 1, 0, 0},
      {"e4m3fnuz 248 saturate", "e4m3fnuz", 248.0, "saturate", 0x7fu, 1, 0, 0},
      // E8M0: ties between powers of two go away from zero; no zero, no negatives.
      {"e8m0 3 -> 4", "e8m0fnu", 3.0, "ieee", 129u, 0, 0, 0},
      {"e8m0 1.5 -> 2", "e8m0fnu", 1.5, "ieee", 128u, 0, 0, 0},
      {"e8m0 1.49 -> 1", "e8m0fnu", 1.49, "ieee", 127u, 0, 0, 0},
      {"e8m0 0 -> nan", "e8m0fnu", 0.0, "saturate", 0xffu, 0, 0, 0},
      {"e8m0 -1 -> nan", "e8m0fnu", -1.0, "saturate", 0xffu, 1, 0, 0},
      {"e8m0 2^-140 -> 2^-127", "e8m0fnu", 0x1p-140, "ieee", 0x00u, 0, 0, 0},
      {"e8m0 2^128 ieee -> nan", "e8m0fnu", 0x1p128, "ieee", 0xffu, 1, 0, 0},
      {"e8m0 nan", "e8m0fnu", nan, "ieee", 0xffu, 0, 0, 1},
      // Formats with neither inf nor NaN saturate under ieee too; NaN becomes 0 and is counted.
      {"e2m1fn 5 tie -> 4", "e2m1fn", 5.0, "ieee", 0x6u, 0, 0, 0},
      {"e2m1fn 100 ieee", "e2m1fn", 100.0, "ieee", 0x7u, 1, 0, 0},
      {"e2m1fn -inf ieee", "e2m1fn", -inf, "ieee", 0xfu, 1, 0, 0},
      {"e2m1fn nan -> 0", "e2m1fn", nan, "ieee", 0x0u, 0, 0, 1},
      {"e2m1fn 0.25 tie -> 0", "e2m1fn", 0.25, "ieee", 0x0u, 0, 1, 0},
      {"e2m3fn 7.75 saturate", "e2m3fn", 7.75, "saturate", 0x1fu, 1, 0, 0},
      // Integers: round half to even, narrow symmetric range, two's complement codes.
      {"int8 2.5 -> 2", "int8", 2.5, "saturate", 2u, 0, 0, 0},
      {"int8 -1.5 -> -2", "int8", -1.5, "saturate", 0xfeu, 0, 0, 0},
      {"int8 -0.5 -> 0", "int8", -0.5, "saturate", 0u, 0, 1, 0},
      {"int8 127.5 -> 127", "int8", 127.5, "ieee", 127u, 1, 0, 0},
      {"int8 -200 -> -127", "int8", -200.0, "saturate", 0x81u, 1, 0, 0},
      {"int8 nan -> 0", "int8", nan, "saturate", 0u, 0, 0, 1},
      // Overflow counts what nearest rounding would take beyond max, in both modes: -7.4 is no overflow,
      // -7.5 (a tie that goes to -8) is one.
      {"int4 -7.4 -> -7 saturate", "int4", -7.4, "saturate", 0x9u, 0, 0, 0},
      {"int4 -7.5 -> -7 saturate", "int4", -7.5, "saturate", 0x9u, 1, 0, 0},
      {"e4m3fn 464 saturate", "e4m3fn", 464.0, "saturate", 0x7eu, 0, 0, 0},
      {"e4m3fn 449 saturate", "e4m3fn", 449.0, "saturate", 0x7eu, 0, 0, 0},
      {"int4 -7.4 -> -7 ieee", "int4", -7.4, "ieee", 0x9u, 0, 0, 0},
      {"uint8 -3 -> 0", "uint8", -3.0, "saturate", 0u, 1, 0, 0},
      {"uint8 255.7 -> 255", "uint8", 255.7, "saturate", 255u, 1, 0, 0},
      {"uint4 7.5 -> 8", "uint4", 7.5, "saturate", 8u, 0, 0, 0},
      // The sweep: E7M0 ties away from zero between powers of two, to zero below the smallest.
      {"e7m0 3 -> 4", "e7m0:bias=63:specials=none", 3.0, "ieee", 65u, 0, 0, 0},
      {"e7m0 2^-63 -> 0", "e7m0:bias=63:specials=none", 0x1p-63, "ieee", 0u, 0, 1, 0},
      {"e0m7 0.5+1/256 tie", "e0m7", (64.5 / 128), "ieee", 64u, 0, 0, 0},
      {"e0m7 1.0 saturates", "e0m7", 1.0, "ieee", 127u, 1, 0, 0},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.row);
    const Format f = parse_format(r.spec);
    EncodeStats st;
    const uint32_t got = encode_ref(f, r.input, Rounding::Nearest, parse_overflow(r.overflow), 0, &st);
    EXPECT_EQ(got, r.code);
    EXPECT_EQ(st.overflow, uint64_t(r.overflows));
    EXPECT_EQ(st.underflow, uint64_t(r.underflows));
    EXPECT_EQ(st.nan, uint64_t(r.nans));
  }
}

TEST(Format, StochasticProbability) {
  struct Row {
    const char* row;
    const char* spec;
    double input, lo, hi;
  };
  const Row rows[] = {
      {"e4m3fn 1.0625 in [1, 1.125]", "e4m3fn", 1.0625, 1.0, 1.125},
      {"e4m3fn 1.1 in [1, 1.125]", "e4m3fn", 1.1, 1.0, 1.125},
      {"e4m3fn 300 in [288, 320]", "e4m3fn", 300.0, 288.0, 320.0},
      {"e4m3fn subnormal 0.0025", "e4m3fn", 0.0025, 0x1p-9, 0x1p-8},
      {"e4m3fn below min 1e-4", "e4m3fn", 1e-4, 0.0, 0x1p-9},
      {"e5m2 -3.3 in [-3.5, -3]", "e5m2", -3.3, -3.5, -3.0},
      {"e8m0 5 in [4, 8]", "e8m0fnu", 5.0, 4.0, 8.0},
      {"e2m1fn 2.9 in [2, 3]", "e2m1fn", 2.9, 2.0, 3.0},
      {"int8 -0.3 in [-1, 0]", "int8", -0.3, -1.0, 0.0},
      {"int8 17.75 in [17, 18]", "int8", 17.75, 17.0, 18.0},
      {"uint4 3.01 in [3, 4]", "uint4", 3.01, 3.0, 4.0},
      {"e7m0 0.75 in [0.5, 1]", "e7m0:bias=63:specials=none", 0.75, 0.5, 1.0},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.row);
    const Format f = parse_format(r.spec);
    const double p = (r.input - r.lo) / (r.hi - r.lo);  // probability of the far (hi) neighbour
    const int n = 200000;
    int ups = 0;
    bool neighbours = true;
    for (int i = 0; i < n && neighbours; ++i) {
      const double v = decode_ref(f, encode_ref(f, r.input, Rounding::Stochastic, Overflow::Saturate,
                                                   stochastic_bits(42, uint64_t(i))));
      if (!(v == r.lo || v == r.hi)) {
        ADD_FAILURE() << "value " << v << " is not a neighbour";
        neighbours = false;
      }
      ups += v == r.hi;
    }
    if (!neighbours) continue;
    const double sigma = std::sqrt(p * (1 - p) / n);
    const double observed = double(ups) / n;
    EXPECT_LE(std::fabs(observed - p), kSigmas * sigma + 1.0 / n)
        << "P(hi) observed " << observed << ", expected " << p;
  }
}

TEST(Format, StochasticReproducible) {
  const Format f = parse_format("e4m3fn");
  int differ = 0;
  for (uint64_t i = 0; i < 10000; ++i) {
    const double x = 1.0 + double(i % 97) / 1000.0;
    const uint32_t a = encode_ref(f, x, Rounding::Stochastic, Overflow::Saturate, stochastic_bits(7, i));
    const uint32_t b = encode_ref(f, x, Rounding::Stochastic, Overflow::Saturate, stochastic_bits(7, i));
    const uint32_t c = encode_ref(f, x, Rounding::Stochastic, Overflow::Saturate, stochastic_bits(8, i));
    ASSERT_EQ(a, b) << "index " << i;
    differ += a != c;
  }
  EXPECT_GT(differ, 1000);  // another seed gives other choices
}

TEST(Format, Parser) {
  struct Row {
    const char* row;
    const char* spec;
    const char* canonical;
    int bits, bias;
    double maxFinite;
  };
  const Row rows[] = {
      {"table name", "e4m3fn", "e4m3fn", 8, 7, 448.0},
      {"upper case and spaces", " E5M2 ", "e5m2", 8, 15, 57344.0},
      {"ml_dtypes alias", "float8_e4m3fnuz", "e4m3fnuz", 8, 8, 240.0},
      {"defaults spelled out", "e5m2:bias=15:specials=ieee", "e5m2", 8, 15, 57344.0},
      {"custom bias", "e4m3:bias=8", "e4m3:bias=8", 8, 8, 120.0},
      {"custom fn", "e4m3:specials=fn", "e4m3fn", 8, 7, 448.0},
      {"unsigned", "e4m4:unsigned:specials=none", "e4m4:specials=none:unsigned", 8, 7, 496.0},
      {"e2m1 ieee default", "e2m1", "e2m1", 4, 1, 3.0},
      {"e1m2 none default", "e1m2", "e1m2", 4, 0, 3.5},
      {"e0m3 fixed point", "e0m3", "e0m3", 4, 1, 0.875},
      {"16 bits is fp16", "e5m10", "fp16", 16, 15, 65504.0},
      {"negative bias", "e2m2:bias=-1:specials=none", "e2m2:bias=-1:specials=none", 5, -1, 28.0},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.row);
    const Format f = parse_format(r.spec);
    EXPECT_EQ(f.name, r.canonical);
    EXPECT_EQ(f.bits, r.bits);
    EXPECT_EQ(f.bias, r.bias);
    EXPECT_DOUBLE_EQ(f.max_finite, r.maxFinite);
    EXPECT_TRUE(parse_format(f.name) == f);  // the canonical name parses back to the same format
  }
}

TEST(Format, ParserErrors) {
  struct Row {
    const char* row;
    const char* spec;
    const char* mentions;
  };
  const Row rows[] = {
      {"e9m9", "e9m9", "exponent bits"},
      {"e0m0", "e0m0", "no exponent or mantissa"},
      {"e7m9 too wide", "e7m9", "17 bits"},
      {"e5m11 too wide", "e5m11", "at most 16"},
      {"bias too large", "e5m2:bias=200", "bias 200 out of range"},
      {"bias too small", "e8m7:bias=-10", "out of range"},
      {"bias not a number", "e4m3:bias=x", "not an integer"},
      {"unknown specials", "e4m3:specials=foo", "unknown specials"},
      {"fnuz unsigned", "e4m3:specials=fnuz:unsigned", "fnuz needs a sign"},
      {"ieee with E=1", "e1m3:specials=ieee", "at least 2 exponent bits"},
      {"unknown option", "e4m3:foo", "unknown option"},
      {"unknown name", "fp8", "unknown format"},
      {"empty", "", "empty"},
      {"garbage", "e4x3", "unknown format"},
      {"bias twice", "e4m3:bias=1:bias=2", "twice"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.row);
    try {
      parse_format(r.spec);
      ADD_FAILURE() << "no error";
    } catch (const FormatError& e) {
      const std::string what = e.what();
      EXPECT_TRUE(qs_test::contains(what, r.mentions)) << what;
      EXPECT_FALSE(qs_test::contains(what, "\n")) << what;
    }
  }
}

// The shortcut used for NVFP4 block scales equals the reference on every grid value, every midpoint,
// the doubles one ulp either side of them, and seeded random doubles across (and beyond) the range.
TEST(Format, RoundNearestSaturate) {
  for (const Format& fmt : allFormats()) {
    const std::string spec = fmt.name;
    SCOPED_TRACE(spec);
    const Format f = parse_format(spec);
    auto ref = [&](double x) { return decode_ref(f, encode_ref(f, x, Rounding::Nearest, Overflow::Saturate, 0)); };
    std::vector<double> probes = {0.0, f.max_finite, f.max_finite * 1.01, f.max_finite * 4, f.min_subnormal / 2,
                                  f.min_subnormal / 3, 1e-300};
    std::vector<double> g;
    for (double v : distinct_values(f))
      if (v >= 0 && std::isfinite(v)) g.push_back(v);
    for (std::size_t i = 0; i < g.size(); ++i) {
      probes.push_back(g[i]);
      if (i + 1 < g.size()) {
        const double mid = (g[i] + g[i + 1]) / 2;
        probes.insert(probes.end(), {mid, std::nextafter(mid, 0.0), std::nextafter(mid, HUGE_VAL)});
      }
    }
    uint64_t state = 0x9e3779b97f4a7c15ull ^ std::hash<std::string>{}(f.name);
    for (int i = 0; i < 20000; ++i) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      const double u = double(state >> 11) * 0x1p-53;
      const double lo = std::log2(f.min_subnormal) - 2, hi = std::log2(f.max_finite) + 1;
      probes.push_back(std::exp2(lo + u * (hi - lo)));
    }
    for (double x : probes) {
      const double want = ref(x), got = round_nearest_saturate(f, x);
      if (!(want == got || (std::isnan(want) && std::isnan(got)))) {
        ADD_FAILURE() << spec << ": x=" << g17(x) << " ref " << g17(want) << " got " << g17(got);
        break;  // the row's first failure, as QVERIFY2 did
      }
    }
  }
}
