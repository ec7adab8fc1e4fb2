// Quantization schemes "FORMAT/GRANULARITY" (docs/DESIGN.md, Schemes and scale rules): one scale per tensor,
// per channel along an axis, or per block of n along the last axis (fp32, E8M0 (OCP MX) or two-level
// NVFP4-style scales), applied to float32 tensors with the engine's encoders. Exercise: tests/tst_scheme.cpp,
// `quantscope-cli analyze --in w.safetensors --scheme int8/channel:0 --scheme e2m1fn/block:16:e4m3fn`.
//
//   qs::Scheme s = qs::parse_scheme("e2m1fn/block:32:e8m0fnu");   // MX FP4
//   qs::SchemeOutput out = qs::apply_scheme(s, x.data(), shape, y.data());
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "format/encode_simd.h"
#include "format/format.h"
#include "quant/metrics.h"
#include "quant/scale_rule.h"
#include "util/parallel.h"

namespace qs {

// None: no scaling at all (s = 1), a plain cast such as x.to(torch.float8_e4m3fn): values beyond the
// format's range overflow, which is what the overflow modes decide.
enum class Granularity { Tensor, Channel, Block, None };

struct Scheme {
  std::string text;                   // canonical spelling, e.g. "e4m3fn/block:32:e8m0fnu"
  Format format;                      // element format
  Granularity granularity = Granularity::Tensor;
  int axis = 0;                       // channel axis; negative counts from the end
  int block = 0;                      // block length along the last axis
  std::optional<Format> scale_format; // block scales: empty = fp32; E8M0 = MX rule; else two-level
  EncodeOptions options;              // rounding, overflow, seed (defaults: nearest, saturate)
  // The scale rule, resolved by parse_scheme from the formats and granularity: None (/none), Affine
  // (unsigned integers), MxE8m0 (block scales in E8M0), TwoLevel (block scales in another format), else Amax.
  ScaleRule rule = ScaleRule::Amax;
};

// "FORMAT[/tensor | /channel:<axis> | /block:<n>[:<scale format>] | /none]"; no granularity means tensor.
// Throws FormatError naming what is wrong.
Scheme parse_scheme(std::string_view text, const EncodeOptions& options = {});

// The scheme's rule with its formats' facts (once per apply), and the block-scale rounding that
// TwoLevel's group_scale needs on the host:
//   const ScaleRuleParams p = scale_rule_params(s);
//   GroupScale g = group_scale(p, {amax, lo, hi}, tensor_scale, scale_format_round(s));
ScaleRuleParams scale_rule_params(const Scheme& s);
inline ScaleFormatRound scale_format_round(const Scheme& s) {
  return ScaleFormatRound{s.scale_format ? &*s.scale_format : nullptr};
}

// Two rules by themselves (scale_rule.h documents them), for callers with an amax in hand:
// ScaleRule::Amax (float formats and symmetric int8: amax / max_finite, 1 when amax = 0) ...
float amax_scale(const Format& f, double amax);
// ... and ScaleRule::MxE8m0 (2^(floor(log2 amax) - floor(log2 max_finite)), clamped to [2^-127, 2^127]).
float mx_scale(const Format& element, double amax);

// The clip bound of a group quantized with scale s: |x| beyond it counts as clipped (and its error
// beyond the bound as clipping error). It is s times the format's overflow threshold, where round to
// nearest leaves the range, not s times max finite: with s = amax / max computed in float32, the amax
// element itself can sit one float ulp above s * max and merely rounds down to max; the clipped counts
// then agree with the encoder's overflow counts instead of reporting one "clipped" value per group.
inline double clip_bound(const Format& f, float scale) { return double(scale) * f.overflow_threshold; }

struct SchemeOutput {
  EncodeStats stats;
  double amax = 0;              // max |x| over finite x
  std::size_t groups = 0;       // scales used (1, channels or blocks)
  float tensor_scale = 1.0f;    // two-level block scales: the fp32 tensor scale
  bool cancelled = false;
};

// y = the scheme's fake quantization of x (float32, C order, `shape`); y may alias nothing in x.
// Stochastic rounding draws by flat element index, so results do not depend on threads.
// With `metrics`, each group's error metrics are accumulated into it (clip bound: clip_bound()).
SchemeOutput apply_scheme(const Scheme& s, const float* x, const std::vector<int64_t>& shape, float* y,
                          int threads = 1, const ProgressFn& progress = {}, ErrorMetrics* metrics = nullptr);

}  // namespace qs
