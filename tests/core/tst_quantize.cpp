// Whole-tensor fake quantization (core/format/quantize.h): thread-count independence, the scale
// rules (amax, none, value, the PyTorch MinMax affine rule of unsigned integers), statistics of
// non-finite inputs, SQNR, the float64 path, empty inputs, cancellation and invalid scales.
// Expected results are computed here from the documented rules, not taken from the engine.
// Run: ctest --test-dir build -R tst_quantize (GoogleTest; the same rows as the former Qt Test suite, each
// row's name in its failure messages; a row stops at its first failed check, as in Qt Test), or
// build/tests/core/tst_quantize --gtest_filter='Quantize.AffineMinMax'
#include "test_text.h"
#include "format/encode_simd.h"

#include <gtest/gtest.h>

#include "test_rng.h"
#include "format/format.h"
#include "format/quantize.h"
#include "quant/int8_quant.h"
#include "format/rng.h"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numbers>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr uint64_t kDataSeed = 0xda7a5eedULL;          // every generated tensor
constexpr uint64_t kRoundSeed = 0xfeedface12345678ULL; // EncodeOptions::seed
constexpr std::size_t kChunk = std::size_t(1) << 20;   // quantize.cpp's internal chunk (for sizing)
constexpr std::size_t kThreadsN = 2 * kChunk + 12345;  // three chunks, the last one partial
constexpr double kSigmas = 5.0;                        // statistical checks: 5 sd of the null distribution
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();


uint32_t bitsOf(float v) { return std::bit_cast<uint32_t>(v); }
bool sameValue(float a, float b) { return (std::isnan(a) && std::isnan(b)) || bitsOf(a) == bitsOf(b); }
bool sameDouble(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

// normal(sigma) samples; every `special`-th element (0: none) cycles through NaN, +inf, -inf, 0.
std::vector<float> normalData(std::size_t n, double sigma, uint64_t seed, std::size_t special = 0) {
  Rng g{seed};
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(g.normal() * sigma);
    if (special && i % special == special - 1) {
      const float s[] = {kNaN, kInf, -kInf, 0.0f};
      x[i] = s[(i / special) % 4];
    }
  }
  return x;
}

// Exact comparison (the Qt suite's QCOMPARE_EXACT: QCOMPARE on floating point is fuzzy): bitwise, NaN equal to
// NaN, and +0 equal to -0. Stops the row (each row runs in its own lambda) as QVERIFY2 did.
#define ASSERT_EXACT(got, want)                                                                      \
  ASSERT_TRUE(sameDouble(double(got), double(want)) || (double(got) == 0 && double(want) == 0))      \
      << #got << " = " << g17(double(got)) << ", expected " << g17(double(want))

std::string statsText(const qs::EncodeStats& s) {
  return "overflow " + std::to_string(s.overflow) + " underflow " + std::to_string(s.underflow) + " nan " +
         std::to_string(s.nan);
}
bool sameStats(const qs::EncodeStats& a, const qs::EncodeStats& b) {
  return a.overflow == b.overflow && a.underflow == b.underflow && a.nan == b.nan;
}

// First element where codes or values differ, or the stats; empty when equal.
std::string difference(const float* x, std::size_t n, const std::vector<uint16_t>& ca, const std::vector<float>& va,
                   const qs::EncodeStats& sa, const std::vector<uint16_t>& cb, const std::vector<float>& vb,
                   const qs::EncodeStats& sb) {
  for (std::size_t i = 0; i < n; ++i)
    if (ca[i] != cb[i] || !sameValue(va[i], vb[i]))
    {
      char buf[200];
      std::snprintf(buf, sizeof buf, "element %zu, input %.9g (0x%08x): code 0x%x vs 0x%x, value %.9g vs %.9g", i,
                    double(x[i]), bitsOf(x[i]), unsigned(ca[i]), unsigned(cb[i]), double(va[i]), double(vb[i]));
      return buf;
    }
  if (!sameStats(sa, sb)) return "stats " + statsText(sa) + " vs " + statsText(sb);
  return {};
}

struct Quantized {
  qs::QuantizeResult r;
  std::vector<uint16_t> codes;
  std::vector<float> values;
};

Quantized quantize(const qs::Format& f, const qs::EncodeOptions& opt, qs::ScaleChoice sc, const std::vector<float>& x,
                   int threads) {
  Quantized q;
  q.codes.assign(x.size(), 0xbeef);
  q.values.assign(x.size(), -1.0f);
  q.r = qs::quantize_f32(f, opt, sc, x.data(), x.size(), q.values.data(), q.codes.data(), nullptr, threads);
  return q;
}

// The oracle for one scale: encode_f32_ref over the whole tensor with element indices from 0.
Quantized oracle(const qs::Format& f, const qs::EncodeOptions& opt, float scale, const std::vector<float>& x) {
  Quantized q;
  q.codes.assign(x.size(), 0);
  q.values.assign(x.size(), 0.0f);
  qs::EncodeJob job;
  job.x = x.data();
  job.n = x.size();
  job.scale = scale;
  job.codes16 = q.codes.data();
  job.values = q.values.data();
  q.r.stats = qs::encode_f32_ref(f, opt, job);
  q.r.scale = scale;
  return q;
}

// Round half to even, written out (not std::nearbyint) so the expectation does not share the
// engine's implementation.
float roundHalfEven(float v) {
  if (!std::isfinite(v)) return v;
  const float fl = std::floor(v);
  const float frac = v - fl;  // exact for |v| < 2^23; larger floats are integers (frac 0)
  if (frac > 0.5f) return fl + 1;
  if (frac < 0.5f) return fl;
  return std::fmod(fl, 2.0f) == 0 ? fl : fl + 1;
}

