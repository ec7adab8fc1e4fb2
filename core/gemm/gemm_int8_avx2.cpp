// The AVX2 int8 kernel for CPUs without VNNI, and the AVX2 A packers (this kernel's layout and the AVX-VNNI
// kernel's). Compiled with -mavx2 -mfma and called only after a runtime check. Exercise: tests/tst_gemm.cpp,
// `QS_GEMM_AVX2_KERNEL=avx2 quantscope-cli bench gemm --kernels int8-avx2`.
//
// vpmaddubsw multiplies unsigned by signed bytes and adds adjacent products into int16 with saturation,
// so it cannot take a' = a + 128 (255 * -128 * 2 overflows). A sign trick with a one's complement makes
// it exact for every int8 pair. With s the signed A value (a, or a - 128 for uint8 A), u = |s| (0..128,
// read unsigned) and m = 0xff where s < 0, else 0:
//   u * (b ^ m) = s * b            when s >= 0
//   u * (b ^ m) = |s| * (-b - 1)   when s < 0, = s * b - |s|
// so sum_k s b = sum_k u (b ^ m) + c with c = sum over s < 0 of |s|, one number per row of A (rowc,
// added once as the accumulators' start). Each product u * (b ^ m) lies in [128 * -128, 128 * 127], a
// pair in [-32768, 32512]: vpmaddubsw never saturates, whatever the data (-128 in A, in B, or both).
// (The textbook trick, u = |s| and vpsignb(b, s) = sign(s) * b, wraps -(-128) to -128 and so needs B free
// of -128 or a fallback; with the same tile and packing it also measured slower on Zen 5, see
// notes/issue17-avx2-gemm.md.)
// vpmaddwd with ones then adds the two pairs of each group of 4 k into an int32 lane. Per 32 byte
// products: vpxor, vpmaddubsw, vpmaddwd, vpaddd.
// A tile is 4 rows x 16 columns: 8 ymm accumulators in column order (no horizontal fold), B read straight
// from the shared packed layout (8 columns x 4 k per 32 bytes), per row and k group one broadcast of the
// 4 masks and one of the 4 magnitudes.
#include <immintrin.h>

#include <cstring>

#include "gemm/gemm_impl.h"
#include "gemm/gemm_store_avx2.h"

