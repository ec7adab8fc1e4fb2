// The conformance suite, see conformance.h.
#include "format/conformance.h"

#include <cmath>
#include <cstring>
#include <sstream>

#include "format/rng.h"
#include "format/selftest.h"

namespace qs {

namespace {

constexpr std::size_t kKeptFailures = 20;

std::string hex(uint32_t code) {
  std::ostringstream o;
  o << "0x" << std::hex << code;
  return o.str();
}

std::string num(double v) {
  std::ostringstream o;
  o.precision(17);
  o << v;
  return o.str();
}

bool same(double a, double b) {  // bitwise, NaN equal to NaN
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

struct Family {
  ConformanceFamily& f;
  void check(bool ok, const Format& fmt, uint32_t code, double input, const std::function<std::string()>& what) {
    ++f.checks;
    if (ok) return;
    ++f.failed;
    if (f.failures.size() < kKeptFailures) f.failures.push_back({fmt.name, code, input, what()});
  }
};

std::vector<Format> formats_under_test() {
  std::vector<Format> out = named_formats();
  for (const std::string& s : sweep_8bit_specs()) out.push_back(parse_format(s));
  return out;
}

uint32_t mag_mask(const Format& f) { return (f.is_signed ? f.sign_bit() : f.code_count()) - 1u; }

}  // namespace

double decode_definition(const Format& f, uint32_t code) {
  if (f.is_int()) {  // two's complement
    const int64_t raw = int64_t(code);
    return double(f.is_signed && raw >= (int64_t(1) << (f.bits - 1)) ? raw - (int64_t(1) << f.bits) : raw);
  }
  const bool negative = f.is_signed && (code >> (f.bits - 1)) != 0;
  const uint32_t magnitude = code & mag_mask(f);
  const uint32_t e = magnitude >> f.mbits, m = magnitude & ((1u << f.mbits) - 1u);
  const uint32_t e_ones = (1u << f.ebits) - 1u, m_ones = (1u << f.mbits) - 1u;
  const double sign = negative ? -1.0 : 1.0;
  if (f.no_zero) {  // E8M0: 2^(e - bias), the all-ones code NaN (OCP MX)
    if (magnitude == mag_mask(f) && f.specials != Specials::None) return std::nan("");
    return std::pow(2.0, double(int(e) - f.bias));
  }
  switch (f.specials) {
    case Specials::Ieee:  // the top exponent: inf (m = 0) and NaN
      if (f.ebits > 0 && e == e_ones) return m == 0 ? sign * INFINITY : std::nan("");
      break;
    case Specials::Fn:  // no inf; all ones (both signs) is NaN
      if (e == e_ones && m == m_ones) return std::nan("");
      break;
    case Specials::Fnuz:  // no inf, no -0: the code of -0 is the one NaN
      if (negative && magnitude == 0) return std::nan("");
      break;
    case Specials::None:
      break;
  }
  const double scale_m = std::pow(2.0, -double(f.mbits));
  if (e == 0) return sign * double(m) * scale_m * std::pow(2.0, double(1 - f.bias));  // subnormal (or fixed point)
  return sign * (1.0 + double(m) * scale_m) * std::pow(2.0, double(int(e) - f.bias));
}

bool ConformanceReport::passed() const {
  if (cancelled) return false;
  for (const ConformanceFamily& f : families)
    if (!f.skipped && f.failed) return false;
  return true;
}

std::string ConformanceReport::markdown(const std::string& version, const std::string& cpu, const std::string& gpu) const {
  std::ostringstream o;
  o << "# QuantScope conformance report\n\n"
    << "- build: QuantScope " << version << "\n- CPU: " << cpu << "\n- GPU: " << gpu << "\n- result: **"
    << (cancelled ? "cancelled" : passed() ? "all families passed" : "FAILED") << "**\n\n"
    << "| family | what is checked | checks | failed | result |\n|---|---|---:|---:|---|\n";
  for (const ConformanceFamily& f : families)
    o << "| " << f.name << " | " << f.description << " | " << f.checks << " | " << f.failed << " | "
      << (f.skipped ? "skipped: " + f.skip_reason : f.failed ? "**FAIL**" : "pass") << " |\n";
  for (const ConformanceFamily& f : families) {
    if (f.failures.empty()) continue;
    o << "\n## " << f.name << ": " << f.failed << " failed (the first " << f.failures.size() << ")\n\n";
    for (const ConformanceFailure& x : f.failures)
      o << "- `" << x.format << "` code " << hex(x.code) << ", input " << num(x.input) << ": " << x.what << "\n";
  }
  return o.str();
}

ConformanceReport run_conformance(const ConformanceOptions& opt) {
  const EncodeFn encode = opt.encode ? opt.encode : EncodeFn([](const Format& f, double x, Rounding r, Overflow o, uint32_t random) {
    return encode_ref(f, x, r, o, random);
  });
  ConformanceReport rep;
  auto family = [](std::string name, std::string description) {
    ConformanceFamily f;
    f.name = std::move(name);
    f.description = std::move(description);
    return f;
  };
  rep.families = {
      family("decode", "every code's value against its definition (fields, bias, subnormals, specials)"),
      family("round-trip", "encode(decode(c)) keeps c's value, every non-NaN code (int8's -128 saturates to -127: the "
                     "narrow symmetric range)"),
      family("ties", "midpoints go to the even code (RNE; formats without mantissa bits: up, as ml_dtypes); the doubles "
               "beside them to the nearer value"),
      family("away/zero", "ties away from zero and truncation: midpoints to the larger magnitude (nearest-away), every "
                    "input below a value to the one under it (toward-zero), their overflow thresholds"),
      family("specials", "NaN, ±inf and the overflow threshold under saturate and ieee"),
      family("stochastic", "the rounding rule at its boundary and the up-rate over 20,000 draws"),
      family("simd", "every vectorized encoder level equals the scalar reference"),
  };
  const int total = int(rep.families.size());
  auto keep_going = [&](int done) { return !opt.progress || opt.progress(done, total); };
  const std::vector<Format> formats = formats_under_test();

  {  // decode
    Family fam{rep.families[0]};
    for (const Format& f : formats)
      for (uint32_t c = 0; c < f.code_count(); ++c) {
        const double got = decode_ref(f, c), want = decode_definition(f, c);
        fam.check(same(got, want), f, c, 0, [&] { return "decodes to " + num(got) + ", its definition is " + num(want); });
      }
  }
  if (!keep_going(1)) return rep.cancelled = true, rep;

  {  // round-trip
    Family fam{rep.families[1]};
    for (const Format& f : formats)
      for (uint32_t c = 0; c < f.code_count(); ++c) {
        const double v = decode_ref(f, c);
        if (std::isnan(v)) continue;
        const uint32_t back = encode(f, v, Rounding::Nearest, Overflow::Ieee, 0);
        const double w = decode_ref(f, back);
        // -0 comes back as +0 where the format has no negative zero; the most negative integer code
        // (int8's -128) is outside the narrow symmetric range [-127, 127] the encoder uses, so it saturates.
        const bool narrow = f.is_int() && f.is_signed && v == -std::ldexp(1.0, f.bits - 1);
        const bool ok = narrow ? w == v + 1 : same(w, v) || (v == 0 && w == 0 && !f.has_negative_zero);
        fam.check(ok, f, c, v, [&] { return num(v) + " encodes to " + hex(back) + " = " + num(w); });
      }
  }
  if (!keep_going(2)) return rep.cancelled = true, rep;

  {  // ties
    Family fam{rep.families[2]};
    for (const Format& f : formats) {
      const std::vector<double> vals = distinct_values(f);
      for (std::size_t i = 0; i + 1 < vals.size(); ++i) {
        const double a = vals[i], b = vals[i + 1];
        if (!std::isfinite(a) || !std::isfinite(b)) continue;
        const uint32_t ca = encode_ref(f, a, Rounding::Nearest, Overflow::Saturate, 0);
        const uint32_t cb = encode_ref(f, b, Rounding::Nearest, Overflow::Saturate, 0);
        // The even one: an even magnitude code (floats), an even integer (ints). Formats without mantissa
        // bits (E8M0, E7M0) follow ml_dtypes: a tie between two powers of two goes to the larger magnitude.
        const bool a_even = f.is_int() ? std::fmod(std::fabs(a), 2.0) == 0 : ((ca & mag_mask(f)) & 1u) == 0;
        const double mid = a + (b - a) / 2;
        // (Between zero and the smallest value the tie goes to zero, the even code, for every format.)
        const bool powers = !f.is_int() && f.mbits == 0 && a != 0 && b != 0;
        const double even = powers ? (std::fabs(a) > std::fabs(b) ? a : b) : a_even ? a : b;
        const uint32_t cm = encode(f, mid, Rounding::Nearest, Overflow::Saturate, 0);
        const double got = decode_ref(f, cm);
        fam.check(got == even, f, cm, mid, [&] {
          return "the midpoint of " + num(a) + " and " + num(b) + " rounds to " + num(got) + "; ties to even give " + num(even);
        });
        const double below = std::nextafter(mid, -INFINITY), above = std::nextafter(mid, INFINITY);
        const double gb = decode_ref(f, encode(f, below, Rounding::Nearest, Overflow::Saturate, 0));
        const double ga = decode_ref(f, encode(f, above, Rounding::Nearest, Overflow::Saturate, 0));
        fam.check(gb == a, f, ca, below, [&] { return "just below the midpoint rounds to " + num(gb) + ", not " + num(a); });
        fam.check(ga == b, f, cb, above, [&] { return "just above the midpoint rounds to " + num(ga) + ", not " + num(b); });
      }
    }
  }
  if (!keep_going(3)) return rep.cancelled = true, rep;

  {  // ties away, toward zero
    Family fam{rep.families[3]};
    for (const Format& f : formats) {
      const std::vector<double> vals = distinct_values(f);
      for (std::size_t i = 0; i + 1 < vals.size(); ++i) {
        const double a = vals[i], b = vals[i + 1];
        if (!std::isfinite(a) || !std::isfinite(b)) continue;
        const double mid = a + (b - a) / 2;
        const double big = std::fabs(a) > std::fabs(b) ? a : b, small = big == a ? b : a;
        const double away = decode_ref(f, encode(f, mid, Rounding::NearestAway, Overflow::Saturate, 0));
        fam.check(away == big || (f.no_zero && std::fabs(mid) < f.min_normal), f, 0, mid, [&] {
          return "nearest-away takes the midpoint of " + num(a) + " and " + num(b) + " to " + num(away) + ", not " + num(big);
        });
        // Toward zero: the midpoint and the double just short of the larger magnitude go to the smaller one.
        for (double x : {mid, std::nextafter(big, small)}) {
          const double tz = decode_ref(f, encode(f, x, Rounding::TowardZero, Overflow::Saturate, 0));
          const bool ok = same(tz, small) || (tz == 0 && small == 0) || (f.no_zero && std::fabs(x) < f.min_normal);
          fam.check(ok, f, 0, x, [&] { return "toward-zero takes " + num(x) + " to " + num(tz) + ", not " + num(small); });
        }
      }
      // Overflow: nearest-away overflows at the midpoint above max, toward-zero one quantum above it.
      const double over_ieee = f.has_inf ? INFINITY : f.has_nan ? std::nan("") : f.max_finite;
      for (Rounding r : {Rounding::NearestAway, Rounding::TowardZero}) {
        const double t = overflow_threshold(f, r);
        if (!std::isfinite(t)) continue;
        const double at = decode_ref(f, encode(f, t, r, Overflow::Ieee, 0));
        fam.check(same(at, over_ieee), f, 0, t, [&] {
          return std::string(to_string(r)) + " at its overflow threshold gives " + num(at) + ", not " + num(over_ieee);
        });
        const double jb = double(std::nextafter(float(t), 0.0f));
        const double below = decode_ref(f, encode(f, jb, r, Overflow::Ieee, 0));
        fam.check(below == f.max_finite, f, 0, jb, [&] {
          return std::string(to_string(r)) + " just below its overflow threshold gives " + num(below) + ", not max";
        });
      }
    }
  }
  if (!keep_going(4)) return rep.cancelled = true, rep;

  {  // specials
    Family fam{rep.families[4]};
    for (const Format& f : formats) {
      const double nan_in = decode_ref(f, encode(f, std::nan(""), Rounding::Nearest, Overflow::Saturate, 0));
      fam.check(f.has_nan ? std::isnan(nan_in) : nan_in == 0, f, 0, std::nan(""), [&] {
        return std::string("NaN encodes to ") + num(nan_in) + (f.has_nan ? ", not NaN" : ", not 0 (the format has no NaN)");
      });
      const double over_ieee = f.has_inf ? INFINITY : f.has_nan ? std::nan("") : f.max_finite;
      for (double x : {double(INFINITY), f.overflow_threshold}) {
        const double sat = decode_ref(f, encode(f, x, Rounding::Nearest, Overflow::Saturate, 0));
        fam.check(sat == f.max_finite, f, 0, x, [&] { return "saturate gives " + num(sat) + ", not max " + num(f.max_finite); });
        const double ieee = decode_ref(f, encode(f, x, Rounding::Nearest, Overflow::Ieee, 0));
        fam.check(same(ieee, over_ieee), f, 0, x, [&] { return "ieee overflow gives " + num(ieee) + ", not " + num(over_ieee); });
      }
      // The threshold is a float32 (the first float that rounds beyond max): the float just below it stays.
      const double just_below = double(std::nextafter(float(f.overflow_threshold), 0.0f));
      const double jb = decode_ref(f, encode(f, just_below, Rounding::Nearest, Overflow::Ieee, 0));
      fam.check(jb == f.max_finite, f, 0, just_below,
                [&] { return "just below the overflow threshold gives " + num(jb) + ", not max " + num(f.max_finite); });
    }
  }
  if (!keep_going(5)) return rep.cancelled = true, rep;

  {  // stochastic
    Family fam{rep.families[5]};
    for (const char* name : {"e4m3fn", "e5m2", "e2m1fn", "e3m2fn", "int8", "bf16"}) {
      Format f;
      try {
        f = parse_format(name);
      } catch (const FormatError&) {
        continue;  // a table without it
      }
      const std::vector<double> vals = distinct_values(f);
      std::size_t i = 0;
      while (i + 1 < vals.size() && !(vals[i] >= 1.0)) ++i;  // the step starting at 1 (or the first above)
      if (i + 1 >= vals.size()) continue;
      const double lo = vals[i], hi = vals[i + 1];
      for (double F : {0.25, 0.5, 0.875}) {
        const double x = lo + F * (hi - lo);
        const uint32_t t = uint32_t(std::floor(F * 4294967296.0));
        const double up = decode_ref(f, encode(f, x, Rounding::Stochastic, Overflow::Saturate, t - 1));
        const double down = decode_ref(f, encode(f, x, Rounding::Stochastic, Overflow::Saturate, t));
        fam.check(up == hi, f, 0, x, [&] { return "random = floor(F 2^32) - 1 gives " + num(up) + ", not " + num(hi); });
        fam.check(down == lo, f, 0, x, [&] { return "random = floor(F 2^32) gives " + num(down) + ", not " + num(lo); });
        const int n = 20000;
        const uint64_t seed = 0x5eed0000u + uint64_t(F * 1000);
        int ups = 0;
        for (int k = 0; k < n; ++k)  // the engine's own counter-based draws (format/rng.h)
          ups += decode_ref(f, encode(f, x, Rounding::Stochastic, Overflow::Saturate, stochastic_bits(seed, uint64_t(k)))) == hi;
        const double rate = double(ups) / n, sigma = std::sqrt(F * (1 - F) / n);
        fam.check(std::fabs(rate - F) <= 5 * sigma, f, 0, x,
                  [&] { return "up-rate " + num(rate) + " over 20000 draws, expected " + num(F) + " ± 5σ"; });
      }
    }
  }
  if (!keep_going(6)) return rep.cancelled = true, rep;

  {  // simd
    ConformanceFamily& fam = rep.families[6];
    if (!opt.simd) {
      fam.skipped = true;
      fam.skip_reason = "not asked for";
    } else {
      for (const SelftestCase& c : run_cpu_selftest()) {
        ++fam.checks;
        if (c.passed) continue;
        ++fam.failed;
        if (fam.failures.size() < kKeptFailures) fam.failures.push_back({c.name, 0, 0, c.detail});
      }
    }
  }
  keep_going(7);
  return rep;
}

}  // namespace qs
