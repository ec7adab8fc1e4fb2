// The conformance suite (core/format/conformance.h): it passes on the engine, its definitions are the
// standards' (spot values from the specs), and a deliberately broken encoder makes it fail with the codes.
#include <gtest/gtest.h>

#include <cmath>

#include "format/conformance.h"

namespace {

qs::ConformanceReport quick(const qs::EncodeFn& encode = {}) {
  qs::ConformanceOptions opt;
  opt.encode = encode;
  opt.simd = false;  // tst_encode_simd covers the levels; the CLI's --report and the GUI run it
  return qs::run_conformance(opt);
}

const qs::ConformanceFamily& family(const qs::ConformanceReport& r, const std::string& name) {
  for (const auto& f : r.families)
    if (f.name == name) return f;
  throw std::runtime_error("no family " + name);
}

}  // namespace

TEST(Conformance, EnginePasses) {
  const qs::ConformanceReport r = quick();
  for (const auto& f : r.families) {
    if (f.name == "simd") {
      EXPECT_TRUE(f.skipped);
      continue;
    }
    EXPECT_GT(f.checks, 50u) << f.name;
    EXPECT_EQ(f.failed, 0u) << f.name << ": " << (f.failures.empty() ? "" : f.failures.front().what);
  }
  EXPECT_TRUE(r.passed());
  const std::string md = r.markdown("9.9.9", "avx2", "none");
  EXPECT_NE(md.find("all families passed"), std::string::npos);
  EXPECT_NE(md.find("| ties |"), std::string::npos);
}

TEST(Conformance, DefinitionsAreTheStandards) {
  const auto v = [](const char* f, uint32_t c) { return qs::decode_definition(qs::parse_format(f), c); };
  EXPECT_EQ(v("e4m3fn", 0x7E), 448.0);                  // OCP FP8 E4M3 max
  EXPECT_TRUE(std::isnan(v("e4m3fn", 0x7F)));
  EXPECT_TRUE(std::isnan(v("e4m3fn", 0xFF)));
  EXPECT_EQ(v("e4m3fn", 0x01), std::ldexp(1.0, -9));    // smallest subnormal
  EXPECT_EQ(v("e5m2", 0x7B), 57344.0);                   // E5M2 max
  EXPECT_EQ(v("e5m2", 0x7C), INFINITY);
  EXPECT_TRUE(std::isnan(v("e5m2", 0x7D)));
  EXPECT_TRUE(std::isnan(v("e4m3fnuz", 0x80)));          // fnuz: the code of -0 is NaN
  EXPECT_EQ(v("e4m3fnuz", 0x7F), 240.0);
  EXPECT_EQ(v("e2m1fn", 0x7), 6.0);                      // FP4: 0, 0.5, 1, 1.5, 2, 3, 4, 6
  EXPECT_EQ(v("e2m1fn", 0x1), 0.5);
  EXPECT_EQ(v("e8m0fnu", 0x7F), 1.0);                    // E8M0: 2^(e - 127)
  EXPECT_TRUE(std::isnan(v("e8m0fnu", 0xFF)));
  EXPECT_EQ(v("int8", 0x80), -128.0);
  EXPECT_EQ(v("int8", 0xFF), -1.0);
  EXPECT_EQ(v("uint8", 0xFF), 255.0);
}

// Ties away from zero (microxcaling's `nearest`, issue 15): the ties family fails, naming formats, codes
// and the inputs; the other families stay green.
TEST(Conformance, BrokenEncoderIsCaught) {
  const qs::EncodeFn away = [](const qs::Format& f, double x, qs::Rounding r, qs::Overflow o, uint32_t random) {
    const uint32_t c = qs::encode_ref(f, x, r, o, random);
    if (r != qs::Rounding::Nearest || !std::isfinite(x)) return c;
    // At an exact midpoint, take the neighbour away from zero.
    const uint32_t up = qs::encode_ref(f, std::nextafter(x, x < 0 ? -INFINITY : INFINITY), r, o, random);
    const uint32_t down = qs::encode_ref(f, std::nextafter(x, x < 0 ? INFINITY : -INFINITY), r, o, random);
    const double vu = qs::decode_ref(f, up), vd = qs::decode_ref(f, down);
    return up != down && std::fabs(vu - x) == std::fabs(x - vd) ? up : c;
  };
  const qs::ConformanceReport r = quick(away);
  const qs::ConformanceFamily ties = family(r, "ties");
  EXPECT_GT(ties.failed, 100u);
  ASSERT_FALSE(ties.failures.empty());
  EXPECT_NE(ties.failures.front().what.find("ties to even give"), std::string::npos);
  EXPECT_FALSE(ties.failures.front().format.empty());
  EXPECT_EQ(family(r, "decode").failed, 0u);
  EXPECT_FALSE(r.passed());
  const std::string md = r.markdown("9.9.9", "avx2", "none");
  EXPECT_NE(md.find("FAILED"), std::string::npos);
  EXPECT_NE(md.find("## ties:"), std::string::npos);
}

TEST(Conformance, CancelStops) {
  qs::ConformanceOptions opt;
  opt.simd = false;
  opt.progress = [](int done, int) { return done < 2; };
  const qs::ConformanceReport r = qs::run_conformance(opt);
  EXPECT_TRUE(r.cancelled);
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(family(r, "ties").checks, 0u);
}
