// CUDA int8 GEMM on Hopper (sm_90a): warpgroup MMA (wgmma.mma_async m64nNk32 s8) reading both operands
// from shared memory through matrix descriptors. Device helpers -> kernel -> launcher; the entry that picks
// it is gemm_int8_device (gemm_int8.cu). Everything that needs sm_90a sits behind __CUDA_ARCH_FEAT_SM90_ALL,
// so builds for sm_80 / sm_89 compile empty kernels that are never launched (wgmma_compiled_for_device).
#include <cuda.h>  // CUtensorMap and its encoder's signature (resolved through the runtime: no -lcuda)
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <numeric>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cuda/cluster_places.h"
#include "cuda/cuda_util.cuh"
#include "cuda/gemm_int8_common.cuh"

namespace qs::cuda::detail {

// The float32 epilogue's biases where there are none (outside the anonymous namespace below: nvcc's host stub
// cannot name a __device__ variable declared inside one).
[[maybe_unused]] __device__ __align__(16) const float kPpZeros[32] = {};

namespace {

// A block of two warpgroups computes a 128 x BN tile; each warpgroup owns 64 rows and holds its 64 x BN
// int32 accumulators in BN / 2 registers per thread. K advances in BK-byte slices through a ring of STAGES
// shared buffers filled by cp.async AHEAD slices ahead (AHEAD <= STAGES - 2: the slice before the current
// one may still be read by an MMA in flight). Rows of BK bytes are stored in the swizzle the descriptors
// name (128-byte rows: chunk c of row r at c ^ (r % 8); 64-byte rows: at c ^ ((r / 2) % 4)).
//   128 x 256, BK 128, 4 stages: one block per SM (192 KiB), the widest MMA.
//   128 x 128, BK 64, 6 stages: two blocks per SM (97 KiB each), so one block's epilogue and barriers
//   overlap the other's MMAs.
template <int BN_, int BK_, int STAGES_, int AHEAD_, int MIN_BLOCKS_>
struct WgCfg {
  static constexpr int BM = 128, BN = BN_, BK = BK_, kStages = STAGES_, kAhead = AHEAD_, kMinBlocks = MIN_BLOCKS_;
  static constexpr int kThreads = 256, kAccRegs = BN / 2;
  static_assert(kAccRegs * 2 == BN, "a warpgroup's 64 x BN int32 tile over its 128 threads");
  static constexpr int kABytes = BM * BK, kBBytes = BN * BK, kStageBytes = kABytes + kBBytes;
  static constexpr int kAlign = BK == 128 ? 1024 : 512;  // the swizzle pattern's period
  static constexpr int kSmem = kStages * kStageBytes + kAlign;
  static_assert(BK == 128 || BK == 64, "128- or 64-byte swizzle");
  static_assert(kAhead <= kStages - 2, "a slot is refilled only after its MMAs are known done");
  static_assert(BM * (BN + kCsPad) * 4 <= kStages * kStageBytes, "the output tile fits the ring");
};
using WgWide = WgCfg<256, 128, 4, 2, 1>;
using WgTwin = WgCfg<128, 64, 6, 4, 2>;
// The last partial wave of WgWide tiles, each tile split into 2 or 4 blocks of 128 x 128 / 128 x 64 (the TMA
// kernel's `sub`): see gemm_int8_wgmma_launch_splits.
using WgHalf = WgCfg<128, 128, 4, 2, 1>;
using WgQuarter = WgCfg<64, 128, 4, 2, 1>;

template <int BK>
__device__ __forceinline__ uint32_t swz(int row, int chunk) {
  if constexpr (BK == 128) return uint32_t(row * 128 + ((chunk ^ (row & 7)) << 4));
  else return uint32_t(row * 64 + ((chunk ^ ((row >> 1) & 3)) << 4));
}

// Shared-memory matrix descriptor: start address, leading byte offset (unused for swizzled K-major
// operands, 1 by convention), stride byte offset (from one 8-row group to the next: 8 rows of BK bytes),
// layout type 1 = 128-byte swizzle, 2 = 64-byte swizzle.
template <int BK>
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr) {
  constexpr uint64_t layout = BK == 128 ? 1 : 2;
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(1) << 16) | (uint64_t((8 * BK) >> 4) << 32) | (layout << 62);
}

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ void fence_operand(int& r) { asm volatile("" : "+r"(r)::"memory"); }
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// cp.async writes through the generic proxy; wgmma reads through the async proxy.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// D (64 x N, s32) += A (64 x 32, s8, K-major) * B (32 x N, s8, K-major), issued asynchronously.
__device__ __forceinline__ void wgmma_m64k32(int (&d)[128], uint64_t da, uint64_t db) {
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

// scale_d == 0: D = A * B (the accumulators' old values are ignored: a tile's first MMA needs no zeroing).
__device__ __forceinline__ void wgmma_m64k32(int (&d)[64], uint64_t da, uint64_t db, int scale_d = 1) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, %64, %65, p;\n"
      "}\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
        "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]),
        "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]),
        "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]),
        "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]),
        "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]),
        "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]),
        "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63])
      : "l"(da), "l"(db), "r"(scale_d));
}

__device__ __forceinline__ void wgmma_m64k32(int (&d)[32], uint64_t da, uint64_t db) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, %32, %33, p;\n"
      "}\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
        "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]),
        "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]),
        "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31])
      : "l"(da), "l"(db), "r"(1));
}

// One K slice of a warpgroup's 64 x BN tile, the same in both kernels: the slice's MMAs issued, those of the
// slice before retired (wait<1>), so the next slice can be awaited while these run.
template <int BK, int R>
__device__ __forceinline__ void mma_slice(int (&acc)[R], uint32_t sA, uint32_t sB) {
#pragma unroll
  for (int i = 0; i < R; ++i) fence_operand(acc[i]);
  wgmma_fence();
#pragma unroll
  for (int k = 0; k < BK / 32; ++k) wgmma_m64k32(acc, smem_desc<BK>(sA + 32 * k), smem_desc<BK>(sB + 32 * k));
  wgmma_commit();
  wgmma_wait<1>();
#pragma unroll
  for (int i = 0; i < R; ++i) fence_operand(acc[i]);
}

// Every MMA of the warpgroup retired: the accumulators are final.
template <int R>
__device__ __forceinline__ void mma_retire(int (&acc)[R]) {
  wgmma_wait<0>();
#pragma unroll
  for (int i = 0; i < R; ++i) fence_operand(acc[i]);
}