// The PyTorch MinMax affine rule of docs/DESIGN.md (Schemes and scale rules), evaluated in float32 here:
// lo = min(x_min, 0), hi = max(x_max, 0) over finite x, s = max((hi - lo) / qmax, FLT_EPSILON),
// zp = clamp(round(-lo / s)), q = clamp(round(x / s) + zp) (stochastic: floor(x / s) + [rnd < floor(frac * 2^32)]),
// value (q - zp) * s. NaN has no code in an integer format: it becomes 0 (code zp) and is counted.
struct Affine {
  float s = 1;
  int zp = 0;
  std::vector<uint16_t> codes;
  std::vector<float> values;
  qs::EncodeStats stats;
  std::size_t ties = 0;  // elements whose x / s was exactly k + 1/2
};

Affine affineExpected(const qs::Format& f, const qs::EncodeOptions& opt, const std::vector<float>& x) {
  const float qmax = static_cast<float>(f.max_finite);
  float xmin = 0, xmax = 0;
  for (float v : x)
    if (std::isfinite(v)) {
      xmin = std::min(xmin, v);
      xmax = std::max(xmax, v);
    }
  Affine a;
  const float lo = std::min(xmin, 0.0f), hi = std::max(xmax, 0.0f);
  a.s = std::max((hi - lo) / qmax, FLT_EPSILON);
  a.zp = static_cast<int>(std::clamp(roundHalfEven(-lo / a.s), 0.0f, qmax));
  for (std::size_t i = 0; i < x.size(); ++i) {
    float q;
    if (std::isnan(x[i])) {
      ++a.stats.nan;
      q = float(a.zp);
    } else {
      const float y = x[i] / a.s;
      float r;
      if (opt.rounding == qs::Rounding::Nearest || !std::isfinite(y)) {
        r = roundHalfEven(y);
        if (std::isfinite(y) && y - std::floor(y) == 0.5f) ++a.ties;
      } else {
        const double fl = std::floor(double(y)), frac = double(y) - fl;
        r = static_cast<float>(fl + (double(qs::stochastic_bits(opt.seed, i)) < std::floor(std::ldexp(frac, 32))));
      }
      q = r + float(a.zp);
      if (q < 0 || q > qmax) {
        ++a.stats.overflow;
        q = std::clamp(q, 0.0f, qmax);
      } else if (q == float(a.zp) && x[i] != 0) {
        ++a.stats.underflow;
      }
    }
    a.codes.push_back(static_cast<uint16_t>(q));
    a.values.push_back((q - float(a.zp)) * a.s);
  }
  return a;
}

bool affineFormat(const qs::Format& f) { return f.is_int() && !f.is_signed; }

qs::EncodeOptions options(qs::Rounding r, qs::Overflow o = qs::Overflow::Saturate) {
  qs::EncodeOptions opt;
  opt.rounding = r;
  opt.overflow = o;
  opt.seed = kRoundSeed;
  return opt;
}

qs::ScaleChoice scaleValue(double v) { return {qs::ScaleChoice::Value, v}; }

// Max |x| over finite x, in the test.
float finiteAmax(const std::vector<float>& x) {
  float a = 0;
  for (float v : x)
    if (std::isfinite(v)) a = std::max(a, std::fabs(v));
  return a;
}

// 10 log10(sum x^2 / sum (x - y)^2) over finite x, in long double.
long double sqnrExpected(const float* x, const float* y, std::size_t n) {
  long double sig = 0, err = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) continue;
    const long double d = (long double)x[i] - (long double)y[i];
    sig += (long double)x[i] * x[i];
    err += d * d;
  }
  return 10 * std::log10(sig / err);
}

// sqnr_db accumulates n terms in double: each sum is off by at most ~(n + 1) units of roundoff
// (recursive summation bound), so their ratio by 2 (n + 2) u, u = 2^-53, which is 10 / ln 10 times
// that in dB; log10 adds a few ulps of the result.
double sqnrToleranceDb(std::size_t n, double db) {
  const double u = DBL_EPSILON / 2;
  const double ratioRelTol = 2.0 * (double(n) + 2) * u;
  return 10 / std::numbers::ln10 * ratioRelTol + 4 * DBL_EPSILON * std::fabs(db);
}

// Named formats plus the 8-bit sweep, duplicates removed (QStringList::removeDuplicates keeps the first).
std::vector<std::string> uniqueSpecs(bool skipAffine) {
  std::vector<std::string> specs;
  std::set<std::string> seen;
  for (const qs::Format& f : qs::named_formats())
    if (!(skipAffine && affineFormat(f)) && seen.insert(f.name).second) specs.push_back(f.name);
  for (const std::string& s : qs::sweep_8bit_specs())
    if (seen.insert(s).second) specs.push_back(s);
  return specs;
}

}  // namespace

// Each row runs in a lambda, so that ASSERT_* ends the row only, as QCOMPARE / QVERIFY ended a Qt Test row.

