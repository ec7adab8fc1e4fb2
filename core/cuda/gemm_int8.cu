// CUDA int8 GEMM: device helpers (ldmatrix, mma) -> the dp4a teaching kernel -> the mma.sync tensor-core
// kernel -> launchers (take a stream) -> the entries that validate, pick a kernel and dispatch. The wgmma
// kernel lives in gemm_int8_sm90.cu; the epilogue shared by all of them in gemm_int8_common.cuh.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>

#include "cuda/cuda_util.cuh"
#include "cuda/device.h"
#include "cuda/gemm_int8.cuh"
#include "cuda/gemm_int8_common.cuh"

namespace qs::cuda {

int detail::sm_count() {
  static const int n = [] {
    int v = 0;
    check(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0), "device query");
    return v;
  }();
  return n;
}

namespace {
thread_local const char* plan_what = nullptr;  // the calling thread's last launch (note_plan)
thread_local int plan_splits = 0;
}  // namespace

void detail::note_plan(const char* what, int splits) {
  plan_what = what;
  plan_splits = splits;
}

std::string gemm_int8_take_plan() {
  if (!plan_what) return "";
  std::string s = plan_what;
  if (plan_splits > 0) s += ", " + std::to_string(plan_splits) + " blocks per tile";
  plan_what = nullptr;
  plan_splits = 0;
  return s;
}

using detail::check;
using detail::Epi;

