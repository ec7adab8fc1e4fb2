// The Error tab's numbers: apply_scheme (quantization + error sums), then one fused pass over (x, q)
// that fills the value histogram and both error histograms, group by group so that each element is
// classified against its own group's clip bound. The group scales are recomputed here with the
// scheme's rule (group_scale of format/scale_rule.h, the function apply_scheme calls); the pass's clipped
// count is checked against apply_scheme's in tests/tst_error_view.cpp.
#include "quant/error_view.h"

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "format/ggml_quantize.h"
#include "format/quantize.h"
#include "quant/error_view_simd.h"
#include "quant/reduce_simd.h"

namespace qs {

namespace {

bool is_affine(const Format& f) { return f.is_int() && !f.is_signed; }

using namespace detail;

// One chunk's counters. The error counters are kept four times over (element i & 3) so that runs of
// equal codes, the common case, do not serialise on one memory location.
struct Local {
  static constexpr int kWays = 4;
  int bins, ways;                        // value histogram replicas: 4 for small histograms
  std::vector<uint64_t> value;           // ways x (bins + kValueExtra)
  std::array<uint64_t, kWays * 2 * kErrCodes> abs{}, rel{};
  explicit Local(int b) : bins(b), ways(b <= 4096 ? kWays : 1), value(std::size_t(ways) * (b + kValueExtra), 0) {}
};

struct Totals {
  std::vector<uint64_t> value;
  std::array<uint64_t, 2 * kErrCodes> abs{}, rel{};
  explicit Totals(int bins) : value(std::size_t(bins) + kValueExtra, 0) {}
  void add(const Local& h) {
    const std::size_t stride = std::size_t(h.bins) + kValueExtra;
    for (int w = 0; w < h.ways; ++w)
      for (std::size_t i = 0; i < stride; ++i) value[i] += h.value[w * stride + i];
    for (int w = 0; w < Local::kWays; ++w)
      for (std::size_t i = 0; i < abs.size(); ++i) abs[i] += h.abs[w * abs.size() + i], rel[i] += h.rel[w * rel.size() + i];
  }
};

// The fused pass over n elements of one group: codes for a tile (vectorized), then the increments.
void pass_run(const float* x, const float* q, std::size_t n, const ErrorCodeParams& p, SimdLevel level, Local& h) {
  constexpr std::size_t kTile = 512;
  alignas(64) int32_t vc[kTile], ac[kTile], rc[kTile];
  const std::size_t vstride = std::size_t(h.bins) + kValueExtra, vmask = std::size_t(h.ways - 1);
  constexpr std::size_t estride = 2 * kErrCodes;
  uint64_t* value = h.value.data();
  uint64_t* ab = h.abs.data();
  uint64_t* rl = h.rel.data();
  ErrorCodeParams pt = p;  // with groups: each tile starts at a group boundary (group divides kTile)
  for (std::size_t i0 = 0; i0 < n; i0 += kTile) {
    const std::size_t m = std::min(kTile, n - i0);
    if (p.bounds) pt.bounds = p.bounds + i0 / p.group;
    if (p.group_lo) pt.group_lo = p.group_lo + i0 / p.group, pt.group_hi = p.group_hi + i0 / p.group;
    error_codes(x + i0, q + i0, m, pt, vc, ac, rc, level);
    // Four elements a round, each to its own replica with the replica's offset fixed: the increments are
    // what this loop is bound by (~1.5 cycles each), so no index arithmetic beside them.
    uint64_t* const v0 = value;
    uint64_t* const v1 = value + (1 & vmask) * vstride;
    uint64_t* const v2 = value + (2 & vmask) * vstride;
    uint64_t* const v3 = value + (3 & vmask) * vstride;
    // Meanwhile the next tile's x and q are fetched (the increments leave the memory idle otherwise; the
    // kernel would wait on those loads).
    const std::size_t ahead = i0 + kTile < n ? std::min(kTile, n - i0 - kTile) : 0;
    const float* const xn = ahead ? x + i0 + kTile : x;  // no pointer past the end
    const float* const qn = ahead ? q + i0 + kTile : q;
    std::size_t i = 0;
    for (; i + 4 <= m; i += 4) {
      if (4 * i < ahead) __builtin_prefetch(xn + 4 * i), __builtin_prefetch(qn + 4 * i);
      v0[vc[i]]++, v1[vc[i + 1]]++, v2[vc[i + 2]]++, v3[vc[i + 3]]++;
      ab[ac[i]]++, ab[estride + ac[i + 1]]++, ab[2 * estride + ac[i + 2]]++, ab[3 * estride + ac[i + 3]]++;
      rl[rc[i]]++, rl[estride + rc[i + 1]]++, rl[2 * estride + rc[i + 2]]++, rl[3 * estride + rc[i + 3]]++;
    }
    for (; i < m; ++i) {
      value[(i & vmask) * vstride + std::size_t(vc[i])]++;
      ab[(i & 3) * estride + std::size_t(ac[i])]++;
      rl[(i & 3) * estride + std::size_t(rc[i])]++;
    }
  }
}

void finish_histogram(Log2ErrorHistogram& h, const std::array<uint64_t, 2 * kErrCodes>& c) {
  for (int k = 0; k < Log2ErrorHistogram::kBins; ++k) {
    h.rounding[k] = c[k];
    h.clipping[k] = c[k + kErrCodes];
  }
  h.zeros = c[kZero] + c[kZero + kErrCodes];
  h.non_finite = c[kNonFinite] + c[kNonFinite + kErrCodes];
  h.undefined = c[kUndefined] + c[kUndefined + kErrCodes];
}

// The scale and clip bound of a group, by the scheme's rule (see GroupQuantizer in scheme.cpp).
struct GroupView {
  float scale = 1.0f;   // the scale the encoder used
  int32_t zp = 0;
  double bound = 0;
  bool real = false;    // the group had a finite non-zero amax and a usable scale
};

struct MinMaxAcc {
  SimdLevel level;  // chosen once: best_simd_level() per block of 32 would cost more than the block
  double lo = 0, hi = 0, amax = 0;
  bool any = false;
  void add(const float* x, std::size_t n) {
    float l, h;
    minmax_f32(x, n, l, h, level);
    if (l > h) return;
    lo = any ? std::min(lo, double(l)) : l;
    hi = any ? std::max(hi, double(h)) : h;
    amax = std::max({amax, std::fabs(lo), std::fabs(hi)});
    any = true;
  }
};

// `rule` is the scheme's (apply_scheme's tensor path takes the amax rule for a 0-d block scheme: so does
// the caller); ts is the two-level tensor scale apply_scheme used.
// `searched`: the scale apply_scheme chose from the data (BlockScaleSearch for ':mse' blocks, an observer for
// ':p<pct>' / ':mse' tensor and channel clips), used instead of the rule's.
GroupView group_view(const Scheme& s, const ScaleRuleParams& rule, const MinMaxAcc& mm, float ts,
                     const float* searched = nullptr) {
  GroupView g;
  const Format& f = s.format;
  const GroupScale gs = searched ? GroupScale{*searched, 0}
                                 : group_scale(rule, GroupStats{mm.amax, mm.lo, mm.hi}, ts, scale_format_round(s));
  if (rule.rule == ScaleRule::None) {  // a plain cast: scale 1, clipped where it overflows
    g.bound = clip_bound(f, 1.0f);
    g.real = true;
    return g;
  }
  if (rule.rule == ScaleRule::Affine) {
    g.scale = gs.scale;
    g.zp = gs.zero_point;
    g.bound = std::max(std::fabs(mm.lo), std::fabs(mm.hi));
    g.real = mm.amax > 0;
    return g;
  }
  const bool usable = scale_is_usable(gs.scale);
  g.real = mm.amax > 0 && usable;
  g.scale = usable ? gs.scale : 1.0f;  // an underflowed block is all zero
  g.bound = clip_bound(f, g.scale);
  return g;
}

std::string scale_text(float s) {
  int e = 0;
  if (s > 0 && std::frexp(s, &e) == 0.5) return "2^" + std::to_string(e - 1);
  std::ostringstream o;
  o.precision(6);
  o << s;
  return o.str();
}

// Groups as recorded by the pass: the scale used, negated for groups with nothing to show (no finite
// non-zero value, or an underflowed two-level block), the group's amax, and affine zero points. Or, for
// blocks apply_scheme recorded, a view of its records (1 Mi blocks: no copy of 8 MB and its page faults).
struct GroupTable {
  std::vector<float> scale, amax_;
  std::vector<int32_t> zp_;  // affine formats only
  const GroupRecords* rec = nullptr;
  bool rec_affine = false;
  void resize(std::size_t n, bool affine) {
    scale.assign(n, -1.0f);
    amax_.assign(n, 0.0f);
    zp_.assign(affine ? n : 0, 0);
  }
  void borrow(const GroupRecords& r, bool affine) {
    rec = &r;
    rec_affine = affine;
  }
  void set(std::size_t i, const GroupView& g, double group_amax) {
    scale[i] = g.real ? g.scale : -g.scale;
    amax_[i] = static_cast<float>(group_amax);  // the amax of float data is a float
    if (!zp_.empty()) zp_[i] = g.zp;
  }
  std::size_t size() const { return rec ? rec->scale.size() : scale.size(); }
  float signed_scale(std::size_t i) const { return rec ? (rec->real[i] ? rec->scale[i] : -rec->scale[i]) : scale[i]; }
  float amax(std::size_t i) const { return rec ? rec->amax[i] : amax_[i]; }
  int32_t zp(std::size_t i) const { return rec ? (rec_affine ? rec->zp[i] : 0) : (zp_.empty() ? 0 : zp_[i]); }
};

void make_grid(const Scheme& s, const GroupTable& groups, GridGroup which, const char* unit,
               const LinearHistogram& range, GridOverlay& g) {
  const std::size_t count = groups.size();
  g.groups = count;
  std::size_t pick = 0;
  if (count) {
    if (which == GridGroup::Largest) {  // the group holding amax: its grid spans the value axis
      float am_pick = groups.amax(0), sc_pick = groups.signed_scale(0);
      for (std::size_t i = 1; i < count; ++i) {
        const float am = groups.amax(i);
        if (!(am >= am_pick)) continue;  // the common case, without reading the scale
        const float sc = groups.signed_scale(i);
        if (am > am_pick || (am == am_pick && sc > sc_pick)) pick = i, am_pick = am, sc_pick = sc;
      }
    } else {
      std::vector<std::size_t> real;
      for (std::size_t i = 0; i < count; ++i)
        if (groups.signed_scale(i) > 0) real.push_back(i);
      if (!real.empty()) {
        auto mid = real.begin() + std::ptrdiff_t(real.size() / 2);
        std::nth_element(real.begin(), mid, real.end(),
                         [&](std::size_t a, std::size_t b) { return groups.signed_scale(a) < groups.signed_scale(b); });
        pick = *mid;
      }
    }
    g.scale = std::fabs(groups.signed_scale(pick));
    g.zero_point = groups.zp(pick);
  }
  g.group = pick;
  const Format& f = s.format;
  std::vector<double> vals;
  if (is_affine(f)) {
    const int qmax = int(f.max_finite);
    for (int k = 0; k <= qmax; ++k) vals.push_back(static_cast<float>(double(k - g.zero_point) * double(g.scale)));
  } else {
    for (double v : distinct_values(f))
      if (std::isfinite(v)) vals.push_back(static_cast<float>(v) * g.scale);  // as the encoder computes it
  }
  std::sort(vals.begin(), vals.end());
  vals.erase(std::unique(vals.begin(), vals.end()), vals.end());
  g.total_values = vals.size();
  // The range, plus the nearest value beyond each end: x at the ends rounds there (float rounding of
  // s * max lands a hair beyond amax; an affine zero point shifts the grid by up to half a step).
  const auto first = std::lower_bound(vals.begin(), vals.end(), range.lo);
  const auto last = std::upper_bound(vals.begin(), vals.end(), range.hi);
  g.values.assign(first == vals.begin() ? first : first - 1, last == vals.end() ? last : last + 1);
  std::ostringstream note;
  if (s.granularity == Granularity::None) {
    note << "no scale (a plain cast)";
  } else if (count <= 1) {
    note << "per-tensor scale " << scale_text(g.scale);
  } else {
    note << unit << ' ' << pick << " of " << count << " ("
         << (which == GridGroup::Largest ? "largest amax" : "median scale") << ", scale " << scale_text(g.scale) << ')';
  }
  if (is_affine(f)) note << ", zero point " << g.zero_point;
  g.note = note.str();
}

}  // namespace

namespace detail {

void error_codes(const float* x, const float* q, std::size_t n, const ErrorCodeParams& p, int32_t* vcode,
                 int32_t* acode, int32_t* rcode, SimdLevel level) {
  switch (level) {
#if defined(QS_HAVE_X86_SIMD)
    case SimdLevel::Avx512: return error_codes_avx512(x, q, n, p, vcode, acode, rcode);
    case SimdLevel::Avx2: return error_codes_avx2(x, q, n, p, vcode, acode, rcode);
#endif
    default: return error_codes_generic(x, q, n, p, vcode, acode, rcode);
  }
}

}  // namespace detail

uint64_t LinearHistogram::total() const {
  uint64_t t = below + above + nan + pos_inf + neg_inf;
  for (uint64_t c : counts) t += c;
  return t;
}

double Log2ErrorHistogram::bin_lo(int k) { return k == 0 ? std::ldexp(1.0, -149) : std::ldexp(1.0, k - 127); }
double Log2ErrorHistogram::bin_hi(int k) { return std::ldexp(1.0, k - 126); }

int Log2ErrorHistogram::bin_of(float magnitude) {
  uint32_t u;
  const float m = std::fabs(magnitude);
  std::memcpy(&u, &m, sizeof u);
  return int(std::min<uint32_t>(u >> 23, 254));
}

uint64_t Log2ErrorHistogram::total() const {
  uint64_t t = zeros + non_finite + undefined;
  for (int k = 0; k < kBins; ++k) t += rounding[k] + clipping[k];
  return t;
}

int Log2ErrorHistogram::first_bin() const {
  for (int k = 0; k < kBins; ++k)
    if (rounding[k] || clipping[k]) return k;
  return kBins;
}

int Log2ErrorHistogram::last_bin() const {
  for (int k = kBins - 1; k >= 0; --k)
    if (rounding[k] || clipping[k]) return k;
  return -1;
}

ErrorView compute_error_view(const Scheme& s, const float* x, const std::vector<int64_t>& shape,
                             const ErrorViewOptions& opt, const ProgressFn& progress, std::vector<float>* scratch) {
  if (opt.value_bins < 1 || opt.value_bins > 65536)
    throw std::invalid_argument("value_bins must be in 1..65536, not " + std::to_string(opt.value_bins));
  ErrorView v;
  v.scheme = s.text;
  std::size_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw std::invalid_argument("negative dimension in the tensor shape");
    n *= std::size_t(d);
  }
  v.n = n;
  v.metrics.histograms = false;  // the log2 histograms are made here, split by clipping
  const int threads = resolve_threads(opt.threads);

