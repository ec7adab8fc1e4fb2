// CUDA int8 GEMM on Hopper (sm_90a): warpgroup MMA (wgmma.mma_async m64n256k32 s8) reading both operands
// from shared memory through matrix descriptors. Device helpers -> kernel -> launcher; the entry that picks
// it is gemm_int8_device (gemm_int8.cu). Everything that needs sm_90a sits behind __CUDA_ARCH_FEAT_SM90_ALL,
// so builds for sm_80 / sm_89 compile an empty kernel that is never launched (wgmma_compiled_for_device).
#include <cuda_runtime.h>

#include <mutex>

#include "cuda/cuda_util.cuh"
#include "cuda/gemm_int8_common.cuh"

namespace qs::cuda::detail {

namespace {

// A block of two warpgroups computes a 128 x 256 tile; each warpgroup owns 64 rows and holds its 64 x 256
// int32 accumulators in 128 registers per thread. K advances in 128-byte slices through a 4-deep ring of
// shared buffers filled by cp.async two slices ahead (the third buffer is the one the previous slice's
// wgmma may still be reading). Rows are 128 bytes in the 128-byte swizzle that the descriptors name: chunk
// c of row r sits at chunk c ^ (r % 8), relative to a 1024-byte aligned base.
constexpr int kBK = 128, kStages = 4, kAhead = 2, kThreads = 256;
constexpr int kABytes = kWgmmaBM * kBK, kBBytes = kWgmmaBN * kBK, kStageBytes = kABytes + kBBytes;
constexpr int kSmem = kStages * kStageBytes + 1024;  // + room to align the base to 1024 bytes

__device__ __forceinline__ uint32_t swz128(int row, int chunk) {
  return uint32_t(row * kBK + ((chunk ^ (row & 7)) << 4));
}

// Shared-memory matrix descriptor: start address, leading byte offset (unused for swizzled K-major
// operands, 1 by convention), stride byte offset 1024 (from one 8-row group to the next), 128-byte swizzle.
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr) {
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(1) << 16) | (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 62);
}

__device__ __forceinline__ void fence_operand(int& r) { asm volatile("" : "+r"(r)::"memory"); }

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// cp.async writes through the generic proxy; wgmma reads through the async proxy.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// D (64 x 256, s32) += A (64 x 32, s8, K-major) * B (32 x 256, s8, K-major), issued asynchronously.
__device__ __forceinline__ void wgmma_m64n256k32(int (&d)[128], uint64_t da, uint64_t db) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "}, %128, %129, p;\n"
      "}\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
        "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]),
        "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]),
        "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]),
        "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]),
        "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]),
        "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]),
        "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63]),
        "+r"(d[64]), "+r"(d[65]), "+r"(d[66]), "+r"(d[67]), "+r"(d[68]), "+r"(d[69]), "+r"(d[70]), "+r"(d[71]),
        "+r"(d[72]), "+r"(d[73]), "+r"(d[74]), "+r"(d[75]), "+r"(d[76]), "+r"(d[77]), "+r"(d[78]), "+r"(d[79]),
        "+r"(d[80]), "+r"(d[81]), "+r"(d[82]), "+r"(d[83]), "+r"(d[84]), "+r"(d[85]), "+r"(d[86]), "+r"(d[87]),
        "+r"(d[88]), "+r"(d[89]), "+r"(d[90]), "+r"(d[91]), "+r"(d[92]), "+r"(d[93]), "+r"(d[94]), "+r"(d[95]),
        "+r"(d[96]), "+r"(d[97]), "+r"(d[98]), "+r"(d[99]), "+r"(d[100]), "+r"(d[101]), "+r"(d[102]), "+r"(d[103]),
        "+r"(d[104]), "+r"(d[105]), "+r"(d[106]), "+r"(d[107]), "+r"(d[108]), "+r"(d[109]), "+r"(d[110]), "+r"(d[111]),
        "+r"(d[112]), "+r"(d[113]), "+r"(d[114]), "+r"(d[115]), "+r"(d[116]), "+r"(d[117]), "+r"(d[118]), "+r"(d[119]),
        "+r"(d[120]), "+r"(d[121]), "+r"(d[122]), "+r"(d[123]), "+r"(d[124]), "+r"(d[125]), "+r"(d[126]), "+r"(d[127])
      : "l"(da), "l"(db), "r"(1));
}
#endif