// Threads split the tensor into chunks; results must not depend on that: identical values, codes,
// stats, scale, zero point and SQNR, and equal to a whole-tensor oracle (element indices from 0).
TEST(Quantize, ThreadsAgree) {
  const std::vector<float> x = normalData(kThreadsN, 3.0, kDataSeed, 1001);  // same for every row
  for (const char* specName : {"e4m3fn", "e5m2", "e2m1fn", "e8m0fnu", "bf16", "int8", "uint8"})
    for (qs::Rounding rounding : {qs::Rounding::Nearest, qs::Rounding::Stochastic}) {
      const std::string spec = specName;
      const qs::Format f = qs::parse_format(spec);
      const qs::EncodeOptions opt = options(rounding);
      // threads=1 once per format and rounding (the Qt suite checked it in the first of its rows).
      const Quantized one = quantize(f, opt, {}, x, 1);
      [&] {
        SCOPED_TRACE(spec + "/" + qs::to_string(rounding) + "/amax/n=2^21+12345/threads=1");
        // Single-threaded against the rules: the oracle (float formats, int8) or the affine rule (uint8).
        if (affineFormat(f)) {
          const Affine a = affineExpected(f, opt, x);
          ASSERT_EXACT(one.r.scale, a.s);
          ASSERT_EQ(one.r.zero_point, a.zp);
          const std::string d =
              difference(x.data(), x.size(), a.codes, a.values, a.stats, one.codes, one.values, one.r.stats);
          ASSERT_TRUE(d.empty()) << "affine rule vs threads=1: " << d;
        } else {
          const Quantized o = oracle(f, opt, float(one.r.scale), x);
          const std::string d =
              difference(x.data(), x.size(), o.codes, o.values, o.r.stats, one.codes, one.values, one.r.stats);
          ASSERT_TRUE(d.empty()) << "encode_f32_ref vs threads=1: " << d;
        }
      }();
      for (int threads : {2, 3}) {
        SCOPED_TRACE(spec + "/" + qs::to_string(rounding) + "/amax/n=2^21+12345/threads=" + std::to_string(threads));
        [&] {
          const Quantized many = quantize(f, opt, {}, x, threads);
          const std::string d =
              difference(x.data(), x.size(), one.codes, one.values, one.r.stats, many.codes, many.values, many.r.stats);
          ASSERT_TRUE(d.empty()) << "threads=1 vs threads=" << threads << ": " << d;
          ASSERT_TRUE(sameDouble(one.r.scale, many.r.scale));
          ASSERT_TRUE(sameDouble(one.r.amax, many.r.amax));
          ASSERT_TRUE(sameDouble(one.r.sqnr_db, many.r.sqnr_db));
          ASSERT_EQ(one.r.zero_point, many.r.zero_point);
          ASSERT_EQ(many.r.count, x.size());
          ASSERT_FALSE(many.r.cancelled);
          ASSERT_EXACT(qs::amax_f32(x.data(), x.size(), threads), qs::amax_f32(x.data(), x.size(), 1));
        }();
      }
    }
}

// s = amax / max_finite with amax over finite x (NaN and inf do not set it), and the values are
// those of encode_f32_ref at that scale. Every format whose scale rule is amax / max_finite (unsigned
// integers are affine), at amplitudes where that ratio is a normal float32 for every format (see
// AmaxTinyRatioStaysFinite).
TEST(Quantize, AmaxScale) {
  for (const std::string& spec : uniqueSpecs(true))
    for (double sigma : {1e3, 1e7})
      for (int special : {0, 7}) {
        SCOPED_TRACE(spec + "/normal*" + g6(sigma) + (special ? "/nan+-inf" : ""));
        [&] {
          const qs::Format f = qs::parse_format(spec);
          const std::vector<float> x = normalData(4099, sigma, kDataSeed + 1, std::size_t(special));
          const float amax = finiteAmax(x);
          const float expected = amax / static_cast<float>(f.max_finite);  // float32, as the kernels see it
          ASSERT_GE(expected, FLT_MIN) << "row outside the normal float32 range of the formula";
          const qs::EncodeOptions opt = options(qs::Rounding::Nearest, qs::Overflow::Ieee);
          const Quantized q = quantize(f, opt, {}, x, 2);
          ASSERT_EXACT(q.r.amax, amax);
          ASSERT_EXACT(qs::amax_f32(x.data(), x.size(), 2), amax);
          ASSERT_EXACT(q.r.scale, expected);
          ASSERT_EQ(q.r.zero_point, 0);
          const Quantized o = oracle(f, opt, expected, x);
          const std::string d = difference(x.data(), x.size(), o.codes, o.values, o.r.stats, q.codes, q.values, q.r.stats);
          ASSERT_TRUE(d.empty()) << "encode_f32_ref at amax / max_finite vs quantize_f32: " << d;
        }();
      }
}

// amax = 0 (all finite inputs are zeros, whatever else there is): s = 1.
TEST(Quantize, AmaxScaleZero) {
  for (const char* spec : {"e4m3fn", "e5m2", "bf16", "int8", "e8m0fnu", "e0m7"})
    for (bool nonFinite : {false, true}) {
      SCOPED_TRACE(std::string(spec) + "/" + (nonFinite ? "zeros+nan+-inf" : "all-zeros"));
      [&] {
        const qs::Format f = qs::parse_format(spec);
        std::vector<float> x(100, 0.0f);
        for (std::size_t i = 0; i < x.size(); i += 3) x[i] = -0.0f;
        if (nonFinite) x[5] = kNaN, x[17] = kInf, x[60] = -kInf;
        const Quantized q = quantize(f, options(qs::Rounding::Nearest), {}, x, 1);
        ASSERT_EXACT(q.r.amax, 0.0);
        ASSERT_EXACT(q.r.scale, 1.0);
        const Quantized o = oracle(f, options(qs::Rounding::Nearest), 1.0f, x);
        const std::string d = difference(x.data(), x.size(), o.codes, o.values, o.r.stats, q.codes, q.values, q.r.stats);
        ASSERT_TRUE(d.empty()) << d;
      }();
    }
}

// Whatever the ratio amax / max_finite (for bf16 and sigma 1 it is below FLT_MIN), amax scaling
// never overflows: under ieee no element becomes inf or NaN, and the largest input lands within
// half a quantum of the top of the grid.
TEST(Quantize, AmaxTinyRatioStaysFinite) {
  std::vector<std::string> specs;
  for (const qs::Format& f : qs::named_formats())
    if (!affineFormat(f) && !f.no_zero) specs.push_back(f.name);
  for (const std::string& spec : specs)
    for (double sigma : {1e-3, 1.0, 1e3}) {
      SCOPED_TRACE(spec + "/normal*" + g6(sigma) + "/nearest/ieee");
      [&] {
        const qs::Format f = qs::parse_format(spec);
        const std::vector<float> x = normalData(4096, sigma, kDataSeed + 2);
        const Quantized q = quantize(f, options(qs::Rounding::Nearest, qs::Overflow::Ieee), {}, x, 1);
        ASSERT_EQ(q.r.stats.overflow, uint64_t(0));
        ASSERT_EQ(q.r.stats.nan, uint64_t(0));
        ASSERT_TRUE(q.r.scale > 0 && std::isfinite(q.r.scale)) << q.r.scale;
        std::size_t top = 0;
        for (std::size_t i = 0; i < x.size(); ++i) {
          ASSERT_TRUE(std::isfinite(q.values[i])) << "element " << i << " (" << g6(x[i]) << ") became " << g6(q.values[i]);
          if (std::fabs(x[i]) > std::fabs(x[top])) top = i;
        }
        // The grid's top step is 2^(emax - M) for floats, 1 for integers: relative size 2^-M at most.
        const double relStep = f.is_int() ? 1.0 / f.max_finite : std::ldexp(1.0, -f.mbits);
        ASSERT_LE(std::fabs(double(q.values[top]) - double(x[top])), 0.5 * relStep * std::fabs(double(x[top])) * (1 + 1e-6))
            << "amax element " << g6(x[top]) << " -> " << g6(q.values[top]);
      }();
    }
}

