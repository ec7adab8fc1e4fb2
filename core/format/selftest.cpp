// The CPU self-test: vectorized encoders against the scalar reference, bit for bit.
#include "format/selftest.h"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <sstream>
#include <type_traits>

#include "format/encode_bits.h"
#include "format/rng.h"

namespace qs {

namespace {
uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
}  // namespace

std::vector<float> probe_inputs(const Format& f, uint64_t seed, std::size_t n_random) {
  std::vector<float> in;
  const std::vector<double> vals = distinct_values(f);
  auto push_near = [&](double v) {
    const float x = static_cast<float>(v);
    for (float s : {x, -x}) {
      in.push_back(s);
      in.push_back(std::nextafter(s, INFINITY));
      in.push_back(std::nextafter(s, -INFINITY));
    }
  };
  for (std::size_t i = 0; i < vals.size(); ++i) {
    if (std::isinf(vals[i])) continue;
    push_near(vals[i]);
    if (i + 1 < vals.size() && std::isfinite(vals[i + 1])) push_near(0.5 * (vals[i] + vals[i + 1]));
  }
  // Beyond max: the rounding boundary and far out.
  push_near(f.max_finite * (1 + std::ldexp(1.0, -f.mbits - 1)));
  push_near(f.max_finite * 1.5);
  push_near(f.max_finite * 4);
  push_near(f.min_subnormal * 0.5);
  push_near(f.min_subnormal * 0.25);
  for (float s : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, FLT_MAX, -FLT_MAX, FLT_MIN, -FLT_MIN,
                  FLT_TRUE_MIN, -FLT_TRUE_MIN, 1.0f, -1.0f})
    in.push_back(s);
  std::mt19937_64 gen(seed);
  for (std::size_t i = 0; i < n_random; ++i) {
    const uint32_t u = static_cast<uint32_t>(gen());
    float x;
    if (i % 2 == 0) {
      std::memcpy(&x, &u, sizeof x);  // any bit pattern, NaN payloads and subnormals included
    } else {
      // Magnitudes spread over the format's range and a little beyond.
      const double lo = std::log2(f.min_subnormal) - 3, hi = std::log2(f.max_finite) + 2;
      const double e = lo + (hi - lo) * (double(u) / 4294967296.0);
      x = static_cast<float>(std::exp2(e) * ((gen() & 1) ? -1 : 1));
    }
    in.push_back(x);
  }
  return in;
}

SelftestCase check_level_against_ref(const Format& f, const EncodeOptions& opt, float scale,
                                     SimdLevel level, const std::vector<float>& inputs) {
  SelftestCase c;
  std::ostringstream name;
  name << f.name << '/' << to_string(opt.rounding) << '/' << to_string(opt.overflow) << '/'
       << (scale == 1.0f ? "unscaled" : "scaled") << '/' << to_string(level);
  c.name = name.str();
  const std::size_t n = inputs.size();
  std::vector<uint16_t> c_ref(n), c_fast(n);
  std::vector<float> v_ref(n), v_fast(n);
  EncodeJob job;
  job.x = inputs.data();
  job.n = n;
  job.scale = scale;
  job.index0 = 12345;  // a non-zero start exercises the index arithmetic of the generator
  job.codes16 = c_ref.data();
  job.values = v_ref.data();
  const EncodeStats s_ref = encode_f32_ref(f, opt, job);
  job.codes16 = c_fast.data();
  job.values = v_fast.data();
  const EncodeStats s_fast = encode_f32(f, opt, job, level);
  for (std::size_t i = 0; i < n; ++i) {
    const bool vnan = std::isnan(v_ref[i]) && std::isnan(v_fast[i]);
    if (c_ref[i] != c_fast[i] || (!vnan && bits_of(v_ref[i]) != bits_of(v_fast[i]))) {
      std::ostringstream d;
      d.precision(9);
      d << "input " << inputs[i] << " (0x" << std::hex << bits_of(inputs[i]) << std::dec << ") index " << i
        << ": ref code " << c_ref[i] << " value " << v_ref[i] << ", " << to_string(level) << " code "
        << c_fast[i] << " value " << v_fast[i];
      c.detail = d.str();
      return c;
    }
  }
  if (s_ref.overflow != s_fast.overflow || s_ref.underflow != s_fast.underflow || s_ref.nan != s_fast.nan) {
    std::ostringstream d;
    d << "stats differ: ref overflow/underflow/nan " << s_ref.overflow << '/' << s_ref.underflow << '/'
      << s_ref.nan << ", " << to_string(level) << ' ' << s_fast.overflow << '/' << s_fast.underflow << '/'
      << s_fast.nan;
    c.detail = d.str();
    return c;
  }
  c.passed = true;
  return c;
}

