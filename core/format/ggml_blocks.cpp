// ggml's block decoders, see ggml_blocks.h. Compiled with -ffp-contract=off: d * sc * q is (d * sc) * q in
// float32, never fused, as ggml's reference C computes it.
#include "format/ggml_blocks.h"

#include <cstring>
#include <stdexcept>
#include <string>

#include "format/float16.h"

namespace qs::ggml {

namespace {

constexpr BlockInfo kInfo[] = {
    {"Q4_0", 32, 18, 2},    {"Q4_1", 32, 20, 3},    {"Q5_0", 32, 22, 6},   {"Q5_1", 32, 24, 7},
    {"Q8_0", 32, 34, 8},    {"Q8_1", 32, 36, 9},    {"Q2_K", 256, 84, 10}, {"Q3_K", 256, 110, 11},
    {"Q4_K", 256, 144, 12}, {"Q5_K", 256, 176, 13}, {"Q6_K", 256, 210, 14}, {"Q8_K", 256, 292, 15},
    {"MXFP4", 32, 17, 39},
};

float half_at(const uint8_t* p) { return half_to_float(uint16_t(p[0] | (p[1] << 8))); }
uint32_t u32_at(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }

void scale_min_k4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = uint8_t((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = uint8_t((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
  }
}

void q4_0(const uint8_t* b, float* y) {
  const float d = half_at(b);
  for (int j = 0; j < 16; ++j) {
    const int x0 = (b[2 + j] & 0x0F) - 8, x1 = (b[2 + j] >> 4) - 8;
    y[j] = x0 * d;
    y[j + 16] = x1 * d;
  }
}
void q4_1(const uint8_t* b, float* y) {
  const float d = half_at(b), m = half_at(b + 2);
  for (int j = 0; j < 16; ++j) {
    const int x0 = b[4 + j] & 0x0F, x1 = b[4 + j] >> 4;
    y[j] = x0 * d + m;
    y[j + 16] = x1 * d + m;
  }
}
void q5_0(const uint8_t* b, float* y) {
  const float d = half_at(b);
  const uint32_t qh = u32_at(b + 2);
  for (int j = 0; j < 16; ++j) {
    const uint8_t xh_0 = uint8_t(((qh >> (j + 0)) << 4) & 0x10), xh_1 = uint8_t((qh >> (j + 12)) & 0x10);
    const int32_t x0 = ((b[6 + j] & 0x0F) | xh_0) - 16, x1 = ((b[6 + j] >> 4) | xh_1) - 16;
    y[j] = x0 * d;
    y[j + 16] = x1 * d;
  }
}
void q5_1(const uint8_t* b, float* y) {
  const float d = half_at(b), m = half_at(b + 2);
  const uint32_t qh = u32_at(b + 4);
  for (int j = 0; j < 16; ++j) {
    const uint8_t xh_0 = uint8_t(((qh >> (j + 0)) << 4) & 0x10), xh_1 = uint8_t((qh >> (j + 12)) & 0x10);
    const int x0 = (b[8 + j] & 0x0F) | xh_0, x1 = (b[8 + j] >> 4) | xh_1;
    y[j] = x0 * d + m;
    y[j + 16] = x1 * d + m;
  }
}
void q8_0(const uint8_t* b, float* y) {
  const float d = half_at(b);
  for (int j = 0; j < 32; ++j) y[j] = int8_t(b[2 + j]) * d;
}
void q4_k(const uint8_t* b, float* y) {  // d, dmin, scales[12], qs[128]
  const float d = half_at(b), min = half_at(b + 2);
  const uint8_t* q = b + 16;
  int is = 0;
  uint8_t sc, m;
  for (int j = 0; j < 256; j += 64) {
    scale_min_k4(is + 0, b + 4, &sc, &m);
    const float d1 = d * sc, m1 = min * m;
    scale_min_k4(is + 1, b + 4, &sc, &m);
    const float d2 = d * sc, m2 = min * m;
    for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0xF) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
    q += 32;
    is += 2;
  }
}
void q5_k(const uint8_t* b, float* y) {  // d, dmin, scales[12], qh[32], qs[128]
  const float d = half_at(b), min = half_at(b + 2);
  const uint8_t* ql = b + 48;
  const uint8_t* qh = b + 16;
  int is = 0;
  uint8_t sc, m, u1 = 1, u2 = 2;
  for (int j = 0; j < 256; j += 64) {
    scale_min_k4(is + 0, b + 4, &sc, &m);
    const float d1 = d * sc, m1 = min * m;
    scale_min_k4(is + 1, b + 4, &sc, &m);
    const float d2 = d * sc, m2 = min * m;
    for (int l = 0; l < 32; ++l) *y++ = d1 * ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
    ql += 32;
    is += 2;
    u1 = uint8_t(u1 << 2);
    u2 = uint8_t(u2 << 2);
  }
}
void q6_k(const uint8_t* b, float* y) {  // ql[128], qh[64], scales[16], d
  const float d = half_at(b + 208);
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
  for (int n = 0; n < 256; n += 128) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int8_t q1 = int8_t(((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
      const int8_t q2 = int8_t(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
      const int8_t q3 = int8_t(((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
      const int8_t q4 = int8_t(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
      y[l + 0] = d * sc[is + 0] * q1;
      y[l + 32] = d * sc[is + 2] * q2;
      y[l + 64] = d * sc[is + 4] * q3;
      y[l + 96] = d * sc[is + 6] * q4;
    }
    y += 128;
    ql += 64;
    qh += 32;
    sc += 8;
  }
}

void q2_k(const uint8_t* b, float* y) {  // scales[16], qs[64], d, dmin
  const float d = half_at(b + 80), min = half_at(b + 82);
  const uint8_t* q = b + 16;
  int is = 0;
  for (int n = 0; n < 256; n += 128) {
    int shift = 0;
    for (int j = 0; j < 4; ++j) {
      uint8_t sc = b[is++];
      float dl = d * (sc & 0xF), ml = min * (sc >> 4);
      for (int l = 0; l < 16; ++l) *y++ = dl * int8_t((q[l] >> shift) & 3) - ml;
      sc = b[is++];
      dl = d * (sc & 0xF);
      ml = min * (sc >> 4);
      for (int l = 0; l < 16; ++l) *y++ = dl * int8_t((q[l + 16] >> shift) & 3) - ml;
      shift += 2;
    }
    q += 32;
  }
}
void q3_k(const uint8_t* b, float* y) {  // hmask[32], qs[64], scales[12], d
  const float d_all = half_at(b + 108);
  const uint8_t* q = b + 32;
  const uint8_t* hm = b;
  uint8_t m = 1;
  // The 16 6-bit scales: low 4 bits in scales[0..8), high 2 bits in scales[8..12) (ggml's kmask unpacking on
  // little-endian words).
  uint32_t aux[4] = {u32_at(b + 96), u32_at(b + 100), u32_at(b + 104), 0};
  const uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f, tmp = aux[2];
  aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
  aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
  aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
  aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
  int8_t scales[16];
  for (int k = 0; k < 16; ++k) scales[k] = int8_t(uint8_t(aux[k / 4] >> (8 * (k % 4))));
  int is = 0;
  for (int n = 0; n < 256; n += 128) {
    int shift = 0;
    for (int j = 0; j < 4; ++j) {
      float dl = d_all * (scales[is++] - 32);
      for (int l = 0; l < 16; ++l) *y++ = dl * (int8_t((q[l + 0] >> shift) & 3) - ((hm[l + 0] & m) ? 0 : 4));
      dl = d_all * (scales[is++] - 32);
      for (int l = 0; l < 16; ++l) *y++ = dl * (int8_t((q[l + 16] >> shift) & 3) - ((hm[l + 16] & m) ? 0 : 4));
      shift += 2;
      m = uint8_t(m << 1);
    }
    q += 32;
  }
}
void q8_k(const uint8_t* b, float* y) {  // float d, qs[256], bsums[16]
  float d;
  std::memcpy(&d, b, 4);
  for (int j = 0; j < 256; ++j) y[j] = d * int8_t(b[4 + j]);
}
// MXFP4: an E8M0 exponent e and 32 e2m1 codes; ggml doubles the e2m1 values (kvalues_mxfp4) and halves the
// scale: 2^(e - 128), written as ggml_e8m0_to_fp32_half does (e = 255 gives 2^127, not NaN).
void mxfp4(const uint8_t* b, float* y) {
  static constexpr int8_t kv[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
  const uint8_t e = b[0];
  const uint32_t bits = e < 2 ? (0x00200000u << e) : (uint32_t(e - 1) << 23);
  float d;
  std::memcpy(&d, &bits, 4);
  for (int j = 0; j < 16; ++j) {
    y[j] = kv[b[1 + j] & 0x0F] * d;
    y[j + 16] = kv[b[1 + j] >> 4] * d;
  }
}

using DecodeBlock = void (*)(const uint8_t*, float*);
DecodeBlock decoder(BlockType t) {
  switch (t) {
    case BlockType::Q4_0: return q4_0;
    case BlockType::Q4_1: return q4_1;
    case BlockType::Q5_0: return q5_0;
    case BlockType::Q5_1: return q5_1;
    case BlockType::Q8_0: return q8_0;
    case BlockType::Q4_K: return q4_k;
    case BlockType::Q5_K: return q5_k;
    case BlockType::Q6_K: return q6_k;
    case BlockType::Q2_K: return q2_k;
    case BlockType::Q3_K: return q3_k;
    case BlockType::Q8_K: return q8_k;
    case BlockType::MXFP4: return mxfp4;
    default: return nullptr;  // Q8_1 (an activation format ggml never dequantizes)
  }
}

}  // namespace

const BlockInfo& block_info(BlockType t) { return kInfo[static_cast<int>(t)]; }

std::optional<BlockType> block_type_from_ggml(int ggml_type) {
  for (int i = 0; i < int(std::size(kInfo)); ++i)
    if (kInfo[i].ggml_type == ggml_type) return static_cast<BlockType>(i);
  return std::nullopt;
}

void dequantize(BlockType t, const uint8_t* src, std::size_t n, float* dst) {
  const BlockInfo& b = block_info(t);
  const DecodeBlock f = decoder(t);
  if (!f) throw std::invalid_argument(std::string(b.name) + ": not decoded by this build");
  if (n % b.block_elems) throw std::invalid_argument(std::string(b.name) + ": " + std::to_string(n) +
                                                     " elements is not a whole number of blocks");
  for (std::size_t i = 0; i < n / b.block_elems; ++i) f(src + i * b.block_bytes, dst + i * b.block_elems);
}

}  // namespace qs::ggml