__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ uint32_t cluster_blocks() {
  uint32_t n;
  asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(n));
  return n;
}
// Every thread of every block of the cluster: what each wrote before (shared memory included) is visible after.
__device__ __forceinline__ void cluster_sync_all() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
// The two halves of a cluster barrier, apart: work between them overlaps the wait for the other blocks. The release
// arrival makes this thread's earlier writes visible to the cluster after its wait (ptxas puts a MEMBAR before it,
// which waits for every memory access in flight, loads included); the relaxed one orders no memory at all.
__device__ __forceinline__ void cluster_arrive_release() { asm volatile("barrier.cluster.arrive.release;\n" ::: "memory"); }
__device__ __forceinline__ void cluster_arrive_relaxed() { asm volatile("barrier.cluster.arrive.relaxed;\n" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire;\n" ::: "memory"); }
// 16 bytes at this block's shared address `addr`, read from the same address in cluster block `rank`.
__device__ __forceinline__ int4 ld_cluster_v4(uint32_t addr, uint32_t rank) {
  int4 v;
  asm volatile(
      "{\n"
      ".reg .b32 ra;\n"
      "mapa.shared::cluster.u32 ra, %4, %5;\n"
      "ld.shared::cluster.v4.s32 {%0, %1, %2, %3}, [ra];\n"
      "}\n"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "r"(addr), "r"(rank));
  return v;
}

// Warpgroup `wg`'s accumulators into the output tile in shared memory (row stride BN + kCsPad words): warp w
// of the warpgroup holds rows 16 w .. 16 w + 15; acc[4 j .. 4 j + 3] are columns 8 j + 2 t, + 1 of rows g
// and g + 8 (g = lane / 4, t = lane % 4), as in an m16n8 mma fragment.
template <int BN, int R>
__device__ __forceinline__ void acc_to_tile(const int (&acc)[R], int32_t* Cs, int wg) {
  const int lane = threadIdx.x & 31, w = (threadIdx.x >> 5) & 3, g = lane >> 2, t = lane & 3;
  const int r = wg * 64 + w * 16 + g;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    const int c = 8 * j + 2 * t;
    *reinterpret_cast<int2*>(Cs + r * (BN + kCsPad) + c) = make_int2(acc[4 * j], acc[4 * j + 1]);
    *reinterpret_cast<int2*>(Cs + (r + 8) * (BN + kCsPad) + c) = make_int2(acc[4 * j + 2], acc[4 * j + 3]);
  }
}
#endif

template <typename C, int O>
__global__ void __launch_bounds__(C::kThreads, C::kMinBlocks)
    gemm_int8_wgmma_kernel(const int8_t* __restrict__ A, const int8_t* __restrict__ B, int M, int K, int N, Epi e) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int BK = C::BK, kChunks = BK / 16;
  extern __shared__ uint8_t smem_raw[];
  const uint32_t sbase = (smem_addr(smem_raw) + (C::kAlign - 1)) & ~uint32_t(C::kAlign - 1);
  const int tiles_m = (M + C::BM - 1) / C::BM, tiles_n = (N + C::BN - 1) / C::BN;
  int tm, tn;
  tile_of(blockIdx.x, tiles_m, tiles_n, 8, tm, tn);
  const int m0 = tm * C::BM, n0 = tn * C::BN;
  const int wg = threadIdx.x >> 7;
  // Split-K (gridDim.y > 1): this block sums K slices [kt0, kt0 + KT); the blocks of a tile add their parts in
  // distributed shared memory when they are one cluster, else atomically (into Y for kOutI32Add, into a workspace
  // for the fused epilogue).
  const int KT_all = (K + BK - 1) / BK;
  const int kt0 = int(long(KT_all) * blockIdx.y / gridDim.y);
  const int KT = int(long(KT_all) * (blockIdx.y + 1) / gridDim.y) - kt0;

  // Each thread copies the same 16-byte column chunk of the same rows in every slice, and the slices are loaded in
  // order: so its source addresses are worked out once and then only step on by BK bytes a slice (loop-carried, so
  // the compiler cannot recompute them inside the loop: with the addresses recomputed from the row index each
  // slice, the float32 kernel's loop carried 16 more instructions than the int32 one's).
  constexpr int kItA = C::BM * kChunks / C::kThreads, kItB = C::BN * kChunks / C::kThreads;
  constexpr int kRowStep = C::kThreads / kChunks;
  static_assert(C::kThreads % kChunks == 0, "a thread's chunk column is the same in every pass");
  const int c_ld = threadIdx.x % kChunks, r_ld = threadIdx.x / kChunks;
  const int8_t* srcA[kItA];
  const int8_t* srcB[kItB];
  bool inA[kItA], inB[kItB];
  int k_left = K - (kt0 * BK + 16 * c_ld);  // bytes of K from this thread's chunk of the next slice on
#pragma unroll
  for (int it = 0; it < kItA; ++it) {
    const int gr = m0 + r_ld + it * kRowStep;
    inA[it] = gr < M;
    srcA[it] = A + (inA[it] ? std::size_t(gr) * K : 0) + (kt0 * BK + 16 * c_ld);
  }
#pragma unroll
  for (int it = 0; it < kItB; ++it) {
    const int gr = n0 + r_ld + it * kRowStep;
    inB[it] = gr < N;
    srcB[it] = B + (inB[it] ? std::size_t(gr) * K : 0) + (kt0 * BK + 16 * c_ld);
  }
  auto load_next_slice = [&](int slot) {
    const bool kin = k_left > 0;  // K % 16 == 0: a chunk is all inside or all outside
    const uint32_t sA = sbase + slot * C::kStageBytes, sB = sA + C::kABytes;
#pragma unroll
    for (int it = 0; it < kItA; ++it) {
      const bool v = inA[it] && kin;
      cp_async16(sA + swz<BK>(r_ld + it * kRowStep, c_ld), v ? srcA[it] : A, v);
      srcA[it] += BK;
    }
#pragma unroll
    for (int it = 0; it < kItB; ++it) {
      const bool v = inB[it] && kin;
      cp_async16(sB + swz<BK>(r_ld + it * kRowStep, c_ld), v ? srcB[it] : B, v);
      srcB[it] += BK;
    }
    k_left -= BK;
  };

#pragma unroll
  for (int s = 0; s < C::kAhead; ++s) {
    if (s < KT) load_next_slice(s);
    cp_async_commit();
  }
  int acc[C::kAccRegs];
#pragma unroll
  for (int i = 0; i < C::kAccRegs; ++i) acc[i] = 0;
  for (int kt = 0; kt < KT; ++kt) {
    cp_async_wait<C::kAhead - 1>();  // slice kt has landed (this thread's chunks) ...
    fence_proxy_async();             // ... is visible to the tensor cores ...
    __syncthreads();                 // ... for everyone's chunks; MMAs of slice kt - 2 are done in both warpgroups
    if (kt + C::kAhead < KT) load_next_slice((kt + C::kAhead) % C::kStages);
    cp_async_commit();
    const uint32_t sA = sbase + (kt % C::kStages) * C::kStageBytes + wg * 64 * BK;
    const uint32_t sB = sbase + (kt % C::kStages) * C::kStageBytes + C::kABytes;
    mma_slice<BK>(acc, sA, sB);  // this slice's MMAs stay in flight while the next slice is awaited
  }
  // Split-K in one cluster (the launch made a tile's gridDim.y blocks a cluster): block r of the cluster stores row
  // band r of the tile (a band holds at most half the tile: S >= 2). Worked out here, while the last MMAs retire.
  const bool in_cluster = gridDim.y > 1 && cluster_blocks() == gridDim.y;
  const int S = int(gridDim.y), r = in_cluster ? int(cluster_rank()) : 0;
  const int rows = min(C::BM, M - m0), band = (rows + S - 1) / S, b0 = min(rows, r * band), b1 = min(rows, b0 + band);
  constexpr int kBandRows = C::BM / 2;
  Epi band_e = e;
  band_e.M = m0 + b1;  // the band's rows only
  mma_retire(acc);
  cp_async_wait<0>();
  __syncthreads();  // every warpgroup's MMAs are done with the ring: it becomes the output tile
  int32_t* Cs = reinterpret_cast<int32_t*>(smem_raw + (sbase - smem_addr(smem_raw)));
  acc_to_tile<C::BN>(acc, Cs, wg);
  if (in_cluster) {
    // Each block's part of the sums stays in its shared memory, block r adds every block's rows of band r
    // (distributed shared memory) and stores that band, in any output kind: no workspace, no atomics, no memset,
    // no last block.
    cluster_arrive_release();  // this block's part is in its shared memory ...
    // The band's scales, loaded while the other blocks are awaited (before the release arrival, its MEMBAR would
    // wait for them).
    DrainScales<O, C::BN, C::kThreads, kBandRows> band_scales;
    if (b1 > b0) band_scales = drain_scales<O, C::BN, C::kThreads, kBandRows>(band_e, m0 + b0, n0);
    cluster_wait();  // ... and so is every other block's
    constexpr int kVec = C::BN / 4, kMaxSplits = kSplitClusterMax;
    for (int i = threadIdx.x; i < (b1 - b0) * kVec; i += C::kThreads) {
      int32_t* p = Cs + (b0 + i / kVec) * (C::BN + kCsPad) + (i % kVec) * 4;
      int4 v[kMaxSplits];
#pragma unroll
      for (int q = 0; q < kMaxSplits; ++q)
        v[q] = q < S && q != r ? ld_cluster_v4(smem_addr(p), uint32_t(q)) : make_int4(0, 0, 0, 0);
      // Unsigned: int32 sums wrap as the atomic adds of the other split path do (associative either way).
      uint4 t = *reinterpret_cast<const uint4*>(p);
#pragma unroll
      for (int q = 0; q < kMaxSplits; ++q) {
        t.x += uint32_t(v[q].x);
        t.y += uint32_t(v[q].y);
        t.z += uint32_t(v[q].z);
        t.w += uint32_t(v[q].w);
      }
      *reinterpret_cast<uint4*>(p) = t;
    }
    __syncthreads();           // the band's sums are visible to every thread of this block, which drains them ...
    cluster_arrive_relaxed();  // ... and it reads no other block's shared memory any more (its loads have returned)
    if (b1 > b0)
      drain_tile<O, C::BN, C::kThreads, kBandRows>(band_e, Cs + b0 * (C::BN + kCsPad), m0 + b0, n0, &band_scales);
    cluster_wait();  // no block leaves while another may still read its shared memory
    return;
  }
  __syncthreads();
  if constexpr (O == kOutF32 || O == kOutF16) {
    if (gridDim.y > 1) {  // split-K: add this block's part, and the tile's last block dequantizes the sum
      Epi w = e;
      w.Y = e.ws;
      drain_tile<kOutI32Add, C::BN, C::kThreads, C::BM>(w, Cs, m0, n0);
      __threadfence();  // the adds are visible before the arrival is counted
      __syncthreads();
      __shared__ int last;
      if (threadIdx.x == 0) last = atomicAdd(e.counters + blockIdx.x, 1u) == gridDim.y - 1;
      __syncthreads();
      if (!last) return;
      __threadfence();
      // Read the tile's sums and leave the workspace zeroed again (and the counter at 0) for the next call on
      // this stream: the other blocks of this tile have all added, so nothing else touches these words now.
      // Four 16-byte loads in flight per thread (a loop of dependent L2 reads cost ~3 us at 16 x 4096 x 4096).
      const int rows = min(C::BM, e.M - m0);
      if ((e.N & 3) == 0) {
        constexpr int kVec = C::BN / 4, kU = 4;
        for (int base = threadIdx.x; base < rows * kVec; base += kU * C::kThreads) {
          int4 v[kU];
          bool ok[kU];
#pragma unroll
          for (int u = 0; u < kU; ++u) {
            const int i = base + u * C::kThreads, rr = i / kVec, gc = n0 + (i % kVec) * 4;
            ok[u] = i < rows * kVec && gc < e.N;
            v[u] = ok[u] ? __ldcg(reinterpret_cast<const int4*>(e.ws + std::size_t(m0 + rr) * e.N + gc)) : make_int4(0, 0, 0, 0);
          }
#pragma unroll
          for (int u = 0; u < kU; ++u) {
            const int i = base + u * C::kThreads, rr = i / kVec, c4 = (i % kVec) * 4;
            if (i >= rows * kVec) continue;
            if (ok[u] && (v[u].x | v[u].y | v[u].z | v[u].w))
              __stcg(reinterpret_cast<int4*>(e.ws + std::size_t(m0 + rr) * e.N + n0 + c4), make_int4(0, 0, 0, 0));
            *reinterpret_cast<int4*>(Cs + rr * (C::BN + kCsPad) + c4) = v[u];
          }
        }
      } else {
        for (int i = threadIdx.x; i < rows * C::BN; i += C::kThreads) {
          const int rr = i / C::BN, cc = i % C::BN, gc = n0 + cc;
          int32_t v = 0;
          if (gc < e.N) {
            int32_t* p = e.ws + std::size_t(m0 + rr) * e.N + gc;
            v = __ldcg(p);
            if (v) __stcg(p, 0);
          }
          Cs[rr * (C::BN + kCsPad) + cc] = v;
        }
      }
      if (threadIdx.x == 0) e.counters[blockIdx.x] = 0;
      __syncthreads();
    }
  }
  drain_tile<O, C::BN, C::kThreads, C::BM>(e, Cs, m0, n0);
#endif
}


// ---------------------------------------------------------------------------------------------------
// The same MMAs fed by the Tensor Memory Accelerator, warp-specialized: one producer warp issues a TMA
// load of each slice's A (128 x BK) and B (BN x BK) tiles into the ring (128-byte swizzle: the layout the
// descriptors above name) and counts the bytes on the slot's "full" mbarrier; the two consumer warpgroups
// wait on it, run the slice's wgmma and, once those MMAs are retired, arrive on the slot's "empty"
// mbarrier, which the producer waits on before refilling the slot. No thread of the consumers computes an
// address or waits at a block-wide barrier inside the K loop. Tiles past M, N or K are zero-filled by the
// TMA unit. Output as the kernel above (no split-K: the launcher keeps this kernel for unsplit products).
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)  // only the sm_90a kernel uses them
__device__ __forceinline__ void mbar_init(uint32_t bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, unsigned parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(bar), "r"(parity) : "memory");
}
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const CUtensorMap* map, int c0, int c1, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
      ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar) : "memory");
}
__device__ __forceinline__ void consumers_sync() { asm volatile("bar.sync 1, 256;\n" ::: "memory"); }
#endif