// None: s = 1; Value: s = the value rounded to float32. Unsigned integers take these as given (the
// affine rule is for amax only). Values and codes are encode_f32_ref's at that scale.
TEST(Quantize, ScaleNoneAndValue) {
  struct Row {
    std::string name, spec;
    int kind;
    double value;
  };
  std::vector<Row> rows;
  for (const char* spec : {"e4m3fn", "e5m2", "e2m1fn", "bf16", "int8", "uint8", "uint4", "e8m0fnu"}) {
    rows.push_back({std::string(spec) + "/none", spec, int(qs::ScaleChoice::None), 1.0});
    for (double v : {0.75, 0x1p-5, 3e4, 0.1})
      rows.push_back({std::string(spec) + "/value=" + g17(v), spec, int(qs::ScaleChoice::Value), v});
  }
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    [&] {
      const int kind = row.kind;
      const double value = row.value;
      const qs::Format f = qs::parse_format(row.spec);
      const qs::ScaleChoice sc{qs::ScaleChoice::Kind(kind), value};
      const float s = kind == qs::ScaleChoice::None ? 1.0f : static_cast<float>(value);
      const std::vector<float> x = normalData(3001, f.max_finite * 0.4 * s, kDataSeed + 3, 97);
      for (qs::Rounding r : {qs::Rounding::Nearest, qs::Rounding::Stochastic}) {
        const Quantized q = quantize(f, options(r), sc, x, 2);
        ASSERT_EXACT(q.r.scale, s);
        ASSERT_EQ(q.r.zero_point, 0);
        const Quantized o = oracle(f, options(r), s, x);
        const std::string d = difference(x.data(), x.size(), o.codes, o.values, o.r.stats, q.codes, q.values, q.r.stats);
        ASSERT_TRUE(d.empty()) << qs::to_string(r) << ": " << d;
      }
    }();
  }
}

// Unsigned integers under amax: the PyTorch MinMax affine rule, computed independently in float32
// (affineExpected) on a few hundred seeded values: scale, zero point, every code and value, stats;
// 0.0 is exact.
//   pow2-scale-ties: lo = -80 s, hi = (qmax - 80) s with s = 2^-4, so x / s is exact and the
//                    inputs (k + 1/2) s are exact ties (half to even); mixed-sign: normal*2.5;
//   all-positive: zp = 0; all-negative: zp = qmax; tiny-range: (hi - lo) / qmax < FLT_EPSILON;
//   all-zeros: s = FLT_EPSILON, zp = 0; nan+-inf: non-finite inputs do not set the range, NaN -> 0.
TEST(Quantize, AffineMinMax) {
  for (const char* specName : {"uint8", "uint4"})
    for (const char* kindName : {"pow2-scale-ties", "mixed-sign", "all-positive", "all-negative", "tiny-range",
                                 "all-zeros", "nan+-inf"}) {
      const std::string spec = specName, kind = kindName;
      SCOPED_TRACE(spec + "/" + kind + "/amax/nearest");
      [&] {
        const qs::Format f = qs::parse_format(spec);
        const int qmax = int(f.max_finite);
        Rng g{kDataSeed + 4};
        std::vector<float> x;
        constexpr int kCount = 400;
        if (kind == "pow2-scale-ties") {
          const float s = 0x1p-4f;
          const int zp = qmax * 5 / 16;  // 80 for uint8, 4 for uint4
          x.push_back(-zp * s);
          x.push_back((qmax - zp) * s);
          for (int i = 0; i < kCount; ++i) {
            const int k = int(g.next() % uint64_t(qmax)) - zp;
            x.push_back((i % 2 == 0) ? (k + 0.5f) * s : static_cast<float>((k + g.open01()) * s));
          }
        } else if (kind == "mixed-sign") {
          x = normalData(kCount, 2.5, kDataSeed + 5);
        } else if (kind == "all-positive") {
          for (float v : normalData(kCount, 2.5, kDataSeed + 6)) x.push_back(std::fabs(v));
        } else if (kind == "all-negative") {
          for (float v : normalData(kCount, 2.5, kDataSeed + 7)) x.push_back(-std::fabs(v));
        } else if (kind == "tiny-range") {
          for (int i = 0; i < kCount; ++i) x.push_back(static_cast<float>((g.open01() - 0.3) * 1e-6));
        } else if (kind == "all-zeros") {
          x.assign(kCount, 0.0f);
        } else if (kind == "nan+-inf") {
          x = normalData(kCount, 2.5, kDataSeed + 8, 9);
        }
        x.push_back(0.0f);
        x.push_back(-0.0f);
        const qs::EncodeOptions opt = options(qs::Rounding::Nearest);
        const Affine a = affineExpected(f, opt, x);
        if (kind == "pow2-scale-ties") {
          ASSERT_EXACT(a.s, 0x1p-4f);  // the construction above, or the row tests less than it claims
          ASSERT_GE(a.ties, std::size_t(kCount / 4));
        }
        if (kind == "all-positive") {
          ASSERT_EQ(a.zp, 0);
        }
        if (kind == "all-negative") {
          ASSERT_EQ(a.zp, qmax);
        }
        if (kind == "tiny-range" || kind == "all-zeros") {
          ASSERT_EXACT(a.s, FLT_EPSILON);
        }

        std::vector<uint8_t> codes8(x.size(), 0xa5);
        Quantized q;
        q.codes.assign(x.size(), 0xbeef);
        q.values.assign(x.size(), -1.0f);
        q.r = qs::quantize_f32(f, opt, {}, x.data(), x.size(), q.values.data(), q.codes.data(), codes8.data(), 1);
        ASSERT_EXACT(q.r.scale, a.s);
        ASSERT_EQ(q.r.zero_point, a.zp);
        const std::string d = difference(x.data(), x.size(), a.codes, a.values, a.stats, q.codes, q.values, q.r.stats);
        ASSERT_TRUE(d.empty()) << "affine rule vs quantize_f32: " << d;
        for (std::size_t i = 0; i < x.size(); ++i) {
          ASSERT_EQ(int(codes8[i]), int(q.codes[i])) << "element " << i;
          if (x[i] == 0) {
            ASSERT_TRUE(q.values[i] == 0.0f) << "element " << i << ": 0 -> " << g6(q.values[i]);
          }
        }
        // The float64 entry follows the same rule (its inputs here are float32 values).
        const std::vector<double> xd(x.begin(), x.end());
        Quantized q64;
        q64.codes.assign(x.size(), 0xbeef);
        q64.values.assign(x.size(), -1.0f);
        q64.r = qs::quantize_f64(f, opt, {}, xd.data(), xd.size(), q64.values.data(), q64.codes.data(), nullptr, 1);
        ASSERT_EXACT(q64.r.scale, a.s);
        ASSERT_EQ(q64.r.zero_point, a.zp);
        const std::string d64 = difference(x.data(), x.size(), a.codes, a.values, a.stats, q64.codes, q64.values, q64.r.stats);
        ASSERT_TRUE(d64.empty()) << "affine rule vs quantize_f64: " << d64;
      }();
    }
}

