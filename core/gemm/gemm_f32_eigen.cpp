// Dispatch of the Eigen float32 baseline over levels and threads; the generic build of its body.
// Exercise: tests/tst_gemm.cpp, `quantscope-cli bench gemm`.
#define QS_F32_ENTRY gemm_f32_eigen_generic
#include "gemm/gemm_f32_eigen_impl.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "gemm/gemm_f32.h"
#include "util/parallel.h"

namespace qs {
namespace detail {
void gemm_f32_eigen_avx2(const float* A, const float* B, float* C, int M, int K, int N, int j0, int j1);
void gemm_f32_eigen_avx512(const float* A, const float* B, float* C, int M, int K, int N, int j0, int j1);
}  // namespace detail

void gemm_f32_eigen(const float* A, const float* B, float* C, int M, int K, int N, int threads, SimdLevel level) {
  if (!A || !B || !C) throw std::invalid_argument("gemm_f32_eigen: null pointer");
  if (M <= 0 || K <= 0 || N <= 0)
    throw std::invalid_argument("gemm_f32_eigen: M, K and N must be positive, got " + std::to_string(M) + " x " +
                                std::to_string(K) + " x " + std::to_string(N));
  const auto& levels = available_simd_levels();
  if (std::find(levels.begin(), levels.end(), level) == levels.end())
    throw std::invalid_argument(std::string("gemm_f32_eigen: level ") + to_string(level) + " is not available");
  auto fn = &detail::gemm_f32_eigen_generic;
#if defined(QS_HAVE_X86_SIMD)
  // The AVX2 build also uses FMA; a CPU with AVX2 but without FMA runs the generic build.
  if (level == SimdLevel::Avx2 && __builtin_cpu_supports("fma")) fn = &detail::gemm_f32_eigen_avx2;
  if (level == SimdLevel::Avx512) fn = &detail::gemm_f32_eigen_avx512;
#endif
  threads = resolve_threads(threads);
  // Column slices in multiples of 64 so every slice keeps Eigen's full register blocking.
  const int per = std::max(64, (N + threads - 1) / threads + 63) / 64 * 64;
  if (threads == 1 || N <= per) {
    fn(A, B, C, M, K, N, 0, N);
    return;
  }
  parallel_chunks(std::size_t(N), std::size_t(per), threads,
                  [&](std::size_t b, std::size_t e) { fn(A, B, C, M, K, N, int(b), int(e)); });
}

}  // namespace qs