namespace {

// ---------------------------------------------------------------------------------------------------
// The teaching kernel. A block of 16 x 16 threads owns a 64 x 64 output tile; each thread accumulates a
// 4 x 4 set of outputs (rows ty + 16 i, columns tx + 16 j). K advances in slices of 32 bytes that the block
// stages in shared memory as int32 words of four int8 values (zero padded past M, N and K), and __dp4a
// multiplies the four byte pairs of two words and adds them to an int32 accumulator in one instruction.
// Any M, K, N and any alignment: this is also the general path for shapes the tensor-core kernels refuse.
constexpr int kDpTile = 64, kDpWords = 8;  // 8 words = 32 bytes of K per slice

// Four int8 values of row `r` starting at column k, packed little-endian into a word, zeros past the edge.
__device__ __forceinline__ int load_word(const int8_t* X, int rows, int K, int r, int k) {
  if (r >= rows || k >= K) return 0;
  const int8_t* p = X + std::size_t(r) * K + k;
  if (k + 3 < K && (reinterpret_cast<uintptr_t>(p) & 3) == 0) return *reinterpret_cast<const int*>(p);
  uint32_t w = 0;
  for (int t = 0; t < 4 && k + t < K; ++t) w |= uint32_t(uint8_t(p[t])) << (8 * t);
  return int(w);
}

template <int O>
__global__ void gemm_int8_dp4a_kernel(const int8_t* __restrict__ A, const int8_t* __restrict__ B, int M, int K,
                                      int N, Epi e) {
  __shared__ int As[kDpWords][kDpTile];  // As[w][r]: word w of row r's slice
  __shared__ int Bs[kDpWords][kDpTile];
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
  const int row0 = blockIdx.y * kDpTile, col0 = blockIdx.x * kDpTile;
  int acc[4][4] = {};
  for (int k0 = 0; k0 < K; k0 += 4 * kDpWords) {
    // 64 rows x 8 words per operand, two per thread; eight neighbouring threads read one row's 32 bytes.
    for (int i = tid; i < kDpTile * kDpWords; i += 256) {
      const int r = i / kDpWords, w = i % kDpWords;
      As[w][r] = load_word(A, M, K, row0 + r, k0 + 4 * w);
      Bs[w][r] = load_word(B, N, K, col0 + r, k0 + 4 * w);
    }
    __syncthreads();
#pragma unroll
    for (int w = 0; w < kDpWords; ++w) {
      int a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = As[w][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; ++j) b[j] = Bs[w][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = __dp4a(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) detail::store_one<O>(e, row0 + ty + 16 * i, col0 + tx + 16 * j, acc[i][j]);
}

// ---------------------------------------------------------------------------------------------------
// The mma.sync kernel (sm_80+). A block computes a BM x BN tile with warps of WM x WN; K advances in
// slices of 64 bytes through a STAGES-deep ring of shared-memory buffers filled by cp.async, so the loads
// of slice k + STAGES - 1 fly while slice k is multiplied. Shared rows are 64 bytes (four 16-byte chunks);
// chunk c of row r is stored at chunk c ^ ((r >> 1) & 3), which makes both the cp.async stores and the
// ldmatrix reads (8 rows x 16 bytes per 8 lanes) free of bank conflicts.
constexpr int kMmaBK = 64;

__device__ __forceinline__ uint32_t swz64(int row, int chunk) {
  return uint32_t(row * kMmaBK + ((chunk ^ ((row >> 1) & 3)) << 4));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

// D = A (16 x 32, row) * B (32 x 8, col) + D with int8 inputs and int32 accumulators.
__device__ __forceinline__ void mma_s8_16832(int (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <int BM, int BN, int WM, int WN, int STAGES>
struct MmaCfg {
  static constexpr int kWarpsM = BM / WM, kWarpsN = BN / WN, kThreads = 32 * kWarpsM * kWarpsN;
  static constexpr int kMi = WM / 16, kNi = WN / 8;  // mma tiles per warp
  static constexpr int kStageBytes = (BM + BN) * kMmaBK, kSmem = STAGES * kStageBytes;
  // Output rows staged per pass of the shared-memory epilogue: whole warp rows that fit the ring.
  static constexpr int kRowsPerPass = std::min(BM, kSmem / ((BN + detail::kCsPad) * 4) / WM * WM);
  static_assert(kNi % 2 == 0, "B fragments are loaded two n-tiles at a time");
  static_assert(kRowsPerPass >= WM && BM % kRowsPerPass == 0, "the epilogue needs whole passes");
};

template <int BM, int BN, int WM, int WN, int STAGES, int O>
__global__ void __launch_bounds__(MmaCfg<BM, BN, WM, WN, STAGES>::kThreads, 1)
    gemm_int8_mma_kernel(const int8_t* __restrict__ A, const int8_t* __restrict__ B, int M, int K, int N, Epi e) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  using C = MmaCfg<BM, BN, WM, WN, STAGES>;
  extern __shared__ __align__(128) uint8_t smem[];
  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  int tm, tn;
  detail::tile_of(blockIdx.x, tiles_m, tiles_n, 8, tm, tn);
  const int m0 = tm * BM, n0 = tn * BN;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int wm = warp / C::kWarpsN, wn = warp % C::kWarpsN;
  const int KT = (K + kMmaBK - 1) / kMmaBK;
  const uint32_t sbase = detail::smem_addr(smem);

  auto load_slice = [&](int kt, int slot) {
    const int k0 = kt * kMmaBK;
    const uint32_t sA = sbase + slot * C::kStageBytes, sB = sA + BM * kMmaBK;
#pragma unroll
    for (int i = threadIdx.x; i < BM * 4; i += C::kThreads) {
      const int r = i >> 2, c = i & 3, gr = m0 + r, gk = k0 + 16 * c;
      const bool v = gr < M && gk < K;  // K % 16 == 0: a chunk is all inside or all outside
      detail::cp_async16(sA + swz64(r, c), v ? A + std::size_t(gr) * K + gk : A, v);
    }
#pragma unroll
    for (int i = threadIdx.x; i < BN * 4; i += C::kThreads) {
      const int r = i >> 2, c = i & 3, gr = n0 + r, gk = k0 + 16 * c;
      const bool v = gr < N && gk < K;
      detail::cp_async16(sB + swz64(r, c), v ? B + std::size_t(gr) * K + gk : B, v);
    }
  };

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < KT) load_slice(s, s);
    detail::cp_async_commit();
  }
  int acc[C::kMi][C::kNi][4] = {};
  for (int kt = 0; kt < KT; ++kt) {
    detail::cp_async_wait<STAGES - 2>();  // slice kt has landed (this thread's part) ...
    __syncthreads();                      // ... everyone's; and slot (kt - 1) % STAGES is no longer read
    if (kt + STAGES - 1 < KT) load_slice(kt + STAGES - 1, (kt + STAGES - 1) % STAGES);
    detail::cp_async_commit();  // an empty group at the end keeps the wait count simple
    const uint32_t sA = sbase + (kt % STAGES) * C::kStageBytes, sB = sA + BM * kMmaBK;
#pragma unroll
    for (int ks = 0; ks < 2; ++ks) {  // two k32 steps per 64-byte slice
      uint32_t af[C::kMi][4], bf[C::kNi][2];
#pragma unroll
      for (int mi = 0; mi < C::kMi; ++mi) {
        // Lanes 0-15 address rows 0-15 of the low 16 bytes, lanes 16-31 the high 16: a0..a3 of m16n8k32.
        const int r = wm * WM + mi * 16 + (lane & 15), c = 2 * ks + (lane >> 4);
        ldmatrix_x4(af[mi][0], af[mi][1], af[mi][2], af[mi][3], sA + swz64(r, c));
      }
#pragma unroll
      for (int nj = 0; nj < C::kNi / 2; ++nj) {
        // B is stored n-major (K contiguous), so no transpose: lanes 0-7 / 8-15 give n-tile 2nj's low and
        // high 16 bytes, lanes 16-23 / 24-31 those of n-tile 2nj + 1.
        const int r = wn * WN + nj * 16 + (lane & 7) + ((lane >> 4) << 3), c = 2 * ks + ((lane >> 3) & 1);
        ldmatrix_x4(bf[2 * nj][0], bf[2 * nj][1], bf[2 * nj + 1][0], bf[2 * nj + 1][1], sB + swz64(r, c));
      }
#pragma unroll
      for (int mi = 0; mi < C::kMi; ++mi)
#pragma unroll
        for (int ni = 0; ni < C::kNi; ++ni) mma_s8_16832(acc[mi][ni], af[mi], bf[ni][0], bf[ni][1]);
    }
  }
  detail::cp_async_wait<0>();
  __syncthreads();  // the ring becomes the output tile, RP rows at a time
  // Accumulator fragment: c0, c1 at (g, 2t), (g, 2t + 1); c2, c3 eight rows lower (g = lane / 4, t = lane % 4).
  int32_t* Cs = reinterpret_cast<int32_t*>(smem);
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int p = 0; p < BM / C::kRowsPerPass; ++p) {
    if (wm * WM / C::kRowsPerPass == p) {
#pragma unroll
      for (int mi = 0; mi < C::kMi; ++mi)
#pragma unroll
        for (int ni = 0; ni < C::kNi; ++ni) {
          const int r = wm * WM - p * C::kRowsPerPass + mi * 16 + g, c = wn * WN + ni * 8 + 2 * t;
          *reinterpret_cast<int2*>(Cs + r * (BN + detail::kCsPad) + c) = make_int2(acc[mi][ni][0], acc[mi][ni][1]);
          *reinterpret_cast<int2*>(Cs + (r + 8) * (BN + detail::kCsPad) + c) = make_int2(acc[mi][ni][2], acc[mi][ni][3]);
        }
    }
    __syncthreads();
    detail::drain_tile<O, BN, C::kThreads, C::kRowsPerPass>(e, Cs, m0 + p * C::kRowsPerPass, n0);
    __syncthreads();
  }
#endif
}

// ---------------------------------------------------------------------------------------------------
// The skinny kernel (sm_80+) for M <= 16: the decode shapes (a few tokens times a weight matrix), whose cost
// is streaming B from memory once. A block of kSkWarps warps owns 8 output columns and warp w the w-th part
// of K. Per 64 bytes of K a lane loads 16 bytes of B's row n0 + lane / 4 straight into registers (no shared
// memory: each byte is used once, so it is read with L1 no-allocate) and 16 bytes of A's rows lane / 4 and
// lane / 4 + 8 (through L1: every block reads all of A), kSkUnroll slices' loads in flight before the first
// multiply, and two m16n8k32 mma.sync multiply them. Lane t's 16 bytes hold the mmas' k = 4t .. 4t + 3
// (bytes 0-3, then 8-11) and k = 16 + 4t .. (bytes 4-7, then 12-15): a permutation of the slice's 64 k, the
// same for A and B, so the int32 sums are exactly the sums over K. The warps' 16 x 8 partial tiles are added
// in shared memory and the block's outputs leave through store_one / store_dequant (the shared epilogue: the
// same bits as every other kernel), float outputs with scales and bias fetched before the K loop. Needs
// K % 16 == 0 and 16-byte aligned rows (then every 16-byte piece is in or out).
constexpr int kSkWarps = 8, kSkUnroll = 4;

__device__ __forceinline__ int4 ld_stream16(const int8_t* p) {
  int4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.s32 {%0, %1, %2, %3}, [%4];\n"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

template <int O>
__global__ void __launch_bounds__(kSkWarps * 32) gemm_int8_skinny_kernel(const int8_t* __restrict__ A,
                                                                        const int8_t* __restrict__ B, int M, int K,
                                                                        int N, Epi e) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  __shared__ int32_t part[kSkWarps][16][9];  // 9: the fragment writes spread over the banks
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
  const int n0 = blockIdx.x * 8, n = n0 + g;
  // Float outputs: the block's 16 row scales, 8 column scales and 8 biases, fetched by warp 0 with cp.async before
  // the K loop (no registers held across it), so the epilogue finds them in shared memory: from a cold L2 their
  // memory latency otherwise comes after the last multiply. Rows past M, columns past N and a missing bias read
  // as +0.0f (zero fill; store_one's bias is +0.0f too), and those outputs are not stored.
  __shared__ float epi[32];
  constexpr bool kFloatOut = O == detail::kOutF32 || O == detail::kOutF16;
  if constexpr (kFloatOut) {
    if (warp == 0) {
      const int c = n0 + (lane & 7);
      const bool row = lane < 16, col_ok = c < N;
      const bool v = row ? lane < M : lane < 24 ? col_ok : col_ok && e.bias != nullptr;
      const float* src = row ? e.sa + (v ? lane * e.sa_step : 0)
                             : lane < 24 ? e.sb + (v ? c * e.sb_step : 0) : (v ? e.bias + c : e.sa);
      detail::cp_async4(detail::smem_addr(&epi[lane]), src, v);
      detail::cp_async_commit();
    }
  }
  const int slices = (K + 63) / 64, per = (slices + kSkWarps - 1) / kSkWarps;
  const int s_begin = warp * per, s_end = min(slices, s_begin + per);
  const bool b_ok = n < N, a0_ok = g < M, a1_ok = g + 8 < M;
  const int8_t* brow = B + std::size_t(b_ok ? n : 0) * K + 16 * t;
  const int8_t* arow0 = A + std::size_t(a0_ok ? g : 0) * K + 16 * t;
  const int8_t* arow1 = A + std::size_t(a1_ok ? g + 8 : 0) * K + 16 * t;
  const int4 zero = make_int4(0, 0, 0, 0);
  int acc[4] = {0, 0, 0, 0};
  for (int s = s_begin; s < s_end; s += kSkUnroll) {
    int4 b[kSkUnroll], x0[kSkUnroll], x1[kSkUnroll];
#pragma unroll
    for (int u = 0; u < kSkUnroll; ++u) {
      const int k = (s + u) * 64;  // this lane's piece: k + 16 t
      const bool in = s + u < s_end && k + 16 * t < K;
      b[u] = in && b_ok ? ld_stream16(brow + k) : zero;
      x0[u] = in && a0_ok ? __ldg(reinterpret_cast<const int4*>(arow0 + k)) : zero;
      x1[u] = in && a1_ok ? __ldg(reinterpret_cast<const int4*>(arow1 + k)) : zero;
    }
#pragma unroll
    for (int u = 0; u < kSkUnroll; ++u) {
      const uint32_t lo[4] = {uint32_t(x0[u].x), uint32_t(x1[u].x), uint32_t(x0[u].y), uint32_t(x1[u].y)};
      mma_s8_16832(acc, lo, uint32_t(b[u].x), uint32_t(b[u].y));
      const uint32_t hi[4] = {uint32_t(x0[u].z), uint32_t(x1[u].z), uint32_t(x0[u].w), uint32_t(x1[u].w)};
      mma_s8_16832(acc, hi, uint32_t(b[u].z), uint32_t(b[u].w));
    }
  }
  // Accumulator fragment: c0, c1 at (g, 2t), (g, 2t + 1); c2, c3 eight rows lower.
  part[warp][g][2 * t] = acc[0];
  part[warp][g][2 * t + 1] = acc[1];
  part[warp][g + 8][2 * t] = acc[2];
  part[warp][g + 8][2 * t + 1] = acc[3];
  if constexpr (kFloatOut) {
    if (warp == 0) detail::cp_async_wait<0>();
  }
  __syncthreads();
  if (threadIdx.x < 128) {
    const int r = threadIdx.x / 8, c = threadIdx.x % 8;
    int32_t sum = 0;
#pragma unroll
    for (int w = 0; w < kSkWarps; ++w) sum += part[w][r][c];
    if constexpr (!kFloatOut) {
      detail::store_one<O>(e, r, n0 + c, sum);
    } else if (r < M && n0 + c < N) {
      detail::store_dequant<O>(e, std::size_t(r) * N + n0 + c, sum, epi[r], epi[16 + c], epi[24 + c]);
    }
  }
#endif
}

// ---------------------------------------------------------------------------------------------------
// Launchers (take a stream, check nothing): one per kernel, then gemm_int8_launch picks the kernel.
template <int O>
void gemm_int8_dp4a_launch(const int8_t* A, const int8_t* B, int M, int K, int N, const Epi& e, cudaStream_t s) {
  const dim3 grid((N + kDpTile - 1) / kDpTile, (M + kDpTile - 1) / kDpTile), block(16, 16);
  gemm_int8_dp4a_kernel<O><<<grid, block, 0, s>>>(A, B, M, K, N, e);
}

template <int O>
void gemm_int8_skinny_launch(const int8_t* A, const int8_t* B, int M, int K, int N, const Epi& e, cudaStream_t s) {
  gemm_int8_skinny_kernel<O><<<unsigned((N + 7) / 8), kSkWarps * 32, 0, s>>>(A, B, M, K, N, e);
}

template <int BM, int BN, int WM, int WN, int STAGES, int O>
void gemm_int8_mma_launch_tile(const int8_t* A, const int8_t* B, int M, int K, int N, const Epi& e, cudaStream_t s) {
  using C = MmaCfg<BM, BN, WM, WN, STAGES>;
  auto* kernel = gemm_int8_mma_kernel<BM, BN, WM, WN, STAGES, O>;
  static std::once_flag once;  // per instantiation: allow more than 48 KiB of dynamic shared memory
  std::call_once(once, [&] {
    check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, C::kSmem), "mma kernel attribute");
  });
  const long tiles = long((M + BM - 1) / BM) * ((N + BN - 1) / BN);
  kernel<<<unsigned(tiles), C::kThreads, C::kSmem, s>>>(A, B, M, K, N, e);
}

// 128 x 128 tiles with 4 warps of 64 x 64 (64 KiB of shared memory in 4 stages: two blocks per SM on
// sm_80 / sm_90, 0.53 POPS at 8192^3 on H100 against 0.49 for 128 x 256 tiles with 8 warps), or 64 x 128
// tiles with 4 warps of 32 x 64 when the big tiles would not fill the GPU once.
// QS_MMA_TILE=128x128 | 64x128 forces one (for tuning).
template <int O>
void gemm_int8_mma_launch(const int8_t* A, const int8_t* B, int M, int K, int N, const Epi& e, cudaStream_t s) {
  const char* force = std::getenv("QS_MMA_TILE");
  const std::string f = force ? force : "";
  const long big = long((M + 127) / 128) * ((N + 127) / 128);
  if (f == "128x128" || (f.empty() && big >= detail::sm_count())) gemm_int8_mma_launch_tile<128, 128, 64, 64, 4, O>(A, B, M, K, N, e, s);
  else gemm_int8_mma_launch_tile<64, 128, 32, 64, 4, O>(A, B, M, K, N, e, s);
}

// M <= kSkinnyMaxM takes the skinny kernel in place of the tensor-core kernels' tiles (QS_GEMM_SKINNY=0 keeps
// the tiles: wgmma's split-K, for comparison and for the self-test of that path).
constexpr int kSkinnyMaxM = 16;
bool skinny_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("QS_GEMM_SKINNY");
    return !(v && std::strcmp(v, "0") == 0);
  }();
  return on;
}

