// ggml's reference quantizers, see ggml_quantize.h. Every float expression keeps ggml's operand order
// (a * b * c is (a * b) * c) and this file is compiled with -ffp-contract=off, so the scales and codes are
// the ones ggml-quants.c computes; fp16 fields go through float_to_half (round to nearest even, as
// GGML_FP32_TO_FP16).
#include "format/ggml_quantize.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "format/float16.h"
#include "format/ggml_quantize_simd.h"

namespace qs::ggml {

namespace {

constexpr int QK = 32;    // QK4_0 = QK4_1 = QK5_0 = QK5_1 = QK8_0
constexpr int QKK = 256;  // QK_K
constexpr float kGroupMaxEps = 1e-15f;  // GROUP_MAX_EPS

void put_half(uint8_t* p, float f) {
  const uint16_t h = float_to_half(f);
  p[0] = uint8_t(h & 0xff);
  p[1] = uint8_t(h >> 8);
}
float get_half(const uint8_t* p) { return half_to_float(uint16_t(p[0] | (p[1] << 8))); }

// ggml's nearest_int: round half to even through the 1.5 * 2^23 trick (valid for |f| <= 4194303).
int nearest_int(float f) {
  const float val = f + 12582912.f;
  int i;
  std::memcpy(&i, &val, sizeof i);
  return (i & 0x007fffff) - 0x00400000;
}

void q4_0(const float* x, uint8_t* y) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < QK; j++) {
    const float v = x[j];
    if (amax < std::fabs(v)) {
      amax = std::fabs(v);
      max = v;
    }
  }
  const float d = max / -8;
  const float id = d ? 1.0f / d : 0.0f;
  put_half(y, d);
  for (int j = 0; j < QK / 2; ++j) {
    const float x0 = x[j] * id, x1 = x[QK / 2 + j] * id;
    const uint8_t xi0 = uint8_t(std::min(15, int(int8_t(x0 + 8.5f))));
    const uint8_t xi1 = uint8_t(std::min(15, int(int8_t(x1 + 8.5f))));
    y[2 + j] = uint8_t(xi0 | (xi1 << 4));
  }
}

void q4_1(const float* x, uint8_t* y) {
  float min = FLT_MAX, max = -FLT_MAX;
  for (int j = 0; j < QK; j++) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
  const float d = (max - min) / ((1 << 4) - 1);
  const float id = d ? 1.0f / d : 0.0f;
  put_half(y, d);
  put_half(y + 2, min);
  for (int j = 0; j < QK / 2; ++j) {
    const float x0 = (x[j] - min) * id, x1 = (x[QK / 2 + j] - min) * id;
    const uint8_t xi0 = uint8_t(std::min(15, int(int8_t(x0 + 0.5f))));
    const uint8_t xi1 = uint8_t(std::min(15, int(int8_t(x1 + 0.5f))));
    y[4 + j] = uint8_t(xi0 | (xi1 << 4));
  }
}

