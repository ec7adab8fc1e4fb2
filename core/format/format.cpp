// The named-format table, the spec parser and the scalar reference encoder/decoder.
// The reference works on the exact value in double arithmetic (every input and every code value is
// exact there), independent of the bit tricks of the vectorized paths that are tested against it.
#include "format/format.h"
#include "util/parse_int.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <set>

namespace qs {

const char* to_string(Rounding r) {
  switch (r) {
    case Rounding::Nearest: return "nearest";
    case Rounding::Stochastic: return "stochastic";
    case Rounding::NearestAway: return "nearest-away";
    case Rounding::TowardZero: return "toward-zero";
  }
  return "?";
}
const char* to_string(Overflow o) { return o == Overflow::Saturate ? "saturate" : "ieee"; }
const char* to_string(Specials s) {
  switch (s) {
    case Specials::Ieee: return "ieee";
    case Specials::Fn: return "fn";
    case Specials::Fnuz: return "fnuz";
    case Specials::None: return "none";
  }
  return "?";
}
const char* to_string(ValueClass c) {
  switch (c) {
    case ValueClass::Zero: return "zero";
    case ValueClass::Subnormal: return "subnormal";
    case ValueClass::Normal: return "normal";
    case ValueClass::Inf: return "inf";
    case ValueClass::Nan: return "nan";
  }
  return "?";
}

Rounding parse_rounding(std::string_view s) {
  if (s == "nearest") return Rounding::Nearest;
  if (s == "stochastic") return Rounding::Stochastic;
  if (s == "nearest-away") return Rounding::NearestAway;
  if (s == "toward-zero") return Rounding::TowardZero;
  throw FormatError("unknown rounding '" + std::string(s) +
                    "' (expected nearest, nearest-away, toward-zero or stochastic)");
}

Overflow parse_overflow(std::string_view s) {
  if (s == "saturate") return Overflow::Saturate;
  if (s == "ieee") return Overflow::Ieee;
  throw FormatError("unknown overflow mode '" + std::string(s) + "' (expected saturate or ieee)");
}

bool Format::operator==(const Format& o) const {
  return kind == o.kind && bits == o.bits && ebits == o.ebits && mbits == o.mbits &&
         bias == o.bias && is_signed == o.is_signed && specials == o.specials && no_zero == o.no_zero;
}

namespace {

uint32_t mag_mask(const Format& f) { return (1u << (f.bits - (f.is_signed ? 1 : 0))) - 1u; }

// Fills the derived fields and checks that every value is exact in float32.
void finalize(Format& f, std::string_view spec) {
  auto fail = [&](const std::string& why) { throw FormatError(std::string(spec) + ": " + why); };
  if (f.ebits < 0 || f.mbits < 0) fail("negative field width");
  if (f.ebits + f.mbits == 0) fail("no exponent or mantissa bits");
  if (f.ebits > 8) fail(std::to_string(f.ebits) + " exponent bits, at most 8 allowed (values must be exact in float32)");
  f.bits = f.ebits + f.mbits + (f.is_signed ? 1 : 0);
  if (f.bits > 16) fail(std::to_string(f.bits) + " bits, at most 16 allowed");
  if (f.specials == Specials::Ieee && f.ebits < 2) fail("specials=ieee needs at least 2 exponent bits");
  if (f.specials == Specials::Fnuz && !f.is_signed) fail("specials=fnuz needs a sign bit");

  const int M = f.mbits;
  const uint32_t mm = mag_mask(f);
  const uint32_t emax_field = (1u << f.ebits) - 1u;
  f.emin = f.no_zero ? -f.bias : 1 - f.bias;
  f.has_inf = f.specials == Specials::Ieee;
  f.has_nan = (f.specials == Specials::Ieee && M > 0) || f.specials == Specials::Fn ||
              f.specials == Specials::Fnuz;
  f.has_negative_zero = f.is_signed && f.specials != Specials::Fnuz && !f.is_int();
  switch (f.specials) {
    case Specials::Ieee:
      f.max_code_mag = (emax_field << M) - 1u;
      f.inf_code = emax_field << M;
      f.nan_code = M > 0 ? (emax_field << M) | (1u << (M - 1)) : 0u;
      break;
    case Specials::Fn:
      f.max_code_mag = mm - 1u;
      f.nan_code = mm;
      break;
    case Specials::Fnuz:
      f.max_code_mag = mm;
      f.nan_code = f.sign_bit();
      break;
    case Specials::None:
      f.max_code_mag = mm;
      break;
  }
  // The quantum of the finest binade and the top of the range must both be float32 values.
  if (f.emin - M < -149)
    fail("bias " + std::to_string(f.bias) + " out of range: smallest value 2^" +
         std::to_string(f.emin - M) + " is below float32's 2^-149");
  f.max_finite = decode_ref(f, f.max_code_mag);
  if (!(f.max_finite < 0x1p128))
    fail("bias " + std::to_string(f.bias) + " out of range: largest value exceeds float32's range");
  if (!(f.max_finite > 0)) fail("no finite non-zero value");
  {
    // The midpoint above max (in float32: max has <= 16 significant bits) rounds up when max's
    // significand is odd (always, for M = 0 normal values), else it ties back to max.
    const int e = f.ebits == 0 ? f.emin : std::ilogb(f.max_finite);
    const int q = (f.ebits == 0 ? f.emin : std::max(e, f.emin)) - M;
    const double sig = std::ldexp(f.max_finite, -q);
    const bool odd = (M == 0 && f.ebits > 0) || std::fmod(sig, 2.0) == 1.0;
    const float mid = static_cast<float>(f.max_finite + std::ldexp(1.0, q - 1));
    f.overflow_threshold = odd ? double(mid) : double(std::nextafter(mid, INFINITY));
  }
  if (f.no_zero) {
    f.min_subnormal = f.min_normal = decode_ref(f, 0);
  } else {
    f.min_subnormal = std::ldexp(1.0, f.emin - M);
    f.min_normal = f.ebits == 0 ? f.min_subnormal : std::ldexp(1.0, f.emin);
  }
}

Format make_float(const char* name, int E, int M, int bias, Specials sp, bool is_signed = true,
                  bool no_zero = false) {
  Format f;
  f.name = name;
  f.kind = FormatKind::Float;
  f.ebits = E;
  f.mbits = M;
  f.bias = bias;
  f.specials = sp;
  f.is_signed = is_signed;
  f.no_zero = no_zero;
  finalize(f, name);
  return f;
}

// Integers as E = 0 grids with quantum 1: value = m * 2^(1 - bias - M), so bias = 1 - M.
Format make_int(const char* name, int bits, bool is_signed) {
  Format f;
  f.name = name;
  f.kind = FormatKind::Int;
  f.ebits = 0;
  f.mbits = bits - (is_signed ? 1 : 0);
  f.bias = 1 - f.mbits;
  f.specials = Specials::None;
  f.is_signed = is_signed;
  finalize(f, name);
  return f;
}

std::vector<Format> build_table() {
  return {
      make_float("e4m3fn", 4, 3, 7, Specials::Fn),
      make_float("e5m2", 5, 2, 15, Specials::Ieee),
      make_float("e4m3fnuz", 4, 3, 8, Specials::Fnuz),
      make_float("e5m2fnuz", 5, 2, 16, Specials::Fnuz),
      make_float("e4m3b11fnuz", 4, 3, 11, Specials::Fnuz),
      make_float("e4m3", 4, 3, 7, Specials::Ieee),
      make_float("e3m4", 3, 4, 3, Specials::Ieee),
      make_float("e8m0fnu", 8, 0, 127, Specials::Fn, /*signed=*/false, /*no_zero=*/true),
      make_float("e2m3fn", 2, 3, 1, Specials::None),
      make_float("e3m2fn", 3, 2, 3, Specials::None),
      make_float("e2m1fn", 2, 1, 1, Specials::None),
      make_float("bf16", 8, 7, 127, Specials::Ieee),
      make_float("fp16", 5, 10, 15, Specials::Ieee),
      make_int("int8", 8, true),
      make_int("uint8", 8, false),
      make_int("int4", 4, true),
      make_int("uint4", 4, false),
  };
}

std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

}  // namespace

const std::vector<Format>& named_formats() {
  static const std::vector<Format> table = build_table();
  return table;
}

const std::vector<std::string>& sweep_8bit_specs() {
  static const std::vector<std::string> specs = {
      "e0m7", "e1m6:bias=0:specials=none", "e3m4:bias=1:specials=none", "e5m2",
      "e7m0:bias=63:specials=none"};
  return specs;
}

Format parse_format(std::string_view spec_in) {
  std::string spec = lower(spec_in);
  while (!spec.empty() && std::isspace(static_cast<unsigned char>(spec.back()))) spec.pop_back();
  while (!spec.empty() && std::isspace(static_cast<unsigned char>(spec.front()))) spec.erase(0, 1);
  if (spec.empty()) throw FormatError("empty format spec");
  // ml_dtypes-style aliases.
  for (const char* prefix : {"float8_", "float6_", "float4_"})
    if (spec.rfind(prefix, 0) == 0) spec = spec.substr(std::string_view(prefix).size());
  if (spec == "bfloat16") spec = "bf16";
  if (spec == "float16" || spec == "half") spec = "fp16";
  for (const Format& f : named_formats())
    if (f.name == spec) return f;

  // Custom: e<E>m<M>[:opt]...
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    size_t colon = spec.find(':', start);
    parts.push_back(spec.substr(start, colon == std::string::npos ? colon : colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  const std::string& head = parts[0];
  size_t mpos = head.find('m');
  int E = -1, M = -1;
  if (head.size() < 4 || head[0] != 'e' || mpos == std::string::npos ||
      !parse_int(std::string_view(head).substr(1, mpos - 1), E) ||
      !parse_int(std::string_view(head).substr(mpos + 1), M))
    throw FormatError("unknown format '" + std::string(spec_in) +
                      "' (expected a named format such as e4m3fn or int8, or e<E>m<M>[:bias=B]"
                      "[:specials=ieee|fn|fnuz|none][:unsigned])");
  if (E < 0 || M < 0) throw FormatError(std::string(spec_in) + ": negative field width");
  if (E > 8)
    throw FormatError(std::string(spec_in) + ": " + std::to_string(E) +
                      " exponent bits, at most 8 allowed (values must be exact in float32)");
  if (M > 16)
    throw FormatError(std::string(spec_in) + ": " + std::to_string(E + M + 1) + " bits, at most 16 allowed");

  Format f;
  f.kind = FormatKind::Float;
  f.ebits = E;
  f.mbits = M;
  f.bias = E == 0 ? 1 : (1 << (E - 1)) - 1;
  f.specials = E >= 2 ? Specials::Ieee : Specials::None;
  f.is_signed = true;
  bool have_bias = false, have_specials = false;
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string& p = parts[i];
    if (p.rfind("bias=", 0) == 0) {
      if (have_bias) throw FormatError(std::string(spec_in) + ": bias given twice");
      if (!parse_int(std::string_view(p).substr(5), f.bias))
        throw FormatError(std::string(spec_in) + ": bias '" + p.substr(5) + "' is not an integer");
      have_bias = true;
    } else if (p.rfind("specials=", 0) == 0) {
      if (have_specials) throw FormatError(std::string(spec_in) + ": specials given twice");
      std::string v = p.substr(9);
      if (v == "ieee") f.specials = Specials::Ieee;
      else if (v == "fn") f.specials = Specials::Fn;
      else if (v == "fnuz") f.specials = Specials::Fnuz;
      else if (v == "none") f.specials = Specials::None;
      else throw FormatError(std::string(spec_in) + ": unknown specials '" + v + "' (ieee, fn, fnuz or none)");
      have_specials = true;
    } else if (p == "unsigned") {
      f.is_signed = false;
    } else {
      throw FormatError(std::string(spec_in) + ": unknown option '" + p +
                        "' (expected bias=<B>, specials=ieee|fn|fnuz|none or unsigned)");
    }
  }
  // Canonical name: only the options that differ from the defaults.
  std::string name = "e" + std::to_string(E) + "m" + std::to_string(M);
  const int default_bias = E == 0 ? 1 : (1 << (E - 1)) - 1;
  const Specials default_specials = E >= 2 ? Specials::Ieee : Specials::None;
  if (f.bias != default_bias) name += ":bias=" + std::to_string(f.bias);
  if (f.specials != default_specials) name += std::string(":specials=") + to_string(f.specials);
  if (!f.is_signed) name += ":unsigned";
  f.name = name;
  finalize(f, spec_in);
  for (const Format& t : named_formats())  // e4m3:specials=fn is e4m3fn, e5m10 is fp16
    if (t == f) return t;
  return f;
}

double round_nearest_saturate(const Format& f, double x) {
  if (f.is_int() || f.ebits == 0 || f.mbits == 0 || f.no_zero || !(x >= 0) || !std::isfinite(x))
    return decode_ref(f, encode_ref(f, x, Rounding::Nearest, Overflow::Saturate, 0));
  if (x >= f.max_finite) return f.max_finite;
  if (x == 0) return 0.0;
  // The quantum at x: 2^(max(e, emin) - M), e = floor(log2 x). Scaling by a power of two is exact,
  // and nearbyint rounds half to even in the default rounding mode, so this is the exact RNE value.
  uint64_t xb;
  std::memcpy(&xb, &x, sizeof xb);
  const int be = int(xb >> 52);  // x > 0: the biased exponent
  if (be >= 64 && be <= 2047 - 64) {
    // A normal x far from both ends of double's range: e from the bits and the scalings as multiplications
    // by exact powers of two (|q| < 64 for every format this takes), the same values as ilogb / ldexp
    // without their calls (two-level block scales round here once per block).
    const int e = be - 1023;
    const int q = (e > f.emin ? e : f.emin) - f.mbits;
    if (q > -64 && q < 64) {
      auto pow2 = [](int k) {
        const uint64_t b = uint64_t(k + 1023) << 52;
        double d;
        std::memcpy(&d, &b, sizeof d);
        return d;
      };
      const double r = std::nearbyint(x * pow2(-q)) * pow2(q);
      return r > f.max_finite ? f.max_finite : r;
    }
  }
  const int e = std::ilogb(x);
  const int q = (e > f.emin ? e : f.emin) - f.mbits;
  const double r = std::ldexp(std::nearbyint(std::ldexp(x, -q)), q);
  return r > f.max_finite ? f.max_finite : r;  // a carry past max rounds back under saturation
}

double decode_ref(const Format& f, uint32_t code) {
  const uint32_t mm = mag_mask(f);
  code &= (f.sign_bit() | mm);
  if (f.is_int()) {
    int64_t v = code;
    if (f.is_signed && (code & f.sign_bit())) v -= int64_t(1) << f.bits;
    return static_cast<double>(v);
  }
  const bool neg = f.is_signed && (code & f.sign_bit());
  const uint32_t mag = code & mm;
  const int M = f.mbits;
  const uint32_t efield = mag >> M;
  const uint32_t mfield = mag & ((1u << M) - 1u);
  const uint32_t emax_field = (1u << f.ebits) - 1u;
  if (f.specials == Specials::Fnuz && neg && mag == 0) return std::nan("");
  if (f.specials == Specials::Fn && mag == mm) return std::nan("");
  if (f.specials == Specials::Ieee && efield == emax_field) {
    if (mfield != 0) return std::nan("");
    return neg ? -INFINITY : INFINITY;
  }
  double v;
  if (f.no_zero) v = std::ldexp(double((1u << M) + mfield), int(efield) - f.bias - M);
  else if (efield == 0) v = std::ldexp(double(mfield), f.emin - M);
  else v = std::ldexp(double((1u << M) + mfield), int(efield) - f.bias - M);
  return neg ? -v : v;
}

ValueClass classify_ref(const Format& f, uint32_t code) {
  double v = decode_ref(f, code);
  if (std::isnan(v)) return ValueClass::Nan;
  if (std::isinf(v)) return ValueClass::Inf;
  if (v == 0) return ValueClass::Zero;
  if (f.ebits == 0 || f.no_zero) return ValueClass::Normal;
  const uint32_t efield = (code & mag_mask(f)) >> f.mbits;
  return efield == 0 ? ValueClass::Subnormal : ValueClass::Normal;
}

uint32_t encode_ref(const Format& f, double x, Rounding r, Overflow o, uint32_t random,
                    EncodeStats* stats) {
  EncodeStats local;
  EncodeStats& st = stats ? *stats : local;
  const int M = f.mbits;
  const bool neg = std::signbit(x);
  const uint32_t sign = (neg && f.is_signed && f.specials != Specials::Fnuz) ? f.sign_bit() : 0u;
  const uint32_t nan_code = f.has_nan ? (f.nan_code | sign) : 0u;
  auto with_sign = [&](uint32_t mag) -> uint32_t {
    if (!neg || !f.is_signed || mag == 0) return mag;
    if (f.is_int()) return ((1u << f.bits) - mag) & ((1u << f.bits) - 1u);
    return mag | f.sign_bit();
  };

  if (std::isnan(x)) {
    ++st.nan;
    return nan_code;
  }
  double a = std::fabs(x);
  if (f.no_zero && a == 0) return nan_code;  // e8m0: no zero
  if (!f.is_signed && neg && a != 0) {
    // A negative value cannot be represented: NaN where the format defines it for this, else 0.
    ++st.overflow;
    if (f.no_zero || (o == Overflow::Ieee && f.has_nan)) return nan_code;
    return 0u;
  }
  if (o == Overflow::Saturate && a > f.max_finite) {
    if (a >= overflow_threshold(f, r)) ++st.overflow;
    a = f.max_finite;
  }
  if (std::isinf(a)) {  // only reached under ieee
    if (f.has_inf) return f.inf_code | sign;
    ++st.overflow;
    if (f.has_nan) return nan_code;
    return with_sign(f.max_code_mag);
  }
  if (a == 0) return (neg && f.has_negative_zero) ? f.sign_bit() : 0u;

  int ex;
  std::frexp(a, &ex);
  const int e = ex - 1;  // a in [2^e, 2^(e+1))
  const int ee = (f.ebits == 0) ? f.emin : std::max(e, f.emin);
  const int q = ee - M;  // quantum of the binade that holds a
  const double t = std::ldexp(a, -q);
  const double lo = std::floor(t);
  const double frac = t - lo;  // exact: t has at most 53 significant bits
  bool up;
  if (r == Rounding::Nearest) {
    // Ties to the even significand. With M = 0 a normal significand is 1 (odd), so ties between
    // two powers of two go away from zero, as in ml_dtypes (E8M0: 3 -> 4, 1.5 -> 2).
    up = frac > 0.5 || (frac == 0.5 && std::fmod(lo, 2.0) == 1.0);
  } else if (r == Rounding::NearestAway) {
    up = frac >= 0.5;
  } else if (r == Rounding::TowardZero) {
    up = false;
  } else {
    up = double(random) < std::floor(std::ldexp(frac, 32));
  }
  double m = lo + (up ? 1.0 : 0.0);
  const double v = std::ldexp(m, q);
  if (v > f.max_finite) {
    ++st.overflow;  // only under ieee: saturate clamped above and max_finite is on the grid
    if (f.has_inf) return f.inf_code | sign;
    if (f.has_nan) return nan_code;
    return with_sign(f.max_code_mag);
  }
  if (f.no_zero) {
    // Below 2^emin the nearest (and only) candidate is the smallest code.
    if (e < f.emin) return 0u;
    return static_cast<uint32_t>(((ee - f.emin) << M) + int64_t(m) - (int64_t(1) << M));
  }
  if (m == 0) {
    ++st.underflow;
    return (neg && f.has_negative_zero) ? f.sign_bit() : 0u;
  }
  uint32_t mag;
  if (f.ebits == 0) mag = static_cast<uint32_t>(m);
  else mag = static_cast<uint32_t>((int64_t(ee - f.emin) << M) + int64_t(m));
  return with_sign(mag);
}

double overflow_threshold(const Format& f, Rounding r) {
  if (r == Rounding::Nearest || r == Rounding::Stochastic) return f.overflow_threshold;
  // The quantum of max's binade (as finalize computes it); max + q/2 and max + q are float32 values
  // (max has at most 16 significant bits), except max + q = 2^128 for E8M0, which is inf.
  const int e = f.ebits == 0 ? f.emin : std::ilogb(f.max_finite);
  const int q = (f.ebits == 0 ? f.emin : std::max(e, f.emin)) - f.mbits;
  const double t = f.max_finite + std::ldexp(1.0, r == Rounding::NearestAway ? q - 1 : q);
  return t < 0x1p128 ? t : INFINITY;
}

std::vector<GridEntry> grid(const Format& f) {
  std::vector<GridEntry> g;
  g.reserve(f.code_count());
  for (uint32_t c = 0; c < f.code_count(); ++c) g.push_back({c, decode_ref(f, c), classify_ref(f, c)});
  return g;
}

std::vector<double> distinct_values(const Format& f) {
  std::set<double> s;
  for (uint32_t c = 0; c < f.code_count(); ++c) {
    double v = decode_ref(f, c);
    if (std::isnan(v)) continue;
    if (f.is_int() && std::fabs(v) > f.max_finite) continue;  // int8 -128: outside the narrow range
    s.insert(v == 0 ? 0.0 : v);
  }
  return {s.begin(), s.end()};
}

}  // namespace qs
