// The training lab on the GPU: device buffers -> kernels (gather, bias/ReLU, softmax cross-entropy, column
// sums, masks, the training products, fake quantization by groups, optimizers, change counts, histograms) ->
// the int8 layer ->
// the device MLP (one step = forward, loss, backward, optimizer, weight quantization, counts) -> the
// Trainer-shaped loop -> the self-test entries. Every float operation that must equal the CPU's is written
// with an explicit rounding intrinsic (__fmul_rn, __fadd_rn, __dmul_rn, ...), so nvcc cannot contract it
// into an FMA the host code does not have.
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cuda/affine_quant.cuh"
#include "cuda/cuda_util.cuh"
#include "cuda/device.h"
#include "cuda/gemm_int8.cuh"
#include "cuda/linear_backward.cuh"
#include "cuda/quantize_int8.cuh"
#include "cuda/scale_grid.cuh"
#include "cuda/train_cuda.cuh"
#include "format/encode_bits.h"
#include "format/encode_simd.h"
#include "format/rng.h"
#include "format/scale_rule.h"
#include "train/mlp.h"
#include "train/repro_math.h"
#include "util/mix64.h"

namespace qs::cuda {

namespace {

using detail::check;

// A device array that grows on demand (never shrinks); moves, never copies.
template <class T>
struct DVec {
  T* p = nullptr;
  std::size_t n = 0;
  DVec() = default;
  explicit DVec(std::size_t k) { resize(k); }
  ~DVec() {
    if (p) cudaFree(p);
  }
  DVec(const DVec&) = delete;
  DVec& operator=(const DVec&) = delete;
  DVec(DVec&& o) noexcept : p(o.p), n(o.n) { o.p = nullptr, o.n = 0; }
  DVec& operator=(DVec&& o) noexcept {
    std::swap(p, o.p);
    std::swap(n, o.n);
    return *this;
  }
  void resize(std::size_t k) {
    if (k <= n) return;
    if (p) cudaFree(p);
    p = nullptr;
    n = 0;
    check(cudaMalloc(&p, std::max<std::size_t>(k, 1) * sizeof(T)), "cudaMalloc (out of device memory?)");
    n = k;
  }
  void upload(const T* h, std::size_t k, cudaStream_t s) {
    resize(k);
    if (k) check(cudaMemcpyAsync(p, h, k * sizeof(T), cudaMemcpyHostToDevice, s), "copy to device");
  }
  void download(T* h, std::size_t k, cudaStream_t s) const {
    if (k) check(cudaMemcpyAsync(h, p, k * sizeof(T), cudaMemcpyDeviceToHost, s), "copy from device");
  }
  void zero(std::size_t k, cudaStream_t s) {
    if (k) check(cudaMemsetAsync(p, 0, k * sizeof(T), s), "memset");
  }
};

int grid_for(std::size_t n, int threads = 256) {
  return int(std::min<std::size_t>((n + std::size_t(threads) - 1) / std::size_t(threads), 8192));
}

void launched(const char* what) { check(cudaGetLastError(), what); }

#define QS_FOR(i, n) for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < uint64_t(n); i += uint64_t(gridDim.x) * blockDim.x)

// ---- element kernels --------------------------------------------------------------------------------------

__global__ void gather_kernel(const uint8_t* __restrict__ pixels, const uint8_t* __restrict__ labels,
                              const uint32_t* __restrict__ idx, int n, int F, float* __restrict__ x, int* __restrict__ y) {
  QS_FOR(t, uint64_t(n) * F) {
    const uint64_t r = t / uint64_t(F), j = t % uint64_t(F);
    const uint32_t src = idx[r];
    x[t] = __fmul_rn(float(pixels[uint64_t(src) * F + j]), 1.0f / 255.0f);
    if (j == 0) y[r] = labels[src];
  }
}

__global__ void bias_relu_kernel(float* __restrict__ y, const float* __restrict__ b, int rows, int cols, bool bias,
                                 bool relu) {
  QS_FOR(t, uint64_t(rows) * cols) {
    float v = y[t];
    if (bias) v = __fadd_rn(v, b[t % uint64_t(cols)]);
    if (relu) v = v > 0.0f ? v : 0.0f;
    y[t] = v;
  }
}

// Softmax cross-entropy of one row per thread: train/repro_math.h's row, which the CPU lab runs too.
__global__ void softmax_ce_kernel(const float* __restrict__ z, const int* __restrict__ labels, int B, int C, float invB,
                                  float* __restrict__ dz, double* __restrict__ row_loss, unsigned* hits) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= B) return;
  bool hit = false;
  row_loss[r] = softmax_ce_row(z + std::size_t(r) * C, C, labels[r], invB, dz ? dz + std::size_t(r) * C : nullptr, &hit);
  if (hit) atomicAdd(hits, 1u);
}

// Sum of the row losses, rows in order from 0 (the CPU lab's order and rounding); one thread, a batch is short.
__global__ void sum_rows_kernel(const double* __restrict__ v, int n, double* out) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  double s = 0;
  for (int i = 0; i < n; ++i) s = __dadd_rn(s, v[i]);
  *out = s;
}

// The training products, each element train/train_gemm.h's canonical chain s = fma(a_k, b_k, s) from +0, so
// the device computes the CPU lab's bits (cuBLAS sums in an order of its own, and runs parted after 5 to 39
// steps). A 32 x 32 tile per block, 2 x 2 elements per thread, K in slices of 32 through shared memory, each
// element's k in order. Row-major like train_gemm: op(A) is M x K (A is K x M when TA), op(B) is K x N (B is
// N x K when TB).
constexpr int kReproTile = 32;

template <bool TA, bool TB>
__global__ void __launch_bounds__(256) repro_gemm_kernel(int M, int N, int K, const float* __restrict__ A, int lda,
                                                         const float* __restrict__ B, int ldb, float* __restrict__ C,
                                                         int ldc) {
  constexpr int T = kReproTile;
  __shared__ float As[T][T + 1];  // As[k][i]
  __shared__ float Bs[T][T + 1];  // Bs[k][j]
  const int tx = int(threadIdx.x) % 16, ty = int(threadIdx.x) / 16;
  const int i0 = int(blockIdx.y) * T, j0 = int(blockIdx.x) * T;
  float acc[2][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}};
  for (int k0 = 0; k0 < K; k0 += T) {
    for (int t = int(threadIdx.x); t < T * T; t += 256) {  // loads run along each operand's contiguous index
      const int ia = TA ? t % T : t / T, ka = TA ? t / T : t % T;
      const int i = i0 + ia, k = k0 + ka;
      As[ka][ia] = i < M && k < K ? (TA ? A[std::size_t(k) * lda + i] : A[std::size_t(i) * lda + k]) : 0.0f;
      const int jb = TB ? t / T : t % T, kb = TB ? t % T : t / T;
      const int j = j0 + jb, kk = k0 + kb;
      Bs[kb][jb] = j < N && kk < K ? (TB ? B[std::size_t(j) * ldb + kk] : B[std::size_t(kk) * ldb + j]) : 0.0f;
    }
    __syncthreads();
    const int kn = min(T, K - k0);  // never past K: fma(0, 0, -0) would turn a -0 sum into +0
    for (int k = 0; k < kn; ++k) {
      const float a0 = As[k][ty], a1 = As[k][ty + 16], b0 = Bs[k][tx], b1 = Bs[k][tx + 16];
      acc[0][0] = __fmaf_rn(a0, b0, acc[0][0]);
      acc[0][1] = __fmaf_rn(a0, b1, acc[0][1]);
      acc[1][0] = __fmaf_rn(a1, b0, acc[1][0]);
      acc[1][1] = __fmaf_rn(a1, b1, acc[1][1]);
    }
    __syncthreads();
  }
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 2; ++c) {
      const int i = i0 + ty + 16 * r, j = j0 + tx + 16 * c;
      if (i < M && j < N) C[std::size_t(i) * ldc + j] = acc[r][c];
    }
}

// C = op(A) · op(B) on `stream` (train_gemm's arguments; no accumulation, no TA with TB).
void repro_gemm(bool ta, bool tb, int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                cudaStream_t stream) {
  const dim3 grid(unsigned((N + kReproTile - 1) / kReproTile), unsigned((M + kReproTile - 1) / kReproTile));
  if (ta) repro_gemm_kernel<true, false><<<grid, 256, 0, stream>>>(M, N, K, A, lda, B, ldb, C, ldc);
  else if (tb) repro_gemm_kernel<false, true><<<grid, 256, 0, stream>>>(M, N, K, A, lda, B, ldb, C, ldc);
  else repro_gemm_kernel<false, false><<<grid, 256, 0, stream>>>(M, N, K, A, lda, B, ldb, C, ldc);
  launched("training product kernel");
}

// Argmax hits of a forward pass (evaluation).
__global__ void argmax_hits_kernel(const float* __restrict__ z, const int* __restrict__ labels, int B, int C,
                                   unsigned* hits) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= B) return;
  const float* zr = z + std::size_t(r) * C;
  int arg = 0;
  for (int j = 1; j < C; ++j)
    if (zr[j] > zr[arg]) arg = j;
  if (arg == labels[r]) atomicAdd(hits, 1u);
}

// db[j] = sum over rows of dz[r][j], rows in order (the CPU's order).
__global__ void colsum_kernel(const float* __restrict__ dz, int B, int O, float* __restrict__ db) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= O) return;
  float acc = 0.0f;
  for (int r = 0; r < B; ++r) acc = __fadd_rn(acc, dz[std::size_t(r) * O + j]);
  db[j] = acc;
}