template <typename C, int O>
__global__ void __launch_bounds__(C::kThreads + 32, C::kMinBlocks)  // two consumer warpgroups and the producer warp
    gemm_int8_wgmma_tma_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB, int M,
                               int K, int N, Epi e, int tile0, int sub) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert(C::BK == 128, "the TMA kernel uses 128-byte rows");
  constexpr int BK = C::BK, S = C::kStages;
  extern __shared__ uint8_t smem_raw[];
  const uint32_t sbase = (smem_addr(smem_raw) + (C::kAlign - 1)) & ~uint32_t(C::kAlign - 1);
  const uint32_t full0 = sbase + S * C::kStageBytes, empty0 = full0 + 8 * S;  // mbarriers after the ring
  // Block b computes part b % sub (C::BN columns) of the tile tile0 + b / sub of C::BN * sub columns.
  const int tiles_m = (M + C::BM - 1) / C::BM, tiles_n = (N + C::BN * sub - 1) / (C::BN * sub);
  int tm, tn;
  tile_of(tile0 + int(blockIdx.x) / sub, tiles_m, tiles_n, 8, tm, tn);
  const int m0 = tm * C::BM, n0 = tn * C::BN * sub + (int(blockIdx.x) % sub) * C::BN;
  if (n0 >= N) return;  // a part past the last column of a partial tile: nothing to do
  const int KT = (K + BK - 1) / BK;
  if (threadIdx.x == 256) {
    for (int s = 0; s < S; ++s) {
      mbar_init(full0 + 8 * s, 1);
      mbar_init(empty0 + 8 * s, 256);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x >= 256) {  // the producer warp: one thread issues every load
    if (threadIdx.x == 256) {
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmA)) : "memory");
      asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmB)) : "memory");
      for (int kt = 0; kt < KT; ++kt) {
        const int s = kt % S;
        if (kt >= S) mbar_wait(empty0 + 8 * s, unsigned((kt / S - 1) & 1));
        const uint32_t full = full0 + 8 * s, sA = sbase + s * C::kStageBytes;
        mbar_expect_tx(full, C::kStageBytes);
        tma_load_2d(sA, &tmA, kt * BK, m0, full);
        tma_load_2d(sA + C::kABytes, &tmB, kt * BK, n0, full);
      }
    }
    return;
  }
  const int wg = threadIdx.x >> 7;
  int acc[C::kAccRegs];
#pragma unroll
  for (int i = 0; i < C::kAccRegs; ++i) acc[i] = 0;
  for (int kt = 0; kt < KT; ++kt) {
    const int s = kt % S;
    mbar_wait(full0 + 8 * s, unsigned((kt / S) & 1));
    const uint32_t sA = sbase + s * C::kStageBytes + wg * 64 * BK, sB = sbase + s * C::kStageBytes + C::kABytes;
    mma_slice<BK>(acc, sA, sB);
    if (kt > 0) mbar_arrive(empty0 + 8 * ((kt - 1) % S));  // the previous slice's MMAs are retired: refill its slot
  }
  mma_retire(acc);
  consumers_sync();  // both warpgroups are done with the ring: it becomes the output tile
  int32_t* Cs = reinterpret_cast<int32_t*>(smem_raw + (sbase - smem_addr(smem_raw)));
  acc_to_tile<C::BN>(acc, Cs, wg);
  consumers_sync();
  drain_tile<O, C::BN, 256, C::BM>(e, Cs, m0, n0);
#endif
}

// ---------------------------------------------------------------------------------------------------
// Ping-pong (the shape of kernel cuBLASLt runs for these products, as Nsight Compute shows it: 132 persistent
// blocks of 384 threads, 168 registers, 128 x 128 x 128 tiles, a producer warpgroup that gives its registers
// to two consumer warpgroups). One block per SM walks the tiles blockIdx.x, + gridDim.x, ...; warpgroup 0 is
// the producer (one thread issues the TMA loads of every tile's K slices, in tile order, into a ring of
// kPpStages slots); warpgroups 1 and 2 are consumers that take the block's tiles in turn (even ones, odd ones),
// each computing a whole 128 x 128 tile in 128 accumulator registers (two m64n128k32 MMAs per 32-byte K step).
// While one consumer multiplies, the other stores its finished tile (through its warps' staging buffers: by TMA
// store for int32 and float32 out, pp_store_tile_tma), so a tile's epilogue hides behind the next tile's MMAs
// instead of stalling the SM (the one-block-per-tile kernel above pays it on every tile: 10 % more cycles than
// cuBLASLt at 4096^3 with locked clocks, measured with ncu). Slot q of the block's continuous slice count is
// slot q % S in phase (q / S) & 1; each consumer knows where its tiles' q start and counts on from there.
// The ring has 6 slots (7 fit, as in cuBLASLt's kernel, but the seventh's 32 KiB hold the staging buffers of
// the epilogue: 4 KiB per consumer warp; see pp_store_tile_tma and pp_store_tile_staged). 7 slots with each
// consumer staging its tile in the slot of the tile's last K slice, released once its stores have read it,
// took 17-30 % more cycles (ncu, H200, session 21): the producer, which fills the slots in order, waits for
// that slot while the other consumer runs out of loaded slices. A last round that
// would keep at most half the clusters busy goes out in halves of 64 rows per block instead (PpTail).
constexpr int kPpStages = 6, kPpStageBytes = 2 * 128 * 128;  // A and B slices of 128 rows x 128 bytes
constexpr int kPpStagingBytes = 8 * 16 * 64 * 4;            // 8 consumer warps x 16 rows x 64 int32
constexpr int kPpSmem = kPpStages * kPpStageBytes + kPpStagingBytes + 1024 + 16 * kPpStages;  // + alignment, mbarriers

// Each cluster's place in the ping-pong kernel's tile order. The persistent cluster at place p takes units p,
// p + clusters, ... of an order that sweeps g unit rows together: place p starts in row p % g of its band,
// and its later units stay in the row of its GPC-mates (all of them step by the same number of clusters).
// When the clusters of one GPC work on one unit row they read the same A rows at about the same time, and L2
// serves those identical requests once: at 4096^3 on the H100 L2 reads 20.2 M sectors instead of 23.2 M, the
// tensor pipe is busy 85 % of the cycles instead of 80 %, and the kernel takes 161k cycles instead of 171k
// (cuBLASLt 157k; ncu, session 17). The launcher measures once per process where the hardware puts the grid's
// clusters and which SMs share a GPC (pp_probe_kernel) and numbers the clusters so that a GPC's clusters share
// a row. The places are always a permutation of the cluster indices, so a placement that differs from the
// probe's costs speed, never correctness. Unmeasured or smaller grids: the identity.
struct PpPlaces {
  static constexpr int kMax = 256;  // clusters with a place of their own; later ones keep their index
  uint8_t of[kMax];
};

// Records the SM of every block; the first thread of each block then waits `spin` cycles so that all of the
// grid's clusters are resident together (the launcher sizes the grid to what fits at once).
__global__ void __launch_bounds__(384, 1) pp_probe_kernel(int* sm_of_block, long long spin) {
  if (threadIdx.x == 0) {
    uint32_t id;
    asm volatile("mov.u32 %0, %%smid;\n" : "=r"(id));
    sm_of_block[blockIdx.x] = int(id);
    const long long t0 = clock64();
    while (clock64() - t0 < spin) {
    }
  }
  __syncthreads();
}

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
// The tile through shared memory, warp by warp: each consumer warp owns 16 rows of each 64-row half; it
// writes them 64 columns at a time into its own 4 KiB (16-byte chunk c of row r at chunk c ^ 2 (r % 8): the
// fragment's 8-byte writes and the row reads are both free of bank conflicts), then reads them back as rows,
// so that every store instruction writes two rows of 256 contiguous bytes (16-byte stores straight from the
// fragments, tried first, write 32 bytes in each of 16 rows: 4x the L2 requests, and were not hidden behind
// the other consumer's MMAs; notes/issue18-gemm-tma.md, session 14). Where rows are not 16-byte aligned
// (N % 4 != 0) the same rows leave element by element.
// The read-back loop stays rolled and the row scales come by shuffle (lane l holds row l's): fully unrolled,
// with every scale in registers and a separate element-by-element path, the float32 kernel was 8,352 SASS
// instructions (int32 2,248; now 2,216 and 1,704), and the MMAs of one consumer stalled more while the other
// ran its epilogue: 4096^3 took 6-8 % longer back to back with float32 out than with int32, now 4-5 % (H100,
// same call; per call 4 % and 3 %; notes/issue18-gemm-tma.md, session 15).
template <int O>
__device__ __forceinline__ void pp_store_tile_staged(const Epi& e, const int (&a0)[64], const int (&a1)[64], int m0,
                                                     int n0, int32_t* stg, int half) {
  constexpr bool kDequant = O == kOutF32 || O == kOutF16;
  const int lane = threadIdx.x & 31, w = (threadIdx.x >> 5) & 3, g = lane >> 2, t = lane & 3;
  const int rr = lane >> 4, cc = lane & 15;  // read-back: row parity and 16-byte chunk of this lane
  const bool vec = (e.N & 3) == 0;
  // Loaded up front at clamped indices, so no load waits behind a store: the scale of row m0 + 64 (l / 16) +
  // 16 w + l % 16 in lane l, and this lane's four columns' scales and biases in each 64-column half.
  float sa_lane = 0.0f, sb[2][4], bb[2][4];
  if constexpr (kDequant) {
    sa_lane = __ldg(e.sa + std::size_t(min(m0 + 64 * (lane >> 4) + 16 * w + (lane & 15), e.M - 1)) * e.sa_step);
#pragma unroll
    for (int cb = 0; cb < 2; ++cb)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int col = min(n0 + 64 * cb + 4 * cc + i, e.N - 1);
        sb[cb][i] = __ldg(e.sb + std::size_t(col) * e.sb_step);
        bb[cb][i] = e.bias ? __ldg(e.bias + col) : 0.0f;
      }
  }
