// The vectorized float32 encoders (core/format/encode_simd.h) against the scalar oracle encode_f32_ref,
// bit for bit, at every SIMD level this CPU runs: codes, values (NaN == NaN) and EncodeStats, on
// probe inputs, smooth tensors that take the fast path, ReLU-like batches, every tail length, the
// 2^32 index boundary where the dispatcher splits, and jobs split at arbitrary points.
// Run: ctest --test-dir build -R tst_encode_simd (GoogleTest; the same rows as the former Qt Test suite, one
// test per SIMD level, each row's name, e.g. "e4m3fn/stochastic/ieee/scaled/avx512", in its failure messages),
// or build/tests/core/tst_encode_simd --gtest_filter='AllLevels/EncodeSimd.MatchesRef/avx512'
#include "format/encode_simd.h"

#include <gtest/gtest.h>

#include "test_rng.h"
#include "format/format.h"
#include "format/selftest.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numbers>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace {

// Every input is a function of these constants and the row name, so a failing row reproduces.
constexpr uint64_t kProbeSeed = 20240611;             // random part of probe_inputs
constexpr std::size_t kProbeRandom8 = 20000;          // random probes per format of <= 8 bits
constexpr std::size_t kProbeRandom16 = 4000;          // wider formats already probe ~750k values
constexpr uint64_t kDataSeed = 0x5eedda7aULL;         // smooth tensors and mixed inputs
constexpr uint64_t kRoundSeed = 0x9e3779b97f4a7c15ULL; // EncodeOptions::seed: both 32-bit halves set
constexpr uint64_t kIndex0 = 1000003;                 // a non-zero first element index
constexpr float kScaled = 0.3f;                       // "scaled" rows: not a power of two, x / s rounds
constexpr std::size_t kSmoothN = 8192 + 13;           // not a multiple of any lane count
constexpr std::size_t kMaxTail = 40;                  // tails: every n in [0, kMaxTail]
constexpr std::size_t kGuard = 32;                    // sentinel elements after a tail's output
constexpr uint32_t kSentinelBits = 0x7fc0deadu;       // a NaN payload no encoder writes
constexpr uint16_t kSentinel16 = 0xbeef;
constexpr uint8_t kSentinel8 = 0xa5;

// SplitMix64 and hand-written transforms: the same numbers with any standard library.

uint32_t bitsOf(float v) { return std::bit_cast<uint32_t>(v); }
bool sameValue(float a, float b) { return (std::isnan(a) && std::isnan(b)) || bitsOf(a) == bitsOf(b); }

std::string rowName(const std::string& spec, qs::Rounding r, qs::Overflow o, float scale, qs::SimdLevel l) {
  return spec + "/" + qs::to_string(r) + "/" + qs::to_string(o) + "/" + (scale == 1.0f ? "unscaled" : "scaled") + "/" +
         qs::to_string(l);
}

std::string hex(uint32_t v, int width = 0) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%0*x", width, v);
  return buf;
}