  std::vector<float> own;
  std::vector<float>& y = scratch ? *scratch : own;
  y.resize(n);
  const std::size_t total = 2 * n;
  ProgressFn apply_progress;
  if (progress)
    apply_progress = [&](std::size_t d, std::size_t t) {
      return progress(t ? std::size_t(double(n) * double(d) / double(t)) : n, total);
    };
  ClipRanges ggml_ranges;  // ggml schemes: each sub-block's clip interval, as apply_scheme decided it
  v.bits_per_value = bits_per_value(s, shape);
  GroupRecords records;     // blocks along the last axis: each block's scale, bound and amax, as apply_scheme chose them
  v.out = apply_scheme(s, x, shape, y.data(), threads, apply_progress, &v.metrics,
                       s.rule == ScaleRule::GgmlBlock ? &ggml_ranges : nullptr, &records);
  if (v.out.cancelled) {
    v.cancelled = true;
    return v;
  }

  // The value histogram's range.
  double lo = opt.range_lo, hi = opt.range_hi;
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) {
    const double a = v.out.amax > 0 && std::isfinite(v.out.amax) ? v.out.amax : 1.0;
    lo = -a;
    hi = a;
  }
  v.values.lo = lo;
  v.values.hi = hi;
  v.values.counts.assign(std::size_t(opt.value_bins), 0);
  const ErrorCodeParams params{lo, hi, double(opt.value_bins) / (hi - lo), 0.0, opt.value_bins};

  const Format& f = s.format;
  const Granularity gran =
      shape.empty() || s.granularity == Granularity::None ? Granularity::Tensor : s.granularity;
  const ScaleRuleParams rule = scale_rule_params(s);
  ScaleRuleParams tensor_rule = rule;  // one group: as apply_scheme, the amax rule even for a 0-d block scheme
  if (rule.rule == ScaleRule::MxE8m0 || rule.rule == ScaleRule::TwoLevel || rule.rule == ScaleRule::Rounded16)
    tensor_rule.rule = ScaleRule::Amax;
  const float ts = v.out.tensor_scale;

  const std::vector<double> candidates = s.mse ? search_candidates(s) : std::vector<double>{};
  const BlockScaleSearch search(s, candidates, ts);  // ':mse' groups apply_scheme did not record
  Totals totals(opt.value_bins);
  std::mutex mu;
  ProgressFn pass_progress;
  if (progress)
    pass_progress = [&](std::size_t d, std::size_t t) {
      return progress(n + (t ? std::size_t(double(n) * double(d) / double(t)) : n), total);
    };
  auto merge = [&](const Local& h) {
    std::lock_guard<std::mutex> lock(mu);
    totals.add(h);
  };

  GroupTable groups;
  const SimdLevel level = best_simd_level();
  const char* unit = "tensor";
  bool ok = true;
  if (s.rule == ScaleRule::GgmlBlock) {
    // ggml's blocks: each sub-block (its own scale and min) clipped at the interval its codes cover, as
    // apply_scheme counted it; the grid drawn is the sub-block holding the tensor's amax.
    unit = "sub-block";
    const std::size_t sub = ggml_ranges.group, count = ggml_ranges.lo.size();
    const double codes = double(ggml::sub_block_code_count(*s.ggml));
    std::vector<float> amax(count, 0.0f);
    ok = parallel_chunks(count, std::max<std::size_t>(1, (std::size_t(1) << 16) / std::max<std::size_t>(sub, 1)),
                         threads, [&](std::size_t gb, std::size_t ge) {
      Local h(opt.value_bins);
      ErrorCodeParams p = params;
      if (sub % 16 == 0 && (std::size_t(512) % sub) == 0) {  // one pass over the chunk, each sub-block's interval
        p.group = sub;
        p.group_lo = ggml_ranges.lo.data() + gb;
        p.group_hi = ggml_ranges.hi.data() + gb;
        pass_run(x + gb * sub, y.data() + gb * sub, (ge - gb) * sub, p, level, h);
      } else {
        p.interval = true;
        for (std::size_t gi = gb; gi < ge; ++gi) {
          p.clip_lo = ggml_ranges.lo[gi];
          p.clip_hi = ggml_ranges.hi[gi];
          pass_run(x + gi * sub, y.data() + gi * sub, sub, p, level, h);
        }
      }
      std::vector<float> scratch(sub);
      for (std::size_t gi = gb; gi < ge; ++gi) {  // the finite |x|'s max (finite_copy_f32's bits are its order)
        const uint32_t a = finite_copy_f32(x + gi * sub, scratch.data(), sub, level);
        std::memcpy(&amax[gi], &a, 4);
      }
      merge(h);
    }, pass_progress);
    if (ok && count) {
      const std::size_t pick = std::size_t(std::max_element(amax.begin(), amax.end()) - amax.begin());
      const double lo_v = ggml_ranges.lo[pick], hi_v = ggml_ranges.hi[pick], step = (hi_v - lo_v) / codes;
      std::vector<double> vals;
      for (int k = 0; k < int(codes); ++k) vals.push_back(lo_v + step * (k + 0.5));
      GridOverlay& g = v.grid;
      g.groups = count;
      g.group = pick;
      g.scale = float(step);
      g.total_values = vals.size();
      const auto first = std::lower_bound(vals.begin(), vals.end(), v.values.lo);
      const auto last = std::upper_bound(vals.begin(), vals.end(), v.values.hi);
      g.values.assign(first == vals.begin() ? first : first - 1, last == vals.end() ? last : last + 1);
      g.note = "sub-block " + std::to_string(pick) + " of " + std::to_string(count) + " (largest amax, step " +
               scale_text(float(step)) + ", " + std::to_string(int(codes)) + " codes)";
    }
  } else if (gran == Granularity::Tensor) {
    MinMaxAcc mm{level};
    if (is_affine(f)) mm.add(x, n);  // the zero point needs the signed range
    else mm.amax = v.out.amax, mm.any = v.out.amax > 0;
    const GroupView g = group_view(s, tensor_rule, mm, 1.0f, v.out.observed_scales.empty() ? nullptr : &v.out.observed_scales[0]);
    groups.resize(1, is_affine(f));
    groups.set(0, g, mm.amax);
    const double bound = g.bound;
    ok = parallel_chunks(n, std::size_t(1) << 16, threads, [&](std::size_t b, std::size_t e) {
      Local h(opt.value_bins);
      ErrorCodeParams p = params;
      p.bound = bound;
      pass_run(x + b, y.data() + b, e - b, p, level, h);
      merge(h);
    }, pass_progress);
  } else if (gran == Granularity::Channel) {
    unit = "channel";
    const int rank = int(shape.size());
    const int axis = s.axis < 0 ? s.axis + rank : s.axis;  // apply_scheme has checked the range
    std::size_t outer = 1, inner = 1;
    for (int i = 0; i < axis; ++i) outer *= std::size_t(shape[i]);
    for (int i = axis + 1; i < rank; ++i) inner *= std::size_t(shape[i]);
    const std::size_t channels = std::size_t(shape[axis]);
    std::vector<MinMaxAcc> mms(channels, MinMaxAcc{level});
    for (std::size_t o = 0; o < outer; ++o)
      for (std::size_t c = 0; c < channels; ++c) mms[c].add(x + (o * channels + c) * inner, inner);
    std::vector<double> bounds(channels);
    groups.resize(channels, is_affine(f));
    for (std::size_t c = 0; c < channels; ++c) {
      const GroupView g = group_view(s, rule, mms[c], 1.0f, v.out.observed_scales.empty() ? nullptr : &v.out.observed_scales[c]);
      groups.set(c, g, mms[c].amax);
      bounds[c] = g.bound;
    }
    const std::size_t runs = outer * channels;
    ok = parallel_chunks(runs, std::max<std::size_t>(1, (std::size_t(1) << 16) / std::max<std::size_t>(inner, 1)),
                         threads, [&](std::size_t rb, std::size_t re) {
      Local h(opt.value_bins);
      ErrorCodeParams p = params;
      for (std::size_t r = rb; r < re; ++r) {
        p.bound = bounds[r % channels];
        pass_run(x + r * inner, y.data() + r * inner, inner, p, level, h);
      }
      merge(h);
    }, pass_progress);
  } else if (const BlockGroups layout(s, shape); layout.gathered()) {
    // 2-D tiles or blocks along another axis: each group gathered, as apply_scheme quantized it.
    unit = s.block_rows > 1 ? "tile" : "block";
    groups.resize(layout.count(), is_affine(f));
    ok = parallel_chunks(layout.count(), std::max<std::size_t>(1, (std::size_t(1) << 16) / layout.max_size()), threads,
                         [&](std::size_t gb, std::size_t ge) {
      Local h(opt.value_bins);
      ErrorCodeParams p = params;
      std::vector<std::size_t> idx;
      std::vector<float> xs, ys;
      for (std::size_t gi = gb; gi < ge; ++gi) {
        layout.indices(gi, idx);
        xs.resize(idx.size());
        ys.resize(idx.size());
        for (std::size_t k = 0; k < idx.size(); ++k) xs[k] = x[idx[k]], ys[k] = y[idx[k]];
        MinMaxAcc mm{level};
        mm.add(xs.data(), xs.size());
        const float searched = s.mse ? search(xs.data(), xs.size()) : 0.0f;
        const GroupView g = group_view(s, rule, mm, ts, s.mse ? &searched : nullptr);
        groups.set(gi, g, mm.amax);
        p.bound = g.bound;
        pass_run(xs.data(), ys.data(), xs.size(), p, level, h);
      }
      merge(h);
    }, pass_progress);
  } else {
    unit = "block";
    const std::size_t L = std::size_t(shape.back());
    const std::size_t rows = L ? n / L : 0;
    const std::size_t bl = std::size_t(s.block);
    const std::size_t per_row = L ? (L + bl - 1) / bl : 0;
    if (records.filled) groups.borrow(records, is_affine(f));
    else groups.resize(rows * per_row, is_affine(f));
    // apply_scheme's records and whole blocks of 8..512 (a power of two): one pass over the chunk with each
    // block's bound (error_codes' groups), not one call per block.
    const bool grouped = records.filled && L % bl == 0 && bl >= 8 && bl <= 512 && (bl & (bl - 1)) == 0;
    ok = parallel_chunks(rows * per_row, std::max<std::size_t>(1, (std::size_t(1) << 16) / bl), threads,
                         [&](std::size_t gb, std::size_t ge) {
      Local h(opt.value_bins);
      ErrorCodeParams p = params;
      if (grouped) {
        p.bounds = records.bound.data() + gb;
        p.group = bl;
        pass_run(x + gb * bl, y.data() + gb * bl, (ge - gb) * bl, p, level, h);
        merge(h);
        return;
      }
      for (std::size_t gi = gb; gi < ge; ++gi) {
        const std::size_t r = gi / per_row, b0 = (gi % per_row) * bl;
        const std::size_t off = r * L + b0, len = std::min(bl, L - b0);
        if (records.filled) {  // apply_scheme's own decisions (tst_error_view checks them against group_view)
          p.bound = records.bound[gi];
          pass_run(x + off, y.data() + off, len, p, level, h);
          continue;
        }
        MinMaxAcc mm{level};
        mm.add(x + off, len);
        const float searched = s.mse ? search(x + off, len) : 0.0f;
        const GroupView g = group_view(s, rule, mm, ts, s.mse ? &searched : nullptr);
        groups.set(gi, g, mm.amax);
        p.bound = g.bound;
        pass_run(x + off, y.data() + off, len, p, level, h);
      }
      merge(h);
    }, pass_progress);
  }
  if (!ok) {
    v.cancelled = true;
    return v;
  }

  const int bins = opt.value_bins;
  std::copy(totals.value.begin(), totals.value.begin() + bins, v.values.counts.begin());
  v.values.below = totals.value[bins + kBelow];
  v.values.above = totals.value[bins + kAbove];
  v.values.nan = totals.value[bins + kNan];
  v.values.pos_inf = totals.value[bins + kPosInf];
  v.values.neg_inf = totals.value[bins + kNegInf];
  v.nan = v.values.nan;
  v.pos_inf = v.values.pos_inf;
  v.neg_inf = v.values.neg_inf;
  v.finite = n - v.nan - v.pos_inf - v.neg_inf;
  finish_histogram(v.abs_error, totals.abs);
  finish_histogram(v.rel_error, totals.rel);
  for (int c = kErrCodes; c < 2 * kErrCodes; ++c) v.clipped += totals.abs[std::size_t(c)];
  if (s.rule != ScaleRule::GgmlBlock) make_grid(s, groups, opt.grid_group, unit, v.values, v.grid);
  return v;
}

std::string error_view_histogram_csv(const ErrorView& v, const std::string& prefix) {
  std::ostringstream out;
  out.precision(17);
  auto emit = [&](const char* kind, const Log2ErrorHistogram& h) {
    for (const char* part : {"rounding", "clipping"}) {
      const auto& c = part[0] == 'r' ? h.rounding : h.clipping;
      for (int k = 0; k < Log2ErrorHistogram::kBins; ++k)
        if (c[k])
          out << prefix << kind << ',' << part << ',' << Log2ErrorHistogram::bin_lo(k) << ','
              << Log2ErrorHistogram::bin_hi(k) << ',' << c[k] << '\n';
    }
    out << prefix << kind << ",zero,0,0," << h.zeros << '\n';
    out << prefix << kind << ",non_finite,0,0," << h.non_finite << '\n';
    if (kind[0] == 'r') out << prefix << kind << ",undefined,0,0," << h.undefined << '\n';
  };
  emit("abs_error", v.abs_error);
  emit("rel_error", v.rel_error);
  return out.str();
}

}  // namespace qs