// The ReLU of the layer below (pre > 0) and the activation STE's clip mask (optional).
__global__ void relu_mask_kernel(float* __restrict__ d, const float* __restrict__ pre, const uint8_t* __restrict__ clip,
                                 uint64_t n) {
  QS_FOR(k, n) {
    if (!(pre[k] > 0.0f) || (clip && clip[k])) d[k] = 0.0f;
  }
}

__global__ void zero_where_kernel(float* __restrict__ d, const uint8_t* __restrict__ mask, uint64_t n) {
  QS_FOR(k, n) {
    if (mask[k]) d[k] = 0.0f;
  }
}

// Per-layer counters of one step, summed by warp then atomics (integers: order does not matter).
struct LayerCounts {
  unsigned long long flips, stalls, updates, clamped, nonfinite;
  unsigned long long w_overflow, w_underflow, w_nan, w_clipped;
  unsigned long long a_overflow, a_underflow, a_nan, a_clipped;
  unsigned w_amax_bits, a_amax_bits;
  float w_scale, a_scale;
};

__device__ __forceinline__ unsigned long long warp_sum(unsigned long long v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  return v;
}
__device__ __forceinline__ void add_count(unsigned long long* slot, unsigned long long v) {
  v = warp_sum(v);
  if ((threadIdx.x & 31) == 0 && v) atomicAdd(slot, v);
}

// Flips (code changed) and bit-stalls (unchanged with a finite non-zero gradient), as Trainer's count_changes.
template <class Code>
__global__ void count_changes_kernel(const Code* __restrict__ a, const Code* __restrict__ b, const float* __restrict__ g,
                                     uint64_t n, LayerCounts* c) {
  unsigned long long f = 0, s = 0;
  QS_FOR(i, n) {
    const bool same = a[i] == b[i];
    const bool live = g[i] != 0.0f && fabsf(g[i]) <= FLT_MAX;
    f += !same;
    s += same && live;
  }
  add_count(&c->flips, f);
  add_count(&c->stalls, s);
}

template <class Code>
__global__ void histogram_kernel(const Code* __restrict__ codes, uint64_t n, uint32_t mask, unsigned* __restrict__ hist) {
  QS_FOR(i, n) atomicAdd(&hist[uint32_t(codes[i]) & mask], 1u);
}

__global__ void grid_histogram_kernel(const uint16_t* __restrict__ idx, uint64_t n, const uint32_t* __restrict__ grid_codes,
                                      unsigned* __restrict__ hist) {
  QS_FOR(i, n) atomicAdd(&hist[grid_codes[idx[i]]], 1u);
}

// ---- fake quantization by groups (FakeQuant::apply, current scaling) ---------------------------------------

enum class GroupKind : uint8_t { Tensor, Row, Column, Block, None };

struct FqGroups {
  GroupKind kind = GroupKind::Tensor;
  uint64_t rows = 1, cols = 1, block = 1, blocks_per_row = 1;
  bool column_draws = false;  // stochastic draws by column-major index (FakeQuant's per-column path)
};

// The groups of one layout, K fixed at compile time: the kernels below are instantiated per layout, so none
// of them carries another layout's 64-bit divisions (a run-time switch over the layouts made nvcc evaluate
// them on every element: the E4M3 weight fake quantization took 0.08 s more per epoch).
template <GroupKind K>
struct GroupsOf {
  FqGroups g;
  __device__ __forceinline__ uint64_t group(uint64_t i) const {
    if constexpr (K == GroupKind::Row) return i / g.cols;
    else if constexpr (K == GroupKind::Column) return i % g.cols;
    else if constexpr (K == GroupKind::Block) return (i / g.cols) * g.blocks_per_row + (i % g.cols) / g.block;
    else return 0;
  }
  // The index element i draws its stochastic rounding by: FakeQuant gathers each column and draws by
  // (column * rows + row); every other layout (apply_scheme's too) by the flat index.
  __device__ __forceinline__ uint64_t draw(uint64_t i) const {
    if constexpr (K == GroupKind::Column) return g.column_draws ? (i % g.cols) * g.rows + i / g.cols : i;
    else return i;
  }
};

// Calls f(GroupsOf<kind>{g}) for g's layout (a host-side dispatch to the kernels' instances).
template <class F>
void with_groups(const FqGroups& g, F&& f) {
  switch (g.kind) {
    case GroupKind::Row: return f(GroupsOf<GroupKind::Row>{g});
    case GroupKind::Column: return f(GroupsOf<GroupKind::Column>{g});
    case GroupKind::Block: return f(GroupsOf<GroupKind::Block>{g});
    default: return f(GroupsOf<GroupKind::Tensor>{g});
  }
}

template <class G>
__global__ void fq_amax_kernel(const float* __restrict__ x, uint64_t n, G g, unsigned* __restrict__ amax_bits,
                               unsigned* total_bits) {
  QS_FOR(i, n) {
    const float a = fabsf(x[i]);
    if (a <= FLT_MAX && a > 0.0f) {
      atomicMax(&amax_bits[g.group(i)], __float_as_uint(a));
      if (total_bits) atomicMax(total_bits, __float_as_uint(a));
    }
  }
}

__global__ void fq_scale_kernel(ScaleRuleParams rule, const unsigned* __restrict__ amax_bits, uint64_t groups,
                                float* __restrict__ scales, float* tensor_scale) {
  QS_FOR(k, groups) {
    GroupStats st;
    st.amax = __uint_as_float(amax_bits[k]);
    scales[k] = group_scale(rule, st).scale;
    if (tensor_scale && k == 0) *tensor_scale = scales[k];
  }
}

// Counters of one fake quantization: overflow, underflow, NaN, clipped (LayerCounts' w_ or a_ block).
struct FqCountSlots {
  unsigned long long *overflow, *underflow, *nan, *clipped;
};

template <class G>
__global__ void fq_quant_kernel(KernelParams p, const float* __restrict__ x, float* __restrict__ y, uint16_t* __restrict__ codes,
                                uint8_t* __restrict__ clipped, uint64_t n, G g, const float* __restrict__ scales,
                                float thr, FqCountSlots slots) {
  BitsCounts c;
  unsigned long long nclip = 0;
  QS_FOR(i, n) {
    const float sc = scales[g.group(i)];
    const float xi = x[i];
    if (!scale_is_usable(sc)) {
      if (isnan(xi)) ++c.nan;
      else if (xi != 0.0f) ++c.underflow;
      y[i] = 0.0f;
      if (codes) codes[i] = 0;
      if (clipped) clipped[i] = 0;
      continue;
    }
    KernelParams q = p;
    q.scale = sc;
    uint32_t code;
    float v;
    const uint32_t rnd = p.stochastic ? stochastic_bits(p.seed, g.draw(i)) : 0u;
    encode_bits(q, xi, rnd, code, v, c);
    y[i] = v;
    if (codes) codes[i] = uint16_t(code);
    const uint8_t cl = fabsf(__fdiv_rn(xi, sc)) >= thr;
    if (clipped) clipped[i] = cl;
    nclip += cl;
  }
  add_count(slots.overflow, c.overflow);
  add_count(slots.underflow, c.underflow);
  add_count(slots.nan, c.nan);
  add_count(slots.clipped, nclip);
}

// Unsigned affine integers (affine_quant.cuh's element rule, as FakeQuant's apply_scheme call): no codes, and
// nothing counts as clipped (FakeQuant clears the mask for these schemes).
template <class G>
__global__ void fq_affine_kernel(const float* __restrict__ x, float* __restrict__ y, uint8_t* __restrict__ clipped,
                                 uint64_t n, G g, const float* __restrict__ scales, const int* __restrict__ zps,
                                 double qmax, int rounding, uint64_t seed, FqCountSlots slots) {
  BitsCounts c;
  QS_FOR(i, n) {
    const uint64_t gi = g.group(i);
    y[i] = detail::affine_encode(x[i], scales[gi], zps[gi], qmax, rounding, seed, g.draw(i), c);
    if (clipped) clipped[i] = 0;
  }
  add_count(slots.overflow, c.overflow);
  add_count(slots.underflow, c.underflow);
  add_count(slots.nan, c.nan);
}

// Why a scheme cannot fake-quantize on the device (empty: it can).
std::string fq_unsupported(const Scheme& s, ScalingMode mode) {
  const std::string head = "scheme " + s.text + ": ";
  if (mode == ScalingMode::Delayed && (s.granularity != Granularity::Tensor || s.rule == ScaleRule::Affine))
    return head + "delayed scaling needs a /tensor scheme of a signed format";
  if (s.rule == ScaleRule::GgmlBlock) return head + "its block scales (" + to_string(s.rule) + ") are computed on the CPU only";
  if (s.rule == ScaleRule::Rounded16 && !detail::scale_grid_fits(*s.scale_format))
    return head + "block scales wider than 16 bits are rounded on the CPU only";
  if (s.mse || s.clip != Scheme::Clip::Amax) return head + "observer clips and searched scales run on the CPU only";
  if (s.block_rows > 1) return head + "2-D tiles run on the CPU only";
  if (s.granularity == Granularity::Channel) {
    const int axis = s.axis < 0 ? s.axis + 2 : s.axis;
    if (axis != 0 && axis != 1) return head + "axis " + std::to_string(s.axis) + " is out of range for a 2-d tensor";
  }
  if (s.granularity == Granularity::Block && s.block_axis != -1 && s.block_axis != 1)
    return head + "blocks along the rows' axis 0 run on the CPU only";
  return "";
}