std::string g9(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// Named formats plus the 8-bit sweep, as the specs a user would type (the sweep's "e5m2" is the
// table's e5m2 and appears once).
std::vector<std::string> allSpecs() {
  std::vector<std::string> specs;
  std::set<std::string> seen;
  for (const qs::Format& f : qs::named_formats())
    if (seen.insert(f.name).second) specs.push_back(f.name);
  for (const std::string& s : qs::sweep_8bit_specs())
    if (seen.insert(qs::parse_format(s).name).second) specs.push_back(s);
  return specs;
}

qs::Format formatOf(const std::string& spec) { return qs::parse_format(spec); }

// Smallest magnitude from which a value is "in range" (the normal binades for float formats).
double smallestNormal(const qs::Format& f) { return f.min_normal > 0 ? f.min_normal : f.min_subnormal; }

// Seeded samples, scaled so that max |x| / scale is exactly the format's max finite value: every
// vector is in range, which is when the bit-rounding fast path of encode_simd_impl.h engages.
std::vector<float> smooth(const qs::Format& f, float scale, const char* kind, uint64_t seed) {
  Rng g{seed};
  std::vector<double> s(kSmoothN);
  const bool relu = std::strcmp(kind, "relu") == 0;
  for (double& v : s) {
    if (std::strcmp(kind, "laplace") == 0) v = g.laplace();
    else v = g.normal();
  }
  double amax = 0;
  for (double v : s) amax = std::max(amax, std::fabs(v));
  const double k = f.max_finite * double(scale) / amax;
  std::vector<float> x(kSmoothN);
  for (std::size_t i = 0; i < kSmoothN; ++i) {
    double v = s[i] * k;
    if (relu && v < 0) v = (i % 11 == 0) ? -0.0 : 0.0;  // exact zeros, a few of them negative
    x[i] = static_cast<float>(v);
  }
  return x;
}

// Magnitudes log-uniform over the format's normal range (random sign): in range, never a subnormal
// of the target, so stochastic rounding stays on the fast path too.
std::vector<float> logUniform(const qs::Format& f, float scale, std::size_t n, uint64_t seed) {
  Rng g{seed};
  const double lo = std::log2(smallestNormal(f)), hi = std::log2(f.max_finite);
  std::vector<float> x(n);
  for (float& v : x) v = static_cast<float>(g.sign() * std::exp2(lo + (hi - lo) * g.open01()) * scale);
  return x;
}

// Every kind of input in a short stretch: in range, specials, beyond max, below the smallest value.
std::vector<float> mixed(const qs::Format& f, float scale, std::size_t n, uint64_t seed) {
  Rng g{seed};
  const std::vector<float> inRange = logUniform(f, scale, n, seed ^ 0xabcdefULL);
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (g.next() % 8) {
      case 0: x[i] = std::numeric_limits<float>::quiet_NaN(); break;
      case 1: x[i] = static_cast<float>(g.sign() * INFINITY); break;
      case 2: x[i] = static_cast<float>(g.sign() * f.max_finite * scale * (1.5 + g.open01())); break;
      case 3: x[i] = static_cast<float>(g.sign() * f.min_subnormal * scale * 0.3); break;
      case 4: x[i] = static_cast<float>(g.sign() * 0.0); break;
      default: x[i] = inRange[i]; break;
    }
  }
  return x;
}

enum class Outputs { CodesAndValues, ValuesOnly, Codes8Only, Codes16Only, All };
const char* to_string(Outputs o) {
  switch (o) {
    case Outputs::CodesAndValues: return "codes16+values";
    case Outputs::ValuesOnly: return "values-only (fast path)";
    case Outputs::Codes8Only: return "codes8-only";
    case Outputs::Codes16Only: return "codes16-only";
    case Outputs::All: return "codes8+codes16+values";
  }
  return "?";
}

struct Encoded {
  std::vector<uint16_t> codes16;  // empty when not requested
  std::vector<uint8_t> codes8;
  std::vector<float> values;
  qs::EncodeStats stats;
};

// One encode through the oracle (level empty) or a vectorized level.
Encoded encode(const qs::Format& f, const qs::EncodeOptions& opt, float scale, const float* x, std::size_t n,
               uint64_t index0, Outputs out, std::optional<qs::SimdLevel> level) {
  Encoded e;
  const bool c16 = out == Outputs::CodesAndValues || out == Outputs::Codes16Only || out == Outputs::All;
  const bool c8 = out == Outputs::Codes8Only || out == Outputs::All;
  const bool vals = out == Outputs::CodesAndValues || out == Outputs::ValuesOnly || out == Outputs::All;
  if (c16) e.codes16.assign(n, kSentinel16);
  if (c8) e.codes8.assign(n, kSentinel8);
  if (vals) e.values.assign(n, std::bit_cast<float>(kSentinelBits));
  qs::EncodeJob job;
  job.x = x;
  job.n = n;
  job.scale = scale;
  job.index0 = index0;
  job.codes16 = c16 ? e.codes16.data() : nullptr;
  job.codes8 = c8 ? e.codes8.data() : nullptr;
  job.values = vals ? e.values.data() : nullptr;
  e.stats = level ? qs::encode_f32(f, opt, job, *level) : qs::encode_f32_ref(f, opt, job);
  return e;
}

std::string statsText(const qs::EncodeStats& s) {
  return "overflow " + std::to_string(s.overflow) + " underflow " + std::to_string(s.underflow) + " nan " +
         std::to_string(s.nan);
}

