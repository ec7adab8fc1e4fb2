// Quantization schemes "FORMAT/GRANULARITY" (docs/DESIGN.md, Schemes and scale rules): one scale per tensor,
// per channel along an axis, or per block of n along the last axis (fp32, E8M0 (OCP MX) or two-level
// NVFP4-style scales), applied to float32 tensors with the engine's encoders. Exercise: tests/tst_scheme.cpp,
// `quantscope-cli analyze --in w.safetensors --scheme int8/channel:0 --scheme e2m1fn/block:16:e4m3fn`.
//
//   qs::Scheme s = qs::parse_scheme("e2m1fn/block:32:e8m0fnu");   // MX FP4
//   qs::SchemeOutput out = qs::apply_scheme(s, x.data(), shape, y.data());
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "format/encode_simd.h"
#include "quant/reduce_simd.h"
#include "format/format.h"
#include "format/ggml_blocks.h"
#include "quant/metrics.h"
#include "format/scale_rule.h"
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
  int block = 0;                      // block length along the last axis (or block_axis); a 2-D tile's columns
  int block_rows = 0;                 // > 1: 2-D tiles of block_rows x block over the last two axes
                                      // ("block:128x128", DeepSeek-V3's FP8 weight scales); 0: 1-D blocks
  int block_axis = -1;                // 1-D blocks run along this axis ("block:32/axis:1"; negative from the
                                      // end): a conv weight 128x65x3 blocks its 65 input channels, not its 3 taps
  std::optional<Format> scale_format; // block scales: empty = fp32; E8M0 = MX rule; else two-level
  EncodeOptions options;              // rounding, overflow, seed (defaults: nearest, saturate)
  // The scale rule, resolved by parse_scheme from the formats and granularity: None (/none), Affine
  // (unsigned integers), MxE8m0 (block scales in E8M0), TwoLevel (block scales in another format), else Amax.
  ScaleRule rule = ScaleRule::Amax;
  // MxE8m0's exponent rounding: "e2m1fn/block:32:e8m0fnu:rceil" (floor, ceil, even, rceil; floor is the OCP
  // spec and the default, written without a suffix).
  MxRounding mx = MxRounding::Floor;
  // TwoLevel block scales searched instead of amax-derived: "e2m1fn/block:16:e4m3fn:mse" (TensorRT Model
  // Optimizer's MSE calibration of NVFP4 scales): see search_block_scale.
  bool mse = false;
  // Tensor and channel scales from an observer's clipping value instead of the amax ("e4m3fn/tensor:p99.99",
  // "int8/channel:0:mse"): the observers of quant/observer.h used as weight scale rules (observed_scale).
  enum class Clip : uint8_t { Amax, Percentile, Mse } clip = Clip::Amax;
  double percentile = 100;  // Clip::Percentile
  // llama.cpp's block formats ("q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q4_k", "q5_k", "q6_k"): rule GgmlBlock,
  // granularity Block with block = the (super-)block length, and `format` the container of the codes
  // (int8 for q8_0, uint4 for the 4-bit types, uint8 for the 5- and 6-bit ones). Rows along the last axis
  // are quantized by ggml's reference quantizer (format/ggml_quantize.h), so the last axis must be a whole
  // number of blocks, as llama.cpp requires (ggml_rows_fit).
  std::optional<ggml::BlockType> ggml;
};

// The groups of a block scheme that are not runs of the last axis: 2-D tiles (block_rows > 1; a tile's
// elements row by row) or 1-D blocks along block_axis. gathered() is false for every other scheme and
// shape (then the groups are contiguous runs). Throws FormatError for a block axis beyond the rank.
//   qs::BlockGroups b(s, shape);  std::vector<std::size_t> idx;  b.indices(7, idx);  // flat indices of group 7
class BlockGroups {
 public:
  BlockGroups(const Scheme& s, const std::vector<int64_t>& shape);
  bool gathered() const { return kind_ != Kind::Contiguous; }
  std::size_t count() const { return count_; }
  std::size_t max_size() const { return std::max<std::size_t>(max_size_, 1); }
  void indices(std::size_t group, std::vector<std::size_t>& idx) const;

