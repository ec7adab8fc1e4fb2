// The vectorized encoder, written once with GCC/Clang vector extensions and compiled per target:
// encode_simd_{generic,avx2,avx512}.cpp define QS_LANES and QS_ENTRY, then include this file.
// Everything here has internal linkage so that no AVX-512 instruction leaks into a shared symbol.
//
// Algorithm (per lane, on float32 bits): split |y| into an exponent e and a 24-bit significand m,
// pick the quantum 2^q of the binade that holds |y| in the target format, shift m right by
// s = q - (e - 23) bits with round-to-nearest-even, ties away or toward zero (bias trick) or stochastic rounding (compare
// the discarded bits with a counter-based random number), then rebuild the value r * 2^q and the
// code ((e - emin) << M) + r, whose carry flows into the exponent field by itself.
#include <cstring>
#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "format/encode_simd.h"
#include "format/rng.h"

#ifndef QS_LANES
#error "define QS_LANES before including encode_simd_impl.h"
#endif

namespace {

constexpr int N = QS_LANES;
#define QS_AI __attribute__((always_inline))
typedef uint32_t vu __attribute__((vector_size(N * 4)));
typedef int32_t vi __attribute__((vector_size(N * 4)));
typedef float vf __attribute__((vector_size(N * 4)));
typedef uint8_t vu8 __attribute__((vector_size(N)));
typedef uint16_t vu16 __attribute__((vector_size(N * 2)));

QS_AI inline vu splat_u(uint32_t x) { const vu z = {}; return z + x; }
QS_AI inline vi splat_i(int32_t x) { const vi z = {}; return z + x; }
QS_AI inline vf splat_f(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  const vu z = {};
  const vu r = z + u;
  vf f;
  std::memcpy(&f, &r, sizeof f);
  return f;
}
QS_AI inline vu as_u(vf x) { vu r; std::memcpy(&r, &x, sizeof r); return r; }
QS_AI inline vf as_f(vu x) { vf r; std::memcpy(&r, &x, sizeof r); return r; }
QS_AI inline vi vmax(vi a, vi b) { return a > b ? a : b; }
QS_AI inline vi vmin(vi a, vi b) { return a < b ? a : b; }

// True when no lane of the mask is set (one instruction on AVX-512 / AVX2).
QS_AI inline bool none_set(vi m) {
#if defined(__AVX512F__) && QS_LANES == 16
  __m512i v;
  std::memcpy(&v, &m, sizeof v);
  return _mm512_test_epi32_mask(v, v) == 0;
#elif defined(__AVX2__) && QS_LANES == 8
  __m256i v;
  std::memcpy(&v, &m, sizeof v);
  return _mm256_testz_si256(v, v);
#else
  int any = 0;
  for (int l = 0; l < N; ++l) any |= m[l];
  return any == 0;
#endif
}

QS_AI inline vu hash32v(vu x) {
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

// Plain: a signed float format with an exponent field and a zero (every fp8/fp6/fp4/bf16/fp16),
// so the compiler drops the branches for integers, fixed-point grids, unsigned formats and E8M0.
template <bool Stoch, bool Scaled, bool Sat, bool Plain, bool Codes>
__attribute__((always_inline)) inline void encode_vec(const qs::KernelParams& p, vf x, vu rnd, Counters& cnt, vu& code_out,
                       vf& value_out) {
  const vi allz = splat_i(0);
  const bool is_signed = Plain || p.is_signed;
  const bool fixed = !Plain && p.fixed;
  const bool no_zero = !Plain && p.no_zero;
  const bool is_int = !Plain && p.is_int;
  const vf y = Scaled ? x / splat_f(p.scale) : x;
  const vu u = as_u(y);
  const vi neg = (vi)u < allz;
  vu a = u & 0x7fffffffu;
  const vi isnan = a > 0x7f800000u;
  const vi isinf = a == 0x7f800000u;
  const vi nzero = a != 0u;
  const vi negnz = is_signed ? allz : (neg & nzero & ~isnan);
  vi clipped = allz;
  if (Sat) {
    const vi over = (a > p.max_bits) & ~isnan & ~negnz;
    clipped = over & (vi)(a >= p.ovf_bits);
    a = over ? splat_u(p.max_bits) : a;
  }

  // |y| = m * 2^(e - 23) with m in [2^23, 2^24); float32 subnormals are normalised via an exact
  // int -> float conversion (their value is a * 2^-149).
  const vi sub = a < 0x00800000u;
  const vu ab = as_u(__builtin_convertvector((vi)a, vf));
  const vi e = sub ? (vi)(ab >> 23) - (127 + 149) : (vi)(a >> 23) - 127;
  vu m = ((sub ? ab : a) & 0x007fffffu) | 0x00800000u;
  m = nzero ? m : splat_u(0);

  const vi emin = splat_i(p.emin);
  const vi ee = fixed ? emin : vmax(e, emin);
  vi s = (23 - p.M) + ee - e;  // bits to drop
  vi big_fixed = allz;
  if (fixed) {  // E = 0 grids: |y| >= 2^(emin + 23 - M) is far beyond the largest value
    big_fixed = s < 1;
    s = vmax(s, splat_i(1));
  }
  const vu sc = (vu)vmin(s, splat_i(31));
  vu r;
  if constexpr (!Stoch) {
    const vu half = 1u << (sc - 1u);
    vu bias;
    if (p.rmode == 0) bias = ((m >> sc) & 1u) + half - 1u;    // ties to even
    else if (p.rmode == 1) bias = half;                        // ties away from zero
    else bias = splat_u(0);                                    // toward zero
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
  if (no_zero) {
    mag = (vu)vmax(((ee - emin) << p.M) + (vi)r - (1 << p.M), allz);
    v = zr ? splat_f(p.min_value) : v;
  } else if (fixed) {
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
  const vi signflag = is_signed ? (neg & (p.has_neg_zero ? ~allz : magnz)) : allz;
  vu code;
  if (is_int) code = signflag ? ((0u - mag) & p.code_mask) : mag;
  else code = mag | ((vu)signflag & p.sign_bit);
  v = as_f(as_u(v) | ((vu)signflag & 0x80000000u));

  const vf qnan = splat_f(__builtin_nanf(""));
  if (!is_signed) {
    const bool to_nan = no_zero || (!Sat && p.has_nan);
    code = negnz ? splat_u(to_nan ? p.nan_code : 0u) : code;
    v = negnz ? (to_nan ? qnan : splat_f(0.0f)) : v;
  }
  if (no_zero) {  // e8m0: zero has no code
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

  const vi underflow = no_zero ? allz : (zr & nzero & ~isnan & ~ovr & ~negnz);
  cnt.ovf += ((vu)(clipped | counted_ovr | negnz)) & 1u;
  cnt.unf += (vu)underflow & 1u;
  cnt.nan += (vu)isnan & 1u;

  code_out = code;
  value_out = Scaled ? v * splat_f(p.scale) : v;
}

// Fast path for fake-quant values of plain formats with M >= 1 and emin >= -126 (the common case):
// round the float32 bits directly (the carry of the rounding bias flows into the exponent), and
// round the target's subnormal range with the magic-number addition (y + C) - C, C = 2^(emin-M+23),
// whose float32 quantum is the target's. Stochastic rounding adds ~rnd >> (32 - s0) to the bits that
// are dropped, which carries exactly when rnd < dropped * 2^(32 - s0): the rule of encode_ref.
// Returns a mask of lanes it cannot do (NaN, inf, ieee overflow, stochastic subnormals); the
// caller then redoes the whole vector on the general path.
template <bool Stoch, bool Scaled, bool Sat>
QS_AI inline vi fast_values(const qs::KernelParams& p, vf x, vu rnd, vu& d_ovf, vu& d_unf, vf& value_out) {
  const vi allz = splat_i(0);
  const vf y = Scaled ? x / splat_f(p.scale) : x;
  const vu u = as_u(y);
  const vu sign = u & 0x80000000u;
  vu a = u & 0x7fffffffu;
  vi bad = a >= 0x7f800000u;
  vi clipped = allz;
  if constexpr (Sat) {
    const vi over = (a > p.max_bits) & ~bad;
    clipped = over & (vi)(a >= p.ovf_bits);
    a = over ? splat_u(p.max_bits) : a;
  }
  const uint32_t s0 = 23u - (uint32_t)p.M;
  const uint32_t keep = ~((1u << s0) - 1u);
  const vi sub = a < p.min_normal_bits;
  vu rb;
  vf v;
  if constexpr (!Stoch) {
    if (p.rmode == 0) {
      rb = (a + ((a >> s0) & 1u) + ((1u << (s0 - 1u)) - 1u)) & keep;
    } else {
      // Ties away adds half a quantum, toward zero nothing; the magic-number addition below rounds
      // ties to even, so their non-zero subnormal lanes take the general path.
      rb = (a + (p.rmode == 1 ? (1u << (s0 - 1u)) : 0u)) & keep;
      bad |= sub & (a != 0u);
    }
    const vf c = splat_f(p.magic);
    const vf vs = (as_f(a) + c) - c;
    v = sub ? vs : as_f(rb);
  } else {
    rb = (a + (~rnd >> (32u - s0))) & keep;
    bad |= sub & (a != 0u);
    v = sub ? splat_f(0.0f) : as_f(rb);
  }
  if constexpr (!Sat) bad |= (vi)(as_u(v) > p.max_bits);
  const vu vb = as_u(v);
  const vu sgn = p.has_neg_zero ? sign : ((vb != 0u) ? sign : splat_u(0));
  v = as_f(vb | sgn);
  d_ovf = (vu)clipped & 1u;
  d_unf = (vu)((vb == 0u) & (a != 0u)) & 1u;
  value_out = Scaled ? v * splat_f(p.scale) : v;
  return bad;
}

template <bool Stoch, bool Scaled, bool Sat, bool Plain, bool Codes>
qs::EncodeStats encode_loop(const qs::KernelParams& params, const qs::EncodeJob& job_in, uint32_t key) {
  // Local copies: the output stores cannot alias them, so every parameter stays in a register.
  const qs::KernelParams p = params;
  const qs::EncodeJob job = job_in;
  Counters cnt;
  vu lane;
  for (int i = 0; i < N; ++i) lane[i] = static_cast<uint32_t>(i);
  const uint32_t base = static_cast<uint32_t>(job.index0);
  auto one = [&](std::size_t i, const float* src, float* vals, uint8_t* c8, uint16_t* c16) QS_AI {
    vf x;
    std::memcpy(&x, src, sizeof x);
    vu rnd = splat_u(0);
    if constexpr (Stoch) {
      const vu idx = splat_u(base + static_cast<uint32_t>(i)) + lane;
      rnd = hash32v(hash32v(idx ^ key) + key);
    }
    vu code;
    vf val;
    if constexpr (Plain && !Codes) {
      if (p.fast_ok) {
        vu d_ovf, d_unf;
        const vi bad = fast_values<Stoch, Scaled, Sat>(p, x, rnd, d_ovf, d_unf, val);
        if (none_set(bad)) {
          cnt.ovf += d_ovf;
          cnt.unf += d_unf;
          if (vals) std::memcpy(vals, &val, sizeof val);
          return;
        }
      }
    }
    encode_vec<Stoch, Scaled, Sat, Plain, Codes>(p, x, rnd, cnt, code, val);
    if (vals) std::memcpy(vals, &val, sizeof val);
    if (Codes && c8) {
      const vu8 c = __builtin_convertvector(code, vu8);
      std::memcpy(c8, &c, sizeof c);
    }
    if (Codes && c16) {
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
  const bool plain = p.is_signed && !p.fixed && !p.no_zero && !p.is_int;
  const bool codes = job.codes8 || job.codes16;
  // Dispatch the run-time flags to compile-time ones: 32 specialisations, each branch-free inside.
  using Fn = EncodeStats (*)(const KernelParams&, const EncodeJob&, uint32_t);
#define QS_V(St, Sc, Sa, Pl, Co) &encode_loop<St, Sc, Sa, Pl, Co>
#define QS_C(St, Sc, Sa, Pl) QS_V(St, Sc, Sa, Pl, false), QS_V(St, Sc, Sa, Pl, true)
#define QS_P(St, Sc, Sa) QS_C(St, Sc, Sa, false), QS_C(St, Sc, Sa, true)
#define QS_S(St, Sc) QS_P(St, Sc, false), QS_P(St, Sc, true)
  static const Fn table[32] = {QS_S(false, false), QS_S(false, true), QS_S(true, false), QS_S(true, true)};
#undef QS_V
#undef QS_C
#undef QS_P
#undef QS_S
  const int index = (p.stochastic ? 16 : 0) + (scaled ? 8 : 0) + (p.saturate ? 4 : 0) + (plain ? 2 : 0) + (codes ? 1 : 0);
  return table[index](p, job, key);
}

}  // namespace qs::detail
