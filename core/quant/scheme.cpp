// Schemes: parsing (which resolves the scale rule of scale_rule.h) and their application per tensor,
// channel or block, with the metrics of each group accumulated while its data is still in cache.
#include "quant/scheme.h"
#include "util/parse_int.h"

#include <algorithm>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstring>
#include <mutex>
#include <sstream>

#include "format/ggml_quantize.h"
#include "format/quantize.h"
#include "quant/metrics.h"
#include "quant/observer.h"
#include "quant/reduce_simd.h"

namespace qs {

namespace {

bool affine(const Format& f) { return f.is_int() && !f.is_signed; }

// Elements per chunk of the per-tensor path: small enough that a 4 MiB tensor (2^20 values) splits into 16
// chunks for the threads, large enough that a chunk's call costs nothing against its work (~20 us).
constexpr std::size_t kTensorChunk = std::size_t(1) << 16;

struct MinMax {
  double lo = 0, hi = 0, amax = 0;
  bool any = false;
  void add(const float* x, std::size_t n) {
    float l, h;
    minmax_f32(x, n, l, h);
    if (l > h) return;  // nothing finite
    lo = any ? std::min(lo, double(l)) : l;
    hi = any ? std::max(hi, double(h)) : h;
    amax = std::max({amax, std::fabs(lo), std::fabs(hi)});
    any = true;
  }
};

// One group: y = fake-quant(x) with the group's scale (and zero point), stats and metrics.
struct GroupQuantizer {
  const Scheme& s;
  ErrorMetrics* metrics;
  BlockEncoder enc;  // the kernel parameters once per call, not once per group
  GroupQuantizer(const Scheme& scheme, ErrorMetrics* m) : s(scheme), metrics(m), enc(scheme.format, scheme.options) {}
  // measure = false: no metrics here; *bound_out (when given) receives the group's clip bound, for a caller
  // that measures a run of groups at once (error_sums_groups_f32).
  void run(const float* x, std::size_t n, uint64_t index0, const MinMax& mm, const GroupScale& g, float* y,
           EncodeStats& st, ErrorMetrics& local, bool measure = true, double* bound_out = nullptr) const {
    float used_scale = g.scale;
    if (s.rule == ScaleRule::Affine) {
      st += encode_affine_f32(s.format, s.options, x, n, index0, g.scale, g.zero_point, y);
    } else if (!scale_is_usable(g.scale)) {
      // A two-level block scale that underflowed: the whole block is zero.
      for (std::size_t i = 0; i < n; ++i) {
        if (std::isnan(x[i])) ++st.nan;
        else if (x[i] != 0) ++st.underflow;
        y[i] = 0.0f;
      }
      used_scale = 1.0f;
    } else {
      EncodeJob job;
      job.x = x;
      job.n = n;
      job.scale = g.scale;
      job.values = y;
      job.index0 = index0;
      st += enc.run(job);
    }
    if (metrics || bound_out) {
      const double bound = s.rule == ScaleRule::Affine ? std::max(std::fabs(mm.lo), std::fabs(mm.hi))
                                                       : clip_bound(s.format, used_scale);
      if (bound_out) *bound_out = bound;
      if (metrics && measure) accumulate_metrics(local, x, y, n, used_scale, bound);
      else if (metrics) accumulate_histograms(local, x, y, n, used_scale);
    }
  }
};

// The floating-point error sums of each chunk of a parallel_chunks call, kept by chunk index and folded into
// the result in chunk order after the call: the metrics are then the same double sums for any thread count
// and any schedule (a 1-thread run folds in the same order). The integer parts (counts, histograms) and
// max_abs_e do not depend on the order and merge as the chunks finish.
class OrderedSums {
 public:
  OrderedSums(std::size_t n, std::size_t chunk, bool on)
      : chunk_(std::max<std::size_t>(chunk, 1)), parts_(on ? (n + chunk_ - 1) / chunk_ : 0) {}
  // Moves local's sums into the slot of the chunk that starts at `begin` (each chunk writes its own slot)
  // and leaves local's order-independent parts for the caller to merge.
  void take(std::size_t begin, ErrorMetrics& local) {
    Part& p = parts_[begin / chunk_];
    p = Part{local.sum_x2, local.sum_e2, local.sum_abs_e, local.sum_clip2, local.sum_round2};
    local.sum_x2 = local.sum_e2 = local.sum_abs_e = local.sum_clip2 = local.sum_round2 = 0.0;
  }
  void fold_into(ErrorMetrics& m) const {
    for (const Part& p : parts_) {
      m.sum_x2 += p.x2;
      m.sum_e2 += p.e2;
      m.sum_abs_e += p.abs_e;
      m.sum_clip2 += p.clip2;
      m.sum_round2 += p.round2;
    }
  }

