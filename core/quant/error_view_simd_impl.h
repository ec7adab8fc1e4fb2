// error_codes of error_view_simd.h written once with vector extensions; error_view_simd_{generic,avx2,
// avx512}.cpp define QS_LANES (float lanes) and QS_SUFFIX and include this file.
// Every decision is error_code_one's, made on floats at the full vector width: the clip test and the value
// range's ends compare x with the float ends of the double intervals (a float x lies beyond a double end d
// exactly when it lies beyond the nearest float on d's inner side), and the value bin is trunc((x - lo) * inv)
// computed in float with a proven margin m: where [t - m, t + m] holds no integer, the double's bin is the
// float's; a step where some in-range lane is that close to a bin edge (a few per thousand) takes the double
// formula, as do all steps when the range makes m large (see value_margin).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "quant/error_view_simd.h"

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#define QS_EV_CAT2(a, b) a##b
#define QS_EV_CAT(a, b) QS_EV_CAT2(a, b)

namespace {
constexpr int NF = QS_LANES, ND = QS_LANES / 2;
typedef float vf __attribute__((vector_size(NF * 4)));
typedef int32_t vi __attribute__((vector_size(NF * 4)));
typedef float vhf __attribute__((vector_size(ND * 4)));
typedef int32_t vhi __attribute__((vector_size(ND * 4)));
typedef double vd __attribute__((vector_size(ND * 8)));
typedef int64_t vl __attribute__((vector_size(ND * 8)));

// Whether any lane of a mask is set, as one test instruction where the ISA has it.
inline bool any_lane(vi m) {
#if QS_LANES == 16 && defined(__AVX512F__)
  __m512i v;
  std::memcpy(&v, &m, sizeof v);
  return _mm512_test_epi32_mask(v, v) != 0;
#elif QS_LANES == 8 && defined(__AVX__)
  __m256i v;
  std::memcpy(&v, &m, sizeof v);
  return !_mm256_testz_si256(v, v);
#elif QS_LANES == 4 && defined(__SSE2__)
  __m128i v;
  std::memcpy(&v, &m, sizeof v);
  return _mm_movemask_epi8(v) != 0;
#else
  bool any = false;
  for (int l = 0; l < NF; ++l) any |= m[l] != 0;
  return any;
#endif
}

// float_interval of reduce_simd.h, inline and without branches (it runs at every group, and which way the
// rounding went is data): for a float v, v < lo exactly when v < lo_f, and v > hi exactly when v > hi_f.
inline void float_ends(double lo, double hi, float& lo_f, float& hi_f) {
  // Stepping a float's bits by -1 or +1 by its sign moves it down or up in magnitude; lo_f is not NaN or +inf
  // where it steps up (then double(lo_f) < lo), and -0.0 does not occur there (lo > -0.0 rounds to +0.0 or
  // above); likewise for hi_f.
  float l = static_cast<float>(lo), h = static_cast<float>(hi);
  uint32_t lb, hb;
  std::memcpy(&lb, &l, 4);
  std::memcpy(&hb, &h, 4);
  const uint32_t lup = double(l) < lo, hdown = double(h) > hi;
  lb += lup * (1u - 2u * (lb >> 31));   // the next float up
  hb -= hdown * (1u - 2u * (hb >> 31));  // the next float down
  std::memcpy(&lo_f, &lb, 4);
  std::memcpy(&hi_f, &hb, 4);
}
}  // namespace

