// make_qkx2_quants (format/ggml_quantize.cpp) for QS_LANES sub-blocks at once, written with vector
// extensions; ggml_quantize_simd_{avx2,avx512}.cpp define QS_LANES and QS_SUFFIX and include this file.
// Every lane runs the scalar code's operations in its order: the same sums element by element, the same
// divisions and square root (IEEE, correctly rounded in both), nearest_int by the same bit trick, and the
// scalar code's branches as lane selects (a lane's result never depends on another lane's).
#include <cstring>

#include "format/ggml_quantize_simd.h"

#define QS_CAT2(a, b) a##b
#define QS_CAT(a, b) QS_CAT2(a, b)

namespace {
constexpr int NL = QS_LANES;
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
}  // namespace

namespace qs::ggml::detail {

void QS_CAT(kquant_subblocks_, QS_SUFFIX)(const float* x, int nmax, float rmin, int nstep, float* scales_out,
                                          float* mins_out, uint8_t* L_out) {
  constexpr int n = 32;
  const float rdelta = 0.1f;
  vf xv[n], w[n];
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < NL; ++j) xv[i][j] = x[n * j + i];
  // kquant_scales: weights sqrt(mean x^2) + |x|
  vf sum_x2 = xv[0] * xv[0];
  for (int l = 1; l < n; ++l) sum_x2 += xv[l] * xv[l];
  vf av_x = sum_x2 / 32;
  for (int j = 0; j < NL; ++j) av_x[j] = __builtin_sqrtf(av_x[j]);
  for (int l = 0; l < n; ++l) {
    vi bits;
    std::memcpy(&bits, &xv[l], sizeof bits);
    bits &= 0x7fffffff;
    vf ax;
    std::memcpy(&ax, &bits, sizeof ax);
    w[l] = av_x + ax;
  }
  // make_qkx2_quants
  vf min = xv[0], max = xv[0];
  vf sum_w = w[0];
  vf sum_x = sum_w * xv[0];
  for (int i = 1; i < n; ++i) {
    min = xv[i] < min ? xv[i] : min;
    max = xv[i] > max ? xv[i] : max;
    sum_w += w[i];
    sum_x += w[i] * xv[i];
  }
  const vf zero = {};
  min = min > zero ? zero : min;
  const vi flat = max == min;
  const vf min0 = min;  // a flat lane's search below runs on garbage (max - min = 0) and is discarded
  const vf fnmax = zero + float(nmax);
  vf iscale = fnmax / (max - min);
  vf scale = 1 / iscale;
  vf best_error = zero;
  vi L[n];
  for (int i = 0; i < n; ++i) {
    L[i] = clamp(nearest_int(iscale * (xv[i] - min)), nmax);
    vf diff = scale * __builtin_convertvector(L[i], vf) + min - xv[i];
    diff = diff * diff;
    best_error += w[i] * diff;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * float(is) + fnmax) / (max - min);
    vf sum_l = zero, sum_l2 = zero, sum_xl = zero;
    vf lf[n];
    vi laux[n];
    for (int i = 0; i < n; ++i) {
      laux[i] = clamp(nearest_int(iscale * (xv[i] - min)), nmax);
      lf[i] = __builtin_convertvector(laux[i], vf);
      sum_l += w[i] * lf[i];
      sum_l2 += w[i] * lf[i] * lf[i];
      sum_xl += w[i] * lf[i] * xv[i];
    }
    const vf D = sum_w * sum_l2 - sum_l * sum_l;
    const vi pos = D > zero;
    vf this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
    vf this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
    const vi minpos = this_min > zero;
    this_min = minpos ? zero : this_min;
    this_scale = minpos ? sum_xl / sum_l2 : this_scale;
    vf cur_error = zero;
    for (int i = 0; i < n; ++i) {
      vf diff = this_scale * lf[i] + this_min - xv[i];
      diff = diff * diff;
      cur_error += w[i] * diff;
    }
    const vi take = pos & (cur_error < best_error);
    for (int i = 0; i < n; ++i) L[i] = take ? laux[i] : L[i];
    best_error = take ? cur_error : best_error;
    scale = take ? this_scale : scale;
    min = take ? this_min : min;
  }
  // The flat sub-blocks (max == min) return at once in the scalar code: codes 0, scale 0, min -min.
  scale = flat ? zero : scale;
  const vf neg_min = flat ? -min0 : -min;
  for (int j = 0; j < NL; ++j) {
    scales_out[j] = scale[j];
    mins_out[j] = neg_min[j];
    for (int i = 0; i < n; ++i) L_out[n * j + i] = flat[j] ? uint8_t(0) : uint8_t(L[i][j]);
  }
}

}  // namespace qs::ggml::detail