 private:
  struct Part {
    double x2 = 0, e2 = 0, abs_e = 0, clip2 = 0, round2 = 0;
  };
  std::size_t chunk_;
  std::vector<Part> parts_;
};

// Adds the order-independent parts of a chunk's metrics (its sums were moved out by OrderedSums::take).
void add_counts(ErrorMetrics& m, const ErrorMetrics& local) {
  m.count += local.count;
  m.max_abs_e = std::max(m.max_abs_e, local.max_abs_e);
  m.clipped += local.clipped;
  if (local.histograms) {
    m.abs_error += local.abs_error;
    m.rel_error += local.rel_error;
    m.binade += local.binade;
  }
}

}  // namespace

float amax_scale(const Format& f, double amax) {
  return group_scale(scale_rule_params(ScaleRule::Amax, f), GroupStats{amax}).scale;
}

float mx_scale(const Format& element, double amax) {
  return group_scale(scale_rule_params(ScaleRule::MxE8m0, element), GroupStats{amax}).scale;
}

ScaleRuleParams scale_rule_params(const Scheme& s) {
  ScaleRuleParams p = scale_rule_params(s.rule, s.format, s.scale_format ? &*s.scale_format : nullptr);
  p.mx = s.mx;
  return p;
}

namespace {

// The ggml block formats with a quantizer, by the scheme names they take (llama.cpp's type names, lower case).
struct GgmlScheme {
  const char* name;
  ggml::BlockType type;
  const char* codes;  // the format that holds the codes
};
constexpr GgmlScheme kGgmlSchemes[] = {
    {"q4_0", ggml::BlockType::Q4_0, "uint4"}, {"q4_1", ggml::BlockType::Q4_1, "uint4"},
    {"q5_0", ggml::BlockType::Q5_0, "uint8"}, {"q5_1", ggml::BlockType::Q5_1, "uint8"},
    {"q8_0", ggml::BlockType::Q8_0, "int8"},  {"q4_k", ggml::BlockType::Q4_K, "uint4"},
    {"q5_k", ggml::BlockType::Q5_K, "uint8"}, {"q6_k", ggml::BlockType::Q6_K, "uint8"},
};

}  // namespace

float observed_scale(const Scheme& s, const std::function<void(Observer&)>& feed) {
  double clip = 0;
  if (s.clip == Scheme::Clip::Percentile) {
    HistogramPercentileObserver o(s.percentile, 2048);
    feed(o);
    clip = o.amax();
  } else {
    MseObserver o(s.format, std::size_t(1) << 20, 1);
    feed(o);
    clip = o.amax();
  }
  if (!(clip > 0) || !std::isfinite(clip)) return 1.0f;
  const float sc = static_cast<float>(clip) / static_cast<float>(s.format.max_finite);
  return sc < FLT_MIN ? FLT_MIN : sc;
}

float observed_scale_tensor(const Scheme& s, const float* x, std::size_t n) {
  return observed_scale(s, [&](Observer& o) { o.observe(x, n); });
}

float observed_scale_channel(const Scheme& s, const float* x, std::size_t outer, std::size_t channels,
                             std::size_t inner, std::size_t c) {
  return observed_scale(s, [&](Observer& o) {
    for (std::size_t k = 0; k < outer; ++k) o.observe(x + (k * channels + c) * inner, inner);
  });
}

std::vector<double> search_candidates(const Scheme& s) {
  std::vector<double> c;
  if (!s.scale_format) return c;
  for (double v : distinct_values(*s.scale_format))
    if (v > 0 && std::isfinite(v)) c.push_back(v);
  std::sort(c.begin(), c.end());
  return c;
}

BlockGroups::BlockGroups(const Scheme& s, const std::vector<int64_t>& shape) {
  if (s.granularity != Granularity::Block || s.ggml || shape.empty()) return;
  const int rank = int(shape.size());
  std::size_t n = 1;
  for (int64_t d : shape) n *= std::size_t(d);
  if (s.block_rows > 1) {
    kind_ = Kind::Tile;
    m_ = rank >= 2 ? std::size_t(shape[std::size_t(rank - 2)]) : 1;
    l_ = std::size_t(shape.back());
    r_ = std::size_t(s.block_rows);
    c_ = std::size_t(s.block);
    outer_ = (m_ * l_ != 0) ? n / (m_ * l_) : 0;
    tr_ = (m_ + r_ - 1) / r_;
    tc_ = (l_ + c_ - 1) / c_;
    count_ = outer_ * tr_ * tc_;
    max_size_ = std::min(r_, m_) * std::min(c_, l_);
    return;
  }
  const int axis = s.block_axis < 0 ? s.block_axis + rank : s.block_axis;
  if (axis < 0 || axis >= rank)
    throw FormatError("scheme " + s.text + ": block axis " + std::to_string(s.block_axis) + " is out of range for a " +
                      std::to_string(rank) + "-d tensor");
  if (axis == rank - 1) return;  // runs along the last axis: contiguous
  kind_ = Kind::Axis;
  l_ = std::size_t(shape[std::size_t(axis)]);
  c_ = std::size_t(s.block);
  outer_ = 1;
  for (int i = 0; i < axis; ++i) outer_ *= std::size_t(shape[std::size_t(i)]);
  inner_ = 1;
  for (int i = axis + 1; i < rank; ++i) inner_ *= std::size_t(shape[std::size_t(i)]);
  tc_ = (l_ + c_ - 1) / c_;
  count_ = outer_ * tc_ * inner_;
  max_size_ = std::min(c_, l_);
}

void BlockGroups::indices(std::size_t g, std::vector<std::size_t>& idx) const {
  idx.clear();
  if (kind_ == Kind::Tile) {
    const std::size_t o = g / (tr_ * tc_), rem = g % (tr_ * tc_), ti = rem / tc_, tj = rem % tc_;
    for (std::size_t r = ti * r_; r < std::min(m_, ti * r_ + r_); ++r)
      for (std::size_t c = tj * c_; c < std::min(l_, tj * c_ + c_); ++c) idx.push_back(o * m_ * l_ + r * l_ + c);
  } else if (kind_ == Kind::Axis) {
    const std::size_t o = g / (tc_ * inner_), rem = g % (tc_ * inner_), b = rem / inner_, i = rem % inner_;
    for (std::size_t a = b * c_; a < std::min(l_, b * c_ + c_); ++a) idx.push_back((o * l_ + a) * inner_ + i);
  }
}

bool block_axis_fits(const Scheme& s, const std::vector<int64_t>& shape) {
  if (s.granularity != Granularity::Block || s.block_rows > 1 || s.ggml) return true;
  const int rank = int(shape.size());
  return rank == 0 || (s.block_axis >= -rank && s.block_axis < rank);
}

bool ggml_rows_fit(const Scheme& s, const std::vector<int64_t>& shape) {
  if (!s.ggml) return true;
  return !shape.empty() && shape.back() > 0 && shape.back() % s.block == 0;
}

double bits_per_value(const Scheme& s, const std::vector<int64_t>& shape) {
  double n = 1;
  for (int64_t d : shape) n *= double(d);
  const double bits = s.format.bits;
  if (s.ggml) {
    const ggml::BlockInfo& b = ggml::block_info(*s.ggml);
    return 8.0 * b.block_bytes / b.block_elems;
  }
  if (n <= 0) return bits;
  const double per_group = 32.0 + (s.rule == ScaleRule::Affine ? bits : 0.0);  // fp32 scale (+ zero point)
  switch (s.granularity) {
    case Granularity::None: return bits;
    case Granularity::Tensor: return bits + per_group / n;
    case Granularity::Channel: {
      const int rank = int(shape.size());
      const int axis = s.axis < 0 ? s.axis + rank : s.axis;
      const double channels = axis >= 0 && axis < rank ? double(shape[std::size_t(axis)]) : 1.0;
      return bits + per_group * channels / n;
    }
    case Granularity::Block: {
      const double L = shape.empty() ? 1.0 : double(shape.back());
      double groups = L > 0 ? std::ceil(L / s.block) * (n / L) : 0.0;
      if (block_axis_fits(s, shape))
        if (const BlockGroups layout(s, shape); layout.gathered()) groups = double(layout.count());
      const double scale_bits = s.scale_format ? double(s.scale_format->bits) : 32.0;
      const double zp_bits = s.rule == ScaleRule::Affine ? bits : 0.0;
      return bits + groups * (scale_bits + zp_bits) / n + (s.rule == ScaleRule::TwoLevel ? 32.0 / n : 0.0);
    }
  }
  return bits;
}

Scheme parse_scheme(std::string_view text, const EncodeOptions& options) {
  Scheme s;
  s.options = options;
  const std::string t(text);
  {
    std::string lower = t;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const GgmlScheme& g : kGgmlSchemes) {
      if (lower != g.name) continue;
      s.text = g.name;
      s.ggml = g.type;
      s.format = parse_format(g.codes);
      s.granularity = Granularity::Block;
      s.block = int(ggml::block_info(g.type).block_elems);
      s.rule = ScaleRule::GgmlBlock;
      return s;
    }
  }
  const std::size_t slash = t.find('/');
  s.format = parse_format(t.substr(0, slash));
  std::string gran = slash == std::string::npos ? "tensor" : t.substr(slash + 1);
  for (char& c : gran) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto fail = [&](const std::string& why) { throw FormatError("scheme '" + t + "': " + why); };
  // An observer clip after tensor / channel:<axis>: ":p<percentile>" or ":mse".
  std::string clip_text;
  if (gran.rfind("tensor:", 0) == 0 || (gran.rfind("channel:", 0) == 0 && gran.find(':', 8) != std::string::npos)) {
    const std::size_t c = gran.rfind(':');
    clip_text = gran.substr(c + 1);
    gran = gran.substr(0, c);
    if (clip_text == "mse") {
      s.clip = Scheme::Clip::Mse;
    } else if (clip_text.size() > 1 && clip_text[0] == 'p') {
      char* end = nullptr;
      s.percentile = std::strtod(clip_text.c_str() + 1, &end);
      if (*end != '\0' || !(s.percentile > 0 && s.percentile <= 100))
        fail("percentile '" + clip_text + "' is not p<number in (0, 100]>");
      s.clip = Scheme::Clip::Percentile;
    } else {
      fail("unknown clip '" + clip_text + "' (p<percentile> or mse)");
    }
    if (affine(s.format)) fail("observer clips set symmetric scales; unsigned integer formats take the min/max rule");
  }
  if (gran == "tensor") {
    s.granularity = Granularity::Tensor;
    s.text = s.format.name + "/tensor";
  } else if (gran == "none") {
    if (affine(s.format)) fail("unsigned integer formats need a scale and zero point (use /tensor)");
    s.granularity = Granularity::None;
    s.text = s.format.name + "/none";
  } else if (gran.rfind("channel:", 0) == 0) {
    s.granularity = Granularity::Channel;
    if (!parse_int(std::string_view(gran).substr(8), s.axis)) fail("channel axis '" + gran.substr(8) + "' is not an integer");
    s.text = s.format.name + "/channel:" + std::to_string(s.axis);
  } else if (gran.rfind("block:", 0) == 0) {
    if (!clip_text.empty()) fail("observer clips apply to tensor and channel scales");
    s.granularity = Granularity::Block;
    std::string rest = gran.substr(6);
    // "/axis:<k>" after the block: runs of n along axis k instead of the last.
    bool has_axis = false;
    if (const std::size_t ax = rest.find("/axis:"); ax != std::string::npos) {
      if (!parse_int(std::string_view(rest).substr(ax + 6), s.block_axis))
        fail("block axis '" + rest.substr(ax + 6) + "' is not an integer");
      has_axis = true;
      rest = rest.substr(0, ax);
    }
    const std::size_t colon = rest.find(':');
    const std::string size = rest.substr(0, colon);
    if (const std::size_t x = size.find('x'); x != std::string::npos) {  // "RxC": 2-D tiles
      if (!parse_int(std::string_view(size).substr(0, x), s.block_rows) || s.block_rows < 1 ||
          !parse_int(std::string_view(size).substr(x + 1), s.block) || s.block < 1)
        fail("block shape '" + size + "' is not <rows>x<cols> with positive integers");
      if (has_axis) fail("a 2-D block tiles the last two axes; it takes no /axis");
    } else if (!parse_int(size, s.block) || s.block < 1) {
      fail("block size '" + size + "' is not a positive integer");
    }
    s.text = s.format.name + "/block:" + (s.block_rows > 1 ? std::to_string(s.block_rows) + "x" : std::string()) +
             std::to_string(s.block);
    if (s.block_rows == 1) s.block_rows = 0;  // "1x32" is the 1-D block of 32
    if (colon != std::string::npos) {
      std::string sf = rest.substr(colon + 1);
      std::string mode;  // an E8M0 scale's rounding: "e8m0fnu:rceil"
      if (const std::size_t c2 = sf.find(':'); c2 != std::string::npos) {
        mode = sf.substr(c2 + 1);
        sf = sf.substr(0, c2);
      }
      if (sf != "fp32" && sf != "float32") {
        s.scale_format = parse_format(sf);
        if (affine(s.format)) fail("unsigned integer elements take fp32 block scales (their zero point is per block)");
        if (s.scale_format->is_int()) fail("block scales in an integer format are not supported");
        s.text += ":" + s.scale_format->name;
      }
      if (mode == "mse") {
        if (!s.scale_format || is_e8m0_scale_format(*s.scale_format) || s.scale_format->bits >= 16 || affine(s.format))
          fail("':mse' searches two-level block scales (a float scale format narrower than 16 bits, e.g. e4m3fn)");
        s.mse = true;
        s.text += ":mse";
      } else if (!mode.empty()) {
        if (!s.scale_format || !is_e8m0_scale_format(*s.scale_format))
          fail("a rounding mode ('" + mode + "') applies to E8M0 block scales only");
        bool known = false;
        for (MxRounding m : {MxRounding::Floor, MxRounding::Ceil, MxRounding::Even, MxRounding::Rceil})
          if (mode == to_string(m)) s.mx = m, known = true;
        if (!known) fail("unknown E8M0 rounding '" + mode + "' (floor, ceil, even, rceil)");
        if (s.mx != MxRounding::Floor) s.text += ":" + mode;
      }
    }
    if (has_axis && s.block_axis != -1) s.text += "/axis:" + std::to_string(s.block_axis);
    if (has_axis && s.block_axis == -1) has_axis = false;  // the last axis: the ordinary block
  } else {
    fail("unknown granularity '" + gran +
         "' (tensor, channel:<axis>, block:<n>[:<scale format>][/axis:<k>], block:<rows>x<cols>[:<scale format>], none)");
  }
  if (s.clip == Scheme::Clip::Percentile) {
    std::ostringstream o;
    o << ":p" << s.percentile;
    s.text += o.str();
  } else if (s.clip == Scheme::Clip::Mse) {
    s.text += ":mse";
  }
  // The scale rule, decided here once from the formats' properties.
  if (s.granularity == Granularity::None) s.rule = ScaleRule::None;
  else if (affine(s.format)) s.rule = ScaleRule::Affine;
  else if (!s.scale_format) s.rule = ScaleRule::Amax;
  else if (is_e8m0_scale_format(*s.scale_format)) s.rule = ScaleRule::MxE8m0;
  else s.rule = s.scale_format->bits >= 16 ? ScaleRule::Rounded16 : ScaleRule::TwoLevel;
  return s;
}