// First difference between a reference result and another one, over the outputs both have (codes8
// is compared with the reference's codes16), naming the element and its input; empty when they agree.
std::string mismatch(const float* x, std::size_t n, const Encoded& ref, const Encoded& got) {
  const bool refCodes = !ref.codes16.empty(), refValues = !ref.values.empty();
  for (std::size_t i = 0; i < n; ++i) {
    const bool badCode16 = refCodes && !got.codes16.empty() && got.codes16[i] != ref.codes16[i];
    const bool badCode8 = refCodes && !got.codes8.empty() && got.codes8[i] != ref.codes16[i];
    const bool badValue = refValues && !got.values.empty() && !sameValue(got.values[i], ref.values[i]);
    if (badCode16 || badCode8 || badValue) {
      std::string m = "element " + std::to_string(i) + ", input " + g9(double(x[i])) + " (0x" + hex(bitsOf(x[i]), 8) +
                       "): ref";
      if (refCodes) m += " code 0x" + hex(ref.codes16[i]);
      if (refValues) m += " value " + g9(double(ref.values[i])) + " (0x" + hex(bitsOf(ref.values[i]), 8) + ")";
      if (!got.codes16.empty()) m += ", got codes16 0x" + hex(got.codes16[i]);
      if (!got.codes8.empty()) m += ", got codes8 0x" + hex(got.codes8[i]);
      if (!got.values.empty())
        m += ", got value " + g9(double(got.values[i])) + " (0x" + hex(bitsOf(got.values[i]), 8) + ")";
      return m;
    }
  }
  const qs::EncodeStats& a = ref.stats;
  const qs::EncodeStats& b = got.stats;
  if (a.overflow != b.overflow || a.underflow != b.underflow || a.nan != b.nan)
    return "stats differ: ref " + statsText(a) + ", got " + statsText(b);
  return {};
}

// The inputs of a matchesRef row and their oracle results (probe inputs, smooth tensors, log-uniform).
struct RefCase {
  std::vector<std::string> names;
  std::vector<std::vector<float>> inputs;
  std::vector<Encoded> refs;
};

RefCase refCase(const qs::Format& f, const qs::EncodeOptions& opt, float scale) {
  RefCase c;
  c.names = {"probe", "normal", "laplace", "relu", "log-uniform"};
  c.inputs.push_back(qs::probe_inputs(f, kProbeSeed, f.bits > 8 ? kProbeRandom16 : kProbeRandom8));
  c.inputs.push_back(smooth(f, scale, "normal", kDataSeed));
  c.inputs.push_back(smooth(f, scale, "laplace", kDataSeed + 1));
  c.inputs.push_back(smooth(f, scale, "relu", kDataSeed + 2));
  c.inputs.push_back(logUniform(f, scale, kSmoothN, kDataSeed + 3));
  for (const auto& x : c.inputs)
    c.refs.push_back(encode(f, opt, scale, x.data(), x.size(), kIndex0, Outputs::CodesAndValues, std::nullopt));
  return c;
}

qs::EncodeOptions options(qs::Rounding r, qs::Overflow o) {
  qs::EncodeOptions opt;
  opt.rounding = r;
  opt.overflow = o;
  opt.seed = kRoundSeed;
  return opt;
}

constexpr qs::SimdLevel kAllLevels[] = {qs::SimdLevel::Generic, qs::SimdLevel::Avx2, qs::SimdLevel::Avx512};

// One instance per encoder SIMD level ("generic", "avx2", "avx512"): the Qt suite's rows of that level. A level
// this CPU cannot run is skipped, saying so (the Qt suite listed the available levels' rows only).
class EncodeSimd : public ::testing::TestWithParam<qs::SimdLevel> {
 protected:
  void SetUp() override {
    const auto& levels = qs::available_simd_levels();
    if (std::find(levels.begin(), levels.end(), GetParam()) == levels.end())
      GTEST_SKIP() << "SIMD level " << qs::to_string(GetParam()) << " is not available on this CPU";
  }
  qs::SimdLevel level() const { return GetParam(); }
};

}  // namespace
TEST(EncodeSimdLevels, IncludeGeneric) {
  const auto& levels = qs::available_simd_levels();
  ASSERT_FALSE(levels.empty());
  EXPECT_EQ(levels.front(), qs::SimdLevel::Generic);
  EXPECT_EQ(qs::best_simd_level(), levels.back());
  for (std::size_t i = 1; i < levels.size(); ++i) EXPECT_LT(int(levels[i - 1]), int(levels[i]));
}

