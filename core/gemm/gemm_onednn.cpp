// oneDNN's u8s8s32 and sgemm behind plain signatures, for the benchmark's comparison rows. Debian's
// libdnnl uses the OpenMP runtime; its thread count is set through omp_set_num_threads when that
// symbol is loaded (looked up at run time, so the engine does not link OpenMP itself).
#include "gemm/gemm_onednn.h"

#include <dlfcn.h>

#include <oneapi/dnnl/dnnl.h>

#include <stdexcept>

namespace qs::detail {
namespace {

void set_threads(int threads) {
  using Fn = void (*)(int);
  static Fn fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  if (fn && threads > 0) fn(threads);
}

void check(dnnl_status_t st, const char* what) {
  if (st != dnnl_success) throw std::runtime_error(std::string(what) + " failed with status " + std::to_string(int(st)));
}

}  // namespace

void onednn_gemm_u8s8s32(const uint8_t* A, uint8_t ao, const int8_t* B, int32_t* C, int M, int K, int N,
                         int threads) {
  set_threads(threads);
  const int32_t co = 0;
  check(dnnl_gemm_u8s8s32('N', 'N', 'F', M, N, K, 1.0f, A, K, ao, B, N, 0, 0.0f, C, N, &co), "dnnl_gemm_u8s8s32");
}

void onednn_sgemm(const float* A, const float* B, float* C, int M, int K, int N, int threads) {
  set_threads(threads);
  check(dnnl_sgemm('N', 'N', M, N, K, 1.0f, A, K, B, N, 0.0f, C, N), "dnnl_sgemm");
}

std::string onednn_version() {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

}  // namespace qs::detail