// 37 NaNs (both signs) and 23 infinities (both signs) among in-range values: stats.nan counts the
// NaNs; stats.overflow counts the infinities under saturate (they clamp to +-max) and under ieee
// unless the format keeps them as inf; NaN stays NaN where the format has one, else becomes 0.
TEST(Quantize, NonFiniteCounted) {
  for (const char* spec : {"e4m3fn", "e5m2", "e4m3fnuz", "e2m1fn", "bf16", "int8", "uint8", "e3m4:bias=1:specials=none"})
    for (qs::Overflow overflow : {qs::Overflow::Saturate, qs::Overflow::Ieee}) {
      SCOPED_TRACE(std::string(spec) + "/" + qs::to_string(overflow));
      [&] {
        const qs::Format f = qs::parse_format(spec);
        const bool affine = affineFormat(f);
        constexpr std::size_t kNans = 37, kInfs = 23, kFinite = 500;
        Rng g{kDataSeed + 9};
        std::vector<float> x;
        // In range and unaffected by the scale: magnitudes up to max / 2 with s = 1 (ScaleChoice::None),
        // non-negative for the affine uint8 (its range [0, max] is set by these values; s = max / 255).
        for (std::size_t i = 0; i < kFinite; ++i)
          x.push_back(static_cast<float>((affine ? 1.0 : g.sign()) * g.open01() * f.max_finite / 2));
        x.push_back(static_cast<float>(f.max_finite / 2));
        for (std::size_t i = 0; i < kNans; ++i) x.insert(x.begin() + long(g.next() % x.size()), i % 2 ? -kNaN : kNaN);
        for (std::size_t i = 0; i < kInfs; ++i) x.insert(x.begin() + long(g.next() % x.size()), i % 2 ? -kInf : kInf);
        const qs::ScaleChoice sc = affine ? qs::ScaleChoice{} : qs::ScaleChoice{qs::ScaleChoice::None, 1.0};
        const Quantized q = quantize(f, options(qs::Rounding::Nearest, overflow), sc, x, 1);
        ASSERT_EQ(q.r.stats.nan, uint64_t(kNans));
        const bool keepsInf = overflow == qs::Overflow::Ieee && f.has_inf;
        ASSERT_EQ(q.r.stats.overflow, uint64_t(keepsInf ? 0 : kInfs));
        const double s = q.r.scale;
        for (std::size_t i = 0; i < x.size(); ++i) {
          const float v = q.values[i];
          if (std::isnan(x[i])) {
            if (f.has_nan) {
              ASSERT_TRUE(std::isnan(v)) << "element " << i << ": NaN -> " << g6(v);
            } else {
              ASSERT_TRUE(v == 0.0f) << "element " << i << ": NaN -> " << g6(v);
            }
          } else if (std::isinf(x[i])) {
            const float sign = x[i] < 0 ? -1.0f : 1.0f;
            if (affine) {  // clamped to the ends of [0, qmax]
              ASSERT_EXACT(v, x[i] < 0 ? float((0 - q.r.zero_point) * s) : float((f.max_finite - q.r.zero_point) * s))
                  << " (element " << i << ")";
            } else if (overflow == qs::Overflow::Saturate || (!f.has_inf && !f.has_nan)) {
              ASSERT_EXACT(v, sign * static_cast<float>(f.max_finite * s)) << " (element " << i << ")";
            } else if (f.has_inf) {
              ASSERT_EXACT(v, sign * kInf) << " (element " << i << ")";
            } else {
              ASSERT_TRUE(std::isnan(v)) << "element " << i << ": " << g6(x[i]) << " -> " << g6(v);
            }
          } else {
            ASSERT_TRUE(std::isfinite(v)) << "element " << i << ": " << g6(x[i]) << " -> " << g6(v);
          }
        }
      }();
    }
}

