// Device helpers shared by the int8 GEMM kernels (gemm_int8.cu, gemm_int8_sm90.cu); never included by a
// public header. The epilogue here is the definition of "bit-identical to dequant_ref": every float32
// operation is spelled with an explicit rounding intrinsic so nvcc cannot contract it into an FMA.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace qs::cuda::detail {

// kOutI32Add: the tile's int32 sums are added (atomically) into Y, which the caller zeroed: the split-K
// kernels' partial products. Integer addition is associative, so the result does not depend on the order.
enum OutKind : int { kOutI32 = 0, kOutF32 = 1, kOutF16 = 2, kOutI32Add = 3 };

struct Epi {
  const float* sa = nullptr;  // scale of row i: sa[i * sa_step]
  int sa_step = 1;
  const float* sb = nullptr;  // scale of column j: sb[j * sb_step]
  int sb_step = 1;
  const float* bias = nullptr;  // nullptr: +0.0f (as dequant_ref adds 0.0f, so -0 becomes +0)
  void* Y = nullptr;
  int M = 0, N = 0;
  // Split-K with a fused epilogue (gemm_int8_sm90.cu): the zeroed int32 sums (M x N) and one arrival
  // counter per tile; the last block of a tile to arrive dequantizes it.
  int32_t* ws = nullptr;
  unsigned* counters = nullptr;
};

// y = ((float(acc) * sa) * sb) + b, each step rounded to nearest once: the order of dequant_ref.
__device__ __forceinline__ float dequant_one(int32_t acc, float sa, float sb, float b) {
  return __fadd_rn(__fmul_rn(__fmul_rn(__int2float_rn(acc), sa), sb), b);
}

// One dequantized output (float32, or float16 rounded to nearest) at element `at` of Y, from its scales and bias.
template <int O>
__device__ __forceinline__ void store_dequant(const Epi& e, std::size_t at, int32_t acc, float sa, float sb, float b) {
  const float y = dequant_one(acc, sa, sb, b);
  if constexpr (O == kOutF32) static_cast<float*>(e.Y)[at] = y;
  else static_cast<__half*>(e.Y)[at] = __float2half_rn(y);
}

template <int O>
__device__ __forceinline__ void store_one(const Epi& e, int row, int col, int32_t acc) {
  if (row >= e.M || col >= e.N) return;
  const std::size_t at = std::size_t(row) * e.N + col;
  if constexpr (O == kOutI32) {
    static_cast<int32_t*>(e.Y)[at] = acc;
  } else {
    const float b = e.bias ? e.bias[col] : 0.0f;
    store_dequant<O>(e, at, acc, e.sa[row * e.sa_step], e.sb[col * e.sb_step], b);
  }
}

// Four neighbouring outputs of row-major Y from element `at` on, in one store (16-byte aligned; float16: 8-byte):
// the int32 sums v, or their dequantized values y (float32, or float16 rounded to nearest).
template <int O>
__device__ __forceinline__ void store_four(const Epi& e, std::size_t at, int4 v, const float (&y)[4]) {
  if constexpr (O == kOutI32) {
    *reinterpret_cast<int4*>(static_cast<int32_t*>(e.Y) + at) = v;
  } else if constexpr (O == kOutF32) {
    *reinterpret_cast<float4*>(static_cast<float*>(e.Y) + at) = make_float4(y[0], y[1], y[2], y[3]);
  } else {
    static_assert(O == kOutF16, "store_four: int32, float32 or float16 out");
    const __half2 lo = __halves2half2(__float2half_rn(y[0]), __float2half_rn(y[1]));
    const __half2 hi = __halves2half2(__float2half_rn(y[2]), __float2half_rn(y[3]));
    uint2 w;
    w.x = *reinterpret_cast<const uint32_t*>(&lo);
    w.y = *reinterpret_cast<const uint32_t*>(&hi);
    *reinterpret_cast<uint2*>(static_cast<__half*>(e.Y) + at) = w;
  }
}

