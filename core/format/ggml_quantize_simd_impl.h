// make_qkx2_quants (format/ggml_quantize.cpp) for 2 * QS_LANES sub-blocks at once, written with vector
// extensions; ggml_quantize_simd_{avx2,avx512}.cpp define QS_LANES (float lanes of a register) and QS_SUFFIX
// and include this file.
// Every lane runs the scalar code's operations in its order: the same sums element by element, the same
// divisions and square root (IEEE, correctly rounded in both), nearest_int by the same bit trick, and the
// scalar code's branches as lane selects (a lane's result never depends on another lane's). Two shortcuts
// with the same results: a step's codes are rounded in float where every lane's product is small (see
// codes()), and the codes are not kept: the winning step's iscale and min are returned (KquantStep), from
// which kquant_codes computes them where they are needed.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "format/ggml_quantize_simd.h"

#define QS_CAT2(a, b) a##b
#define QS_CAT(a, b) QS_CAT2(a, b)

namespace {

constexpr int NL = QS_LANES;  // sub-blocks per register
constexpr int H = 2;          // registers per call: two independent chains for every sum
typedef float vf __attribute__((vector_size(NL * 4)));
typedef int32_t vi __attribute__((vector_size(NL * 4)));

inline vi nearest_int(vf f) {  // ggml's nearest_int: (bits(f + 1.5 * 2^23) & 0x7fffff) - 0x400000
  const vf val = f + 12582912.f;
  vi i;
  std::memcpy(&i, &val, sizeof i);
  return (i & 0x007fffff) - 0x00400000;
}
inline vi clamp(vi l, int hi) {
  const vi z = {};
  l = l < z ? z : l;
  return l > hi ? z + hi : l;
}
inline vf to_float(vi l) { return __builtin_convertvector(l, vf); }
// One instruction each, with the selects' exact semantics: max_first(a, b) = a > b ? a : b and
// min_first(a, b) = a < b ? a : b (vmaxps / vminps return the second operand on NaN and on equal zeros), and
// round_even(f) = f rounded to the nearest integer, ties to even (vroundps / vrndscaleps, mode 0).
#if QS_LANES == 8
inline vf max_first(vf a, vf b) { return (vf)_mm256_max_ps((__m256)a, (__m256)b); }
inline vf min_first(vf a, vf b) { return (vf)_mm256_min_ps((__m256)a, (__m256)b); }
inline vf round_even(vf f) { return (vf)_mm256_round_ps((__m256)f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
#elif QS_LANES == 16
// GCC 12 warns of _mm512_undefined_ps's self-initialisation inside these intrinsics (a false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
inline vf max_first(vf a, vf b) { return (vf)_mm512_max_ps((__m512)a, (__m512)b); }
inline vf min_first(vf a, vf b) { return (vf)_mm512_min_ps((__m512)a, (__m512)b); }
inline vf round_even(vf f) {
  return (vf)_mm512_roundscale_ps((__m512)f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
#else
#error "QS_LANES must be 8 or 16"
#endif

// H * NL sub-blocks of 32 at x; register h, lane k holds sub-block h * NL + k.
void run(const float* x, int nmax, float rmin, int nstep, float* scales_out, float* mins_out,
         qs::ggml::detail::KquantStep* steps_out) {
  constexpr int n = 32;
  const float rdelta = 0.1f;
  const vf zero = {};
  vf xv[n][H], w[n][H];
  for (int i = 0; i < n; ++i)
    for (int h = 0; h < H; ++h)
      for (int k = 0; k < NL; ++k) xv[i][h][k] = x[n * (h * NL + k) + i];
  vf min[H], max[H], xmin[H], sum_w[H], sum_x[H], min0[H], best_error[H], scale[H];
  // The codes are not kept per step: the step that wins records its iscale and min (L_iscale, L_min), and the
  // codes are computed once at the end from them, the same operations on the same floats.
  vf L_iscale[H], L_min[H];
  vi flat[H];
  for (int h = 0; h < H; ++h) {
    // kquant_scales: weights sqrt(mean x^2) + |x|
    vf sum_x2 = xv[0][h] * xv[0][h];
    for (int l = 1; l < n; ++l) sum_x2 += xv[l][h] * xv[l][h];
    vf av_x = sum_x2 / 32;
    for (int k = 0; k < NL; ++k) av_x[k] = __builtin_sqrtf(av_x[k]);
    for (int l = 0; l < n; ++l) {
      vi bits;
      std::memcpy(&bits, &xv[l][h], sizeof bits);
      bits &= 0x7fffffff;
      vf ax;
      std::memcpy(&ax, &bits, sizeof ax);
      w[l][h] = av_x + ax;
    }
    // make_qkx2_quants
    min[h] = xv[0][h], max[h] = xv[0][h];
    sum_w[h] = w[0][h];
    sum_x[h] = sum_w[h] * xv[0][h];
    for (int i = 1; i < n; ++i) {
      min[h] = xv[i][h] < min[h] ? xv[i][h] : min[h];
      max[h] = xv[i][h] > max[h] ? xv[i][h] : max[h];
      sum_w[h] += w[i][h];
      sum_x[h] += w[i][h] * xv[i][h];
    }
    xmin[h] = min[h];
    min[h] = min[h] > zero ? zero : min[h];
    flat[h] = max[h] == min[h];
    min0[h] = min[h];  // a flat lane's search below runs on garbage (max - min = 0) and is discarded
    const vf iscale = float(nmax) / (max[h] - min[h]);
    L_iscale[h] = iscale, L_min[h] = min[h];
    scale[h] = 1 / iscale;
    best_error[h] = zero;
    for (int i = 0; i < n; ++i) {
      const vf lf = to_float(clamp(nearest_int(iscale * (xv[i][h] - min[h])), nmax));
      vf diff = scale[h] * lf + min[h] - xv[i][h];
      diff = diff * diff;
      best_error[h] += w[i][h] * diff;
    }
  }
  for (int is = 0; is <= nstep; ++is) {
    const float num = rmin + rdelta * float(is) + float(nmax);
    vf iscale[H], sum_l[H], sum_l2[H], sum_xl[H], lf[n][H];
    bool small = true;  // every lane's iscale * (x - min) within +-2^21: see below
    bool low = false, high = false;  // some lane's codes round below 0, above nmax
    for (int h = 0; h < H; ++h) {
      iscale[h] = num / (max[h] - min[h]);  // min: the best candidate's so far, as in ggml
      sum_l[h] = sum_l2[h] = sum_xl[h] = zero;
      // fl(iscale * fl(x - min)) is monotone in x, so its extremes come from xmin and max (NaN fails the test).
      const vf a = iscale[h] * (xmin[h] - min[h]), b = iscale[h] * (max[h] - min[h]);
      const vi in = (a > -0x1p21f) & (a < 0x1p21f) & (b > -0x1p21f) & (b < 0x1p21f);
      // Rounded to even, a >= -0.5 gives -0 or more and b < nmax + 0.5 gives nmax or less (nmax + 0.5 rounds
      // up to the even nmax + 1).
      const vi lo_out = a < -0.5f, hi_out = b >= float(nmax) + 0.5f;
      for (int k = 0; k < NL; ++k) {
        small &= in[k] != 0;
        low |= lo_out[k] != 0;
        high |= hi_out[k] != 0;
      }
    }
    // The codes as floats. For |f| < 2^21, nearest_int(f) is f rounded to the nearest integer, ties to even
    // (it rounds f + 1.5 * 2^23 to an integer of [2^23, 2^24)), and the clamp in float is the clamp: 3
    // instructions instead of 6. round_even gives -0 where f is in (-0.5, -0], where nearest_int gives 0:
    // the same results, since w * -0 and -0 * x are zeros, and adding a zero to a sum that starts at +0
    // leaves it as it is (a sum never becomes -0); in the error pass this_scale * -0 + this_min is this_min
    // (+0 where this_min is +-0 and the product is +-0, as with +0).
    const vf top = zero + float(nmax);
    // Where no lane's codes reach below 0 (above nmax), that side's clamp is left out: the same values.
    auto codes = [&](auto is_small, auto clamp_low, auto clamp_high) __attribute__((always_inline)) {
      for (int i = 0; i < n; ++i)
        for (int h = 0; h < H; ++h) {
          const vf f = iscale[h] * (xv[i][h] - min[h]);
          if constexpr (decltype(is_small)::value) {
            vf r = round_even(f);
            if constexpr (decltype(clamp_low)::value) r = max_first(zero, r);
            if constexpr (decltype(clamp_high)::value) r = min_first(top, r);
            lf[i][h] = r;
          } else {
            lf[i][h] = to_float(clamp(nearest_int(f), nmax));
          }
          sum_l[h] += w[i][h] * lf[i][h];
          sum_l2[h] += w[i][h] * lf[i][h] * lf[i][h];
          sum_xl[h] += w[i][h] * lf[i][h] * xv[i][h];
        }
    };
    using T = std::true_type;
    using F = std::false_type;
    if (!small) codes(F{}, T{}, T{});
    else if (low && high) codes(T{}, T{}, T{});
    else if (low) codes(T{}, T{}, F{});
    else if (high) codes(T{}, F{}, T{});
    else codes(T{}, F{}, F{});
    vf this_scale[H], this_min[H], cur_error[H];
    vi pos[H];
    for (int h = 0; h < H; ++h) {
      const vf D = sum_w[h] * sum_l2[h] - sum_l[h] * sum_l[h];
      pos[h] = D > zero;
      this_scale[h] = (sum_w[h] * sum_xl[h] - sum_x[h] * sum_l[h]) / D;
      this_min[h] = (sum_l2[h] * sum_x[h] - sum_l[h] * sum_xl[h]) / D;
      const vi minpos = this_min[h] > zero;
      this_min[h] = minpos ? zero : this_min[h];
      this_scale[h] = minpos ? sum_xl[h] / sum_l2[h] : this_scale[h];
      cur_error[h] = zero;
    }
    for (int i = 0; i < n; ++i)
      for (int h = 0; h < H; ++h) {
        vf diff = this_scale[h] * lf[i][h] + this_min[h] - xv[i][h];
        diff = diff * diff;
        cur_error[h] += w[i][h] * diff;
      }
    for (int h = 0; h < H; ++h) {
      const vi take = pos[h] & (cur_error[h] < best_error[h]);
      L_iscale[h] = take ? iscale[h] : L_iscale[h];
      L_min[h] = take ? min[h] : L_min[h];
      best_error[h] = take ? cur_error[h] : best_error[h];
      scale[h] = take ? this_scale[h] : scale[h];
      min[h] = take ? this_min[h] : min[h];
    }
  }
  for (int h = 0; h < H; ++h) {
    // The flat sub-blocks (max == min) return at once in the scalar code: codes 0, scale 0, min -min.
    const vf sc = flat[h] ? zero : scale[h];
    const vf neg_min = flat[h] ? -min0[h] : -min[h];
    for (int k = 0; k < NL; ++k) {
      const int j = h * NL + k;
      scales_out[j] = sc[k];
      mins_out[j] = neg_min[k];
      steps_out[j] = {L_iscale[h][k], L_min[h][k], uint8_t(flat[h][k] ? 1 : 0)};
    }
  }
}

}  // namespace

namespace qs::ggml::detail {

// Two registers of sub-blocks per call (2 super-blocks at AVX2, 4 at AVX-512) give each addition's latency chain a twin to
// overlap with; fewer super-blocks are padded with zeros (the lanes never mix).
void QS_CAT(kquant_subblocks_, QS_SUFFIX)(const float* x, int nblocks, int nmax, float rmin, int nstep,
                                          float* scales_out, float* mins_out, KquantStep* steps_out) {
  if (nblocks * 8 == H * NL) return run(x, nmax, rmin, nstep, scales_out, mins_out, steps_out);
  float xp[32 * H * NL] = {}, sp[H * NL], mp[H * NL];
  KquantStep tp[H * NL];
  std::memcpy(xp, x, sizeof(float) * 256 * std::size_t(nblocks));
  run(xp, nmax, rmin, nstep, sp, mp, tp);
  std::memcpy(scales_out, sp, sizeof(float) * 8 * std::size_t(nblocks));
  std::memcpy(mins_out, mp, sizeof(float) * 8 * std::size_t(nblocks));
  std::copy(tp, tp + 8 * nblocks, steps_out);
}

}  // namespace qs::ggml::detail
