// CUDA symmetric int8 quantization: device helpers -> kernels (per row: one block per row, two passes
// over a row that stays in L1; per tensor: an amax reduction, then the quantization) -> quantize_int8_launch
// (takes a stream) -> quantize_int8_device (device pointers, checks) -> quantize_int8_cuda (host pointers).
// Benchmark: bench_quantize_cuda.cu.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "cuda/cuda_util.cuh"
#include "cuda/quantize_int8.cuh"
#include "quant/int8_quant.h"
#include "format/scale_rule.h"  // int8_symmetric127_scale, host and device

namespace qs::cuda {

namespace {

using detail::check;
template <typename T>
using Buf = detail::DeviceBuffer<T>;

__device__ __forceinline__ float load(const float* x, std::size_t i) { return x[i]; }
__device__ __forceinline__ float load(const __half* x, std::size_t i) { return __half2float(x[i]); }

__device__ __forceinline__ int8_t q8(float v, float s) {
  if (v != v) return 0;
  const float r = rintf(v / s);
  return static_cast<int8_t>(fminf(fmaxf(r, -127.0f), 127.0f));
}

__device__ __forceinline__ float finite_abs(float v) { return (fabsf(v) <= 3.402823466e38f) ? fabsf(v) : 0.0f; }

__device__ float block_max(float v) {
  __shared__ float warp_max[32];
  for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warp_max[warp] = v;
  __syncthreads();
  v = threadIdx.x < (blockDim.x + 31) / 32 ? warp_max[threadIdx.x] : 0.0f;
  if (warp == 0)
    for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  __shared__ float result;
  if (threadIdx.x == 0) result = v;
  __syncthreads();
  return result;
}

template <typename T>
__global__ void quantize_rows_kernel(const T* __restrict__ x, std::size_t cols, int8_t* __restrict__ q,
                                     float* __restrict__ scales) {
  const std::size_t row = blockIdx.x;
  const T* xr = x + row * cols;
  int8_t* qr = q + row * cols;
  float m = 0.0f;
  if ((cols & 3) == 0 && sizeof(T) == 2) {
    // float16: four halves (8 bytes) per load in both passes.
    for (std::size_t c = 4 * threadIdx.x; c < cols; c += 4 * blockDim.x) {
      const uint2 raw = *reinterpret_cast<const uint2*>(reinterpret_cast<const __half*>(xr) + c);
      const float2 a = __half22float2(*reinterpret_cast<const __half2*>(&raw.x));
      const float2 b = __half22float2(*reinterpret_cast<const __half2*>(&raw.y));
      m = fmaxf(fmaxf(m, fmaxf(finite_abs(a.x), finite_abs(a.y))), fmaxf(finite_abs(b.x), finite_abs(b.y)));
    }
    const float s = int8_symmetric127_scale(block_max(m));
    if (threadIdx.x == 0) scales[row] = s;
    for (std::size_t c = 4 * threadIdx.x; c < cols; c += 4 * blockDim.x) {
      const uint2 raw = *reinterpret_cast<const uint2*>(reinterpret_cast<const __half*>(xr) + c);
      const float2 a = __half22float2(*reinterpret_cast<const __half2*>(&raw.x));
      const float2 b = __half22float2(*reinterpret_cast<const __half2*>(&raw.y));
      char4 o;
      o.x = q8(a.x, s);
      o.y = q8(a.y, s);
      o.z = q8(b.x, s);
      o.w = q8(b.y, s);
      *reinterpret_cast<char4*>(qr + c) = o;
    }
    return;
  }
  if ((cols & 3) == 0 && sizeof(T) == 4) {
    for (std::size_t c = 4 * threadIdx.x; c < cols; c += 4 * blockDim.x) {
      const float4 v = *reinterpret_cast<const float4*>(reinterpret_cast<const float*>(xr) + c);
      m = fmaxf(fmaxf(m, fmaxf(finite_abs(v.x), finite_abs(v.y))), fmaxf(finite_abs(v.z), finite_abs(v.w)));
    }
  } else {
    for (std::size_t c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, finite_abs(load(xr, c)));
  }
  const float s = int8_symmetric127_scale(block_max(m));
  if (threadIdx.x == 0) scales[row] = s;
  if ((cols & 3) == 0 && sizeof(T) == 4) {
    // Four elements per thread and step: 16-byte loads, 4-byte stores.
    for (std::size_t c = 4 * threadIdx.x; c < cols; c += 4 * blockDim.x) {
      const float4 v = *reinterpret_cast<const float4*>(reinterpret_cast<const float*>(xr) + c);
      char4 o;
      o.x = q8(v.x, s);
      o.y = q8(v.y, s);
      o.z = q8(v.z, s);
      o.w = q8(v.w, s);
      *reinterpret_cast<char4*>(qr + c) = o;
    }
  } else {
    for (std::size_t c = threadIdx.x; c < cols; c += blockDim.x) qr[c] = q8(load(xr, c), s);
  }
}

// float16 rows of at most 8 * blockDim.x * V elements (cols % 8 == 0): 16-byte loads of eight halves, all V
// of a thread issued before the row maximum is known, kept in registers and written as 8-byte stores.
__device__ __forceinline__ float max8(const uint4& v) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
  float m = 0.0f;
#pragma unroll
  for (int h = 0; h < 4; ++h) {
    const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&w[h]));
    m = fmaxf(m, fmaxf(finite_abs(f.x), finite_abs(f.y)));
  }
  return m;
}