// Probe inputs (every value, midpoint and neighbour, specials, random bit patterns) and smooth
// tensors, once with codes (the general path) and once with values only (the fast path).
// Rows: every spec x rounding x overflow x {unscaled, scaled} at this level.
TEST_P(EncodeSimd, MatchesRef) {
  for (const std::string& spec : allSpecs())
    for (qs::Rounding rounding : qs::kAllRoundings)
      for (qs::Overflow overflow : {qs::Overflow::Saturate, qs::Overflow::Ieee})
        for (float scale : {1.0f, kScaled}) {
          SCOPED_TRACE("matchesRef:" + rowName(spec, rounding, overflow, scale, level()));
          const qs::Format f = formatOf(spec);
          const qs::EncodeOptions opt = options(rounding, overflow);
          const RefCase c = refCase(f, opt, scale);
          for (std::size_t d = 0; d < c.inputs.size(); ++d) {
            const std::vector<float>& x = c.inputs[d];
            for (Outputs out : {Outputs::CodesAndValues, Outputs::ValuesOnly}) {
              const Encoded got = encode(f, opt, scale, x.data(), x.size(), kIndex0, out, level());
              const std::string m = mismatch(x.data(), x.size(), c.refs[d], got);
              EXPECT_TRUE(m.empty()) << c.names[d] << " (" << x.size() << " elements), " << to_string(out) << ": "
                                     << m;
            }
          }
        }
}

// Every length 0..kMaxTail from a misaligned pointer, through the padded tail of the kernels: same
// as the oracle, padding lanes never counted, nothing written past n.
// Rows: every spec x rounding at this level.
TEST_P(EncodeSimd, Tails) {
  for (const std::string& spec : allSpecs())
    for (qs::Rounding rounding : qs::kAllRoundings) {
      SCOPED_TRACE("tails:" + spec + "/" + qs::to_string(rounding) + "/" + qs::to_string(level()));
      const qs::Format f = formatOf(spec);
      bool rowOk = true;  // a row stops at its first failure, as QVERIFY2 did
      for (qs::Overflow o : {qs::Overflow::Saturate, qs::Overflow::Ieee}) {
        for (float scale : {1.0f, kScaled}) {
          const qs::EncodeOptions opt = options(rounding, o);
          std::vector<float> buf = mixed(f, scale, kMaxTail + 1, kDataSeed + 7);
          const float* x = buf.data() + 1;  // 4-byte aligned only
          std::vector<Outputs> outs = {Outputs::CodesAndValues, Outputs::ValuesOnly};
          if (f.bits <= 8) outs.push_back(Outputs::All);
          for (std::size_t n = 0; n <= kMaxTail && rowOk; ++n) {
            const std::string where = std::string(qs::to_string(o)) + "/" + (scale == 1.0f ? "unscaled" : "scaled") +
                                      "/n=" + std::to_string(n);
            const Encoded ref = encode(f, opt, scale, x, n, kIndex0, Outputs::CodesAndValues, std::nullopt);
            for (Outputs out : outs) {
              // Outputs with a guard zone behind them: the kernel must not write past n.
              Encoded got;
              got.codes16.assign(n + kGuard, kSentinel16);
              got.codes8.assign(n + kGuard, kSentinel8);
              got.values.assign(n + kGuard, std::bit_cast<float>(kSentinelBits));
              qs::EncodeJob job;
              job.x = x;
              job.n = n;
              job.scale = scale;
              job.index0 = kIndex0;
              const bool c16 = out != Outputs::ValuesOnly, c8 = out == Outputs::All;
              job.codes16 = c16 ? got.codes16.data() : nullptr;
              job.codes8 = c8 ? got.codes8.data() : nullptr;
              job.values = got.values.data();
              got.stats = qs::encode_f32(f, opt, job, level());
              for (std::size_t i = n; i < n + kGuard && rowOk; ++i) {
                if (!(bitsOf(got.values[i]) == kSentinelBits && got.codes16[i] == kSentinel16 &&
                      got.codes8[i] == kSentinel8)) {
                  ADD_FAILURE() << where << ", " << to_string(out) << ": output written at element " << i;
                  rowOk = false;
                }
              }
              if (!rowOk) break;
              if (!c16) got.codes16.clear();
              if (!c8) got.codes8.clear();
              const std::string m = mismatch(x, n, ref, got);
              if (!m.empty()) {
                ADD_FAILURE() << where << ", " << to_string(out) << ": " << m;
                rowOk = false;
                break;
              }
            }
          }
        }
      }
    }
}

