// CUDA backward of the quantized linear layer: device helpers (load / store one gradient value) -> the
// dequantizing GEMM kernel and the column-sum kernels -> launchers (take a stream) -> entries that validate
// and dispatch. Both dX = dY * dequant(W_q) and dW = dY^T * dequant(X_q) have the form
//   C[r][c] = sum_t a(r, t) * (float(q[t][c]) * s[t])   with q a T x K int8 matrix and C an R x K one,
// where a(r, t) = dY[r][t] for dX (R = M, T = N) and dY[t][r] for dW (R = N, T = M); one kernel serves both.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "cuda/cuda_util.cuh"
#include "cuda/gemm_cublas.cuh"
#include "cuda/linear_backward.cuh"

namespace qs::cuda {

namespace {

using detail::check;

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }
__device__ __forceinline__ void put(float* p, float v) { *p = v; }
__device__ __forceinline__ void put(__half* p, float v) { *p = __float2half_rn(v); }

// A block of 16 x 16 threads owns a 64 x 64 tile of C, each thread 4 x 4 outputs (rows 4 ty + i, columns
// 4 tx + j). The reduction index t advances 16 at a time: a(r, t) is staged as As[t][r] (read as float4
// along r) and the int8 codes are dequantized while they are staged, Bs[t][c] = float(q) * s[t], the same
// float32 product the CPU reference rounds. Float32 FMA accumulation.
constexpr int kTile = 64, kStep = 16, kPad = 4;

template <typename T, bool kTransA>
__global__ void linear_bwd_gemm_kernel(const T* __restrict__ dY, int ldy, const int8_t* __restrict__ q,
                                       const float* __restrict__ s, int s_step, int R, int Tn, int K,
                                       T* __restrict__ C) {
  __shared__ __align__(16) float As[kStep][kTile + kPad];
  __shared__ __align__(16) float Bs[kStep][kTile];
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
  const int r0 = blockIdx.y * kTile, c0 = blockIdx.x * kTile;
  float acc[4][4] = {};
  for (int t0 = 0; t0 < Tn; t0 += kStep) {
    for (int e = tid; e < kTile * kStep; e += 256) {
      // Neighbouring threads read neighbouring addresses: along t for dX's dY rows, along r for dW's.
      const int r = kTransA ? e % kTile : e / kStep, t = kTransA ? e / kTile : e % kStep;
      const int gr = r0 + r, gt = t0 + t;
      float v = 0.0f;
      if (gr < R && gt < Tn) v = to_f32(kTransA ? dY[std::size_t(gt) * ldy + gr] : dY[std::size_t(gr) * ldy + gt]);
      As[t][r] = v;
      const int bt = e / kTile, bc = e % kTile, gbt = t0 + bt, gbc = c0 + bc;
      float w = 0.0f;
      if (gbt < Tn && gbc < K) w = __fmul_rn(float(q[std::size_t(gbt) * K + gbc]), s[std::size_t(gbt) * s_step]);
      Bs[bt][bc] = w;
    }
    __syncthreads();
#pragma unroll
    for (int t = 0; t < kStep; ++t) {
      const float4 a = *reinterpret_cast<const float4*>(&As[t][4 * ty]);
      const float4 b = *reinterpret_cast<const float4*>(&Bs[t][4 * tx]);
      const float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = r0 + 4 * ty + i;
    if (r >= R) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int c = c0 + 4 * tx + j;
      if (c < K) put(&C[std::size_t(r) * K + c], acc[i][j]);
    }
  }
}

// db: each thread sums one column over a chunk of rows (coalesced across the warp), then one pass adds the
// chunks in order, so the result does not depend on scheduling.
constexpr int kRowsPerChunk = 256;

template <typename T>
__global__ void column_sum_partial_kernel(const T* __restrict__ dY, int M, int N, float* __restrict__ partial) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= N) return;
  const int i0 = blockIdx.y * kRowsPerChunk, i1 = min(M, i0 + kRowsPerChunk);
  float sum = 0.0f;
  for (int i = i0; i < i1; ++i) sum += to_f32(dY[std::size_t(i) * N + j]);
  partial[std::size_t(blockIdx.y) * N + j] = sum;
}

template <typename T>
__global__ void column_sum_final_kernel(const float* __restrict__ partial, int chunks, int N, T* __restrict__ db) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= N) return;
  float sum = 0.0f;
  for (int c = 0; c < chunks; ++c) sum += partial[std::size_t(c) * N + j];
  put(&db[j], sum);
}

