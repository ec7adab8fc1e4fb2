// BlockScaleSearch's pruned search (scale_search.cpp, which has the argument), included once per compiled
// instruction set: by scale_search.cpp for the baseline and by scale_search_avx2.cpp, compiled with -mavx2 and
// without FMA contraction (the same IEEE operations, so the same bounds and result: its double and float
// bookkeeping vectorizes there). QS_SEARCH_RUN names the member. The buffers grow through search_grow (a
// function of the baseline file), so this TU instantiates no std::vector code that the linker could pick for
// the baseline's callers.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

#include "format/quantize.h"
#include "quant/reduce_simd.h"
#include "quant/scheme.h"

namespace qs {

void search_grow(std::vector<float>& v, std::size_t n);  // v.resize(n), out of line in scale_search.cpp

namespace {
typedef float v4f __attribute__((vector_size(16)));
// The visit's per-candidate bookkeeping in vectors of doubles as wide as the ISA has (wider ones GCC lowers lane
// by lane): the same operations lane by lane as one candidate at a time, so the same bounds. It was a chain of
// m dependent minimums and a compare per candidate, on the search's critical path (a block's steps each wait
// for the last).
#ifdef __AVX2__
constexpr unsigned kDl = 4;
#else
constexpr unsigned kDl = 2;
#endif
typedef double vdl __attribute__((vector_size(8 * kDl)));
typedef int64_t vll __attribute__((vector_size(8 * kDl)));

inline vdl load_dl(const float* p) {  // kDl floats as doubles
#ifdef __AVX2__
  v4f f;
  std::memcpy(&f, p, sizeof f);
  return __builtin_convertvector(f, vdl);
#else
  return vdl{double(p[0]), double(p[1])};
#endif
}
// The lanes of a compare result (all ones or zero per lane) as bits, lane l at bit l.
inline uint32_t lane_bits(vll c) {
#if defined(__AVX2__)
  return uint32_t(__builtin_ia32_movmskpd256(vdl(c)));
#elif defined(__SSE2__)
  return uint32_t(__builtin_ia32_movmskpd(vdl(c)));
#else
  uint32_t r = 0;
  for (unsigned l = 0; l < kDl; ++l) r |= uint32_t(c[l] & 1) << l;
  return r;
#endif
}
inline vdl select(vll mask, vdl a, vdl b) { return vdl((vll(a) & mask) | (vll(b) & ~mask)); }
}  // namespace

float BlockScaleSearch::QS_SEARCH_RUN(const float* x, std::size_t n) const {
  const Scheme& s = *s_;
  const std::vector<double>& candidates = *c_;
  const float tensor_scale = ts_;
  const Format& f = s.format;
  // |x| of the finite x (a non-finite x counts as 0: absent from every sum), zero-padded to the bound
  // sums' multiple of 16; amax as integer bits (no loop-carried store).
  // 24 candidates a visit: the window from 3 below the start to 20 above it covers where the walk upwards
  // would stop on most blocks (16: a second visit on ~37 % of them; 24 measured 5-8 % faster, 32 no better).
  constexpr std::size_t kBatch = 24, kBatchValues = 1024, kBatchLanes = 32;  // lanes: whole 16-float vectors
  const std::size_t na = (n + 15) / 16 * 16;
  thread_local std::vector<float> abuf(kBatchValues), xbuf(kBatchValues), ybuf(kBatchValues);  // not on the stack:
  if (abuf.size() < na) search_grow(abuf, na);  // three 4 KiB arrays per call cost their page probes
  float* ax = abuf.data();
  uint32_t amax_bits = 0;
  for (std::size_t i = 0; i < n; ++i) {
    uint32_t b;
    std::memcpy(&b, x + i, 4);
    b &= 0x7fffffffu;
    b = b < 0x7f800000u ? b : 0u;
    amax_bits = std::max(amax_bits, b);
    std::memcpy(ax + i, &b, 4);
  }
  std::fill(ax + n, ax + na, 0.0f);
  float amax_f;
  std::memcpy(&amax_f, &amax_bits, 4);
  const double amax = amax_f;
  if (!(amax > 0)) return 1.0f;  // as every rule: nothing to scale
  const double min_pos = f.min_subnormal > 0 ? f.min_subnormal : f.min_normal;
  const float* scs_all = sc_.data();
  auto sc_of = [scs_all](std::size_t k) { return scs_all[k]; };
  const std::size_t k0 = k0_;
  std::size_t k1 = k1_;
  // U also ends after kz, the first candidate under which every x rounds to 0 (kz >= k0). kz lies far above
  // where the walks stop, so it is not searched for: k < k1 is in U when k == 0 or !all_zero(k - 1).
  // amax < 0.5 min_pos sc, as sc > amax * (2 / min_pos): both sides exact (min_pos is a power of two, checked
  // when zero_mul_ was made; no overflow).
  const double zero_above = amax * zero_mul_;
  auto all_zero = [&](std::size_t k) { return double(sc_of(k)) > zero_above; };
  // Start about where amax no longer clips (any start in U gives the same result; this one saves work).
  std::size_t ka = start(amax * start_mul_);  // about amax / (max_finite * tensor_scale)
  ka = std::max(ka, k0);
  ka = std::min(ka, k1 - 1);
  if (ka > k0 && all_zero(ka - 1)) {  // ka beyond kz (not expected: kz maps amax to half the least value)
    k1 = std::min(k1, std::size_t(std::partition_point(sc_.begin() + k0, sc_.begin() + k1,
                                                       [&](float sc) { return !(double(sc) > zero_above); }) -
                                  sc_.begin()) + 1);
    ka = std::min(ka, k1 - 1);
  }
  // The end of [a, b) within U, for a in U: one test unless kz lies inside.
  auto in_u = [&](std::size_t a, std::size_t b) {
    if (b - a <= 1 || !all_zero(b - 2)) return b;
    for (std::size_t k = a + 1; k < b; ++k)
      if (all_zero(k - 1)) return k;
    return b;
  };

  const BlockEncoder& e = *enc_;
  // Candidates are evaluated in batches: x repeated once per candidate (copied when first needed) and encoded
  // in one kernel call (run_groups: the same values as one call per candidate), then each candidate's SE summed
  // in element order.
  const std::size_t per = std::max<std::size_t>(1, std::min(kBatch, kBatchValues / std::max<std::size_t>(n, 1)));
  if (xbuf.size() < per * n) search_grow(xbuf, per * n), search_grow(ybuf, per * n);
  float *xr = xbuf.data(), *yr = ybuf.data();
  std::size_t copies = 0;

  double best = INFINITY;
  std::size_t best_k = SIZE_MAX;
  auto wins = [&](double v, std::size_t k) { return v < best || (v == best && k < best_k); };
  // The two monotone lower bounds of the argument above (only the elements of one kind count), each summed
  // in four interleaved chains and scaled down so that it stays below the element-order sum (part 2 asks
  // for that one): both are within n 2^-53 of the exact sum of their terms.
  const double order_keep = 1.0 - double(n + 2) * 0x1p-51;
  auto chains = [&](auto term) {
    double b[4] = {0, 0, 0, 0};
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4)
      for (std::size_t l = 0; l < 4; ++l) b[l] += term(double(ax[i + l]));
    for (; i < n; ++i) b[0] += term(double(ax[i]));
    return ((b[0] + b[1]) + (b[2] + b[3])) * order_keep;
  };
  // In float vectors over the padded |x| (4 lanes, the baseline ISA: bounds, not results), with the thresholds
  // rounded outwards and the sums scaled down by more than their rounding (n 2^-24, and 2^-24 per term):
  // still below the element-order double sums of part 2. An infinite float sum takes the double chains.
  const double float_keep = 1.0 - double(n + 8) * 0x1p-22;
  auto masked_sum = [&](float lo_f, float hi_f) {  // sum over a < lo_f of a^2, plus over a > hi_f of (a - hi_f)^2
    v4f acc = {};
    for (std::size_t i = 0; i < na; i += 4) {
      v4f a;
      std::memcpy(&a, ax + i, sizeof a);
      const v4f d = a - hi_f;
      acc += a < lo_f ? a * a : (a > hi_f ? d * d : v4f{});
    }
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);
  };
  auto clip_bound = [&](std::size_t k) {
    const double hi = f.max_finite * double(sc_of(k)) * (1.0 + 0x1p-20);
    float hi_f = static_cast<float>(hi);  // rounded up: a > hi_f implies a > hi, and a - hi_f <= a - hi
    if (double(hi_f) < hi) hi_f = std::nextafter(hi_f, INFINITY);
    const float b = masked_sum(0.0f, hi_f);
    if (b < INFINITY) return double(b) * float_keep;
    return chains([hi](double a) { return a > hi ? (a - hi) * (a - hi) : 0.0; });
  };
  auto small_bound = [&](std::size_t k) {
    const double lo = 0.5 * min_pos * double(sc_of(k)) * (1.0 - 0x1p-20);
    float lo_f = static_cast<float>(lo);  // rounded down: a < lo_f implies a < lo
    if (double(lo_f) > lo) lo_f = std::nextafter(lo_f, 0.0f);
    const float b = masked_sum(lo_f, INFINITY);
    if (b < INFINITY) return double(b) * float_keep;
    return chains([lo](double a) { return a < lo ? a * a : 0.0; });
  };
  // Candidates ks[0 .. m), m <= per: exact SEs, then the least (SE, index) kept.
  auto evaluate = [&](const std::size_t* ks, std::size_t m) {
    float scales[kBatch];
    double se[kBatch] = {};
    for (std::size_t j = 0; j < m; ++j) scales[j] = sc_of(ks[j]);
    for (; copies < m; ++copies) std::memcpy(xr + copies * n, x, n * sizeof(float));
    EncodeJob job;
    job.x = xr;
    job.n = m * n;
    job.values = yr;
    e.run_groups(job, scales, n);
    for (std::size_t i = 0; i < n; ++i) {
      if (!std::isfinite(x[i])) continue;
      const double xi = x[i];
      for (std::size_t j = 0; j < m; ++j) se[j] += (xi - yr[j * n + i]) * (xi - yr[j * n + i]);
    }
    for (std::size_t j = 0; j < m; ++j)  // an infinite SE never wins, as in the exhaustive loop
      if (se[j] < INFINITY && wins(se[j], ks[j])) best = se[j], best_k = ks[j];
  };
  // Per-candidate bounds (grid_dist2_f32, part 3 of the argument) where the element format allows.
  const GridDistParams& grid = grid_;
  const bool use_lb = use_lb_ && n <= (std::size_t(1) << 20);
  const bool use_ub = use_lb && s.options.overflow == Overflow::Saturate;
  // With sum_c = sc^2 sum c_i t_i <= m2 + m1 sc and sum_cc = sc^2 sum c_i^2 <= cc2 + ccn sc^2 (part 3; sums of the
  // finite x in any order, scaled up: they enter upper bounds).
  double a1 = 0, a2 = 0;
  if (use_lb) {  // float sums scaled up past their rounding; x^2 that underflow add at most 2^-126 each
    v4f s1 = {}, s2 = {};
    for (std::size_t i = 0; i < na; i += 4) {
      v4f a;
      std::memcpy(&a, ax + i, sizeof a);
      s1 += a;
      s2 += a * a;
    }
    const double up = 1.0 + double(n + 8) * 0x1p-22;
    a1 = double((s1[0] + s1[1]) + (s1[2] + s1[3])) * up;
    a2 = double((s2[0] + s2[1]) + (s2[2] + s2[3])) * up + double(n) * 0x1p-126;
  }
  const double m2 = 0x1p-18 * a2 * (1.0 + 0x1p-16), m1 = 0x1p-21 * a1 * (1.0 + 0x1p-16);
  const double cc2 = 0x1p-37 * a2 * (1.0 + 0x1p-16), ccn = 0x1p-43 * double(n) * (1.0 + 0x1p-16);
  const double d2_lo = (1.0 - double(n + 8) * 0x1p-22) * (1.0 - double(n + 8) * 0x1p-50);
  const double d2_hi = (1.0 + double(n + 8) * 0x1p-22) * (1.0 + double(n + 8) * 0x1p-50);
  // best may be an upper bound of best_k's SE rather than the SE (part 4); the pruning rules hold for both.
  bool best_exact = true;
  double best_lb = 0;  // best_k's lower bound while !best_exact
  auto make_exact = [&] {
    if (best_exact) return;
    const std::size_t k = best_k;
    best = INFINITY, best_k = SIZE_MAX, best_exact = true;
    evaluate(&k, 1);
  };
  // Candidates [a, b), b - a <= per: without bounds all evaluated. With them, the one of least lower bound
  // first: where no other can win against its upper bound it wins without being encoded (kept as an upper
  // bound); else it is evaluated, then those whose bound can still win, in one batch.
  auto visit = [&](std::size_t a, std::size_t b) {
    std::size_t ks[kBatch];
    const std::size_t m = b - a;
    if (!use_lb) {
      for (std::size_t j = 0; j < m; ++j) ks[j] = a + j;
      return evaluate(ks, m);
    }
    float scs[kBatchLanes], d2[kBatchLanes];
    for (std::size_t j = 0; j < kBatchLanes; ++j) scs[j] = 1.0f;  // the lanes past m: any usable scale
    std::memcpy(scs, sc_.data() + a, m * sizeof(float));
    grid_dist2_f32(ax, n, scs, m, grid, d2, e.level());
    // ng groups of kDl lanes cover the m candidates (the kernel wrote d2 in whole vectors of 4 lanes or more);
    // the lanes past m get the bound +inf: never the least, and masked out of every mask.
    const unsigned ng = unsigned(m + kDl - 1) / kDl;
    const uint32_t in_m = (uint32_t(1) << m) - 1;  // m <= kBatch < 32
    vdl lane;
    for (unsigned l = 0; l < kDl; ++l) lane[l] = double(l);
    // LB = sc^2 D (1 - (n + 8) 2^-22)(1 - (n + 8) 2^-50) - 2 sum_c, below SE (part 3); 0 without a bound.
    vdl lbv[kBatchLanes / kDl];
    vdl leastv = {};
    for (unsigned g = 0; g < ng; ++g) {
      const vdl sc = load_dl(scs + kDl * g), dd = load_dl(d2 + kDl * g);
      const vdl v = sc * sc * dd * d2_lo - (m2 + m1 * sc);
      const vll ok = (v > 0.0) & (dd < INFINITY) & (sc >= double(FLT_MIN));
      lbv[g] = select(lane + double(kDl * g) < double(m), vdl(vll(v) & ok), vdl{} + INFINITY);
      leastv = g ? select(lbv[g] < leastv, lbv[g], leastv) : lbv[0];  // the least: any order (no NaN)
    }
    double least = leastv[0];
    for (unsigned l = 1; l < kDl; ++l) least = leastv[l] < least ? leastv[l] : least;
    uint32_t at_least = 0;  // the least bound's first index (from a mask: no unpredictable branch)
    for (unsigned g = 0; g < ng; ++g) at_least |= lane_bits(lbv[g] == least) << (kDl * g);
    const std::size_t first = std::size_t(__builtin_ctz(at_least));
    double lb[kBatchLanes];
    std::memcpy(lb, lbv, ng * sizeof(vdl));
    // The others whose bound can still win against (best, best_k), as a bit mask (they rarely can).
    auto others = [&](std::size_t* out) {
      const double bv = best;
      const std::size_t below = best_k > a ? std::min<std::size_t>(best_k - a, 31) : 0;  // a + j < best_k
      uint32_t lt = 0, eq = 0;
      for (unsigned g = 0; g < ng; ++g)
        lt |= lane_bits(lbv[g] < bv) << (kDl * g), eq |= lane_bits(lbv[g] == bv) << (kDl * g);
      uint32_t mask = (lt | (eq & ((uint32_t(1) << below) - 1))) & in_m;
      mask &= ~(uint32_t(1) << first);
      std::size_t k = 0;
      for (; mask; mask &= mask - 1) out[k++] = a + std::size_t(__builtin_ctz(mask));
      return k;
    };
    const std::size_t kf = a + first;
    if (!wins(lb[first], kf)) return;  // nothing here can win
    std::size_t k = 0;
    if (use_ub && scs[first] >= FLT_MIN && d2[first] < INFINITY) {
      // UB = (sc^2 D (1 + (n + 8) 2^-22)(1 + (n + 8) 2^-50) + 2 sum_c + sum_cc)(1 + 2^-40), above SE (part 4).
      const double sc = scs[first];
      const double ub = (sc * sc * double(d2[first]) * d2_hi + (m2 + m1 * sc) + (cc2 + ccn * sc * sc)) * (1.0 + 0x1p-40);
      // Does kf beat the best so far (proven: against its LB if that is a bound too), and any other here ub?
      if (best_exact ? wins(ub, kf) : ub < best_lb || (ub == best_lb && kf < best_k)) {
        const double keep_best = best;
        const std::size_t keep_k = best_k;
        const bool keep_exact = best_exact;
        best = ub, best_k = kf;
        k = others(ks);
        if (k == 0) {
          best_exact = false;
          best_lb = lb[first];
          return;
        }
        best = keep_best, best_k = keep_k, best_exact = keep_exact;
        k = 0;
      }
    }
    make_exact();
    evaluate(&kf, 1);
    k = others(ks);
    if (k) {
      make_exact();
      evaluate(ks, k);
    }
  };
  // First the neighbourhood of ka where the least SE lies on most blocks (from 3 below), then upwards and
  // downwards while the bounds allow.
  const std::size_t w0 = std::max(k0, ka >= 3 ? ka - 3 : 0), w1 = in_u(w0, std::min(k1, w0 + per));  // w0 < k1
  visit(w0, w1);
  for (std::size_t k = w1; k < k1 && !all_zero(k - 1);) {  // k - 1 >= w0 >= 0
    if (!wins(small_bound(k), k)) break;
    const std::size_t e1 = in_u(k, std::min(k1, k + per));
    visit(k, e1);
    k = e1;
  }
  for (std::size_t k = w0; k > k0;) {
    const double hi = f.max_finite * double(sc_of(k - 1)) * (1.0 + 0x1p-20);  // amax's term alone first
    if (amax > hi && !wins((amax - hi) * (amax - hi), k - 1)) break;       // (one term of clip_bound's sum)
    if (!wins(clip_bound(k - 1), k - 1)) break;
    const std::size_t e0 = k - std::min(k - k0, per);
    visit(e0, k);
    k = e0;
  }
  // The exhaustive loop's clipping test (part 1) on the winner: decided on the bound where it can be.
  if (best_k != SIZE_MAX && !best_exact) {
    const double clip = amax - double(sc_of(best_k)) * f.max_finite;
    if (clip > 0 && clip * clip > best_lb) make_exact();
  }
  if (best_k == SIZE_MAX) return search_block_scale_exhaustive(s, candidates, x, n, tensor_scale);
  const float sc = sc_of(best_k);
  const double clip = amax - double(sc) * f.max_finite;
  if (clip > 0 && clip * clip > best) return search_block_scale_exhaustive(s, candidates, x, n, tensor_scale);
  return sc;
}

}  // namespace qs
