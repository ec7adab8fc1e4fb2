// The scale rules of quantization schemes, written once for host and device: a rule chosen when a scheme
// is parsed (Scheme::rule) and one function, group_scale(), that turns a group's statistics into its scale
// and zero point. apply_scheme, the Error tab's view, the training fake-quant and the CUDA scheme kernels
// all call it. Exercise: tests/tst_scheme.cpp (groupScale*), `quantscope-cli selftest --backend cuda`.
//
//   const qs::ScaleRuleParams p = qs::scale_rule_params(qs::ScaleRule::MxE8m0, qs::parse_format("e2m1fn"));
//   qs::GroupScale g = qs::group_scale(p, {.amax = 5.0});                 // g.scale == 1 (2^(2 - 2))
//
// Adding a rule (e.g. an MX rounding variant or a searched NVFP4 scale): a ScaleRule value, whatever it needs
// in ScaleRuleParams (filled by scale_rule_params), and one case in group_scale(). Callers do not change.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>

#include "format/format.h"
#include "format/rng.h"  // QS_HD: __host__ __device__ under nvcc, inline otherwise

namespace qs {

// Every rule gives scale 1 (zero point 0) for a group whose amax is not a positive finite number (all
// zeros, or no finite value), except Affine (which always has a range) and Int8Symmetric127 (its floor).
enum class ScaleRule : uint8_t {
  None,      // s = 1: a plain cast (granularity none); values beyond the format's range overflow.
  Amax,      // s = amax / max_finite in float32, floored at FLT_MIN (FLT_MIN keeps x / s finite where
             // max_finite is huge, e.g. bf16). THE symmetric int8 rule: schemes ("int8/tensor",
             // "int8/channel:0"), the CPU int8 GEMM (gemm_quant.cpp) and QuantizedLinear all use this one
             // with max_finite = 127 (amax_scale).
  MxE8m0,    // OCP MX: s = 2^(floor(log2 amax) - floor(log2 max_finite)), the exponent clamped to E8M0's
             // [-127, 127]. Chosen for block scales in an E8M0 format (is_e8m0_scale_format).
  TwoLevel,  // NVFP4-style: s = sb * ts with ts the fp32 tensor scale (two_level_tensor_scale) and
             // sb = amax / (max_finite * ts) rounded to nearest (saturating) into the block-scale format.
             // sb can round to 0: then s = 0, and the group quantizes to all zeros (scale_is_usable).
  Affine,    // Unsigned integers, PyTorch's MinMax observer in float32: lo' = min(lo, 0), hi' = max(hi, 0),
             // s = max((hi' - lo') / qmax, FLT_EPSILON), zero point = clamp(-rint(lo' / s), 0, qmax).
  Int8Symmetric127,  // A second int8 convention, kept by name: quantize_int8_ref (quant/int8_quant.h) and
                     // the CUDA quantize_int8 kernels it checks: s = max(amax / 127, 1e-8) in float32. It
                     // differs from Amax only for amax < 1.27e-6, where it gives 1e-8 (Amax: amax / 127,
                     // at least FLT_MIN; 1 for amax = 0). Not a scheme rule: parse_scheme never picks it.
  Rounded16,  // Block scales in a 16-bit float format (fp16, bf16), as GPTQ / compressed-tensors checkpoints
              // store them: s = amax / max_finite in float32 (Amax's scale, floored at FLT_MIN), rounded to
              // nearest (saturating) into the scale format; no tensor scale. Chosen for scale formats of
              // 16 bits or more; narrower float formats (e4m3fn: NVFP4) take TwoLevel.
  GgmlBlock,  // llama.cpp's block formats (q4_0 ... q6_k): the scales are chosen by ggml's quantizer from the
              // whole block (format/ggml_quantize.h), not from group statistics; apply_scheme calls that
              // quantizer and never group_scale, which answers 1 for this rule.
};

inline const char* to_string(ScaleRule r) {
  switch (r) {
    case ScaleRule::None: return "none";
    case ScaleRule::Amax: return "amax";
    case ScaleRule::MxE8m0: return "mx-e8m0";
    case ScaleRule::TwoLevel: return "two-level";
    case ScaleRule::Affine: return "affine";
    case ScaleRule::Int8Symmetric127: return "int8-symmetric-127";
    case ScaleRule::Rounded16: return "rounded-16";
    case ScaleRule::GgmlBlock: return "ggml-block";
  }
  return "?";
}

// What a group's scale depends on. amax = max |x| over the group's finite x (0 when none); lo / hi =
// the finite min / max (0 when none), read by Affine only. The CUDA kernels fill them from float data.
struct GroupStats {
  double amax = 0;
  double lo = 0, hi = 0;
};

// How MxE8m0 rounds a block's exponent (torchao's ScaleCalculationMode, by its names), e = the unbiased E8M0
// exponent of the scale, emax = floor(log2 max_finite) of the element format, all clamped to [-127, 127]:
//   Floor  e = floor(log2 amax) - emax                       the OCP MX spec (the default)
//   Ceil   e = ceil(log2 amax) - emax
//   Even   e = floor(log2 round(amax)) - emax, amax first rounded to the element's mantissa width (half up
//          at the first dropped bit), so an amax just below a power of two takes the next exponent
//   Rceil  e = ceil(log2(amax * (1 / max_finite))), the product in float32: cuBLAS's block quantization
//          (cvt.rp.ue8m0): the smallest power of two that keeps amax / s <= max_finite, so nothing clips
// (torchao's FLOOR/CEIL/EVEN map an exponent above 127 to the NaN scale and RCEIL does the same for a
// product of 2^127 or more; QuantScope saturates to 2^127 instead.)
enum class MxRounding : uint8_t { Floor, Ceil, Even, Rceil };

inline const char* to_string(MxRounding m) {
  switch (m) {
    case MxRounding::Floor: return "floor";
    case MxRounding::Ceil: return "ceil";
    case MxRounding::Even: return "even";
    case MxRounding::Rceil: return "rceil";
  }
  return "?";
}

struct GroupScale {
  float scale = 1.0f;      // x is quantized as x / scale; see scale_is_usable for a zero scale
  int32_t zero_point = 0;  // Affine only
};

// A rule with the format facts it reads, resolved once per scheme (plain data: kernels take it by value).
struct ScaleRuleParams {
  ScaleRule rule = ScaleRule::Amax;
  float max_finite = 1.0f;   // the element format's largest finite value in float32 (qmax for Affine)
  double max_finite_d = 1;   // the same in double (two-level block scales are decided in double)
  int max_exp = 0;           // floor(log2(max_finite)) (MxE8m0)
  MxRounding mx = MxRounding::Floor;  // MxE8m0's exponent rounding
  int mbits = 0;             // the element format's mantissa bits (MxRounding::Even)
  float inv_max = 1.0f;      // float32(1 / max_finite) (MxRounding::Rceil)
  float two_level_max = 1;   // float32(scale format's max_finite * max_finite): ts's denominator (TwoLevel)
};

// Host: the parameters of `rule` for `element` (and, for TwoLevel, the block-scale format).
inline ScaleRuleParams scale_rule_params(ScaleRule rule, const Format& element, const Format* scale_format = nullptr) {
  ScaleRuleParams p;
  p.rule = rule;
  p.max_finite = static_cast<float>(element.max_finite);
  p.max_finite_d = element.max_finite;
  int ex = 1;
  if (element.max_finite > 0) std::frexp(element.max_finite, &ex);
  p.max_exp = ex - 1;
  p.mbits = element.mbits;
  p.inv_max = element.max_finite > 0 ? static_cast<float>(1.0 / element.max_finite) : 1.0f;
  if (scale_format) p.two_level_max = static_cast<float>(scale_format->max_finite * element.max_finite);
  return p;
}

// Block scales in this format follow the OCP MX rule: an unsigned 8-bit exponent, no mantissa, no zero,
// bias 127 (e8m0fnu). Decided on the format's properties, not its name.
inline bool is_e8m0_scale_format(const Format& f) {
  return !f.is_int() && !f.is_signed && f.ebits == 8 && f.mbits == 0 && f.bias == 127 && f.no_zero;
}

// The E8M0 exponent range that MxE8m0 clamps to.
inline constexpr int kE8m0MinExp = -127, kE8m0MaxExp = 127;

// A scale the encoder can divide by. A two-level block scale that rounded to 0 is not: callers write
// zeros for that group (counting its non-zero inputs as underflow) instead of encoding.
QS_HD bool scale_is_usable(float s) { return s > 0.0f && s <= FLT_MAX; }

// TwoLevel's fp32 tensor scale from the tensor's amax: amax / (scale max * element max) in float32,
// floored at FLT_MIN, so that the largest block scale lands on the scale format's max; 1 for amax <= 0.
QS_HD float two_level_tensor_scale(const ScaleRuleParams& p, double tensor_amax) {
  if (!(tensor_amax > 0)) return 1.0f;
  const float t = static_cast<float>(tensor_amax) / p.two_level_max;
  return t < FLT_MIN ? FLT_MIN : t;
}

// Int8Symmetric127 by itself, for callers that hold a float amax (quantize_int8_ref and the CUDA
// quantize_int8 kernels, whose amax is over finite values only).
QS_HD float int8_symmetric127_scale(float amax) {
  const float s = amax / 127.0f;
  return s < 1e-8f ? 1e-8f : s;
}

// Rounds a wanted two-level block scale (a finite double >= 0) into the block-scale format, nearest with
// saturation; the host uses ScaleFormatRound (format.h's round_nearest_saturate), the CUDA kernels a
// table of the format's values that reproduces it.
struct ScaleFormatRound {
  const Format* format = nullptr;
  double operator()(double want) const { return round_nearest_saturate(*format, want); }
};

// THE scale rule: the scale (and zero point) of one group from its statistics. `tensor_scale` is TwoLevel's
// ts (two_level_tensor_scale of the whole tensor); `round_scale(want) -> double` rounds a block scale into
// the block-scale format (TwoLevel only; other rules never call it).
template <class RoundScale>
QS_HD GroupScale group_scale(const ScaleRuleParams& p, const GroupStats& g, float tensor_scale,
                             const RoundScale& round_scale) {
  GroupScale r;
  const double amax = g.amax;
  const bool positive = amax > 0 && amax <= DBL_MAX;
  switch (p.rule) {
    case ScaleRule::None:
      break;
    case ScaleRule::Amax:
      if (positive) {
        const float s = static_cast<float>(amax) / p.max_finite;
        r.scale = s < FLT_MIN ? FLT_MIN : s;
      }
      break;
    case ScaleRule::MxE8m0:
      if (positive) {
        int ex;
        int e;
        if (p.mx == MxRounding::Rceil) {
          const float d = static_cast<float>(amax) * p.inv_max;  // float32 product, as cuBLAS / torchao
          const double m = frexp(static_cast<double>(d), &ex);    // d = m * 2^ex, m in [0.5, 1)
          e = m == 0.5 ? ex - 1 : ex;                             // ceil(log2 d), subnormal d included
        } else {
          const double m = frexp(amax, &ex);  // amax = m * 2^ex, m in [0.5, 1): floor(log2 amax) = ex - 1
          e = ex - 1;
          if (p.mx == MxRounding::Ceil && m != 0.5) e += 1;
          // Even: the significand 2m in [1, 2) rounds up to 2 at the element's mantissa width when it is at
          // least 2 - 2^-(mbits + 1) (amax is a float, so the comparison in double is exact).
          if (p.mx == MxRounding::Even && 2.0 * m >= 2.0 - ldexp(1.0, -(p.mbits + 1))) e += 1;
          e -= p.max_exp;
        }
        e = e < kE8m0MinExp ? kE8m0MinExp : (e > kE8m0MaxExp ? kE8m0MaxExp : e);
        r.scale = ldexpf(1.0f, e);
      }
      break;
    case ScaleRule::TwoLevel:
      if (positive) {
        const double want = amax / (p.max_finite_d * double(tensor_scale));
        r.scale = static_cast<float>(round_scale(want)) * tensor_scale;  // 0 when sb underflows
      }
      break;
    case ScaleRule::Affine: {
      // std::min / std::max / std::clamp spelled out with their operand order (as format/quantize.cpp's
      // affine_params calls them), so that -0 and every edge come out the same on host and device.
      float lo = static_cast<float>(g.lo), hi = static_cast<float>(g.hi);
      lo = 0.0f < lo ? 0.0f : lo;
      hi = hi < 0.0f ? 0.0f : hi;
      float s = (hi - lo) / p.max_finite;
      s = s < FLT_EPSILON ? FLT_EPSILON : s;
      const float z = 0.0f - rintf(lo / s);
      r.scale = s;
      r.zero_point = static_cast<int32_t>(z < 0.0f ? 0.0f : (p.max_finite < z ? p.max_finite : z));
      break;
    }
    case ScaleRule::Int8Symmetric127:
      r.scale = int8_symmetric127_scale(static_cast<float>(amax));
      break;
    case ScaleRule::Rounded16:
      if (positive) {
        float s = static_cast<float>(amax) / p.max_finite;
        s = s < FLT_MIN ? FLT_MIN : s;
        r.scale = static_cast<float>(round_scale(double(s)));  // 0 if it underflows the scale format
      }
      break;
    case ScaleRule::GgmlBlock:
      break;
  }
  return r;
}

// The short form for every rule but TwoLevel (which needs the tensor scale and a block-scale rounding).
struct NoScaleRound {
  QS_HD double operator()(double want) const { return want; }
};
QS_HD GroupScale group_scale(const ScaleRuleParams& p, const GroupStats& g) {
  return group_scale(p, g, 1.0f, NoScaleRound{});
}

}  // namespace qs