#pragma unroll
  for (int cb = 0; cb < 2; ++cb) {
    const int gc = n0 + 64 * cb + 4 * cc;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (half >= 0 && h != half) continue;  // a half item: the other 64 rows are not this block's
      const int* a = h ? a1 : a0;
      __syncwarp();  // the previous pass's reads are done
#pragma unroll
      for (int jj = 0; jj < 8; ++jj) {
        const int j = 8 * cb + jj, chunk = (2 * jj + (t >> 1)) ^ (2 * (g & 7)), word = chunk * 4 + 2 * (t & 1);
        *reinterpret_cast<int2*>(stg + g * 64 + word) = make_int2(a[4 * j], a[4 * j + 1]);
        *reinterpret_cast<int2*>(stg + (g + 8) * 64 + word) = make_int2(a[4 * j + 2], a[4 * j + 3]);
      }
      __syncwarp();
#pragma unroll 1
      for (int it = 0; it < 8; ++it) {
        const int r = 2 * it + rr, gr = m0 + 64 * h + 16 * w + r;
        const int4 v = *reinterpret_cast<const int4*>(stg + r * 64 + ((cc ^ (2 * (r & 7))) * 4));
        float sa = 0.0f;
        if constexpr (kDequant) sa = __shfl_sync(0xffffffffu, sa_lane, 16 * h + r);
        if (gr >= e.M || gc >= e.N) continue;
        const int32_t x[4] = {v.x, v.y, v.z, v.w};
        if (!vec) {  // rows not 16-byte aligned: element by element (store_one checks the columns)
#pragma unroll
          for (int i = 0; i < 4; ++i) store_one<O>(e, gr, gc + i, x[i]);
          continue;
        }
        float y[4] = {};
        if constexpr (kDequant) {
#pragma unroll
          for (int i = 0; i < 4; ++i) y[i] = dequant_one(x[i], sa, sb[cb][i], bb[cb][i]);
        }
        store_four<O>(e, std::size_t(gr) * e.N + gc, v, y);
      }
    }
  }
}
#endif

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
// Clusters of two blocks: a TMA load written into both blocks' shared memory (same offset), each block's
// mbarrier counting its bytes.
__device__ __forceinline__ void tma_load_2d_mc(uint32_t dst, const CUtensorMap* map, int c0, int c1, uint32_t bar,
                                               uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;\n"
      ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar), "h"(mask) : "memory");
}
// An arrival on the barrier at offset `bar` of cluster block `target` (this block's own included), if `on`:
// one asm, predicated inside, because a lane-dependent branch between a wgmma and its wait makes ptxas
// serialize the MMA pipeline (C7515).
__device__ __forceinline__ void mbar_arrive_cluster_if(uint32_t bar, uint32_t target, int on) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      ".reg .b32 ra;\n"
      "setp.ne.b32 p, %2, 0;\n"
      "mapa.shared::cluster.u32 ra, %0, %1;\n"
      "@p mbarrier.arrive.shared::cluster.b64 _, [ra];\n"
      "}\n" ::"r"(bar), "r"(target), "r"(on) : "memory");
}
#endif

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
// TMA stores: a box of 16 rows x 32 four-byte values from a 128-byte-swizzled staging buffer of this block to
// global memory, clipped at the tensor's edges by the TMA unit; bulk groups per thread.
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, uint32_t src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n"
               ::"l"(reinterpret_cast<uint64_t>(map)), "r"(src), "r"(c0), "r"(c1) : "memory");
}
__device__ __forceinline__ void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void tma_store_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void st_shared_v2(uint32_t addr, int a, int b) {
  asm volatile("st.shared.v2.b32 [%0], {%1, %2};\n" ::"r"(addr), "r"(a), "r"(b) : "memory");
}

// A consumer warp's 16 rows of a finished 128 x 128 tile (int32 or float32 out) by TMA store: 8 passes (four
// 32-column boxes x two 64-row halves), each writing its fragments straight into one of two 2 KiB buffers in the
// 128-byte swizzle the tensor map expects (16-byte chunk c of row r at c ^ (r % 8): two wavefronts per 256-byte
// warp store, no read-back), then one lane issues the store. A buffer is rewritten only after its previous store
// has read it (wait_group.read 1). Float32: dequantized in registers first. Its instructions seem to be its cost:
// they run beside the other consumer's MMAs (ncu, H200, session 23: the variants without the shuffles and with the
// conversion alone took cycles roughly in proportion to the instructions they dropped, 0.5-0.6 SM cycles each;
// without the conversion no change within the noise; where the loads wait cost nothing). So the epilogue keeps to few
// instructions: the four row scales are loaded once per tile, each box's column scales and biases once for both
// halves, and where the tile's 128 columns are all inside the product with per-column scales and 8-byte aligned
// scale and bias arrays (the usual case), each lane loads its own two columns' values as pairs (8 loads per box)
// instead of one column per lane exchanged by 16 shuffles per pass (session 15-22's way, kept for edge tiles,
// per-tensor scales and unaligned arrays). Measured (ncu, H200, session 24, two runs each, same call): the float32
// kernel's instructions fell 7.7 % at 4096^3 (15.01 M -> 13.86 M) and 7.5 % at 2048 x 4096 x 11008, its cycles
// only 0.5 % and 0.1 % (4096^3: 145.1 k -> 144.4 k, int32 out 140.9 k), so the 0.5-0.6 cycles per instruction
// above did not hold for these; float32 out stays 2.5 % over int32 at 4096^3 and 2.1 % at 2048 x 4096 x 11008.
template <int O>
__device__ __forceinline__ void pp_store_tile_tma(const Epi& e, const int (&a0)[64], const int (&a1)[64], int m0,
                                                  int n0, uint32_t stg, const CUtensorMap* tmY, int half) {
  const int lane = threadIdx.x & 31, w = (threadIdx.x >> 5) & 3, g = lane >> 2, t = lane & 3;
  float sa[2][2] = {};  // float32: the row scales of rows g and g + 8 of each half
  const int has_bias = e.bias != nullptr;
  const float* bias_p = has_bias ? e.bias : e.sb;
  const int bias_mask = -has_bias;  // all ones with a bias, else +0.0f's bits
  bool pairs = false;               // float32: each lane loads its columns' scales and biases as pairs
  if constexpr (O == kOutF32) {
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int i = 0; i < 2; ++i)
        sa[h][i] = __ldg(e.sa + std::size_t(min(m0 + 64 * h + 16 * w + g + 8 * i, e.M - 1)) * e.sa_step);
    pairs = n0 + 128 <= e.N && e.sb_step == 1 &&
            ((reinterpret_cast<uintptr_t>(e.sb) | reinterpret_cast<uintptr_t>(bias_p)) & 7u) == 0;  // bias_p: sb if none
  }
  if (lane == 0) tma_store_wait_read<0>();  // the previous tile's stores have read both buffers
  __syncwarp();
#pragma unroll
  for (int b = 0; b < 4; ++b) {
    // Float32: the scales and biases of this lane's columns 8 jj + 2 t and + 1 of the box (jj = 0..3).
    float cs[4][2] = {}, cb[4][2] = {};
    if constexpr (O == kOutF32) {
      if (pairs) {
        // Without a bias the pairs come from kPpZeros: +0.0f, with no instruction per value to mask them.
        const float2* ps = reinterpret_cast<const float2*>(e.sb + n0 + 32 * b + 2 * t);
        const float2* pb = reinterpret_cast<const float2*>(has_bias ? e.bias + n0 + 32 * b + 2 * t : kPpZeros + 2 * t);
#pragma unroll
        for (int jj = 0; jj < 4; ++jj) {
          const float2 vs = __ldg(ps + 4 * jj), vb = __ldg(pb + 4 * jj);
          cs[jj][0] = vs.x, cs[jj][1] = vs.y;
          cb[jj][0] = vb.x, cb[jj][1] = vb.y;
        }
      } else {
        // One column per lane (clamped indices as in pp_store_tile_staged), exchanged by shuffle. Without a
        // bias: a load of sb[0] (always there) masked to +0.0f, no branch.
        const int c = min(n0 + 32 * b + lane, e.N - 1);
        const float sb_l = __ldg(e.sb + std::size_t(c) * e.sb_step);
        const float b_l =
            __int_as_float(__float_as_int(__ldg(bias_p + std::size_t(c) * std::size_t(has_bias))) & bias_mask);
#pragma unroll
        for (int jj = 0; jj < 4; ++jj)
#pragma unroll
          for (int k = 0; k < 2; ++k) {
            cs[jj][k] = __shfl_sync(0xffffffffu, sb_l, 8 * jj + 2 * t + k);
            cb[jj][k] = __shfl_sync(0xffffffffu, b_l, 8 * jj + 2 * t + k);
          }
      }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (half >= 0 && h != half) continue;  // a half item: the other 64 rows are not this block's
      const int* a = h ? a1 : a0;
      // The pass's place among the passes this item runs (a half item runs one per box), which picks its buffer.
      const int q = half >= 0 ? b : 2 * b + h;
      const uint32_t buf = stg + uint32_t(q & 1) * 2048u;
      if (q >= 2) {
        if (lane == 0) tma_store_wait_read<1>();  // the store of the pass before last has read this buffer
        __syncwarp();
      }
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) {
        const int j = 4 * b + jj;  // 8-column group of the tile: columns 8 j + 2 t, + 1
        int v0 = a[4 * j], v1 = a[4 * j + 1], v2 = a[4 * j + 2], v3 = a[4 * j + 3];
        if constexpr (O == kOutF32) {
          v0 = __float_as_int(dequant_one(v0, sa[h][0], cs[jj][0], cb[jj][0]));
          v1 = __float_as_int(dequant_one(v1, sa[h][0], cs[jj][1], cb[jj][1]));
          v2 = __float_as_int(dequant_one(v2, sa[h][1], cs[jj][0], cb[jj][0]));
          v3 = __float_as_int(dequant_one(v3, sa[h][1], cs[jj][1], cb[jj][1]));
        }
        const uint32_t chunk = uint32_t((2 * jj + (t >> 1)) ^ g), within = uint32_t(t & 1) * 8u;
        st_shared_v2(buf + uint32_t(g) * 128u + chunk * 16u + within, v0, v1);      // row g
        st_shared_v2(buf + uint32_t(g + 8) * 128u + chunk * 16u + within, v2, v3);  // row g + 8: (g + 8) % 8 == g
      }
      fence_proxy_async_shared();  // the generic-proxy writes are visible to the TMA unit
      __syncwarp();
      if (lane == 0) {
        tma_store_2d(tmY, buf, n0 + 32 * b, m0 + 64 * h + 16 * w);
        tma_store_commit();
      }
    }
  }
}
#endif

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
// One place's items in the ping-pong kernel: units first, first + step, ... below `whole`, then, where the last
// round is split into halves, half (first % 2) of unit whole + first / 2 (places 0 .. 2 r - 1 of the r units
// left over). Every item has all K slices, so slice counts stay item x KT.
struct PpTail {
  int first, step, whole, n_whole, items;
  __device__ PpTail(int units, int places, int unit0, int halves) : first(unit0), step(places) {
    const int r = units % places;  // the launcher sets `halves` only where units > places and 0 < 2 r <= places
    whole = halves ? units - r : units;
    n_whole = unit0 < whole ? (whole - 1 - unit0) / places + 1 : 0;
    items = n_whole + (halves && unit0 < 2 * r ? 1 : 0);
  }
  __device__ int unit(int i) const { return i < n_whole ? first + i * step : whole + first / 2; }
  __device__ int half(int i) const { return i < n_whole ? -1 : first & 1; }
};