namespace qs::detail {

void QS_EV_CAT(error_codes_, QS_SUFFIX)(const float* x, const float* q, std::size_t n, const ErrorCodeParams& p,
                                        int32_t* vcode, int32_t* acode, int32_t* rcode) {
  const vi zi = {};
  const vf zf = {};
  float lo_f, hi_f;  // the value range's float ends
  float_ends(p.lo, p.hi, lo_f, hi_f);
  const vf lov = zf + lo_f, hiv = zf + hi_f;
  const vi bins = zi + p.bins, top = zi + (p.bins - 1);
  // The value bin in float: t = fl(fl(x - lo_c) * inv_c) with lo_c, inv_c the floats nearest p.lo, p.inv. For
  // lo <= x <= hi, with A = |lo| * inv and T = (x - lo) * inv <= bins: |lo_c - lo| <= 2^-24 |lo| (+ 2^-150 below
  // FLT_MIN), the subtraction and the product each add 2^-24 relative, inv_c 2^-24 relative, so
  // |t - T| <= 2^-24 (A + 3 T) (1 + 2^-20) + 2^-149 (inv + 1); t -+ m rounds by at most 2^-24 (T + 1); the
  // double t_d = (double(x) - lo) * inv is within 2^-51 T of T. With B = max(bins, (hi - lo) * inv) >= T,
  // m = 2^-21 (A + B + 1) + 2^-140 (inv + 1) covers the sum twice over (inv >= FLT_MIN: inv_c is normal). Then t_d lies in [fl(t - m), fl(t + m)] and trunc agrees at both ends exactly when it agrees on
  // t_d (t_d >= 0, and fl(t - m) > -1 since t > -m). Ranges whose ends are near FLT_MAX (x - lo_c could
  // overflow) or whose m is not small take the double formula throughout.
  const float lo_c = static_cast<float>(p.lo), inv_c = static_cast<float>(p.inv);
  const double m = std::ldexp(std::fabs(p.lo) * p.inv + std::max(double(p.bins), (p.hi - p.lo) * p.inv) + 1.0, -21) +
                   std::ldexp(p.inv + 1.0, -140);
  const bool est = std::fabs(p.lo) <= FLT_MAX / 4 && std::fabs(p.hi) <= FLT_MAX / 4 && p.inv >= FLT_MIN &&
                   p.inv <= FLT_MAX / 4 && m < 0.125;
  float m_f = static_cast<float>(m);
  if (double(m_f) < m) m_f = std::nextafter(m_f, INFINITY);
  const vf loc = zf + lo_c, invc = zf + inv_c, mv = zf + m_f;
  const double top_d = double(p.bins - 1);

  // The clip ends as floats; per group when there are groups (a group holds whole steps, or whole groups
  // fill a step: group < NF happens at the widest level).
  float clo_s, chi_s;
  float_ends(p.low(), p.high(), clo_s, chi_s);
  vf clo = zf + clo_s, chi = zf + chi_s;
  const bool grouped = p.bounds || p.group_lo;
  auto group_ends = [&](std::size_t g, float& l, float& h) {
    if (p.group_lo) float_ends(p.group_lo[g], p.group_hi[g], l, h);
    else float_ends(-p.bounds[g], p.bounds[g], l, h);
  };
  std::size_t i = 0, next = grouped ? 0 : ~std::size_t(0);
  for (; i + NF <= n; i += NF) {
    if (i >= next) {
      if (p.group % NF == 0) {
        const std::size_t g = i / p.group;
        float l, h;
        group_ends(g, l, h);
        clo = zf + l;
        chi = zf + h;
        next = (g + 1) * p.group;
      } else {  // groups of 8 at 16 lanes (or any other size): lane by lane
        std::size_t last = ~std::size_t(0);
        float l = 0, h = 0;
        for (int j = 0; j < NF; ++j) {
          const std::size_t g = (i + std::size_t(j)) / p.group;
          if (g != last) group_ends(g, l, h), last = g;
          clo[j] = l;
          chi[j] = h;
        }
        next = i + NF;
      }
    }
    vf xf, qf;
    std::memcpy(&xf, x + i, sizeof xf);
    std::memcpy(&qf, q + i, sizeof qf);
    vi xbits;
    std::memcpy(&xbits, &xf, sizeof xbits);
    const vi xb = xbits & 0x7fffffff;
    const vi finite = xb < 0x7f800000;
    vf ax;
    std::memcpy(&ax, &xb, sizeof ax);

    // Value bin.
    const vi below = xf < lov, above = xf > hiv;  // false for NaN
    const vi inside = finite & ~below & ~above;
    vi v = zi;
    bool exact = est;
    if (est) {
      const vf t = (xf - loc) * invc;
      const vf tl = t - mv, th = t + mv;
      const vf big = zf + float(p.bins + 1);  // keeps the conversions defined in the lanes that are not inside
      const vf tlc = tl < big ? (tl > -big ? tl : -big) : big, thc = th < big ? (th > -big ? th : -big) : big;
      const vi kl = __builtin_convertvector(tlc, vi), kh = __builtin_convertvector(thc, vi);
      exact = !any_lane(inside & (kl != kh));
      v = kl > top ? top : kl;
    }
    if (!exact) {  // the double formula, half a vector at a time (non-finite x replaced by lo)
      int32_t vs[NF];
      for (int h = 0; h < 2; ++h) {
        vhf xh;
        std::memcpy(&xh, reinterpret_cast<const char*>(&xf) + h * sizeof xh, sizeof xh);
        vhi fh;
        std::memcpy(&fh, reinterpret_cast<const char*>(&finite) + h * sizeof fh, sizeof fh);
        const vd xd0 = __builtin_convertvector(xh, vd);
        const vd xd = __builtin_convertvector(fh, vl) ? xd0 : vd{} + p.lo;
        const vd t = (xd - p.lo) * p.inv;
        const vd tc = t > top_d ? vd{} + top_d : (t < 0.0 ? vd{} : t);
        const vhi vh = __builtin_convertvector(tc, vhi);
        std::memcpy(vs + h * ND, &vh, sizeof vh);
      }
      std::memcpy(&v, vs, sizeof v);
    }
    v = below ? bins + kBelow : v;
    v = above ? bins + kAbove : v;
    const vi special = xb > 0x7f800000 ? bins + kNan : (xbits < 0 ? bins + kNegInf : bins + kPosInf);
    v = finite ? v : special;

    // Error codes.
    vf e = xf - qf;
    vi ebits;
    std::memcpy(&ebits, &e, sizeof ebits);
    ebits &= 0x7fffffff;
    std::memcpy(&e, &ebits, sizeof e);
    const vf ratio = e / ax;
    vi rbits;
    std::memcpy(&rbits, &ratio, sizeof rbits);
    const vi rexp = (rbits >> 23) & 0xff;
    const vi eexp = ebits >> 23;
    const vi ezero = ebits == 0, xzero = ax == 0;
    vi a = ezero ? zi + kZero : eexp;
    vi r = rexp > 254 ? zi + 254 : rexp;
    r = xzero ? zi + kUndefined : r;
    r = eexp == kNonFinite ? zi + kNonFinite : r;
    r = ezero ? (xzero ? zi + kUndefined : zi + kZero) : r;
    const vi clip = ((xf > chi) | (xf < clo)) & kErrCodes;
    a = finite ? a + clip : zi + kSkip;
    r = finite ? r + clip : zi + kSkip;
    std::memcpy(vcode + i, &v, sizeof v);
    std::memcpy(acode + i, &a, sizeof a);
    std::memcpy(rcode + i, &r, sizeof r);
  }
  for (; i < n; ++i) {
    if (p.group_lo) {
      ErrorCodeParams one = p;
      one.group_lo = one.group_hi = nullptr;
      one.interval = true;
      one.clip_lo = p.group_lo[i / p.group];
      one.clip_hi = p.group_hi[i / p.group];
      error_code_one(x[i], q[i], one, vcode[i], acode[i], rcode[i]);
    } else if (!p.bounds) {
      error_code_one(x[i], q[i], p, vcode[i], acode[i], rcode[i]);
    } else {
      ErrorCodeParams one = p;
      one.bounds = nullptr;
      one.interval = false;
      one.bound = p.bounds[i / p.group];
      error_code_one(x[i], q[i], one, vcode[i], acode[i], rcode[i]);
    }
  }
}

}  // namespace qs::detail
