// Internal: the body of one level's training products, included by train_gemm_*.cpp after they define
// QS_TRAIN_GEMM_ENTRY (and, for the SIMD levels, QS_EIGEN_RENAME so their Eigen instantiations, compiled
// with wider instruction sets, can never be merged with the generic ones by the linker).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#if defined(QS_EIGEN_RENAME)
#define Eigen QS_EIGEN_RENAME
#endif
#include <Eigen/Core>

namespace qs::detail {

void QS_TRAIN_GEMM_ENTRY(bool ta, bool tb, int M, int N, int K, const float* A, int lda, const float* B, int ldb,
                         float* C, int ldc, bool acc) {
  using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Stride = Eigen::OuterStride<>;
  using CMap = Eigen::Map<const Mat, 0, Stride>;
  Eigen::Map<Mat, 0, Stride> c(C, M, N, Stride(ldc));
  if (!ta && !tb) {
    const CMap a(A, M, K, Stride(lda)), b(B, K, N, Stride(ldb));
    if (acc) c.noalias() += a * b; else c.noalias() = a * b;
  } else if (!ta) {
    const CMap a(A, M, K, Stride(lda)), b(B, N, K, Stride(ldb));
    if (acc) c.noalias() += a * b.transpose(); else c.noalias() = a * b.transpose();
  } else {
    const CMap a(A, K, M, Stride(lda)), b(B, K, N, Stride(ldb));
    if (acc) c.noalias() += a.transpose() * b; else c.noalias() = a.transpose() * b;
  }
}

}  // namespace qs::detail