// One 128-byte K slice of a consumer's tile: rows 0-63 into a0 and rows 64-127 into a1 (kHalf -1), or one of
// them (kHalf 0 / 1: a half item, PpTail). `first`: the item's first slice, whose MMAs overwrite the sums.
template <int kHalf>
__device__ __forceinline__ void pp_mma_slice(int (&a0)[64], int (&a1)[64], uint64_t dA, uint64_t dB, bool first) {
  constexpr int BK = 128;
#pragma unroll
  for (int k = 0; k < BK / 32; ++k) {
    const int keep = !first || k > 0;
    if constexpr (kHalf <= 0) wgmma_m64k32(a0, dA + 2 * k, dB + 2 * k, keep);
    if constexpr (kHalf != 0) wgmma_m64k32(a1, dA + (64 * BK >> 4) + 2 * k, dB + 2 * k, keep);
  }
}
#endif

// Clusters of CM x CN blocks on adjacent tiles share operand slices through multicast loads. The default, two
// blocks on vertically adjacent tiles (tile rows 2 u and 2 u + 1 of one tile column, CM = 2, CN = 1), share
// B: each block loads its own A (128 rows) and one half of B (64 rows) into both blocks' rings, so L2 serves
// 3/4 of the bytes per MMA that lone blocks need (lone blocks: 0.73-0.79x cuBLASLt, pairs 0.86-0.96x, H100,
// same calls). The main loop is still bound by L2's output at 4096^3 (ncu, session 15: L2-to-SM traffic at
// 77-80 % of its peak, the consumers waiting on "full" 3x as long as on their MMAs). 2 x 2 clusters read a
// quarter fewer L2 bytes per MMA (measured) and raise the tensor pipe's share of active cycles from 80 % to
// 87 %, but only 30 clusters of four fit on the H100 (120 SMs), which costs more than it gains
// (QS_WGMMA_CLUSTER=2x2 for comparison).
template <int O, int CM, int CN, bool TS>
__global__ void __launch_bounds__(384, 1)
    gemm_int8_pingpong_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB, int M,
                              int K, int N, Epi e, int group, const __grid_constant__ PpPlaces places,
                              const __grid_constant__ CUtensorMap tmY, int halves,
                              const __grid_constant__ CUtensorMap tmA64) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int BK = 128, S = kPpStages, CL = CM * CN;
  // Block `rank` of the cluster takes tile (CM u + rm, CN v + rn) of unit (u, v). The CN blocks of one tile
  // row share A: each loads 128 / CN of its rows into all of theirs; the CM blocks of one tile column share
  // B likewise. So a slot of this block is written by the blocks of its row and of its column, and each of
  // them waits for this block's consumers before refilling it: CM + CN - 1 arrivals per consumer warp.
  constexpr int kSenders = CM + CN - 1, kArows = 128 / CN, kBrows = 128 / CM;
  extern __shared__ uint8_t smem_raw[];
  const uint32_t sbase = (smem_addr(smem_raw) + 1023u) & ~1023u;
  const uint32_t staging = sbase + S * kPpStageBytes;  // 4 KiB per consumer warp
  const uint32_t full0 = staging + kPpStagingBytes, empty0 = full0 + 8 * S;
  const int tiles_m = (M + 127) / 128, tiles_n = (N + 127) / 128;
  const int units_m = (tiles_m + CM - 1) / CM, units_n = (tiles_n + CN - 1) / CN;  // a unit: the cluster's tiles
  const int units = units_m * units_n;
  const int cluster = int(blockIdx.x) / CL;  // its first unit: its place in the order (see PpPlaces)
  const int unit0 = cluster < PpPlaces::kMax ? places.of[cluster] : cluster, units_step = int(gridDim.x) / CL;
  // The block's rank and each thread's warp through a shuffle from lane 0: the compiler then knows them
  // warp-uniform, so the consumers' slot, phase and descriptor arithmetic runs once per warp in the uniform
  // datapath instead of in all 32 lanes (CUTLASS's canonical_warp_idx_sync does the same). 2048 x 4096 x 11008,
  // ncu, H100: 15.3 M warp instructions instead of 25.8 M (cuBLASLt's kernel: 21.0 M), ALU pipe 4.6 % of peak
  // instead of 24.2 %, uniform pipe 12.3 % instead of 1.1 %.
  const uint32_t rank = __shfl_sync(0xffffffffu, cluster_rank(), 0);
  const int warp = __shfl_sync(0xffffffffu, int(threadIdx.x >> 5), 0);
  const int rm = int(rank) % CM, rn = int(rank) / CM;
  uint16_t mask_a = 0, mask_b = uint16_t(((1u << CM) - 1u) << (CM * rn));  // the blocks of this row / column
  for (int j = 0; j < CN; ++j) mask_a |= uint16_t(1u << (rm + CM * j));
  // This block's tile of a unit, in the order `group` asks (> 0: unit rows swept together, < 0: columns); past
  // the last tile row or column (tiles_m % CM, tiles_n % CN): zero-filled operands, nothing stored.
  auto unit_tile = [&](int unit, int& tm, int& tn) {
    int um, un;
    if (group > 0) tile_of(unit, units_m, units_n, group, um, un);
    else tile_of(unit, units_n, units_m, -group, un, um);
    tm = um * CM + rm;
    tn = un * CN + rn;
  };
  const int KT = (K + BK - 1) / BK;
  // The place's items: units unit0, unit0 + C, ... (C = units_step places). Where the units leave a last round
  // of r <= C / 2 (2048 x 4096 x 11008 on 66 clusters: 688 = 10 x 66 + 28), its r units go out as 2 r halves of
  // 64 rows per block, one to each of places 0 .. 2 r - 1 (`halves`; PpTail), so that round takes half a unit.
  const PpTail tail(units, units_step, unit0, halves);
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) {
      mbar_init(full0 + 8 * s, 1);
      mbar_init(empty0 + 8 * s, 4 * kSenders);  // each consumer warp of every block that writes the slot
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  cluster_sync_all();  // both blocks' barriers exist before the peer's loads or arrivals
  const int wg = warp >> 2;
  if (wg == 0) {  // the producer: its registers go to the consumers
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
    // Warp 0 walks the slices in step and lane 0 issues the loads, so no lane of the issuing warp waits at the
    // closing cluster barrier while lane 0 still works (lane 0 alone in the loop measured the same: 197k
    // cycles at 4096^3 either way).
    if (warp == 0) {
      const bool leader = threadIdx.x == 0;
      if (leader) {
        asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmA)) : "memory");
        asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmB)) : "memory");
      }
      uint32_t s = 0, phase = 0;  // slot and phase of the block's slice count q
      bool first_round = true;    // q < S: the slot has never been filled
      for (int i = 0; i < tail.items; ++i) {
        int tm, tn;
        unit_tile(tail.unit(i), tm, tn);
        // A half item reads only its 64 rows of A (tmA64: boxes of 64 rows), into the slot's rows that its MMAs
        // read; lone columns of blocks only (CN == 1: with CN > 1 the row's blocks share A's loads).
        const int half = CN == 1 ? tail.half(i) : -1;
        for (int kt = 0; kt < KT; ++kt) {
          if (!first_round) mbar_wait(empty0 + 8 * s, phase ^ 1u);
          const uint32_t full = full0 + 8 * s, sA = sbase + s * kPpStageBytes, sB = sA + kPpStageBytes / 2;
          if (leader) {
            mbar_expect_tx(full, half < 0 ? kPpStageBytes : kPpStageBytes - 64 * BK);
            if (half >= 0) tma_load_2d(sA + uint32_t(half) * 64u * BK, &tmA64, kt * BK, tm * 128 + half * 64, full);
            else if constexpr (CN == 1) tma_load_2d(sA, &tmA, kt * BK, tm * 128, full);
            else tma_load_2d_mc(sA + rn * kArows * BK, &tmA, kt * BK, tm * 128 + rn * kArows, full, mask_a);
            tma_load_2d_mc(sB + rm * kBrows * BK, &tmB, kt * BK, tn * 128 + rm * kBrows, full, mask_b);
          }
          __syncwarp();
          if (++s == S) {
            s = 0;
            phase ^= 1u;
            first_round = false;
          }
        }
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
    const int c = wg - 1, lane = threadIdx.x & 31;
    // Lane 0 arrives for this block, lanes 1 .. CN - 1 for the others of its row, the next CM - 1 lanes for
    // the others of its column.
    const int arrive = lane < kSenders;
    const uint32_t target = lane == 0 ? rank
                            : lane < CN ? uint32_t(rm + CM * ((rn + lane) % CN))
                                        : uint32_t((rm + lane - CN + 1) % CM + CM * rn);
    auto release = [&](uint32_t slot) {  // this consumer's MMAs are done with the slot, in every sender
      mbar_arrive_cluster_if(empty0 + 8 * slot, target, arrive);
    };
    const uint64_t d0 = smem_desc<BK>(sbase);  // A of slot 0
    int a0[64], a1[64];
    for (int i = c; i < tail.items; i += 2) {
      int tm, tn;
      unit_tile(tail.unit(i), tm, tn);
      const int half = tail.half(i);  // -1: the whole tile, 0 / 1: its rows 0-63 / 64-127 only
      // The two consumers' main loops take turns (named barriers 2: consumer 0 -> 1, 3: 1 -> 0): a consumer
      // waits on slot q % S only after every slice before q - S has been awaited, so the slot's phase parity
      // cannot be two phases ahead of its barrier. The other's epilogue runs meanwhile.
      if (i > 0) asm volatile("bar.sync %0, 256;\n" ::"r"(c ? 2 : 3) : "memory");
      const uint32_t q0 = uint32_t(i) * uint32_t(KT);
      uint32_t s = q0 % S, phase = (q0 / S) & 1, prev = 0;  // slot and phase of slice q, then incremented
      // The main loop in one copy per kind of item: a branch between an MMA and its wait makes ptxas serialize
      // the MMAs (C7520, 2x the cycles).
      auto main_loop = [&](auto kh) {
        for (int kt = 0; kt < KT; ++kt) {
          mbar_wait(full0 + 8 * s, phase);
          // The slot's descriptors: slot 0's plus the offset in 16-byte units (shared addresses stay below 2^18,
          // so the 14-bit address field never carries); + 2 per 32-byte K step, + 512 for A's rows 64-127.
          const uint64_t dA = d0 + (s * kPpStageBytes >> 4), dB = dA + (kPpStageBytes / 2 >> 4);
#pragma unroll
          for (int r = 0; r < 64; ++r) {
            fence_operand(a0[r]);
            fence_operand(a1[r]);
          }
          wgmma_fence();
          pp_mma_slice<decltype(kh)::value>(a0, a1, dA, dB, kt == 0);
          wgmma_commit();
          wgmma_wait<1>();
#pragma unroll
          for (int r = 0; r < 64; ++r) {
            fence_operand(a0[r]);
            fence_operand(a1[r]);
          }
          if (kt > 0) release(prev);
          prev = s;
          if (++s == S) {
            s = 0;
            phase ^= 1u;
          }
        }
        if (i + 1 < tail.items) asm volatile("bar.arrive %0, 256;\n" ::"r"(c ? 3 : 2) : "memory");
        wgmma_wait<0>();  // every MMA of the tile retired: the sums are final
#pragma unroll
        for (int r = 0; r < 64; ++r) {
          fence_operand(a0[r]);
          fence_operand(a1[r]);
        }
        release(prev);  // the tile's last slice
      };
      if (half < 0) main_loop(std::integral_constant<int, -1>{});
      else if (half == 0) main_loop(std::integral_constant<int, 0>{});
      else main_loop(std::integral_constant<int, 1>{});
      if constexpr (TS) {
        static_assert(O == kOutI32 || O == kOutF32, "TMA store: four-byte outputs");
        pp_store_tile_tma<O>(e, a0, a1, tm * 128, tn * 128, staging + uint32_t(warp - 4) * 4096u, &tmY,
                             half);
      } else {
        int32_t* stg =
            reinterpret_cast<int32_t*>(smem_raw + (staging - smem_addr(smem_raw))) + (warp - 4) * 1024;
        pp_store_tile_staged<O>(e, a0, a1, tm * 128, tn * 128, stg, half);
      }
    }
    if constexpr (TS) {
      if ((threadIdx.x & 31) == 0) tma_store_wait_all();  // no store still reads shared memory
    }
  }
  cluster_sync_all();  // no block leaves while its peer may still load into it or arrive
