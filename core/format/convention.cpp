// The convention presets and the comparison behind `compare-conventions` (format/convention.h).
// Float conventions run through the scalar reference encoder; the SIMD and CUDA encoders give the same codes
// for every rounding (selftest), so the comparison is the engine's own answer.
#include "format/convention.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <set>

namespace qs {

const std::vector<Convention>& conventions() {
  static const std::vector<Convention> all = [] {
    std::vector<Convention> v;
    auto flt = [&](const char* name, const char* title, const char* source, Rounding r, Overflow o) -> Convention& {
      Convention c;
      c.name = name;
      c.title = title;
      c.source = source;
      c.rounding = r;
      c.overflow = o;
      v.push_back(c);
      return v.back();
    };
    flt("ml_dtypes", "ties to even; beyond max to inf, else NaN (non-saturating); NaN into fp6/fp4: -0 for +NaN",
        "ml_dtypes 0.5 float8.h ConvertImpl<kSaturate=false, kTruncate=false> (numpy astype)", Rounding::Nearest,
        Overflow::Ieee)
        .nan = NanRule::MlDtypes;
    flt("torch", "as ml_dtypes, with torch's NaN codes (e5m2: 0x7f; fnuz: 0x80)",
        "PyTorch 2.x c10/util/Float8_e5m2.h fp8e5m2_from_fp32_value, Float8_e4m3fn.h (tensor.to(dtype))",
        Rounding::Nearest, Overflow::Ieee)
        .nan = NanRule::AllOnes;
    flt("satfinite", "ties to even; clamp to ±max (inf too), NaN stays NaN (e5m2: 0x7f)",
        "CUDA cuda_fp8.h __nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...), TensorRT", Rounding::Nearest,
        Overflow::Saturate)
        .nan = NanRule::AllOnes;
    {
      Convention& c = flt("qpytorch", "every code finite (e4m3 reaches 480); ties away; clamp to ±max; NaN to ±max",
                          "QPyTorch 0.3 quant_cpu.cpp float_quantize (round_bitwise, clip_exponent)",
                          Rounding::NearestAway, Overflow::Saturate);
      c.all_finite = true;
      c.subnormal_prerounding = true;
      c.nan = NanRule::Max;
    }
    flt("mx-nearest", "ties away from zero (floor(|x| + 0.5)); clamp normals to ±max",
        "microxcaling mx/elemwise_ops.py _round_mantissa(round='nearest'), saturate_normals=True",
        Rounding::NearestAway, Overflow::Saturate)
        .inf_kept = true;
    flt("mx-even", "ties to even; clamp normals to ±max",
        "microxcaling mx/elemwise_ops.py _round_mantissa(round='even'), saturate_normals=True", Rounding::Nearest,
        Overflow::Saturate)
        .inf_kept = true;
    flt("toward-zero", "truncation; beyond max to inf, else NaN",
        "ml_dtypes float8.h ConvertImpl<kSaturate=false, kTruncate=true>", Rounding::TowardZero, Overflow::Ieee);
    auto integer = [&](const char* name, const char* title, const char* source, IntRule rule) {
      Convention c;
      c.name = name;
      c.title = title;
      c.source = source;
      c.int_rule = rule;
      v.push_back(c);
    };
    integer("torch-qint8", "s = amax / 127.5, codes [-128, 127], x * (1/s) rounded half to even",
            "torch.ao.quantization MinMaxObserver(qscheme=torch.per_tensor_symmetric, dtype=torch.qint8), "
            "torch.quantize_per_tensor (fbgemm Quantize)",
            IntRule::TorchQint8);
    integer("narrow-symmetric", "s = amax / 127, codes [-127, 127]",
            "TensorRT int8, LLM.int8 (bitsandbytes), QuantScope's int8/tensor", IntRule::Narrow127);
    integer("torch-affine-uint8", "0 forced into [min, max]; s = (max' - min') / 255, integer zero point",
            "torch.ao.quantization MinMaxObserver(qscheme=torch.per_tensor_affine, dtype=torch.quint8)",
            IntRule::TorchAffineU8);
    integer("tight-affine-uint8", "s = (max - min) / 255 over the tensor's own range, value = min + q s",
            "min/max affine without a forced zero (the uint8 seed)", IntRule::TightAffineU8);
    return v;
  }();
  return all;
}

std::string convention_names() {
  std::string s;
  for (const Convention& c : conventions()) s += (s.empty() ? "" : ", ") + c.name;
  return s;
}

const Convention& find_convention(std::string_view name) {
  for (const Convention& c : conventions())
    if (c.name == name) return c;
  throw FormatError("unknown convention '" + std::string(name) + "' (known: " + convention_names() + ")");
}

Format convention_format(const Format& f, const Convention& c) {
  if (!c.all_finite || f.is_int() || f.specials == Specials::None) return f;
  std::string spec = "e" + std::to_string(f.ebits) + "m" + std::to_string(f.mbits) + ":bias=" +
                     std::to_string(f.bias) + ":specials=none";
  if (!f.is_signed) spec += ":unsigned";
  return parse_format(spec);
}

namespace {

uint32_t signed_code(const Format& f, uint32_t mag, bool negative) {
  return negative && f.is_signed ? (mag | f.sign_bit()) : mag;
}

// encode_convention on the format convention_format already resolved (compare_conventions resolves it once
// per convention, not once per input).
ConventionCode encode_resolved(const Format& f, const Convention& c, float x) {
  const bool negative = std::signbit(x);
  ConventionCode out;
  // AllOnes only respells a NaN the format has: fnuz formats keep their one NaN code (0x80, the negative
  // zero), formats without NaN their own rule.
  const bool all_ones = c.nan == NanRule::AllOnes && f.has_nan && f.specials != Specials::Fnuz;
  if (std::isnan(x) && c.nan == NanRule::MlDtypes && !f.has_nan && f.has_negative_zero) {
    out.code = negative ? 0u : f.sign_bit();  // the zero of the other sign (measured, ml_dtypes 0.5)
  } else if (std::isnan(x) && (c.nan == NanRule::Max || all_ones)) {
    const uint32_t mag = c.nan == NanRule::Max ? f.max_code_mag : (f.is_signed ? f.sign_bit() : f.code_count()) - 1u;
    out.code = signed_code(f, mag, negative);
  } else if (std::isinf(x) && c.inf_kept && (f.has_inf || f.has_nan)) {
    // The value stays ±inf in microxcaling; a format without inf can only show it as its NaN code, and one
    // with neither (fp6, fp4) as its clamp to ±max below.
    out.code = f.has_inf ? signed_code(f, f.inf_code, negative)
                         : encode_ref(f, std::copysign(std::nan(""), double(x)), c.rounding, Overflow::Ieee, 0);
  } else {
    float y = x;
    if (c.subnormal_prerounding && y != 0 && std::fabs(y) < float(f.min_normal) && !f.is_int() && !f.no_zero) {
      // QPyTorch adds ±2^emin in float32 (rounding to nearest even there), rounds that, and subtracts it again.
      const float s = std::copysign(float(f.min_normal), y);
      y = (y + s) - s;
    }
    out.code = encode_ref(f, double(y), c.rounding, c.overflow, 0);
  }
  out.value = decode_ref(f, out.code);
  return out;
}

}  // namespace

ConventionCode encode_convention(const Format& f, const Convention& c, float x) {
  if (c.is_int()) throw FormatError(c.name + " is an integer convention: it needs a tensor's scale");
  return encode_resolved(convention_format(f, c), c, x);
}

IntParams int_params(const Convention& c, const float* x, std::size_t n) {
  float lo = INFINITY, hi = -INFINITY;
  for (std::size_t i = 0; i < n; ++i)
    if (std::isfinite(x[i])) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
  if (!(lo <= hi)) lo = hi = 0;  // no finite value
  IntParams p;
  constexpr float kEps = 0x1p-23f;  // torch.finfo(torch.float32).eps, the observers' floor
  switch (c.int_rule) {
    case IntRule::TorchQint8: {
      const float amax = std::max(-std::min(lo, 0.0f), std::max(hi, 0.0f));
      p.scale = std::max(amax / 127.5f, kEps);
      p.qmin = -128, p.qmax = 127;
      break;
    }
    case IntRule::Narrow127: {
      const float amax = std::max(std::fabs(lo), std::fabs(hi));
      p.scale = amax > 0 ? std::max(amax / 127.0f, FLT_MIN) : 1.0f;
      p.qmin = -127, p.qmax = 127;
      break;
    }
    case IntRule::TorchAffineU8: {
      const float l = std::min(lo, 0.0f), h = std::max(hi, 0.0f);
      p.scale = std::max((h - l) / 255.0f, kEps);
      const float z = 0.0f - std::nearbyint(l / p.scale);
      p.zero_point = int32_t(std::clamp(z, 0.0f, 255.0f));
      p.qmin = 0, p.qmax = 255;
      break;
    }
    case IntRule::TightAffineU8:
      p.scale = hi > lo ? (hi - lo) / 255.0f : 1.0f;
      p.offset = lo;
      p.qmin = 0, p.qmax = 255;
      break;
    case IntRule::None:
      throw FormatError(c.name + " is not an integer convention");
  }
  return p;
}

ConventionCode encode_int(const Convention& c, const IntParams& p, float x) {
  double q;
  if (std::isnan(x)) {
    q = p.zero_point;  // no library defines it; QuantScope writes the zero point (value 0)
  } else {
    switch (c.int_rule) {
      case IntRule::TorchQint8:
      case IntRule::TorchAffineU8:
        // torch 2.11's CPU quantize_per_tensor rounds x * (1 / s) first and adds the zero point after (found
        // by the oracle: zp + x * (1 / s) rounded once, with or without FMA, and x / s all differ on a few
        // inputs per 100,000).
        q = std::nearbyint(double(x * (1.0f / p.scale))) + p.zero_point;
        break;
      case IntRule::TightAffineU8:
        q = std::nearbyint(double((x - p.offset) / p.scale));
        break;
      default:
        q = std::nearbyint(double(x / p.scale));
        break;
    }
    q = std::clamp(q, double(p.qmin), double(p.qmax));
  }
  ConventionCode out;
  const int32_t qi = int32_t(q);
  out.code = uint32_t(qi) & 0xffu;
  out.value = c.int_rule == IntRule::TightAffineU8 ? double(p.offset + float(qi) * p.scale)
                                                   : double(float(qi - p.zero_point) * p.scale);
  return out;
}

std::vector<float> convention_probes(const Format& f) {
  std::set<double> points;
  std::vector<Format> variants = {f};
  if (!f.is_int() && f.specials != Specials::None) {
    Convention all;
    all.all_finite = true;
    try {
      variants.push_back(convention_format(f, all));
    } catch (const FormatError&) {
      // No all-finite variant (bf16's would exceed float32's range): the probes are f's own.
    }
  }
  for (const Format& v : variants) {
    std::vector<double> vals = distinct_values(v);
    std::vector<double> pos;
    for (double d : vals)
      if (d >= 0 && std::isfinite(d)) pos.push_back(d);
    if (!pos.empty() && pos.front() != 0) pos.insert(pos.begin(), 0.0);
    for (Rounding r : {Rounding::Nearest, Rounding::NearestAway, Rounding::TowardZero})
      points.insert(overflow_threshold(v, r));
    const double above = overflow_threshold(v, Rounding::TowardZero);  // the would-be next value above max
    if (std::isfinite(above)) pos.push_back(above);
    for (std::size_t i = 0; i < pos.size(); ++i) {
      points.insert(pos[i]);
      if (i + 1 < pos.size()) {
        const double mid = pos[i] + (pos[i + 1] - pos[i]) / 2;
        points.insert(mid);
        if (mid < v.min_normal) {  // QPyTorch's pre-rounding moves inputs within 2^(emin - 24) of a tie
          points.insert(mid - std::ldexp(1.0, v.emin - 24));
          points.insert(mid + std::ldexp(1.0, v.emin - 24));
        }
      }
    }
  }
  std::set<float> probe;
  for (double p : points) {
    const float x = float(p);
    if (!(x >= 0) || std::isinf(x)) continue;
    for (float y : {x, std::nextafter(x, 0.0f), std::nextafter(x, INFINITY)})
      if (std::isfinite(y)) probe.insert(y);
  }
  probe.insert(FLT_MAX);
  probe.insert(INFINITY);
  std::vector<float> out;
  for (auto it = probe.rbegin(); it != probe.rend(); ++it) out.push_back(-*it);
  out.push_back(-0.0f);
  for (float x : probe) out.push_back(x);
  // (-0 and +0 are distinct probes; std::set keeps one of them.)
  out.erase(std::unique(out.begin(), out.end(),
                        [](float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }),
            out.end());
  out.push_back(std::nanf(""));
  out.push_back(-std::nanf(""));
  return out;
}

namespace {

bool same_value(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

}  // namespace

ConventionComparison compare_conventions(const Format& f, const std::vector<std::string>& names, const float* x,
                                         std::size_t n) {
  ConventionComparison cmp;
  cmp.format = f;
  for (const std::string& name : names) cmp.conventions.push_back(&find_convention(name));
  if (cmp.conventions.size() < 2) throw FormatError("compare at least two conventions (got " + std::to_string(names.size()) + ")");
  const bool ints = cmp.conventions.front()->is_int();
  for (const Convention* c : cmp.conventions) {
    if (c->is_int() != ints)
      throw FormatError("cannot compare float and integer conventions (" + cmp.conventions.front()->name + ", " +
                        c->name + ")");
    if (!c->is_int() && f.is_int())
      throw FormatError(c->name + " is a float convention; " + f.name + " is an integer format");
    if (c->is_int()) {
      const bool wants_signed = c->int_rule == IntRule::TorchQint8 || c->int_rule == IntRule::Narrow127;
      if (!f.is_int() || f.bits != 8 || f.is_signed != wants_signed)
        throw FormatError(c->name + " quantizes to " + (wants_signed ? "int8" : "uint8") + ", not " + f.name);
    }
  }
  if (x) {
    cmp.inputs.assign(x, x + n);
  } else if (!ints) {
    cmp.inputs = convention_probes(f);
  } else {
    for (int i = 0; i <= 2000; ++i) cmp.inputs.push_back(-1.0f + float(i) / 1000.0f);
  }
  const std::size_t m = cmp.inputs.size();
  cmp.codes.assign(cmp.conventions.size(), std::vector<ConventionCode>(m));
  for (std::size_t k = 0; k < cmp.conventions.size(); ++k) {
    const Convention& c = *cmp.conventions[k];
    if (c.is_int()) {
      cmp.params.push_back(int_params(c, cmp.inputs.data(), m));
      for (std::size_t i = 0; i < m; ++i) cmp.codes[k][i] = encode_int(c, cmp.params.back(), cmp.inputs[i]);
    } else {
      cmp.params.emplace_back();
      const Format fc = convention_format(f, c);
      for (std::size_t i = 0; i < m; ++i) cmp.codes[k][i] = encode_resolved(fc, c, cmp.inputs[i]);
    }
  }
  cmp.differ.assign(m, 0);
  cmp.stats.assign(cmp.conventions.size(), {});
  for (std::size_t i = 0; i < m; ++i) {
    const ConventionCode& a = cmp.codes[0][i];
    for (std::size_t k = 1; k < cmp.conventions.size(); ++k) {
      const ConventionCode& b = cmp.codes[k][i];
      if (a.code != b.code || !same_value(a.value, b.value)) {
        cmp.differ[i] = 1;
        ++cmp.stats[k].differs_from_first;
      }
    }
    cmp.differing += cmp.differ[i];
  }
  for (std::size_t i = 0; i < m; ++i) {
    if (!cmp.differ[i]) continue;
    if (i > 0 && cmp.differ[i - 1] && !cmp.ranges.empty()) {
      cmp.ranges.back().hi = cmp.inputs[i];
      ++cmp.ranges.back().count;
    } else {
      cmp.ranges.push_back({cmp.inputs[i], cmp.inputs[i], 1});
    }
  }
  for (std::size_t k = 0; k < cmp.conventions.size(); ++k) {
    double sig = 0, err = 0;
    for (std::size_t i = 0; i < m; ++i) {
      const double xi = cmp.inputs[i], v = cmp.codes[k][i].value;
      if (!std::isfinite(xi)) continue;
      if (std::isnan(v)) {
        ++cmp.stats[k].nan_out;
        continue;
      }
      if (!std::isfinite(v)) continue;
      sig += xi * xi;
      err += (xi - v) * (xi - v);
    }
    cmp.stats[k].sqnr_db = err == 0 ? INFINITY : 10.0 * std::log10(sig / err);
  }
  return cmp;
}

}  // namespace qs
