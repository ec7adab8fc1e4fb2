// Internal: the body of one level's training products, included by train_gemm_*.cpp after they define
// QS_TRAIN_GEMM_ENTRY (the function's name) and QS_TRAIN_GEMM_AVX2 or QS_TRAIN_GEMM_AVX512 (none: the scalar
// build).
//
// Every element is the canonical sum of train_gemm.h: s = 0, then s = fma(a_k, b_k, s) for k = 0 .. K-1. A
// vector lane holds one output element and runs exactly that chain (the vector FMA rounds each lane once, as
// the scalar fma does), so the levels differ in speed only. The register block: MR rows x 2 vectors of
// columns; op(B) is copied into panels of 2 vectors' width (zero-padded; the padding lanes are never stored)
// so the inner loop reads B contiguously whatever its layout.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#if defined(QS_TRAIN_GEMM_AVX2) || defined(QS_TRAIN_GEMM_AVX512)
#include <immintrin.h>
#endif

namespace qs::detail {

namespace {

#if defined(QS_TRAIN_GEMM_AVX512)
using Vec = __m512;
constexpr int kW = 16, kMR = 8;
inline Vec vzero() { return _mm512_setzero_ps(); }
inline Vec vload(const float* p) { return _mm512_loadu_ps(p); }
inline void vstore(float* p, Vec v) { _mm512_storeu_ps(p, v); }
inline Vec vset1(float x) { return _mm512_set1_ps(x); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
#elif defined(QS_TRAIN_GEMM_AVX2)
using Vec = __m256;
constexpr int kW = 8, kMR = 6;
inline Vec vzero() { return _mm256_setzero_ps(); }
inline Vec vload(const float* p) { return _mm256_loadu_ps(p); }
inline void vstore(float* p, Vec v) { _mm256_storeu_ps(p, v); }
inline Vec vset1(float x) { return _mm256_set1_ps(x); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
#else
using Vec = float;
constexpr int kW = 1, kMR = 4;
inline Vec vzero() { return 0.0f; }
inline Vec vload(const float* p) { return *p; }
inline void vstore(float* p, Vec v) { *p = v; }
inline Vec vset1(float x) { return x; }
inline Vec vfma(Vec a, Vec b, Vec c) { return std::fma(a, b, c); }
#endif

constexpr int kNR = 2 * kW;  // columns per panel

struct Operands {
  bool ta;
  int K;
  const float* A;
  int lda;
  float* C;
  int ldc;
  bool acc;
  float a(int i, int k) const { return ta ? A[std::size_t(k) * lda + i] : A[std::size_t(i) * lda + k]; }
};

// Rows [i0, i0 + R) of the panel's columns [j0, j0 + cols): the K-long FMA chains, then the store.
template <int R>
void block(const Operands& o, const float* panel, int i0, int j0, int cols) {
  Vec acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = vzero();
  for (int k = 0; k < o.K; ++k) {
    const Vec b0 = vload(panel + std::size_t(k) * kNR), b1 = vload(panel + std::size_t(k) * kNR + kW);
    for (int r = 0; r < R; ++r) {
      const Vec a = vset1(o.a(i0 + r, k));
      acc[r][0] = vfma(a, b0, acc[r][0]);
      acc[r][1] = vfma(a, b1, acc[r][1]);
    }
  }
  for (int r = 0; r < R; ++r) {
    float* c = o.C + std::size_t(i0 + r) * o.ldc + j0;
    alignas(64) float s[kNR];
    vstore(s, acc[r][0]);
    vstore(s + kW, acc[r][1]);
    for (int j = 0; j < cols; ++j) c[j] = o.acc ? c[j] + s[j] : s[j];
  }
}

template <int R>
void rows_from(const Operands& o, const float* panel, int i0, int rows, int j0, int cols) {
  if constexpr (R > 0) {
    if (rows == R) return block<R>(o, panel, i0, j0, cols);
    return rows_from<R - 1>(o, panel, i0, rows, j0, cols);
  }
}

}  // namespace

void QS_TRAIN_GEMM_ENTRY(bool ta, bool tb, int M, int N, int K, const float* A, int lda, const float* B, int ldb,
                         float* C, int ldc, bool acc) {
  thread_local std::vector<float> panel;
  panel.resize(std::size_t(K) * kNR);
  const Operands o{ta, K, A, lda, C, ldc, acc};
  for (int j0 = 0; j0 < N; j0 += kNR) {
    const int cols = std::min(kNR, N - j0);
    for (int k = 0; k < K; ++k) {
      float* p = panel.data() + std::size_t(k) * kNR;
      for (int j = 0; j < cols; ++j) p[j] = tb ? B[std::size_t(j0 + j) * ldb + k] : B[std::size_t(k) * ldb + j0 + j];
      for (int j = cols; j < kNR; ++j) p[j] = 0.0f;
    }
    int i0 = 0;
    for (; i0 + kMR <= M; i0 += kMR) block<kMR>(o, panel.data(), i0, j0, cols);
    if (i0 < M) rows_from<kMR - 1>(o, panel.data(), i0, M - i0, j0, cols);
  }
}

}  // namespace qs::detail
