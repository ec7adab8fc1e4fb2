// The vectorized encoder, written once with GCC/Clang vector extensions and compiled per target:
// encode_simd_{generic,avx2,avx512}.cpp define QS_LANES and QS_ENTRY, then include this file.
// Everything here has internal linkage so that no AVX-512 instruction leaks into a shared symbol.
//
// Algorithm (per lane, on float32 bits): split |y| into an exponent e and a 24-bit significand m,
// pick the quantum 2^q of the binade that holds |y| in the target format, shift m right by
// s = q - (e - 23) bits with round-to-nearest-even, ties away or toward zero (bias trick) or stochastic rounding (compare
// the discarded bits with a counter-based random number), then rebuild the value r * 2^q and the
// code ((e - emin) << M) + r, whose carry flows into the exponent field by itself.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
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

// The lean (non-saturating) instance keeps a chunk or tile while it redoes at most 1 vector or pair in 16.
QS_AI inline bool lean_pays(std::size_t redone, std::size_t total) { return redone * 16 <= total; }
// Overflows counted since `before`, over every lane.
QS_AI inline std::size_t overflows_since(vu now, vu before) {
  const vu d = now - before;
  uint32_t c = 0;
  for (int l = 0; l < N; ++l) c += d[l];
  return c;
}

// ~m & x in one instruction: GCC builds a != 0 as two compares and an and, where vpandn takes the a == 0 mask.
QS_AI inline vi andnot(vi m, vi x) {
#if defined(__AVX2__) && QS_LANES == 8
  __m256i a, b;
  std::memcpy(&a, &m, sizeof a);
  std::memcpy(&b, &x, sizeof b);
  const __m256i r = _mm256_andnot_si256(a, b);
  vi v;
  std::memcpy(&v, &r, sizeof v);
  return v;
#else
  return ~m & x;
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

// The float32 bits of the largest |y| that fast_values rounds to 0 (and counts as an underflow unless 0):
// half the target's smallest subnormal 2^(emin - M) under ties to even (the tie goes to 0, which is even),
// 0 where that half lies below float32's own smallest subnormal. Ties away and toward zero send every non-zero
// lane below the smallest normal to the general path, so no non-zero lane rounds to 0 in fast_values: 0.
QS_AI inline int32_t zero_max_bits(const qs::KernelParams& p, int Rm) {
  if (Rm == 1 || Rm == 2 || (Rm < 0 && p.rmode != 0)) return 0;
  const int e = p.emin - p.M - 1;
  return e >= -126 ? (e + 127) << 23 : e >= -149 ? 1 << (e + 149) : 0;
}

// Fast path for fake-quant values of plain formats with M >= 1 and emin >= -126 (the common case):
// round the float32 bits directly (the carry of the rounding bias flows into the exponent), and
// round the target's subnormal range with the magic-number addition (y + C) - C, C = 2^(emin-M+23),
// whose float32 quantum is the target's. Stochastic rounding adds ~rnd >> (32 - s0) to the bits that
// are dropped, which carries exactly when rnd < dropped * 2^(32 - s0): the rule of encode_ref.
// Returns a mask of lanes it cannot do (NaN, inf, ieee overflow, stochastic subnormals); the
// caller then redoes the whole vector on the general path.
// zmax is zero_max_bits(p, Rm) (derived once per loop). Rm (the rounding mode) and NZ (the format has -0) are p.rmode and p.has_neg_zero when -1, else constants
// (fast_loop's instances); Rm 0 rounds ties to even with the float adder (adder_rne_ok), Rm 3 with integers. d_ovf and d_unf are lane masks (all ones where the lane counts).
template <bool Stoch, bool Scaled, bool Sat, int Rm = -1, int NZ = -1>
QS_AI inline vi fast_values(const qs::KernelParams& p, vf x, vu rnd, int32_t zmax, vi& d_ovf, vi& d_unf, vf& value_out) {
  // Magnitudes and the thresholds they meet are below 2^31, so they compare as signed integers (one
  // instruction on AVX2, where an unsigned compare takes two or three). The sign comes from x (y = x / s
  // with s > 0 has x's sign; NaN lanes leave this path), so it waits for no division.
  const int rmode = Rm >= 0 ? (Rm == 3 ? 0 : Rm) : p.rmode;  // Rm 3: ties to even, the integer way
  const bool neg_zero = NZ >= 0 ? NZ != 0 : p.has_neg_zero;
  const vi allz = splat_i(0);
  if constexpr (Stoch) {
    // Stochastic rounding on the signed bits of y = x / s (the division is sign-symmetric, bit for bit):
    // |y| + the addend stays below 2^31, so the sign bit survives the add and the mask, and a saturating
    // clamp is vmaxps + vminps where |y| would need vpminsd and the sign taken off and put back.
    const vf y = Scaled ? x / splat_f(p.scale) : x;
    const vi yb = (vi)as_u(y);
    const vi a = yb & 0x7fffffff;
    // NaN, inf (and x / s overflowing to inf); ieee: also |y| > max (< inf), in the same compare.
    vi bad = a > (Sat ? 0x7f7fffff : (int32_t)p.max_bits);
    vf yc = y;
    d_ovf = allz;
    if constexpr (Sat) {
      const uint32_t thr = p.ovf_bits > p.max_bits ? p.ovf_bits : p.max_bits + 1u;
      d_ovf = a > (int32_t)(thr - 1u);
      const vf mx = splat_f(p.max_finite);
      yc = y < -mx ? -mx : y;  // NaN lanes are bad
      yc = yc > mx ? mx : yc;
    }  // ieee: |y| <= max rounds to at most max (a grid value)
    // A lane that is neither 0 nor bad has |y| >= min normal and rounds to at least that (a multiple of
    // the quantum): no underflow, and a zero result only from a zero input. Bad: 1 <= a < min normal, in one
    // add and one compare (a + 0x7fffffff maps a = 1.. to INT32_MIN.. and a = 0 to INT32_MAX).
    const vi zero = a == 0;  // only formats without -0 use it
    bad |= (vi)((vu)a + 0x7fffffffu) < (int32_t)(0x80000000u + p.min_normal_bits - 1u);
    const int32_t s0 = 23 - p.M;
    const vi rb = (vi)(((vu)as_u(yc) + (~rnd >> (32u - (uint32_t)s0))) & (uint32_t)~((1u << s0) - 1u));
    const vf v = as_f((vu)(neg_zero ? rb : andnot(zero, rb)));
    d_unf = allz;
    value_out = Scaled ? v * splat_f(p.scale) : v;
    return bad;
  }
  const vi xb = (vi)as_u(x);
  const vi axb = xb & 0x7fffffff;
  const vi sign = xb ^ axb;  // not andnot(0x7fffffff, xb): GCC then builds the constant twice, one register more
  const vf ax = as_f((vu)axb);
  const vf ay = Scaled ? ax / splat_f(p.scale) : ax;  // |x / s|, bit for bit
  vi a = (vi)as_u(ay);
  // NaN, inf (and x / s overflowing to inf). Ieee with the adder: beyond max, C may overflow (inf - inf is a
  // negative NaN) and the result may not be max: the general path; max < inf, so one compare does both.
  vi bad = (!Sat && Rm == 0) ? a > (int32_t)p.max_bits : a >= 0x7f800000;
  d_ovf = allz;
  if constexpr (Sat) {
    // Every lane that is not bad: clamp to max, clipped from the overflow threshold (which lies above max).
    const uint32_t thr = p.ovf_bits > p.max_bits ? p.ovf_bits : p.max_bits + 1u;
    d_ovf = a > (int32_t)(thr - 1u);  // thr >= 1; as >=, GCC built vpminsd + vpcmpeqd
    a = vmin(a, splat_i((int32_t)p.max_bits));
  }
  const int32_t s0 = 23 - p.M;
  const int32_t keep = ~((1 << s0) - 1);
  const vi sub = a < (int32_t)p.min_normal_bits;
  vi rb;
  vf v;
  if constexpr (!Stoch) {
    if constexpr (Rm == 0) {
      // Ties to even by the float adder: with C = 2^(e + 23 - M) for |y| in [2^e, 2^(e+1)) (e at least the
      // target's emin, so C = magic in its subnormal range), y + C lies in C's binade, whose float32 quantum
      // is the target's 2^(e - M), and (y + C) - C is exact: the RNE value, also where it carries to 2^(e+1).
      // Four instructions instead of the integer bias, the subnormal compare and the blend.
      // (Added as unsigned: NaN / inf lanes, which the general path redoes, would overflow a signed add: UB.)
      const vi cb = (vi)((vu)vmax(a & 0x7f800000, splat_i((int32_t)(p.min_normal_bits & 0x7f800000u))) +
                         (uint32_t)((23 - p.M) << 23));
      const vf c = as_f((vu)cb);
      v = (as_f((vu)a) + c) - c;
      rb = allz;
      (void)sub;
      (void)keep;
    } else if (rmode == 0) {
      rb = (vi)(((vu)a + (vu)((a >> s0) & 1) + (uint32_t)((1 << (s0 - 1)) - 1)) & (uint32_t)keep);  // unsigned: no UB on NaN lanes
      const vf c = splat_f(p.magic);
      const vf vs = (as_f((vu)a) + c) - c;
      v = sub ? vs : as_f((vu)rb);
    } else {
      // Ties away adds half a quantum, toward zero nothing; the magic-number addition below rounds
      // ties to even, so their non-zero subnormal lanes take the general path.
      rb = (vi)(((vu)a + (uint32_t)(rmode == 1 ? (1 << (s0 - 1)) : 0)) & (uint32_t)keep);  // unsigned: no UB on NaN lanes
      bad |= sub & (a != 0);
      const vf c = splat_f(p.magic);
      const vf vs = (as_f((vu)a) + c) - c;
      v = sub ? vs : as_f((vu)rb);
    }
  } else {
    // No blend for the subnormal range: a zero lane rounds to 0 here (the random addend is below 2^s0) and
    // every other subnormal lane is bad, so the general path redoes its vector.
    rb = (vi)(((vu)a + (~rnd >> (32u - (uint32_t)s0))) & (uint32_t)keep);
    bad |= andnot(a == 0, sub);
    v = as_f((vu)rb);
  }
  const vi vb = (vi)as_u(v);
  if constexpr (!Sat && Rm != 0) bad |= vb > (int32_t)p.max_bits;  // a <= max rounds to at most max (Rm 0: above)
  // Lanes that round to 0 and count as underflows, from a alone (off the rounding's chain, two instructions
  // instead of three compares and an and): a != 0 lanes round to 0 exactly when a <= zmax. (a + 0x7fffffff,
  // as signed, maps a = 1.. to INT32_MIN.. and a = 0 to INT32_MAX, so one compare tests 1 <= a <= zmax.)
  // Stochastic: a lane that is neither 0 nor bad has |y| >= min normal, and rb >= a & keep >= min normal
  // (min normal is a multiple of the quantum): nothing underflows, so no count and no mask.
  const vi vzero = a < zmax + 1;  // as vb == 0
  const vi sgn = neg_zero ? sign : andnot(vzero, sign);
  v = as_f((vu)(vb | sgn));
  d_unf = Stoch ? allz : (vi)((vu)a + 0x7fffffffu) < (int32_t)(0x80000000u + (uint32_t)zmax);
  value_out = Scaled ? v * splat_f(p.scale) : v;
  return bad;
}

// The fast path's loop, kept apart from the general encoder so that its constants and counters stay in
// registers (inlined together with encode_vec, the AVX2 build spilled its counters to the stack and tested
// the rounding mode per vector). Rm is p.rmode (0 ties to even, 1 ties away, 2 toward zero; unused when
// Stoch). A vector with a lane the fast path cannot do goes through encode_vec, out of line.
// Stream: job.values is N * 4-byte aligned and job.n a multiple of N; the values are written with
// non-temporal stores (a large output that is not read back soon: memcpy does the same), fenced at the end.
template <bool Stoch, bool Scaled, bool Sat>
__attribute__((noinline)) vf slow_vector(const qs::KernelParams& p, vf x, vu rnd, Counters& cnt) {
  vu code;
  vf val;
  encode_vec<Stoch, Scaled, Sat, true, false>(p, x, rnd, cnt, code, val);
  return val;
}

// fast_loop's lean nearest path redoes a vector with a lane beyond max here, out of line so that the loop
// keeps its registers: the saturating fast_values, else encode_vec; counts into cnt.
template <bool Stoch, bool Scaled, bool Sat, int Rm, int NZ>
__attribute__((noinline)) vf full_vector(const qs::KernelParams& p, vf x, vu rnd, int32_t zmax, Counters& cnt) {
  vi o, u;
  vf v;
  if (none_set(fast_values<Stoch, Scaled, Sat, Rm, NZ>(p, x, rnd, zmax, o, u, v))) {
    cnt.ovf -= (vu)o;
    cnt.unf -= (vu)u;
    return v;
  }
  return slow_vector<Stoch, Scaled, Sat>(p, x, rnd, cnt);
}

QS_AI inline void store_stream(float* dst, vf v) {
#if defined(__AVX512F__) && QS_LANES == 16
  __m512 r;
  std::memcpy(&r, &v, sizeof r);
  _mm512_stream_ps(dst, r);
#elif defined(__AVX2__) && QS_LANES == 8
  __m256 r;
  std::memcpy(&r, &v, sizeof r);
  _mm256_stream_ps(dst, r);
#else
  std::memcpy(dst, &v, sizeof v);
#endif
}

// Writes r[k] = stochastic_mix(key, b + k) for k < n (n a multiple of N; b + n - 1 below 2^32, as for a job).
// Incremental form of the first xor-shift: with x = idx ^ key, x ^ (x >> 16) = idx ^ h where
// h = (idx >> 16) ^ key ^ (key >> 16) is constant per lane while no lane crosses a multiple of 2^16, so a
// vector costs an add and an xor before the multiplies instead of a broadcast, add, xor, shift and xor.
// A run ends where lane N - 1 would cross such a multiple; a vector that straddles one is a run of its own
// (h per lane). A separate pass over a tile keeps the hash's registers apart from the rounding's (AVX2 has 16).
// At AVX2 the hash runs in two passes (the second hash32v apart): a vector's chain of 4 multiplies and 10
// shifts and xors is ~35 cycles long, and the out-of-order window, not the ALUs, limited one pass to 6.1 cycles
// per vector (Zen 5, 1024 values in L1); two shorter chains take 5.6. AVX-512 keeps one pass (no gain measured there).
#if defined(__AVX2__) && !defined(__AVX512F__)
constexpr bool kTwoPassHash = true;
#else
constexpr bool kTwoPassHash = false;
#endif
QS_AI inline void fill_bits(uint32_t* r, uint32_t b, std::size_t n, uint32_t key) {
  vu lane;
  for (int l = 0; l < N; ++l) lane[l] = static_cast<uint32_t>(l);
  const uint32_t kk = key ^ (key >> 16);
  vu idx = splat_u(b) + lane;
  std::size_t k = 0;
  while (k < n) {
    const uint64_t start = uint64_t(b) + k;  // lane 0's index
    const uint64_t end = (start | 0xffffu) + 1;  // the next multiple of 2^16
    std::size_t run = static_cast<std::size_t>((end - start) / N);
    if (run == 0) run = 1;  // straddles: h differs per lane but holds for this vector
    if (run > (n - k) / N) run = (n - k) / N;
    const vu h = (idx >> 16) ^ kk;
    for (const std::size_t stop = k + run * N; k < stop; k += N) {
      vu x = idx ^ h;
      x *= 0x7feb352du;
      x ^= x >> 15;
      x *= 0x846ca68bu;
      x ^= x >> 16;
      x += key;
      if constexpr (!kTwoPassHash) x = hash32v(x);
      std::memcpy(r + k, &x, sizeof x);
      idx += static_cast<uint32_t>(N);
    }
  }
  for (k = 0; kTwoPassHash && k < n; k += N) {
    vu x;
    std::memcpy(&x, r + k, sizeof x);
    x = hash32v(x);
    std::memcpy(r + k, &x, sizeof x);
  }
}

// G: a scale per group of 2^shift elements (scales[i >> shift]), instead of params.scale.
template <bool Stoch, bool Scaled, bool Sat, int Rm, int NZ, bool Stream, bool G = false>
qs::EncodeStats fast_loop(const qs::KernelParams& params, const qs::EncodeJob& job_in, uint32_t key,
                          const float* scales = nullptr, unsigned shift = 0) {
  qs::KernelParams p0 = params;
  qs::KernelParams p = p0;
  const qs::EncodeJob job = job_in;
  Counters slow;  // lanes of vectors that took encode_vec
  vu ovf = splat_u(0), unf = splat_u(0);
  vu lane;
  for (int i = 0; i < N; ++i) lane[i] = static_cast<uint32_t>(i);
  const uint32_t base = static_cast<uint32_t>(job.index0);
  const std::size_t full = job.n - job.n % N;
  float* const out = job.values;
  // Stochastic: the random numbers of a tile first (fill_bits, into L1), then the rounding reads them.
  constexpr std::size_t kTile = 1024;
  alignas(64) uint32_t rbuf[Stoch ? kTile : 1];
  std::size_t t0 = 0;  // the tile's first element
  (void)lane;
  (void)base;
  auto draw = [&](std::size_t i) QS_AI {
    if constexpr (Stoch) {
      vu r;
      std::memcpy(&r, rbuf + (i - t0), sizeof r);
      return r;
    } else {
      return splat_u(0);
    }
  };
  auto put = [&](std::size_t i, vf val) QS_AI {
    if (out) {
      if constexpr (Stream) store_stream(out + i, val);
      else std::memcpy(out + i, &val, sizeof val);
    }
  };
  // Saturating ties to even runs the ieee instance where it can, which sends every lane beyond max (to be
  // clamped, perhaps counted) to the general path and so needs no clamp and no overflow count: data scaled to
  // its largest magnitude has no such lane. A pair of vectors with one is redone by the saturating instance
  // (full_vector). Data that clips often would pay that redo (and a mispredicted branch) on many pairs, so the
  // pairs run in chunks of kChunk (the first one kChunk / 8, a short probe), each under one instance: a lean
  // chunk that redid more than 1 pair in 16 hands the next chunk to the saturating instance, which hands back
  // after a chunk with fewer overflows.
  constexpr bool Lean = !Stoch && Sat && Rm == 0;  // and stochastic with Sat (below)
  constexpr std::size_t kChunk = 64;  // pairs
  constexpr std::size_t kAhead = 2048;  // streaming: inputs prefetched this many values ahead (8 KiB)
  bool lean = true;
  std::size_t chunk = kChunk / 8;
  const int32_t zmax = zero_max_bits(p, Rm);
  std::size_t i = 0;
  while (i < full) {
  const std::size_t tile_end = Stoch ? std::min(full, i + kTile) : full;
  if constexpr (Stoch) {
    t0 = i;
    fill_bits(rbuf, base + static_cast<uint32_t>(i), tile_end - i, key);
  }
  // Two vectors per step hide the latency of nearest's chain; stochastic's loads its random numbers and runs
  // one vector per step (4 % faster in cache at AVX2: fewer live registers).
  const std::size_t pairs_end = Stoch ? i : i + (tile_end - i) / (2 * N) * (2 * N);
  while (i < pairs_end) {
    const std::size_t stop = Lean ? std::min(pairs_end, i + chunk * 2 * N) : pairs_end;
    const std::size_t pairs = (stop - i) / (2 * N);
    chunk = kChunk;
    if constexpr (Lean) {
      if (lean) {
        std::size_t redo = 0;
        for (; i < stop; i += 2 * N) {
          vf x0, x1;
          if constexpr (Stream)  // the hardware prefetcher alone left the avx512 loop at 42-45 GB/s from memory, 54 with this
            for (int k = 0; k < 2 * N; k += 64 / int(sizeof(float))) __builtin_prefetch(job.x + i + k + kAhead, 0, 3);
          std::memcpy(&x0, job.x + i, sizeof x0);
          std::memcpy(&x1, job.x + i + N, sizeof x1);
          vi o0, u0, o1, u1;
          vf v0, v1;
          qs::KernelParams p1 = p;
          if constexpr (G) p.scale = scales[i >> shift], p1.scale = scales[(i + N) >> shift];
          const vi b0 = fast_values<false, Scaled, false, 0, NZ>(p, x0, splat_u(0), zmax, o0, u0, v0);
          const vi b1 = fast_values<false, Scaled, false, 0, NZ>(p1, x1, splat_u(0), zmax, o1, u1, v1);
          if (__builtin_expect(none_set(b0 | b1), 1)) {
            unf -= (vu)(u0 + u1);
          } else {
            ++redo;
            p0.scale = p.scale, v0 = full_vector<false, Scaled, Sat, Rm, NZ>(p0, x0, splat_u(0), zmax, slow);
            p0.scale = p1.scale, v1 = full_vector<false, Scaled, Sat, Rm, NZ>(p0, x1, splat_u(0), zmax, slow);
          }
          put(i, v0);
          put(i + N, v1);
        }
        lean = lean_pays(redo, pairs);
        continue;
      }
    }
    const vu ovf_before = ovf;
    for (; i < stop; i += 2 * N) {
      vf x0, x1;
      std::memcpy(&x0, job.x + i, sizeof x0);
      std::memcpy(&x1, job.x + i + N, sizeof x1);
      const vu r0 = draw(i), r1 = draw(i + N);
      vi o0, u0, o1, u1;
      vf v0, v1;
      qs::KernelParams p1 = p;
      if constexpr (G) p.scale = scales[i >> shift], p1.scale = scales[(i + N) >> shift];
      const vi b0 = fast_values<Stoch, Scaled, Sat, Rm, NZ>(p, x0, r0, zmax, o0, u0, v0);
      const vi b1 = fast_values<Stoch, Scaled, Sat, Rm, NZ>(p1, x1, r1, zmax, o1, u1, v1);
      if (__builtin_expect(none_set(b0 | b1), 1)) {
        ovf -= (vu)(o0 + o1);  // masks: -1 per counted lane
        unf -= (vu)(u0 + u1);
      } else {
        if (none_set(b0)) ovf -= (vu)o0, unf -= (vu)u0;
        else p0.scale = p.scale, v0 = slow_vector<Stoch, Scaled, Sat>(p0, x0, r0, slow);
        if (none_set(b1)) ovf -= (vu)o1, unf -= (vu)u1;
        else p0.scale = p1.scale, v1 = slow_vector<Stoch, Scaled, Sat>(p0, x1, r1, slow);
      }
      put(i, v0);
      put(i + N, v1);
    }
    // Overflows counted in this chunk: at most as many pairs the lean instance would redo.
    if constexpr (Lean) lean = lean_pays(overflows_since(ovf, ovf_before), pairs);
  }
  // Stochastic with saturation: the same two instances. A tile (kTile values) starts under the one the last
  // tile ended with; the lean one hands the rest of the tile over once it has redone 1 vector in 16 of it.
  if constexpr (Stoch && Sat) {
    const std::size_t vectors = (tile_end - i) / N;
    std::size_t redo = 0;
    while (lean && i < tile_end) {
      vf x0;
      std::memcpy(&x0, job.x + i, sizeof x0);
      const vu r0 = draw(i);
      vi o0, u0;
      vf v0;
      if constexpr (G) p.scale = scales[i >> shift];
      if (__builtin_expect(!none_set(fast_values<true, Scaled, false, 0, NZ>(p, x0, r0, zmax, o0, u0, v0)), 0)) {
        p0.scale = p.scale, v0 = full_vector<true, Scaled, Sat, 0, NZ>(p0, x0, r0, zmax, slow);
        lean = lean_pays(++redo, vectors);
      }
      put(i, v0);
      i += N;
    }
  }
  const vu ovf_tile = ovf;
  const std::size_t full_vectors = (tile_end - i) / N;
  while (i < tile_end) {  // nearest: at most one, the odd last vector
    vf x0;
    std::memcpy(&x0, job.x + i, sizeof x0);
    const vu r0 = draw(i);
    vi o0, u0;
    vf v0;
    if constexpr (G) p.scale = scales[i >> shift];
    const vi b0 = fast_values<Stoch, Scaled, Sat, Rm, NZ>(p, x0, r0, zmax, o0, u0, v0);
    if (none_set(b0)) ovf -= (vu)o0, unf -= (vu)u0;
    else p0.scale = p.scale, v0 = slow_vector<Stoch, Scaled, Sat>(p0, x0, r0, slow);
    put(i, v0);
    i += N;
  }
  if constexpr (Stoch && Sat) {
    // Overflows counted: at most as many vectors the lean instance would redo.
    if (full_vectors) lean = lean_pays(overflows_since(ovf, ovf_tile), full_vectors);
  }
  }
#if defined(__AVX2__) || defined(__AVX512F__)
  if constexpr (Stream) _mm_sfence();
#endif
  qs::EncodeStats st;
  for (int l = 0; l < N; ++l) {
    st.overflow += ovf[l] + slow.ovf[l];
    st.underflow += unf[l] + slow.unf[l];
    st.nan += slow.nan[l];
  }
  return st;
}

// The adder's ties-to-even (fast_values, Rm 0) needs C = 2^(e + 23 - M) finite for every e up to max's
// binade, and M < 23 (so that y is below C's binade).
inline bool adder_rne_ok(const qs::KernelParams& p) {
  return p.M >= 1 && p.M <= 22 && int((p.max_bits >> 23) & 0xff) + (23 - p.M) <= 254;
}

// Outputs of at least this many bytes are written with non-temporal stores: far beyond any L2 and a large
// part of a last-level cache, so the values would be evicted before anyone reads them (fake-quantizing a
// whole tensor). apply_scheme's chunks (2^16 values, their metrics read back at once) stay below it.
constexpr std::size_t kStreamBytes = std::size_t(8) << 20;

template <bool Stoch, bool Scaled, bool Sat, int Rm, int NZ>
qs::EncodeStats fast_job(const qs::KernelParams& p, const qs::EncodeJob& job, uint32_t key);

template <bool Stoch, bool Scaled, bool Sat, bool Plain, bool Codes>
qs::EncodeStats encode_loop(const qs::KernelParams& params, const qs::EncodeJob& job_in, uint32_t key);

// The fast path of a whole job: full vectors in fast_loop (streaming the aligned middle of a large output),
// the last partial vector through encode_loop's padded tail.
template <bool Stoch, bool Scaled, bool Sat, int Rm, int NZ>
qs::EncodeStats fast_job(const qs::KernelParams& p, const qs::EncodeJob& job, uint32_t key) {
  auto sub = [&](std::size_t b, std::size_t e) {
    qs::EncodeJob j = job;
    j.x = job.x + b;
    j.n = e - b;
    j.index0 = job.index0 + b;
    if (job.values) j.values = job.values + b;
    return j;
  };
  qs::EncodeStats st;
  std::size_t b = 0, e = job.n - job.n % N;
  if (job.values && job.n * sizeof(float) >= kStreamBytes && (reinterpret_cast<uintptr_t>(job.values) & 3u) == 0) {
    const std::size_t mis = (reinterpret_cast<uintptr_t>(job.values) / sizeof(float)) % N;
    const std::size_t head = mis ? N - mis : 0;  // elements until job.values + head is N * 4-byte aligned
    if (head) st += encode_loop<Stoch, Scaled, Sat, true, false>(p, sub(0, head), key);
    b = head;
    e = head + (job.n - head) / N * N;
    st += fast_loop<Stoch, Scaled, Sat, Rm, NZ, true>(p, sub(b, e), key);
  } else {
    st += fast_loop<Stoch, Scaled, Sat, Rm, NZ, false>(p, sub(0, e), key);
  }
  if (e < job.n) st += encode_loop<Stoch, Scaled, Sat, true, false>(p, sub(e, job.n), key);
  return st;
}

template <bool Stoch, bool Scaled, bool Sat, bool Plain, bool Codes>
qs::EncodeStats encode_loop(const qs::KernelParams& params, const qs::EncodeJob& job_in, uint32_t key) {
  // Local copies: the output stores cannot alias them, so every parameter stays in a register.
  const qs::KernelParams p = params;
  const qs::EncodeJob job = job_in;
  if constexpr (Plain && !Codes) {
    // Jobs of at least a vector take the fast loop; shorter ones (a tail, a head) the padded path below.
    if (p.fast_ok && job.n >= std::size_t(N)) {
      const bool nz = p.has_neg_zero;
      if constexpr (Stoch) return nz ? fast_job<Stoch, Scaled, Sat, 0, 1>(p, job, key) : fast_job<Stoch, Scaled, Sat, 0, 0>(p, job, key);
      else if (p.rmode == 0 && adder_rne_ok(p)) return nz ? fast_job<Stoch, Scaled, Sat, 0, 1>(p, job, key) : fast_job<Stoch, Scaled, Sat, 0, 0>(p, job, key);
      else if (p.rmode == 0) return nz ? fast_job<Stoch, Scaled, Sat, 3, 1>(p, job, key) : fast_job<Stoch, Scaled, Sat, 3, 0>(p, job, key);
      else if (p.rmode == 1) return nz ? fast_job<Stoch, Scaled, Sat, 1, 1>(p, job, key) : fast_job<Stoch, Scaled, Sat, 1, 0>(p, job, key);
      else return nz ? fast_job<Stoch, Scaled, Sat, 2, 1>(p, job, key) : fast_job<Stoch, Scaled, Sat, 2, 0>(p, job, key);
    }
  }
  Counters cnt;
  vu lane;
  for (int i = 0; i < N; ++i) lane[i] = static_cast<uint32_t>(i);
  const uint32_t base = static_cast<uint32_t>(job.index0);
  const int32_t zmax = zero_max_bits(p, -1);
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
        vi d_ovf, d_unf;
        const vi bad = fast_values<Stoch, Scaled, Sat>(p, x, rnd, zmax, d_ovf, d_unf, val);
        if (none_set(bad)) {
          cnt.ovf -= (vu)d_ovf;
          cnt.unf -= (vu)d_unf;
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

namespace {
template <bool Stoch, bool Sat>
qs::EncodeStats grouped(const qs::KernelParams& p, const qs::EncodeJob& job, uint32_t key, const float* scales,
                        unsigned shift) {
  const bool nz = p.has_neg_zero;
  if constexpr (Stoch) {
    return nz ? fast_loop<true, true, Sat, 0, 1, false, true>(p, job, key, scales, shift)
              : fast_loop<true, true, Sat, 0, 0, false, true>(p, job, key, scales, shift);
  } else {
    if (p.rmode == 0 && adder_rne_ok(p))
      return nz ? fast_loop<false, true, Sat, 0, 1, false, true>(p, job, key, scales, shift)
                : fast_loop<false, true, Sat, 0, 0, false, true>(p, job, key, scales, shift);
    if (p.rmode == 0)
      return nz ? fast_loop<false, true, Sat, 3, 1, false, true>(p, job, key, scales, shift)
                : fast_loop<false, true, Sat, 3, 0, false, true>(p, job, key, scales, shift);
    if (p.rmode == 1)
      return nz ? fast_loop<false, true, Sat, 1, 1, false, true>(p, job, key, scales, shift)
                : fast_loop<false, true, Sat, 1, 0, false, true>(p, job, key, scales, shift);
    return nz ? fast_loop<false, true, Sat, 2, 1, false, true>(p, job, key, scales, shift)
              : fast_loop<false, true, Sat, 2, 0, false, true>(p, job, key, scales, shift);
  }
}
}  // namespace

namespace qs::detail {

EncodeStats QS_CAT_ENTRY_GROUPS(const KernelParams& p, const EncodeJob& job, uint32_t key, const float* scales,
                                unsigned shift) {
  if (p.stochastic) return p.saturate ? grouped<true, true>(p, job, key, scales, shift) : grouped<true, false>(p, job, key, scales, shift);
  return p.saturate ? grouped<false, true>(p, job, key, scales, shift) : grouped<false, false>(p, job, key, scales, shift);
}

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
