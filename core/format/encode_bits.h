// One element of the bit-level encoder of encode_simd_impl.h, written as scalar host/device code so
// that the CUDA kernels (core/cuda/fake_quant.cu) run exactly the same algorithm as the CPU paths.
// Exercise: tests/tst_encode_simd.cpp (encode_bits vs encode_ref), `quantscope-cli selftest --backend cuda`.
#pragma once

#include <cstdint>
#include <cstring>

#include "format/encode_simd.h"
#include "format/rng.h"

namespace qs {

struct BitsCounts {
  uint32_t overflow = 0, underflow = 0, nan = 0;
};

QS_HD float bits_to_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
QS_HD uint32_t float_to_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

// y = x / scale (when scale != 1) is encoded; `value` receives decode(code) * scale.
QS_HD void encode_bits(const KernelParams& p, float x, uint32_t rnd, uint32_t& code_out, float& value_out,
                       BitsCounts& cnt) {
  // NaN keeps its own sign through the scaling: GPUs return a canonical (positive) NaN from x / s.
  const float y = (p.scale != 1.0f && x == x) ? x / p.scale : x;
  const uint32_t u = float_to_bits(y);
  const bool neg = (u >> 31) != 0;
  uint32_t a = u & 0x7fffffffu;
  const bool isnan = a > 0x7f800000u;
  const bool isinf = a == 0x7f800000u;
  const bool nzero = a != 0u;
  const bool negnz = !p.is_signed && neg && nzero && !isnan;
  bool clipped = false;
  if (p.saturate && a > p.max_bits && !isnan && !negnz) {
    clipped = a >= p.ovf_bits;
    a = p.max_bits;
  }
  // |y| = m * 2^(e - 23), m in [2^23, 2^24); float32 subnormals normalised by an exact conversion.
  int32_t e;
  uint32_t m;
  if (a < 0x00800000u) {
    const uint32_t ab = float_to_bits(static_cast<float>(static_cast<int32_t>(a)));
    e = int32_t(ab >> 23) - (127 + 149);
    m = (ab & 0x007fffffu) | 0x00800000u;
  } else {
    e = int32_t(a >> 23) - 127;
    m = (a & 0x007fffffu) | 0x00800000u;
  }
  if (!nzero) m = 0;
  const int32_t ee = p.fixed ? p.emin : (e > p.emin ? e : p.emin);
  int32_t s = (23 - p.M) + ee - e;
  bool big_fixed = false;
  if (p.fixed) {
    big_fixed = s < 1;
    if (s < 1) s = 1;
  }
  const uint32_t sc = uint32_t(s < 31 ? s : 31);
  uint32_t r;
  if (!p.stochastic) {
    const uint32_t half = 1u << (sc - 1u);
    const uint32_t bias = p.rmode == 0 ? ((m >> sc) & 1u) + half - 1u : (p.rmode == 1 ? half : 0u);
    r = (m + bias) >> sc;
  } else {
    const uint32_t hi = m >> sc;
    const uint32_t low = m - (hi << sc);
    const uint32_t thr = s <= 32 ? (low << uint32_t(32 - s)) : (m >> uint32_t((s - 32) < 31 ? s - 32 : 31));
    r = hi + (thr > rnd ? 1u : 0u);
  }
  const int32_t q = ee - p.M;
  const uint32_t p2 = q >= -126 ? uint32_t(q + 127) << 23 : 1u << uint32_t(q + 149 < 31 ? q + 149 : 31);
  float v = static_cast<float>(static_cast<int32_t>(r)) * bits_to_float(p2);
  const bool zr = r == 0u;
  uint32_t mag;
  if (p.no_zero) {
    const int32_t t = ((ee - p.emin) << p.M) + int32_t(r) - (1 << p.M);
    mag = uint32_t(t > 0 ? t : 0);
    if (zr) v = p.min_value;
  } else if (p.fixed) {
    mag = r;
  } else {
    mag = (uint32_t(ee - p.emin) << uint32_t(p.M)) + r;
  }
  const bool ovr = ((v > p.max_finite) || big_fixed) && !isnan && !negnz;
  if (ovr) {
    mag = p.overflow_code;
    v = p.overflow_value;
  }
  const bool counted_ovr = ovr && !(p.has_inf && isinf);
  const bool signflag = p.is_signed && neg && (p.has_neg_zero || mag != 0u);
  uint32_t code;
  if (p.is_int) code = signflag ? ((0u - mag) & p.code_mask) : mag;
  else code = mag | (signflag ? p.sign_bit : 0u);
  v = bits_to_float(float_to_bits(v) | (signflag ? 0x80000000u : 0u));
  const float qnan = bits_to_float(0x7fc00000u);
  if (!p.is_signed && negnz) {
    const bool to_nan = p.no_zero || (!p.saturate && p.has_nan);
    code = to_nan ? p.nan_code : 0u;
    v = to_nan ? qnan : 0.0f;
  }
  if (p.no_zero && !nzero) {
    code = p.nan_code;
    v = qnan;
  }
  if (isnan) {
    code = p.has_nan ? (p.nan_code | (p.nan_signed && neg ? p.sign_bit : 0u)) : 0u;
    v = p.has_nan ? qnan : 0.0f;
  }
  cnt.overflow += (clipped || counted_ovr || negnz) ? 1u : 0u;
  cnt.underflow += (!p.no_zero && zr && nzero && !isnan && !ovr && !negnz) ? 1u : 0u;
  cnt.nan += isnan ? 1u : 0u;
  code_out = code;
  value_out = p.scale != 1.0f ? v * p.scale : v;
}

// The fast path of encode_simd_impl.h for one element (plain formats, values only): returns false
// when the element needs encode_bits (NaN, inf, ieee overflow, a stochastic subnormal).
QS_HD bool fast_bits(const KernelParams& p, float x, uint32_t rnd, float& value_out, BitsCounts& cnt) {
  const float y = p.scale != 1.0f ? x / p.scale : x;
  const uint32_t u = float_to_bits(y);
  const uint32_t sign = u & 0x80000000u;
  uint32_t a = u & 0x7fffffffu;
  if (a >= 0x7f800000u) return false;
  bool clipped = false;
  if (p.saturate && a > p.max_bits) {
    clipped = a >= p.ovf_bits;
    a = p.max_bits;
  }
  const uint32_t s0 = 23u - uint32_t(p.M);
  const uint32_t keep = ~((1u << s0) - 1u);
  const bool sub = a < p.min_normal_bits;
  float v;
  if (!p.stochastic) {
    if (sub) {
      // The magic-number addition rounds ties to even; other roundings take encode_bits.
      if (p.rmode != 0 && a != 0u) return false;
      v = (bits_to_float(a) + p.magic) - p.magic;
    } else {
      const uint32_t half = 1u << (s0 - 1u);
      const uint32_t add = p.rmode == 0 ? ((a >> s0) & 1u) + half - 1u : (p.rmode == 1 ? half : 0u);
      v = bits_to_float((a + add) & keep);
    }
  } else {
    if (sub && a != 0u) return false;
    v = sub ? 0.0f : bits_to_float((a + (~rnd >> (32u - s0))) & keep);
  }
  const uint32_t vb = float_to_bits(v);
  if (!p.saturate && vb > p.max_bits) return false;
  const uint32_t sgn = p.has_neg_zero ? sign : (vb != 0u ? sign : 0u);
  v = bits_to_float(vb | sgn);
  cnt.overflow += clipped ? 1u : 0u;
  cnt.underflow += (vb == 0u && a != 0u) ? 1u : 0u;
  value_out = p.scale != 1.0f ? v * p.scale : v;
  return true;
}

// The elements of fake_quant.cu's values-only kernels, stochastic and nearest (plain formats, p.fast_ok, 1 <= 23 - M <= 22,
// 2^emin <= max finite < float32's inf): y = x / scale (Dbl: RN32(x * d) in double with d = RN64(1 / scale),
// equal to RN32(x / scale) for every y it takes, see fake_quant.cu), rounded as fast_bits' stochastic branch does,
// (2^(23-M) - 1) - (rnd >> (9 + M)) added under the kept bits with y's sign bit in place: no carry reaches it while
// |y| <= max finite. It takes y when |y| lies in [2^emin, max finite] (the result stays in that range: both ends
// are on the grid) or when x is a zero the format has (the kept bits of the sum are then y's); anything else
// (NaN, inf, above max finite, saturated or not, a nonzero below 2^emin, -0 without a negative zero) sets `bad`,
// and the caller redoes it with encode_bits, which also counts it. For what it takes, encode_bits gives the same
// value and counts nothing (selftest.cpp, check_bits_against_ref), so it needs no counts and no overflow mode:
// one range test on twice y's magnitude bits and one zero test on x's bits replace
// fast_bits' NaN / inf, saturation, subnormal and overflow tests. near_lean is the same with round to nearest, ties
// to even (bit s0 = 23 - M of y plus 2^(s0-1) - 1 added under the kept bits), as near_one in fake_quant.cu.
struct LeanConsts {
  uint32_t addc, keep;  // 2^(23-M) - 1 and its complement
  uint32_t lo2, span2;  // 2 * bits(2^emin), 2 * (bits(max finite) - bits(2^emin)): in range iff 2a - lo2 <= span2
  uint32_t zmask;       // x is a zero the format has iff (bits(x) & zmask) == 0
  uint32_t s0;          // 23 - M
};
QS_HD LeanConsts lean_consts(const KernelParams& p) {
  LeanConsts k;
  k.addc = (1u << (23u - uint32_t(p.M))) - 1u;
  k.keep = ~k.addc;
  k.lo2 = p.min_normal_bits << 1;
  k.span2 = (p.max_bits - p.min_normal_bits) << 1;
  k.zmask = p.has_neg_zero ? 0x7fffffffu : 0xffffffffu;
  k.s0 = 23u - uint32_t(p.M);
  return k;
}
// y's bits, and whether the lean elements refuse x.
template <bool Scaled, bool Dbl>
QS_HD uint32_t lean_y(const KernelParams& p, const LeanConsts& k, double d, float x, bool& bad) {
  const float y = Scaled ? (Dbl ? static_cast<float>(static_cast<double>(x) * d) : x / p.scale) : x;
  const uint32_t u = float_to_bits(y);
  bad = (u << 1) - k.lo2 > k.span2 && (float_to_bits(x) & k.zmask) != 0u;
  return u;
}
// rs = rnd >> (9 + M).
template <bool Scaled, bool Dbl>
QS_HD float stoch_lean(const KernelParams& p, const LeanConsts& k, double d, float x, uint32_t rs, bool& bad) {
  const uint32_t u = lean_y<Scaled, Dbl>(p, k, d, x, bad);
  const float v = bits_to_float((u + (k.addc - rs)) & k.keep);
  return Scaled ? v * p.scale : v;
}
template <bool Scaled, bool Dbl>
QS_HD float near_lean(const KernelParams& p, const LeanConsts& k, double d, float x, bool& bad) {
  const uint32_t u = lean_y<Scaled, Dbl>(p, k, d, x, bad);
  const float v = bits_to_float((u + ((u >> k.s0) & 1u) + (k.addc >> 1)) & k.keep);
  return Scaled ? v * p.scale : v;
}

// Whether stoch_lean and near_lean apply to p (the rounding aside).
QS_HD bool lean_ok(const KernelParams& p) {
  return p.fast_ok && p.M >= 1 && p.M <= 22 && p.max_bits < 0x7f800000u && p.max_bits >= p.min_normal_bits;
}

}  // namespace qs
