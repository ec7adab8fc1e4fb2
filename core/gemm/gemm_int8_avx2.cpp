// The AVX2 int8 kernels for CPUs without VNNI (gemm.cpp picks one per call, see GemmKernel in gemm.h).
// Compiled with -mavx2 -mfma and called only after a runtime check. Exercise: tests/tst_gemm.cpp,
// `quantscope-cli bench gemm --kernels int8-avx2`.
//
// Sign trick (Avx2SignA / Avx2SignB, the usual path): vpmaddubsw multiplies unsigned by signed bytes and
// adds pairs into int16 with saturation. With u = |a| (0..128 as unsigned) and s = sign(a) * b (vpsignb)
// every product u * s equals a * b, and a pair sum is at most 2 * 128 * 127 = 32512 in magnitude as long
// as s never needs +128, i.e. b is never -128 (vpsignb would wrap -(-128) to -128). vpmaddwd with ones
// then adds the two pairs of each group of 4 k into an int32 lane: exact. Avx2SignA takes the sign from A
// (needs B free of -128), Avx2SignB from B (needs A free of -128). A tile is R x 8V columns: R x V ymm
// accumulators in column order (no horizontal fold), B read straight from the shared packed layout.
//
// Avx2Madd16 (the fallback when both operands hold -128): A packed as 16-bit a', B widened with
// vpmovsxbw; vpmaddwd then adds exact pairs into int32 lanes that hold (column, k-pair) partial sums,
// folded at the end.
#include <immintrin.h>

#include <cstring>

#include "gemm/gemm_impl.h"

namespace qs::detail {
namespace {

// The epilogue of 8 columns of one row: K-block accumulation, zero-point terms, int32 or float output.
// x holds the raw sums of columns c0 .. c0 + 7 of this row; u, beta, sb, bias point at column c0.
inline void store8(__m256i x, const Tile& t, int r, int c0, int ncols) {
  int32_t* o = t.out + r * t.ld + c0;
  const bool full = ncols >= 8;
  const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(ncols), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  if (t.accumulate)
    x = _mm256_add_epi32(x, full ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(o)) : _mm256_maskload_epi32(o, mask));
  if (t.final) {
    x = _mm256_sub_epi32(x, _mm256_mullo_epi32(_mm256_set1_epi32(t.alpha[r]),
                                               _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.u + c0))));
    if (t.has_beta)
      x = _mm256_sub_epi32(x, _mm256_mullo_epi32(_mm256_set1_epi32(t.ra[r]),
                                                 _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.beta + c0))));
  }
  if (!t.final || !t.float_out) {
    if (full)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o), x);
    else
      _mm256_maskstore_epi32(o, mask, x);
  } else {
    __m256 y = _mm256_mul_ps(_mm256_cvtepi32_ps(x), _mm256_set1_ps(t.sa[r]));
    y = _mm256_mul_ps(y, _mm256_loadu_ps(t.sb + c0));
    y = _mm256_add_ps(y, _mm256_loadu_ps(t.bias + c0));
    if (full)
      _mm256_storeu_ps(reinterpret_cast<float*>(o), y);
    else
      _mm256_maskstore_ps(reinterpret_cast<float*>(o), mask, y);
  }
}

inline __m256i bcast32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// ---- Avx2SignA / Avx2SignB ----------------------------------------------------------------------------