// A /tensor scheme's scale (FakeQuant::tensor_scale): amax_scale of the current amax, or with delayed
// scaling of the largest amax in the history of earlier calls (the first call: its own); then, when
// recording, the current amax goes into the ring slot `slot` (the host counts the calls).
__global__ void fq_tensor_scale_kernel(ScaleRuleParams amax_rule, const unsigned* __restrict__ amax_bits,
                                       unsigned* __restrict__ hist, int n_hist, int slot, bool record,
                                       float* __restrict__ scales, float* tensor_scale) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  float a = __uint_as_float(amax_bits[0]);
  if (n_hist > 0) {
    a = 0.0f;
    for (int i = 0; i < n_hist; ++i) a = fmaxf(a, __uint_as_float(hist[i]));
  }
  GroupStats st;
  st.amax = a;
  const float sc = group_scale(amax_rule, st).scale;
  scales[0] = sc;
  if (tensor_scale) *tensor_scale = sc;
  if (record && hist) hist[slot] = amax_bits[0];
}

// Block scales rounded into a scale format (grid), as FakeQuant::apply on the CPU: two-level (NVFP4) under
// the fp32 tensor scale from the whole tensor's amax (total_bits), or 16-bit block scales (total_bits null).
__global__ void fq_grid_scale_kernel(ScaleRuleParams rule, const unsigned* __restrict__ amax_bits, uint64_t groups,
                                     const unsigned* __restrict__ total_bits, detail::ScaleGrid grid,
                                     float* __restrict__ scales) {
  const float ts = total_bits ? two_level_tensor_scale(rule, double(__uint_as_float(*total_bits))) : 1.0f;
  QS_FOR(k, groups) {
    GroupStats st;
    st.amax = __uint_as_float(amax_bits[k]);
    scales[k] = group_scale(rule, st, ts, grid).scale;
  }
}

// Counters of a fake quantization done on the host, added to the device's slots in stream order.
__global__ void add_host_counts_kernel(FqCountSlots slots, unsigned long long overflow, unsigned long long underflow,
                                       unsigned long long nan, unsigned long long clipped, unsigned amax, float scale,
                                       unsigned* amax_bits, float* tensor_scale) {
  atomicAdd(slots.overflow, overflow);
  atomicAdd(slots.underflow, underflow);
  atomicAdd(slots.nan, nan);
  atomicAdd(slots.clipped, clipped);
  if (amax_bits) atomicMax(amax_bits, amax);
  if (tensor_scale) *tensor_scale = scale;
}

// One FakeQuant on the device. Schemes without a device path (fq_unsupported: ggml blocks, observer clips and
// searched scales, 2-D tiles, blocks along the rows' axis, block scales wider than 16 bits) run the CPU's FakeQuant
// itself on a copy (host_): the same results by construction, at the price of a copy each way and a host
// wait per call.
class FakeQuantDev {
 public:
  explicit FakeQuantDev(Scheme s, ScalingMode mode = ScalingMode::Current, int history = 16)
      : scheme_(std::move(s)), rule_(scale_rule_params(scheme_)),
        amax_rule_(scale_rule_params(ScaleRule::Amax, scheme_.format)), delayed_(mode == ScalingMode::Delayed),
        hist_len_(std::max(history, 1)) {
    if (!fq_unsupported(scheme_, mode).empty()) {
      host_ = std::make_unique<FakeQuant>(scheme_, mode, history);
      return;
    }
    affine_ = rule_.rule == ScaleRule::Affine;
    if (affine_) return;
    base_ = make_kernel_params(scheme_.format, scheme_.options, 1.0f);
    if (rule_.rule == ScaleRule::TwoLevel || rule_.rule == ScaleRule::Rounded16)
      grid_ = std::make_unique<detail::ScaleGridBuffers>(*scheme_.scale_format);
    if (rule_.rule == ScaleRule::TwoLevel) total_.resize(1);
    thr_ = float(scheme_.format.overflow_threshold);
    if (delayed_) {
      hist_.resize(std::size_t(hist_len_));
      hist_.zero(hist_.n, nullptr);
      check(cudaStreamSynchronize(nullptr), "history");
    }
  }
  const Scheme& scheme() const { return scheme_; }
  bool has_codes() const { return host_ ? host_->has_codes() : !affine_; }

  // y = fake-quant(x) (rows x cols, device); codes, clipped optional; counters into `slots`; the whole
  // tensor's amax (float bits) into *amax_bits and, for /tensor schemes, the scale into *tensor_scale.
  // `record`: push this call's amax into the delayed-scaling history (evaluation passes do not).
  void apply(const float* x, std::size_t rows, std::size_t cols, float* y, uint16_t* codes, uint8_t* clipped,
             uint64_t seed, bool record, FqCountSlots slots, unsigned* amax_bits, float* tensor_scale, cudaStream_t s) {
    const uint64_t n = uint64_t(rows) * cols;
    if (n == 0) return;
    if (host_) {
      hx_.resize(n);
      hy_.resize(n);
      hc_.resize(codes ? n : 0);
      hk_.resize(clipped ? n : 0);
      check(cudaMemcpyAsync(hx_.data(), x, n * 4, cudaMemcpyDeviceToHost, s), "copy to host");
      check(cudaStreamSynchronize(s), "fake quantization on the host");
      const bool with_codes = codes && host_->has_codes();
      const FakeQuantResult r = host_->apply(hx_.data(), rows, cols, hy_.data(), with_codes ? hc_.data() : nullptr,
                                             clipped ? hk_.data() : nullptr, seed, record);
      check(cudaMemcpyAsync(y, hy_.data(), n * 4, cudaMemcpyHostToDevice, s), "copy to device");
      if (with_codes) check(cudaMemcpyAsync(codes, hc_.data(), n * 2, cudaMemcpyHostToDevice, s), "copy to device");
      if (clipped) check(cudaMemcpyAsync(clipped, hk_.data(), n, cudaMemcpyHostToDevice, s), "copy to device");
      const float amax = float(r.amax);
      unsigned amax_u;
      std::memcpy(&amax_u, &amax, 4);
      add_host_counts_kernel<<<1, 1, 0, s>>>(slots, r.stats.overflow, r.stats.underflow, r.stats.nan, r.clipped, amax_u,
                                             r.scale, amax_bits, tensor_scale);
      launched("fake-quant counts");
      check(cudaStreamSynchronize(s), "fake quantization on the host");  // the host buffers are reused
      return;
    }
    FqGroups g;
    g.rows = rows;
    g.cols = cols;
    uint64_t groups = 1;
    switch (scheme_.granularity) {
      case Granularity::Tensor: g.kind = GroupKind::Tensor; break;
      case Granularity::Channel:
        if ((scheme_.axis < 0 ? scheme_.axis + 2 : scheme_.axis) == 1) {
          g.kind = GroupKind::Column;
          g.column_draws = !affine_;
          groups = cols;
        } else {
          g.kind = GroupKind::Row;
          groups = rows;
        }
        break;
      case Granularity::Block:
        g.kind = GroupKind::Block;
        g.cols = cols;
        g.block = uint64_t(scheme_.block);
        g.blocks_per_row = (cols + g.block - 1) / g.block;
        groups = rows * g.blocks_per_row;
        break;
      default: g.kind = GroupKind::None; break;
    }
    scales_.resize(groups);
    if (affine_) {  // a scale and a zero point per group from its finite min and max
      lo_.resize(groups);
      hi_.resize(groups);
      zps_.resize(groups);
      detail::affine_minmax_init_kernel<<<grid_for(groups), 256, 0, s>>>(lo_.p, hi_.p, groups);
      with_groups(g, [&](auto gk) { detail::affine_minmax_kernel<<<grid_for(n), 256, 0, s>>>(x, n, gk, lo_.p, hi_.p); });
      detail::affine_scale_kernel<<<grid_for(groups), 256, 0, s>>>(rule_, lo_.p, hi_.p, groups, scales_.p, zps_.p, amax_bits);
      with_groups(g, [&](auto gk) {
        fq_affine_kernel<<<grid_for(n), 256, 0, s>>>(x, y, clipped, n, gk, scales_.p, zps_.p, scheme_.format.max_finite,
                                                     int(scheme_.options.rounding),
                                                     scheme_.options.seed + seed * 0x9e3779b97f4a7c15ULL, slots);
      });
      launched("affine fake-quant kernels");
      return;
    }
    amax_.resize(groups);
    amax_.zero(groups, s);
    const bool tensor = g.kind == GroupKind::Tensor || g.kind == GroupKind::None;
    const bool two_level = rule_.rule == ScaleRule::TwoLevel;
    if (two_level) total_.zero(1, s);
    with_groups(g, [&](auto gk) {
      fq_amax_kernel<<<grid_for(n), 256, 0, s>>>(x, n, gk, amax_.p, tensor ? nullptr : two_level ? total_.p : amax_bits);
    });
    launched("fake-quant amax kernel");
    if (two_level)
      check(cudaMemcpyAsync(amax_bits, total_.p, sizeof(unsigned), cudaMemcpyDeviceToDevice, s), "copy amax");
    if (tensor)
      check(cudaMemcpyAsync(amax_bits, amax_.p, sizeof(unsigned), cudaMemcpyDeviceToDevice, s), "copy amax");
    if (g.kind == GroupKind::Tensor) {  // amax_scale, as FakeQuant::tensor_scale (current or delayed)
      fq_tensor_scale_kernel<<<1, 32, 0, s>>>(amax_rule_, amax_.p, delayed_ ? hist_.p : nullptr,
                                              delayed_ ? int(std::min<uint64_t>(calls_, uint64_t(hist_len_))) : 0,
                                              int(calls_ % uint64_t(hist_len_)), delayed_ && record, scales_.p,
                                              tensor_scale);
      if (delayed_ && record) ++calls_;
    } else if (grid_) {
      fq_grid_scale_kernel<<<grid_for(groups), 256, 0, s>>>(rule_, amax_.p, groups, two_level ? total_.p : nullptr,
                                                            grid_->grid(), scales_.p);
    } else {
      fq_scale_kernel<<<grid_for(groups), 256, 0, s>>>(rule_, amax_.p, groups, scales_.p, tensor ? tensor_scale : nullptr);
    }
    launched("fake-quant scale kernel");
    KernelParams p = base_;
    p.seed = scheme_.options.seed + seed * 0x9e3779b97f4a7c15ULL;
    with_groups(g, [&](auto gk) {
      fq_quant_kernel<<<grid_for(n), 256, 0, s>>>(p, x, y, codes, clipped, n, gk, scales_.p, thr_, slots);
    });
    launched("fake-quant kernel");
  }