template <int O>
void gemm_int8_launch(GemmKernel k, const int8_t* A, const int8_t* B, int M, int K, int N, const Epi& e, cudaStream_t s) {
  if (k != GemmKernel::Dp4a && M <= kSkinnyMaxM && skinny_enabled()) {
    detail::note_plan("the skinny mma.sync kernel (M <= 16)");
    return gemm_int8_skinny_launch<O>(A, B, M, K, N, e, s);
  }
  switch (k) {
    case GemmKernel::Wgmma: detail::gemm_int8_wgmma_launch(A, B, M, K, N, e, O, s); break;  // notes its own path
    case GemmKernel::Mma:
      detail::note_plan("mma.sync tiles");
      gemm_int8_mma_launch<O>(A, B, M, K, N, e, s);
      break;
    default:
      detail::note_plan("dp4a tiles");
      gemm_int8_dp4a_launch<O>(A, B, M, K, N, e, s);
      break;
  }
}

void validate(int M, int K, int N) {
  if (M <= 0 || K <= 0 || N <= 0)
    throw std::invalid_argument("gemm_int8_cuda: sizes must be positive, got M=" + std::to_string(M) + " K=" + std::to_string(K) +
                    " N=" + std::to_string(N));
  if (K > kGemmInt8MaxK)
    throw std::invalid_argument("gemm_int8_cuda: K = " + std::to_string(K) + " exceeds the int32-safe bound " +
                                std::to_string(kGemmInt8MaxK));
}

}  // namespace

