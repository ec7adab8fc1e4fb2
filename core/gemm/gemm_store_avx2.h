// The 8-column epilogue the AVX2-class int8 kernels share (gemm_int8_avx2.cpp, gemm_int8_avxvnni.cpp): each
// includes it after <immintrin.h> and gets its own copy (internal linkage), compiled with its own ISA flags.
#pragma once

#include <immintrin.h>

#include "gemm/gemm_impl.h"

namespace qs::detail {
namespace {

// The epilogue of 8 columns of one row: K-block accumulation, zero-point terms, int32 or float output.
// x holds the raw sums of columns c0 .. c0 + 7 of row r; u, beta, sb, bias are read at column c0.
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

}  // namespace
}  // namespace qs::detail
