// The scalar build of the training products (see train_gemm_impl.h) and the run-time dispatch.
#include "train/train_gemm.h"

#include <stdexcept>
#include <string>

#define QS_TRAIN_GEMM_ENTRY train_gemm_generic
#include "train/train_gemm_impl.h"

namespace qs {

void train_gemm(bool trans_a, bool trans_b, int M, int N, int K, const float* A, int lda, const float* B, int ldb,
                float* C, int ldc, bool accumulate, SimdLevel level) {
  if (trans_a && trans_b) throw std::invalid_argument("train_gemm: both operands transposed is not supported");
  if (M <= 0 || N <= 0 || K <= 0)
    throw std::invalid_argument("train_gemm: sizes must be positive (M=" + std::to_string(M) +
                                " N=" + std::to_string(N) + " K=" + std::to_string(K) + ")");
  switch (level) {
#if defined(QS_HAVE_X86_SIMD)
    case SimdLevel::Avx512:
      return detail::train_gemm_avx512(trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc, accumulate);
    case SimdLevel::Avx2:
      return detail::train_gemm_avx2(trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc, accumulate);
#endif
    default:
      return detail::train_gemm_generic(trans_a, trans_b, M, N, K, A, lda, B, ldb, C, ldc, accumulate);
  }
}

}  // namespace qs