// For formats of <= 8 bits, 8-bit code storage alone, 16-bit alone and both at once agree with the
// oracle's codes (so codes16 never carries bits above the format's width).
// Rows: every spec of <= 8 bits x rounding at this level.
TEST_P(EncodeSimd, Codes8MatchesCodes16) {
  for (const std::string& spec : allSpecs()) {
    if (formatOf(spec).bits > 8) continue;
    for (qs::Rounding rounding : qs::kAllRoundings) {
      SCOPED_TRACE("codes8MatchesCodes16:" + spec + "/" + qs::to_string(rounding) + "/" + qs::to_string(level()));
      const qs::Format f = formatOf(spec);
      const std::vector<float> x = qs::probe_inputs(f, kProbeSeed, kProbeRandom8);
      for (qs::Overflow o : {qs::Overflow::Saturate, qs::Overflow::Ieee}) {
        const qs::EncodeOptions opt = options(rounding, o);
        const Encoded ref =
            encode(f, opt, kScaled, x.data(), x.size(), kIndex0, Outputs::CodesAndValues, std::nullopt);
        for (std::size_t i = 0; i < x.size(); ++i)
          ASSERT_LT(ref.codes16[i], f.code_count()) << qs::to_string(o) << ": element " << i;
        for (Outputs out : {Outputs::Codes8Only, Outputs::Codes16Only, Outputs::All}) {
          const Encoded got = encode(f, opt, kScaled, x.data(), x.size(), kIndex0, out, level());
          const std::string m = mismatch(x.data(), x.size(), ref, got);
          EXPECT_TRUE(m.empty()) << qs::to_string(o) << "/scaled, " << to_string(out) << ": " << m;
        }
      }
    }
  }
}