// result.sqnr_db and sqnr_db() equal 10 log10(sum x^2 / sum (x - y)^2) over finite x, computed here
// in long double, within the roundoff of a double accumulation (sqnrToleranceDb).
TEST(Quantize, Sqnr) {
  for (const char* spec : {"e4m3fn", "e5m2", "e2m1fn", "bf16", "int8", "uint8", "e0m7"})
    for (const char* distName : {"normal", "laplace"})
      for (int special : {0, 13}) {
        const std::string dist = distName;
        SCOPED_TRACE(std::string(spec) + "/" + dist + (special ? "/nan+-inf" : "") + "/amax");
        [&] {
          const qs::Format f = qs::parse_format(spec);
          constexpr std::size_t n = 20011;
          Rng g{kDataSeed + 10};
          std::vector<float> x(n);
          for (std::size_t i = 0; i < n; ++i) {
            x[i] = static_cast<float>(dist == "normal" ? g.normal() : g.laplace());
            if (special && i % std::size_t(special) == 0)
              x[i] = (i / special) % 3 == 0 ? kNaN : ((i / special) % 3 == 1 ? kInf : -kInf);
          }
          const Quantized q = quantize(f, options(qs::Rounding::Nearest), {}, x, 2);
          const long double expected = sqnrExpected(x.data(), q.values.data(), n);
          ASSERT_TRUE(std::isfinite(expected)) << "the row needs a non-zero error";
          const double tol = sqnrToleranceDb(n, double(expected));
          const auto msg = [&](double got) {
            return "got " + g17(got) + " dB, expected " + g17(double(expected)) + " dB +- " + g6(tol);
          };
          ASSERT_LE(std::fabs(q.r.sqnr_db - double(expected)), tol) << msg(q.r.sqnr_db);
          const double direct = qs::sqnr_db(x.data(), q.values.data(), n);
          ASSERT_LE(std::fabs(direct - double(expected)), tol) << msg(direct);
          const std::vector<double> xd(x.begin(), x.end());
          const double direct64 = qs::sqnr_db(xd.data(), q.values.data(), n);
          ASSERT_LE(std::fabs(direct64 - double(expected)), tol) << msg(direct64);
        }();
      }
}

// No error at all: +inf dB, from sqnr_db(x, x) and from quantizing values already on the grid.
TEST(Quantize, SqnrExactIsInfinite) {
  std::vector<float> x = normalData(1000, 1.0, kDataSeed + 11, 50);
  ASSERT_EQ(qs::sqnr_db(x.data(), x.data(), x.size()), double(kInf));
  const std::vector<double> xd(x.begin(), x.end());
  ASSERT_EQ(qs::sqnr_db(xd.data(), x.data(), x.size()), double(kInf));
  // bf16 values (low 16 bits cleared) under s = 1 quantize to themselves.
  for (float& v : x) v = std::bit_cast<float>(bitsOf(v) & 0xffff0000u);
  const Quantized q = quantize(qs::parse_format("bf16"), options(qs::Rounding::Nearest),
                               {qs::ScaleChoice::None, 1.0}, x, 1);
  ASSERT_EQ(q.r.sqnr_db, double(kInf));
}

// float32-representable doubles under a power-of-two scale (x / s exact in float and double, the
// data kept out of float32's subnormal range): quantize_f64 and quantize_f32 give the same codes,
// values, stats and scale.
TEST(Quantize, F64MatchesF32) {
  for (const std::string& spec : uniqueSpecs(false))
    for (qs::Rounding rounding : {qs::Rounding::Nearest, qs::Rounding::Stochastic})
      for (double scale : {0x1p-3, 0x1p5}) {
        SCOPED_TRACE(spec + "/" + qs::to_string(rounding) + "/value=2^" + std::to_string(std::ilogb(scale)));
        [&] {
          const qs::Format f = qs::parse_format(spec);
          Rng g{kDataSeed + 12};
          const double lo = std::log2(std::max(f.min_subnormal, 0x1p-100)) - 2;
          const double hi = std::min(std::log2(f.max_finite) + 2, 120.0);
          std::vector<float> x(5003);
          for (std::size_t i = 0; i < x.size(); ++i) {
            x[i] = static_cast<float>(g.sign() * std::exp2(lo + (hi - lo) * g.open01()) * scale);
            if (i % 101 == 0) x[i] = kNaN;
            if (i % 101 == 50) x[i] = (i % 2) ? kInf : -kInf;
            if (i % 101 == 70) x[i] = (i % 2) ? 0.0f : -0.0f;
          }
          const std::vector<double> xd(x.begin(), x.end());
          for (qs::Overflow o : {qs::Overflow::Saturate, qs::Overflow::Ieee}) {
            const qs::EncodeOptions opt = options(rounding, o);
            const Quantized q32 = quantize(f, opt, scaleValue(scale), x, 2);
            Quantized q64;
            q64.codes.assign(x.size(), 0xbeef);
            q64.values.assign(x.size(), -1.0f);
            q64.r = qs::quantize_f64(f, opt, scaleValue(scale), xd.data(), xd.size(), q64.values.data(),
                                     q64.codes.data(), nullptr, 2);
            ASSERT_EXACT(q64.r.scale, q32.r.scale);
            const std::string d =
                difference(x.data(), x.size(), q32.codes, q32.values, q32.r.stats, q64.codes, q64.values, q64.r.stats);
            ASSERT_TRUE(d.empty()) << qs::to_string(o) << ": f32 vs f64: " << d;
          }
        }();
      }
}