#endif
}

__global__ void sm90a_probe_kernel(int* out) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  *out = 1;
#else
  *out = 0;
#endif
}

// The cp.async kernel's launch: `splits` blocks per tile (gridDim.y), one cluster each when `cluster` is set.
template <typename C, int O>
cudaLaunchConfig_t wgmma_tile_config(cudaLaunchAttribute& attr, long tiles, int splits, bool cluster, cudaStream_t s) {
  static std::once_flag once;
  std::call_once(once, [] {
    check(cudaFuncSetAttribute(gemm_int8_wgmma_kernel<C, O>, cudaFuncAttributeMaxDynamicSharedMemorySize, C::kSmem),
          "wgmma kernel attribute");
  });
  attr = {};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = 1;
  attr.val.clusterDim.y = unsigned(splits);
  attr.val.clusterDim.z = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(unsigned(tiles), unsigned(splits));
  cfg.blockDim = dim3(C::kThreads);
  cfg.dynamicSmemBytes = std::size_t(C::kSmem);
  cfg.stream = s;
  cfg.attrs = cluster ? &attr : nullptr;
  cfg.numAttrs = cluster ? 1 : 0;
  return cfg;
}

template <typename C, int O>
void gemm_int8_wgmma_launch_tile(const int8_t* A, const int8_t* B, int M, int K, int N, const Epi& e, int splits,
                                 cudaStream_t s, bool cluster = false) {
  cudaLaunchAttribute attr;
  const long tiles = long((M + C::BM - 1) / C::BM) * ((N + C::BN - 1) / C::BN);
  const cudaLaunchConfig_t cfg = wgmma_tile_config<C, O>(attr, tiles, splits, cluster, s);
  check(cudaLaunchKernelEx(&cfg, gemm_int8_wgmma_kernel<C, O>, A, B, M, K, N, e), "wgmma kernel launch");
}

// How many clusters of `splits` blocks of the cp.async kernel the GPU runs at once (0: none), asked once per size.
template <typename C, int O>
int wgmma_split_clusters(int splits) {
  static std::atomic<int> known[kSplitClusterMax + 1];  // 1 + the answer; 0: not asked yet
  if (splits < 2 || splits > kSplitClusterMax) return 0;
  int n = known[splits].load(std::memory_order_relaxed);
  if (n == 0) {
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t cfg = wgmma_tile_config<C, O>(attr, 1, splits, true, nullptr);
    int got = 0;
    if (cudaOccupancyMaxActiveClusters(&got, gemm_int8_wgmma_kernel<C, O>, &cfg) != cudaSuccess) {
      cudaGetLastError();
      got = 0;
    }
    n = 1 + std::max(0, got);
    known[splits].store(n, std::memory_order_relaxed);
  }
  return n - 1;
}

// A tuning or comparison switch that is on unless the environment sets it to 0 (QS_PP_PLACE, QS_PP_TMA_STORE,
// QS_PP_HALVES, QS_WGMMA_PP).
bool env_off(const char* name) {
  const char* v = std::getenv(name);
  return v && std::atoi(v) == 0;
}

// The driver's tensor-map encoder, looked up once; null when the driver lacks it.
using EncodeTiledFn = decltype(&cuTensorMapEncodeTiled);
EncodeTiledFn tensor_map_encoder() {
  static const EncodeTiledFn fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      p = nullptr;
    }
    return reinterpret_cast<EncodeTiledFn>(p);
  }();
  return fn;
}