// 8-bit storage would silently drop the high bits of a 16-bit code: refused, at every level and in
// the oracle. Rows: every spec of more than 8 bits at this level.
TEST_P(EncodeSimd, Codes8RejectedForWideFormats) {
  for (const std::string& spec : allSpecs()) {
    if (formatOf(spec).bits <= 8) continue;
    SCOPED_TRACE("codes8RejectedForWideFormats:" + spec + "/" + qs::to_string(level()));
    const qs::Format f = formatOf(spec);
    const float x[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    uint8_t c8[4];
    qs::EncodeJob job;
    job.x = x;
    job.n = 4;
    job.codes8 = c8;
    EXPECT_THROW(qs::encode_f32(f, {}, job, level()), qs::FormatError);
    EXPECT_THROW(qs::encode_f32_ref(f, {}, job), qs::FormatError);
  }
}

// A stochastic job of 64 elements that crosses a 2^32 index boundary (the dispatcher splits it and
// re-keys the generator): every element draws stochastic_bits(seed, index0 + i), as the oracle does.
// Rows: every spec x start {2^32-5, 2^33-5, 2^64-5} at this level.
TEST_P(EncodeSimd, IndexBoundary) {
  const std::pair<const char*, uint64_t> starts[] = {
      {"2^32-5", (uint64_t(1) << 32) - 5}, {"2^33-5", (uint64_t(1) << 33) - 5}, {"2^64-5", ~uint64_t(0) - 4}};
  constexpr std::size_t n = 64;
  constexpr std::size_t beforeBoundary = 5;
  for (const std::string& spec : allSpecs())
    for (const auto& [name, index0] : starts) {
      SCOPED_TRACE("indexBoundary:" + spec + "/stochastic/index0=" + name + "/n=64/" + qs::to_string(level()));
      const qs::Format f = formatOf(spec);
      for (float scale : {1.0f, kScaled}) {
        const std::vector<float> x = logUniform(f, scale, n, kDataSeed + 11);
        for (qs::Overflow o : {qs::Overflow::Saturate, qs::Overflow::Ieee}) {
          const qs::EncodeOptions opt = options(qs::Rounding::Stochastic, o);
          const Encoded ref = encode(f, opt, scale, x.data(), n, index0, Outputs::CodesAndValues, std::nullopt);
          // The row can only fail if the codes past the boundary depend on the random numbers there.
          qs::EncodeOptions other = opt;
          other.seed ^= 1;
          const Encoded alt = encode(f, other, scale, x.data(), n, index0, Outputs::CodesAndValues, std::nullopt);
          bool sensitive = false;
          for (std::size_t i = beforeBoundary; i < n; ++i) sensitive |= alt.codes16[i] != ref.codes16[i];
          EXPECT_TRUE(sensitive) << "the inputs past the boundary do not depend on the random bits";
          for (Outputs out : {Outputs::CodesAndValues, Outputs::ValuesOnly}) {
            const Encoded got = encode(f, opt, scale, x.data(), n, index0, out, level());
            const std::string m = mismatch(x.data(), n, ref, got);
            EXPECT_TRUE(m.empty()) << qs::to_string(o) << "/" << (scale == 1.0f ? "unscaled" : "scaled") << ", "
                                   << to_string(out) << ": " << m;
          }
        }
      }
    }
}

// The fast loop draws its random numbers a tile at a time with the first xor-shift done incrementally, in
// runs that end where an index crosses a multiple of 2^16 (fill_bits in encode_simd_impl.h): a vector that
// straddles such a multiple, a vector ending on one, several 1024-element tiles, the odd last vector and
// the tail, a job ending at index 2^32 and one crossing it, all against the oracle's
// stochastic_bits(seed, index). Inputs in range and halfway-ish between grid points, so each element's
// result depends on its random number. Rows: e4m3fn, e5m2, bf16 x start x {unscaled, scaled} at this level.
TEST_P(EncodeSimd, StochasticRuns) {
  constexpr std::size_t n = (std::size_t(1) << 17) + 2 * 1024 + 37;
  const std::pair<const char*, uint64_t> starts[] = {
      {"3*2^16-5", 3 * (uint64_t(1) << 16) - 5},      // lane offset 3: vectors straddle each multiple
      {"3*2^16-1024", 3 * (uint64_t(1) << 16) - 1024},  // vectors end on each multiple
      {"2^32-n", (uint64_t(1) << 32) - n},            // the last element is 2^32 - 1
      {"2^32-2^16-3", (uint64_t(1) << 32) - (uint64_t(1) << 16) - 3},  // crosses 2^32 (split, re-keyed)
  };
  for (const char* spec : {"e4m3fn", "e5m2", "bf16"})
    for (const auto& [name, index0] : starts)
      for (float scale : {1.0f, kScaled}) {
        SCOPED_TRACE(std::string("stochasticRuns:") + spec + "/index0=" + name + "/" +
                     (scale == 1.0f ? "unscaled" : "scaled") + "/" + qs::to_string(level()));
        const qs::Format f = formatOf(spec);
        const qs::EncodeOptions opt = options(qs::Rounding::Stochastic, qs::Overflow::Saturate);
        const std::vector<float> x = logUniform(f, scale, n, kDataSeed + 31);
        const Encoded ref = encode(f, opt, scale, x.data(), n, index0, Outputs::ValuesOnly, std::nullopt);
        // The row can only fail if the values depend on the random numbers: another seed changes many.
        qs::EncodeOptions other = opt;
        other.seed ^= 1;
        const Encoded alt = encode(f, other, scale, x.data(), n, index0, Outputs::ValuesOnly, std::nullopt);
        std::size_t changed = 0;
        for (std::size_t i = 0; i < n; ++i) changed += !sameValue(alt.values[i], ref.values[i]);
        EXPECT_GT(changed, n / 8) << "the values hardly depend on the random bits";
        const Encoded got = encode(f, opt, scale, x.data(), n, index0, Outputs::ValuesOnly, level());
        const std::string m = mismatch(x.data(), n, ref, got);
        EXPECT_TRUE(m.empty()) << m;
      }
}

// The same job in one call or in two calls [0, split) and [split, n) with index0 advanced: identical
// codes, values and summed statistics. Splits before, at and after the 2^32 boundary (element 40 of the
// job), none lane-aligned but 40. Rows: 7 specs x rounding x split at this level.
TEST_P(EncodeSimd, SplitInvariance) {
  for (const char* spec : {"e4m3fn", "e5m2", "bf16", "int8", "uint4", "e8m0fnu", "e0m7"})
    for (qs::Rounding rounding : qs::kAllRoundings)
      for (int split : {1, 13, 40, 77}) {
        SCOPED_TRACE(std::string("splitInvariance:") + spec + "/" + qs::to_string(rounding) +
                     "/index0=2^32-40/n=100/split=" + std::to_string(split) + "/" + qs::to_string(level()));
        constexpr std::size_t n = 100;
        const uint64_t index0 = (uint64_t(1) << 32) - 40;
        const qs::Format f = formatOf(spec);
        const qs::EncodeOptions opt = options(rounding, qs::Overflow::Ieee);
        const std::vector<float> x = mixed(f, kScaled, n, kDataSeed + 13);
        for (Outputs out : {Outputs::CodesAndValues, Outputs::ValuesOnly}) {
          const Encoded whole = encode(f, opt, kScaled, x.data(), n, index0, out, level());
          const std::size_t k = static_cast<std::size_t>(split);
          const Encoded a = encode(f, opt, kScaled, x.data(), k, index0, out, level());
          const Encoded b = encode(f, opt, kScaled, x.data() + k, n - k, index0 + k, out, level());
          Encoded joined;
          joined.stats = a.stats;
          joined.stats += b.stats;
          joined.values = a.values;
          joined.values.insert(joined.values.end(), b.values.begin(), b.values.end());
          joined.codes16 = a.codes16;
          joined.codes16.insert(joined.codes16.end(), b.codes16.begin(), b.codes16.end());
          const std::string m = mismatch(x.data(), n, whole, joined);
          EXPECT_TRUE(m.empty()) << to_string(out) << ": " << m;
        }
      }
}

// Saturating nearest (stochastic) rounding runs chunks of vector pairs (tiles of vectors) either lean (no clamp,
// no overflow count: a pair or vector with a lane beyond max is redone) or saturating, switching by how often the
// last chunk clipped (stochastic: also within a tile). Stretches of
// 6000 values alternate between in range, clipping every third value (half of them beyond the overflow
// threshold, so counted) and clipping one value in 300, so that both instances run and each hands over to
// the other; values and stats against the oracle.
// Rows: e4m3fn, e5m2 and e4m3fnuz (no -0) x {nearest, stochastic} x {unscaled, scaled}, saturating, values only,
// at this level.
TEST_P(EncodeSimd, ClippingStretchesMatchRef) {
  constexpr std::size_t kStretch = 6000, n = 7 * kStretch + 5;
  for (const char* spec : {"e4m3fn", "e5m2", "e4m3fnuz"})
    for (qs::Rounding rounding : {qs::Rounding::Nearest, qs::Rounding::Stochastic})
    for (float scale : {1.0f, kScaled}) {
      SCOPED_TRACE(std::string("clippingStretches:") + spec + "/" + qs::to_string(rounding) + "/" +
                   (scale == 1.0f ? "unscaled" : "scaled") + "/" + qs::to_string(level()));
      const qs::Format f = formatOf(spec);
      const qs::EncodeOptions opt = options(rounding, qs::Overflow::Saturate);
      std::vector<float> x = logUniform(f, scale, n, kDataSeed + 31);
      Rng g{kDataSeed + 32};
      const double thr = qs::overflow_threshold(f, opt.rounding);
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t stretch = i / kStretch;
        const bool clip = (stretch % 3 == 1 && i % 3 == 0) || (stretch % 3 == 2 && i % 300 == 0);
        if (!clip) continue;
        const double beyond = (i / 3) % 2 ? f.max_finite + (thr - f.max_finite) * g.open01() : thr * (1.0 + g.open01());
        x[i] = static_cast<float>(g.sign() * beyond * scale);
      }
      const Encoded ref = encode(f, opt, scale, x.data(), n, kIndex0, Outputs::ValuesOnly, std::nullopt);
      ASSERT_GT(ref.stats.overflow, 0u);
      const Encoded got = encode(f, opt, scale, x.data(), n, kIndex0, Outputs::ValuesOnly, level());
      const std::string m = mismatch(x.data(), n, ref, got);
      EXPECT_TRUE(m.empty()) << m;
    }
}