__device__ __forceinline__ uint2 q8x8(const uint4& v, float s) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
  uint32_t out[2] = {0, 0};
#pragma unroll
  for (int h = 0; h < 4; ++h) {
    const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&w[h]));
    const uint32_t pair = uint32_t(uint8_t(q8(f.x, s))) | (uint32_t(uint8_t(q8(f.y, s))) << 8);
    out[h >> 1] |= pair << (16 * (h & 1));
  }
  return make_uint2(out[0], out[1]);
}

template <int V>
__global__ void __launch_bounds__(1024) quantize_rows_reg16_kernel(const __half* __restrict__ x, std::size_t cols, int8_t* __restrict__ q,
                                           float* __restrict__ scales) {
  const std::size_t row = blockIdx.x;
  const __half* xr = x + row * cols;
  int8_t* qr = q + row * cols;
  uint4 v[V];
  float m = 0.0f;
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const std::size_t c = 8 * (threadIdx.x + std::size_t(k) * blockDim.x);
    if (c < cols) v[k] = *reinterpret_cast<const uint4*>(xr + c);
  }
#pragma unroll
  for (int k = 0; k < V; ++k)
    if (8 * (threadIdx.x + std::size_t(k) * blockDim.x) < cols) m = fmaxf(m, max8(v[k]));
  const float s = int8_symmetric127_scale(block_max(m));
  if (threadIdx.x == 0) scales[row] = s;
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const std::size_t c = 8 * (threadIdx.x + std::size_t(k) * blockDim.x);
    if (c < cols) *reinterpret_cast<uint2*>(qr + c) = q8x8(v[k], s);
  }
}

// float16 rows of at most 16 * blockDim.x * G elements (cols % 16 == 0), with less arithmetic per element than
// the kernel above (which spends most of its issue slots on an IEEE division per element, so that float16, with
// more elements per byte than float32, was bound by instructions rather than memory):
// - the row maximum is a packed 16-bit integer maximum of |x| bit patterns (non-negative halves order as their
//   bits); a thread that sees inf or NaN (|bits| >= 0x7c00) recomputes its part with finite_abs instead;
// - the code is rint(x * r) with r = RN(1 / s), rounded half to even by adding 1.5 * 2^23 (its low byte is the
//   two's-complement code), and is used only when x * r lies at least 2^-15 from a half-integer: |x / s| <= 127
//   (1 + 2^-23), so x * r and RN(x / s) are both within 2^-16 of x / s and round to the same integer. Otherwise
//   (about 1e-4 of the elements, and every element of a thread holding inf or NaN) the group of 16 is redone
//   with q8, the exact division. No clamp is needed on the fast path: |x * r| < 127.5.
// - each thread loads two adjacent 16-byte words and stores one 16-byte word per group of 16 halves.
// H100, 8192 x 8192 (quant GB/s over copy GB/s): 0.95-0.96 with 256 threads, 0.97 with 512, 0.93 with 128, 0.73
// with 1024 (reg16 above: 0.81). Measured and dropped: streaming hints (__ldcs/__stcs, 0.94-0.95) and a
// persistent grid that loads the next row before reducing the current one (0.86-0.91).
constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23
constexpr float kNearHalf = 0.5f - 0x1p-15f;