template <int O>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_int8_wgmma_kernel(const int8_t* __restrict__ A, const int8_t* __restrict__ B, int M, int K, int N, Epi e) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t smem_raw[];
  const uint32_t sbase = (smem_addr(smem_raw) + 1023u) & ~1023u;
  const int tiles_m = (M + kWgmmaBM - 1) / kWgmmaBM, tiles_n = (N + kWgmmaBN - 1) / kWgmmaBN;
  int tm, tn;
  tile_of(blockIdx.x, tiles_m, tiles_n, 8, tm, tn);
  const int m0 = tm * kWgmmaBM, n0 = tn * kWgmmaBN;
  const int wg = threadIdx.x >> 7;
  const int KT = (K + kBK - 1) / kBK;

  auto load_slice = [&](int kt, int slot) {
    const int k0 = kt * kBK;
    const uint32_t sA = sbase + slot * kStageBytes, sB = sA + kABytes;
#pragma unroll
    for (int it = 0; it < kWgmmaBM * 8 / kThreads; ++it) {
      const int i = threadIdx.x + it * kThreads, r = i >> 3, c = i & 7, gr = m0 + r, gk = k0 + 16 * c;
      const bool v = gr < M && gk < K;  // K % 16 == 0: a chunk is all inside or all outside
      cp_async16(sA + swz128(r, c), v ? A + std::size_t(gr) * K + gk : A, v);
    }
#pragma unroll
    for (int it = 0; it < kWgmmaBN * 8 / kThreads; ++it) {
      const int i = threadIdx.x + it * kThreads, r = i >> 3, c = i & 7, gr = n0 + r, gk = k0 + 16 * c;
      const bool v = gr < N && gk < K;
      cp_async16(sB + swz128(r, c), v ? B + std::size_t(gr) * K + gk : B, v);
    }
  };

#pragma unroll
  for (int s = 0; s < kAhead; ++s) {
    if (s < KT) load_slice(s, s);
    cp_async_commit();
  }
  int acc[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = 0;
  for (int kt = 0; kt < KT; ++kt) {
    cp_async_wait<kAhead - 1>();  // slice kt has landed (this thread's chunks) ...
    fence_proxy_async();          // ... is visible to the tensor cores ...
    __syncthreads();              // ... for everyone's chunks; wgmma of slice kt - 2 is done in both warpgroups
    if (kt + kAhead < KT) load_slice(kt + kAhead, (kt + kAhead) % kStages);
    cp_async_commit();
    const uint32_t sA = sbase + (kt % kStages) * kStageBytes + wg * 64 * kBK;
    const uint32_t sB = sbase + (kt % kStages) * kStageBytes + kABytes;
#pragma unroll
    for (int i = 0; i < 128; ++i) fence_operand(acc[i]);
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < kBK / 32; ++k) wgmma_m64n256k32(acc, smem_desc(sA + 32 * k), smem_desc(sB + 32 * k));
    wgmma_commit();
    wgmma_wait<1>();  // keep this slice's MMAs in flight while the next slice is awaited
#pragma unroll
    for (int i = 0; i < 128; ++i) fence_operand(acc[i]);
  }
  wgmma_wait<0>();
#pragma unroll
  for (int i = 0; i < 128; ++i) fence_operand(acc[i]);
  cp_async_wait<0>();
  // Accumulators: warp w of the warpgroup holds rows 16 w .. 16 w + 15; acc[4 j .. 4 j + 3] are columns
  // 8 j + 2 t, + 1 of rows g and g + 8 (g = lane / 4, t = lane % 4), as in an m16n8 mma fragment.
  const int lane = threadIdx.x & 31, w = (threadIdx.x >> 5) & 3, g = lane >> 2, t = lane & 3;
  const int r = m0 + wg * 64 + w * 16 + g;
#pragma unroll
  for (int j = 0; j < kWgmmaBN / 8; ++j) {
    const int c = n0 + 8 * j + 2 * t;
    store_pair<O>(e, r, c, acc[4 * j], acc[4 * j + 1]);
    store_pair<O>(e, r + 8, c, acc[4 * j + 2], acc[4 * j + 3]);
  }
#endif
}

__global__ void sm90a_probe_kernel(int* out) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  *out = 1;
#else
  *out = 0;
#endif
}

template <int O>
void launch(const int8_t* A, const int8_t* B, int M, int K, int N, const Epi& e, cudaStream_t s) {
  auto* kernel = gemm_int8_wgmma_kernel<O>;
  static std::once_flag once;
  std::call_once(once, [&] {
    check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem), "wgmma kernel attribute");
  });
  const long tiles = long((M + kWgmmaBM - 1) / kWgmmaBM) * ((N + kWgmmaBN - 1) / kWgmmaBN);
  kernel<<<unsigned(tiles), kThreads, kSmem, s>>>(A, B, M, K, N, e);
}

}  // namespace

bool wgmma_compiled_for_device() {
  static const bool yes = [] {
    int* d = nullptr;
    int h = 0;
    if (cudaMalloc(&d, sizeof(int)) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    sm90a_probe_kernel<<<1, 1>>>(d);
    // No image for this device at all (e.g. a 90a-only build on an sm_80 GPU) is a launch error: no wgmma.
    const bool ok = cudaGetLastError() == cudaSuccess && cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess;
    cudaGetLastError();
    cudaFree(d);
    return ok && h == 1;
  }();
  return yes;
}

void gemm_int8_wgmma_cuda(const int8_t* A, const int8_t* B, int M, int K, int N, const Epi& e, int out,
                          cudaStream_t stream) {
  switch (out) {
    case kOutI32: launch<kOutI32>(A, B, M, K, N, e, stream); break;
    case kOutF32: launch<kOutF32>(A, B, M, K, N, e, stream); break;
    default: launch<kOutF16>(A, B, M, K, N, e, stream); break;
  }
}

}  // namespace qs::cuda::detail
