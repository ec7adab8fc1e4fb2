// AVX-512 path of quantize_act_int8: the finite amax of a row and its int8 codes with the statistics of
// the `int8` format's encoder (y = x / s in float32, round half to even, saturate at +-127; overflow when
// |y| >= 127.5, underflow when a non-zero y rounds to 0, NaN -> 0). Compiled with AVX-512 flags and called
// only after a runtime check; tests/tst_gemm.cpp compares it with encode_f32 code for code.
// GCC 12 flags the _mm512_undefined_* operands inside the AVX-512 intrinsics as uninitialized.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "format/format.h"

namespace qs::detail {

float amax_finite_avx512(const float* x, std::size_t n) {
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff), inf_bits = _mm512_set1_epi32(0x7f800000);
  __m512i m0 = _mm512_setzero_si512(), m1 = _mm512_setzero_si512();
  std::size_t i = 0;
  // |x| bits compare like the values; finite means below the bits of inf (NaN and inf are skipped).
  for (; i + 32 <= n; i += 32) {
    const __m512i a = _mm512_and_si512(_mm512_loadu_si512(x + i), abs_mask);
    const __m512i b = _mm512_and_si512(_mm512_loadu_si512(x + i + 16), abs_mask);
    m0 = _mm512_mask_max_epu32(m0, _mm512_cmplt_epu32_mask(a, inf_bits), m0, a);
    m1 = _mm512_mask_max_epu32(m1, _mm512_cmplt_epu32_mask(b, inf_bits), m1, b);
  }
  for (; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    const __m512i a = _mm512_and_si512(_mm512_maskz_loadu_epi32(k, x + i), abs_mask);
    m0 = _mm512_mask_max_epu32(m0, _mm512_cmplt_epu32_mask(a, inf_bits), m0, a);
  }
  const uint32_t bits = _mm512_reduce_max_epu32(_mm512_max_epu32(m0, m1));
  float v;
  __builtin_memcpy(&v, &bits, 4);
  return v;
}

EncodeStats quantize_int8_avx512(const float* x, std::size_t n, float scale, int8_t* q) {
  const __m512 s = _mm512_set1_ps(scale), lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
  const __m512 ovf = _mm512_set1_ps(127.5f), half = _mm512_set1_ps(0.5f), zero = _mm512_setzero_ps();
  uint64_t overflow = 0, underflow = 0, nan = 0;
  for (std::size_t i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - i)) - 1);
    const __m512 y = _mm512_div_ps(_mm512_maskz_loadu_ps(k, x + i), s);
    const __m512 ay = _mm512_abs_ps(y);
    const __mmask16 isnan = _mm512_cmp_ps_mask(y, y, _CMP_UNORD_Q);
    overflow += __builtin_popcount(_mm512_mask_cmp_ps_mask(k, ay, ovf, _CMP_GE_OQ));
    underflow += __builtin_popcount(_mm512_mask_cmp_ps_mask(k, ay, half, _CMP_LE_OQ) &
                                    _mm512_cmp_ps_mask(y, zero, _CMP_NEQ_OQ));
    nan += __builtin_popcount(k & isnan);
    const __m512 c = _mm512_mask_mov_ps(_mm512_min_ps(_mm512_max_ps(y, lo), hi), isnan, zero);
    const __m512i v = _mm512_cvt_roundps_epi32(c, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_mask_storeu_epi8(q + i, k, _mm512_cvtepi32_epi8(v));
  }
  EncodeStats st;
  st.overflow = overflow;
  st.underflow = underflow;
  st.nan = nan;
  return st;
}

}  // namespace qs::detail