// n = 0 with null pointers: no work, no statistics, not cancelled, for both entries and any threads.
TEST(Quantize, EmptyInput) {
  for (const char* spec : {"e4m3fn", "int8", "uint8", "bf16"})
    for (int kind : {int(qs::ScaleChoice::Amax), int(qs::ScaleChoice::None), int(qs::ScaleChoice::Value)}) {
      SCOPED_TRACE(std::string(spec) + "/" +
                   (kind == qs::ScaleChoice::Amax ? "amax" : kind == qs::ScaleChoice::None ? "none" : "value=0.5"));
      [&] {
        const qs::Format f = qs::parse_format(spec);
        const qs::ScaleChoice sc{qs::ScaleChoice::Kind(kind), 0.5};
        for (int threads : {1, 3}) {
          const qs::QuantizeResult r = qs::quantize_f32(f, options(qs::Rounding::Stochastic), sc, nullptr, 0, nullptr,
                                                        nullptr, nullptr, threads);
          const qs::QuantizeResult r64 = qs::quantize_f64(f, options(qs::Rounding::Stochastic), sc, nullptr, 0,
                                                          nullptr, nullptr, nullptr, threads);
          for (const qs::QuantizeResult& res : {r, r64}) {
            ASSERT_EQ(res.count, std::size_t(0));
            ASSERT_FALSE(res.cancelled);
            ASSERT_TRUE(sameStats(res.stats, qs::EncodeStats{}));
            ASSERT_EXACT(res.amax, 0.0);
            ASSERT_TRUE(res.scale > 0 && std::isfinite(res.scale)) << res.scale;
          }
        }
        ASSERT_EXACT(qs::amax_f32(nullptr, 0, 2), 0.0);
      }();
    }
}

// Progress returns false at its first call: the call reports cancelled, progress is not called again,
// and (single-threaded) the chunks after the first are never written. Progress comes from the
// calling thread's chunks only, so with two threads on a busy machine the other thread may do every
// chunk but the caller's last one: the first call then reports (n, n), with nothing left to cancel.
TEST(Quantize, CancelAtFirstProgress) {
  for (int threads : {1, 2}) {
    SCOPED_TRACE("e4m3fn/none/n=8Mi/threads=" + std::to_string(threads));
    [&] {
      const std::size_t n = std::size_t(8) << 20;
      std::vector<float> x(n);
      for (std::size_t i = 0; i < n; ++i) x[i] = float(i % 1000) * 0.25f;
      const float sentinel = -12345.0f;
      std::vector<float> values(n, sentinel);
      int calls = 0;
      std::size_t firstDone = 0, firstTotal = 0;
      const qs::ProgressFn progress = [&](std::size_t done, std::size_t total) {
        if (calls++ == 0) firstDone = done, firstTotal = total;
        return false;
      };
      const qs::QuantizeResult r =
          qs::quantize_f32(qs::parse_format("e4m3fn"), {}, {qs::ScaleChoice::None, 1.0}, x.data(), n, values.data(),
                           nullptr, nullptr, threads, progress);
      ASSERT_EQ(calls, 1);
      ASSERT_EQ(firstTotal, n);
      ASSERT_GT(firstDone, 0u);
      if (threads > 1 && firstDone == n) {  // cancelled or not, the work was complete at the first report
        ASSERT_EQ(std::count(values.begin(), values.end(), sentinel), std::ptrdiff_t(0));
        return;
      }
      ASSERT_LT(firstDone, n);
      ASSERT_TRUE(r.cancelled);
      if (threads == 1) {
        ASSERT_TRUE(std::none_of(values.begin(), values.begin() + long(firstDone), [&](float v) { return v == sentinel; }));
        const std::size_t untouched = std::size_t(std::count(values.begin() + long(firstDone), values.end(), sentinel));
        ASSERT_EQ(untouched, n - firstDone);
      }
    }();
  }
}

// Progress that never cancels: done grows to total, the last call is (n, n), all values written.
TEST(Quantize, ProgressCompletes) {
  const std::size_t n = 3 * kChunk + 5;
  const std::vector<float> x = normalData(n, 100.0, kDataSeed + 13);
  std::vector<float> values(n, kNaN);
  std::vector<std::pair<std::size_t, std::size_t>> calls;
  const qs::ProgressFn progress = [&](std::size_t done, std::size_t total) {
    calls.emplace_back(done, total);
    return true;
  };
  const qs::QuantizeResult r = qs::quantize_f32(qs::parse_format("e4m3fn"), {}, {}, x.data(), n, values.data(),
                                                nullptr, nullptr, 2, progress);
  ASSERT_FALSE(r.cancelled);
  ASSERT_FALSE(calls.empty());
  ASSERT_EQ(calls.back(), std::make_pair(n, n));
  for (std::size_t i = 0; i < calls.size(); ++i) {
    ASSERT_EQ(calls[i].second, n) << "call " << i;
    ASSERT_LE(calls[i].first, n) << "call " << i;
    if (i) {
      ASSERT_GE(calls[i].first, calls[i - 1].first) << "call " << i;
    }
  }
  ASSERT_EQ(std::count_if(values.begin(), values.end(), [](float v) { return std::isnan(v); }), 0);
}

// A scale that is not positive and finite is refused with FormatError (ScaleChoice is documented
// as "a positive number"), by both entries.
TEST(Quantize, InvalidScaleThrows) {
  struct Row {
    std::string name, spec;
    double value;
    bool f64;
  };
  std::vector<Row> rows;
  const std::pair<const char*, double> bad[] = {{"0", 0.0}, {"-0", -0.0}, {"-1", -1.0}, {"inf", INFINITY},
                                                {"-inf", -INFINITY}, {"nan", NAN}};
  for (const char* spec : {"e4m3fn", "int8", "uint8"}) {
    for (const auto& [name, v] : bad) {
      rows.push_back({std::string(spec) + "/value=" + name + "/f32", spec, v, false});
      rows.push_back({std::string(spec) + "/value=" + name + "/f64", spec, v, true});
    }
    // Positive doubles that are 0 or inf in float32, the precision of the f32 path's scale.
    rows.push_back({std::string(spec) + "/value=1e-50/f32", spec, 1e-50, false});
    rows.push_back({std::string(spec) + "/value=1e39/f32", spec, 1e39, false});
  }
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    const qs::Format f = qs::parse_format(row.spec);
    const std::vector<float> x = {1.0f, -2.0f, 3.0f, 0.5f};
    const std::vector<double> xd(x.begin(), x.end());
    std::vector<float> values(x.size());
    const qs::ScaleChoice sc = scaleValue(row.value);
    if (row.f64)
      EXPECT_THROW(qs::quantize_f64(f, {}, sc, xd.data(), xd.size(), values.data(), nullptr, nullptr, 1), qs::FormatError);
    else
      EXPECT_THROW(qs::quantize_f32(f, {}, sc, x.data(), x.size(), values.data(), nullptr, nullptr, 1), qs::FormatError);
  }
}