// Two halves -> two codes in bytes 0 and 1 (bytes 2 and 3 are junk); dm collects |x * r - code|.
__device__ __forceinline__ uint32_t qpair_fast(uint32_t w, float r, float& dm) {
  const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&w));
  const float t0 = __fmaf_rn(f.x, r, kRoundMagic), t1 = __fmaf_rn(f.y, r, kRoundMagic);
  const float d0 = __fmaf_rn(f.x, r, -__fsub_rn(t0, kRoundMagic));
  const float d1 = __fmaf_rn(f.y, r, -__fsub_rn(t1, kRoundMagic));
  dm = fmaxf(dm, fmaxf(fabsf(d0), fabsf(d1)));
  return __byte_perm(__float_as_uint(t0), __float_as_uint(t1), 0x0040);
}

__device__ __forceinline__ uint32_t q4_fast(uint32_t w0, uint32_t w1, float r, float& dm) {
  return __byte_perm(qpair_fast(w0, r, dm), qpair_fast(w1, r, dm), 0x5410);
}

// float32 rows of at most 4 * blockDim.x * V elements (cols % 4 == 0), kept in registers between the row
// maximum and the quantization (the row is read once), the code of four elements computed as in the f16x16 kernel:
// rint(x * r) with r = RN(1 / s) by adding 1.5 * 2^23, used when every x * r of the four lies at least 2^-15 from
// a half-integer (|x * r - x / s| <= ~1.5e-5 < 2^-16 as |x / s| <= 127 (1 + 2^-23)); otherwise, inf and NaN
// included (their d is NaN and fails the test), the four are redone with q8.
// H100 8192 x 8192 fp32 per row, 1024 threads: 0.848/0.853/0.848 (reg kernel) -> 0.992/0.996/0.995 (0.985-0.990
// with 512), against 0.85 for the same kernel dividing each element by s.
__device__ __forceinline__ uint32_t q4_f32(const float4& v, float r, float s) {
  const float t0 = __fmaf_rn(v.x, r, kRoundMagic), t1 = __fmaf_rn(v.y, r, kRoundMagic);
  const float t2 = __fmaf_rn(v.z, r, kRoundMagic), t3 = __fmaf_rn(v.w, r, kRoundMagic);
  const float d0 = __fmaf_rn(v.x, r, -__fsub_rn(t0, kRoundMagic));
  const float d1 = __fmaf_rn(v.y, r, -__fsub_rn(t1, kRoundMagic));
  const float d2 = __fmaf_rn(v.z, r, -__fsub_rn(t2, kRoundMagic));
  const float d3 = __fmaf_rn(v.w, r, -__fsub_rn(t3, kRoundMagic));
  const bool ok = fabsf(d0) <= kNearHalf && fabsf(d1) <= kNearHalf && fabsf(d2) <= kNearHalf && fabsf(d3) <= kNearHalf;
  if (ok)
    return __byte_perm(__byte_perm(__float_as_uint(t0), __float_as_uint(t1), 0x0040),
                       __byte_perm(__float_as_uint(t2), __float_as_uint(t3), 0x0040), 0x5410);
  return uint32_t(uint8_t(q8(v.x, s))) | (uint32_t(uint8_t(q8(v.y, s))) << 8) | (uint32_t(uint8_t(q8(v.z, s))) << 16) |
         (uint32_t(uint8_t(q8(v.w, s))) << 24);
}

template <int V>
__global__ void __launch_bounds__(1024) quantize_rows_f32fast_kernel(const float* __restrict__ x, std::size_t cols,
                                                                     int8_t* __restrict__ q, float* __restrict__ scales) {
  const std::size_t row = blockIdx.x;
  const float* xr = x + row * cols;
  int8_t* qr = q + row * cols;
  float4 v[V];
  float m = 0.0f;
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const std::size_t c = 4 * (threadIdx.x + std::size_t(k) * blockDim.x);
    if (c < cols) v[k] = *reinterpret_cast<const float4*>(xr + c);
  }