void q5_0(const float* x, uint8_t* y) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < QK; j++) {
    const float v = x[j];
    if (amax < std::fabs(v)) {
      amax = std::fabs(v);
      max = v;
    }
  }
  const float d = max / -16;
  const float id = d ? 1.0f / d : 0.0f;
  put_half(y, d);
  uint32_t qh = 0;
  for (int j = 0; j < QK / 2; ++j) {
    const float x0 = x[j] * id, x1 = x[QK / 2 + j] * id;
    const uint8_t xi0 = uint8_t(std::min(31, int(int8_t(x0 + 16.5f))));
    const uint8_t xi1 = uint8_t(std::min(31, int(int8_t(x1 + 16.5f))));
    y[6 + j] = uint8_t((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
    qh |= ((xi0 & 0x10u) >> 4) << (j + 0);
    qh |= ((xi1 & 0x10u) >> 4) << (j + QK / 2);
  }
  for (int b = 0; b < 4; ++b) y[2 + b] = uint8_t(qh >> (8 * b));
}

void q5_1(const float* x, uint8_t* y) {
  float min = FLT_MAX, max = -FLT_MAX;
  for (int j = 0; j < QK; j++) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
  const float d = (max - min) / ((1 << 5) - 1);
  const float id = d ? 1.0f / d : 0.0f;
  put_half(y, d);
  put_half(y + 2, min);
  uint32_t qh = 0;
  for (int j = 0; j < QK / 2; ++j) {
    const float x0 = (x[j] - min) * id, x1 = (x[QK / 2 + j] - min) * id;
    const uint8_t xi0 = uint8_t(x0 + 0.5f), xi1 = uint8_t(x1 + 0.5f);
    y[8 + j] = uint8_t((xi0 & 0x0F) | ((xi1 & 0x0F) << 4));
    qh |= ((xi0 & 0x10u) >> 4) << (j + 0);
    qh |= ((xi1 & 0x10u) >> 4) << (j + QK / 2);
  }
  for (int b = 0; b < 4; ++b) y[4 + b] = uint8_t(qh >> (8 * b));
}

void q8_0(const float* x, uint8_t* y) {
  float amax = 0.0f;
  for (int j = 0; j < QK; j++) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / ((1 << 7) - 1);
  const float id = d ? 1.0f / d : 0.0f;
  put_half(y, d);
  for (int j = 0; j < QK; ++j) y[2 + j] = uint8_t(int8_t(std::round(x[j] * id)));  // roundf: half away from 0
}

// make_qkx2_quants: scale and (negated) min of n values with codes in [0, nmax], by weighted least squares
// over nstep + 1 candidate inverse scales.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min,
                       uint8_t* Laux, float rmin, float rdelta, int nstep, bool use_mad) {
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *the_min = -min;
    return 0.f;
  }
  float iscale = nmax / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = uint8_t(std::max(0, std::min(nmax, l)));
    float diff = scale * L[i] + min - x[i];
    diff = use_mad ? std::fabs(diff) : diff * diff;
    best_error += weights[i] * diff;
  }
  if (nstep < 1) {
    *the_min = -min;
    return scale;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * is + nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * (x[i] - min));
      l = std::max(0, std::min(nmax, l));
      Laux[i] = uint8_t(l);
      const float w = weights[i];
      sum_l += w * l;
      sum_l2 += w * l * l;
      sum_xl += w * l * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * Laux[i] + this_min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        cur_error += weights[i] * diff;
      }
      if (cur_error < best_error) {
        for (int i = 0; i < n; ++i) L[i] = Laux[i];
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

// make_qx_quants with rmse_type 1 (weights x^2) and no importance weights: symmetric codes in
// [-nmax, nmax - 1] stored as L = l + nmax; 19 candidate scales.
float make_qx_quants(int n, int nmax, const float* x, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    int l = nearest_int(iscale * x[i]);
    l = std::max(-nmax, std::min(nmax - 1, l));
    L[i] = int8_t(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  float scale = suml2 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(nmax + 0.1f * is) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * x[i]);
      l = std::max(-nmax, std::min(nmax - 1, l));
      const float w = x[i] * x[i];
      sumlx += w * x[i] * l;
      suml2 += w * l * l;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) {
        const int l = nearest_int(iscale * x[i]);
        L[i] = int8_t(nmax + std::max(-nmax, std::min(nmax - 1, l)));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// The 6-bit scale and min of sub-block j of a Q4_K / Q5_K block (get_scale_min_k4).
void get_scale_min_k4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = uint8_t((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = uint8_t((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
  }
}

// Q4_K (nmax 15, 21 steps from -1) and Q5_K (nmax 31, 16 steps from -0.5) share everything up to the
// packing of the codes. The sub-block search (kquant_subblocks_ref, or its vectorized twins of
// ggml_quantize_simd.h: the same bits) gives the 8 sub-block scales, mins and codes; kquant_finish quantizes
// them to the block's 12 scale bytes, writes d and dmin to y[0..4) and chooses the codes again.
struct KquantParams {
  int nmax;
  float rmin;
  int nstep;
};
constexpr KquantParams kQ4K{15, -1.f, 20}, kQ5K{31, -0.5f, 15};

// A sub-block whose quantized scale is 0 keeps the search's codes: L's, or where steps is given (the vectorized
// search), those of steps[j].
void kquant_finish(const float* x, int nmax, const float* scales, const float* mins, uint8_t* y, uint8_t* scales12,
                   uint8_t* L, const detail::KquantStep* steps) {
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < QKK / 32; ++j) {
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  std::memset(scales12, 0, 12);
  for (int j = 0; j < QKK / 32; ++j) {
    uint8_t ls = uint8_t(nearest_int(inv_scale * scales[j]));
    uint8_t lm = uint8_t(nearest_int(inv_min * mins[j]));
    ls = std::min<uint8_t>(63, ls);
    lm = std::min<uint8_t>(63, lm);
    if (j < 4) {
      scales12[j] = ls;
      scales12[j + 4] = lm;
    } else {
      scales12[j + 4] = uint8_t((ls & 0xF) | ((lm & 0xF) << 4));
      scales12[j - 4] |= uint8_t((ls >> 4) << 6);
      scales12[j - 0] |= uint8_t((lm >> 4) << 6);
    }
  }
  put_half(y, max_scale / 63.f);
  put_half(y + 2, max_min / 63.f);
  const float d0 = get_half(y), dmin0 = get_half(y + 2);
  for (int j = 0; j < QKK / 32; ++j) {
    uint8_t sc, m;
    get_scale_min_k4(j, scales12, &sc, &m);
    const float d = d0 * sc;
    if (!d) {
      if (steps) detail::kquant_codes(x + 32 * j, steps[j], nmax, L + 32 * j);
      continue;
    }
    const float dm = dmin0 * m;
    for (int ii = 0; ii < 32; ++ii) {
      int l = nearest_int((x[32 * j + ii] + dm) / d);
      L[32 * j + ii] = uint8_t(std::max(0, std::min(nmax, l)));
    }
  }
}

// The codes of a finished Q4_K / Q5_K block (d, dmin, scales[12] already at y).
void q4_k_pack(const uint8_t* L, uint8_t* y) {  // d, dmin, scales[12], qs[128]
  uint8_t* q = y + 16;
  for (int j = 0; j < QKK; j += 64) {
    for (int l = 0; l < 32; ++l) q[l] = uint8_t(L[j + l] | (L[j + l + 32] << 4));
    q += 32;
  }
}

void q5_k_pack(const uint8_t* L, uint8_t* y) {  // d, dmin, scales[12], qh[32], qs[128]
  uint8_t* qh = y + 16;
  uint8_t* ql = y + 48;
  std::memset(qh, 0, QKK / 8);
  uint8_t m1 = 1, m2 = 2;
  for (int n = 0; n < QKK; n += 64) {
    for (int j = 0; j < 32; ++j) {
      int l1 = L[n + j];
      if (l1 > 15) {
        l1 -= 16;
        qh[j] |= m1;
      }
      int l2 = L[n + j + 32];
      if (l2 > 15) {
        l2 -= 16;
        qh[j] |= m2;
      }
      ql[j] = uint8_t(l1 | (l2 << 4));
    }
    m1 = uint8_t(m1 << 2);
    m2 = uint8_t(m2 << 2);
    ql += 32;
  }
}

// nblocks Q4_K or Q5_K super-blocks, the sub-block search at `level` (Generic: the scalar reference).
void kquant_rows(BlockType t, const float* x, std::size_t nblocks, uint8_t* dst, SimdLevel level) {
  const KquantParams& k = t == BlockType::Q4_K ? kQ4K : kQ5K;
  const std::size_t bytes = block_info(t).block_bytes;
  constexpr int kMaxBlocks = 4;  // the widest kernel's super-blocks per call
  float scales[8 * kMaxBlocks], mins[8 * kMaxBlocks];
  uint8_t L[QKK * kMaxBlocks];
  detail::KquantStep steps[8 * kMaxBlocks];
  bool vectorized = false;
  std::size_t i = 0;
  while (i < nblocks) {
    std::size_t nb = 1;
    const float* xb = x + i * QKK;
#if defined(QS_HAVE_X86_SIMD)
    if (level == SimdLevel::Avx512) {
      nb = std::min<std::size_t>(nblocks - i, detail::kKquantBlocksAvx512);
      detail::kquant_subblocks_avx512(xb, int(nb), k.nmax, k.rmin, k.nstep, scales, mins, steps);
      vectorized = true;
    } else if (level == SimdLevel::Avx2) {
      nb = std::min<std::size_t>(nblocks - i, detail::kKquantBlocksAvx2);
      detail::kquant_subblocks_avx2(xb, int(nb), k.nmax, k.rmin, k.nstep, scales, mins, steps);
      vectorized = true;
    } else
#endif
    {
      detail::kquant_subblocks_ref(xb, k.nmax, k.rmin, k.nstep, scales, mins, L);
    }
    for (std::size_t b = 0; b < nb; ++b) {
      uint8_t* y = dst + (i + b) * bytes;
      kquant_finish(xb + b * QKK, k.nmax, scales + 8 * b, mins + 8 * b, y, y + 4, L + QKK * b,
                    vectorized ? steps + 8 * b : nullptr);
      if (t == BlockType::Q4_K)
        q4_k_pack(L + QKK * b, y);
      else
        q5_k_pack(L + QKK * b, y);
    }
    i += nb;
  }
}

void q6_k(const float* x, uint8_t* y) {  // ql[128], qh[64], scales[16] (int8), d
  int8_t L[QKK];
  float scales[QKK / 16];
  float max_scale = 0, max_abs_scale = 0;
  for (int ib = 0; ib < QKK / 16; ++ib) {
    const float scale = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib);
    scales[ib] = scale;
    const float abs_scale = std::fabs(scale);
    if (abs_scale > max_abs_scale) {
      max_abs_scale = abs_scale;
      max_scale = scale;
    }
  }
  uint8_t* ql = y;
  uint8_t* qh = y + 128;
  int8_t* sc = reinterpret_cast<int8_t*>(y + 192);
  if (max_abs_scale < kGroupMaxEps) {
    std::memset(y, 0, 210);
    put_half(y + 208, 0.f);
    return;
  }
  const float iscale = -128.f / max_scale;
  put_half(y + 208, 1 / iscale);
  for (int ib = 0; ib < QKK / 16; ++ib) sc[ib] = int8_t(std::min(127, nearest_int(iscale * scales[ib])));
  const float d0 = get_half(y + 208);
  for (int j = 0; j < QKK / 16; ++j) {
    const float d = d0 * sc[j];
    if (!d) continue;
    for (int ii = 0; ii < 16; ++ii) {
      int l = nearest_int(x[16 * j + ii] / d);
      l = std::max(-32, std::min(31, l));
      L[16 * j + ii] = int8_t(l + 32);
    }
  }
  for (int j = 0; j < QKK; j += 128) {
    for (int l = 0; l < 32; ++l) {
      const uint8_t q1 = L[j + l + 0] & 0xF, q2 = L[j + l + 32] & 0xF, q3 = L[j + l + 64] & 0xF,
                    q4 = L[j + l + 96] & 0xF;
      ql[l + 0] = uint8_t(q1 | (q3 << 4));
      ql[l + 32] = uint8_t(q2 | (q4 << 4));
      qh[l] = uint8_t((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                      ((L[j + l + 96] >> 4) << 6));
    }
    ql += 64;
    qh += 32;
  }
}

using QuantizeBlock = void (*)(const float*, uint8_t*);
QuantizeBlock quantizer(BlockType t) {
  switch (t) {
    case BlockType::Q4_0: return q4_0;
    case BlockType::Q4_1: return q4_1;
    case BlockType::Q5_0: return q5_0;
    case BlockType::Q5_1: return q5_1;
    case BlockType::Q8_0: return q8_0;
    case BlockType::Q4_K:
    case BlockType::Q5_K: return nullptr;  // kquant_rows
    case BlockType::Q6_K: return q6_k;
    default: return nullptr;
  }
}

bool is_kquant(BlockType t) { return t == BlockType::Q4_K || t == BlockType::Q5_K; }

void check_n(BlockType t, std::size_t n) {
  const unsigned be = block_info(t).block_elems;
  if (n % be) throw std::invalid_argument(std::string(block_info(t).name) + ": " + std::to_string(n) +
                                          " elements is not a whole number of blocks of " + std::to_string(be));
}

}  // namespace

namespace detail {

void kquant_subblocks_ref(const float* x, int nmax, float rmin, int nstep, float* scales, float* mins, uint8_t* L) {
  float weights[32];
  uint8_t Laux[32];
  for (int j = 0; j < QKK / 32; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
    scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin, 0.1f, nstep, false);
  }
}

void kquant_codes(const float* x, const KquantStep& s, int nmax, uint8_t* L) {
  for (int i = 0; i < 32; ++i)
    L[i] = s.flat ? uint8_t(0) : uint8_t(std::max(0, std::min(nmax, nearest_int(s.iscale * (x[i] - s.min)))));
}

const std::vector<KquantKernel>& kquant_kernels() {
  static const std::vector<KquantKernel> k = {
#if defined(QS_HAVE_X86_SIMD)
      {SimdLevel::Avx2, kKquantBlocksAvx2, kquant_subblocks_avx2},
      {SimdLevel::Avx512, kKquantBlocksAvx512, kquant_subblocks_avx512},
#endif
  };
  return k;
}

}  // namespace detail

bool has_quantizer(BlockType t) { return quantizer(t) != nullptr || is_kquant(t); }

std::size_t quantized_bytes(BlockType t, std::size_t n) {
  const BlockInfo& b = block_info(t);
  return n / b.block_elems * b.block_bytes;
}

void quantize_ref(BlockType t, const float* x, std::size_t n, uint8_t* dst, SimdLevel level) {
  const QuantizeBlock q = quantizer(t);
  if (!q && !is_kquant(t)) throw std::invalid_argument(std::string(block_info(t).name) + ": QuantScope has no quantizer for this type");
  check_n(t, n);
  const BlockInfo& b = block_info(t);
  if (is_kquant(t)) return kquant_rows(t, x, n / b.block_elems, dst, level);
  for (std::size_t i = 0; i < n / b.block_elems; ++i) q(x + i * b.block_elems, dst + i * b.block_bytes);
}

unsigned sub_block_elems(BlockType t) {
  switch (t) {
    case BlockType::Q4_K:
    case BlockType::Q5_K: return 32;
    case BlockType::Q6_K: return 16;
    default: return block_info(t).block_elems;
  }
}

unsigned sub_block_code_count(BlockType t) {
  switch (t) {
    case BlockType::Q4_0:
    case BlockType::Q4_1:
    case BlockType::Q4_K: return 16;
    case BlockType::Q5_0:
    case BlockType::Q5_1:
    case BlockType::Q5_K: return 32;
    case BlockType::Q6_K: return 64;
    case BlockType::Q8_0: return 256;
    default: return 0;
  }
}

void clip_ranges(BlockType t, const uint8_t* blocks, std::size_t n, double* lo, double* hi) {
  check_n(t, n);
  const BlockInfo& b = block_info(t);
  std::size_t k = 0;
  // Codes c in [c0, c1] decode to d * c + m (d may be negative): the interval of both ends, widened by
  // half a step.
  auto put = [&](float d, float m, int c0, int c1) {
    const double a = double(d * float(c0) + m), z = double(d * float(c1) + m), h = 0.5 * std::fabs(double(d));
    lo[k] = std::min(a, z) - h;
    hi[k] = std::max(a, z) + h;
    ++k;
  };
  for (std::size_t i = 0; i < n / b.block_elems; ++i) {
    const uint8_t* p = blocks + i * b.block_bytes;
    switch (t) {
      case BlockType::Q4_0: put(get_half(p), 0.f, -8, 7); break;
      case BlockType::Q5_0: put(get_half(p), 0.f, -16, 15); break;
      case BlockType::Q4_1: put(get_half(p), get_half(p + 2), 0, 15); break;
      case BlockType::Q5_1: put(get_half(p), get_half(p + 2), 0, 31); break;
      case BlockType::Q8_0: put(get_half(p), 0.f, -128, 127); break;
      case BlockType::Q4_K:
      case BlockType::Q5_K: {
        const float d = get_half(p), dmin = get_half(p + 2);
        for (int j = 0; j < 8; ++j) {
          uint8_t sc, m;
          get_scale_min_k4(j, p + 4, &sc, &m);
          put(d * sc, -(dmin * m), 0, t == BlockType::Q4_K ? 15 : 31);
        }
        break;
      }
      case BlockType::Q6_K: {
        const float d = get_half(p + 208);
        for (int j = 0; j < 16; ++j) put(d * float(int8_t(p[192 + j])), 0.f, -32, 31);
        break;
      }
      default:
        throw std::invalid_argument(std::string(b.name) + ": no clip ranges for this type");
    }
  }
}

}  // namespace qs::ggml