// R rows x V vectors of 8 columns. kSignFromB: u = |b|, s = sign(b) * a (A must hold no -128); else
// u = |a|, s = sign(a) * b (B must hold no -128).
template <int R, int V, bool kSignFromB>
void micro_sign(const Tile& t) {
  __m256i acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[r][v] = _mm256_setzero_si256();
  const __m256i ones = _mm256_set1_epi16(1);
  const uint8_t* a = t.a;
  const int8_t* b = t.b;
  for (int g = 0; g < t.kgs; ++g) {
    __m256i bv[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) bv[v] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 32 * v));
    if constexpr (kSignFromB) {
      __m256i ub[V];
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) ub[v] = _mm256_abs_epi8(bv[v]);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m256i as = bcast32(a + 8 * r);
#pragma GCC unroll 4
        for (int v = 0; v < V; ++v) {
          const __m256i p = _mm256_maddubs_epi16(ub[v], _mm256_sign_epi8(as, bv[v]));
          acc[r][v] = _mm256_add_epi32(acc[r][v], _mm256_madd_epi16(p, ones));
        }
      }
    } else {
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m256i as = bcast32(a + 8 * r), au = bcast32(a + 8 * r + 4);
#pragma GCC unroll 4
        for (int v = 0; v < V; ++v) {
          const __m256i p = _mm256_maddubs_epi16(au, _mm256_sign_epi8(bv[v], as));
          acc[r][v] = _mm256_add_epi32(acc[r][v], _mm256_madd_epi16(p, ones));
        }
      }
    }
    a += 8 * R;
    b += 4 * kGemmPanel;
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v)
      if (8 * v < t.cols) store8(acc[r][v], t, r, 8 * v, t.cols - 8 * v);
}

constexpr int kSignV = 2;  // vectors per tile row: a 4 x 16 tile, 8 accumulators

template <int R, bool kSignFromB>
void micro_sign_cols(const Tile& t) {
  if (t.cols > 8)
    micro_sign<R, kSignV, kSignFromB>(t);
  else
    micro_sign<R, 1, kSignFromB>(t);
}

template <bool kSignFromB>
struct Sign {
  static constexpr int MR = kMrSign, NT = 8 * kSignV, ESZ = kEszSign;
  static void dispatch(int rows, const Tile& t) {
    switch (rows) {
      case 4: micro_sign_cols<4, kSignFromB>(t); break;
      case 3: micro_sign_cols<3, kSignFromB>(t); break;
      case 2: micro_sign_cols<2, kSignFromB>(t); break;
      default: micro_sign_cols<1, kSignFromB>(t); break;
    }
  }
};
static_assert(kMrSign == 4);

// ---- Avx2Madd16 ---------------------------------------------------------------------------------------

constexpr int NT16 = 8;

inline __m256i bcast64(const int16_t* p) {
  long long v;
  std::memcpy(&v, p, 8);
  return _mm256_set1_epi64x(v);
}

template <int R>
void micro16(const Tile& t) {
  __m256i acc[R][2];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
  const auto* a = reinterpret_cast<const int16_t*>(t.a);
  const int8_t* b = t.b;
  for (int g = 0; g < t.kgs; ++g) {
    // 16 bytes = 4 columns x 4 k each: lanes (c, k) -> int32 lanes (c, k0+k1), (c, k2+k3).
    const __m256i b0 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b)));
    const __m256i b1 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 16)));
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m256i av = bcast64(a + 4 * r);
      acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(av, b0));
      acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(av, b1));
    }
    a += 4 * R;
    b += 4 * kGemmPanel;
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)  // hadd -> columns (0 1 4 5 | 2 3 6 7); the qword permute restores 0..7.
    store8(_mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[r][0], acc[r][1]), 0xD8), t, r, 0, t.cols);
}

struct Madd16 {
  static constexpr int MR = kMrAvx2, NT = NT16, ESZ = kEszAvx2;
  static void dispatch(int rows, const Tile& t) {
    switch (rows) {
      case 4: micro16<4>(t); break;
      case 3: micro16<3>(t); break;
      case 2: micro16<2>(t); break;
      default: micro16<1>(t); break;
    }
  }
};
static_assert(kMrAvx2 == 4);

}  // namespace

void gemm_tiles_avx2(const GemmJob& j, int pb, int pe, int mb, int me) { run_blocked<Madd16>(j, pb, pe, mb, me); }
void gemm_tiles_avx2_sign_a(const GemmJob& j, int pb, int pe, int mb, int me) {
  run_blocked<Sign<false>>(j, pb, pe, mb, me);
}
void gemm_tiles_avx2_sign_b(const GemmJob& j, int pb, int pe, int mb, int me) {
  run_blocked<Sign<true>>(j, pb, pe, mb, me);
}

}  // namespace qs::detail