#pragma unroll
  for (int k = 0; k < V; ++k)
    if (4 * (threadIdx.x + std::size_t(k) * blockDim.x) < cols)
      m = fmaxf(fmaxf(m, fmaxf(finite_abs(v[k].x), finite_abs(v[k].y))), fmaxf(finite_abs(v[k].z), finite_abs(v[k].w)));
  const float s = int8_symmetric127_scale(block_max(m));
  if (threadIdx.x == 0) scales[row] = s;
  const float r = __frcp_rn(s);
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const std::size_t c = 4 * (threadIdx.x + std::size_t(k) * blockDim.x);
    if (c < cols) *reinterpret_cast<uint32_t*>(qr + c) = q4_f32(v[k], r, s);
  }
}

template <int G>
__global__ void __launch_bounds__(1024) quantize_rows_f16x16_kernel(const __half* __restrict__ x, std::size_t cols,
                                                                    int8_t* __restrict__ q, float* __restrict__ scales) {
  const std::size_t row = blockIdx.x;
  const __half* xr = x + row * cols;
  int8_t* qr = q + row * cols;
  uint4 v[2 * G];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    const std::size_t c = 16 * (threadIdx.x + std::size_t(g) * blockDim.x);
    if (c < cols) {
      v[2 * g] = *reinterpret_cast<const uint4*>(xr + c);
      v[2 * g + 1] = *reinterpret_cast<const uint4*>(xr + c + 8);
    }
  }
  uint32_t mx = 0;
#pragma unroll
  for (int g = 0; g < G; ++g)
    if (16 * (threadIdx.x + std::size_t(g) * blockDim.x) < cols)
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        mx = __vmaxu2(mx, v[2 * g + j].x & 0x7fff7fffu);
        mx = __vmaxu2(mx, v[2 * g + j].y & 0x7fff7fffu);
        mx = __vmaxu2(mx, v[2 * g + j].z & 0x7fff7fffu);
        mx = __vmaxu2(mx, v[2 * g + j].w & 0x7fff7fffu);
      }
  mx = max(mx & 0xffffu, mx >> 16);
  const bool nonfinite = mx >= 0x7c00u;
  float m = __half2float(__ushort_as_half(static_cast<unsigned short>(mx)));
  if (nonfinite) {
    m = 0.0f;
#pragma unroll
    for (int g = 0; g < G; ++g)
      if (16 * (threadIdx.x + std::size_t(g) * blockDim.x) < cols) m = fmaxf(m, fmaxf(max8(v[2 * g]), max8(v[2 * g + 1])));
  }
  const float s = int8_symmetric127_scale(block_max(m));
  if (threadIdx.x == 0) scales[row] = s;
  const float r = __frcp_rn(s);
#pragma unroll
  for (int g = 0; g < G; ++g) {
    const std::size_t c = 16 * (threadIdx.x + std::size_t(g) * blockDim.x);
    if (c < cols) {
      const uint4 a = v[2 * g], b = v[2 * g + 1];
      float dm = 0.0f;
      uint4 o = make_uint4(q4_fast(a.x, a.y, r, dm), q4_fast(a.z, a.w, r, dm), q4_fast(b.x, b.y, r, dm),
                           q4_fast(b.z, b.w, r, dm));
      if (nonfinite || dm > kNearHalf) {
        const uint2 lo = q8x8(a, s), hi = q8x8(b, s);
        o = make_uint4(lo.x, lo.y, hi.x, hi.y);
      }
      *reinterpret_cast<uint4*>(qr + c) = o;
    }
  }
}

// Launches the kernel above when the row fits (cols % 16 == 0, at most 16 * nt * 4 halves); false otherwise.
bool quantize_int8_launch_f16x16(const __half* x, std::size_t rows, std::size_t cols, int8_t* q, float* scales, int nt,
                   cudaStream_t stream) {
  if (cols % 16 != 0 || cols > std::size_t(16) * nt * 4) return false;
  if (cols <= std::size_t(16) * nt) quantize_rows_f16x16_kernel<1><<<unsigned(rows), nt, 0, stream>>>(x, cols, q, scales);
  else if (cols <= std::size_t(32) * nt) quantize_rows_f16x16_kernel<2><<<unsigned(rows), nt, 0, stream>>>(x, cols, q, scales);
  else quantize_rows_f16x16_kernel<4><<<unsigned(rows), nt, 0, stream>>>(x, cols, q, scales);
  check(cudaGetLastError(), "kernel launch");
  return true;
}

