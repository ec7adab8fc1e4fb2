// The re-quantization check of a pre-quantized tensor (quant/requant_check.h) and its one-line summary: the
// part of the pre-quantized reader that needs quant/ (parse_scheme, group_scale, the encoders), here above the
// readers so that io/ never includes quant/ and the readers alone (the fuzz build's qs_io_fuzz) link without
// it. It walks the recognised group through io/prequant_impl.h. Exercise: tests/core/tst_prequant.cpp.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "format/encode_simd.h"
#include "format/format.h"
#include "format/quantize.h"
#include "io/prequant_impl.h"
#include "quant/requant_check.h"
#include "format/scale_rule.h"
#include "quant/scheme.h"

namespace qs {

using namespace prequant_detail;

namespace {

// Both NaN, or the same value with the same sign (so -0 and +0 differ, as their codes do).
bool same_value(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// a and b finite, same sign, neighbouring float32 values.
bool one_ulp_apart(float a, float b) {
  if (!std::isfinite(a) || !std::isfinite(b) || std::signbit(a) != std::signbit(b)) return false;
  uint32_t ua, ub;
  std::memcpy(&ua, &a, 4);
  std::memcpy(&ub, &b, 4);
  return (ua > ub ? ua - ub : ub - ua) == 1;
}

}  // namespace

RequantCheck requantize_check(const PrequantizedFile& file, std::size_t index) {
  RequantCheck out;
  const Group* pg = file.group(index);
  if (!pg) {
    out.why_not = "not a recognised pre-quantized tensor";
    return out;
  }
  const Group& g = *pg;
  out.scheme = g.scheme;
  if (g.scheme.empty()) {
    out.why_not = g.info.scheme_note.empty() ? "QuantScope has no matching scheme" : g.info.scheme_note;
    return out;
  }
  Scheme s;
  try {
    s = parse_scheme(g.scheme);
  } catch (const FormatError& e) {
    out.why_not = e.what();
    return out;
  }
  const Loaded L = load(file.raw(), g);
  const bool affine = s.rule == ScaleRule::Affine;
  if (!affine && !L.zp.empty())
    for (float z : L.zp)
      if (z != 0) {
        out.why_not = "non-zero zero points: QuantScope's " + s.format.name + " is symmetric";
        return out;
      }
  out.supported = true;
  const CodeReader cr{g, L.codes.data};
  // The dequantized tensor and each element's stored level (code value minus zero point).
  std::vector<float> w(g.numel), stored(g.numel);
  walk(g, [&](std::size_t e, std::size_t r, std::size_t c, std::size_t k) {
    const float v = code_value(g, cr.at(e, r, c));
    stored[e] = L.zp.empty() ? v : v - L.zp[k];
    w[e] = stored[e] * L.eff[k];
  });
  // Group statistics over finite values (GroupStats' definition), and whether a group's codes are all zero.
  std::vector<GroupStats> st(g.nscales);
  std::vector<uint8_t> any(g.nscales, 0), nonzero(g.nscales, 0);
  double tensor_amax = 0;
  walk(g, [&](std::size_t e, std::size_t, std::size_t, std::size_t k) {
    if (stored[e] != 0) nonzero[k] = 1;
    const float v = w[e];
    if (!std::isfinite(v)) return;
    GroupStats& gs = st[k];
    gs.amax = std::max(gs.amax, double(std::fabs(v)));
    gs.lo = any[k] ? std::min(gs.lo, double(v)) : double(v);
    gs.hi = any[k] ? std::max(gs.hi, double(v)) : double(v);
    any[k] = 1;
    tensor_amax = std::max(tensor_amax, double(std::fabs(v)));
  });
  const ScaleRuleParams p = scale_rule_params(s);
  const float ts = s.rule == ScaleRule::TwoLevel ? two_level_tensor_scale(p, tensor_amax) : 1.0f;
  std::vector<GroupScale> qs(g.nscales);
  out.scales_total = g.nscales;
  for (std::size_t k = 0; k < g.nscales; ++k) {
    double sb = -1;  // TwoLevel: the block scale in the scale format, as the rule rounded it
    auto round = [&](double want) {
      sb = s.scale_format ? round_nearest_saturate(*s.scale_format, want) : want;
      return sb;
    };
    qs[k] = group_scale(p, st[k], ts, round);
    const float mine = g.compare_sb && sb >= 0 ? static_cast<float>(sb) : qs[k].scale;
    bool differ = !same_value(mine, L.cmp[k]);
    if (affine) differ = differ || float(qs[k].zero_point) != (L.zp.empty() ? 0.0f : L.zp[k]);
    if (!differ) continue;
    ++out.scales_differ;
    if (!nonzero[k]) ++out.scales_zero_groups;
    else if (g.fp32_scale && one_ulp_apart(mine, L.cmp[k])) ++out.scales_one_ulp;
  }
  if (s.rule == ScaleRule::TwoLevel) {
    char buf[160];
    if (g.global_divides)
      std::snprintf(buf, sizeof buf, "tensor scale: stored 1 / global scale = %.9g, QuantScope's amax / %g = %.9g",
                    double(1.0f / L.global), double(p.two_level_max), double(ts));
    else
      std::snprintf(buf, sizeof buf, "tensor scale: stored weight_scale_2 = %.9g, QuantScope's amax / %g = %.9g",
                    double(L.global), double(p.two_level_max), double(ts));
    out.note = buf;
  }
  // Codes: each run of one group along a row, encoded with QuantScope's scale for that group.
  std::vector<float> qv(s.format.code_count());
  for (uint32_t c = 0; c < qv.size(); ++c) qv[c] = static_cast<float>(decode_ref(s.format, c));
  std::vector<uint16_t> code16(g.cols);
  std::vector<float> vals(g.cols);
  out.codes_total = g.numel;
  std::size_t run_start = 0, run_k = kNone, run_row = 0;
  auto flush = [&](std::size_t end) {
    if (run_k == kNone || end == run_start) return;
    const std::size_t n = end - run_start;
    const float* x = w.data() + run_start;
    const GroupScale& gsk = qs[run_k];
    if (affine) {
      encode_affine_f32(s.format, s.options, x, n, run_start, gsk.scale, gsk.zero_point, vals.data());
      for (std::size_t i = 0; i < n; ++i)
        out.codes_differ += !same_value(std::rint(vals[i] / gsk.scale) + 0.0f, stored[run_start + i] + 0.0f);
    } else if (!scale_is_usable(gsk.scale)) {
      for (std::size_t i = 0; i < n; ++i) out.codes_differ += !same_value(0.0f, stored[run_start + i]);
    } else {
      EncodeJob job;
      job.x = x;
      job.n = n;
      job.scale = gsk.scale;
      job.codes16 = code16.data();
      job.index0 = run_start;
      encode_f32(s.format, s.options, job);
      for (std::size_t i = 0; i < n; ++i) out.codes_differ += !same_value(qv[code16[i]], stored[run_start + i]);
    }
  };
  walk(g, [&](std::size_t e, std::size_t r, std::size_t, std::size_t k) {
    if (k != run_k || r != run_row) {
      flush(e);
      run_start = e;
      run_k = k;
      run_row = r;
    }
  });
  flush(g.numel);
  return out;
}

std::string describe(const RequantCheck& c) {
  std::string s = std::to_string(c.codes_differ) + " of " + std::to_string(c.codes_total) + " codes and " +
                  std::to_string(c.scales_differ) + " of " + std::to_string(c.scales_total) + " scales differ";
  std::vector<std::string> parts;
  if (c.scales_one_ulp)
    parts.push_back(std::to_string(c.scales_one_ulp) + " scale" + (c.scales_one_ulp > 1 ? "s" : "") +
                    " by one ulp, the rounding of the dequantized amax");
  if (c.scales_zero_groups)
    parts.push_back(std::to_string(c.scales_zero_groups) + " in all-zero groups, which the codes do not determine");
  if (!parts.empty()) {
    s += " (";
    for (std::size_t i = 0; i < parts.size(); ++i) s += (i ? "; " : "") + parts[i];
    s += ")";
  }
  return s;
}

std::string requant_summary(const std::string& tensor, const PrequantInfo& info, const RequantCheck& c) {
  std::string s = tensor + ": stored " + (info.scheme.empty() ? info.element_format : info.scheme) + " (" + info.convention + ")";
  if (!c.supported) return s + "; not re-quantized: " + c.why_not;
  s += "; re-quantized: " + describe(c);
  if (!c.note.empty()) s += "; " + c.note;
  return s;
}

}  // namespace qs
