// The ':mse' block scale search (quant/scheme.h: search_block_scale, BlockScaleSearch), in a file of its own:
// in scheme.cpp its size changed GCC's inlining budget for apply_scheme (group_scale went out of line). The
// per-block search itself is in scale_search_impl.h, compiled here for the baseline and in
// scale_search_avx2.cpp for AVX2; tests/core/tst_scale_search checks both against the exhaustive loop.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

#include "format/quantize.h"
#include "quant/reduce_simd.h"
#include "quant/scheme.h"
#define QS_SEARCH_RUN run_generic
#define QS_SEARCH_BLOCKS run_blocks_generic
#include "quant/scale_search_impl.h"

namespace qs {

float search_block_scale_exhaustive(const Scheme& s, const std::vector<double>& candidates, const float* x,
                                    std::size_t n, float tensor_scale) {
  double amax = 0, sum_x2 = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (std::isfinite(x[i])) amax = std::max(amax, double(std::fabs(x[i]))), sum_x2 += double(x[i]) * x[i];
  if (!(amax > 0)) return 1.0f;  // as every rule: nothing to scale
  EncodeOptions nearest = s.options;
  nearest.rounding = Rounding::Nearest;
  std::vector<float> y(n);
  const double min_pos = s.format.min_subnormal > 0 ? s.format.min_subnormal : s.format.min_normal;
  double best = INFINITY;
  float best_s = 0.0f;
  bool all_zero_tried = false;
  for (double sb : candidates) {
    const float sc = static_cast<float>(sb) * tensor_scale;
    if (!scale_is_usable(sc)) continue;
    const double clip = amax - double(sc) * s.format.max_finite;
    if (clip > 0 && clip * clip >= best) continue;  // its clipping alone cannot beat the best
    if (amax < 0.5 * min_pos * double(sc)) {        // every x rounds to 0: SE = sum x^2, the same for all larger s
      if (all_zero_tried) break;
      all_zero_tried = true;
    }
    EncodeJob job;
    job.x = x;
    job.n = n;
    job.scale = sc;
    job.values = y.data();
    encode_f32(s.format, nearest, job);
    double se = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (std::isfinite(x[i])) se += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
    if (se < best) best = se, best_s = sc;
  }
  (void)sum_x2;
  return best_s;
}

EncodeOptions search_options(const Scheme& s) {
  EncodeOptions nearest = s.options;
  nearest.rounding = Rounding::Nearest;
  return nearest;
}

// search_block_scale finds search_block_scale_exhaustive's scale without trying most candidates. Why the result
// is the same:
//
// 1. Let U be the usable candidates (scale_is_usable) up to the first one under which every x rounds to 0 (the
//    exhaustive loop stops after it; every later one has the same SE, sum x^2, and loses the tie), and let M be
//    the first candidate of U with the least SE (SE computed exactly as the exhaustive loop does: same encoder
//    results, same order of the double sum; NaN and inf SE never win). The exhaustive loop returns M unless
//    its clipping test skipped M: it evaluates M otherwise, every candidate it evaluated before M has a larger
//    SE (M is the first least), and none after M is smaller. That test skips M only when
//    clip_M^2 >= best-so-far > SE_M; so when clip_M <= 0 or clip_M^2 <= SE_M, M is the answer. Otherwise
//    (possible where s * max_finite rounds up in float, so the clipped element's error is a hair below clip^2)
//    the exhaustive loop runs.
// 2. M is found by visiting candidates in any order, keeping the least (SE, index). A candidate is skipped when
//    a lower bound LB <= SE of its SE cannot win: LB > best, or LB == best and its index is larger. Lower bounds
//    come from single elements, summed over the finite x in element order: the double sum of nonnegative terms
//    rounded to nearest is monotone in each term (every partial sum is fl(p + t), monotone in p and t), so
//    terms b_i <= t_i = fl((x_i - y_i)^2) give a sum <= SE. Two kinds of terms:
//    - clipped: y_i is a format value (|v| <= max_finite: signed float formats are symmetric) times sc in
//      float32, so |y_i| <= max_finite * sc * (1 + 2^-24) < hi = max_finite * sc * (1 + 2^-20) (or y_i is
//      inf / NaN, which only makes t_i larger or SE NaN); for |x_i| > hi, b_i = fl(|x_i| - hi)^2 <= t_i
//      (|x_i - y_i| >= |x_i| - |y_i|, and fl is monotone). Fewer candidates clip as sc grows, so this sum
//      only grows as sc falls: once it exceeds best, every smaller candidate is out too.
//    - small: |x_i| < lo = 0.5 * min_pos * sc * (1 - 2^-20) makes fl(x_i / sc) < 0.5 * min_pos, which round to
//      nearest takes to +-0 (the format has a zero), so t_i = x_i^2 exactly. More x are small as sc grows, so
//      this sum only grows with sc: once it cannot win, no larger candidate can.
//    A candidate that is visited is encoded and its SE summed in order.
// 3. Per candidate, where the element format is the plain minifloat grid G with subnormals (grid_dist_params),
//    a lower bound without encoding. With t_i = |x_i| / sc (exact), every y_i is fl(g sc) for a g in G (or
//    inf / NaN, which only make SE larger or NaN), so |x_i - y_i| >= sc (dist(t_i, G) - 2^-22 t_i) - 2^-150
//    (|fl(g sc) - g sc| <= 2^-24 g sc + 2^-150, and g <= 2 t_i or |t_i - g| > g / 2). grid_dist2_f32 gives
//    D = the float sum of d_i^2 with |d_i| = dist(t'_i, G) within 2^-24 t'_i, t'_i = fl(|x_i| fl(1 / sc)) within
//    2^-23 t_i + 2^-149 of t_i (sc >= FLT_MIN, else no bound, which also makes 2^-150 / sc <= 2^-24). So
//    |x_i - y_i| >= sc (|d_i| - c_i) with c_i = 2^-19 t'_i + 2^-22, and as (|d| - c)_+^2 >= d^2 - 2 c |d| and
//    |d_i| <= t'_i (0 is in G): SE_real >= sc^2 (sum d_i^2 - 2 sum c_i t'_i), where sc^2 sum c_i t'_i <=
//    (2^-19 sum x^2 + 2^-22 sc sum |x|)(1 + 2^-16). D is within (n + 2) 2^-24 of sum d_i^2 and the double SE
//    within (n + 2) 2^-53 of SE_real, hence LB = sc^2 D (1 - (n + 8) 2^-22)(1 - (n + 8) 2^-50) - 2 (...) <= SE.
//    A candidate whose LB cannot win is not encoded.
// 4. And an upper bound where the encoder saturates: under round to nearest it takes g nearest to
//    u_i = fl(|x_i| / sc), so |x_i - y_i| <= sc (dist(u_i, G) + |u_i - t_i|) + 2^-24 g sc + 2^-150 <=
//    sc (|d_i| + c_i) (dist is 1-Lipschitz; the same roundings), and (|d| + c)^2 <= d^2 + 2 c t' + c^2:
//    SE <= UB = (sc^2 D (1 + (n + 8) 2^-22)(1 + (n + 8) 2^-50) + 2 sc^2 sum c_i t'_i + sc^2 sum c_i^2)(1 + 2^-40),
//    sc^2 sum c_i^2 <= (2^-37 sum x^2 + 2^-43 n sc^2)(1 + 2^-16). When the candidate of least LB has UB below
//    every other LB of its batch (or equal, from a later index) and below the best so far (below its LB if
//    that best is itself a bound), it is taken as the best without encoding, best = UB: every pruning rule
//    above stays valid against an upper bound of the best SE, and a later candidate that could beat it has
//    the best evaluated first. The clipping test of part 1 needs the exact SE
//    only when clip^2 > LB of the winner. LB and UB are within ~1e-3 of SE, so on most blocks no candidate is
//    encoded at all.
// 5. scales(), the batched search (scale_search_impl.h), applies parts 1-4 to kB blocks at a time, a block per
//    lane: it settles a block only where the candidate of least LB in its window has a finite UB below every other
//    LB there (a tie is not settled), both walks stop at their first step against that UB (the same monotone
//    bounds, as float sums scaled down like the single-block search's and less n 2^-149 for squares below FLT_MIN
//    that round up), and part 1's test passes on the LB; the winner is then that candidate. Its grid sums D are
//    summed in another order and, where the CPU has FMA, with fused multiply-adds: the (n + 2) 2^-24 of part 3
//    covers any order of the n additions and a term rounded once instead of twice. Every other block is searched
//    on its own.
// Formats outside that argument (integers, unsigned, no zero) take the exhaustive loop; formats off the grid
// of part 3 skip parts 3 and 4.
float search_block_scale(const Scheme& s, const std::vector<double>& candidates, const float* x, std::size_t n,
                         float tensor_scale, const BlockEncoder* enc) {
  return BlockScaleSearch(s, candidates, tensor_scale, enc)(x, n);
}

BlockScaleSearch::BlockScaleSearch(const Scheme& s, const std::vector<double>& candidates, float tensor_scale,
                                   const BlockEncoder* enc)
    : s_(&s), c_(&candidates), ts_(tensor_scale), enc_(enc) {
  const Format& f = s.format;
  if (f.kind != FormatKind::Float || !f.is_signed || f.no_zero || candidates.empty()) return;
  if (!enc_) enc_ = &own_.emplace(f, search_options(s));
  const std::size_t nc = candidates.size();
  sc_.resize(nc);
  for (std::size_t k = 0; k < nc; ++k) sc_[k] = static_cast<float>(candidates[k]) * tensor_scale;
  // U = [k0, k1): sc_ is nondecreasing in k (both conditions are monotone in sc).
  k0_ = std::size_t(std::find_if(sc_.begin(), sc_.end(), [](float sc) { return sc > 0.0f; }) - sc_.begin());
  k1_ = std::size_t(std::find_if(sc_.begin(), sc_.end(), [](float sc) { return !(sc <= FLT_MAX); }) - sc_.begin());
  if (k0_ >= k1_) return;  // no usable candidate: the exhaustive loop
  pruned_ = true;
  auto biased = [](double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    return int((bits >> 52) & 0x7ff);
  };
  e_lo_ = biased(candidates.front());
  const int e_hi = biased(candidates.back());
  for (int e = e_lo_; e <= e_hi + 1; ++e)
    first_of_.push_back(uint16_t(std::min<std::size_t>(
        65535, std::size_t(std::lower_bound(candidates.begin(), candidates.end(), std::ldexp(1.0, e - 1023)) -
                           candidates.begin()))));
  use_lb_ = grid_dist_params(f, grid_);
  const double min_pos = f.min_subnormal > 0 ? f.min_subnormal : f.min_normal;
  zero_mul_ = 2.0 / min_pos;
  if ((0.5 * min_pos) * zero_mul_ != 1.0) pruned_ = false;  // not a power of two: the exhaustive loop
  start_mul_ = 1.0 / (f.max_finite * double(tensor_scale));
  sc_.resize(nc + kScPad, 1.0f);  // the batched search's windows read past the last candidate
}

// The batched search's tables, made on its first call (a search used one block at a time does without them): per
// candidate the values the single-block search computes per block, and the start by bucket of amax.
void BlockScaleSearch::prepare_batch() const {
  std::call_once(batch_once_, [this] {
    const std::vector<double>& candidates = *c_;
    const Format& f = s_->format;
    const std::size_t nc = candidates.size();
    const double min_pos = f.min_subnormal > 0 ? f.min_subnormal : f.min_normal;
    inv_.resize(nc + kScPad);
    lo_f_.resize(nc + kScPad);
    hi_f_.resize(nc + kScPad);
    for (std::size_t k = 0; k < nc + kScPad; ++k) {
      const float sc = sc_[k];
      inv_[k] = sc >= FLT_MIN ? 1.0f / sc : 0.0f;  // grid_dist2_f32's r
      const double lo = 0.5 * min_pos * double(sc) * (1.0 - 0x1p-20);
      float lo_f = static_cast<float>(lo);  // rounded down: a < lo_f implies a < lo
      if (double(lo_f) > lo) lo_f = std::nextafter(lo_f, 0.0f);
      lo_f_[k] = lo_f;
      const double hi = f.max_finite * double(sc) * (1.0 + 0x1p-20);
      float hi_f = static_cast<float>(hi);  // rounded up: a > hi_f implies a > hi, and a - hi_f <= a - hi
      if (double(hi_f) < hi) hi_f = std::nextafter(hi_f, INFINITY);
      hi_f_[k] = hi_f;
    }
    // The buckets of amax whose start lies inside the candidates, a binade of margin either side.
    auto bucket = [](double a) {
      const float af = static_cast<float>(std::min(a, double(FLT_MAX)));
      uint32_t bits;
      std::memcpy(&bits, &af, 4);
      return bits >> 18;
    };
    const uint32_t b_lo = bucket(candidates.front() / start_mul_), b_hi = bucket(candidates.back() / start_mul_);
    start_lo_ = b_lo > 32 ? b_lo - 32 : 0;
    const uint32_t b_end = std::min<uint32_t>(b_hi + 33, 0x7f800000u >> 18);
    std::size_t k = 0;  // lower_bound(candidates, a * start_mul_) for the buckets' nondecreasing low ends: start()
    for (uint32_t b = start_lo_; b < b_end; ++b) {
      const uint32_t bits = b << 18;
      float a;
      std::memcpy(&a, &bits, 4);
      const double target = double(a) * start_mul_;
      while (k < nc && candidates[k] < target) ++k;
      start_tab_.push_back(uint16_t(std::min<std::size_t>(65535, k)));
    }
  });
}

std::size_t BlockScaleSearch::start(double target) const {
  const std::vector<double>& c = *c_;
  uint64_t bits;
  std::memcpy(&bits, &target, 8);
  const int e = int((bits >> 52) & 0x7ff) - e_lo_;  // target > 0
  if (e < 0) return 0;
  if (e + 1 >= int(first_of_.size())) return c.size();
  const std::size_t k = first_of_[std::size_t(e)], end = first_of_[std::size_t(e) + 1];
  std::size_t below = 0;  // the candidates of target's binade below it, counted without branches
  for (std::size_t j = k; j < end; ++j) below += c[j] < target;
  return k + below;
}

void search_grow(std::vector<float>& v, std::size_t n) { v.resize(n); }

float BlockScaleSearch::operator()(const float* x, std::size_t n) const {
  if (!pruned_) return search_block_scale_exhaustive(*s_, *c_, x, n, ts_);
#if QS_SEARCH_AVX2
  if (enc_->level() != SimdLevel::Generic) return run_avx2(x, n);  // the encoder's level: QS_SIMD_LEVEL pins both
#endif
  return run_generic(x, n);
}

void BlockScaleSearch::scales(const float* x, std::size_t n, std::size_t count, float* out, bool fma) const {
  if (!pruned_) {
    for (std::size_t b = 0; b < count; ++b) out[b] = search_block_scale_exhaustive(*s_, *c_, x + b * n, n, ts_);
    return;
  }
  prepare_batch();
  (void)fma;
#if QS_SEARCH_AVX2
  static const bool has_fma = __builtin_cpu_supports("fma");
  if (enc_->level() != SimdLevel::Generic)
    return fma && has_fma ? run_blocks_fma(x, n, count, out) : run_blocks_avx2(x, n, count, out);
#endif
  run_blocks_generic(x, n, count, out);
}

}  // namespace qs