template <typename T>
__global__ void amax_kernel(const T* __restrict__ x, std::size_t n, unsigned int* amax_bits) {
  float m = 0.0f;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    m = fmaxf(m, finite_abs(load(x, i)));
  m = block_max(m);
  if (threadIdx.x == 0) atomicMax(amax_bits, __float_as_uint(m));  // non-negative floats order as integers
}

template <typename T>
__global__ void quantize_tensor_kernel(const T* __restrict__ x, std::size_t n, const unsigned int* amax_bits,
                                       int8_t* __restrict__ q, float* __restrict__ scale) {
  const float s = int8_symmetric127_scale(__uint_as_float(*amax_bits));
  if (blockIdx.x == 0 && threadIdx.x == 0) *scale = s;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    q[i] = q8(load(x, i), s);
}

// Per tensor, vectorised (x 16-byte aligned, q 8-byte aligned; the scalar kernels above otherwise).
// Both passes run one wave of 256-thread blocks over "chunks" of kTU vector words per thread (kTU * 256 *
// blocks words each). The amax pass walks the chunks forwards, the quantization pass backwards, so that
// it starts on the chunks the amax pass read last, which are still in L2 (50 MB on H100); it reads x
// with evict-first hints. Codes: rint(x * r) with r = RN(1 / s), as in the per-row kernels (q4_f32, and
// for float16 the same test per element), the exact q8 for a group where any element lies within 2^-15 of
// a half-integer or is not finite. The per-tensor bound |x / s| <= 127 (1 + 2^-23) holds as per row.
// float16 amax: packed 16-bit maxima of |x| bit patterns; a thread whose maximum is inf or NaN (>= 0x7c00)
// walks its words again with finite_abs.
constexpr int kTU = 4;

__device__ __forceinline__ float amax4(float m, const float4& v) {
  return fmaxf(fmaxf(m, fmaxf(finite_abs(v.x), finite_abs(v.y))), fmaxf(finite_abs(v.z), finite_abs(v.w)));
}

__device__ __forceinline__ void block_amax_out(float m, unsigned int* amax_bits) {
  m = block_max(m);
  if (threadIdx.x == 0 && m > 0.0f) atomicMax(amax_bits, __float_as_uint(m));
}

__global__ void __launch_bounds__(256) amax_f32v_kernel(const float* __restrict__ x, std::size_t n, unsigned int* amax_bits) {
  const std::size_t n4 = n / 4, stride = std::size_t(gridDim.x) * blockDim.x;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  float m = 0.0f;
  for (; i + (kTU - 1) * stride < n4; i += kTU * stride) {
    float4 v[kTU];
#pragma unroll
    for (int k = 0; k < kTU; ++k) v[k] = x4[i + k * stride];
#pragma unroll
    for (int k = 0; k < kTU; ++k) m = amax4(m, v[k]);
  }
  for (; i < n4; i += stride) m = amax4(m, x4[i]);
  if (blockIdx.x == 0 && threadIdx.x < n - 4 * n4) m = fmaxf(m, finite_abs(x[4 * n4 + threadIdx.x]));
  block_amax_out(m, amax_bits);
}

__device__ __forceinline__ uint32_t absmax_bits8(uint32_t mx, const uint4& v) {
  mx = __vmaxu2(mx, v.x & 0x7fff7fffu);
  mx = __vmaxu2(mx, v.y & 0x7fff7fffu);
  mx = __vmaxu2(mx, v.z & 0x7fff7fffu);
  return __vmaxu2(mx, v.w & 0x7fff7fffu);
}