INSTANTIATE_TEST_SUITE_P(AllLevels, EncodeSimd, ::testing::ValuesIn(kAllLevels),
                         [](const ::testing::TestParamInfo<qs::SimdLevel>& i) { return std::string(qs::to_string(i.param)); });

// A values-only job of 8 MiB and more takes the streaming fast loop (non-temporal stores from the first
// aligned vector on, the head and tail through the padded path): n = 2^21 + 19 values written from a
// misaligned pointer (1 float past a 64-byte boundary, so every level has a head), mostly in range with a
// special, an overflow or a target subnormal every few hundred elements (so fast pairs, pairs with one bad
// vector and slow vectors all occur), against the oracle on every level, with a guard after the output.
// Rows: e4m3fn (saturate) x every rounding, e5m2 (ieee: inf) and e4m3fnuz (no -0) x nearest and stochastic.
TEST(EncodeSimdLevels, LargeOutputsStream) {
  constexpr std::size_t n = (std::size_t(1) << 21) + 19;
  struct Row {
    const char* spec;
    qs::Rounding rounding;
    qs::Overflow overflow;
  };
  std::vector<Row> rows;
  for (qs::Rounding r : qs::kAllRoundings) rows.push_back({"e4m3fn", r, qs::Overflow::Saturate});
  for (qs::Rounding r : {qs::Rounding::Nearest, qs::Rounding::Stochastic}) {
    rows.push_back({"e5m2", r, qs::Overflow::Ieee});
    rows.push_back({"e4m3fnuz", r, qs::Overflow::Saturate});
  }
  for (const Row& row : rows) {
    SCOPED_TRACE(std::string("largeOutputsStream:") + row.spec + "/" + qs::to_string(row.rounding) + "/" +
                 qs::to_string(row.overflow));
    const qs::Format f = formatOf(row.spec);
    const qs::EncodeOptions opt = options(row.rounding, row.overflow);
    std::vector<float> x = logUniform(f, kScaled, n, kDataSeed + 21);
    const std::vector<float> specials = mixed(f, kScaled, 4096, kDataSeed + 22);
    Rng g{kDataSeed + 23};
    for (std::size_t i = g.next() % 300; i < n; i += 1 + g.next() % 600) x[i] = specials[i % specials.size()];
    const Encoded ref = encode(f, opt, kScaled, x.data(), n, kIndex0, Outputs::ValuesOnly, std::nullopt);
    for (qs::SimdLevel level : qs::available_simd_levels()) {
      SCOPED_TRACE(qs::to_string(level));
      std::vector<float> buf(n + 16 + kGuard, std::bit_cast<float>(kSentinelBits));
      std::size_t off = 1;
      while ((reinterpret_cast<uintptr_t>(buf.data() + off) & 63u) != 4u) ++off;
      qs::EncodeJob job;
      job.x = x.data();
      job.n = n;
      job.scale = kScaled;
      job.index0 = kIndex0;
      job.values = buf.data() + off;
      Encoded got;
      got.stats = qs::encode_f32(f, opt, job, level);
      got.values.assign(buf.begin() + std::ptrdiff_t(off), buf.begin() + std::ptrdiff_t(off + n));
      const std::string m = mismatch(x.data(), n, ref, got);
      EXPECT_TRUE(m.empty()) << m;
      for (std::size_t i = 0; i < off; ++i) EXPECT_EQ(bitsOf(buf[i]), kSentinelBits) << "written before the output";
      for (std::size_t i = off + n; i < buf.size(); ++i)
        EXPECT_EQ(bitsOf(buf[i]), kSentinelBits) << "written past the output at " << i - off;
    }
  }
}