 private:
  Scheme scheme_;
  ScaleRuleParams rule_, amax_rule_;
  KernelParams base_;
  float thr_ = 0;
  bool delayed_ = false;
  int hist_len_ = 16;
  uint64_t calls_ = 0;  // recorded calls: the history holds min(calls_, hist_len_) amaxes
  bool affine_ = false;  // unsigned integers: scale and zero point per group (lo_, hi_, zps_)
  DVec<unsigned> amax_, hist_, total_;
  DVec<int> lo_, hi_, zps_;
  std::unique_ptr<detail::ScaleGridBuffers> grid_;  // TwoLevel: the block-scale format's grid
  DVec<float> scales_;
  std::unique_ptr<FakeQuant> host_;
  std::vector<float> hx_, hy_;
  std::vector<uint16_t> hc_;
  std::vector<uint8_t> hk_;
};

// ---- optimizers -------------------------------------------------------------------------------------------

__global__ void sgd_kernel(float* __restrict__ w, const float* __restrict__ g, float* __restrict__ v, uint64_t n, float lr,
                           float mom, float wd, LayerCounts* c) {
  unsigned long long upd = 0, bad = 0;
  QS_FOR(i, n) {
    const float gi = g[i];
    if (!(fabsf(gi) <= FLT_MAX)) {
      ++bad;
      continue;
    }
    upd += gi != 0.0f;
    const float vi = __fadd_rn(__fmul_rn(mom, v[i]), __fadd_rn(gi, __fmul_rn(wd, w[i])));
    v[i] = vi;
    w[i] = __fsub_rn(w[i], __fmul_rn(lr, vi));
  }
  if (c) {
    add_count(&c->updates, upd);
    add_count(&c->nonfinite, bad);
  }
}

__global__ void adam_kernel(float* __restrict__ w, const float* __restrict__ g, float* __restrict__ m, float* __restrict__ v,
                            uint64_t n, float lr, float b1, float b2, float eps, float wd, float c1, float c2,
                            LayerCounts* c) {
  unsigned long long upd = 0, bad = 0;
  const float one_b1 = __fsub_rn(1.0f, b1), one_b2 = __fsub_rn(1.0f, b2);
  QS_FOR(i, n) {
    const float gr = g[i];
    if (!(fabsf(gr) <= FLT_MAX)) {
      ++bad;
      continue;
    }
    upd += gr != 0.0f;
    const float gi = __fadd_rn(gr, __fmul_rn(wd, w[i]));
    const float mi = __fadd_rn(__fmul_rn(b1, m[i]), __fmul_rn(one_b1, gi));
    const float vi = __fadd_rn(__fmul_rn(b2, v[i]), __fmul_rn(__fmul_rn(one_b2, gi), gi));
    m[i] = mi;
    v[i] = vi;
    const float step = __fdiv_rn(__fmul_rn(lr, __fmul_rn(mi, c1)), __fadd_rn(__fsqrt_rn(__fmul_rn(vi, c2)), eps));
    w[i] = __fsub_rn(w[i], step);
  }
  if (c) {
    add_count(&c->updates, upd);
    add_count(&c->nonfinite, bad);
  }
}

// GridOptim::index_of on the device: the same branch-free search and tie rule.
__device__ uint32_t grid_index(const float* __restrict__ grid, uint32_t n, float v) {
  if (isnan(v)) v = 0.0f;
  uint32_t lo = 0, len = n;
  while (len > 1) {
    const uint32_t half = len / 2;
    lo = grid[lo + half - 1] < v ? lo + half : lo;
    len -= half;
  }
  if (grid[lo] < v) return n - 1;
  if (lo == 0 || grid[lo] == v) return lo;
  const float up = __fsub_rn(grid[lo], v), down = __fsub_rn(v, grid[lo - 1]);
  if (up < down) return lo;
  if (down < up) return lo - 1;
  return fabsf(grid[lo]) < fabsf(grid[lo - 1]) ? lo : lo - 1;
}

// GridOptim::step_range, element by element, in the CPU's double arithmetic.
__global__ void grid_kernel(float* __restrict__ master, const float* __restrict__ g, float* __restrict__ model,
                            float* __restrict__ v, uint16_t* __restrict__ hint, uint64_t n, const float* __restrict__ grid,
                            uint32_t gn, uint32_t key, double mom, double wd, double clip, double scale, LayerCounts* c) {
  unsigned long long flips = 0, stalls = 0, upd = 0, clamped = 0, bad = 0;
  const long long top = (long long)gn - 1;
  QS_FOR(i, n) {
    const float gi = g[i];
    if (!(fabsf(gi) <= FLT_MAX)) {
      ++bad;
      continue;
    }
    const float w = master[i];
    uint32_t k = hint[i];
    if (!(grid[k] == w)) k = grid_index(grid, gn, w);
    const float old = model ? model[i] : grid[k];
    const double decay_w = isfinite(w) ? double(w) : double(grid[k]);
    float vi = __double2float_rn(__dadd_rn(__dmul_rn(mom, double(v[i])), __dadd_rn(double(gi), __dmul_rn(wd, decay_w))));
    if (!isfinite(vi)) vi = 0.0f;
    v[i] = vi;
    double r = __dmul_rn(double(vi), scale);
    r = r < -clip ? -clip : (clip < r ? clip : r);
    long long move = 0;
    if (r != 0.0) {
      const double u = __dmul_rn(double(stochastic_mix(key, uint32_t(i)) >> 8), 0x1p-24);
      const double t = __dadd_rn(r, u);
      move = (long long)t;
      move -= double(move) > t;
    }
    long long nk = (long long)k - move;
    if (nk < 0 || nk > top) {
      ++clamped;
      nk = nk < 0 ? 0 : top;
    }
    const float nv = grid[nk];
    master[i] = nv;
    if (model) model[i] = nv;
    hint[i] = uint16_t(nk);
    const bool flipped = nv != old;
    flips += flipped;
    if (gi != 0.0f) {
      ++upd;
      stalls += !flipped;
    }
  }
  if (c) {
    add_count(&c->flips, flips);
    add_count(&c->stalls, stalls);
    add_count(&c->updates, upd);
    add_count(&c->clamped, clamped);
    add_count(&c->nonfinite, bad);
  }
}

// The optimizer's per-slot state on the device and its step (the CPU classes' rules and seeds).
class OptimDev {
 public:
  OptimDev(OptimizerKind kind, double lr, double momentum, double wd, const GridOptimConfig& gcfg)
      : kind_(kind), lr_(lr), mom_(momentum), wd_(wd), gcfg_(gcfg) {
    if (kind_ == OptimizerKind::Grid) {
      GridOptim host(gcfg_);  // the grid, its codes, and the configuration checks
      grid_.upload(host.grid().data(), host.grid().size(), nullptr);
      codes_.upload(host.grid_codes().data(), host.grid_codes().size(), nullptr);
      grid_n_ = uint32_t(host.grid().size());
      check(cudaStreamSynchronize(nullptr), "upload");
    }
  }
  void begin_step() { ++t_; }
  const uint32_t* grid_codes() const { return codes_.p; }
  const uint16_t* hint(std::size_t slot) const { return slot < st_.size() ? st_[slot].hint.p : nullptr; }