 private:
  enum class Kind { Contiguous, Tile, Axis } kind_ = Kind::Contiguous;
  std::size_t count_ = 0, max_size_ = 0;
  std::size_t outer_ = 1, inner_ = 1, m_ = 1, l_ = 1, r_ = 1, c_ = 1, tr_ = 1, tc_ = 1;
};
// A TwoLevel block's scale chosen by search: every positive finite value sb of the scale format (ascending)
// is tried as s = sb * ts, the block is fake-quantized with round to nearest, and the s with the least sum of
// squared errors over the finite x wins (the first one on a tie). Candidates that cannot win are skipped
// without changing the result: those whose clipping alone, (amax - s * max_finite)^2, is no better than the
// best so far, and all but the first of those so large that every x rounds to 0. `candidates` are the scale
// format's positive finite values ascending (search_candidates). Returns 0 for a block with nothing to scale.
// The candidates are visited nearest amax / max_finite first and skipped by proven lower bounds on their
// error (the argument is at the definition); `enc`, when given, is BlockEncoder(s.format, search_options(s)),
// built once per tensor (else one is built per call). search_block_scale_exhaustive is the loop over every
// candidate that defines the result (the tests compare the two).
std::vector<double> search_candidates(const Scheme& s);
EncodeOptions search_options(const Scheme& s);  // s.options with round to nearest
float search_block_scale(const Scheme& s, const std::vector<double>& candidates, const float* x, std::size_t n,
                         float tensor_scale, const BlockEncoder* enc = nullptr);
float search_block_scale_exhaustive(const Scheme& s, const std::vector<double>& candidates, const float* x,
                                    std::size_t n, float tensor_scale);
// search_block_scale with what depends only on the tensor prepared once (the candidates as float scales, the
// usable range, the start table, the grid's parameters): apply_scheme builds one per tensor and calls it per
// block, from any thread. s, candidates and enc must outlive it.
class BlockScaleSearch {
 public:
  BlockScaleSearch(const Scheme& s, const std::vector<double>& candidates, float tensor_scale,
                   const BlockEncoder* enc = nullptr);
  float operator()(const float* x, std::size_t n) const;
  // The scales of `count` consecutive blocks of n values (block b at x + b * n) into out[0 .. count): the same
  // as operator() per block, several blocks a vector pass (a lane per block) where the element format allows.
  // At the AVX2 and AVX-512 levels its bounds use FMA where the CPU has it, unless fma is false (for the tests:
  // the copy without FMA is what an AVX2 CPU without it runs).
  void scales(const float* x, std::size_t n, std::size_t count, float* out, bool fma = true) const;

 private:
  std::size_t start(double target) const;  // std::lower_bound(candidates, target)
  // The pruned search (pruned_), compiled for the baseline ISA and (x86-64) for AVX2: scale_search_impl.h.
  float run_generic(const float* x, std::size_t n) const;
  float run_avx2(const float* x, std::size_t n) const;
  void run_blocks_generic(const float* x, std::size_t n, std::size_t count, float* out) const;
  void run_blocks_avx2(const float* x, std::size_t n, std::size_t count, float* out) const;
  void run_blocks_fma(const float* x, std::size_t n, std::size_t count, float* out) const;  // AVX2 + FMA
  static constexpr std::size_t kScPad = 32;
  const Scheme* s_;
  const std::vector<double>* c_;
  float ts_;
  std::optional<BlockEncoder> own_;
  const BlockEncoder* enc_;
  bool pruned_ = false;         // the format is inside the argument (else the exhaustive loop)
  std::vector<float> sc_;       // float(candidates[k]) * tensor_scale, then kScPad entries 1.0f (a lane's
                                // window of the batched search reads past the last candidate)
  // The batched search's tables, made by prepare_batch on its first call. Per candidate (with the same padding):
  // the bounds kernel's reciprocal (0 where sc < FLT_MIN), and the walks' thresholds as the single-block search
  // rounds them (small: below, clip: above).
  void prepare_batch() const;
  mutable std::once_flag batch_once_;
  mutable std::vector<float> inv_, lo_f_, hi_f_;
  // And its start by table: start(a * start_mul_) at the low end of amax's bucket (amax's float bits >> 18: 32
  // buckets a binade), for the buckets from start_lo_ on; below them 0, above them the candidates' count. Off
  // by at most one where a bucket holds a candidate's boundary (any start gives the same result).
  mutable std::vector<uint16_t> start_tab_;
  mutable uint32_t start_lo_ = 0;
  std::size_t k0_ = 0, k1_ = 0;  // the usable candidates, before the all-zero end
  int e_lo_ = 0;                // the candidates' binades (biased double exponents) from e_lo_ ...
  std::vector<uint16_t> first_of_;  // ... and the first candidate of each, then the end
  GridDistParams grid_{};
  bool use_lb_ = false;
  double zero_mul_ = 0;   // 2 / min_pos: every x rounds to 0 under sc > amax * zero_mul_
  double start_mul_ = 0;  // about 1 / (max_finite * tensor_scale)
};

