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
#ifdef __AVX2__
#include <immintrin.h>
#endif

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

// The batched search's lanes: a block per float lane (kB blocks a pass), its double bookkeeping in two halves.
constexpr unsigned kB = 2 * kDl;
typedef float vfb __attribute__((vector_size(4 * kB)));
typedef int32_t vib __attribute__((vector_size(4 * kB)));
typedef float vfh __attribute__((vector_size(2 * kB)));
// c + a * b in the grid distance sums: fused where the TU has FMA (scale_search_fma.cpp).
inline vfb mul_add(vfb a, vfb b, vfb c) {
#ifdef __FMA__
  return vfb(__builtin_ia32_vfmaddps256(a, b, c));
#else
  return a * b + c;
#endif
}
// out[j kB + b] = rows[b][j] for j < rows_len (a multiple of kB): kB rows transposed, a tile at a time.
inline void transpose(const float* const* rows, std::size_t rows_len, float* out) {
  for (std::size_t c = 0; c < rows_len; c += kB) {
#ifdef __AVX2__
    __m256 r[8], t[8], u[8];
    for (unsigned b = 0; b < 8; ++b) r[b] = _mm256_loadu_ps(rows[b] + c);
    for (unsigned b = 0; b < 8; b += 2) t[b] = _mm256_unpacklo_ps(r[b], r[b + 1]), t[b + 1] = _mm256_unpackhi_ps(r[b], r[b + 1]);
    for (unsigned q = 0; q < 8; q += 4) {
      u[q] = _mm256_shuffle_ps(t[q], t[q + 2], 0x44), u[q + 1] = _mm256_shuffle_ps(t[q], t[q + 2], 0xee);
      u[q + 2] = _mm256_shuffle_ps(t[q + 1], t[q + 3], 0x44), u[q + 3] = _mm256_shuffle_ps(t[q + 1], t[q + 3], 0xee);
    }
    float* o = out + c * 8;
    for (unsigned k = 0; k < 4; ++k) {
      _mm256_storeu_ps(o + 8 * k, _mm256_permute2f128_ps(u[k], u[k + 4], 0x20));
      _mm256_storeu_ps(o + 8 * (k + 4), _mm256_permute2f128_ps(u[k], u[k + 4], 0x31));
    }
#else
    for (unsigned b = 0; b < kB; ++b)
      for (unsigned j = 0; j < kB; ++j) out[(c + j) * kB + b] = rows[b][c + j];
#endif
  }
}
inline vdl load_half(const float* p) {  // kDl floats as doubles
  vfh f;
  std::memcpy(&f, p, sizeof f);
  return __builtin_convertvector(f, vdl);
}
}  // namespace

