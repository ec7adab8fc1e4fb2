// The AVX2 int8 kernel for CPUs without VNNI: a 4-row x 8-column tile. vpmaddubsw would saturate
// (255 * -128 * 2 overflows int16), so A is packed as 16-bit values and B widened with vpmovsxbw; vpmaddwd
// then adds exact pairs into int32 lanes that hold (column, k-pair) partial sums, folded at the end.
// Compiled with -mavx2 -mfma and called only after a runtime check. Exercise: tests/tst_gemm.cpp.
#include <immintrin.h>

#include <cstring>

#include "gemm/gemm_impl.h"

namespace qs::detail {
namespace {

constexpr int NT = 8;

inline __m256i bcast64(const int16_t* p) {
  long long v;
  std::memcpy(&v, p, 8);
  return _mm256_set1_epi64x(v);
}

template <int R>
void micro(const Tile& t) {
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

  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(t.cols), lane);
  const bool full = t.cols >= NT;
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    int32_t* o = t.out + r * t.ld;
    // hadd -> columns (0 1 4 5 | 2 3 6 7); the qword permute restores 0..7.
    __m256i x = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[r][0], acc[r][1]), 0xD8);
    if (t.accumulate)
      x = _mm256_add_epi32(x, full ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(o))
                                   : _mm256_maskload_epi32(o, mask));
    if (t.final) {
      x = _mm256_sub_epi32(x, _mm256_mullo_epi32(_mm256_set1_epi32(t.alpha[r]),
                                                 _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.u))));
      if (t.has_beta)
        x = _mm256_sub_epi32(x, _mm256_mullo_epi32(_mm256_set1_epi32(t.ra[r]),
                                                   _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.beta))));
    }
    if (!t.final || !t.float_out) {
      if (full)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(o), x);
      else
        _mm256_maskstore_epi32(o, mask, x);
    } else {
      __m256 y = _mm256_mul_ps(_mm256_cvtepi32_ps(x), _mm256_set1_ps(t.sa[r]));
      y = _mm256_mul_ps(y, _mm256_loadu_ps(t.sb));
      y = _mm256_add_ps(y, _mm256_loadu_ps(t.bias));
      if (full)
        _mm256_storeu_ps(reinterpret_cast<float*>(o), y);
      else
        _mm256_maskstore_ps(reinterpret_cast<float*>(o), mask, y);
    }
  }
}

struct Avx2 {
  static constexpr int MR = kMrAvx2, NT = qs::detail::NT, ESZ = kEszAvx2;
  static void dispatch(int rows, const Tile& t) {
    switch (rows) {
      case 4: micro<4>(t); break;
      case 3: micro<3>(t); break;
      case 2: micro<2>(t); break;
      default: micro<1>(t); break;
    }
  }
};
static_assert(kMrAvx2 == 4);

}  // namespace

void gemm_tiles_avx2(const GemmJob& j, int pb, int pe, int mb, int me) { run_blocked<Avx2>(j, pb, pe, mb, me); }

}  // namespace qs::detail