namespace qs::detail {
namespace {

inline __m256i bcast32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// R rows x V vectors of 8 columns. Packed A: per k group and row 8 bytes, the 4 masks m then the 4 |s|.
template <int R, int V>
void micro(const Tile& t) {
  __m256i acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    // The row's correction c enters once, with the first K block.
    const __m256i init = t.accumulate ? _mm256_setzero_si256() : _mm256_set1_epi32(t.rowc[r]);
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[r][v] = init;
  }
  const __m256i ones = _mm256_set1_epi16(1);
  const uint8_t* a = t.a;
  const int8_t* b = t.b;
  for (int g = 0; g < t.kgs; ++g) {
    __m256i bv[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) bv[v] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 32 * v));
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256i m = bcast32(a + 8 * r), u = bcast32(a + 8 * r + 4);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) {
        const __m256i p = _mm256_maddubs_epi16(u, _mm256_xor_si256(bv[v], m));  // pairs, never saturated
        acc[r][v] = _mm256_add_epi32(acc[r][v], _mm256_madd_epi16(p, ones));
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

constexpr int kV = 2;  // vectors per tile row: 4 x 16 (4 x 24 measured the same on Zen 5, with less room)

template <int R>
void micro_cols(const Tile& t) {
  if (t.cols > 8)
    micro<R, kV>(t);
  else
    micro<R, 1>(t);
}

struct Avx2 {
  static constexpr int MR = kMrAvx2, NT = 8 * kV, ESZ = kEszAvx2;
  static void dispatch(int rows, const Tile& t) {
    switch (rows) {
      case 4: micro_cols<4>(t); break;
      case 3: micro_cols<3>(t); break;
      case 2: micro_cols<2>(t); break;
      default: micro_cols<1>(t); break;
    }
  }
};
static_assert(kMrAvx2 == 4 && kEszAvx2 == 2);

// ---- packing A ----------------------------------------------------------------------------------------

// kMasks: this kernel's layout (per group and row: 4 masks, 4 magnitudes; ra = sum s, rowc = sum over
// s < 0 of |s|); else the AVX-VNNI layout (4 bytes a' per group and row; ra = sum a').
// Rows [p0, p0 + rows) of one panel through plain loops (a last panel of fewer than 4 rows).
template <bool kMasks>
void pack_panel_scalar(const QMatrixA& A, int KG, uint8_t* dst, int32_t* ra, int32_t* rowc, int p0, int rows) {
  const auto* src = static_cast<const uint8_t*>(A.data);
  const uint8_t flip = A.type == QType::S8 ? 0x80 : 0x00;  // raw ^ flip = a' (unsigned); s = a' - 128
  for (int r = 0; r < rows; ++r) {
    const uint8_t* row = src + std::ptrdiff_t(p0 + r) * A.ld;
    int32_t sum = 0, neg = 0;
    for (int g = 0; g < KG; ++g)
      for (int q = 0; q < 4; ++q) {
        const int k = 4 * g + q;
        const int ap = k < A.K ? int(row[k] ^ flip) : (kMasks ? 128 : 0);  // past K: s = 0, a' = 0
        if constexpr (kMasks) {
          const int s = ap - 128;
          uint8_t* d = dst + (std::ptrdiff_t(g) * rows + r) * 8;
          d[q] = s < 0 ? 0xff : 0x00;
          d[4 + q] = uint8_t(s < 0 ? -s : s);
          sum += s;
          neg += s < 0 ? -s : 0;
        } else {
          dst[(std::ptrdiff_t(g) * rows + r) * 4 + q] = uint8_t(ap);
          sum += ap;
        }
      }
    ra[p0 + r] = sum;
    if (kMasks) rowc[p0 + r] = neg;
  }
}

inline int64_t hsum64(__m256i x) {
  return _mm256_extract_epi64(x, 0) + _mm256_extract_epi64(x, 1) + _mm256_extract_epi64(x, 2) +
         _mm256_extract_epi64(x, 3);
}

// Full 4-row panels, 32 bytes (8 k groups) of each row at a time, a 4 x 8 dword transpose with unpacks.
// Sums through vpsadbw: of a' (bytes read past K hold a' = 128 for kMasks, 0 otherwise, taken off) and of |s|.
template <bool kMasks>
void pack_a4(const QMatrixA& A, int KG, uint8_t* apack, int32_t* ra, int32_t* rowc, int row_begin, int row_end) {
  constexpr int MR = 4, BYTES = kMasks ? 8 : 4;  // per group and row
  const auto* src = static_cast<const uint8_t*>(A.data);
  const uint8_t flip8 = A.type == QType::S8 ? 0x80 : 0x00;
  const __m256i flip = _mm256_set1_epi8(char(flip8)), h80 = _mm256_set1_epi8(char(0x80)), zero = _mm256_setzero_si256();
  const uint8_t pad_ap = kMasks ? 0x80 : 0x00;  // a' of the bytes past K (s = 0 / a' = 0)
  for (int p0 = row_begin; p0 < row_end; p0 += MR) {
    const int rows = A.M - p0 < MR ? A.M - p0 : MR;
    uint8_t* dst = apack + std::ptrdiff_t(p0) * KG * BYTES;
    if (rows < MR) {
      pack_panel_scalar<kMasks>(A, KG, dst, ra, rowc, p0, rows);
      continue;
    }
    __m256i sums[MR] = {zero, zero, zero, zero}, abss[MR] = {zero, zero, zero, zero};
    int chunks = 0;
    for (int k0 = 0; k0 < A.K; k0 += 32, ++chunks) {
      const int n = A.K - k0 < 32 ? A.K - k0 : 32;
      __m256i P[MR];  // s (kMasks) or a'
#pragma GCC unroll 4
      for (int r = 0; r < MR; ++r) {
        const uint8_t* row = src + std::ptrdiff_t(p0 + r) * A.ld + k0;
        __m256i x;
        if (n == 32) {
          x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row));
        } else {
          alignas(32) uint8_t buf[32];
          std::memset(buf, pad_ap ^ flip8, 32);
          std::memcpy(buf, row, std::size_t(n));
          x = _mm256_load_si256(reinterpret_cast<const __m256i*>(buf));
        }
        const __m256i ap = _mm256_xor_si256(x, flip);  // a'
        sums[r] = _mm256_add_epi64(sums[r], _mm256_sad_epu8(ap, zero));
        P[r] = kMasks ? _mm256_xor_si256(ap, h80) : ap;  // s = a' - 128
      }
      const int G = KG - k0 / 4 < 8 ? KG - k0 / 4 : 8;  // groups of this chunk inside the panel
      uint8_t* d = dst + std::ptrdiff_t(k0 / 4) * MR * BYTES;
      if constexpr (kMasks) {
        __m256i L[MR], H[MR];
#pragma GCC unroll 4
        for (int r = 0; r < MR; ++r) {
          const __m256i u = _mm256_abs_epi8(P[r]);  // -128 gives 0x80: 128 read unsigned
          const __m256i m = _mm256_cmpgt_epi8(zero, P[r]);
          abss[r] = _mm256_add_epi64(abss[r], _mm256_sad_epu8(u, zero));
          L[r] = _mm256_unpacklo_epi32(m, u);  // (m, |s|) of groups 0, 1 | 4, 5
          H[r] = _mm256_unpackhi_epi32(m, u);  // groups 2, 3 | 6, 7
        }
        // X01[q], X23[q]: rows 0, 1 / rows 2, 3 of group q | q + 4
        const __m256i X01[4] = {_mm256_unpacklo_epi64(L[0], L[1]), _mm256_unpackhi_epi64(L[0], L[1]),
                                _mm256_unpacklo_epi64(H[0], H[1]), _mm256_unpackhi_epi64(H[0], H[1])};
        const __m256i X23[4] = {_mm256_unpacklo_epi64(L[2], L[3]), _mm256_unpackhi_epi64(L[2], L[3]),
                                _mm256_unpacklo_epi64(H[2], H[3]), _mm256_unpackhi_epi64(H[2], H[3])};
#pragma GCC unroll 4
        for (int q = 0; q < 4; ++q) {
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
    // KG = ceil(K / 4) groups, all inside the 8 * chunks groups read.
    const int64_t padded = int64_t(32) * chunks - A.K;
    for (int r = 0; r < MR; ++r) {
      const int64_t sum_ap = hsum64(sums[r]) - padded * pad_ap;  // sum of a' over the K values
      if constexpr (kMasks) {
        const int64_t sum_s = sum_ap - int64_t(128) * A.K;
        ra[p0 + r] = int32_t(sum_s);
        rowc[p0 + r] = int32_t((hsum64(abss[r]) - sum_s) / 2);  // sum over s < 0 of |s| = (sum |s| - sum s) / 2
      } else {
        ra[p0 + r] = int32_t(sum_ap);
      }
    }
  }
}

}  // namespace

void gemm_tiles_avx2(const GemmJob& j, int pb, int pe, int mb, int me) { run_blocked<Avx2>(j, pb, pe, mb, me); }

void pack_a_avx2(const QMatrixA& A, int KG, uint8_t* apack, int32_t* ra, int32_t* rowc, int row_begin, int row_end) {
  pack_a4<true>(A, KG, apack, ra, rowc, row_begin, row_end);
}
void pack_a_avxvnni(const QMatrixA& A, int KG, uint8_t* apack, int32_t* ra, int row_begin, int row_end) {
  pack_a4<false>(A, KG, apack, ra, nullptr, row_begin, row_end);
}

}  // namespace qs::detail
