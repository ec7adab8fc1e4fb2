// The float32 products of the training lab (forward X·Wᵀ, weight gradient dYᵀ·X, input gradient dY·W), built
// once per SIMD level and dispatched at run time. Every element is one canonical sum, the same bits at every
// level, for every thread split and on the GPU (cuda/train_cuda.cu's repro_gemm kernel runs the same chain):
//   C[i][j] = s_K, s_0 = +0, s_{k+1} = fma(op(A)[i][k], op(B)[k][j], s_k)   (then C[i][j] + s_K when accumulating)
// Single-threaded: the MLP splits work across cores itself, in fixed shards.
// Exercise: tests/core/tst_mlp.cpp (every level bit for bit against the scalar chain; gradients against finite
// differences).
//
//   qs::train_gemm(false, true, B, out, in, X, in, W, in, Y, out, false);  // Y = X · Wᵀ
#pragma once

#include "format/encode_simd.h"

namespace qs {

// C (M x N) = op(A) · op(B), or C += op(A) · op(B) when `accumulate`. All row-major with leading
// dimensions (elements between rows). op(A) is M x K: A is M x K, or K x M when trans_a. op(B) is K x N:
// B is K x N, or N x K when trans_b. trans_a and trans_b together are not supported (std::invalid_argument).
// Results do not depend on the level (the canonical sum above).
void train_gemm(bool trans_a, bool trans_b, int M, int N, int K, const float* A, int lda, const float* B, int ldb,
                float* C, int ldc, bool accumulate, SimdLevel level = best_simd_level());

namespace detail {
void train_gemm_generic(bool ta, bool tb, int M, int N, int K, const float* A, int lda, const float* B, int ldb,
                        float* C, int ldc, bool acc);
void train_gemm_avx2(bool ta, bool tb, int M, int N, int K, const float* A, int lda, const float* B, int ldb,
                     float* C, int ldc, bool acc);
void train_gemm_avx512(bool ta, bool tb, int M, int N, int K, const float* A, int lda, const float* B, int ldb,
                       float* C, int ldc, bool acc);
}  // namespace detail

}  // namespace qs