namespace qs::detail {
namespace {

// Rows [p0, p0 + rows) of one panel through plain loops (the last panel of fewer than 4 rows). kSign: the
// sign layout (s then |s| per group and row), else a' bytes (4 per group and row).
template <bool kSign>
void pack_panel_scalar(const QMatrixA& A, int KG, uint8_t* dst, int32_t* ra, int p0, int rows) {
  const auto* src = static_cast<const uint8_t*>(A.data);
  const uint8_t flip = A.type == QType::S8 ? 0x80 : 0x00;  // raw ^ flip = a' (unsigned); s = a' - 128
  for (int r = 0; r < rows; ++r) {
    const uint8_t* row = src + std::ptrdiff_t(p0 + r) * A.ld;
    int32_t sum = 0;
    for (int g = 0; g < KG; ++g)
      for (int q = 0; q < 4; ++q) {
        const int k = 4 * g + q;
        const int ap = k < A.K ? int(row[k] ^ flip) : (kSign ? 128 : 0);  // padding: s = 0 / a' = 0
        if constexpr (kSign) {
          const int s = ap - 128;
          uint8_t* d = dst + (std::ptrdiff_t(g) * rows + r) * 8;
          d[q] = uint8_t(s);
          d[4 + q] = uint8_t(s < 0 ? -s : s);
          sum += s;
        } else {
          dst[(std::ptrdiff_t(g) * rows + r) * 4 + q] = uint8_t(ap);
          sum += ap;
        }
      }
    ra[p0 + r] = sum;
  }
}

// Full 4-row panels, 32 bytes (8 k groups) of each row at a time: a 4 x 8 dword transpose with unpacks.
// ra: sum of s (kSign) or of a', through vpsadbw on a' (padding read as a' = 128 / 0 and taken off).
template <bool kSign>
void pack_a4(const QMatrixA& A, int KG, uint8_t* apack, int32_t* ra, int row_begin, int row_end) {
  constexpr int MR = 4, BYTES = kSign ? 8 : 4;  // per group and row
  const auto* src = static_cast<const uint8_t*>(A.data);
  const uint8_t flip8 = A.type == QType::S8 ? 0x80 : 0x00;
  const __m256i flip = _mm256_set1_epi8(char(flip8)), h80 = _mm256_set1_epi8(char(0x80)), zero = _mm256_setzero_si256();
  // Bytes past K: raw values whose a' is 128 (s = 0) for the sign layout, 0 for the a' layout.
  const uint8_t pad = uint8_t((kSign ? 0x80 : 0x00) ^ flip8);
  for (int p0 = row_begin; p0 < row_end; p0 += MR) {
    const int rows = A.M - p0 < MR ? A.M - p0 : MR;
    uint8_t* dst = apack + std::ptrdiff_t(p0) * KG * 4 * (kSign ? 2 : 1);
    if (rows < MR) {
      pack_panel_scalar<kSign>(A, KG, dst, ra, p0, rows);
      continue;
    }
    __m256i sums[MR] = {zero, zero, zero, zero};
    int chunks = 0;
    for (int k0 = 0; k0 < A.K; k0 += 32, ++chunks) {
      const int n = A.K - k0 < 32 ? A.K - k0 : 32;
      __m256i P[MR];  // a' (unsigned) or s (signed) per row
#pragma GCC unroll 4
      for (int r = 0; r < MR; ++r) {
        const uint8_t* row = src + std::ptrdiff_t(p0 + r) * A.ld + k0;
        __m256i x;
        if (n == 32) {
          x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row));
        } else {
          alignas(32) uint8_t buf[32];
          std::memset(buf, pad, 32);
          std::memcpy(buf, row, std::size_t(n));
          x = _mm256_load_si256(reinterpret_cast<const __m256i*>(buf));
        }
        const __m256i ap = _mm256_xor_si256(x, flip);  // a'
        sums[r] = _mm256_add_epi64(sums[r], _mm256_sad_epu8(ap, zero));
        P[r] = kSign ? _mm256_xor_si256(ap, h80) : ap;  // s = a' - 128
      }
      const int G = KG - k0 / 4 < 8 ? KG - k0 / 4 : 8;  // groups of this chunk inside the panel
      uint8_t* d = dst + std::ptrdiff_t(k0 / 4) * MR * BYTES;
      if constexpr (kSign) {
        __m256i L[MR], H[MR];
#pragma GCC unroll 4
        for (int r = 0; r < MR; ++r) {
          const __m256i u = _mm256_abs_epi8(P[r]);
          L[r] = _mm256_unpacklo_epi32(P[r], u);  // (s, |s|) of groups 0, 1 | 4, 5
          H[r] = _mm256_unpackhi_epi32(P[r], u);  // groups 2, 3 | 6, 7
        }
        const __m256i X01[4] = {_mm256_unpacklo_epi64(L[0], L[1]), _mm256_unpackhi_epi64(L[0], L[1]),
                                _mm256_unpacklo_epi64(H[0], H[1]), _mm256_unpackhi_epi64(H[0], H[1])};
        const __m256i X23[4] = {_mm256_unpacklo_epi64(L[2], L[3]), _mm256_unpackhi_epi64(L[2], L[3]),
                                _mm256_unpacklo_epi64(H[2], H[3]), _mm256_unpackhi_epi64(H[2], H[3])};
#pragma GCC unroll 4
        for (int q = 0; q < 4; ++q) {  // X01[q]: rows 0, 1 of group q | q + 4
          if (q < G)
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + q * 32), _mm256_permute2x128_si256(X01[q], X23[q], 0x20));
          if (q + 4 < G)
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + (q + 4) * 32),
                                _mm256_permute2x128_si256(X01[q], X23[q], 0x31));
        }
      } else {
        const __m256i L01 = _mm256_unpacklo_epi32(P[0], P[1]), H01 = _mm256_unpackhi_epi32(P[0], P[1]);
        const __m256i L23 = _mm256_unpacklo_epi32(P[2], P[3]), H23 = _mm256_unpackhi_epi32(P[2], P[3]);
        // T[q]: rows 0..3 of group q | group q + 4
        const __m256i T[4] = {_mm256_unpacklo_epi64(L01, L23), _mm256_unpackhi_epi64(L01, L23),
                              _mm256_unpacklo_epi64(H01, H23), _mm256_unpackhi_epi64(H01, H23)};
#pragma GCC unroll 4
        for (int q = 0; q < 4; ++q) {
          if (q < G) _mm_storeu_si128(reinterpret_cast<__m128i*>(d + q * 16), _mm256_castsi256_si128(T[q]));
          if (q + 4 < G) _mm_storeu_si128(reinterpret_cast<__m128i*>(d + (q + 4) * 16), _mm256_extracti128_si256(T[q], 1));
        }
      }
    }
    // Groups past the last chunk's 8 (K a multiple of 32 never leaves any; KG = ceil(K / 4) <= 8 * chunks).
    for (int r = 0; r < MR; ++r) {
      const __m256i s = sums[r];
      const int64_t t = _mm256_extract_epi64(s, 0) + _mm256_extract_epi64(s, 1) + _mm256_extract_epi64(s, 2) +
                        _mm256_extract_epi64(s, 3);
      // sum of a' over the 32 * chunks bytes read; the padding bytes read a' = pad ^ flip.
      const int64_t padded = int64_t(32) * chunks - A.K;
      const int64_t sum_ap = t - padded * int64_t(uint8_t(pad ^ flip8));
      ra[p0 + r] = int32_t(kSign ? sum_ap - int64_t(128) * A.K : sum_ap);
    }
  }
}

}  // namespace

void pack_a_sign(const QMatrixA& A, int KG, uint8_t* apack, int32_t* ra, int row_begin, int row_end) {
  pack_a4<true>(A, KG, apack, ra, row_begin, row_end);
}
void pack_a_u8x4(const QMatrixA& A, int KG, uint8_t* apack, int32_t* ra, int row_begin, int row_end) {
  pack_a4<false>(A, KG, apack, ra, row_begin, row_end);
}

}  // namespace qs::detail