__global__ void __launch_bounds__(256) amax_f16v_kernel(const __half* __restrict__ x, std::size_t n, unsigned int* amax_bits) {
  const std::size_t n8 = n / 8, stride = std::size_t(gridDim.x) * blockDim.x;
  const uint4* x8 = reinterpret_cast<const uint4*>(x);
  const std::size_t i0 = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  std::size_t i = i0;
  uint32_t mx = 0;
  for (; i + (kTU - 1) * stride < n8; i += kTU * stride) {
    uint4 v[kTU];
#pragma unroll
    for (int k = 0; k < kTU; ++k) v[k] = x8[i + k * stride];
#pragma unroll
    for (int k = 0; k < kTU; ++k) mx = absmax_bits8(mx, v[k]);
  }
  for (; i < n8; i += stride) mx = absmax_bits8(mx, x8[i]);
  mx = max(mx & 0xffffu, mx >> 16);
  float m = __half2float(__ushort_as_half(static_cast<unsigned short>(mx)));
  if (mx >= 0x7c00u) {  // inf or NaN among this thread's words: their finite maximum instead
    m = 0.0f;
    for (std::size_t j = i0; j < n8; j += stride) m = fmaxf(m, max8(x8[j]));
  }
  if (blockIdx.x == 0 && threadIdx.x < n - 8 * n8) m = fmaxf(m, finite_abs(__half2float(x[8 * n8 + threadIdx.x])));
  block_amax_out(m, amax_bits);
}

__device__ __forceinline__ float tensor_scale(const unsigned int* amax_bits, float* scale) {
  const float s = int8_symmetric127_scale(__uint_as_float(*amax_bits));
  if (blockIdx.x == 0 && threadIdx.x == 0) *scale = s;
  return s;
}

__global__ void __launch_bounds__(256) quantize_tensor_f32v_kernel(const float* __restrict__ x, std::size_t n,
                                                                   const unsigned int* amax_bits, int8_t* __restrict__ q,
                                                                   float* __restrict__ scale) {
  const float s = tensor_scale(amax_bits, scale), r = __frcp_rn(s);
  const std::size_t n4 = n / 4, stride = std::size_t(gridDim.x) * blockDim.x, chunk = kTU * stride;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  uint32_t* q4 = reinterpret_cast<uint32_t*>(q);
  const std::size_t t = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (std::size_t c = (n4 + chunk - 1) / chunk; c-- > 0;) {
    const std::size_t i = c * chunk + t;
    float4 v[kTU];
#pragma unroll
    for (int k = 0; k < kTU; ++k)
      if (i + k * stride < n4) v[k] = __ldcs(x4 + i + k * stride);
#pragma unroll
    for (int k = 0; k < kTU; ++k)
      if (i + k * stride < n4) q4[i + k * stride] = q4_f32(v[k], r, s);
  }
  if (blockIdx.x == 0 && threadIdx.x < n - 4 * n4) q[4 * n4 + threadIdx.x] = q8(x[4 * n4 + threadIdx.x], s);
}

// Eight halves -> eight codes by rint(x * r); ok turns false when one of them needs q8.
__device__ __forceinline__ uint2 q8x8_fast(const uint4& v, float r, bool& ok) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
  uint32_t pr[4];
#pragma unroll
  for (int h = 0; h < 4; ++h) {
    const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&w[h]));
    const float t0 = __fmaf_rn(f.x, r, kRoundMagic), t1 = __fmaf_rn(f.y, r, kRoundMagic);
    const float d0 = __fmaf_rn(f.x, r, -__fsub_rn(t0, kRoundMagic));
    const float d1 = __fmaf_rn(f.y, r, -__fsub_rn(t1, kRoundMagic));
    ok = ok && fabsf(d0) <= kNearHalf && fabsf(d1) <= kNearHalf;  // false for NaN (inf or NaN input)
    pr[h] = __byte_perm(__float_as_uint(t0), __float_as_uint(t1), 0x0040);
  }
  return make_uint2(__byte_perm(pr[0], pr[1], 0x5410), __byte_perm(pr[2], pr[3], 0x5410));
}

__global__ void __launch_bounds__(256) quantize_tensor_f16v_kernel(const __half* __restrict__ x, std::size_t n,
                                                                   const unsigned int* amax_bits, int8_t* __restrict__ q,
                                                                   float* __restrict__ scale) {
  const float s = tensor_scale(amax_bits, scale), r = __frcp_rn(s);
  const std::size_t n8 = n / 8, stride = std::size_t(gridDim.x) * blockDim.x, chunk = kTU * stride;
  const uint4* x8 = reinterpret_cast<const uint4*>(x);
  uint2* q8p = reinterpret_cast<uint2*>(q);
  const std::size_t t = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (std::size_t c = (n8 + chunk - 1) / chunk; c-- > 0;) {
    const std::size_t i = c * chunk + t;
    uint4 v[kTU];
#pragma unroll
    for (int k = 0; k < kTU; ++k)
      if (i + k * stride < n8) v[k] = __ldcs(x8 + i + k * stride);
#pragma unroll
    for (int k = 0; k < kTU; ++k)
      if (i + k * stride < n8) {
        bool ok = true;
        uint2 o = q8x8_fast(v[k], r, ok);
        if (!ok) o = q8x8(v[k], s);
        q8p[i + k * stride] = o;
      }
  }
  if (blockIdx.x == 0 && threadIdx.x < n - 8 * n8) q[8 * n8 + threadIdx.x] = q8(__half2float(x[8 * n8 + threadIdx.x]), s);
}

