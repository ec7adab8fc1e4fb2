// The vectorized encoder, written once with GCC/Clang vector extensions and compiled per target:
// encode_simd_{generic,avx2,avx512}.cpp define QS_LANES and QS_ENTRY, then include this file.
// Everything here has internal linkage so that no AVX-512 instruction leaks into a shared symbol.
//
// Algorithm (per lane, on float32 bits): split |y| into an exponent e and a 24-bit significand m,
// pick the quantum 2^q of the binade that holds |y| in the target format, shift m right by
// s = q - (e - 23) bits with round-to-nearest-even (bias trick) or stochastic rounding (compare
// the discarded bits with a counter-based random number), then rebuild the value r * 2^q and the
// code ((e - emin) << M) + r, whose carry flows into the exponent field by itself.
#include <cstring>

#include "format/encode_simd.h"
#include "format/rng.h"

#ifndef QS_LANES
#error "define QS_LANES before including encode_simd_impl.h"
#endif

namespace {

constexpr int N = QS_LANES;
typedef uint32_t vu __attribute__((vector_size(N * 4)));
typedef int32_t vi __attribute__((vector_size(N * 4)));
typedef float vf __attribute__((vector_size(N * 4)));
typedef uint8_t vu8 __attribute__((vector_size(N)));
typedef uint16_t vu16 __attribute__((vector_size(N * 2)));

inline vu splat_u(uint32_t x) { vu r; for (int i = 0; i < N; ++i) r[i] = x; return r; }
inline vi splat_i(int32_t x) { vi r; for (int i = 0; i < N; ++i) r[i] = x; return r; }
inline vf splat_f(float x) { vf r; for (int i = 0; i < N; ++i) r[i] = x; return r; }
inline vu as_u(vf x) { vu r; std::memcpy(&r, &x, sizeof r); return r; }
inline vf as_f(vu x) { vf r; std::memcpy(&r, &x, sizeof r); return r; }
inline vi vmax(vi a, vi b) { return a > b ? a : b; }
inline vi vmin(vi a, vi b) { return a < b ? a : b; }

inline vu hash32v(vu x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

struct Counters {
  vu ovf = splat_u(0), unf = splat_u(0), nan = splat_u(0);
};

template <bool Stoch, bool Scaled>
inline void encode_vec(const qs::KernelParams& p, vf x, vu rnd, Counters& cnt, vu& code_out,
                       vf& value_out) {
  const vi allz = splat_i(0);
  const vf y = Scaled ? x / splat_f(p.scale) : x;
  const vu u = as_u(y);
  const vi neg = (vi)u < allz;
  vu a = u & 0x7fffffffu;
  const vi isnan = a > 0x7f800000u;
  const vi isinf = a == 0x7f800000u;
  const vi nzero = a != 0u;
  const vi negnz = p.is_signed ? allz : (neg & nzero & ~isnan);
  vi clipped = allz;
  if (p.saturate) {
    clipped = (a > p.max_bits) & ~isnan & ~negnz;
    a = clipped ? splat_u(p.max_bits) : a;
  }

  // |y| = m * 2^(e - 23) with m in [2^23, 2^24); float32 subnormals are normalised via an exact
  // int -> float conversion (their value is a * 2^-149).
  const vi sub = a < 0x00800000u;
  const vu ab = as_u(__builtin_convertvector((vi)a, vf));
  const vi e = sub ? (vi)(ab >> 23) - (127 + 149) : (vi)(a >> 23) - 127;
  vu m = ((sub ? ab : a) & 0x007fffffu) | 0x00800000u;
  m = nzero ? m : splat_u(0);

  const vi emin = splat_i(p.emin);
  const vi ee = p.fixed ? emin : vmax(e, emin);
  vi s = (23 - p.M) + ee - e;  // bits to drop
  vi big_fixed = allz;
  if (p.fixed) {  // E = 0 grids: |y| >= 2^(emin + 23 - M) is far beyond the largest value
    big_fixed = s < 1;
    s = vmax(s, splat_i(1));
  }
  const vu sc = (vu)vmin(s, splat_i(31));
  vu r;
  if constexpr (!Stoch) {
    const vu bias = ((m >> sc) & 1u) + (1u << (sc - 1u)) - 1u;
    r = (m + bias) >> sc;
  } else {
    const vu hi = m >> sc;
    const vu low = m - (hi << sc);
    const vu thr_near = low << (vu)vmax(32 - s, allz);
    const vu thr_far = m >> (vu)vmin(vmax(s - 32, allz), splat_i(31));
    const vu thr = (s <= 32) ? thr_near : thr_far;
    r = hi + ((vu)(thr > rnd) & 1u);
  }

  const vi q = ee - p.M;
  const vu p2_norm = (vu)(q + 127) << 23;
  const vu p2_sub = 1u << (vu)vmin(vmax(q + 149, allz), splat_i(31));
  const vf p2 = as_f(q >= -126 ? p2_norm : p2_sub);
  vf v = __builtin_convertvector((vi)r, vf) * p2;
  const vi zr = r == 0u;

  vu mag;
  if (p.no_zero) {
    mag = (vu)vmax(((ee - emin) << p.M) + (vi)r - (1 << p.M), allz);
    v = zr ? splat_f(p.min_value) : v;
  } else if (p.fixed) {
    mag = r;
  } else {
    mag = ((vu)(ee - emin) << (uint32_t)p.M) + r;
  }

  const vi ovr = ((vi)(v > splat_f(p.max_finite)) | big_fixed) & ~isnan & ~negnz;
  mag = ovr ? splat_u(p.overflow_code) : mag;
  v = ovr ? splat_f(p.overflow_value) : v;
  const vi counted_ovr = p.has_inf ? (ovr & ~isinf) : ovr;

  // Sign: negative zero only where the format has it; integers use two's complement codes.
  const vi magnz = mag != 0u;
  const vi signflag = p.is_signed ? (neg & (p.has_neg_zero ? ~allz : magnz)) : allz;
  vu code;
  if (p.is_int) code = signflag ? ((0u - mag) & p.code_mask) : mag;
  else code = mag | ((vu)signflag & p.sign_bit);
  v = as_f(as_u(v) | ((vu)signflag & 0x80000000u));

  const vf qnan = splat_f(__builtin_nanf(""));
  if (!p.is_signed) {
    const bool to_nan = p.no_zero || (!p.saturate && p.has_nan);
    code = negnz ? splat_u(to_nan ? p.nan_code : 0u) : code;
    v = negnz ? (to_nan ? qnan : splat_f(0.0f)) : v;
  }
  if (p.no_zero) {  // e8m0: zero has no code
    const vi z = ~nzero;
    code = z ? splat_u(p.nan_code) : code;
    v = z ? qnan : v;
  }
  {
    const vu nan_code = p.has_nan ? (splat_u(p.nan_code) | (p.nan_signed ? ((vu)neg & p.sign_bit) : splat_u(0)))
                                  : splat_u(0);
    code = isnan ? nan_code : code;
    v = isnan ? (p.has_nan ? qnan : splat_f(0.0f)) : v;
  }

  const vi underflow = p.no_zero ? allz : (zr & nzero & ~isnan & ~ovr & ~negnz);
  cnt.ovf += ((vu)(clipped | counted_ovr | negnz)) & 1u;
  cnt.unf += (vu)underflow & 1u;
  cnt.nan += (vu)isnan & 1u;

  code_out = code;
  value_out = Scaled ? v * splat_f(p.scale) : v;
}

template <bool Stoch, bool Scaled>
qs::EncodeStats encode_loop(const qs::KernelParams& p, const qs::EncodeJob& job, uint32_t key) {
  Counters cnt;
  vu lane;
  for (int i = 0; i < N; ++i) lane[i] = static_cast<uint32_t>(i);
  const uint32_t base = static_cast<uint32_t>(job.index0);
  auto one = [&](std::size_t i, const float* src, float* vals, uint8_t* c8, uint16_t* c16) {
    vf x;
    std::memcpy(&x, src, sizeof x);
    vu rnd = splat_u(0);
    if constexpr (Stoch) {
      const vu idx = splat_u(base + static_cast<uint32_t>(i)) + lane;
      rnd = hash32v(hash32v(idx ^ key) + key);
    }
    vu code;
    vf val;
    encode_vec<Stoch, Scaled>(p, x, rnd, cnt, code, val);
    if (vals) std::memcpy(vals, &val, sizeof val);
    if (c8) {
      const vu8 c = __builtin_convertvector(code, vu8);
      std::memcpy(c8, &c, sizeof c);
    }
    if (c16) {
      const vu16 c = __builtin_convertvector(code, vu16);
      std::memcpy(c16, &c, sizeof c);
    }
  };
  std::size_t i = 0;
  for (; i + N <= job.n; i += N)
    one(i, job.x + i, job.values ? job.values + i : nullptr, job.codes8 ? job.codes8 + i : nullptr,
        job.codes16 ? job.codes16 + i : nullptr);
  if (i < job.n) {  // tail through padded buffers
    const std::size_t rest = job.n - i;
    float xin[N] = {}, vals[N];
    uint8_t c8[N];
    uint16_t c16[N];
    std::memcpy(xin, job.x + i, rest * sizeof(float));
    Counters before = cnt;
    one(i, xin, vals, c8, c16);
    // Padding lanes must not count: recount only the real ones by undoing and redoing per lane.
    Counters pad;
    for (int l = 0; l < N; ++l) {
      const bool real = static_cast<std::size_t>(l) < rest;
      pad.ovf[l] = real ? cnt.ovf[l] : before.ovf[l];
      pad.unf[l] = real ? cnt.unf[l] : before.unf[l];
      pad.nan[l] = real ? cnt.nan[l] : before.nan[l];
    }
    cnt = pad;
    if (job.values) std::memcpy(job.values + i, vals, rest * sizeof(float));
    if (job.codes8) std::memcpy(job.codes8 + i, c8, rest);
    if (job.codes16) std::memcpy(job.codes16 + i, c16, rest * sizeof(uint16_t));
  }
  qs::EncodeStats st;
  for (int l = 0; l < N; ++l) {
    st.overflow += cnt.ovf[l];
    st.underflow += cnt.unf[l];
    st.nan += cnt.nan[l];
  }
  return st;
}

}  // namespace

namespace qs::detail {

EncodeStats QS_ENTRY(const KernelParams& p, const EncodeJob& job, uint32_t key) {
  const bool scaled = p.scale != 1.0f;
  if (p.stochastic)
    return scaled ? encode_loop<true, true>(p, job, key) : encode_loop<true, false>(p, job, key);
  return scaled ? encode_loop<false, true>(p, job, key) : encode_loop<false, false>(p, job, key);
}

}  // namespace qs::detail
