// FakeQuant: apply_scheme (scheme.cpp) for 2-D tensors, group by group with the same scale rule (group_scale
// of format/scale_rule.h) and encoder, keeping what training needs and apply_scheme does not return: codes,
// the clip mask, a delayed scale. Unsigned integer formats go through apply_scheme itself.
#include "train/fake_quant.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

#include "format/encode_simd.h"
#include "quant/reduce_simd.h"
#include "train/shard_pool.h"

namespace qs {

namespace {

double amax_of(const float* x, std::size_t n) {
  float lo, hi;
  minmax_f32(x, n, lo, hi);
  if (lo > hi) return 0.0;  // nothing finite
  return std::max(std::fabs(double(lo)), std::fabs(double(hi)));
}

// Encodes one contiguous group with one scale; marks and counts elements beyond scale * max finite.
void encode_group(const Format& f, const EncodeOptions& opt, const float* x, std::size_t n, float scale,
                  uint64_t index0, float* y, uint16_t* codes, uint8_t* clipped, EncodeStats& st, uint64_t& nclip) {
  if (!scale_is_usable(scale)) {
    // A two-level block scale that underflowed: apply_scheme makes the whole block zero.
    for (std::size_t i = 0; i < n; ++i) {
      if (std::isnan(x[i])) ++st.nan;
      else if (x[i] != 0) ++st.underflow;
      y[i] = 0.0f;
      if (codes) codes[i] = 0;
      if (clipped) clipped[i] = 0;
    }
    return;
  }
  EncodeJob job;
  job.x = x;
  job.n = n;
  job.scale = scale;
  job.values = y;
  job.codes16 = codes;
  job.index0 = index0;
  st += encode_f32(f, opt, job);
  // Clipped = what the encoder counts as overflow: |x / s| (in float32, as the kernels divide) at or beyond
  // the format's overflow threshold. Values that merely round down to the largest code are not clipped.
  // (NaN compares false: not clipped.) Two plain loops so that both vectorize.
  const float thr = float(f.overflow_threshold);
  uint32_t count = 0;
  if (clipped) {
    for (std::size_t i = 0; i < n; ++i) {
      const uint8_t c = std::fabs(x[i] / scale) >= thr;
      clipped[i] = c;
      count += c;
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) count += std::fabs(x[i] / scale) >= thr;
  }
  nclip += count;
}

struct ShardOut {
  EncodeStats st;
  uint64_t clipped = 0;
};

// Runs fn(begin, end, out) over [0, n) in two fixed halves (on the pool when there is one).
template <class Fn>
void two_shards(ShardPool* pool, std::size_t n, ShardOut& total, Fn&& fn) {
  ShardOut part[2];
  const std::size_t half = n / 2;
  auto body = [&](int s) { fn(s == 0 ? 0 : half, s == 0 ? half : n, part[s]); };
  if (pool) pool->run(2, body);
  else { body(0); body(1); }
  for (const ShardOut& p : part) {
    total.st += p.st;
    total.clipped += p.clipped;
  }
}

}  // namespace

const char* to_string(ScalingMode m) { return m == ScalingMode::Delayed ? "delayed" : "current"; }

ScalingMode parse_scaling_mode(std::string_view s) {
  if (s == "current") return ScalingMode::Current;
  if (s == "delayed") return ScalingMode::Delayed;
  throw FormatError("unknown scaling '" + std::string(s) + "' (current or delayed)");
}

FakeQuant::FakeQuant(Scheme scheme, ScalingMode mode, int history, int margin)
    : scheme_(std::move(scheme)), mode_(mode), delayed_(history, DelayedScaling::Algo::Max, margin) {
  // Unsigned integers (a zero point per group) and ggml's block formats (scales chosen over whole blocks by
  // ggml's quantizer) go through apply_scheme as a whole: no per-element codes for the flip statistics.
  // So do 2-D tiles, blocks along the rows (axis 0 of the 2-D tensors trained here), searched and observed
  // scales. (16-bit block scales take the block path below: group_scale rounds them into their format.)
  affine_ = scheme_.rule == ScaleRule::Affine || scheme_.rule == ScaleRule::GgmlBlock ||
            scheme_.mse || scheme_.clip != Scheme::Clip::Amax ||
            scheme_.block_rows > 1 ||
            (scheme_.granularity == Granularity::Block && scheme_.block_axis != -1 && scheme_.block_axis != 1);
  if (mode_ == ScalingMode::Delayed) {
    if (scheme_.granularity != Granularity::Tensor)
      throw FormatError("scheme " + scheme_.text + ": delayed scaling needs a /tensor scheme");
    if (scheme_.clip != Scheme::Clip::Amax)
      throw FormatError("scheme " + scheme_.text + ": delayed scaling takes its scale from the amax history, not an observer clip");
    if (affine_) throw FormatError("scheme " + scheme_.text + ": delayed scaling needs a signed format");
    if (history < 1) throw FormatError("delayed scaling: the amax history needs at least 1 entry");
  }
}

float FakeQuant::tensor_scale(double amax) const {
  if (mode_ == ScalingMode::Delayed && !delayed_.history().empty()) return delayed_.scale(scheme_.format);
  return amax_scale(scheme_.format, amax);  // ScaleRule::Amax, what a /tensor scheme of a signed format uses
}

FakeQuantResult FakeQuant::apply(const float* x, std::size_t rows, std::size_t cols, float* y, uint16_t* codes,
                                 uint8_t* clipped, uint64_t seed, bool record, ShardPool* pool) {
  FakeQuantResult r;
  const std::size_t n = rows * cols;
  if (n == 0) return r;
  const Format& f = scheme_.format;
  const ScaleRuleParams rule = scale_rule_params(scheme_);
  EncodeOptions opt = scheme_.options;
  opt.seed = scheme_.options.seed + seed * 0x9e3779b97f4a7c15ULL;

  if (affine_) {
    Scheme s = scheme_;
    s.options = opt;
    const SchemeOutput out = apply_scheme(s, x, {int64_t(rows), int64_t(cols)}, y, 1);
    r.stats = out.stats;
    r.amax = out.amax;
    if (clipped) std::memset(clipped, 0, n);
    return r;
  }

  ShardOut total;
  if (scheme_.granularity == Granularity::Tensor) {
    double a[2] = {0, 0};
    const std::size_t half = n / 2;
    auto amax_body = [&](int s) { a[s] = amax_of(x + (s ? half : 0), s ? n - half : half); };
    if (pool) pool->run(2, amax_body);
    else { amax_body(0); amax_body(1); }
    r.amax = std::max(a[0], a[1]);
    r.scale = tensor_scale(r.amax);
    if (mode_ == ScalingMode::Delayed && record) delayed_.push(r.amax);
    two_shards(pool, n, total, [&](std::size_t b, std::size_t e, ShardOut& o) {
      if (e > b)
        encode_group(f, opt, x + b, e - b, r.scale, b, y + b, codes ? codes + b : nullptr,
                     clipped ? clipped + b : nullptr, o.st, o.clipped);
    });
  } else if (scheme_.granularity == Granularity::Channel) {
    const int axis = scheme_.axis < 0 ? scheme_.axis + 2 : scheme_.axis;
    if (axis < 0 || axis > 1)
      throw FormatError("scheme " + scheme_.text + ": axis " + std::to_string(scheme_.axis) +
                        " is out of range for a 2-d tensor");
    if (axis == 0) {  // one scale per row
      std::vector<double> ra(rows);
      two_shards(pool, rows, total, [&](std::size_t b, std::size_t e, ShardOut& o) {
        for (std::size_t i = b; i < e; ++i) {
          const std::size_t off = i * cols;
          ra[i] = amax_of(x + off, cols);
          encode_group(f, opt, x + off, cols, group_scale(rule, GroupStats{ra[i]}).scale, off, y + off, codes ? codes + off : nullptr,
                       clipped ? clipped + off : nullptr, o.st, o.clipped);
        }
      });
      for (double v : ra) r.amax = std::max(r.amax, v);
    } else {  // one scale per column: gathered into a contiguous buffer, drawn by column-major index
      std::vector<double> ca(cols);
      two_shards(pool, cols, total, [&](std::size_t b, std::size_t e, ShardOut& o) {
        std::vector<float> col(rows), q(rows);
        std::vector<uint16_t> cc(codes ? rows : 0);
        std::vector<uint8_t> cl(clipped ? rows : 0);
        for (std::size_t c = b; c < e; ++c) {
          for (std::size_t i = 0; i < rows; ++i) col[i] = x[i * cols + c];
          ca[c] = amax_of(col.data(), rows);
          encode_group(f, opt, col.data(), rows, group_scale(rule, GroupStats{ca[c]}).scale, c * rows, q.data(),
                       codes ? cc.data() : nullptr, clipped ? cl.data() : nullptr, o.st, o.clipped);
          for (std::size_t i = 0; i < rows; ++i) {
            y[i * cols + c] = q[i];
            if (codes) codes[i * cols + c] = cc[i];
            if (clipped) clipped[i * cols + c] = cl[i];
          }
        }
      });
      for (double v : ca) r.amax = std::max(r.amax, v);
    }
  } else if (scheme_.granularity == Granularity::None) {  // no scale: a plain cast to the format (scale 1)
    r.amax = amax_of(x, n);
    r.scale = group_scale(rule, GroupStats{r.amax}).scale;  // ScaleRule::None: 1
    two_shards(pool, n, total, [&](std::size_t b, std::size_t e, ShardOut& o) {
      if (e > b)
        encode_group(f, opt, x + b, e - b, 1.0f, b, y + b, codes ? codes + b : nullptr,
                     clipped ? clipped + b : nullptr, o.st, o.clipped);
    });
  } else {  // blocks of scheme_.block along each row
    const std::size_t bl = std::size_t(scheme_.block);
    const ScaleFormatRound round = scale_format_round(scheme_);
    r.amax = amax_of(x, n);
    const float ts = rule.rule == ScaleRule::TwoLevel ? two_level_tensor_scale(rule, r.amax) : 1.0f;
    two_shards(pool, rows, total, [&](std::size_t b, std::size_t e, ShardOut& o) {
      for (std::size_t i = b; i < e; ++i)
        for (std::size_t b0 = 0; b0 < cols; b0 += bl) {
          const std::size_t off = i * cols + b0, len = std::min(bl, cols - b0);
          const float scale = group_scale(rule, GroupStats{amax_of(x + off, len)}, ts, round).scale;
          encode_group(f, opt, x + off, len, scale, off, y + off, codes ? codes + off : nullptr,
                       clipped ? clipped + off : nullptr, o.st, o.clipped);
        }
    });
  }
  r.stats = total.st;
  r.clipped = total.clipped;
  return r;
}

void ste_backward(const float* dy, const uint8_t* clipped, std::size_t n, float* dx) {
  if (!clipped) {
    if (dx != dy) std::memcpy(dx, dy, n * sizeof(float));
    return;
  }
  for (std::size_t i = 0; i < n; ++i) dx[i] = clipped[i] ? 0.0f : dy[i];
}

}  // namespace qs
