// The reductions of reduce_simd.h written once with vector extensions; reduce_simd_{generic,avx2,
// avx512}.cpp define QS_LANES (float lanes) and QS_SUFFIX and include this file. Lane order is fixed,
// so results are deterministic for a given level (sums may differ between levels in the last bits).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <utility>

#include "quant/reduce_simd.h"

#define QS_CAT2(a, b) a##b
#define QS_CAT(a, b) QS_CAT2(a, b)

namespace {
constexpr int NF = QS_LANES, ND = QS_LANES / 2;
typedef float vf __attribute__((vector_size(NF * 4)));
typedef int32_t vi __attribute__((vector_size(NF * 4)));
typedef float vhf __attribute__((vector_size(ND * 4)));
typedef double vd __attribute__((vector_size(ND * 8)));
typedef int64_t vl __attribute__((vector_size(ND * 8)));
}  // namespace

namespace qs::detail {

void QS_CAT(minmax_f32_, QS_SUFFIX)(const float* x, std::size_t n, float& lo_out, float& hi_out) {
  const vf zero = {};
  const vf pinf = zero + INFINITY, ninf = zero - INFINITY, big = zero + FLT_MAX;
  vf lo = pinf, hi = ninf;
  std::size_t i = 0;
  for (; i + NF <= n; i += NF) {
    vf v;
    std::memcpy(&v, x + i, sizeof v);
    const vi fin = (v <= big) & (v >= -big);
    const vf vl_ = fin ? v : pinf, vh = fin ? v : ninf;
    lo = vl_ < lo ? vl_ : lo;
    hi = vh > hi ? vh : hi;
  }
  float l = INFINITY, h = -INFINITY;
  for (int k = 0; k < NF; ++k) l = std::min(l, lo[k]), h = std::max(h, hi[k]);
  for (; i < n; ++i)
    if (std::isfinite(x[i])) l = std::min(l, x[i]), h = std::max(h, x[i]);
  lo_out = l;
  hi_out = h;
}

void QS_CAT(grid_dist2_f32_, QS_SUFFIX)(const float* a, std::size_t n, const float* sc, std::size_t m,
                                        const GridDistParams& g, float* out) {
  // A lane per candidate: no horizontal sums, and each element is one broadcast.
  const vf zero = {};
  const vf maxv = zero + g.max_finite, csub = zero + g.csub;
  const vi expmask = vi{} + 0x7f800000, cadd = vi{} + int32_t(g.cadd);
  auto dist2 = [&](float av, vf rv) __attribute__((always_inline)) {
    const vf t = av * rv;
    const vf tc = t < maxv ? t : maxv;  // beyond max_finite the nearest value is max_finite
    vi cb;
    std::memcpy(&cb, &tc, sizeof cb);
    cb = (cb & expmask) + cadd;  // 2^(e + 23 - M) for tc in binade e
    vf c;
    std::memcpy(&c, &cb, sizeof c);
    c = c > csub ? c : csub;            // below min_normal: the subnormal step
    const vf d = t - ((tc + c) - c);    // tc rounded to its binade's step: the nearest grid value
    return d * d;
  };
  for (std::size_t j = 0; j < m; j += NF) {
    vf rv;
    std::memcpy(&rv, sc + j, sizeof rv);
    rv = rv >= FLT_MIN ? 1.0f / rv : zero;  // r = 0: no bound
    vf acc0 = zero, acc1 = zero;  // two chains: even and odd elements
    std::size_t i = 0;
    for (; i + 2 <= n; i += 2) {
      acc0 += dist2(a[i], rv);
      acc1 += dist2(a[i + 1], rv);
    }
    if (i < n) acc0 += dist2(a[i], rv);
    const vf acc = acc0 + acc1;
    std::memcpy(out + j, &acc, sizeof acc);
  }
}

RowCounts QS_CAT(ggml_row_counts_f32_, QS_SUFFIX)(const float* x, float* y, std::size_t n, std::size_t group,
                                                  const float* lo, const float* hi) {
  RowCounts c;
  const vf zero = {}, inf = zero + INFINITY;
  const vi absmask = vi{} + 0x7fffffff;
  for (std::size_t b = 0, g = 0; b < n; b += group, ++g) {
    const vf lov = zero + lo[g], hiv = zero + hi[g];
    vi nan = {}, infc = {}, out = {}, under = {};  // lane counts (masks are -1)
    for (std::size_t i = b; i < b + group; i += NF) {
      vf v, q;
      std::memcpy(&v, x + i, sizeof v);
      std::memcpy(&q, y + i, sizeof q);
      vi vb;
      std::memcpy(&vb, &v, sizeof vb);
      vf av;
      const vi ab = vb & absmask;
      std::memcpy(&av, &ab, sizeof av);
      const vi is_nan = v != v, is_inf = av == inf;
      const vi outside = (v < lov) | (v > hiv);  // false for NaN
      nan += is_nan;
      infc += is_inf;
      out += outside & ~is_inf;
      under += ~is_nan & ~is_inf & ~outside & (v != zero) & (q == zero);
      q = (is_nan | is_inf) ? v : q;
      std::memcpy(y + i, &q, sizeof q);
    }
    for (int k = 0; k < NF; ++k)
      c.nan -= uint64_t(int64_t(nan[k])), c.inf -= uint64_t(int64_t(infc[k])), c.outside -= uint64_t(int64_t(out[k])),
          c.underflow -= uint64_t(int64_t(under[k]));
  }
  return c;
}

uint32_t QS_CAT(finite_copy_f32_, QS_SUFFIX)(const float* x, float* row, std::size_t n) {
  const vi absmask = vi{} + 0x7fffffff, expmask = vi{} + 0x7f800000;
  vi amax = {};
  std::size_t i = 0;
  for (; i + NF <= n; i += NF) {
    vi b;
    std::memcpy(&b, x + i, sizeof b);
    const vi finite = (b & expmask) != expmask;
    const vi ab = b & absmask & finite;  // magnitudes below 2^31: signed compares order them
    amax = ab > amax ? ab : amax;
    const vi kept = b & finite;
    std::memcpy(row + i, &kept, sizeof kept);
  }
  uint32_t m = 0;
  for (int k = 0; k < NF; ++k) m = std::max(m, uint32_t(amax[k]));
  for (; i < n; ++i) {
    uint32_t b;
    std::memcpy(&b, x + i, 4);
    const bool finite = (b & 0x7f800000u) != 0x7f800000u;
    const uint32_t kept = finite ? b : 0u;
    std::memcpy(row + i, &kept, 4);
    m = std::max(m, finite ? b & 0x7fffffffu : 0u);
  }
  return m;
}

namespace {
// The error sums of groups of `group` consecutive elements, group g clipped at bounds_of(g) = {lo, hi};
// a vector step never straddles two groups (group % NF == 0, or one group: group >= n).
// Sym: every group's interval is [-b, b] (the fast steps' test is then one compare of |x|'s bits).
template <bool Sym, class BoundsOf>
ErrorSums QS_CAT(sums_core_, QS_SUFFIX)(const float* x, const float* q, std::size_t n, std::size_t group,
                                        const BoundsOf& bounds_of) {
  // Steps of NF floats = two double vectors, each half with its own accumulators (every sum is a chain of
  // dependent additions). Most steps hold only finite, unclipped x: there the clipping part is 0 and the
  // rounding part is the error itself, so such a step adds e^2 once, to `both` (a sum that belongs to the
  // total and to the rounding part), and counts NF elements. A step with a non-finite or possibly clipped x
  // takes the full formula. At the end: sum_e2 = both + e2, sum_round2 = both + r2, lane by lane, then the
  // lanes in order: fixed for a level, whatever the data.
  const vd zero = {};
  struct Acc {
    vd sx2, both, se2, sae, sc2, sr2, mae;
    vl cnt, clipped;
  };
  Acc acc[2];
  for (Acc& a : acc) a = Acc{zero, zero, zero, zero, zero, zero, zero, vl{}, vl{}};
  const vd big = zero + double(FLT_MAX);
  const vl absmask = vl{} + 0x7fffffffffffffffLL;
  vd hi = zero, lo = zero;
  vf lo_fv = {}, hi_fv = {};
  vi safe_v = {};
  // The fast steps hold only finite x inside [lo, hi]. Sym: |x| <= safe (as float bits), safe the largest float
  // not above b (-1: none, when the interval does not hold 0). Otherwise lo_f <= x <= hi_f (as floats): lo_f the
  // least float >= lo and hi_f the largest <= hi, kept within [-FLT_MAX, FLT_MAX] (so inf fails), or NaN
  // (nothing passes) for a NaN bound.
  auto set_group = [&](std::size_t g) {
    const auto [glo, ghi] = bounds_of(g);
    lo = zero + glo;
    hi = zero + ghi;
    if constexpr (Sym) {
      int32_t safe = -1;
      const double m = std::min(-glo, ghi);
      if (m >= 0) {
        const float f = m >= double(FLT_MAX) ? FLT_MAX : static_cast<float>(m);
        std::memcpy(&safe, &f, sizeof safe);
        if (double(f) > m) safe -= 1;  // f > m >= 0: the float below f (f is positive)
      }
      safe_v = vi{} + safe;
    } else {
      float lo_f, hi_f;
      float_interval(glo, ghi, lo_f, hi_f);
      if (lo_f < -FLT_MAX) lo_f = -FLT_MAX;  // -inf is not finite: it must fail (NaN stays NaN)
      if (hi_f > FLT_MAX) hi_f = FLT_MAX;
      lo_fv = vf{} + lo_f;
      hi_fv = vf{} + hi_f;
    }
  };
  uint64_t fast_count = 0;
  auto full = [&](Acc& a, vd xd, vd qd) __attribute__((always_inline)) {
    const vl fin = (vd)((vl)xd & absmask) <= big;  // |x| <= FLT_MAX: finite (NaN compares false)
    xd = (vd)((vl)xd & fin);                        // non-finite x: 0 and 0, as if absent
    qd = (vd)((vl)qd & fin);
    const vd e = xd - qd;
    const vd ae = (vd)((vl)e & absmask);
    a.sx2 += xd * xd;
    a.se2 += e * e;
    a.sae += ae;
    a.mae = ae > a.mae ? ae : a.mae;
    const vd cx = xd > hi ? hi : (xd < lo ? lo : xd);
    // Masked: a non-finite x (now 0) is outside an interval that does not hold 0, but is not measured.
    const vd ce = (vd)((vl)(xd - cx) & fin), re = (vd)((vl)(cx - qd) & fin);
    a.sc2 += ce * ce;
    a.sr2 += re * re;
    a.cnt -= fin;
    a.clipped -= (ce != zero);
  };
  auto fast = [&](Acc& a, vd xd, vd qd) __attribute__((always_inline)) {
    const vd e = xd - qd;
    const vd ae = (vd)((vl)e & absmask);
    a.sx2 += xd * xd;
    a.both += e * e;
    a.sae += ae;
    a.mae = ae > a.mae ? ae : a.mae;
  };
  std::size_t i = 0, next = 0, g = 0;
  for (; i + NF <= n; i += NF) {
    if (i >= next) {
      g = i / group;
      next = (g + 1) * group;
      set_group(g);
    }
    vf xf, qf;
    std::memcpy(&xf, x + i, sizeof xf);
    std::memcpy(&qf, q + i, sizeof qf);
    vi out;
    if constexpr (Sym) {
      vi xb;
      std::memcpy(&xb, &xf, sizeof xb);
      out = (xb & 0x7fffffff) > safe_v;
    } else {
      out = ~((xf >= lo_fv) & (xf <= hi_fv));
    }
    vhf x0, x1, q0, q1;
    std::memcpy(&x0, &xf, sizeof x0);
    std::memcpy(&x1, reinterpret_cast<const char*>(&xf) + sizeof x0, sizeof x1);
    std::memcpy(&q0, &qf, sizeof q0);
    std::memcpy(&q1, reinterpret_cast<const char*>(&qf) + sizeof q0, sizeof q1);
    const vd xd0 = __builtin_convertvector(x0, vd), xd1 = __builtin_convertvector(x1, vd);
    const vd qd0 = __builtin_convertvector(q0, vd), qd1 = __builtin_convertvector(q1, vd);
    bool any = false;
    for (int l = 0; l < NF; ++l) any |= out[l] != 0;
    if (!any) {
      fast(acc[0], xd0, qd0);
      fast(acc[1], xd1, qd1);
      fast_count += NF;
    } else {
      full(acc[0], xd0, qd0);
      full(acc[1], xd1, qd1);
    }
  }
  const Acc& a0 = acc[0];
  const Acc& a1 = acc[1];
  const vd both = a0.both + a1.both;
  const vd sx2 = a0.sx2 + a1.sx2, se2 = both + (a0.se2 + a1.se2), sae = a0.sae + a1.sae, sc2 = a0.sc2 + a1.sc2,
           sr2 = both + (a0.sr2 + a1.sr2), mae = a0.mae > a1.mae ? a0.mae : a1.mae;
  const vl cnt = a0.cnt + a1.cnt, clipped = a0.clipped + a1.clipped;
  ErrorSums s;
  s.count = fast_count;
  for (int l = 0; l < ND; ++l) {
    s.sx2 += sx2[l];
    s.se2 += se2[l];
    s.sae += sae[l];
    s.sc2 += sc2[l];
    s.sr2 += sr2[l];
    s.mae = std::max(s.mae, mae[l]);
    s.count += uint64_t(cnt[l]);
    s.clipped += uint64_t(clipped[l]);
  }
  for (; i < n; ++i) {
    const double xi = x[i];
    if (!std::isfinite(xi)) continue;
    const auto [clip_lo, clip_hi] = bounds_of(i / group);
    const double e = xi - double(q[i]), ae = std::fabs(e);
    const double cx = std::clamp(xi, clip_lo, clip_hi);
    ++s.count;
    s.sx2 += xi * xi;
    s.se2 += e * e;
    s.sae += ae;
    s.mae = std::max(s.mae, ae);
    s.sc2 += (xi - cx) * (xi - cx);
    s.sr2 += (cx - double(q[i])) * (cx - double(q[i]));
    s.clipped += xi != cx;
  }
  return s;
}
}  // namespace

ErrorSums QS_CAT(error_sums_f32_, QS_SUFFIX)(const float* x, const float* q, std::size_t n, double clip_lo,
                                             double clip_hi) {
  auto bounds = [&](std::size_t) { return std::pair<double, double>{clip_lo, clip_hi}; };
  if (clip_lo == -clip_hi) return QS_CAT(sums_core_, QS_SUFFIX)<true>(x, q, n, n ? n : 1, bounds);
  return QS_CAT(sums_core_, QS_SUFFIX)<false>(x, q, n, n ? n : 1, bounds);
}

namespace {
// Groups of `group` elements, group g clipped at bounds_of(g): one core call where no vector step straddles
// two groups, else one call per group, added in order.
template <bool Sym, class Bounds>
ErrorSums QS_CAT(group_sums_, QS_SUFFIX)(const float* x, const float* q, std::size_t n, std::size_t group,
                                         Bounds bounds_of) {
  if (group % NF == 0 || group >= n)
    return QS_CAT(sums_core_, QS_SUFFIX)<Sym>(x, q, n, group ? group : 1, bounds_of);
  ErrorSums t;
  for (std::size_t b = 0, g = 0; b < n; b += group, ++g) {
    const ErrorSums s = QS_CAT(sums_core_, QS_SUFFIX)<Sym>(x + b, q + b, std::min(group, n - b), group,
                                                           [&](std::size_t) { return bounds_of(g); });
    t.sx2 += s.sx2, t.se2 += s.se2, t.sae += s.sae, t.sc2 += s.sc2, t.sr2 += s.sr2;
    t.mae = std::max(t.mae, s.mae);
    t.count += s.count, t.clipped += s.clipped;
  }
  return t;
}
}  // namespace

ErrorSums QS_CAT(error_sums_groups_f32_, QS_SUFFIX)(const float* x, const float* q, std::size_t n, std::size_t group,
                                                    const double* bound) {
  return QS_CAT(group_sums_, QS_SUFFIX)<true>(
      x, q, n, group, [&](std::size_t g) { return std::pair<double, double>{-bound[g], bound[g]}; });
}

ErrorSums QS_CAT(error_sums_ranges_f32_, QS_SUFFIX)(const float* x, const float* q, std::size_t n, std::size_t group,
                                                    const double* lo, const double* hi) {
  return QS_CAT(group_sums_, QS_SUFFIX)<false>(x, q, n, group,
                                               [&](std::size_t g) { return std::pair<double, double>{lo[g], hi[g]}; });
}

}  // namespace qs::detail