// Launches the vectorised per-tensor pair; false when the pointers are not aligned for it.
template <typename T>
bool quantize_int8_launch_tensor_vec(const T* x, std::size_t n, int8_t* q, float* scales, unsigned int* amax_bits, cudaStream_t stream) {
  if (std::getenv("QS_QTENSOR_SCALAR")) return false;  // A/B against the scalar pair (tuning)
  if (reinterpret_cast<std::uintptr_t>(x) % 16 != 0 || reinterpret_cast<std::uintptr_t>(q) % 8 != 0) return false;
  static int per_sm = 0, sms = 0;
  if (!per_sm) {
    int a = 0, b = 0;
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "device query");
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&a, sizeof(T) == 4 ? (const void*)amax_f32v_kernel : (const void*)amax_f16v_kernel, 256, 0), "occupancy");
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, sizeof(T) == 4 ? (const void*)quantize_tensor_f32v_kernel : (const void*)quantize_tensor_f16v_kernel, 256, 0), "occupancy");
    per_sm = std::max(1, std::min(a, b));
  }
  const std::size_t words = sizeof(T) == 4 ? n / 4 : n / 8;
  const int blocks = int(std::max<std::size_t>(1, std::min<std::size_t>((words + 255) / 256, std::size_t(sms) * per_sm)));
  check(cudaMemsetAsync(amax_bits, 0, sizeof(unsigned int), stream), "memset");
  if constexpr (sizeof(T) == 4) {
    amax_f32v_kernel<<<blocks, 256, 0, stream>>>(x, n, amax_bits);
    quantize_tensor_f32v_kernel<<<blocks, 256, 0, stream>>>(x, n, amax_bits, q, scales);
  } else {
    const auto* xh = reinterpret_cast<const __half*>(x);
    amax_f16v_kernel<<<blocks, 256, 0, stream>>>(xh, n, amax_bits);
    quantize_tensor_f16v_kernel<<<blocks, 256, 0, stream>>>(xh, n, amax_bits, q, scales);
  }
  check(cudaGetLastError(), "kernel launch");
  return true;
}