// An int8 operand of `rows` rows of K bytes in boxes of box_rows x 128 bytes (128-byte swizzle, zero fill past
// the edges). False when the driver lacks the encoder or refuses the map.
bool encode_operand(CUtensorMap* map, const int8_t* p, int rows, int K, int box_rows) {
  const EncodeTiledFn encode = tensor_map_encoder();
  if (!encode) return false;
  const cuuint64_t dim[2] = {cuuint64_t(K), cuuint64_t(rows)}, stride[1] = {cuuint64_t(K)};
  const cuuint32_t box[2] = {128, cuuint32_t(box_rows)}, one[2] = {1, 1};
  return encode(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<int8_t*>(p), dim, stride, box, one,
                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// The tensor map of the ping-pong kernel's TMA stores: Y (M x N, int32 or float32) in boxes of 16 rows x 32
// values, 128-byte swizzled. False where TMA cannot store it (rows not whole 16-byte chunks, Y not 16-byte
// aligned, no encoder): then the staged stores run.
bool encode_output(CUtensorMap* map, void* Y, int M, int N, bool int32) {
  const EncodeTiledFn encode = tensor_map_encoder();
  if (!encode || N % 4 != 0 || reinterpret_cast<std::uintptr_t>(Y) % 16 != 0) return false;
  const cuuint64_t dim[2] = {cuuint64_t(N), cuuint64_t(M)}, stride[1] = {cuuint64_t(N) * 4};
  const cuuint32_t box[2] = {32, 16}, one[2] = {1, 1};
  return encode(map, int32 ? CU_TENSOR_MAP_DATA_TYPE_INT32 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, Y, dim, stride, box,
                one, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// The TMA kernel's launcher: tensor maps of A (M x K) and B (N x K), int8 rows of K bytes, boxes of
// 128 x BK and BN x BK, 128-byte swizzle, zero fill past the edges. False when the driver lacks the
// encoder (then the cp.async kernel runs).
template <typename C, int O>
bool gemm_int8_wgmma_tma_launch(const int8_t* A, const int8_t* B, int M, int K, int N, const Epi& e, cudaStream_t s,
                                int tile0 = 0, int blocks = -1, int sub = 1) {
  static_assert(C::BK == 128, "the tensor maps' boxes are 128 bytes wide");
  CUtensorMap ta, tb;
  if (!encode_operand(&ta, A, M, K, C::BM) || !encode_operand(&tb, B, N, K, C::BN)) return false;
  auto* kernel = gemm_int8_wgmma_tma_kernel<C, O>;
  constexpr int kSmem = C::kSmem + 16 * C::kStages;  // the ring, its alignment slack, the mbarriers
  static std::once_flag once;
  std::call_once(once, [&] {
    check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem), "wgmma TMA kernel attribute");
  });
  const long tiles = blocks >= 0 ? blocks : long((M + C::BM - 1) / C::BM) * ((N + C::BN - 1) / C::BN);
  if (tiles > 0) kernel<<<unsigned(tiles), C::kThreads + 32, kSmem, s>>>(ta, tb, M, K, N, e, tile0, sub);
  return true;
}

// The ping-pong launch shape, shared by the GEMM and its place probe so that the probe sees the GEMM's
// placement: clusters of `cl` blocks in x, blocks of 384 threads, `smem` bytes of dynamic shared memory each.
// `attr` holds the cluster attribute that the returned configuration points to; the caller sets gridDim.
cudaLaunchConfig_t pp_launch_config(cudaLaunchAttribute& attr, int cl, int smem, cudaStream_t s) {
  attr = {};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = unsigned(cl);
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cudaLaunchConfig_t cfg{};
  cfg.blockDim = dim3(384);
  cfg.dynamicSmemBytes = std::size_t(smem);
  cfg.stream = s;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  return cfg;
}

// The GPC of each of the `clusters` clusters of `cl` blocks of the ping-pong grid that fills the GPU (`smem`
// bytes per block), as an id of the GPC's first SM; empty where a probe launch fails (then the identity is
// used). Three probe launches, each as many clusters as fit at once: clusters of `cl` give the SM of each
// cluster of the real grid (the same launch shape: blocks of 384 threads, one per SM), clusters of 16 and 8
// (whole clusters always lie in one GPC) tie SMs into GPCs.
std::vector<int> probe_pp_gpcs(int cl, int smem, int clusters) {
  if (clusters <= 0 || clusters > PpPlaces::kMax) return {};
  const int max_blocks = std::max(sm_count(), clusters * cl);
  int* d = nullptr;
  if (cudaMalloc(&d, sizeof(int) * std::size_t(max_blocks)) != cudaSuccess) return {};
  std::vector<int> parent(4096);
  std::iota(parent.begin(), parent.end(), 0);
  auto find = [&](int x) {
    while (parent[std::size_t(x)] != x) x = parent[std::size_t(x)] = parent[std::size_t(parent[std::size_t(x)])];
    return x;
  };
  std::vector<int> sm_of_cluster;
  bool ok = cudaFuncSetAttribute(pp_probe_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) == cudaSuccess &&
            cudaFuncSetAttribute(pp_probe_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) == cudaSuccess;
  for (int size : {cl, 16, 8}) {
    if (!ok) break;
    cudaLaunchAttribute attr;
    cudaLaunchConfig_t cfg = pp_launch_config(attr, size, smem, nullptr);
    cfg.gridDim = dim3(unsigned(size * std::max(1, sm_count() / size)));
    int n = size == cl ? clusters : 0;
    if (size != cl && (cudaOccupancyMaxActiveClusters(&n, pp_probe_kernel, &cfg) != cudaSuccess || n <= 0)) {
      cudaGetLastError();  // this GPU takes no clusters of that size: the others still tie SMs together
      continue;
    }
    if (n * size > max_blocks) continue;
    cfg.gridDim = dim3(unsigned(n * size));
    std::vector<int> sm(std::size_t(n) * std::size_t(size));
    ok = cudaLaunchKernelEx(&cfg, pp_probe_kernel, d, 100000LL) == cudaSuccess &&
         cudaMemcpy(sm.data(), d, sizeof(int) * sm.size(), cudaMemcpyDeviceToHost) == cudaSuccess;
    for (std::size_t b = 0; ok && b < sm.size(); ++b) {
      if (sm[b] < 0 || sm[b] >= int(parent.size())) ok = false;
      else parent[std::size_t(find(sm[b]))] = find(sm[b - b % std::size_t(size)]);
    }
    if (ok && size == cl)
      for (int c = 0; c < n; ++c) sm_of_cluster.push_back(sm[std::size_t(c) * std::size_t(cl)]);
  }
  cudaFree(d);
  if (!ok || int(sm_of_cluster.size()) != clusters) {
    cudaGetLastError();
    return {};
  }
  std::vector<int> gpc(sm_of_cluster.size());
  for (std::size_t c = 0; c < gpc.size(); ++c) gpc[c] = find(sm_of_cluster[c]);
  return gpc;
}

// The identity order of the ping-pong grid's clusters (blockIdx order).
const PpPlaces& pp_identity() {
  static const PpPlaces identity = [] {
    PpPlaces p{};
    std::iota(std::begin(p.of), std::end(p.of), 0);
    return p;
  }();
  return identity;
}

// The places by GPC (probe_pp_gpcs, places_by_gpc) of the 2 x 1 ping-pong grid of `resident` clusters, for
// orders of g = 1-8 unit rows ([g]). Probed once per process, on the first call, for every output type (their
// kernels have the same launch shape); nullptr where the probe failed, QS_PP_PLACE=0 keeps blockIdx order, or
// a call asks for another count of clusters than the one probed.
const PpPlaces* pp_places(int resident) {
  static PpPlaces places[9] = {};
  static int probed = 0;  // clusters probed; 0: none (failed or switched off)
  static std::once_flag once;
  std::call_once(once, [resident] {
    if (env_off("QS_PP_PLACE")) return;
    const std::vector<int> gpc = probe_pp_gpcs(2, kPpSmem, resident);
    if (gpc.empty()) return;
    for (int g = 1; g <= 8; ++g) {
      const std::vector<int> place = places_by_gpc(gpc, g);
      for (std::size_t c = 0; c < place.size(); ++c) places[g].of[c] = uint8_t(place[c]);
    }
    probed = resident;
  });
  return probed > 0 && probed == resident ? places : nullptr;
}

// The ping-pong kernel over every 128 x 128 tile: one block per SM (fewer where there are fewer tiles), in
// clusters of CM x CN. As many clusters as can be resident at once (GPCs need not hold a multiple of CM x CN
// free SMs), so the persistent blocks never wait for each other's SMs. False where the encoder is missing.
// A grid of every resident cluster (2 x 1) sweeps 8 unit rows together (all of them where there are fewer),
// its clusters at the places that probe_pp_gpcs and places_by_gpc give (PpPlaces: a GPC's clusters on one
// row); smaller grids sweep 8 / CM rows in blockIdx order. QS_PP_GROUP=g sweeps g unit rows together (g < 0:
// -g unit columns, without places) and QS_PP_PLACE=0 keeps blockIdx order (tuning: without places, the order
// changes L2 reads by up to 10 % at 4096^3 and DRAM reads by 6x at 2048 x 4096 x 11008, and no order beat 4
// rows on all three large shapes; session 15).
template <int O, int CM, int CN>
bool gemm_int8_pingpong_launch(const int8_t* A, const int8_t* B, int M, int K, int N, const Epi& e, cudaStream_t s) {
  constexpr int CL = CM * CN;
  CUtensorMap ta, tb;
  if (!encode_operand(&ta, A, M, K, 128 / CN) || !encode_operand(&tb, B, N, K, 128 / CM)) return false;
  auto* kernel = gemm_int8_pingpong_kernel<O, CM, CN, false>;
  constexpr bool kTmaStore = O == kOutI32 || O == kOutF32;  // float16 out: always the staged stores
  auto* kernel_ts = gemm_int8_pingpong_kernel<O, CM, CN, kTmaStore>;
  constexpr int kSmem = kPpSmem;
  cudaLaunchAttribute attr;
  cudaLaunchConfig_t cfg = pp_launch_config(attr, CL, kSmem, s);
  static int resident = 0;  // clusters that fit at once (queried once per process)
  static std::once_flag once;
  std::call_once(once, [&] {
    for (auto* k : {kernel, kernel_ts})
      check(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem), "ping-pong kernel attribute");
    cudaLaunchConfig_t q = cfg;
    q.gridDim = dim3(unsigned(CL * sm_count()));
    if (cudaOccupancyMaxActiveClusters(&resident, kernel, &q) != cudaSuccess || resident <= 0) {
      cudaGetLastError();
      resident = sm_count() / CL;
    }
  });
  const int units_m = (M + 128 * CM - 1) / (128 * CM);
  const long units = long(units_m) * ((N + 128 * CN - 1) / (128 * CN));
  cfg.gridDim = dim3(unsigned(CL * std::min<long>(units, resident)));
  // The places by GPC are probed on the first launch whose grid fills the GPU (smaller grids, training's GEMMs,
  // never pay its launches and device-wide syncs), once per process for every output type.
  const PpPlaces* placed = CM == 2 && CN == 1 && units >= resident ? pp_places(resident) : nullptr;
  const char* g = std::getenv("QS_PP_GROUP");  // unit rows swept together (tuning); < 0: columns
  const int asked = g ? std::atoi(g) : 0;
  // The grid is every cluster the probe placed, in an order of at most 8 rows (fewer rows where M has fewer).
  const bool full = placed && asked >= 0 && asked <= 8;
  const int group = asked != 0 ? asked : full ? std::min(8, units_m) : 8 / CM;
  // int32 and float32 out whose rows are whole 16-byte chunks leave by TMA store (pp_store_tile_tma);
  // float16 out, other rows and QS_PP_TMA_STORE=0 (comparison) through the staging buffers and st.global.
  CUtensorMap ty{};
  const bool tma_store = kTmaStore && !env_off("QS_PP_TMA_STORE") && encode_output(&ty, e.Y, M, N, O == kOutI32);
  // A last round of at most half the places in halves (PpTail); QS_PP_HALVES=0 keeps whole units (comparison).
  const long places = std::min<long>(units, resident), r = units % places;
  const int halves = !env_off("QS_PP_HALVES") && units > places && r > 0 && 2 * r <= places;
  CUtensorMap ta64 = ta;  // A in boxes of 64 rows, for the halves' loads
  if (halves && CN == 1 && !encode_operand(&ta64, A, M, K, 64)) return false;
  check(cudaLaunchKernelEx(&cfg, tma_store ? kernel_ts : kernel, ta, tb, M, K, N, e, group,
                           full ? placed[group] : pp_identity(), ty, halves, ta64),
        "ping-pong kernel launch");
  return true;
}

// The TMA kernel over every 128 x 256 tile. Where the tiles leave a last partial wave of r <= SMs / 2 tiles
// (2048 x 4096 x 11008 on 132 SMs: 688 = 5 x 132 + 28), the full waves run first and those r tiles follow as
// 2 or 4 blocks of 128 x 128 / 128 x 64 each (a second launch), so the tail takes about a half or a quarter
// of a tile's time instead of a whole one. QS_WGMMA_TAIL=0 keeps whole tiles (for comparison).
template <int O>
bool gemm_int8_wgmma_tma_tiles(const int8_t* A, const int8_t* B, int M, int K, int N, const Epi& e, cudaStream_t s) {
  const long tiles = long((M + WgWide::BM - 1) / WgWide::BM) * ((N + WgWide::BN - 1) / WgWide::BN);
  const int sms = sm_count();
  const long full = tiles / sms * sms, r = tiles - full;
  const char* tail = std::getenv("QS_WGMMA_TAIL");  // 0: whole tiles; 2 or 4: parts per tile (tuning)
  const int force = tail ? std::atoi(tail) : -1;
  const bool split = force != 0 && full > 0 && r > 0 && 2 * r <= sms;
  if (!split) return gemm_int8_wgmma_tma_launch<WgWide, O>(A, B, M, K, N, e, s);
  if (!gemm_int8_wgmma_tma_launch<WgWide, O>(A, B, M, K, N, e, s, 0, int(full), 1)) return false;
  if (force == 4 || (force != 2 && 4 * r <= sms))
    return gemm_int8_wgmma_tma_launch<WgQuarter, O>(A, B, M, K, N, e, s, int(full), int(4 * r), 4);
  return gemm_int8_wgmma_tma_launch<WgHalf, O>(A, B, M, K, N, e, s, int(full), int(2 * r), 2);
}

// A zeroed int32 workspace per stream (by cudaStreamGetId, unique for the process's life), grown in stream
// order and kept: the split-K kernels leave every word they use zero again, so it needs no memset per call.
int32_t* splitk_workspace(std::size_t count, cudaStream_t s) {
  static std::mutex mu;
  static std::unordered_map<unsigned long long, std::pair<int32_t*, std::size_t>> cache;
  unsigned long long id = 0;
  check(cudaStreamGetId(s, &id), "stream id");
  std::lock_guard<std::mutex> lock(mu);
  auto& [ptr, cap] = cache[id];
  if (cap < count) {
    if (ptr) check(cudaFreeAsync(ptr, s), "split-K workspace");
    ptr = nullptr;
    cap = 0;
    const std::size_t want = std::max(count, std::size_t(1) << 20);
    check(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&ptr), want * 4, scratch_pool(), s),
          "split-K workspace (out of device memory?)");
    check(cudaMemsetAsync(ptr, 0, want * 4, s), "split-K zero");
    cap = want;
  }
  return ptr;
}