// A tensor or channel scale from an observer: `feed(observer)` hands it the group's values (in a fixed order,
// so that every caller gets the same scale); s = clip / max_finite in float32, floored at FLT_MIN, 1 when the
// clip is not positive. Percentile: HistogramPercentileObserver(percentile, 2048 bins); Mse: MseObserver (a
// seeded reservoir of at most 2^20 values, then its grid search).
class Observer;
float observed_scale(const Scheme& s, const std::function<void(Observer&)>& feed);
// The two feeding orders apply_scheme and the Error view share: the whole tensor at once; a channel's runs
// x[(o * channels + c) * inner, + inner) for o = 0 .. outer - 1.
float observed_scale_tensor(const Scheme& s, const float* x, std::size_t n);
float observed_scale_channel(const Scheme& s, const float* x, std::size_t outer, std::size_t channels,
                             std::size_t inner, std::size_t c);

// Whether a block scheme's axis exists in a tensor of this rank (analyze skips the pairs where it does not).
bool block_axis_fits(const Scheme& s, const std::vector<int64_t>& shape);

// Whether a ggml scheme can quantize a tensor of this shape (its last axis a whole number of blocks);
// true for every other scheme.
bool ggml_rows_fit(const Scheme& s, const std::vector<int64_t>& shape);

// Bits per value including the scale overhead, for a tensor of `shape`: element bits, plus 32 bits per fp32
// scale (and the element's bits per zero point of an unsigned-integer scheme) per group, plus the two-level
// fp32 tensor scale; ggml blocks: their bytes x 8 / their length (q4_k: 144 x 8 / 256 = 4.5). /none: bits.
double bits_per_value(const Scheme& s, const std::vector<int64_t>& shape);

// "FORMAT[/tensor | /channel:<axis> | /block:<n>[:<scale format>][/axis:<k>] | /block:<r>x<c>[:<scale format>]
// | /none]"; no granularity means tensor;
// or a ggml block format by its llama.cpp name ("q4_k", any case).
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
  std::vector<float> observed_scales;  // observer clips (Scheme::clip): the scale of the tensor or of each channel
  bool cancelled = false;
};

// y = the scheme's fake quantization of x (float32, C order, `shape`); y may alias nothing in x.
// Stochastic rounding draws by flat element index, so results do not depend on threads.
// With `metrics`, each group's error metrics are accumulated into it (clip bound: clip_bound()).
// ggml schemes: the last axis must be a whole number of blocks (FormatError otherwise); non-finite x are
// passed through to y (NaN counted in stats.nan, inf in stats.overflow) and quantized as 0 for their block's
// scales; an element outside its sub-block's clip range (ggml::clip_ranges) counts as clipped, in stats.overflow
// and in the metrics; `clip` (optional) receives those ranges, one per sub-block in memory order.
struct ClipRanges {
  std::size_t group = 0;        // elements per range
  std::vector<double> lo, hi;
};
// `records` (optional): for blocks along the last axis (not ggml, not gathered), each block's decision in
// memory order (row by row, the last block of a row may be shorter), so that the Error view's pass need not
// recompute every block's statistics and scale: `filled` says the path wrote them.
struct GroupRecords {
  bool filled = false;
  std::vector<float> scale;     // the scale the encoder used (1 for a two-level block written as zeros)
  std::vector<int32_t> zp;      // affine formats' zero point (else 0)
  std::vector<double> bound;    // the clip bound (clip_bound, or max(|lo|, |hi|) for affine formats)
  std::vector<float> amax;      // max |x| over the block's finite x
  std::vector<uint8_t> real;    // the block had a finite non-zero amax (and a usable scale, but affine)
};
SchemeOutput apply_scheme(const Scheme& s, const float* x, const std::vector<int64_t>& shape, float* y,
                          int threads = 1, const ProgressFn& progress = {}, ErrorMetrics* metrics = nullptr,
                          ClipRanges* clip = nullptr, GroupRecords* records = nullptr);

}  // namespace qs
