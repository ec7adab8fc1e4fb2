// Internal: the body of one level's Eigen product, included by gemm_f32_eigen*.cpp after they define
// QS_F32_ENTRY. The SIMD levels rename Eigen's namespace (QS_EIGEN_RENAME) so their instantiations,
// compiled with wider instruction sets, can never be merged with the generic ones by the linker.
// GCC 12 flags the _mm512_undefined_* operands inside the AVX-512 intrinsics as uninitialized.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <cstddef>

#if defined(QS_EIGEN_RENAME)
#define Eigen QS_EIGEN_RENAME
#endif
#include <Eigen/Core>

namespace qs::detail {

// C[:, j0:j1] = A · B[:, j0:j1] with row-major maps and the leading dimensions of the full matrices.
void QS_F32_ENTRY(const float* A, const float* B, float* C, int M, int K, int N, int j0, int j1) {
  using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Stride = Eigen::OuterStride<>;
  const Eigen::Map<const Mat> a(A, M, K);
  const Eigen::Map<const Mat, 0, Stride> b(B + j0, K, j1 - j0, Stride(N));
  Eigen::Map<Mat, 0, Stride> c(C + j0, M, j1 - j0, Stride(N));
  c.noalias() = a * b;
}

}  // namespace qs::detail
