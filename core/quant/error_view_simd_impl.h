// error_codes of error_view_simd.h written once with vector extensions; error_view_simd_{generic,avx2,
// avx512}.cpp define QS_LANES (float lanes) and QS_SUFFIX and include this file. Each vector step
// handles QS_LANES / 2 elements, because the value bin and the clip test are decided in double.
#include <cfloat>
#include <cstring>

#include "quant/error_view_simd.h"

#define QS_EV_CAT2(a, b) a##b
#define QS_EV_CAT(a, b) QS_EV_CAT2(a, b)

namespace {
constexpr int ND = QS_LANES / 2;
typedef float vhf __attribute__((vector_size(ND * 4)));
typedef int32_t vhi __attribute__((vector_size(ND * 4)));
typedef double vd __attribute__((vector_size(ND * 8)));
typedef int64_t vl __attribute__((vector_size(ND * 8)));
}  // namespace

namespace qs::detail {

void QS_EV_CAT(error_codes_, QS_SUFFIX)(const float* x, const float* q, std::size_t n, const ErrorCodeParams& p,
                                        int32_t* vcode, int32_t* acode, int32_t* rcode) {
  const vhi zi = {};
  const vd zd = {};
  const vd lo = zd + p.lo, hi = zd + p.hi, inv = zd + p.inv, top = zd + double(p.bins - 1);
  vd clo = zd + p.low(), chi = zd + p.high();
  const vhi bins = zi + p.bins;
  std::size_t i = 0, next = p.bounds || p.group_lo ? 0 : ~std::size_t(0);
  for (; i + ND <= n; i += ND) {
    if (i >= next) {  // the next group's bound or interval (groups hold whole steps)
      const std::size_t g = i / p.group;
      if (p.group_lo) {
        clo = zd + p.group_lo[g];
        chi = zd + p.group_hi[g];
      } else {
        clo = zd - p.bounds[g];
        chi = zd + p.bounds[g];
      }
      next = (g + 1) * p.group;
    }
    vhf xf, qf;
    std::memcpy(&xf, x + i, sizeof xf);
    std::memcpy(&qf, q + i, sizeof qf);
    vhi xbits;
    std::memcpy(&xbits, &xf, sizeof xbits);
    const vhi xb = xbits & 0x7fffffff;
    const vhi finite = xb < 0x7f800000;
    vhf ax;
    std::memcpy(&ax, &xb, sizeof ax);

    // Value bin (non-finite x are replaced by lo so that nothing undefined reaches the conversion).
    const vd xd0 = __builtin_convertvector(xf, vd);
    const vl fin_l = __builtin_convertvector(finite, vl);
    const vd xd = fin_l ? xd0 : lo;
    const vd t = (xd - lo) * inv;
    const vd tc = t > top ? top : (t < zd ? zd : t);
    vhi v = __builtin_convertvector(tc, vhi);
    const vhi below = __builtin_convertvector(xd < lo, vhi), above = __builtin_convertvector(xd > hi, vhi);
    v = below ? bins + kBelow : v;
    v = above ? bins + kAbove : v;
    const vhi special = xb > 0x7f800000 ? bins + kNan : (xbits < 0 ? bins + kNegInf : bins + kPosInf);
    v = finite ? v : special;

    // Error codes.
    vhf e = xf - qf;
    vhi ebits;
    std::memcpy(&ebits, &e, sizeof ebits);
    ebits &= 0x7fffffff;
    std::memcpy(&e, &ebits, sizeof e);
    const vhf ratio = e / ax;
    vhi rbits;
    std::memcpy(&rbits, &ratio, sizeof rbits);
    const vhi rexp = (rbits >> 23) & 0xff;
    const vhi eexp = ebits >> 23;
    const vhi ezero = ebits == 0, xzero = ax == 0;
    vhi a = ezero ? zi + kZero : eexp;
    vhi r = rexp > 254 ? zi + 254 : rexp;
    r = xzero ? zi + kUndefined : r;
    r = eexp == kNonFinite ? zi + kNonFinite : r;
    r = ezero ? (xzero ? zi + kUndefined : zi + kZero) : r;
    const vhi clip = __builtin_convertvector((xd > chi) | (xd < clo), vhi) & kErrCodes;
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
