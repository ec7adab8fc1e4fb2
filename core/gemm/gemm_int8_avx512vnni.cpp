// The AVX-512 VNNI int8 kernel: an 8-row x 48-column register tile (24 zmm accumulators), B columns
// loaded as 3 zmm per group of 4 k, each A row's 4 bytes broadcast, one vpdpbusd (u8 x s8 -> s32) per
// row and vector. Compiled with -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx512vnni and called only
// after a runtime check (gemm.cpp). Exercise: tests/tst_gemm.cpp, `quantscope-cli bench gemm`.
#include <immintrin.h>

#include <cstring>

#include "gemm/gemm_impl.h"

namespace qs::detail {
namespace {

constexpr int NV = kGemmPanel / 16;  // zmm vectors per tile row

inline __m512i bcast32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

inline __mmask16 col_mask(int cols, int v) {
  const int n = cols - 16 * v;
  return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
}

template <int R>
void micro(const Tile& t) {
  __m512i acc[R][NV];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_si512();
  const uint8_t* a = t.a;
  const int8_t* b = t.b;
  for (int g = 0; g < t.kgs; ++g) {
    __m512i bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = _mm512_load_si512(b + 64 * v);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512i av = bcast32(a + 4 * r);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], av, bv[v]);
    }
    a += 4 * R;
    b += 4 * kGemmPanel;
  }

  __mmask16 m[NV];
  for (int v = 0; v < NV; ++v) m[v] = col_mask(t.cols, v);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    int32_t* o = t.out + r * t.ld;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      if (!m[v]) continue;
      __m512i x = acc[r][v];
      if (t.accumulate) x = _mm512_add_epi32(x, _mm512_maskz_loadu_epi32(m[v], o + 16 * v));
      if (!t.final) {
        _mm512_mask_storeu_epi32(o + 16 * v, m[v], x);
        continue;
      }
      x = _mm512_sub_epi32(x, _mm512_mullo_epi32(_mm512_set1_epi32(t.alpha[r]), _mm512_loadu_si512(t.u + 16 * v)));
      if (t.has_beta)
        x = _mm512_sub_epi32(x, _mm512_mullo_epi32(_mm512_set1_epi32(t.ra[r]), _mm512_loadu_si512(t.beta + 16 * v)));
      if (!t.float_out) {
        _mm512_mask_storeu_epi32(o + 16 * v, m[v], x);
      } else {
        __m512 y = _mm512_mul_ps(_mm512_cvtepi32_ps(x), _mm512_set1_ps(t.sa[r]));
        y = _mm512_mul_ps(y, _mm512_loadu_ps(t.sb + 16 * v));
        y = _mm512_add_ps(y, _mm512_loadu_ps(t.bias + 16 * v));
        _mm512_mask_storeu_ps(reinterpret_cast<float*>(o) + 16 * v, m[v], y);
      }
    }
  }
}

struct Vnni {
  static constexpr int MR = kMrVnni, NT = kGemmPanel, ESZ = kEszVnni;
  static void dispatch(int rows, const Tile& t) {
    switch (rows) {
      case 8: micro<8>(t); break;
      case 7: micro<7>(t); break;
      case 6: micro<6>(t); break;
      case 5: micro<5>(t); break;
      case 4: micro<4>(t); break;
      case 3: micro<3>(t); break;
      case 2: micro<2>(t); break;
      default: micro<1>(t); break;
    }
  }
};
static_assert(kMrVnni == 8);

}  // namespace

void gemm_tiles_vnni(const GemmJob& j, int pb, int pe, int mb, int me) { run_blocked<Vnni>(j, pb, pe, mb, me); }

}  // namespace qs::detail