bool gemm_int8_supported(GemmKernel k, int M, int K, int N) {
  (void)M;
  (void)N;
  const DeviceInfo& d = device_info();
  if (!d.available) return false;
  switch (k) {
    case GemmKernel::Dp4a:
    case GemmKernel::Auto: return true;
    case GemmKernel::Mma: return d.cc_major >= 8 && K % 16 == 0;
    case GemmKernel::Wgmma: return d.cc_major == 9 && K % 16 == 0 && detail::wgmma_compiled_for_device();
  }
  return false;
}

GemmKernel gemm_int8_resolve(GemmKernel want, int M, int K, int N, std::string* why) {
  auto note = [&](const std::string& s) {
    if (why) *why = s;
  };
  note("");
  if (want == GemmKernel::Auto) {
    // wgmma beat mma on every measured H100 shape, 16 x 4096 x 4096 included.
    if (gemm_int8_supported(GemmKernel::Wgmma, M, K, N)) return GemmKernel::Wgmma;
    if (gemm_int8_supported(GemmKernel::Mma, M, K, N)) return GemmKernel::Mma;
    return GemmKernel::Dp4a;
  }
  if (gemm_int8_supported(want, M, K, N)) return want;
  const DeviceInfo& d = device_info();
  std::string reason;
  if (K % 16 != 0) reason = "K = " + std::to_string(K) + " is not a multiple of 16";
  else if (want == GemmKernel::Wgmma && d.cc_major != 9) reason = "wgmma needs an sm_90 device";
  else if (want == GemmKernel::Wgmma) reason = "this build has no sm_90a code (CMAKE_CUDA_ARCHITECTURES lacks 90a)";
  else reason = "the device is older than sm_80";
  const GemmKernel got = (want == GemmKernel::Wgmma && gemm_int8_supported(GemmKernel::Mma, M, K, N)) ? GemmKernel::Mma
                                                                                                      : GemmKernel::Dp4a;
  note(std::string(to_string(want)) + " cannot run " + std::to_string(M) + "x" + std::to_string(K) + "x" +
       std::to_string(N) + " (" + reason + "); running " + to_string(got));
  return got;
}

