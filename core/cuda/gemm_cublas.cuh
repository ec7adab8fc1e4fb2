// NVIDIA's libraries as the reference lines of `bench gemm --backend cuda`: cuBLASLt int8 (int32 out,
// K-major operands, a 32 MiB workspace, the fastest of the heuristic's candidates) and cuBLAS fp32 SGEMM,
// TF32 and bf16 (fp32 out). No CUDA types here. Exercise: `quantscope-cli bench gemm --backend cuda`.
//
//   qs::cuda::GemmLibrary lib;                      // handles and workspace, once
//   lib.int8(dA, dB, M, K, N, dC);                  // C (int32, M x N) = A (M x K) * B^T (B: N x K)
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace qs::cuda {

// All pointers are device pointers; every matrix is row-major: A / X is M x K, B / W is N x K (a linear
// layer's out x in weight, so both operands are K-major: the "TN" layout that cuBLASLt's int8 kernels
// want), Y is M x N. `stream` is a cudaStream_t (nullptr: the default stream). Throws std::runtime_error
// with the library's status on failure (no algorithm for a shape, out of memory).
class GemmLibrary {
 public:
  GemmLibrary();
  ~GemmLibrary();
  GemmLibrary(const GemmLibrary&) = delete;
  GemmLibrary& operator=(const GemmLibrary&) = delete;

  // Exact int32 product. The first call for a shape asks cuBLASLt's heuristic for up to 8 algorithms,
  // times each and keeps the fastest for later calls (the returned description names it).
  std::string int8(const int8_t* A, const int8_t* B, int M, int K, int N, int32_t* Y, void* stream = nullptr);
  // float32 inputs and output; tf32 = true lets cuBLAS round the inputs to TF32 on the tensor cores.
  void f32(const float* X, const float* W, int M, int K, int N, float* Y, bool tf32, void* stream = nullptr);
  // The training lab's products, row-major as train_gemm (train/train_gemm.h): C (M x N) = op(A) op(B) with
  // op(A) M x K (A is K x M when trans_a), op(B) K x N (B is N x K when trans_b); float32 compute, no TF32.
  void sgemm(bool trans_a, bool trans_b, int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C,
             int ldc, void* stream = nullptr);
  // The same with bfloat16 operands (bit patterns), float32 accumulation and output.
  void bf16gemm(bool trans_a, bool trans_b, int M, int N, int K, const uint16_t* A, int lda, const uint16_t* B, int ldb,
                float* C, int ldc, void* stream = nullptr);
  // bfloat16 inputs (bit patterns), float32 accumulation and output.
  void bf16(const uint16_t* X, const uint16_t* W, int M, int K, int N, float* Y, void* stream = nullptr);

  static std::string version();  // e.g. "cuBLAS 13.0.0"

 private:
  struct Impl;
  std::unique_ptr<Impl> p_;
};

}  // namespace qs::cuda
