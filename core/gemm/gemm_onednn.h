// Internal: oneDNN's GEMMs as an optional comparison line for `bench gemm` (compiled only when
// core/CMakeLists.txt finds libdnnl; QS_HAVE_DNNL is then defined for qs_core's sources).
#pragma once

#include <cstdint>
#include <string>

namespace qs::detail {

// C (int32) = (A - ao) · B with A uint8 M x K and B int8 K x N, row-major (dnnl_gemm_u8s8s32).
void onednn_gemm_u8s8s32(const uint8_t* A, uint8_t ao, const int8_t* B, int32_t* C, int M, int K, int N,
                         int threads);
// C = A · B in float32 (dnnl_sgemm).
void onednn_sgemm(const float* A, const float* B, float* C, int M, int K, int N, int threads);
std::string onednn_version();

}  // namespace qs::detail