template <typename T>
void quantize_int8_launch(const T* x, std::size_t rows, std::size_t cols, bool per_row, int8_t* q, float* scales,
            unsigned int* amax_bits, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  if (per_row) {
    // Register-resident rows, one block per row, every load issued before the row's maximum is needed.
    // Block sizes measured on H100 at 8192 x 8192 (quant GB/s over copy GB/s): float32 0.82 with 256
    // threads, 0.90 with 512, 0.94 with 1024; float16 with the reg16 kernel 0.68 / 0.81 / 0.80 / 0.68 with
    // 128 / 256 / 512 / 1024, now the f16x16 kernel (cols % 16 == 0; figures above it), reg16 for the rest.
    // QS_QROW_THREADS=128|256|512|1024 overrides (tuning).
    const char* force = std::getenv("QS_QROW_THREADS");
    int nt = force ? std::atoi(force) : 0;
    if (nt != 128 && nt != 256 && nt != 512 && nt != 1024) nt = 0;
    if constexpr (sizeof(T) == 2) {
      if (!nt) nt = cols >= 8192 ? 512 : 256;
      if (quantize_int8_launch_f16x16(reinterpret_cast<const __half*>(x), rows, cols, q, scales, nt, stream)) return;
      if (cols % 8 == 0 && cols <= std::size_t(8) * nt * 4) {
        const auto* xh = reinterpret_cast<const __half*>(x);
        if (cols <= std::size_t(8) * nt) quantize_rows_reg16_kernel<1><<<unsigned(rows), nt, 0, stream>>>(xh, cols, q, scales);
        else if (cols <= std::size_t(16) * nt) quantize_rows_reg16_kernel<2><<<unsigned(rows), nt, 0, stream>>>(xh, cols, q, scales);
        else quantize_rows_reg16_kernel<4><<<unsigned(rows), nt, 0, stream>>>(xh, cols, q, scales);
        check(cudaGetLastError(), "kernel launch");
        return;
      }
    } else {
      if (!nt) nt = cols >= 4096 ? 1024 : 256;
      if (cols % 4 == 0 && cols <= std::size_t(4) * nt * 8) {
        const float* xf = reinterpret_cast<const float*>(x);
        if (cols <= std::size_t(4) * nt) quantize_rows_f32fast_kernel<1><<<unsigned(rows), nt, 0, stream>>>(xf, cols, q, scales);
        else if (cols <= std::size_t(8) * nt) quantize_rows_f32fast_kernel<2><<<unsigned(rows), nt, 0, stream>>>(xf, cols, q, scales);
        else if (cols <= std::size_t(16) * nt) quantize_rows_f32fast_kernel<4><<<unsigned(rows), nt, 0, stream>>>(xf, cols, q, scales);
        else quantize_rows_f32fast_kernel<8><<<unsigned(rows), nt, 0, stream>>>(xf, cols, q, scales);
        check(cudaGetLastError(), "kernel launch");
        return;
      }
    }
    quantize_rows_kernel<T><<<unsigned(rows), 256, 0, stream>>>(x, cols, q, scales);
  } else {
    const std::size_t n = rows * cols;
    if (quantize_int8_launch_tensor_vec(x, n, q, scales, amax_bits, stream)) return;
    int sms = 0;
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "device query");
    const int blocks = int(std::min<std::size_t>((n + 255) / 256, std::size_t(sms) * 8));
    check(cudaMemsetAsync(amax_bits, 0, sizeof(unsigned int), stream), "memset");
    amax_kernel<T><<<blocks, 256, 0, stream>>>(x, n, amax_bits);
    quantize_tensor_kernel<T><<<blocks, 256, 0, stream>>>(x, n, amax_bits, q, scales);
  }
  check(cudaGetLastError(), "kernel launch");
}

}  // namespace

void quantize_int8_cuda(const float* x, const uint16_t* x16, std::size_t rows, std::size_t cols, bool per_row,
                        int8_t* q, float* scales) {
  const std::size_t n = rows * cols, ns = per_row ? rows : 1;
  if (n == 0) return;
  Buf<int8_t> dq(n);
  Buf<float> ds(ns), dx(x ? n : 0);
  Buf<__half> dh(x16 ? n : 0);
  Buf<unsigned int> dm(1);
  if (x) check(cudaMemcpy(dx.ptr, x, n * 4, cudaMemcpyHostToDevice), "copy to device");
  else check(cudaMemcpy(dh.ptr, x16, n * 2, cudaMemcpyHostToDevice), "copy to device");
  quantize_int8_device(x ? dx.ptr : nullptr, x ? nullptr : reinterpret_cast<const uint16_t*>(dh.ptr), rows, cols, per_row,
                       dq.ptr, ds.ptr, dm.ptr, nullptr);
  check(cudaDeviceSynchronize(), "int8 quantization kernel");
  check(cudaMemcpy(q, dq.ptr, n, cudaMemcpyDeviceToHost), "copy back");
  check(cudaMemcpy(scales, ds.ptr, ns * 4, cudaMemcpyDeviceToHost), "copy back");
}

void quantize_int8_device(const float* x, const uint16_t* x16, std::size_t rows, std::size_t cols, bool per_row, int8_t* q,
                          float* scales, void* amax_scratch, void* stream) {
  if (!x == !x16) throw std::invalid_argument("quantize_int8_device: give exactly one of x and x16");
  if (rows * cols && (!q || !scales || (!per_row && !amax_scratch)))
    throw std::invalid_argument("quantize_int8_device: null pointer");
  auto* amax = static_cast<unsigned int*>(amax_scratch);
  const auto s = static_cast<cudaStream_t>(stream);
  if (x) quantize_int8_launch(x, rows, cols, per_row, q, scales, amax, s);
  else quantize_int8_launch(reinterpret_cast<const __half*>(x16), rows, cols, per_row, q, scales, amax, s);
}

}  // namespace qs::cuda