  void step(std::size_t slot, float* master, const float* grad, float* model, std::size_t n, LayerCounts* c,
            cudaStream_t s) {
    if (slot >= st_.size()) st_.resize(slot + 1);
    State& S = st_[slot];
    if (S.n == 0) {
      S.n = n;
      S.a.resize(n);
      S.a.zero(n, s);
      if (kind_ == OptimizerKind::Adam) {
        S.b.resize(n);
        S.b.zero(n, s);
      }
      if (kind_ == OptimizerKind::Grid) {
        S.hint.resize(n);
        S.hint.zero(n, s);
      }
    }
    if (S.n != n) throw std::invalid_argument("optimizer: parameter slot " + std::to_string(slot) + " changed size");
    switch (kind_) {
      case OptimizerKind::Sgd:
        sgd_kernel<<<grid_for(n), 256, 0, s>>>(master, grad, S.a.p, n, float(lr_), float(mom_), float(wd_), c);
        break;
      case OptimizerKind::Adam: {
        const double b1 = double(0.9f), b2 = double(0.999f);  // the CPU keeps its betas as float
        const uint64_t t = std::max<uint64_t>(t_, 1);
        const float c1 = float(1.0 / (1.0 - std::pow(b1, double(t))));
        const float c2 = float(1.0 / (1.0 - std::pow(b2, double(t))));
        adam_kernel<<<grid_for(n), 256, 0, s>>>(master, grad, S.a.p, S.b.p, n, float(lr_), 0.9f, 0.999f, 1e-8f,
                                                float(wd_), c1, c2, c);
        break;
      }
      case OptimizerKind::Grid: {
        const uint64_t key64 = mix64(gcfg_.seed ^ mix64(t_ * 0x9e3779b97f4a7c15ULL + slot + 1));
        // stochastic_bits(key64, i) for i < 2^32 is stochastic_mix(stochastic_key(key64, 0), i).
        const uint32_t key = stochastic_key(key64, 0);
        grid_kernel<<<grid_for(n), 256, 0, s>>>(master, grad, model, S.a.p, S.hint.p, n, grid_.p, grid_n_, key,
                                                gcfg_.momentum, gcfg_.weight_decay, gcfg_.rung_clip, gcfg_.scale, c);
        break;
      }
    }
    launched("optimizer kernel");
  }

 private:
  struct State {
    std::size_t n = 0;
    DVec<float> a, b;      // sgd: v; adam: m, v; grid: v
    DVec<uint16_t> hint;   // grid
  };
  OptimizerKind kind_;
  double lr_, mom_, wd_;
  GridOptimConfig gcfg_;
  uint64_t t_ = 0;
  std::vector<State> st_;
  DVec<float> grid_;
  DVec<uint32_t> codes_;
  uint32_t grid_n_ = 0;
};

void require_device() {
  const DeviceInfo& d = device_info();
  if (!d.available) throw std::runtime_error(d.message);
}

}  // namespace

// ---- the int8 layer ----------------------------------------------------------------------------------------

struct Int8LinearCuda::Impl {
  int in = 0, out = 0;
  Int8LinearConfig cfg;
  int rows = 0;
  DVec<float> W, b, dW, db, sw, sx;
  DVec<int8_t> wq, xq;
  DVec<unsigned> scratch{1};
};

Int8LinearCuda::Int8LinearCuda(int in, int out, uint64_t seed, Int8LinearConfig cfg) {
  if (in < 1 || in > 65536 || out < 1 || out > 65536)
    throw std::invalid_argument("int8 linear: sizes must be in 1..65536 (got " + std::to_string(in) + " x " +
                                std::to_string(out) + ")");
  require_device();
  p_ = std::make_unique<Impl>();
  p_->in = in;
  p_->out = out;
  p_->cfg = cfg;
  const std::size_t n = std::size_t(in) * std::size_t(out);
  std::vector<float> W(n), b(std::size_t(out), 0.0f);
  int8_linear_init(in, out, seed, W.data(), b.data());
  p_->W.resize(n);
  p_->dW.resize(n);
  p_->wq.resize(n);
  p_->b.resize(std::size_t(out));
  p_->db.resize(std::size_t(out));
  p_->sw.resize(cfg.w_per_channel ? std::size_t(out) : 1);
  set_parameters(W.data(), b.data());
}

Int8LinearCuda::~Int8LinearCuda() = default;
Int8LinearCuda::Int8LinearCuda(Int8LinearCuda&&) noexcept = default;
Int8LinearCuda& Int8LinearCuda::operator=(Int8LinearCuda&&) noexcept = default;
int Int8LinearCuda::in() const { return p_->in; }
int Int8LinearCuda::out() const { return p_->out; }
float* Int8LinearCuda::W_device() { return p_->W.p; }
float* Int8LinearCuda::b_device() { return p_->b.p; }
const float* Int8LinearCuda::dW_device() const { return p_->dW.p; }
const float* Int8LinearCuda::db_device() const { return p_->db.p; }
const int8_t* Int8LinearCuda::wq_device() const { return p_->wq.p; }

void Int8LinearCuda::set_parameters(const float* W, const float* b) {
  p_->W.upload(W, std::size_t(p_->in) * std::size_t(p_->out), nullptr);
  p_->b.upload(b, std::size_t(p_->out), nullptr);
  check(cudaStreamSynchronize(nullptr), "set parameters");
}

void Int8LinearCuda::quantize_weights_device(void* stream) {
  quantize_int8_device(p_->W.p, nullptr, std::size_t(p_->out), std::size_t(p_->in), p_->cfg.w_per_channel, p_->wq.p, p_->sw.p,
                       p_->scratch.p, stream);
}

void Int8LinearCuda::forward_device(const float* x, int rows, float* y, void* stream) {
  if (rows < 1) throw std::invalid_argument("int8 linear: rows must be >= 1");
  Impl& P = *p_;
  P.xq.resize(std::size_t(rows) * std::size_t(P.in));
  P.sx.resize(P.cfg.x_per_row ? std::size_t(rows) : 1);
  quantize_int8_device(x, nullptr, std::size_t(rows), std::size_t(P.in), P.cfg.x_per_row, P.xq.p, P.sx.p, P.scratch.p, stream);
  GemmEpilogueDev ep;
  ep.scale_a = P.sx.p;
  ep.scale_a_per_row = P.cfg.x_per_row;
  ep.scale_b = P.sw.p;
  ep.scale_b_per_col = P.cfg.w_per_channel;
  ep.bias = P.b.p;
  gemm_int8_device(P.xq.p, P.wq.p, rows, P.in, P.out, ep, GemmOut::F32, y, GemmKernel::Auto, stream);
  P.rows = rows;
}

void Int8LinearCuda::backward_device(const float* dy, float* dx, void* stream) {
  Impl& P = *p_;
  if (P.rows < 1) throw std::logic_error("int8 linear: backward needs a forward first");
  LinearBackwardArgs a;
  a.dY = dy;
  a.type = GradType::F32;
  a.Xq = P.xq.p;
  a.s_x = P.sx.p;
  a.s_x_per_row = P.cfg.x_per_row;
  a.Wq = P.wq.p;
  a.s_w = P.sw.p;
  a.s_w_per_row = P.cfg.w_per_channel;
  a.M = P.rows;
  a.N = P.out;
  a.K = P.in;
  a.dX = dx;
  a.dW = P.dW.p;
  a.db = P.db.p;
  linear_backward_device(a, stream);
}

void Int8LinearCuda::forward(const float* x, int rows, float* y) {
  if (rows < 1) throw std::invalid_argument("int8 linear: rows must be >= 1");
  DVec<float> dx, dy;
  dx.upload(x, std::size_t(rows) * std::size_t(p_->in), nullptr);
  dy.resize(std::size_t(rows) * std::size_t(p_->out));
  quantize_weights_device(nullptr);
  forward_device(dx.p, rows, dy.p, nullptr);
  dy.download(y, std::size_t(rows) * std::size_t(p_->out), nullptr);
  check(cudaStreamSynchronize(nullptr), "int8 linear forward");
}

void Int8LinearCuda::backward(const float* dy, float* dx) {
  if (p_->rows < 1) throw std::logic_error("int8 linear: backward needs a forward first");
  const std::size_t R = std::size_t(p_->rows);
  DVec<float> ddy, ddx;
  ddy.upload(dy, R * std::size_t(p_->out), nullptr);
  if (dx) ddx.resize(R * std::size_t(p_->in));
  backward_device(ddy.p, dx ? ddx.p : nullptr, nullptr);
  if (dx) ddx.download(dx, R * std::size_t(p_->in), nullptr);
  check(cudaStreamSynchronize(nullptr), "int8 linear backward");
}

void Int8LinearCuda::parameters(float* W, float* b) const {
  if (W) p_->W.download(W, std::size_t(p_->in) * std::size_t(p_->out), nullptr);
  if (b) p_->b.download(b, std::size_t(p_->out), nullptr);
  check(cudaStreamSynchronize(nullptr), "download");
}

void Int8LinearCuda::gradients(float* dW, float* db) const {
  if (dW) p_->dW.download(dW, std::size_t(p_->in) * std::size_t(p_->out), nullptr);
  if (db) p_->db.download(db, std::size_t(p_->out), nullptr);
  check(cudaStreamSynchronize(nullptr), "download");
}

void Int8LinearCuda::context(std::vector<int8_t>& xq, std::vector<float>& sx, std::vector<int8_t>& wq,
                             std::vector<float>& sw) const {
  const Impl& P = *p_;
  const std::size_t R = std::size_t(P.rows);
  xq.resize(R * std::size_t(P.in));
  sx.resize(P.cfg.x_per_row ? R : 1);
  wq.resize(std::size_t(P.in) * std::size_t(P.out));
  sw.resize(P.cfg.w_per_channel ? std::size_t(P.out) : 1);
  if (R) {
    P.xq.download(xq.data(), xq.size(), nullptr);
    P.sx.download(sx.data(), sx.size(), nullptr);
  }
  P.wq.download(wq.data(), wq.size(), nullptr);
  P.sw.download(sw.data(), sw.size(), nullptr);
  check(cudaStreamSynchronize(nullptr), "download");
}

// ---- the MLP on the device ---------------------------------------------------------------------------------