template <typename T>
void linear_backward_launch(const LinearBackwardArgs& a, float* partial, cudaStream_t s) {
  const T* dY = static_cast<const T*>(a.dY);
  const dim3 block(16, 16);
  if (a.dX) {
    const dim3 grid((a.K + kTile - 1) / kTile, (a.M + kTile - 1) / kTile);
    linear_bwd_gemm_kernel<T, false><<<grid, block, 0, s>>>(dY, a.N, a.Wq, a.s_w, a.s_w_per_row ? 1 : 0, a.M, a.N,
                                                             a.K, static_cast<T*>(a.dX));
  }
  if (a.dW) {
    const dim3 grid((a.K + kTile - 1) / kTile, (a.N + kTile - 1) / kTile);
    linear_bwd_gemm_kernel<T, true><<<grid, block, 0, s>>>(dY, a.N, a.Xq, a.s_x, a.s_x_per_row ? 1 : 0, a.N, a.M,
                                                            a.K, static_cast<T*>(a.dW));
  }
  if (a.db) {
    const int chunks = (a.M + kRowsPerChunk - 1) / kRowsPerChunk;
    column_sum_partial_kernel<T><<<dim3((a.N + 255) / 256, chunks), 256, 0, s>>>(dY, a.M, a.N, partial);
    column_sum_final_kernel<T><<<(a.N + 255) / 256, 256, 0, s>>>(partial, chunks, a.N, static_cast<T*>(a.db));
  }
  check(cudaGetLastError(), "linear backward launch");
}

// float32 gradients: the int8 operands dequantized once into stream-ordered scratch (the same float32
// products, float(q) * s rounded once) and both products through cuBLAS SGEMM (float32 compute, no TF32):
// the fused kernel above reached 0.4x of cuBLAS fp32 at 4096^3 and 0.17x at 16 x 4096 x 4096 (few 64-row
// tiles, a long sequential K loop). Same contract and tolerance (float32 accumulation, any order).
// QS_LINEAR_BWD=fused keeps the fused kernel (float16 gradients always use it).
__global__ void dequant_rows_kernel(const int8_t* __restrict__ q, const float* __restrict__ s, int s_step, std::size_t rows,
                                    int K, float* __restrict__ out) {
  const std::size_t n = rows * std::size_t(K);
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = __fmul_rn(float(q[i]), s[(i / std::size_t(K)) * std::size_t(s_step)]);
}

GemmLibrary& blas() {
  thread_local GemmLibrary lib;  // a cuBLAS handle per thread, as cuBLAS advises
  return lib;
}

void linear_backward_blas_launch(const LinearBackwardArgs& a, float* partial, cudaStream_t s) {
  const float* dY = static_cast<const float*>(a.dY);
  auto blocks = [](std::size_t n) { return unsigned(std::min<std::size_t>((n + 255) / 256, 8192)); };
  if (a.dX) {
    const std::size_t n = std::size_t(a.N) * a.K;
    detail::StreamScratch<float> w(n, s);
    dequant_rows_kernel<<<blocks(n), 256, 0, s>>>(a.Wq, a.s_w, a.s_w_per_row ? 1 : 0, std::size_t(a.N), a.K, w.ptr);
    check(cudaGetLastError(), "dequantize W");
    blas().sgemm(false, false, a.M, a.K, a.N, dY, a.N, w.ptr, a.K, static_cast<float*>(a.dX), a.K, s);  // dY W~
  }
  if (a.dW) {
    const std::size_t n = std::size_t(a.M) * a.K;
    detail::StreamScratch<float> x(n, s);
    dequant_rows_kernel<<<blocks(n), 256, 0, s>>>(a.Xq, a.s_x, a.s_x_per_row ? 1 : 0, std::size_t(a.M), a.K, x.ptr);
    check(cudaGetLastError(), "dequantize X");
    blas().sgemm(true, false, a.N, a.K, a.M, dY, a.N, x.ptr, a.K, static_cast<float*>(a.dW), a.K, s);  // dY^T X~
  }
  if (a.db) {
    const int chunks = (a.M + kRowsPerChunk - 1) / kRowsPerChunk;
    column_sum_partial_kernel<float><<<dim3((a.N + 255) / 256, chunks), 256, 0, s>>>(dY, a.M, a.N, partial);
    column_sum_final_kernel<float><<<(a.N + 255) / 256, 256, 0, s>>>(partial, chunks, a.N, static_cast<float*>(a.db));
  }
  check(cudaGetLastError(), "linear backward launch");
}