GemmKernel gemm_int8_device(const int8_t* A, const int8_t* B, int M, int K, int N, const GemmEpilogueDev& ep,
                            GemmOut out, void* Y, GemmKernel want, void* stream) {
  validate(M, K, N);
  if (!A || !B || !Y) throw std::invalid_argument("gemm_int8_device: null pointer");
  if (out != GemmOut::I32 && (!ep.scale_a || !ep.scale_b)) throw std::invalid_argument("gemm_int8_device: the epilogue needs scales");
  GemmKernel k = gemm_int8_resolve(want, M, K, N);
  // cp.async reads 16-byte chunks: the tensor-core kernels need 16-byte aligned rows.
  if (k != GemmKernel::Dp4a && ((reinterpret_cast<uintptr_t>(A) | reinterpret_cast<uintptr_t>(B)) & 15)) k = GemmKernel::Dp4a;
  Epi e;
  e.sa = ep.scale_a;
  e.sa_step = ep.scale_a_per_row ? 1 : 0;
  e.sb = ep.scale_b;
  e.sb_step = ep.scale_b_per_col ? 1 : 0;
  e.bias = ep.bias;
  e.Y = Y;
  e.M = M;
  e.N = N;
  auto s = static_cast<cudaStream_t>(stream);
  switch (out) {
    case GemmOut::I32: gemm_int8_launch<detail::kOutI32>(k, A, B, M, K, N, e, s); break;
    case GemmOut::F32: gemm_int8_launch<detail::kOutF32>(k, A, B, M, K, N, e, s); break;
    case GemmOut::F16: gemm_int8_launch<detail::kOutF16>(k, A, B, M, K, N, e, s); break;
  }
  check(cudaGetLastError(), "int8 GEMM launch");
  return k;
}

