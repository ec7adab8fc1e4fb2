// The reductions of reduce_simd.h written once with vector extensions; reduce_simd_{generic,avx2,
// avx512}.cpp define QS_LANES (float lanes) and QS_SUFFIX and include this file. Lane order is fixed,
// so results are deterministic for a given level (sums may differ between levels in the last bits).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

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

ErrorSums QS_CAT(error_sums_f32_, QS_SUFFIX)(const float* x, const float* q, std::size_t n, double clip_lo,
                                             double clip_hi) {
  const vd zero = {};
  vd sx2 = zero, se2 = zero, sae = zero, sc2 = zero, sr2 = zero, mae = zero;
  vl cnt = {}, clipped = {};
  const vd hi = zero + clip_hi, lo = zero + clip_lo, big = zero + double(FLT_MAX);
  std::size_t i = 0;
  for (; i + ND <= n; i += ND) {
    vhf xf, qf;
    std::memcpy(&xf, x + i, sizeof xf);
    std::memcpy(&qf, q + i, sizeof qf);
    vd xd = __builtin_convertvector(xf, vd), qd = __builtin_convertvector(qf, vd);
    const vl fin = (xd <= big) & (xd >= -big);
    xd = fin ? xd : zero;
    qd = fin ? qd : zero;
    const vd e = xd - qd;
    const vd ae = e < zero ? -e : e;
    sx2 += xd * xd;
    se2 += e * e;
    sae += ae;
    mae = ae > mae ? ae : mae;
    const vd cx = xd > hi ? hi : (xd < lo ? lo : xd);
    const vd ce = xd - cx, re = cx - qd;
    sc2 += ce * ce;
    sr2 += re * re;
    cnt -= fin;
    clipped -= (ce != zero);
  }
  ErrorSums s;
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

}  // namespace qs::detail
