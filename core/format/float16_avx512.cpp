// float16 / bfloat16 -> float32 with AVX-512 (16 lanes; masked loads and stores for the tail),
// bit-identical to half_to_float / bf16_to_float. Compiled with AVX-512 F/BW/VL (core/CMakeLists.txt);
// called only after the runtime check.
#include <immintrin.h>

#include "format/float16.h"

namespace qs::detail {

namespace {

// The maskz forms with a full mask are the same instructions; GCC 12's plain forms start from
// _mm512_undefined_*() and warn -Wmaybe-uninitialized about it.
constexpr __mmask16 kAll = 0xFFFF;

// As the F16C kernel: vcvtph2ps quiets signalling NaNs (|h| in (0x7C00, 0x7E00)); clear bit 22 there.
inline __m512 widen16(__m256i h) {
  const __m512i f = _mm512_castps_si512(_mm512_maskz_cvtph_ps(kAll, h));
  const __m512i a = _mm512_and_si512(_mm512_maskz_cvtepu16_epi32(kAll, h), _mm512_set1_epi32(0x7FFF));
  const __mmask16 snan = _mm512_cmpgt_epi32_mask(a, _mm512_set1_epi32(0x7C00)) &
                         _mm512_cmplt_epi32_mask(a, _mm512_set1_epi32(0x7E00));
  return _mm512_castsi512_ps(_mm512_mask_and_epi32(f, snan, f, _mm512_set1_epi32(~0x00400000)));
}

inline __m512 bf16(__m256i b) { return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll, _mm512_maskz_cvtepu16_epi32(kAll, b), 16)); }

template <__m512 (*Widen)(__m256i)>
void run(const uint8_t* src, std::size_t n, float* dst) {
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i h0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2 * i));
    const __m256i h1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2 * i + 32));
    _mm512_storeu_ps(dst + i, Widen(h0));
    _mm512_storeu_ps(dst + i + 16, Widen(h1));
  }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1u);
    const __m256i h = _mm256_maskz_loadu_epi16(m, src + 2 * i);  // masked-off lanes are not read
    _mm512_mask_storeu_ps(dst + i, m, Widen(h));
  }
}

}  // namespace

void half_to_float_avx512(const uint8_t* src, std::size_t n, float* dst) { run<widen16>(src, n, dst); }
void bf16_to_float_avx512(const uint8_t* src, std::size_t n, float* dst) { run<bf16>(src, n, dst); }

}  // namespace qs::detail