template <int CM, int CN>
bool gemm_int8_pingpong_out(const int8_t* A, const int8_t* B, int M, int K, int N, const Epi& e, int out, cudaStream_t s) {
  switch (out) {
    case kOutI32: return gemm_int8_pingpong_launch<kOutI32, CM, CN>(A, B, M, K, N, e, s);
    case kOutF32: return gemm_int8_pingpong_launch<kOutF32, CM, CN>(A, B, M, K, N, e, s);
    default: return gemm_int8_pingpong_launch<kOutF16, CM, CN>(A, B, M, K, N, e, s);
  }
}

// Split-K: the K slices are shared among `splits` blocks per tile whose int32 tiles add up in a zeroed
// buffer (Y itself for int32 output, else a stream-ordered workspace that the last block of each tile
// dequantizes).
template <typename C>
void gemm_int8_wgmma_launch_splits(const int8_t* A, const int8_t* B, int M, int K, int N, const Epi& e, int out, int splits, cudaStream_t s) {
  if (splits > 1) {
    // Up to 8 splits (the portable cluster size): the blocks of a tile as one cluster that adds its parts in
    // distributed shared memory, with the most splits whose clusters the GPU runs all at once (an H200 runs 30
    // clusters of 8 blocks of this kernel, 32 of 7: 32 x 8192 x 4096 takes 7, at 14.8 us for int32 out against
    // 17.2 us with 8 splits that add atomically, 16.7 against 21.3 us for float32). A split count forced by
    // QS_WGMMA_SPLITK (tests) runs in clusters as it is, in waves. QS_SPLITK_CLUSTER=0 turns clusters off.
    const long tiles = long((M + C::BM - 1) / C::BM) * ((N + C::BN - 1) / C::BN);
    if (!env_off("QS_SPLITK_CLUSTER")) {
      auto fit = [out](int n) {
        return out == kOutI32   ? wgmma_split_clusters<C, kOutI32>(n)
               : out == kOutF32 ? wgmma_split_clusters<C, kOutF32>(n)
                                : wgmma_split_clusters<C, kOutF16>(n);
      };
      const int n = split_cluster_blocks(splits, tiles, std::getenv("QS_WGMMA_SPLITK") != nullptr, fit);
      if (n > 0) {
        note_plan("wgmma split-K in clusters", n);
        switch (out) {
          case kOutI32: gemm_int8_wgmma_launch_tile<C, kOutI32>(A, B, M, K, N, e, n, s, true); break;
          case kOutF32: gemm_int8_wgmma_launch_tile<C, kOutF32>(A, B, M, K, N, e, n, s, true); break;
          default: gemm_int8_wgmma_launch_tile<C, kOutF16>(A, B, M, K, N, e, n, s, true); break;
        }
        return;
      }
    }
    note_plan("wgmma split-K, atomic adds", splits);
    const std::size_t MN = std::size_t(M) * N;
    if (out == kOutI32) {
      check(cudaMemsetAsync(e.Y, 0, MN * 4, s), "split-K zero");
      gemm_int8_wgmma_launch_tile<C, kOutI32Add>(A, B, M, K, N, e, splits, s);
      return;
    }
    // The sums and the tiles' arrival counters in the stream's zeroed workspace, which the last block of
    // each tile reads, dequantizes and zeroes again: one launch per call, no allocation or memset (those two
    // host calls made the fused epilogue cost 25.5 instead of 16.0 us at 16 x 4096 x 4096 on H100).
    int32_t* ws = splitk_workspace(MN + std::size_t(tiles), s);
    Epi w = e;
    w.ws = ws;
    w.counters = reinterpret_cast<unsigned*>(ws + MN);
    if (out == kOutF32) gemm_int8_wgmma_launch_tile<C, kOutF32>(A, B, M, K, N, w, splits, s);
    else gemm_int8_wgmma_launch_tile<C, kOutF16>(A, B, M, K, N, w, splits, s);
    return;
  }
  // Unsplit 128 x 256 tiles: the TMA kernel, unless QS_WGMMA_LOAD=cpasync (A/B in one build).
  if constexpr (C::BK == 128) {
    const char* load = std::getenv("QS_WGMMA_LOAD");
    if (!(load && std::strcmp(load, "cpasync") == 0)) {
      bool done = false;
      // The ping-pong kernel for every K: it hides each tile's epilogue behind the other consumer's MMAs.
      // H100, ratios to cuBLASLt over session 14's calls (notes/issue18-gemm-tma.md), one call per event pair /
      // 20 back to back, ping-pong against the one-block-per-tile kernel: int32 out 4096^3 0.96-1.04 /
      // 0.88-0.91 against 0.90-1.00 / 0.79-0.90, 2048 x 4096 x 11008 0.95-1.05 / 0.87-0.95 against 0.85-0.97 /
      // 0.75-0.87, 4096 x 2048 x 4096 1.07-1.13 / 0.95-0.98 against 0.88-0.95 / 0.78-0.83. Above K = 4096 it
      // won once it placed its clusters by GPC and stored by TMA (session 19, one call, ncu cycles): 8192^3
      // 1.118M against 1.211M (int32) and 1.114M against 1.233M (float32), 4096 x 8192 x 4096 292k against
      // 319k; per call 0.98-1.06 against 0.85-0.95 at 8192^3. QS_WGMMA_PP=0 turns it off.
      if (!env_off("QS_WGMMA_PP") && K > 0) {
        const char* cl = std::getenv("QS_WGMMA_CLUSTER");  // tile rows x tile columns per cluster (tuning)
        done = cl && std::strcmp(cl, "2x2") == 0 ? gemm_int8_pingpong_out<2, 2>(A, B, M, K, N, e, out, s)
                                                 : gemm_int8_pingpong_out<2, 1>(A, B, M, K, N, e, out, s);
        if (done) return note_plan("the wgmma ping-pong kernel (persistent, TMA)");
      }
      switch (out) {
        case kOutI32: done = gemm_int8_wgmma_tma_tiles<kOutI32>(A, B, M, K, N, e, s); break;
        case kOutF32: done = gemm_int8_wgmma_tma_tiles<kOutF32>(A, B, M, K, N, e, s); break;
        default: done = gemm_int8_wgmma_tma_tiles<kOutF16>(A, B, M, K, N, e, s); break;
      }
      if (done) return note_plan("wgmma TMA tiles, a block per tile");
    }
  }
  note_plan("wgmma cp.async tiles");
  switch (out) {
    case kOutI32: gemm_int8_wgmma_launch_tile<C, kOutI32>(A, B, M, K, N, e, 1, s); break;
    case kOutF32: gemm_int8_wgmma_launch_tile<C, kOutF32>(A, B, M, K, N, e, 1, s); break;
    default: gemm_int8_wgmma_launch_tile<C, kOutF16>(A, B, M, K, N, e, 1, s); break;
  }
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

void gemm_int8_wgmma_launch(const int8_t* A, const int8_t* B, int M, int K, int N, const Epi& e, int out,
                          cudaStream_t stream) {
  // 128 x 256 tiles whenever they fill the GPU once (on H100 at 8192^3: 1.14 POPS against 0.89 for the
  // 128 x 128 pair, and 1.09 for 128 x 256 tiles in 64-byte slices, 8 stages); smaller products (few rows:
  // decoding) get the 128 x 128 tiles, twice as many blocks.
  // QS_WGMMA_TILE=128x256 or 128x128 forces one (for tuning).
  const char* force = std::getenv("QS_WGMMA_TILE");
  const int sms = sm_count();
  bool wide = long((M + 127) / 128) * ((N + 255) / 256) >= sms;
  if (force && std::strcmp(force, "128x256") == 0) wide = true;
  else if (force && std::strcmp(force, "128x128") == 0) wide = false;
  // Split-K where the tiles leave most of the GPU idle (decode shapes: 32 x 8192 x 4096 has 32 tiles of
  // 128 x 128 for 132 SMs of two blocks each; M <= 16 goes to the skinny kernel before this, unless
  // QS_GEMM_SKINNY=0): as many splits as fill the block slots once, each split at least 8 slices of K, and
  // gemm_int8_wgmma_launch_splits may take fewer so that a tile's blocks run as one cluster. QS_WGMMA_SPLITK=n
  // forces n (1: off).
  const long tiles = wide ? long((M + 127) / 128) * ((N + 255) / 256) : long((M + 127) / 128) * ((N + 127) / 128);
  const int slots = sms * (wide ? WgWide::kMinBlocks : WgTwin::kMinBlocks);
  const int slices = (K + (wide ? WgWide::BK : WgTwin::BK) - 1) / (wide ? WgWide::BK : WgTwin::BK);
  int splits = 1;
  // Measured on an H200: 16 x 4096 x 4096 int32 out 23.7 -> 16.8 us (cuBLASLt 16.5); at M = 64 no gain (25.0 vs
  // 25.6 us: four times the atomic adds), so only for M <= 32.
  if (M <= 32 && tiles * 2 <= slots) splits = int(std::min<long>(slots / tiles, std::max(1, slices / 8)));
  if (const char* f = std::getenv("QS_WGMMA_SPLITK")) splits = std::max(1, std::min(std::atoi(f), std::max(1, slices)));
  splits = std::max(1, std::min(splits, 64));
  if (wide) gemm_int8_wgmma_launch_splits<WgWide>(A, B, M, K, N, e, out, splits, stream);
  else gemm_int8_wgmma_launch_splits<WgTwin>(A, B, M, K, N, e, out, splits, stream);
}

}  // namespace qs::cuda::detail