namespace {

struct DevLayer {
  int in = 0, out = 0;
  DVec<float> W, b, Wq, dW, db, old_w;   // Wq: fake-quant or grid weights; old_w: float bits before a step
  DVec<uint16_t> codes, old_codes;
  DVec<uint8_t> clipped;
  DVec<int8_t> old_q;                   // int8 layers: codes before a step
  std::unique_ptr<Int8LinearCuda> q8;   // int8 layers
  std::unique_ptr<FakeQuantDev> wq, aq;
  DVec<float> act, actq;                // act: input of this layer (l >= 1), actq: its fake quantization
  DVec<uint8_t> aclip;
  const float* forward_weights() const { return Wq.n ? Wq.p : W.p; }
};

class DeviceMlp {
 public:
  DeviceMlp(const TrainConfig& cfg, const Dataset& train, const Dataset& test) : cfg_(cfg) {
    check(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking), "stream");
    const int L = int(cfg.sizes.size()) - 1;
    Mlp host(cfg.sizes, cfg.seed, 1);  // the CPU lab's initial weights
    const double lr = cfg.effective_lr(), wd = cfg.effective_weight_decay();
    GridOptimConfig g;
    if (cfg.optimizer == OptimizerKind::Grid) {
      g.format = cfg.weight_format_name();
      g.scale = lr;
      g.momentum = cfg.momentum;
      g.weight_decay = wd;
      g.rung_clip = cfg.rung_clip;
      g.seed = cfg.seed;
    }
    opt_ = std::make_unique<OptimDev>(cfg.optimizer, lr, cfg.momentum, wd, g);
    std::unique_ptr<GridOptim> grid_host;
    if (cfg.optimizer == OptimizerKind::Grid) grid_host = std::make_unique<GridOptim>(g);
    layers_.resize(std::size_t(L));
    for (int l = 0; l < L; ++l) {
      DevLayer& D = layers_[std::size_t(l)];
      MlpLayer& H = host.layer(l);
      D.in = H.in;
      D.out = H.out;
      const std::size_t n = H.W.size();
      if (cfg.int8) {
        Int8LinearConfig ic;
        ic.x_per_row = cfg.int8_x_per_row;
        ic.w_per_channel = !cfg.int8_w_per_tensor;
        D.q8 = std::make_unique<Int8LinearCuda>(H.in, H.out, mix64(cfg.seed * 0x9e3779b97f4a7c15ULL + l + 1), ic);
        D.old_q.resize(n);
      } else {
        if (grid_host) {
          std::vector<float> wq(n);
          grid_host->project(H.W.data(), n, wq.data());
          grid_host->project(H.b.data(), H.b.size(), H.b.data());
          D.Wq.upload(wq.data(), n, s_);
        }
        D.W.upload(H.W.data(), n, s_);
        D.b.upload(H.b.data(), H.b.size(), s_);
        D.dW.resize(n);
        D.db.resize(H.b.size());
        D.old_w.resize(n);
        if (!cfg.weights.empty() && cfg.optimizer != OptimizerKind::Grid) {
          D.wq = std::make_unique<FakeQuantDev>(parse_scheme(cfg.weights, quant_options()), cfg.scaling, cfg.history);
          D.Wq.resize(n);
          D.codes.resize(n);
          D.old_codes.resize(n);
          D.clipped.resize(n);
        }
        if (!cfg.acts.empty())
          D.aq = std::make_unique<FakeQuantDev>(parse_scheme(cfg.acts, quant_options()), cfg.scaling, cfg.history);
      }
    }
    counts_.resize(std::size_t(L));
    check(cudaMalloc(&step_, sizeof(StepStats)), "cudaMalloc");
    upload_data(train, train_px_, train_lb_);
    upload_data(test, test_px_, test_lb_);
    features_ = train.features();
    check(cudaDeviceSynchronize(), "upload");  // the uploads ran on this stream and the legacy one
  }
  ~DeviceMlp() {
    if (step_) cudaFree(step_);
    if (s_) cudaStreamDestroy(s_);
  }

  int layers() const { return int(layers_.size()); }
  const DevLayer& layer(int l) const { return layers_[std::size_t(l)]; }
  bool quantizes_weights() const { return !cfg_.weights.empty() && cfg_.optimizer != OptimizerKind::Grid; }
  cudaStream_t stream() const { return s_; }

  // Quantizes every layer's weights (fake quantization or the int8 codes) into the per-step counters.
  void quantize_weights(uint64_t seed) {
    for (int l = 0; l < layers(); ++l) {
      DevLayer& D = layers_[std::size_t(l)];
      LayerCounts* c = counts_.p + l;
      if (D.q8) D.q8->quantize_weights_device(s_);
      else if (D.wq)
        D.wq->apply(D.W.p, std::size_t(D.out), std::size_t(D.in), D.Wq.p, D.codes.p, D.clipped.p, mix64(seed * 131 + l + 7), true,
                    {&c->w_overflow, &c->w_underflow, &c->w_nan, &c->w_clipped}, &c->w_amax_bits, &c->w_scale, s_);
    }
  }

  void begin_counts() { counts_.zero(counts_.n, s_); }

  // Forward of n rows already in x_ / y_ (device); returns the logits. `train`: keep what backward needs.
  // `record`: training passes push their activation amaxes into the delayed histories; evaluation does not.
  const float* forward(int n, uint64_t seed, bool record) {
    ensure(n);
    const int L = layers();
    for (int l = 0; l < L; ++l) {
      DevLayer& D = layers_[std::size_t(l)];
      const float* pre = l == 0 ? x_.p : D.act.p;
      const float* in = pre;
      LayerCounts* c = counts_.p + l;
      if (D.aq) {
        D.aq->apply(pre, std::size_t(n), std::size_t(D.in), D.actq.p, nullptr, D.aclip.p, mix64(seed * 977 + l + 3), record,
                    {&c->a_overflow, &c->a_underflow, &c->a_nan, &c->a_clipped}, &c->a_amax_bits, &c->a_scale, s_);
        in = D.actq.p;
      }
      in_[std::size_t(l)] = in;
      pre_[std::size_t(l)] = pre;
      const bool last = l + 1 == L;
      float* out = last ? logits_.p : layers_[std::size_t(l) + 1].act.p;
      if (D.q8) {
        D.q8->forward_device(in, n, out, s_);
        if (!last) bias_relu_kernel<<<grid_for(std::size_t(n) * D.out), 256, 0, s_>>>(out, nullptr, n, D.out, false, true);
      } else {
        repro_gemm(false, true, n, D.out, D.in, in, D.in, D.forward_weights(), D.in, out, D.out, s_);
        bias_relu_kernel<<<grid_for(std::size_t(n) * D.out), 256, 0, s_>>>(out, D.b.p, n, D.out, true, !last);
      }
      launched("bias / ReLU kernel");
    }
    return logits_.p;
  }

  // Loss, backward and gradients for the n rows of the last forward (labels in y_).
  void backward(int n) {
    const int L = layers(), C = layers_.back().out;
    softmax_ce_kernel<<<(n + 127) / 128, 128, 0, s_>>>(logits_.p, y_.p, n, C, 1.0f / float(n), dz_.p, row_loss_.p,
                                                      &step_->hits);
    launched("softmax kernel");
    sum_rows_kernel<<<1, 256, 0, s_>>>(row_loss_.p, n, &step_->loss);
    launched("loss kernel");
    for (int li = L - 1; li >= 0; --li) {
      DevLayer& D = layers_[std::size_t(li)];
      float* dprev = li > 0 ? dprev_.p : nullptr;
      if (D.q8) {
        D.q8->backward_device(dz_.p, dprev, s_);
      } else {
        repro_gemm(true, false, D.out, D.in, n, dz_.p, D.out, in_[std::size_t(li)], D.in, D.dW.p, D.in, s_);
        colsum_kernel<<<(D.out + 127) / 128, 128, 0, s_>>>(dz_.p, n, D.out, D.db.p);
        launched("column sums");
        if (D.wq && cfg_.ste_zero_clipped) {
          zero_where_kernel<<<grid_for(D.W.n), 256, 0, s_>>>(D.dW.p, D.clipped.p, std::size_t(D.out) * D.in);
          launched("STE mask");
        }
        if (dprev) repro_gemm(false, false, n, D.in, D.out, dz_.p, D.out, D.forward_weights(), D.in, dprev, D.in, s_);
      }
      if (dprev) {
        const uint8_t* clip = (D.aq && cfg_.ste_zero_clipped) ? D.aclip.p : nullptr;
        relu_mask_kernel<<<grid_for(std::size_t(n) * D.in), 256, 0, s_>>>(dprev, pre_[std::size_t(li)], clip,
                                                                           std::size_t(n) * D.in);
        launched("ReLU mask");
        std::swap(dz_, dprev_);
      }
    }
  }