#ifndef QS_SEARCH_BATCH_ONLY  // (scale_search_fma.cpp: the batched search alone)
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
  // And less n 2^-149: a float square below FLT_MIN may round up by 2^-150, which no relative margin covers.
  const double tiny = double(n) * 0x1p-149;
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
    if (b < INFINITY) return double(b) * float_keep - tiny;
    return chains([hi](double a) { return a > hi ? (a - hi) * (a - hi) : 0.0; });
  };
  auto small_bound = [&](std::size_t k) {
    const double lo = 0.5 * min_pos * double(sc_of(k)) * (1.0 - 0x1p-20);
    float lo_f = static_cast<float>(lo);  // rounded down: a < lo_f implies a < lo
    if (double(lo_f) > lo) lo_f = std::nextafter(lo_f, 0.0f);
    const float b = masked_sum(lo_f, INFINITY);
    if (b < INFINITY) return double(b) * float_keep - tiny;
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
#endif  // QS_SEARCH_BATCH_ONLY

// scales(): kB blocks a pass, a lane per block, for the blocks whose search ends in its first visit (part 4 of the
// argument: the candidate of least bound wins on its upper bound, no other of the window's 24 can beat it, and
// the walks stop at once), which is nearly every block: |x| and amax, the start and the window, the window's
// bounds (grid_dist2_f32's arithmetic, any summation order: the margins of part 3 hold for any), the least and
// second least bound, the upper bound of the least, the first step of each walk, and the clipping test of part 1,
// as the single-block search would do them (the same thresholds; a block-wise sum in float bounded with the same
// margins, less n 2^-149 for squares that round up below FLT_MIN). Every block this cannot settle (a second visit
// or an exact error needed, a bound infinite or tied, a window cut short by the all-zero end) is searched again
// on its own by QS_SEARCH_RUN; so are the last count % kB blocks, and every block where the single-block
// search would not use the bounds (no grid, ieee overflow, n > 42: more than 1024 / 24 values).
void BlockScaleSearch::QS_SEARCH_BLOCKS(const float* x, std::size_t n, std::size_t count, float* out) const {
  // The window of the single-block search's first visit, 24 candidates from 3 below the start (21 measured the
  // same: fewer distances, more blocks left to the single-block search; 18 and 15 slower, more of them left).
  constexpr std::size_t kBatch = 24, kMaxN = 40;
  const Format& f = s_->format;
  std::size_t g0 = 0;
  if (use_lb_ && s_->options.overflow == Overflow::Saturate && n >= kB && n <= kMaxN && n % kB == 0) {
    const std::size_t k0 = k0_, k1 = k1_;
    const GridDistParams& grid = grid_;
    const vfb zero = {};
    const vfb maxv = zero + grid.max_finite, csub = zero + grid.csub, one = zero + 1.0f;
    const vib expmask = vib{} + 0x7f800000, cadd = vib{} + int32_t(grid.cadd);
    // grid_dist2_f32's term: t = a r and its grid point from tc (t clamped at max_finite; where no t exceeds it,
    // dist2_in passes t itself and saves the clamp).
    auto term = [&](vfb t, vfb tc, vfb acc) __attribute__((always_inline)) {
      vib cb;
      std::memcpy(&cb, &tc, sizeof cb);
      cb = (cb & expmask) + cadd;
      vfb c;
      std::memcpy(&c, &cb, sizeof c);
      c = c > csub ? c : csub;
      const vfb d = t - ((tc + c) - c);
      return mul_add(d, d, acc);
    };
    auto dist2 = [&](vfb a, vfb r, vfb acc) __attribute__((always_inline)) {
      const vfb t = a * r;
      return term(t, t < maxv ? t : maxv, acc);
    };
    auto dist2_in = [&](vfb a, vfb r, vfb acc) __attribute__((always_inline)) {
      const vfb t = a * r;
      return term(t, t, acc);
    };
    const double dn = double(n);
    const double up = 1.0 + (dn + 8) * 0x1p-22;
    const double float_keep = 1.0 - (dn + 8) * 0x1p-22, tiny = dn * 0x1p-149;
    const double d2_lo = (1.0 - (dn + 8) * 0x1p-22) * (1.0 - (dn + 8) * 0x1p-50);
    const double d2_hi = (1.0 + (dn + 8) * 0x1p-22) * (1.0 + (dn + 8) * 0x1p-50);
    const double ccn = 0x1p-43 * dn * (1.0 + 0x1p-16);
    const double max_f = f.max_finite;
    // The start by table (start_tab_): any start gives the same result, this one is a load.
    const uint16_t* tab = start_tab_.data();
    const uint32_t tab_n = uint32_t(start_tab_.size()), tab_lo = start_lo_;
    auto start_of = [&](float amax_f) {
      uint32_t bits;
      std::memcpy(&bits, &amax_f, 4);
      const uint32_t i = (bits >> 18) - tab_lo;  // wraps below the table
      return bits >> 18 < tab_lo ? std::size_t(0) : i < tab_n ? std::size_t(tab[i]) : c_->size();
    };
    alignas(32) float X[kMaxN * kB], Sc[kBatch * kB], D[kBatch * kB];
    for (; g0 + kB <= count; g0 += kB) {
      const float* xg = x + g0 * n;
      const float* rows[kB];
      for (unsigned b = 0; b < kB; ++b) rows[b] = xg + b * n;
      transpose(rows, n, X);
      // |x| of the finite x (else 0), block b in lane b; amax; sum |x| and sum x^2.
      vfb A[kMaxN];
      vfb amaxv = zero, s1 = zero, s2 = zero;
      for (std::size_t i = 0; i < n; ++i) {
        vib bits;
        std::memcpy(&bits, X + i * kB, sizeof bits);
        bits &= 0x7fffffff;
        bits = bits < 0x7f800000 ? bits : vib{};
        const vfb a = vfb(bits);
        A[i] = a;
        amaxv = a > amaxv ? a : amaxv;
        s1 += a;
        s2 += a * a;
      }
      // Per block: the window [w0, w0 + m) of the single-block search's first visit (every scale in it >= FLT_MIN),
      // and whether each walk takes a step; other blocks are left to the single-block search.
      uint32_t fast = 0;  // lane bits
      alignas(32) float lo_a[kB], hi_a[kB], scb_a[kB];
      alignas(32) float m_a[kB];
      alignas(32) double up_d[kB], dn_d[kB], m_d[kB];
      std::size_t m_max = 0;
      const float* srows[kB];
      for (unsigned b = 0; b < kB; ++b) {
        srows[b] = sc_.data() + k0;
        lo_a[b] = 0, hi_a[b] = INFINITY, scb_a[b] = 1.0f, up_d[b] = 0, dn_d[b] = 0, m_a[b] = 0, m_d[b] = 0;
        const double amax = amaxv[b];
        if (!(amax > 0)) {
          out[g0 + b] = 1.0f;  // as every rule: nothing to scale
          continue;
        }
        const double zero_above = amax * zero_mul_;
        auto all_zero = [&](std::size_t k) { return double(sc_[k]) > zero_above; };
        std::size_t ka = start_of(amaxv[b]);
        ka = std::max(ka, k0);
        ka = std::min(ka, k1 - 1);
        const std::size_t w0 = std::max(k0, ka >= 3 ? ka - 3 : 0), w1 = std::min(k1, w0 + kBatch);
        if ((ka > k0 && all_zero(ka - 1)) || (w1 - w0 > 1 && all_zero(w1 - 2)) || !(sc_[w0] >= FLT_MIN) ||
            !(s2[b] < INFINITY)) {
          out[g0 + b] = QS_SEARCH_RUN(xg + b * n, n);
          continue;
        }
        fast |= 1u << b;
        srows[b] = sc_.data() + w0;
        m_a[b] = float(w1 - w0), m_d[b] = double(w1 - w0);
        m_max = std::max(m_max, w1 - w0);
        if (w1 < k1 && !all_zero(w1 - 1)) up_d[b] = 1, lo_a[b] = lo_f_[w1];
        if (w0 > k0) dn_d[b] = 1, hi_a[b] = hi_f_[w0 - 1], scb_a[b] = sc_[w0 - 1];
      }
      if (!fast) continue;
      const std::size_t jn = (m_max + 2) / 3 * 3;  // candidates computed: m_max rounded up to the triples
      transpose(srows, (jn + kB - 1) / kB * kB, Sc);  // (past w0 + m: other candidates or the padding)
      vfb m_v;
      std::memcpy(&m_v, m_a, sizeof m_v);
      // The window's grid distance sums, three candidates at a time (each a chain over the elements); the clamp
      // at max_finite only where some t may exceed it (amax * r >= max_finite in some lane).
      vfb dinf = zero;
      for (std::size_t j = 0; j < jn; j += 3) {
        vfb r[3];
        for (unsigned q = 0; q < 3; ++q) {
          vfb sc;
          std::memcpy(&sc, Sc + (j + q) * kB, sizeof sc);
          r[q] = one / sc;  // grid_dist2_f32's r (sc >= FLT_MIN)
        }
        vfb a0 = zero, a1 = zero, a2 = zero;
        const vib clamps = (amaxv * r[0] >= maxv) | (amaxv * r[1] >= maxv) | (amaxv * r[2] >= maxv);
        bool any = false;
        for (unsigned b = 0; b < kB; ++b) any |= clamps[b] != 0;
        if (any) {
          for (std::size_t i = 0; i < n; ++i) {
            const vfb a = A[i];
            a0 = dist2(a, r[0], a0), a1 = dist2(a, r[1], a1), a2 = dist2(a, r[2], a2);
          }
        } else {
          for (std::size_t i = 0; i < n; ++i) {
            const vfb a = A[i];
            a0 = dist2_in(a, r[0], a0), a1 = dist2_in(a, r[1], a1), a2 = dist2_in(a, r[2], a2);
          }
        }
        const float jf = float(j);  // only the lanes' own candidates count
        dinf = (a0 == INFINITY) & (m_v > jf) ? one : dinf;
        dinf = (a1 == INFINITY) & (m_v > jf + 1) ? one : dinf;
        dinf = (a2 == INFINITY) & (m_v > jf + 2) ? one : dinf;
        std::memcpy(D + j * kB, &a0, sizeof a0);
        std::memcpy(D + (j + 1) * kB, &a1, sizeof a1);
        std::memcpy(D + (j + 2) * kB, &a2, sizeof a2);
      }
      // The walks' first steps: the small bound of w1, the clip bound of w0 - 1 (float sums).
      vfb lo_v, hi_v;
      std::memcpy(&lo_v, lo_a, sizeof lo_v);
      std::memcpy(&hi_v, hi_a, sizeof hi_v);
      vfb su = zero, sd = zero;
      for (std::size_t i = 0; i < n; ++i) {
        const vfb a = A[i], d = a - hi_v;
        su += a < lo_v ? a * a : zero;
        sd += a > hi_v ? d * d : zero;
      }
      alignas(32) float ams[kB], s1s[kB], s2s[kB], sus[kB], sds[kB], dinfs[kB];
      std::memcpy(ams, &amaxv, sizeof ams), std::memcpy(s1s, &s1, sizeof s1s), std::memcpy(s2s, &s2, sizeof s2s);
      std::memcpy(sus, &su, sizeof sus), std::memcpy(sds, &sd, sizeof sds), std::memcpy(dinfs, &dinf, sizeof dinfs);
      uint32_t settled = 0;
      alignas(32) double won[kB];  // the scale of the least bound, per lane
      for (unsigned h = 0; h < 2; ++h) {
        const unsigned o = h * kDl;
        const vdl amax = load_half(ams + o);
        const vdl a1 = load_half(s1s + o) * up, a2 = load_half(s2s + o) * up + dn * 0x1p-126;
        const vdl m2 = 0x1p-18 * a2 * (1.0 + 0x1p-16), m1 = 0x1p-21 * a1 * (1.0 + 0x1p-16);
        const vdl cc2 = 0x1p-37 * a2 * (1.0 + 0x1p-16);
        vdl mv;
        std::memcpy(&mv, m_d + o, sizeof mv);
        const vdl inf = vdl{} + INFINITY;
        vdl least = inf, second = least, sc_first = {}, d_first = {};
        for (std::size_t j = 0; j < jn; ++j) {  // LB = max(sc^2 D (1 - ...) - 2 sum_c, 0) (part 3); +inf past m
          const vdl sc = load_half(Sc + j * kB + o), dd = load_half(D + j * kB + o);
          const vdl v = sc * sc * dd * d2_lo - (m2 + m1 * sc);
          const vdl lb = mv > double(j) ? (v > 0.0 ? v : vdl{}) : inf;
          const vll lt = lb < least;
          second = second < lb ? second : (lb > least ? lb : least);  // min(second, max(lb, least))
          least = lt ? lb : least;
          sc_first = select(lt, sc, sc_first);
          d_first = select(lt, dd, d_first);
        }
        const vdl ub = (sc_first * sc_first * d_first * d2_hi + (m2 + m1 * sc_first) +
                        (cc2 + ccn * sc_first * sc_first)) * (1.0 + 0x1p-40);
        // Part 4: the least wins on its upper bound (every other bound above it; a tie is left to the single-block
        // search); no bound from an infinite sum.
        vll good = (ub < INFINITY) & (second > ub) & (load_half(dinfs + o) == 0.0);
        // The walks stop at once: upwards when the small bound of w1 is >= ub (a later index loses a tie), downwards
        // when amax's clipping term or the clip bound of w0 - 1 is > ub.
        vdl up_v, dn_v;
        std::memcpy(&up_v, up_d + o, sizeof up_v);
        std::memcpy(&dn_v, dn_d + o, sizeof dn_v);
        const vdl su_d = load_half(sus + o), sd_d = load_half(sds + o);
        const vll stop_up = (su_d < INFINITY) & (su_d * float_keep - tiny >= ub);
        const vdl hi = max_f * load_half(scb_a + o) * (1.0 + 0x1p-20);
        const vll stop_amax = (amax > hi) & ((amax - hi) * (amax - hi) > ub);
        const vll stop_dn = stop_amax | ((sd_d < INFINITY) & (sd_d * float_keep - tiny > ub));
        good &= (up_v == 0.0) | stop_up;
        good &= (dn_v == 0.0) | stop_dn;
        // Part 1's clipping test on the winner, decided on its lower bound.
        const vdl clip = amax - sc_first * max_f;
        good &= ~((clip > 0.0) & (clip * clip > least));
        settled |= lane_bits(good) << o;
        std::memcpy(won + o, &sc_first, sizeof sc_first);
      }
      for (uint32_t bits = fast; bits; bits &= bits - 1) {
        const unsigned b = unsigned(__builtin_ctz(bits));
        out[g0 + b] = settled >> b & 1 ? float(won[b]) : QS_SEARCH_RUN(xg + b * n, n);
      }
    }
  }
  for (; g0 < count; ++g0) out[g0] = QS_SEARCH_RUN(x + g0 * n, n);
}

}  // namespace qs