namespace {

// A ggml scheme: rows along the last axis, each quantized by ggml's reference quantizer and decoded by its
// dequantizer, so y holds exactly the values llama.cpp would compute from the blocks.
SchemeOutput apply_ggml(const Scheme& s, const float* x, const std::vector<int64_t>& shape, float* y, int threads,
                        const ProgressFn& progress, ErrorMetrics* metrics, ClipRanges* clip) {
  SchemeOutput out;
  if (!ggml_rows_fit(s, shape))
    throw FormatError("scheme " + s.text + ": the last axis (" +
                      (shape.empty() ? std::string("a 0-d tensor has none") : std::to_string(shape.back())) +
                      ") is not a whole number of blocks of " + std::to_string(s.block) +
                      ", which ggml's block formats need");
  const ggml::BlockType type = *s.ggml;
  std::size_t n = 1;
  for (int64_t d : shape) n *= static_cast<std::size_t>(d);
  const std::size_t L = static_cast<std::size_t>(shape.back()), rows = n / L;
  const std::size_t sub = ggml::sub_block_elems(type), subs_per_row = L / sub;
  if (clip) {
    clip->group = sub;
    clip->lo.assign(rows * subs_per_row, 0.0);
    clip->hi.assign(rows * subs_per_row, 0.0);
  }
  std::mutex mu;
  threads = resolve_threads(threads);
  const std::size_t chunk = std::max<std::size_t>(1, (std::size_t(1) << 16) / L);
  OrderedSums sums(rows, chunk, metrics != nullptr);
  out.cancelled = !parallel_chunks(rows, chunk, threads, [&](std::size_t rb, std::size_t re) {
    std::vector<float> row(L);
    std::vector<uint8_t> blocks(ggml::quantized_bytes(type, L));
    std::vector<double> lo(subs_per_row), hi(subs_per_row);
    EncodeStats st;
    ErrorMetrics local;
    local.histograms = metrics && metrics->histograms;
    std::vector<float> lo_f(subs_per_row), hi_f(subs_per_row);
    uint32_t amax_bits = 0;  // |x| of the finite x as bits: their integer max is the float max
    for (std::size_t r = rb; r < re; ++r) {
      const float* xr = x + r * L;
      float* yr = y + r * L;
      amax_bits = std::max(amax_bits, finite_copy_f32(xr, row.data(), L));
      ggml::quantize_ref(type, row.data(), L, blocks.data());
      ggml::dequantize(type, blocks.data(), L, yr);
      ggml::clip_ranges(type, blocks.data(), L, lo.data(), hi.data());
      // NaN: counted, y = x; inf: an overflow, y = x; finite outside [lo, hi]: an overflow; else x != 0 with
      // y == 0: an underflow. One vectorized pass per row (sub-blocks are multiples of 16 values).
      for (std::size_t k = 0; k < subs_per_row; ++k) float_interval(lo[k], hi[k], lo_f[k], hi_f[k]);
      const RowCounts rc = ggml_row_counts_f32(xr, yr, L, sub, lo_f.data(), hi_f.data());
      st.nan += rc.nan, st.overflow += rc.inf + rc.outside, st.underflow += rc.underflow;
      // The row's error sums in one call (its sub-blocks clipped at their intervals), the histograms per
      // sub-block.
      if (metrics) add_error_sums(local, error_sums_ranges_f32(xr, yr, L, sub, lo.data(), hi.data()));
      for (std::size_t k = 0; k < subs_per_row; ++k) {
        if (local.histograms) {
          // The sub-block's step |d| is its scale (the binade histogram's |x / s|): half the clip interval's
          // width over the code count would be the same; the step is what the block stores.
          const float step = float((hi[k] - lo[k]) / (ggml::sub_block_code_count(type)));
          accumulate_histograms(local, xr + k * sub, yr + k * sub, sub, step > 0 ? step : 1.0f);
        }
        if (clip) {
          clip->lo[r * subs_per_row + k] = lo[k];
          clip->hi[r * subs_per_row + k] = hi[k];
        }
      }
    }
    if (metrics) sums.take(rb, local);
    std::lock_guard<std::mutex> lock(mu);
    out.stats += st;
    float amax;
    std::memcpy(&amax, &amax_bits, 4);
    out.amax = std::max(out.amax, double(amax));
    out.groups += (re - rb) * subs_per_row;
    if (metrics) add_counts(*metrics, local);
  }, progress);
  if (metrics) sums.fold_into(*metrics);
  return out;
}

}  // namespace