SelftestCase check_bits_against_ref(const Format& f, const EncodeOptions& opt, float scale,
                                    const std::vector<float>& inputs) {
  SelftestCase c;
  c.name = f.name + '/' + to_string(opt.rounding) + '/' + to_string(opt.overflow) + '/' +
           (scale == 1.0f ? "unscaled" : "scaled") + "/bits";
  const KernelParams p = make_kernel_params(f, opt, scale);
  const uint64_t index0 = 12345;
  EncodeStats ref_stats;
  BitsCounts cnt;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    float ref_v;
    uint16_t ref_c;
    EncodeJob job;
    job.x = &inputs[i];
    job.n = 1;
    job.scale = scale;
    job.values = &ref_v;
    job.codes16 = &ref_c;
    job.index0 = index0 + i;
    ref_stats += encode_f32_ref(f, opt, job);
    uint32_t code;
    float v;
    const uint32_t rnd = opt.rounding == Rounding::Stochastic ? stochastic_bits(opt.seed, index0 + i) : 0u;
    BitsCounts one;
    encode_bits(p, inputs[i], rnd, code, v, one);
    cnt.overflow += one.overflow, cnt.underflow += one.underflow, cnt.nan += one.nan;
    if ((p.stochastic || p.rmode == 0) && lean_ok(p)) {  // the CUDA kernels' elements, in each compiled form
      const LeanConsts lk = lean_consts(p);
      const uint32_t rs = rnd >> (9u + uint32_t(p.M));
      const double d = 1.0 / double(p.scale);
      const float x = inputs[i];
      const auto lean = [&]<bool Scaled, bool Dbl>(std::bool_constant<Scaled>, std::bool_constant<Dbl>, bool& b) {
        return p.stochastic ? stoch_lean<Scaled, Dbl>(p, lk, d, x, rs, b) : near_lean<Scaled, Dbl>(p, lk, d, x, b);
      };
      // Forms: unscaled (the kernel's for scale 1), the double product (for a positive normal scale), the division.
      bool bad[3];
      const float lv[3] = {lean(std::false_type{}, std::false_type{}, bad[0]), lean(std::true_type{}, std::true_type{}, bad[1]),
                           lean(std::true_type{}, std::false_type{}, bad[2])};
      const bool form_used[3] = {p.scale == 1.0f, std::isnormal(p.scale), true};
      for (int k = 0; k < 3; ++k)
        if (form_used[k] && !bad[k] &&
            (bits_of(lv[k]) != bits_of(v) || one.overflow || one.underflow || one.nan)) {
          std::ostringstream msg;
          msg.precision(9);
          msg << "input " << inputs[i] << ": " << (p.stochastic ? "stoch_lean" : "near_lean") << " (form " << k << ") value " << lv[k] << ", encode_bits value " << v
              << (one.overflow || one.underflow || one.nan ? " (counted)" : "");
          c.detail = msg.str();
          return c;
        }
    }
    if (p.fast_ok) {  // the fast path, where it takes the element, must give the same value
      BitsCounts unused;
      float fv;
      if (fast_bits(p, inputs[i], rnd, fv, unused) && bits_of(fv) != bits_of(v)) {
        std::ostringstream d;
        d.precision(9);
        d << "input " << inputs[i] << ": fast_bits value " << fv << ", encode_bits value " << v;
        c.detail = d.str();
        return c;
      }
    }
    const bool vnan = std::isnan(ref_v) && std::isnan(v);
    if (code != ref_c || (!vnan && bits_of(v) != bits_of(ref_v))) {
      std::ostringstream d;
      d.precision(9);
      d << "input " << inputs[i] << " (0x" << std::hex << bits_of(inputs[i]) << std::dec << "): ref code " << ref_c
        << " value " << ref_v << ", bits code " << code << " value " << v;
      c.detail = d.str();
      return c;
    }
  }
  if (ref_stats.overflow != cnt.overflow || ref_stats.underflow != cnt.underflow || ref_stats.nan != cnt.nan) {
    c.detail = "stats differ";
    return c;
  }
  c.passed = true;
  return c;
}

std::vector<SelftestCase> run_cpu_selftest(const std::function<void(const SelftestCase&)>& report) {
  std::vector<Format> formats = named_formats();
  for (const std::string& s : sweep_8bit_specs()) formats.push_back(parse_format(s));
  std::vector<SelftestCase> out;
  uint64_t seed = 1;
  for (const Format& f : formats) {
    const std::vector<float> inputs = probe_inputs(f, seed++, f.bits > 8 ? 20000 : 50000);
    for (Rounding r : kAllRoundings)
      for (Overflow o : {Overflow::Saturate, Overflow::Ieee})
        for (float scale : {1.0f, 0.3f})
        {
          EncodeOptions opt;
          opt.rounding = r;
          opt.overflow = o;
          opt.seed = 0x5eed0000u + seed;
          for (SimdLevel level : available_simd_levels()) {
            out.push_back(check_level_against_ref(f, opt, scale, level, inputs));
            if (report) report(out.back());
          }
          out.push_back(check_bits_against_ref(f, opt, scale, inputs));
          if (report) report(out.back());
        }
  }
  return out;
}

}  // namespace qs