GemmKernel gemm_int8_cuda(const int8_t* A, const int8_t* B, int M, int K, int N, const GemmEpilogueHost& h,
                          GemmOut out, void* Y, GemmKernel want) {
  validate(M, K, N);
  if (!A || !B || !Y) throw std::invalid_argument("gemm_int8_cuda: null pointer");
  const bool deq = out != GemmOut::I32;
  if (deq) {
    if (!h.scale_a || (h.scale_a_size != 1 && h.scale_a_size != std::size_t(M)))
      throw std::invalid_argument("gemm_int8_cuda: scale_a needs 1 or M values");
    if (!h.scale_b || (h.scale_b_size != 1 && h.scale_b_size != std::size_t(N)))
      throw std::invalid_argument("gemm_int8_cuda: scale_b needs 1 or N values");
    if (h.bias_size != 0 && (!h.bias || h.bias_size != std::size_t(N)))
      throw std::invalid_argument("gemm_int8_cuda: bias needs 0 or N values");
  }
  const std::size_t MK = std::size_t(M) * K, NK = std::size_t(N) * K, MN = std::size_t(M) * N;
  const std::size_t esize = out == GemmOut::F16 ? 2 : 4;
  detail::DeviceBuffer<int8_t> dA(MK), dB(NK);
  detail::DeviceBuffer<uint8_t> dY(MN * esize);
  detail::DeviceBuffer<float> dsa(deq ? h.scale_a_size : 0), dsb(deq ? h.scale_b_size : 0), dbias(deq ? h.bias_size : 0);
  check(cudaMemcpy(dA.ptr, A, MK, cudaMemcpyHostToDevice), "copy to device");
  check(cudaMemcpy(dB.ptr, B, NK, cudaMemcpyHostToDevice), "copy to device");
  GemmEpilogueDev ep;
  if (deq) {
    check(cudaMemcpy(dsa.ptr, h.scale_a, h.scale_a_size * 4, cudaMemcpyHostToDevice), "copy to device");
    check(cudaMemcpy(dsb.ptr, h.scale_b, h.scale_b_size * 4, cudaMemcpyHostToDevice), "copy to device");
    if (h.bias_size) check(cudaMemcpy(dbias.ptr, h.bias, h.bias_size * 4, cudaMemcpyHostToDevice), "copy to device");
    ep.scale_a = dsa.ptr;
    ep.scale_a_per_row = h.scale_a_size != 1;
    ep.scale_b = dsb.ptr;
    ep.scale_b_per_col = h.scale_b_size != 1;
    ep.bias = h.bias_size ? dbias.ptr : nullptr;
  }
  const GemmKernel k = gemm_int8_device(dA.ptr, dB.ptr, M, K, N, ep, out, dY.ptr, want, nullptr);
  check(cudaDeviceSynchronize(), "int8 GEMM kernel");
  check(cudaMemcpy(Y, dY.ptr, MN * esize, cudaMemcpyDeviceToHost), "copy back");
  return k;
}

}  // namespace qs::cuda