void validate(const LinearBackwardArgs& a) {
  if (a.M <= 0 || a.N <= 0 || a.K <= 0)
    throw std::invalid_argument("linear_backward_cuda: sizes must be positive, got M=" + std::to_string(a.M) +
                                " N=" + std::to_string(a.N) + " K=" + std::to_string(a.K));
  if (a.M > 65535 * kTile || a.N > 65535 * kTile)  // grid.y counts 64-row tiles
    throw std::invalid_argument("linear_backward_cuda: M and N must be at most " + std::to_string(65535 * kTile));
  if (!a.dY) throw std::invalid_argument("linear_backward_cuda: dY is missing");
  if (a.dX && (!a.Wq || !a.s_w)) throw std::invalid_argument("linear_backward_cuda: dX needs W_q and s_w");
  if (a.dW && (!a.Xq || !a.s_x)) throw std::invalid_argument("linear_backward_cuda: dW needs X_q and s_x");
}

std::size_t partial_floats(const LinearBackwardArgs& a) {
  return a.db ? std::size_t((a.M + kRowsPerChunk - 1) / kRowsPerChunk) * a.N : 0;
}

}  // namespace

void linear_backward_device(const LinearBackwardArgs& a, void* stream) {
  validate(a);
  auto s = static_cast<cudaStream_t>(stream);
  detail::StreamScratch<float> partial(partial_floats(a), s);  // freed in stream order: no host wait
  static const bool fused = [] {
    const char* v = std::getenv("QS_LINEAR_BWD");
    return v && std::strcmp(v, "fused") == 0;
  }();
  if (a.type == GradType::F32 && !fused) linear_backward_blas_launch(a, partial.ptr, s);
  else if (a.type == GradType::F32) linear_backward_launch<float>(a, partial.ptr, s);
  else linear_backward_launch<__half>(a, partial.ptr, s);
}

void linear_backward_cuda(const LinearBackwardArgs& h) {
  validate(h);
  const std::size_t es = h.type == GradType::F32 ? 4 : 2;
  const std::size_t MN = std::size_t(h.M) * h.N, MK = std::size_t(h.M) * h.K, NK = std::size_t(h.N) * h.K;
  const std::size_t nsx = h.s_x_per_row ? h.M : 1, nsw = h.s_w_per_row ? h.N : 1;
  detail::DeviceBuffer<uint8_t> dY(MN * es), dX(h.dX ? MK * es : 0), dW(h.dW ? NK * es : 0), db(h.db ? h.N * es : 0);
  detail::DeviceBuffer<int8_t> Xq(h.dW ? MK : 0), Wq(h.dX ? NK : 0);
  detail::DeviceBuffer<float> sx(h.dW ? nsx : 0), sw(h.dX ? nsw : 0);
  LinearBackwardArgs d = h;
  check(cudaMemcpy(dY.ptr, h.dY, MN * es, cudaMemcpyHostToDevice), "copy to device");
  d.dY = dY.ptr;
  if (h.dW) {
    check(cudaMemcpy(Xq.ptr, h.Xq, MK, cudaMemcpyHostToDevice), "copy to device");
    check(cudaMemcpy(sx.ptr, h.s_x, nsx * 4, cudaMemcpyHostToDevice), "copy to device");
    d.Xq = Xq.ptr;
    d.s_x = sx.ptr;
    d.dW = dW.ptr;
  }
  if (h.dX) {
    check(cudaMemcpy(Wq.ptr, h.Wq, NK, cudaMemcpyHostToDevice), "copy to device");
    check(cudaMemcpy(sw.ptr, h.s_w, nsw * 4, cudaMemcpyHostToDevice), "copy to device");
    d.Wq = Wq.ptr;
    d.s_w = sw.ptr;
    d.dX = dX.ptr;
  }
  if (h.db) d.db = db.ptr;
  linear_backward_device(d, nullptr);
  check(cudaStreamSynchronize(nullptr), "linear backward kernels");
  if (h.dX) check(cudaMemcpy(h.dX, dX.ptr, MK * es, cudaMemcpyDeviceToHost), "copy back");
  if (h.dW) check(cudaMemcpy(h.dW, dW.ptr, NK * es, cudaMemcpyDeviceToHost), "copy back");
  if (h.db) check(cudaMemcpy(h.db, db.ptr, h.N * es, cudaMemcpyDeviceToHost), "copy back");
}

}  // namespace qs::cuda