SchemeOutput apply_scheme(const Scheme& s, const float* x, const std::vector<int64_t>& shape, float* y, int threads,
                          const ProgressFn& progress, ErrorMetrics* metrics, ClipRanges* clip, GroupRecords* records) {
  if (records) records->filled = false;
  if (s.rule == ScaleRule::GgmlBlock) return apply_ggml(s, x, shape, y, threads, progress, metrics, clip);
  SchemeOutput out;
  std::size_t n = 1;
  for (int64_t d : shape) n *= static_cast<std::size_t>(d);
  threads = resolve_threads(threads);
  std::mutex mu;
  GroupQuantizer gq{s, metrics};
  const ScaleRuleParams rule = scale_rule_params(s);
  const ScaleFormatRound round = scale_format_round(s);
  // Each path below makes one OrderedSums for its parallel_chunks call: a chunk moves its error sums into
  // its slot, merges the rest here, and the sums are folded in chunk order when the call returns.
  auto merge = [&](OrderedSums& sums, std::size_t begin, const EncodeStats& st, ErrorMetrics& local, const MinMax& mm,
                   std::size_t groups) {
    if (metrics) sums.take(begin, local);
    std::lock_guard<std::mutex> lock(mu);
    out.stats += st;
    out.amax = std::max(out.amax, mm.amax);
    out.groups += groups;
    if (metrics) add_counts(*metrics, local);
  };
  auto fold = [&](const OrderedSums& sums) {
    if (metrics) sums.fold_into(*metrics);  // a cancelled call: the chunks that ran
  };

  if (s.granularity == Granularity::Tensor || s.granularity == Granularity::None || shape.empty()) {
    MinMax mm;
    parallel_chunks(n, kTensorChunk, threads, [&](std::size_t b, std::size_t e) {
      MinMax local;
      local.add(x + b, e - b);
      std::lock_guard<std::mutex> lock(mu);
      if (!local.any) return;
      mm.lo = mm.any ? std::min(mm.lo, local.lo) : local.lo;
      mm.hi = mm.any ? std::max(mm.hi, local.hi) : local.hi;
      mm.amax = std::max(mm.amax, local.amax);
      mm.any = true;
    });
    // One group. A 0-d tensor under a block scheme takes the amax rule too (as it always has).
    ScaleRuleParams tensor_rule = rule;
    if (rule.rule == ScaleRule::MxE8m0 || rule.rule == ScaleRule::TwoLevel || rule.rule == ScaleRule::Rounded16)
      tensor_rule.rule = ScaleRule::Amax;
    const GroupScale g = s.clip != Scheme::Clip::Amax && mm.amax > 0
                             ? GroupScale{observed_scale_tensor(s, x, n), 0}
                             : group_scale(tensor_rule, GroupStats{mm.amax, mm.lo, mm.hi});
    if (s.clip != Scheme::Clip::Amax) out.observed_scales.assign(1, g.scale);
    OrderedSums sums(n, kTensorChunk, metrics != nullptr);
    out.cancelled = !parallel_chunks(n, kTensorChunk, threads, [&](std::size_t b, std::size_t e) {
      EncodeStats st;
      ErrorMetrics local;
      local.histograms = metrics && metrics->histograms;
      // Unsigned integers: one zero point for the whole tensor, from the tensor's min/max.
      gq.run(x + b, e - b, b, mm, g, y + b, st, local);
      merge(sums, b, st, local, MinMax{}, 0);
    }, progress);
    fold(sums);
    out.amax = mm.amax;
    out.groups = 1;
    return out;
  }

  if (s.granularity == Granularity::Channel) {
    const int rank = static_cast<int>(shape.size());
    const int axis = s.axis < 0 ? s.axis + rank : s.axis;
    if (axis < 0 || axis >= rank)
      throw FormatError("scheme " + s.text + ": axis " + std::to_string(s.axis) + " is out of range for a " +
                        std::to_string(rank) + "-d tensor");
    std::size_t outer = 1, inner = 1;
    for (int i = 0; i < axis; ++i) outer *= static_cast<std::size_t>(shape[i]);
    for (int i = axis + 1; i < rank; ++i) inner *= static_cast<std::size_t>(shape[i]);
    const std::size_t channels = static_cast<std::size_t>(shape[axis]);
    if (s.clip != Scheme::Clip::Amax) out.observed_scales.assign(channels, 1.0f);
    OrderedSums sums(channels, 1, metrics != nullptr);
    out.cancelled = !parallel_chunks(channels, 1, threads, [&](std::size_t cb, std::size_t ce) {
      EncodeStats st;
      ErrorMetrics local;
      local.histograms = metrics && metrics->histograms;
      MinMax all;
      for (std::size_t c = cb; c < ce; ++c) {
        MinMax mm;
        for (std::size_t o = 0; o < outer; ++o) mm.add(x + (o * channels + c) * inner, inner);
        const GroupScale g = s.clip != Scheme::Clip::Amax && mm.amax > 0
                                 ? GroupScale{observed_scale_channel(s, x, outer, channels, inner, c), 0}
                                 : group_scale(rule, GroupStats{mm.amax, mm.lo, mm.hi});
        if (s.clip != Scheme::Clip::Amax) out.observed_scales[c] = g.scale;
        for (std::size_t o = 0; o < outer; ++o) {
          const std::size_t off = (o * channels + c) * inner;
          gq.run(x + off, inner, off, mm, g, y + off, st, local);
        }
        all.amax = std::max(all.amax, mm.amax);
      }
      merge(sums, cb, st, local, all, ce - cb);
    }, progress);
    fold(sums);
    return out;
  }

  if (rule.rule == ScaleRule::TwoLevel) {
    MinMax t;
    t.add(x, n);
    out.tensor_scale = two_level_tensor_scale(rule, t.amax);
  }
  const std::vector<double> candidates = s.mse ? search_candidates(s) : std::vector<double>{};
  const BlockEncoder search_enc(s.format, search_options(s));
  const BlockScaleSearch search(s, candidates, out.tensor_scale, &search_enc);  // ':mse' blocks
  if (const BlockGroups layout(s, shape); layout.gathered()) {
    // 2-D tiles, or blocks along another axis: each group gathered, quantized and scattered back. Stochastic
    // rounding draws by (the group's first flat index + position in the group).
    const float ts = out.tensor_scale;
    const std::size_t chunk = std::max<std::size_t>(1, (std::size_t(1) << 16) / layout.max_size());
    OrderedSums sums(layout.count(), chunk, metrics != nullptr);
    out.cancelled = !parallel_chunks(layout.count(), chunk, threads, [&](std::size_t gb, std::size_t ge) {
      EncodeStats st;
      ErrorMetrics local;
      local.histograms = metrics && metrics->histograms;
      MinMax all;
      std::vector<std::size_t> idx;
      std::vector<float> xs, ys;
      for (std::size_t gi = gb; gi < ge; ++gi) {
        layout.indices(gi, idx);
        xs.resize(idx.size());
        ys.resize(idx.size());
        for (std::size_t k = 0; k < idx.size(); ++k) xs[k] = x[idx[k]];
        MinMax mm;
        mm.add(xs.data(), xs.size());
        const GroupScale g = s.mse ? GroupScale{search(xs.data(), xs.size()), 0}
                                   : group_scale(rule, GroupStats{mm.amax, mm.lo, mm.hi}, ts, round);
        gq.run(xs.data(), xs.size(), idx.empty() ? 0 : idx[0], mm, g, ys.data(), st, local);
        for (std::size_t k = 0; k < idx.size(); ++k) y[idx[k]] = ys[k];
        all.amax = std::max(all.amax, mm.amax);
      }
      merge(sums, gb, st, local, all, ge - gb);
    }, progress);
    fold(sums);
    return out;
  }

  // Blocks of s.block along the last axis (the last block of a row may be shorter).
  const std::size_t L = static_cast<std::size_t>(shape.back());
  const std::size_t rows = L ? n / L : 0;
  const std::size_t bl = static_cast<std::size_t>(s.block);
  const float ts = out.tensor_scale;
  const std::size_t chunk = std::max<std::size_t>(1, (std::size_t(1) << 16) / std::max<std::size_t>(L, 1));
  OrderedSums sums(rows, chunk, metrics != nullptr);
  const std::size_t per_row = L ? (L + bl - 1) / bl : 0;
  if (records) {
    const std::size_t count = rows * per_row;
    records->scale.assign(count, 1.0f);
    records->zp.assign(count, 0);
    records->bound.assign(count, 0.0);
    records->amax.assign(count, 0.0f);
    records->real.assign(count, 0);
    records->filled = true;
  }
  const bool is_affine = s.rule == ScaleRule::Affine;
  out.cancelled = !parallel_chunks(rows, chunk, threads, [&](std::size_t rb, std::size_t re) {
    EncodeStats st;
    ErrorMetrics local;
    local.histograms = metrics && metrics->histograms;
    MinMax all;
    std::size_t groups = 0;
    // The error sums of a run of blocks are one call (per-block calls cost more than their 16 or 32
    // elements): the whole chunk when the rows hold whole blocks, else row by row; histograms stay per block.
    const bool batch = metrics != nullptr;
    const bool whole = L % bl == 0;
    std::vector<double> bounds(batch ? (whole ? (re - rb) * per_row : per_row) : 0);
    if (whole && !is_affine) {
      // Whole blocks: every block's statistics and scale first, then one encoder call for the chunk with a
      // scale per block (BlockEncoder::run_groups: per-block calls cost more than 16 or 32 elements), then the
      // histograms per block (if asked for) and the error sums of the chunk.
      const std::size_t count = (re - rb) * per_row, off0 = rb * L;
      std::vector<float> scales(count);
      bounds.resize(count);
      if (s.mse) search.scales(x + off0, bl, count, scales.data());  // the chunk's blocks a vector pass at a time
      for (std::size_t k = 0; k < count; ++k) {
        const std::size_t off = off0 + k * bl;
        MinMax mm;
        mm.add(x + off, bl);
        const GroupScale g = s.mse ? GroupScale{scales[k], 0}
                                   : group_scale(rule, GroupStats{mm.amax, mm.lo, mm.hi}, ts, round);
        const bool usable = scale_is_usable(g.scale);
        const float used = usable ? g.scale : 1.0f;
        scales[k] = g.scale;
        bounds[k] = clip_bound(s.format, used);
        if (records) {
          const std::size_t gi = rb * per_row + k;
          records->scale[gi] = used;
          records->zp[gi] = 0;
          records->bound[gi] = bounds[k];
          records->amax[gi] = static_cast<float>(mm.amax);
          records->real[gi] = mm.amax > 0 && usable;
        }
        if (!usable) {  // a two-level block scale that underflowed: the whole block is zero
          for (std::size_t i = off; i < off + bl; ++i) {
            if (std::isnan(x[i])) ++st.nan;
            else if (x[i] != 0) ++st.underflow;
          }
        }
        all.amax = std::max(all.amax, mm.amax);
        ++groups;
      }
      // Runs of usable blocks in one call each (an unusable block is written as zeros between them).
      for (std::size_t k = 0; k < count;) {
        if (!scale_is_usable(scales[k])) {
          std::fill(y + off0 + k * bl, y + off0 + (k + 1) * bl, 0.0f);
          ++k;
          continue;
        }
        std::size_t e = k;
        while (e < count && scale_is_usable(scales[e])) ++e;
        EncodeJob job;
        job.x = x + off0 + k * bl;
        job.n = (e - k) * bl;
        job.values = y + off0 + k * bl;
        job.index0 = off0 + k * bl;
        st += gq.enc.run_groups(job, scales.data() + k, bl);
        k = e;
      }
      if (metrics) {
        if (local.histograms)
          for (std::size_t k = 0; k < count; ++k)
            accumulate_histograms(local, x + off0 + k * bl, y + off0 + k * bl, bl,
                                  scale_is_usable(scales[k]) ? scales[k] : 1.0f);
        add_error_sums(local, error_sums_groups_f32(x + off0, y + off0, count * bl, bl, bounds.data()));
      }
      merge(sums, rb, st, local, all, groups);
      return;
    }
    for (std::size_t r = rb; r < re; ++r) {
      for (std::size_t b0 = 0; b0 < L; b0 += bl) {
        const std::size_t off = r * L + b0, len = std::min(bl, L - b0);
        MinMax mm;
        mm.add(x + off, len);
        const GroupScale g = s.mse ? GroupScale{search(x + off, len), 0}
                                   : group_scale(rule, GroupStats{mm.amax, mm.lo, mm.hi}, ts, round);
        double* bound = batch ? &bounds[(whole ? (r - rb) * per_row : 0) + b0 / bl] : nullptr;
        gq.run(x + off, len, off, mm, g, y + off, st, local, !batch, bound);
        if (records) {  // as the Error view's group_view decides it
          const std::size_t gi = r * per_row + b0 / bl;
          const bool usable = is_affine || scale_is_usable(g.scale);
          const float used = is_affine ? g.scale : (usable ? g.scale : 1.0f);
          records->scale[gi] = used;
          records->zp[gi] = g.zero_point;
          records->bound[gi] = is_affine ? std::max(std::fabs(mm.lo), std::fabs(mm.hi)) : clip_bound(s.format, used);
          records->amax[gi] = static_cast<float>(mm.amax);
          records->real[gi] = mm.amax > 0 && usable;
        }
        all.amax = std::max(all.amax, mm.amax);
        ++groups;
      }
      if (batch && (!whole || r + 1 == re)) {
        const std::size_t first = whole ? rb : r;
        add_error_sums(local, error_sums_groups_f32(x + first * L, y + first * L, (r + 1 - first) * L, bl, bounds.data()));
      }
    }
    merge(sums, rb, st, local, all, groups);
  }, progress);
  fold(sums);
  return out;
}

}  // namespace qs
