// Internal to error_view.cpp: the per-element classification of the Error tab's fused pass, written
// once with vector extensions (error_view_simd_impl.h) and compiled per ISA like the reductions.
// Exercise: tests/tst_error_view.cpp (every compiled level against the scalar definition).
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/encode_simd.h"

namespace qs::detail {

// Codes of one element. Value: 0..bins-1, then bins + kBelow / kAbove / kNan / kPosInf / kNegInf.
// Error: the float32 exponent field of the magnitude (0 = subnormal, 1..254 = normal), or kNonFinite /
// kZero / kUndefined / kSkip (x not finite); clipped elements (x outside [low(), high()]) get + kErrCodes.
// (Plain constants, not an enum: vector extensions only mix with int scalars.)
inline constexpr int32_t kBelow = 0, kAbove = 1, kNan = 2, kPosInf = 3, kNegInf = 4, kValueExtra = 5;
inline constexpr int32_t kNonFinite = 255, kZero = 256, kUndefined = 257, kSkip = 258, kErrCodes = 259;

struct ErrorCodeParams {
  double lo, hi, inv;  // value bin = min(trunc((x - lo) * inv), bins - 1) for lo <= x <= hi
  double bound;        // the group's clip bound: x is clipped when |x| > bound ...
  int32_t bins;
  bool interval = false;        // ... or, when set, when x lies outside [clip_lo, clip_hi] (ggml's blocks,
  double clip_lo = 0, clip_hi = 0;  // whose codes cover an interval that is not symmetric about 0)
  // Groups (when set, instead of bound): element i of the call is clipped beyond bounds[i / group]; the
  // kernels take any group >= 1 (fastest where it is a multiple of their lanes; error_view.cpp passes 8, 16,
  // ..., 512).
  const double* bounds = nullptr;
  std::size_t group = 0;
  // Groups with intervals (ggml's sub-blocks; when set, instead of bounds): element i is clipped outside
  // [group_lo[i / group], group_hi[i / group]].
  const double* group_lo = nullptr;
  const double* group_hi = nullptr;
  double low() const { return interval ? clip_lo : -bound; }
  double high() const { return interval ? clip_hi : bound; }
};

void error_codes_generic(const float* x, const float* q, std::size_t n, const ErrorCodeParams& p, int32_t* vcode,
                         int32_t* acode, int32_t* rcode);
void error_codes_avx2(const float* x, const float* q, std::size_t n, const ErrorCodeParams& p, int32_t* vcode,
                      int32_t* acode, int32_t* rcode);
void error_codes_avx512(const float* x, const float* q, std::size_t n, const ErrorCodeParams& p, int32_t* vcode,
                        int32_t* acode, int32_t* rcode);

// Dispatch by level (the ones this build and CPU have; see available_simd_levels()).
void error_codes(const float* x, const float* q, std::size_t n, const ErrorCodeParams& p, int32_t* vcode,
                 int32_t* acode, int32_t* rcode, SimdLevel level = best_simd_level());

// The definition, one element at a time (the tails of the vector loops, and the tests' oracle).
inline void error_code_one(float xf, float qf, const ErrorCodeParams& p, int32_t& v, int32_t& a, int32_t& r) {
  uint32_t xb, eb, rb;
  __builtin_memcpy(&xb, &xf, 4);
  xb &= 0x7fffffffu;
  if (xb >= 0x7f800000u) {
    v = p.bins + (xb > 0x7f800000u ? kNan : xf > 0 ? kPosInf : kNegInf);
    a = r = kSkip;
    return;
  }
  float ax;
  __builtin_memcpy(&ax, &xb, 4);
  const double xd = xf;
  if (xd < p.lo) v = p.bins + kBelow;
  else if (xd > p.hi) v = p.bins + kAbove;
  else {
    const double t = (xd - p.lo) * p.inv;
    v = t > double(p.bins - 1) ? p.bins - 1 : int32_t(t);
  }
  const float e = __builtin_fabsf(xf - qf);
  __builtin_memcpy(&eb, &e, 4);
  const float ratio = e / ax;
  __builtin_memcpy(&rb, &ratio, 4);
  a = eb == 0 ? int32_t(kZero) : int32_t(eb >> 23);
  if (eb == 0) r = ax == 0 ? kUndefined : kZero;
  else if (a == kNonFinite) r = kNonFinite;
  else if (ax == 0) r = kUndefined;
  else r = int32_t(((rb >> 23) & 0xff) > 254 ? 254 : (rb >> 23) & 0xff);  // a ratio past FLT_MAX: top bin
  if (xd > p.high() || xd < p.low()) a += kErrCodes, r += kErrCodes;
}

}  // namespace qs::detail
