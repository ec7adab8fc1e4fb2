// Device helpers shared by the int8 GEMM kernels (gemm_int8.cu, gemm_int8_sm90.cu); never included by a
// public header. The epilogue here is the definition of "bit-identical to dequant_ref": every float32
// operation is spelled with an explicit rounding intrinsic so nvcc cannot contract it into an FMA.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace qs::cuda::detail {

enum OutKind : int { kOutI32 = 0, kOutF32 = 1, kOutF16 = 2 };

struct Epi {
  const float* sa = nullptr;  // scale of row i: sa[i * sa_step]
  int sa_step = 1;
  const float* sb = nullptr;  // scale of column j: sb[j * sb_step]
  int sb_step = 1;
  const float* bias = nullptr;  // nullptr: +0.0f (as dequant_ref adds 0.0f, so -0 becomes +0)
  void* Y = nullptr;
  int M = 0, N = 0;
};

// y = ((float(acc) * sa) * sb) + b, each step rounded to nearest once: the order of dequant_ref.
__device__ __forceinline__ float dequant_one(int32_t acc, float sa, float sb, float b) {
  return __fadd_rn(__fmul_rn(__fmul_rn(__int2float_rn(acc), sa), sb), b);
}

template <int O>
__device__ __forceinline__ void store_one(const Epi& e, int row, int col, int32_t acc) {
  if (row >= e.M || col >= e.N) return;
  const std::size_t at = std::size_t(row) * e.N + col;
  if constexpr (O == kOutI32) {
    static_cast<int32_t*>(e.Y)[at] = acc;
  } else {
    const float b = e.bias ? e.bias[col] : 0.0f;
    const float y = dequant_one(acc, e.sa[row * e.sa_step], e.sb[col * e.sb_step], b);
    if constexpr (O == kOutF32) static_cast<float*>(e.Y)[at] = y;
    else static_cast<__half*>(e.Y)[at] = __float2half_rn(y);
  }
}

// Two neighbouring columns (col even) of one row, as the mma accumulator fragments hold them: one
// 8-byte (4-byte for float16) store when both are inside and N is even (so the address is aligned).
template <int O>
__device__ __forceinline__ void store_pair(const Epi& e, int row, int col, int32_t a0, int32_t a1) {
  if (row >= e.M) return;
  if (col + 1 >= e.N || (e.N & 1)) {
    store_one<O>(e, row, col, a0);
    store_one<O>(e, row, col + 1, a1);
    return;
  }
  const std::size_t at = std::size_t(row) * e.N + col;
  if constexpr (O == kOutI32) {
    *reinterpret_cast<int2*>(static_cast<int32_t*>(e.Y) + at) = make_int2(a0, a1);
  } else {
    const float sa = e.sa[row * e.sa_step];
    const float b0 = e.bias ? e.bias[col] : 0.0f, b1 = e.bias ? e.bias[col + 1] : 0.0f;
    const float y0 = dequant_one(a0, sa, e.sb[col * e.sb_step], b0);
    const float y1 = dequant_one(a1, sa, e.sb[(col + 1) * e.sb_step], b1);
    if constexpr (O == kOutF32) *reinterpret_cast<float2*>(static_cast<float*>(e.Y) + at) = make_float2(y0, y1);
    else *reinterpret_cast<__half2*>(static_cast<__half*>(e.Y) + at) = __halves2half2(__float2half_rn(y0), __float2half_rn(y1));
  }
}

// Output tile of block `pid` in a grouped order: `group` tile rows are swept together, so the B panels
// a wave reads stay in L2 while the A panels change.
__device__ __forceinline__ void tile_of(int pid, int tiles_m, int tiles_n, int group, int& tm, int& tn) {
  const int per_group = group * tiles_n;
  const int g = pid / per_group;
  const int first = g * group;
  const int rows = min(tiles_m - first, group);
  const int in = pid % per_group;
  tm = first + in % rows;
  tn = in / rows;
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

// 16 bytes global -> shared without passing through registers; valid == false writes 16 zero bytes
// (src-size 0), which is how tiles past M, N or K are padded.
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// The sm_90a kernel (gemm_int8_sm90.cu): whether this binary carries it for the current device (a probe
// kernel reports whether it was compiled with sm_90a features), and its launcher.
bool wgmma_compiled_for_device();
constexpr int kWgmmaBM = 128, kWgmmaBN = 256;
void gemm_int8_wgmma_cuda(const int8_t* A, const int8_t* B, int M, int K, int N, const Epi& e, int out,
                          cudaStream_t stream);

}  // namespace qs::cuda::detail
