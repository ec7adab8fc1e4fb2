// CUDA int8 GEMM with int32 accumulation and the fused dequantizing epilogue of gemm/gemm.h: a tiled dp4a
// kernel (the readable reference path, any shape), an mma.sync m16n8k32 tensor-core kernel (sm_80+) and a
// wgmma kernel (sm_90a builds on H100/H200); the tensor-core requests run M <= 16 (decode) on a skinny
// mma.sync kernel that streams B once (QS_GEMM_SKINNY=0: their own tiles). No CUDA types here.
// Exercise: `quantscope-cli selftest --backend cuda`, `quantscope-cli bench gemm --backend cuda`.
//
//   // A: M x K int8 row-major (activations), B: N x K int8 row-major (a linear layer's out x in weight).
//   std::vector<float> Y(M * N);
//   qs::cuda::gemm_int8_cuda(A, B, M, K, N, &dq, qs::cuda::GemmOut::F32, Y.data());
//
// What is computed: acc[i][j] = sum_k A[i][k] * B[j][k] in exact int32 (K <= kGemmInt8MaxK),
// then either acc itself (GemmOut::I32) or the epilogue of dequant_ref (gemm/gemm.h), bit for bit:
//   y = ((float(acc) * scale_a[i or 0]) * scale_b[j or 0]) + bias[j or 0.0f]
// with every operation rounded to nearest once (no FMA contraction, on the CPU as on the GPU), and for
// GemmOut::F16 that float32 y rounded once more to float16 (round to nearest even, overflow to inf), i.e.
// float_to_half(y) of format/float16.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "gemm/gemm.h"

namespace qs::cuda {

// Largest K whose int8 x int8 sums always fit in int32 (131071), the CPU GEMM's bound.
inline constexpr int kGemmInt8MaxK = int(gemm_max_k(QType::S8, QType::S8));

enum class GemmKernel : uint8_t { Auto, Dp4a, Mma, Wgmma };
enum class GemmOut : uint8_t { I32, F32, F16 };
const char* to_string(GemmKernel k);  // "auto", "dp4a", "mma", "wgmma"
const char* to_string(GemmOut o);     // "i32", "f32", "f16"

// Whether `k` can run M x K x N on this device and build: Dp4a always; Mma needs sm_80+, K % 16 == 0;
// Wgmma additionally sm_90a code in this binary and an sm_90 device. Auto is always true.
bool gemm_int8_supported(GemmKernel k, int M, int K, int N);
// The kernel a request runs: Auto picks the fastest supported one; an unsupported request falls back
// (Wgmma -> Mma -> Dp4a), so a shape never gets a wrong answer. `why` (optional) says why it fell back.
GemmKernel gemm_int8_resolve(GemmKernel want, int M, int K, int N, std::string* why = nullptr);

// The epilogue's operands on the device (float32): scale_a has M values (per row) or 1, scale_b N or 1,
// bias N values or none. Ignored for GemmOut::I32.
struct GemmEpilogueDev {
  const float* scale_a = nullptr;
  bool scale_a_per_row = true;
  const float* scale_b = nullptr;
  bool scale_b_per_col = true;
  const float* bias = nullptr;
};

// Device pointers (A, B, Y with leading dimensions K, K, N; 16-byte aligned base pointers for the tensor
// core kernels, as cudaMalloc gives). `stream` is a cudaStream_t (nullptr: the default stream). Returns
// the kernel that ran. Throws std::invalid_argument on bad shapes (non-positive, K beyond kGemmInt8MaxK).
GemmKernel gemm_int8_device(const int8_t* A, const int8_t* B, int M, int K, int N, const GemmEpilogueDev& ep,
                            GemmOut out, void* Y, GemmKernel want, void* stream = nullptr);

// What the calling thread's last gemm_int8_device / gemm_int8_cuda call ran, e.g. "the skinny mma.sync kernel
// (M <= 16)" or "wgmma split-K in clusters, 7 blocks per tile", and forgets it ("" when nothing ran since the last
// take). `bench gemm --backend cuda` notes it for every int8 row, since the kernel name alone does not say which
// of a kernel's paths a shape takes.
std::string gemm_int8_take_plan();

// The epilogue's operands on the host, as in the CPU's Dequant: scale_a 1 or M values, scale_b 1 or N,
// bias 0 or N.
struct GemmEpilogueHost {
  const float* scale_a = nullptr;
  std::size_t scale_a_size = 0;
  const float* scale_b = nullptr;
  std::size_t scale_b_size = 0;
  const float* bias = nullptr;
  std::size_t bias_size = 0;
};

// Host pointers in and out (copies through the device); the epilogue is ignored for GemmOut::I32.
// Y: int32_t, float or uint16_t (float16 bits), M x N row-major.
GemmKernel gemm_int8_cuda(const int8_t* A, const int8_t* B, int M, int K, int N, const GemmEpilogueHost& ep,
                          GemmOut out, void* Y, GemmKernel want = GemmKernel::Auto);

}  // namespace qs::cuda