  // Optimizer step of every parameter, then the weights of the next step, then flips and bit-stalls.
  void update(uint64_t step_seed, bool hist) {
    const int L = layers();
    const bool grid = cfg_.optimizer == OptimizerKind::Grid;
    for (int l = 0; l < L; ++l) {  // remember what the step starts from
      DevLayer& D = layers_[std::size_t(l)];
      const std::size_t n = std::size_t(D.in) * D.out;
      if (D.q8) check(cudaMemcpyAsync(D.old_q.p, D.q8->wq_device(), n, cudaMemcpyDeviceToDevice, s_), "copy");
      else if (D.wq && D.wq->has_codes()) check(cudaMemcpyAsync(D.old_codes.p, D.codes.p, n * 2, cudaMemcpyDeviceToDevice, s_), "copy");
      else if (D.wq) check(cudaMemcpyAsync(D.old_w.p, D.Wq.p, n * 4, cudaMemcpyDeviceToDevice, s_), "copy");  // no codes: float bits
      else if (!grid) check(cudaMemcpyAsync(D.old_w.p, D.W.p, n * 4, cudaMemcpyDeviceToDevice, s_), "copy");
    }
    opt_->begin_step();
    for (int l = 0; l < L; ++l) {
      DevLayer& D = layers_[std::size_t(l)];
      const std::size_t n = std::size_t(D.in) * D.out;
      float* W = D.q8 ? D.q8->W_device() : D.W.p;
      float* b = D.q8 ? D.q8->b_device() : D.b.p;
      const float* dW = D.q8 ? D.q8->dW_device() : D.dW.p;
      const float* db = D.q8 ? D.q8->db_device() : D.db.p;
      opt_->step(std::size_t(2 * l), W, dW, grid ? D.Wq.p : nullptr, n, counts_.p + l, s_);
      opt_->step(std::size_t(2 * l + 1), b, db, nullptr, std::size_t(D.out), nullptr, s_);
    }
    if (quantizes_weights() || cfg_.int8) quantize_weights(step_seed);
    for (int l = 0; l < L; ++l) {
      DevLayer& D = layers_[std::size_t(l)];
      const std::size_t n = std::size_t(D.in) * D.out;
      LayerCounts* c = counts_.p + l;
      const float* dW = D.q8 ? D.q8->dW_device() : D.dW.p;
      if (D.q8) count_changes_kernel<int8_t><<<grid_for(n), 256, 0, s_>>>(D.old_q.p, D.q8->wq_device(), dW, n, c);
      else if (D.wq && D.wq->has_codes())
        count_changes_kernel<uint16_t><<<grid_for(n), 256, 0, s_>>>(D.old_codes.p, D.codes.p, dW, n, c);
      else if (D.wq)
        count_changes_kernel<uint32_t><<<grid_for(n), 256, 0, s_>>>(reinterpret_cast<const uint32_t*>(D.old_w.p),
                                                                   reinterpret_cast<const uint32_t*>(D.Wq.p), dW, n, c);
      else if (!grid)
        count_changes_kernel<uint32_t><<<grid_for(n), 256, 0, s_>>>(reinterpret_cast<const uint32_t*>(D.old_w.p),
                                                                   reinterpret_cast<const uint32_t*>(D.W.p), dW, n, c);
      launched("count kernel");
    }
    if (hist) histograms();
  }

  void histograms() {
    const bool grid = cfg_.optimizer == OptimizerKind::Grid;
    if (!grid && !quantizes_weights() && !cfg_.int8) return;
    // Schemes without codes (unsigned affine integers...): no histograms, as the CPU lab (Trainer::run).
    if (!grid && !cfg_.int8 && !(layers_.front().wq && layers_.front().wq->has_codes())) return;
    const Format f = parse_format(cfg_.weight_format_name());
    const std::size_t bins = f.code_count();
    hist_.resize(bins * layers_.size());
    hist_.zero(bins * layers_.size(), s_);
    for (int l = 0; l < layers(); ++l) {
      const DevLayer& D = layers_[std::size_t(l)];
      const std::size_t n = std::size_t(D.in) * D.out;
      unsigned* h = hist_.p + bins * std::size_t(l);
      if (grid) grid_histogram_kernel<<<grid_for(n), 256, 0, s_>>>(opt_->hint(std::size_t(2 * l)), n, opt_->grid_codes(), h);
      else if (D.q8) histogram_kernel<int8_t><<<grid_for(n), 256, 0, s_>>>(D.q8->wq_device(), n, 0xffu, h);
      else histogram_kernel<uint16_t><<<grid_for(n), 256, 0, s_>>>(D.codes.p, n, 0xffffu, h);
      launched("histogram kernel");
    }
    hist_ready_ = true;
  }

  // Waits for the step and returns its loss, hits and per-layer counters (histograms when made).
  struct StepOut {
    double loss = 0;
    unsigned hits = 0;
  };
  StepOut finish(std::vector<LayerCounts>& counts, std::vector<std::vector<uint32_t>>* hist) {
    StepStats h{};
    check(cudaMemcpyAsync(&h, step_, sizeof h, cudaMemcpyDeviceToHost, s_), "copy step");
    counts.resize(layers_.size());
    counts_.download(counts.data(), counts.size(), s_);
    std::vector<unsigned> hv;
    if (hist_ready_) {
      hv.resize(hist_.n);
      hist_.download(hv.data(), hv.size(), s_);
    }
    check(cudaStreamSynchronize(s_), "training step");
    if (hist_ready_ && hist) {
      const std::size_t bins = hv.size() / layers_.size();
      hist->assign(layers_.size(), {});
      for (std::size_t l = 0; l < layers_.size(); ++l)
        (*hist)[l].assign(hv.begin() + std::ptrdiff_t(l * bins), hv.begin() + std::ptrdiff_t((l + 1) * bins));
    }
    hist_ready_ = false;
    return {h.loss, h.hits};
  }

  // One training step's data: rows idx[0..n) of the training set.
  void gather_train(const uint32_t* idx_dev, int n) { gather(train_px_, train_lb_, idx_dev, n); }

  void reset_step() {
    check(cudaMemsetAsync(step_, 0, sizeof(StepStats), s_), "memset");
    begin_counts();
  }

  double accuracy_test(int chunk, std::size_t test_rows) {
    chunk = std::max(chunk, 1);
    DVec<uint32_t> idx(test_rows);
    std::vector<uint32_t> h(test_rows);
    for (std::size_t i = 0; i < test_rows; ++i) h[i] = uint32_t(i);
    idx.upload(h.data(), test_rows, s_);
    check(cudaMemsetAsync(step_, 0, sizeof(StepStats), s_), "memset");
    for (std::size_t first = 0; first < test_rows; first += std::size_t(chunk)) {
      const int n = int(std::min<std::size_t>(std::size_t(chunk), test_rows - first));
      gather(test_px_, test_lb_, idx.p + first, n);
      const float* z = forward(n, first, false);
      argmax_hits_kernel<<<(n + 127) / 128, 128, 0, s_>>>(z, y_.p, n, layers_.back().out, &step_->hits);
      launched("argmax kernel");
    }
    StepStats st{};
    check(cudaMemcpyAsync(&st, step_, sizeof st, cudaMemcpyDeviceToHost, s_), "copy");
    check(cudaStreamSynchronize(s_), "evaluation");
    return double(st.hits) / double(test_rows);
  }

  void download(std::vector<MlpLayer>& out) const {
    out.clear();
    for (const DevLayer& D : layers_) {
      MlpLayer H;
      H.in = D.in;
      H.out = D.out;
      const std::size_t n = std::size_t(D.in) * D.out;
      H.W.resize(n);
      H.b.resize(std::size_t(D.out));
      if (D.q8) D.q8->parameters(H.W.data(), H.b.data());
      else {
        D.W.download(H.W.data(), n, s_);
        D.b.download(H.b.data(), H.b.size(), s_);
        if (D.Wq.n) {
          H.Wq.resize(n);
          D.Wq.download(H.Wq.data(), n, s_);
        }
      }
      check(cudaStreamSynchronize(s_), "download");
      out.push_back(std::move(H));
    }
  }

  DVec<uint32_t> perm;  // the epoch's order, on the device

 private:
  struct StepStats {
    double loss;
    unsigned hits;
  };

  EncodeOptions quant_options() const {
    EncodeOptions o;
    o.rounding = cfg_.rounding;
    o.overflow = cfg_.overflow;
    o.seed = cfg_.seed;
    return o;
  }

  static void upload_data(const Dataset& d, DVec<uint8_t>& px, DVec<uint8_t>& lb) {
    px.upload(d.pixels.data(), d.pixels.size(), nullptr);
    lb.upload(d.labels.data(), d.labels.size(), nullptr);
  }

  void gather(const DVec<uint8_t>& px, const DVec<uint8_t>& lb, const uint32_t* idx, int n) {
    ensure(n);
    gather_kernel<<<grid_for(std::size_t(n) * features_), 256, 0, s_>>>(px.p, lb.p, idx, n, features_, x_.p, y_.p);
    launched("gather kernel");
  }

  void ensure(int n) {
    if (n <= cap_) return;
    const std::size_t B = std::size_t(n);
    int widest = 0;
    for (std::size_t l = 0; l < layers_.size(); ++l) {
      DevLayer& D = layers_[l];
      if (l > 0) D.act.resize(B * std::size_t(D.in));
      if (D.aq) {
        D.actq.resize(B * std::size_t(D.in));
        D.aclip.resize(B * std::size_t(D.in));
      }
      widest = std::max({widest, D.in, D.out});
    }
    x_.resize(B * std::size_t(features_));
    y_.resize(B);
    logits_.resize(B * std::size_t(layers_.back().out));
    dz_.resize(B * std::size_t(widest));
    dprev_.resize(B * std::size_t(widest));
    row_loss_.resize(B);
    in_.assign(layers_.size(), nullptr);
    pre_.assign(layers_.size(), nullptr);
    cap_ = n;
  }