TEST(Quantize, ParseScale) {
  struct Row {
    std::string name, text;
    bool valid;
    int kind;
    double value;
  };
  std::vector<Row> rows = {
      {"amax", "amax", true, int(qs::ScaleChoice::Amax), 0.0},
      {"none", "none", true, int(qs::ScaleChoice::None), 0.0},
      {"0.5", "0.5", true, int(qs::ScaleChoice::Value), 0.5},
      {"1e-3", "1e-3", true, int(qs::ScaleChoice::Value), 1e-3},
  };
  for (const char* bad : {"", "0", "-0", "-2", "inf", "nan", "abc", "0.5x", " 0.5", "1e39", "1e-50", "Amax"})
    rows.push_back({std::string("'") + bad + "'", bad, false, 0, 0.0});
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    [&] {
      if (!row.valid) {
        EXPECT_THROW(qs::parse_scale(row.text), qs::FormatError);
        return;
      }
      const qs::ScaleChoice sc = qs::parse_scale(row.text);
      ASSERT_EQ(int(sc.kind), row.kind);
      if (row.kind == qs::ScaleChoice::Value) {
        ASSERT_EXACT(sc.value, row.value);
      }
    }();
  }
}

// Stochastic rounding of a constant x between grid neighbours lo < hi: every output is lo or hi, and
// their mean is x (P(hi) = (x - lo) / (hi - lo)) within 5 sd of the mean of N Bernoulli draws,
// (hi - lo) sqrt(p (1 - p) / N). N spans several chunks and threads. Scale none.
TEST(Quantize, StochasticUnbiased) {
  struct Row {
    const char* name;
    const char* spec;
    float x;
  };
  const Row rows[] = {
      {"e4m3fn/x=1.3", "e4m3fn", 1.3f},
      {"e4m3fn/x=-0.0071", "e4m3fn", -0.0071f},  // a subnormal interval
      {"e5m2/x=300.1", "e5m2", 300.1f},
      {"e2m1fn/x=2.6", "e2m1fn", 2.6f},
      {"e8m0fnu/x=3.3", "e8m0fnu", 3.3f},
      {"bf16/x=1.001", "bf16", 1.001f},
      {"int8/x=-10.3", "int8", -10.3f},
      {"e0m7/x=0.3", "e0m7", 0.3f},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    [&] {
      const float x = row.x;
      const qs::Format f = qs::parse_format(row.spec);
      const std::vector<double> grid = qs::distinct_values(f);
      const auto it = std::upper_bound(grid.begin(), grid.end(), double(x));
      ASSERT_TRUE(it != grid.begin() && it != grid.end());
      const double lo = *(it - 1), hi = *it, p = (double(x) - lo) / (hi - lo);
      ASSERT_TRUE(p > 0 && p < 1) << p;
      const std::size_t n = 2 * kChunk + 777;
      const std::vector<float> xs(n, x);
      const Quantized q = quantize(f, options(qs::Rounding::Stochastic), {qs::ScaleChoice::None, 1.0}, xs, 2);
      long double sum = 0;
      std::size_t ups = 0;
      for (float v : q.values) {
        if (double(v) != lo && double(v) != hi) {
          FAIL() << g6(v) << " is neither " << g6(lo) << " nor " << g6(hi);
        }
        ups += double(v) == hi;
        sum += v;
      }
      const double mean = double(sum / n);
      const double tol = kSigmas * (hi - lo) * std::sqrt(p * (1 - p) / double(n));
      char buf[200];
      std::snprintf(buf, sizeof buf, "mean %.12g (%zu of %zu rounded to %g), expected %.12g +- %g", mean, ups, n, hi,
                    double(x), tol);
      ASSERT_LT(std::fabs(mean - double(x)), tol) << buf;
    }();
  }
}

// The int8 contract of core/quant/int8_quant.h (the CUDA kernels' reference): s = max(amax/127, 1e-8),
// Q = clamp(rint(x / s), -127, 127), NaN -> 0, +-inf -> +-127, amax over finite values.
TEST(Quantize, Int8SymmetricReference) {
  const float x[2][4] = {{0.5f, -1.27f, 2.54f, NAN}, {INFINITY, -0.01f, 0.0f, 1e-12f}};
  int8_t q[8];
  float s[2];
  qs::quantize_int8_ref(&x[0][0], 2, 4, /*per_row=*/true, q, s);
  ASSERT_FLOAT_EQ(s[0], 2.54f / 127.0f);
  ASSERT_FLOAT_EQ(s[1], 0.01f / 127.0f);  // inf is not part of the amax
  const int8_t row0[4] = {int8_t(std::rint(0.5f / s[0])), int8_t(std::rint(-1.27f / s[0])), 127, 0};
  ASSERT_EQ(std::memcmp(q, row0, 4), 0);
  ASSERT_EQ(int(q[4]), 127);
  ASSERT_EQ(int(q[5]), -127);
  ASSERT_EQ(int(q[6]), 0);
  ASSERT_EQ(int(q[7]), 0);  // 1e-12 / (0.01/127) rounds to 0
  qs::quantize_int8_ref(&x[0][0], 2, 4, /*per_row=*/false, q, s);
  ASSERT_FLOAT_EQ(s[0], 2.54f / 127.0f);
  ASSERT_EQ(int(q[5]), int(std::rint(-0.01f / s[0])));
  const float zeros[3] = {0, 0, 0};
  qs::quantize_int8_ref(zeros, 1, 3, false, q, s);
  ASSERT_FLOAT_EQ(s[0], 1e-8f);  // the clamp
}