// The epilogue through shared memory: the accumulators of a tile are first written to shared memory
// (int32, row stride BN + kCsPad words, which keeps the fragment writes free of bank conflicts), then
// drain_tile reads them back so that each thread owns four neighbouring columns: their scales and biases
// are loaded once, and every row leaves as 16-byte (float16: 8-byte) stores that a warp coalesces.
constexpr int kCsPad = 8;

// The scales one thread of drain_tile<O, BN, NT, ROWS> needs (float outputs): those of its four columns (gc on,
// `valid` of them) and the row scale of each of its passes (rows r0, r0 + kRowStep, ... from m0, clamped to M).
__device__ __forceinline__ void drain_load_columns(const Epi& e, int gc, int valid, float (&sb)[4], float (&bb)[4]) {
#pragma unroll
  for (int i = 0; i < 4; ++i)
    if (i < valid) {
      sb[i] = __ldg(e.sb + std::size_t(gc + i) * e.sb_step);
      if (e.bias) bb[i] = __ldg(e.bias + gc + i);
    }
}
template <int kPasses, int kRowStep>
__device__ __forceinline__ void drain_load_scales(const Epi& e, int gc, int valid, int gr0, float (&sb)[4],
                                                  float (&bb)[4], float (&sa)[kPasses]) {
  drain_load_columns(e, gc, valid, sb, bb);
#pragma unroll
  for (int p = 0; p < kPasses; ++p) {
    const int gr = min(gr0 + p * kRowStep, e.M - 1);
    sa[p] = __ldg(e.sa + std::size_t(gr) * e.sa_step);
  }
}

// Those scales loaded ahead of drain_tile (drain_scales), so that a kernel can issue the loads early, before a
// barrier, and their latency passes under it.
template <int O, int BN, int NT, int ROWS>
struct DrainScales {
  static constexpr int kPerRow = BN / 4, kRowStep = NT / kPerRow, kPasses = ROWS / kRowStep;
  float sb[4] = {0.0f, 0.0f, 0.0f, 0.0f}, bb[4] = {0.0f, 0.0f, 0.0f, 0.0f}, sa[kPasses];
};

// Only the rows below M get a row scale (the others are never stored: a split-K band of 5 rows needs one pass of
// eight), and four column scales (and biases) that lie in one aligned 16 bytes come in one load.
template <int O, int BN, int NT, int ROWS>
__device__ __forceinline__ DrainScales<O, BN, NT, ROWS> drain_scales(const Epi& e, int m0, int n0) {
  using S = DrainScales<O, BN, NT, ROWS>;
  S s;
  if constexpr (O == kOutF32 || O == kOutF16) {
    const int gc = n0 + (threadIdx.x % S::kPerRow) * 4, gr0 = m0 + threadIdx.x / S::kPerRow;
#pragma unroll
    for (int p = 0; p < S::kPasses; ++p) s.sa[p] = 0.0f;
    if (gc < e.N) {
      const auto aligned = [](const float* q) { return (reinterpret_cast<std::uintptr_t>(q) & 15) == 0; };
      if (gc + 4 <= e.N && e.sb_step == 1 && aligned(e.sb + gc) && (!e.bias || aligned(e.bias + gc))) {
        const float4 v = __ldg(reinterpret_cast<const float4*>(e.sb + gc));
        s.sb[0] = v.x, s.sb[1] = v.y, s.sb[2] = v.z, s.sb[3] = v.w;
        if (e.bias) {
          const float4 b = __ldg(reinterpret_cast<const float4*>(e.bias + gc));
          s.bb[0] = b.x, s.bb[1] = b.y, s.bb[2] = b.z, s.bb[3] = b.w;
        }
      } else {
        drain_load_columns(e, gc, min(4, e.N - gc), s.sb, s.bb);
      }
#pragma unroll
      for (int p = 0; p < S::kPasses; ++p)
        if (gr0 + p * S::kRowStep < e.M) s.sa[p] = __ldg(e.sa + std::size_t(gr0 + p * S::kRowStep) * e.sa_step);
    }
  }
  return s;
}

