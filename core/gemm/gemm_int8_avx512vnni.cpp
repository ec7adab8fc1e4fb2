// The AVX-512 VNNI int8 kernel: an 8-row x 48-column register tile (24 zmm accumulators), B columns
// loaded as 3 zmm per group of 4 k, each A row's 4 bytes broadcast, one vpdpbusd (u8 x s8 -> s32) per
// row and vector. Compiled with -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx512vnni and called only
// after a runtime check (gemm.cpp). Exercise: tests/tst_gemm.cpp, `quantscope-cli bench gemm`.
// GCC 12 flags the _mm512_undefined_* operands inside the AVX-512 intrinsics as uninitialized.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "gemm/gemm_impl.h"

namespace qs::detail {
namespace {

constexpr int kMaxNV = kGemmPanel / 16;  // zmm vectors per tile row

inline __m512i bcast32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

inline __mmask16 col_mask(int cols, int v) {
  const int n = cols - 16 * v;
  return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
}

// R rows x NV vectors of 16 columns; the last panel of a matrix runs with only the vectors it needs.
template <int R, int NV>
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

template <int R>
void micro_cols(const Tile& t) {
  if (t.cols > 32)
    micro<R, 3>(t);
  else if (t.cols > 16)
    micro<R, 2>(t);
  else
    micro<R, 1>(t);
}

struct Vnni {
  static constexpr int MR = kMrVnni, NT = kGemmPanel, ESZ = kEszVnni;
  static void dispatch(int rows, const Tile& t) {
    switch (rows) {
      case 8: micro_cols<8>(t); break;
      case 7: micro_cols<7>(t); break;
      case 6: micro_cols<6>(t); break;
      case 5: micro_cols<5>(t); break;
      case 4: micro_cols<4>(t); break;
      case 3: micro_cols<3>(t); break;
      case 2: micro_cols<2>(t); break;
      default: micro_cols<1>(t); break;
    }
  }
};
static_assert(kMaxNV == 3);
static_assert(kMrVnni == 8);

}  // namespace

void gemm_tiles_vnni(const GemmJob& j, int pb, int pe, int mb, int me) { run_blocked<Vnni>(j, pb, pe, mb, me); }

// Packs full 8-row panels 64 bytes of K at a time: a' = a ^ 0x80 (int8) or a (uint8), zero past K,
// an 8 x 16 dword transpose into [group][row], and row sums through vpsadbw. A last panel of fewer
// rows goes through the scalar loop.
void pack_a_vnni(const QMatrixA& A, int KG, uint8_t* apack, int32_t* ra, int row_begin, int row_end) {
  constexpr int MR = kMrVnni;
  const auto* src = static_cast<const uint8_t*>(A.data);
  const uint8_t flip8 = A.type == QType::S8 ? 0x80 : 0x00;
  const __m512i flip = _mm512_set1_epi8(char(flip8)), zero = _mm512_setzero_si512();
  const __m512i s1lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i s1hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  const __m512i s2lo = _mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11);
  const __m512i s2hi = _mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15);
  const __m512i s3lo = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
  const __m512i s3hi = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
  for (int p0 = row_begin; p0 < row_end; p0 += MR) {
    const int rows = A.M - p0 < MR ? A.M - p0 : MR;
    uint8_t* dst = apack + std::ptrdiff_t(p0) * KG * 4;
    if (rows < MR) {
      for (int r = 0; r < rows; ++r) {
        const uint8_t* row = src + std::ptrdiff_t(p0 + r) * A.ld;
        uint32_t sum = 0;
        for (int g = 0; g < KG; ++g)
          for (int t = 0; t < 4; ++t) {
            const int k = 4 * g + t;
            const uint8_t v = k < A.K ? uint8_t(row[k] ^ flip8) : 0;
            dst[(std::ptrdiff_t(g) * rows + r) * 4 + t] = v;
            sum += v;
          }
        ra[p0 + r] = int32_t(sum);
      }
      continue;
    }
    __m512i sums[MR];
    for (int r = 0; r < MR; ++r) sums[r] = zero;
    for (int k0 = 0, g0 = 0; k0 < A.K; k0 += 64, g0 += 16) {
      const int n = A.K - k0 < 64 ? A.K - k0 : 64;
      const __mmask64 km = n == 64 ? ~__mmask64(0) : (__mmask64(1) << n) - 1;
      __m512i R[MR];
#pragma GCC unroll 8
      for (int r = 0; r < MR; ++r) {
        const uint8_t* row = src + std::ptrdiff_t(p0 + r) * A.ld + k0;
        const __m512i x = _mm512_xor_si512(_mm512_maskz_loadu_epi8(km, row), _mm512_maskz_mov_epi8(km, flip));
        sums[r] = _mm512_add_epi64(sums[r], _mm512_sad_epu8(x, zero));
        R[r] = x;
      }
      __m512i P[8], Q[8];
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {  // (R2q, R2q+1) interleaved by dword: qword g = rows 2q, 2q+1 of group g
        P[2 * q] = _mm512_permutex2var_epi32(R[2 * q], s1lo, R[2 * q + 1]);
        P[2 * q + 1] = _mm512_permutex2var_epi32(R[2 * q], s1hi, R[2 * q + 1]);
      }
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {  // 128-bit unit = 4 rows of one group; Q[4h + ...] rows 0-3, Q[4h + 2 ...] rows 4-7
        Q[4 * h + 0] = _mm512_permutex2var_epi64(P[0 + h], s2lo, P[2 + h]);  // groups 8h + 0..3, rows 0-3
        Q[4 * h + 1] = _mm512_permutex2var_epi64(P[0 + h], s2hi, P[2 + h]);  // groups 8h + 4..7, rows 0-3
        Q[4 * h + 2] = _mm512_permutex2var_epi64(P[4 + h], s2lo, P[6 + h]);  // groups 8h + 0..3, rows 4-7
        Q[4 * h + 3] = _mm512_permutex2var_epi64(P[4 + h], s2hi, P[6 + h]);  // groups 8h + 4..7, rows 4-7
      }
      const int G = KG - g0 < 16 ? KG - g0 : 16;
      uint8_t* d = dst + std::ptrdiff_t(g0) * MR * 4;
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) {  // groups 4q .. 4q+3
        const __m512i lo = Q[(q / 2) * 4 + (q % 2)], hi = Q[(q / 2) * 4 + 2 + (q % 2)];
        const __m512i o0 = _mm512_permutex2var_epi64(lo, s3lo, hi);  // groups 4q, 4q+1
        const __m512i o1 = _mm512_permutex2var_epi64(lo, s3hi, hi);  // groups 4q+2, 4q+3
        const int g = 4 * q;
        if (g < G) _mm512_mask_storeu_epi32(d + g * 32, g + 1 < G ? __mmask16(0xFFFF) : __mmask16(0x00FF), o0);
        if (g + 2 < G) _mm512_mask_storeu_epi32(d + (g + 2) * 32, g + 3 < G ? __mmask16(0xFFFF) : __mmask16(0x00FF), o1);
      }
    }
    for (int r = 0; r < MR; ++r) ra[p0 + r] = int32_t(_mm512_reduce_add_epi64(sums[r]));
  }
}

}  // namespace qs::detail