  TrainConfig cfg_;
  cudaStream_t s_ = nullptr;
  std::unique_ptr<OptimDev> opt_;
  std::vector<DevLayer> layers_;
  DVec<LayerCounts> counts_;
  DVec<uint8_t> train_px_, train_lb_, test_px_, test_lb_;
  int features_ = 0, cap_ = 0;
  DVec<float> x_, logits_, dz_, dprev_;
  DVec<int> y_;
  DVec<double> row_loss_;
  DVec<unsigned> hist_;
  bool hist_ready_ = false;
  std::vector<const float*> in_, pre_;
  StepStats* step_ = nullptr;
};


}  // namespace

std::string training_unsupported(const TrainConfig& cfg) {
  validate(cfg);
  const DeviceInfo& d = device_info();
  if (!d.available) return d.message;
  if (cfg.optimizer == OptimizerKind::Grid) {
    const Format f = parse_format(cfg.weight_format_name());
    if (f.code_count() > 65536) return "GPU training: the grid format " + f.name + " has more than 65536 codes";
  }
  return "";
}

std::string training_host_work(const TrainConfig& cfg) {
  std::string out;
  auto add = [&](const char* what, const std::string& text) {
    if (text.empty()) return;
    const Scheme s = parse_scheme(text);
    if (fq_unsupported(s, cfg.scaling).empty()) return;
    out += std::string(out.empty() ? "" : "; ") + what + " " + s.text + " are fake-quantized on the host";
  };
  if (cfg.optimizer != OptimizerKind::Grid) add("weights", cfg.weights);
  add("activations", cfg.acts);
  return out;
}

TrainResult train_cuda(const TrainConfig& cfg, std::shared_ptr<const Dataset> train, std::shared_ptr<const Dataset> test,
                       const Trainer::StepCallback& on_step, const std::atomic<bool>* cancel,
                       std::vector<MlpLayer>* final_model) {
  if (const std::string why = training_unsupported(cfg); !why.empty()) throw std::runtime_error(why);
  validate_data(cfg, train.get(), test.get());
  // The device reads logits by label without a check (the CPU's Mlp checks every batch): check every label once.
  for (const Dataset* d : {train.get(), test.get()})
    for (uint8_t v : d->labels)
      if (int(v) >= cfg.sizes.back())
        throw std::invalid_argument("label " + std::to_string(v) + " is not a class of the network's outputs");

  const auto t0 = std::chrono::steady_clock::now();
  DeviceMlp net(cfg, *train, *test);
  const int L = net.layers();
  const bool grid = cfg.optimizer == OptimizerKind::Grid;
  const bool wquant = net.quantizes_weights();
  std::vector<LayerCounts> counts;
  std::vector<std::vector<uint32_t>> hist;

  net.quantize_weights(mix64(cfg.seed));  // the weights of step 1 (its counters are reset with step 1's)
  auto step = [&](StepMetrics& m, const std::vector<uint32_t>& perm, std::size_t first, std::size_t n,
                  uint64_t step_seed) -> std::size_t {
    if (cancel && cancel->load(std::memory_order_relaxed)) throw TrainingCancelled();
    if (m.step_in_epoch == 1) net.perm.upload(perm.data(), perm.size(), net.stream());  // the epoch's order
    net.reset_step();
    net.gather_train(net.perm.p + first, int(n));
    net.forward(int(n), step_seed, true);
    net.backward(int(n));
    const bool hist_step =
        cfg.histogram_every > 0 && (m.step == 1 || m.step % uint64_t(cfg.histogram_every) == 0 || m.epoch_end);
    net.update(step_seed, hist_step);
    const auto out = net.finish(counts, hist_step ? &hist : nullptr);
    m.loss = out.loss / double(n);
    m.train_acc = double(out.hits) / double(n);
    for (int l = 0; l < L; ++l) {
      LayerMetrics& lm = m.layers[std::size_t(l)];
      const LayerCounts& c = counts[std::size_t(l)];
      const DevLayer& D = net.layer(l);
      lm.weights = uint64_t(D.in) * uint64_t(D.out);
      lm.updates = c.updates;
      lm.flips = c.flips;
      lm.bit_stalls = c.stalls;
      if (D.aq) {
        lm.act_overflow = c.a_overflow;
        lm.act_underflow = c.a_underflow;
        lm.act_clipped = c.a_clipped;
        lm.act_scale = D.aq->scheme().granularity == Granularity::Tensor ? c.a_scale : 0.0f;
        float a;
        std::memcpy(&a, &c.a_amax_bits, 4);
        lm.act_amax = a;
      }
      if (grid) {
        lm.weight_overflow = c.clamped;
        lm.weight_scale = 1.0f;
      } else if (wquant) {
        lm.weight_overflow = c.w_overflow;
        lm.weight_underflow = c.w_underflow;
        lm.weight_clipped = c.w_clipped;
        lm.weight_scale = D.wq->scheme().granularity == Granularity::Tensor ? c.w_scale : 0.0f;
        float a;
        std::memcpy(&a, &c.w_amax_bits, 4);
        lm.weight_amax = a;
      }
      if (hist_step && std::size_t(l) < hist.size()) lm.code_histogram = std::move(hist[std::size_t(l)]);
    }
    return std::size_t(out.hits);
  };
  TrainResult res = run_training(cfg, train->size(), step,
                                 [&](bool) { return net.accuracy_test(cfg.batch, test->size()); }, on_step, t0);
  if (final_model) net.download(*final_model);
  return res;
}

// ---- self-test entries -------------------------------------------------------------------------------------

OptimTrace optimizer_trace_cuda(OptimizerKind kind, double lr, double momentum, double weight_decay,
                                const GridOptimConfig& grid, std::size_t slot, const std::vector<float>& init,
                                const std::vector<float>& model_init, const std::vector<std::vector<float>>& grads) {
  require_device();
  const std::size_t n = init.size();
  OptimDev opt(kind, lr, momentum, weight_decay, grid);
  DVec<float> w, m, g;
  DVec<LayerCounts> c(1);
  w.upload(init.data(), n, nullptr);
  const bool has_model = kind == OptimizerKind::Grid && !model_init.empty();
  if (has_model) m.upload(model_init.data(), n, nullptr);
  OptimTrace tr;
  for (const auto& gr : grads) {
    if (gr.size() != n) throw std::invalid_argument("optimizer trace: gradient size differs from the parameters");
    g.upload(gr.data(), n, nullptr);
    c.zero(1, nullptr);
    opt.begin_step();
    opt.step(slot, w.p, g.p, has_model ? m.p : nullptr, n, c.p, nullptr);
    LayerCounts hc{};
    c.download(&hc, 1, nullptr);
    std::vector<float> hw(n), hm(has_model ? n : 0);
    w.download(hw.data(), n, nullptr);
    if (has_model) m.download(hm.data(), n, nullptr);
    check(cudaStreamSynchronize(nullptr), "optimizer trace");
    StepCounts sc;
    sc.flips = hc.flips;
    sc.stalls = hc.stalls;
    sc.updates = hc.updates;
    sc.clamped = hc.clamped;
    sc.nonfinite = hc.nonfinite;
    tr.counts.push_back(sc);
    tr.master.push_back(std::move(hw));
    tr.model.push_back(std::move(hm));
  }
  return tr;
}

std::vector<FakeQuantResult> fake_quant_sequence_cuda(const Scheme& s, ScalingMode mode, int history, std::size_t rows,
                                                      std::size_t cols, const std::vector<FakeQuantCall>& calls) {
  require_device();
  const std::size_t n = rows * cols;
  FakeQuantDev fq(s, mode, history);
  DVec<float> dx, dy;
  DVec<uint16_t> dc;
  DVec<uint8_t> dk;
  DVec<LayerCounts> c(1);
  dy.resize(n);
  dc.resize(n);
  dk.resize(n);
  std::vector<FakeQuantResult> out;
  for (const FakeQuantCall& call : calls) {
    dx.upload(call.x, n, nullptr);
    dc.zero(n, nullptr);  // formats without codes (affine) leave them alone, as FakeQuant does
    c.zero(1, nullptr);
    LayerCounts* cp = c.p;
    fq.apply(dx.p, rows, cols, dy.p, dc.p, dk.p, call.seed, call.record,
             {&cp->w_overflow, &cp->w_underflow, &cp->w_nan, &cp->w_clipped}, &cp->w_amax_bits, &cp->w_scale, nullptr);
    LayerCounts hc{};
    c.download(&hc, 1, nullptr);
    dy.download(call.y, n, nullptr);
    if (call.codes) dc.download(call.codes, n, nullptr);
    if (call.clipped) dk.download(call.clipped, n, nullptr);
    check(cudaStreamSynchronize(nullptr), "fake quantization");
    FakeQuantResult r;
    r.stats.overflow = hc.w_overflow;
    r.stats.underflow = hc.w_underflow;
    r.stats.nan = hc.w_nan;
    r.clipped = hc.w_clipped;
    float a;
    std::memcpy(&a, &hc.w_amax_bits, 4);
    r.amax = a;
    r.scale = s.granularity == Granularity::Tensor || s.granularity == Granularity::None ? hc.w_scale : 0.0f;
    out.push_back(r);
  }
  return out;
}

FakeQuantResult fake_quant_cuda(const Scheme& s, const float* x, std::size_t rows, std::size_t cols, float* y,
                                uint16_t* codes, uint8_t* clipped, uint64_t seed) {
  return fake_quant_sequence_cuda(s, ScalingMode::Current, 1, rows, cols, {{x, y, codes, clipped, seed, false}}).front();
}

}  // namespace qs::cuda
