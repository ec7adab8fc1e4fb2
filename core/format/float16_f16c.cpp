// float16 / bfloat16 -> float32 with F16C + AVX2 (8 lanes), bit-identical to half_to_float /
// bf16_to_float. Compiled with -mavx2 -mf16c (core/CMakeLists.txt); called only after the runtime check.
#include <immintrin.h>

#include <cstring>

#include "format/float16.h"

namespace qs::detail {

namespace {

// vcvtph2ps widens exactly, except that a signalling NaN (exponent 31, quiet bit 9 clear, payload != 0)
// comes back quiet: float32 bit 22 set. half_to_float keeps the payload as it is, so that bit is cleared
// again on exactly those lanes: |h| in (0x7C00, 0x7E00).
inline __m256 widen8(__m128i h) {
  const __m256i f = _mm256_castps_si256(_mm256_cvtph_ps(h));
  const __m256i a = _mm256_and_si256(_mm256_cvtepu16_epi32(h), _mm256_set1_epi32(0x7FFF));
  const __m256i snan = _mm256_and_si256(_mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x7C00)),
                                        _mm256_cmpgt_epi32(_mm256_set1_epi32(0x7E00), a));
  return _mm256_castsi256_ps(_mm256_andnot_si256(_mm256_and_si256(snan, _mm256_set1_epi32(0x00400000)), f));
}

inline __m256 bf8(__m128i b) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16)); }

template <__m256 (*Widen)(__m128i)>
void run(const uint8_t* src, std::size_t n, float* dst) {
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m128i h0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i));
    const __m128i h1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i + 16));
    const __m128i h2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i + 32));
    const __m128i h3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i + 48));
    _mm256_storeu_ps(dst + i, Widen(h0));
    _mm256_storeu_ps(dst + i + 8, Widen(h1));
    _mm256_storeu_ps(dst + i + 16, Widen(h2));
    _mm256_storeu_ps(dst + i + 24, Widen(h3));
  }
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, Widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * i))));
  if (i < n) {  // tail of 1..7: through a zero-padded copy, so nothing past the end is read or written
    alignas(16) uint8_t in[16] = {};
    alignas(32) float out[8];
    std::memcpy(in, src + 2 * i, 2 * (n - i));
    _mm256_store_ps(out, Widen(_mm_load_si128(reinterpret_cast<const __m128i*>(in))));
    std::memcpy(dst + i, out, 4 * (n - i));
  }
}

}  // namespace

void half_to_float_f16c(const uint8_t* src, std::size_t n, float* dst) { run<widen8>(src, n, dst); }
void bf16_to_float_avx2(const uint8_t* src, std::size_t n, float* dst) { run<bf8>(src, n, dst); }

}  // namespace qs::detail
