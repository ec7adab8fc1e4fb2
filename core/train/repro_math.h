// The training lab's transcendental functions and its softmax cross-entropy row, written once for the CPU and
// the CUDA kernels (QS_HD), so that both compute the same bits: std::exp / std::log and CUDA's exp / log are
// each accurate to about an ulp but not the same function, and one differing last bit of a softmax gradient
// was enough for a whole GPU run to part from the CPU's (issue 18: identical for 5 to 39 steps, then not).
//
// Only operations that IEEE 754 rounds exactly once are used: +, -, *, / and fma written out (never a*b+c,
// which GCC and nvcc may or may not contract into an fma depending on flags and instruction set). Accuracy:
// within 2 ulp of the correctly rounded result on the whole double range (tests/core/tst_repro.cpp checks it
// against std::exp / std::log); results below 2^-1021 flush to 0, which no float derived from them can see.
// Exercise: tests/core/tst_repro.cpp; used by train/mlp.cpp and cuda/train_cuda.cu.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "format/rng.h"  // QS_HD

namespace qs {

namespace repro_detail {

QS_HD double from_bits(uint64_t u) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(u));
#else
  double d;
  std::memcpy(&d, &u, sizeof d);
  return d;
#endif
}
QS_HD uint64_t to_bits(double d) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint64_t>(__double_as_longlong(d));
#else
  uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
#endif
}

// ln 2 split so that k * kLn2Hi is exact for |k| < 2^11 (kLn2Hi has 32 significant bits).
constexpr double kLn2Hi = 0x1.62e42feep-1;
constexpr double kLn2Lo = 0x1.a39ef35793c76p-33;
constexpr double kLog2e = 0x1.71547652b82fep0;
constexpr double kShift = 0x1.8p52;  // adding it rounds a double of magnitude < 2^51 to an integer

}  // namespace repro_detail

// e^x. NaN stays NaN; x > 709.7 gives +inf; x < -708 gives 0.
QS_HD double repro_exp(double x) {
  using namespace repro_detail;
  if (x != x) return x;
  if (x > 709.78) return HUGE_VAL;
  if (x < -708.0) return 0.0;
  // x = k ln2 + r, |r| <= ln2 / 2 (a little more through kd's rounding).
  const double t = fma(x, kLog2e, kShift);
  const double kd = t - kShift;
  double r = fma(-kd, kLn2Hi, x);
  r = fma(-kd, kLn2Lo, r);
  // e^r by its Taylor series to r^13 / 13! (the next term is below 2^-57 of the sum for |r| <= 0.35).
  double p = 1.0 / 6227020800.0;                        // 1/13!
  p = fma(p, r, 1.0 / 479001600.0);                     // 1/12!
  p = fma(p, r, 1.0 / 39916800.0);
  p = fma(p, r, 1.0 / 3628800.0);
  p = fma(p, r, 1.0 / 362880.0);
  p = fma(p, r, 1.0 / 40320.0);
  p = fma(p, r, 1.0 / 5040.0);
  p = fma(p, r, 1.0 / 720.0);
  p = fma(p, r, 1.0 / 120.0);
  p = fma(p, r, 1.0 / 24.0);
  p = fma(p, r, 1.0 / 6.0);
  p = fma(p, r, 0.5);
  p = fma(p, r, 1.0);
  p = fma(p, r, 1.0);
  const int k = int(kd);  // in [-1022, 1024]
  // p * 2^k in two exact steps (2^k alone overflows at k = 1024, where p < 1).
  const int k1 = k / 2, k2 = k - k1;
  p *= from_bits(uint64_t(int64_t(k1) + 1023) << 52);
  return p * from_bits(uint64_t(int64_t(k2) + 1023) << 52);
}

// The natural logarithm. NaN and x < 0 give NaN, 0 gives -inf, +inf gives +inf.
QS_HD double repro_log(double x) {
  using namespace repro_detail;
  if (!(x > 0.0)) return x == 0.0 ? -HUGE_VAL : (x - x) / (x - x);  // NaN for x < 0 and NaN
  if (x == HUGE_VAL) return x;
  int e = 0;
  if (x < 0x1p-1022) {  // subnormal: make it normal, exactly
    x *= 0x1p54;
    e = -54;
  }
  const uint64_t u = to_bits(x);
  e += int((u >> 52) & 0x7ff) - 1023;
  double m = from_bits((u & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL);  // [1, 2)
  if (m > 1.4142135623730951) {  // keep m in [sqrt(1/2), sqrt(2)]
    m *= 0.5;
    e += 1;
  }
  // log m = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.1716; the series in z = s^2 to z^11.
  const double f = m - 1.0;  // exact (Sterbenz)
  const double s = f / (2.0 + f);
  const double z = s * s;
  double q = 1.0 / 25.0;
  q = fma(q, z, 1.0 / 23.0);
  q = fma(q, z, 1.0 / 21.0);
  q = fma(q, z, 1.0 / 19.0);
  q = fma(q, z, 1.0 / 17.0);
  q = fma(q, z, 1.0 / 15.0);
  q = fma(q, z, 1.0 / 13.0);
  q = fma(q, z, 1.0 / 11.0);
  q = fma(q, z, 1.0 / 9.0);
  q = fma(q, z, 1.0 / 7.0);
  q = fma(q, z, 1.0 / 5.0);
  q = fma(q, z, 1.0 / 3.0);
  const double sz = s * z;
  const double log_m = 2.0 * fma(sz, q, s);
  const double ed = double(e);
  return fma(ed, kLn2Hi, fma(ed, kLn2Lo, log_m));
}

// Softmax cross-entropy of one row of C logits against `label` (0 <= label < C): returns the row's loss
// log(sum e^z) - z[label] in double; `hit` says whether the first largest logit is the label's; when dz is
// given, dz[j] = float(p_j - [j == label]) * inv_batch. The CPU lab (Mlp::train_batch) and the GPU's kernel
// both call this, row by row.
QS_HD double softmax_ce_row(const float* z, int C, int label, float inv_batch, float* dz, bool* hit) {
  int arg = 0;
  float zmax = z[0];
  for (int j = 1; j < C; ++j)
    if (z[j] > zmax) {
      zmax = z[j];
      arg = j;
    }
  double sum = 0;
  for (int j = 0; j < C; ++j) sum += repro_exp(double(z[j]) - double(zmax));
  const double lse = double(zmax) + repro_log(sum);
  *hit = arg == label;
  if (dz)
    for (int j = 0; j < C; ++j) {
      const double p = repro_exp(double(z[j]) - lse);
      dz[j] = float(p - (j == label ? 1.0 : 0.0)) * inv_batch;
    }
  return lse - double(z[label]);
}

}  // namespace qs