// pre: the scales from drain_scales<O, BN, NT, ROWS>(e, m0, n0), or nullptr to load them here.
template <int O, int BN, int NT, int ROWS>
__device__ __forceinline__ void drain_tile(const Epi& e, const int32_t* Cs, int m0, int n0,
                                           const DrainScales<O, BN, NT, ROWS>* pre = nullptr) {
  static_assert(NT % (BN / 4) == 0 && ROWS % (NT / (BN / 4)) == 0, "whole rows per pass");
  constexpr int kPerRow = BN / 4, kRowStep = NT / kPerRow, kPasses = ROWS / kRowStep;
  const int c4 = (threadIdx.x % kPerRow) * 4, gc = n0 + c4, r0 = threadIdx.x / kPerRow;
  if (gc >= e.N) return;
  const int valid = min(4, e.N - gc);
  const bool vec = valid == 4 && (e.N & 3) == 0;  // then row starts, and so these stores, are aligned
  float sb[4] = {0.0f, 0.0f, 0.0f, 0.0f}, bb[4] = {0.0f, 0.0f, 0.0f, 0.0f}, sa[kPasses];
  if constexpr (O == kOutF32 || O == kOutF16) {
    // Every scale this thread needs, loaded up front: none of them waits behind a store.
    if (pre) {
#pragma unroll
      for (int i = 0; i < 4; ++i) sb[i] = pre->sb[i], bb[i] = pre->bb[i];
#pragma unroll
      for (int p = 0; p < kPasses; ++p) sa[p] = pre->sa[p];
    } else {
      drain_load_scales<kPasses, kRowStep>(e, gc, valid, m0 + r0, sb, bb, sa);
    }
  }
#pragma unroll
  for (int p = 0; p < kPasses; ++p) {
    const int r = r0 + p * kRowStep, gr = m0 + r;
    if (gr >= e.M) continue;
    const int4 v = *reinterpret_cast<const int4*>(Cs + r * (BN + kCsPad) + c4);
    const int32_t a[4] = {v.x, v.y, v.z, v.w};
    const std::size_t at = std::size_t(gr) * e.N + gc;
    if constexpr (O == kOutI32Add) {
      int32_t* Y = static_cast<int32_t*>(e.Y) + at;
      for (int i = 0; i < valid; ++i)
        if (a[i]) atomicAdd(Y + i, a[i]);
    } else if constexpr (O == kOutI32) {
      if (vec) store_four<O>(e, at, v, {});
      else
        for (int i = 0; i < valid; ++i) static_cast<int32_t*>(e.Y)[at + i] = a[i];
    } else {
      float y[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) y[i] = dequant_one(a[i], sa[p], sb[i], bb[i]);
      if (vec) {
        store_four<O>(e, at, v, y);
      } else {
        for (int i = 0; i < valid; ++i) {
          if constexpr (O == kOutF32) static_cast<float*>(e.Y)[at + i] = y[i];
          else static_cast<__half*>(e.Y)[at + i] = __float2half_rn(y[i]);
        }
      }
    }
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
// 4 bytes global -> shared (through L1: .ca is the only cache mode for fewer than 16 bytes); valid == false writes
// four zero bytes.
__device__ __forceinline__ void cp_async4(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 4 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// The device's SM count (device 0), queried once (gemm_int8.cu).
int sm_count();

// Records what this launch runs for gemm_int8_take_plan (gemm_int8.cu): a static description, and for split-K
// the blocks per tile (0: none).
void note_plan(const char* what, int splits = 0);

// The sm_90a kernel (gemm_int8_sm90.cu): whether this binary carries it for the current device (a probe
// kernel reports whether it was compiled with sm_90a features), and its launcher.
bool wgmma_compiled_for_device();
void gemm_int8_wgmma_launch(const int8_t* A, const int8_t* B, int M, int K, int N, const Epi& e, int out,
                          cudaStream_t stream);

}  // namespace qs::cuda::detail
