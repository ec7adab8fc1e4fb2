// CUDA fake quantization: device helper (encode_bits) -> kernels -> encode_f32_launch (takes a stream) ->
// encode_f32_device (device pointers, checks) -> encode_f32_cuda (host pointers). Benchmark: bench_quantize_cuda.cu.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/cuda_util.cuh"
#include "cuda/fake_quant.cuh"
#include "format/encode_bits.h"
#include "format/rng.h"

namespace qs::cuda {

namespace {

using detail::check;
using detail::DeviceBuffer;

using DeviceCounts = EncodeCountsDevice;

__device__ __forceinline__ void flush_counts(BitsCounts c, DeviceCounts* out) {
  // Warp-level sums, one atomic per warp and counter.
  for (int off = 16; off > 0; off >>= 1) {
    c.overflow += __shfl_down_sync(0xffffffffu, c.overflow, off);
    c.underflow += __shfl_down_sync(0xffffffffu, c.underflow, off);
    c.nan += __shfl_down_sync(0xffffffffu, c.nan, off);
  }
  if ((threadIdx.x & 31) == 0) {
    if (c.overflow) atomicAdd(&out->overflow, (unsigned long long)c.overflow);
    if (c.underflow) atomicAdd(&out->underflow, (unsigned long long)c.underflow);
    if (c.nan) atomicAdd(&out->nan, (unsigned long long)c.nan);
  }
}

// Four consecutive elements per thread and step (16-byte loads and stores), grid-stride. `Fast`:
// plain formats without code output take the bit-rounding fast path, falling back per element.
template <bool Stoch, bool Fast>
__device__ __forceinline__ void encode4(const KernelParams& p, float4 v, uint64_t idx0, uint32_t& key_hi,
                                        uint32_t& key, float4& out, uint32_t (&code)[4], BitsCounts& c) {
  float in[4] = {v.x, v.y, v.z, v.w}, o[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    uint32_t rnd = 0;
    if (Stoch) {
      const uint64_t idx = idx0 + k;
      const uint32_t hi = uint32_t(idx >> 32);
      if (hi != key_hi) key_hi = hi, key = stochastic_key(p.seed, hi);  // changes once per 2^32 elements
      rnd = stochastic_mix(key, uint32_t(idx));
    }
    if (!Fast || !fast_bits(p, in[k], rnd, o[k], c)) encode_bits(p, in[k], rnd, code[k], o[k], c);
  }
  out = make_float4(o[0], o[1], o[2], o[3]);
}

// Grid-stride over groups of four elements (16-byte loads and stores), two groups in flight per
// thread. `Fast`: plain formats without code output take the bit-rounding fast path.
template <bool Stoch, bool Fast>
__global__ void fake_quant_kernel(KernelParams p, const float* __restrict__ x, float* __restrict__ y,
                                  uint16_t* __restrict__ codes, std::size_t n, uint64_t index0,
                                  DeviceCounts* counts) {
  BitsCounts c;
  uint32_t key_hi = 0, key = stochastic_key(p.seed, 0);
  const std::size_t n4 = n / 4;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float4* y4 = reinterpret_cast<float4*>(y);
  std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + stride < n4; i += 2 * stride) {
    const float4 a = x4[i], b = x4[i + stride];
    float4 oa, ob;
    uint32_t ca[4], cb[4];
    encode4<Stoch, Fast>(p, a, index0 + 4 * i, key_hi, key, oa, ca, c);
    encode4<Stoch, Fast>(p, b, index0 + 4 * (i + stride), key_hi, key, ob, cb, c);
    if (y) y4[i] = oa, y4[i + stride] = ob;
    if (!Fast && codes)
      for (int k = 0; k < 4; ++k) codes[4 * i + k] = uint16_t(ca[k]), codes[4 * (i + stride) + k] = uint16_t(cb[k]);
  }
  if (i < n4) {
    float4 oa;
    uint32_t ca[4];
    encode4<Stoch, Fast>(p, x4[i], index0 + 4 * i, key_hi, key, oa, ca, c);
    if (y) y4[i] = oa;
    if (!Fast && codes)
      for (int k = 0; k < 4; ++k) codes[4 * i + k] = uint16_t(ca[k]);
  }
  // Tail (n % 4 elements): the first threads of block 0.
  if (blockIdx.x == 0 && threadIdx.x < n - 4 * n4) {
    const std::size_t j = 4 * n4 + threadIdx.x;
    uint32_t code;
    float out;
    encode_bits(p, x[j], Stoch ? stochastic_bits(p.seed, index0 + j) : 0u, code, out, c);
    if (y) y[j] = out;
    if (codes) codes[j] = uint16_t(code);
  }
  flush_counts(c, counts);
}

// Values-only nearest rounding of plain formats where fq_lean_kernel (below) does not apply (lean_ok false,
// or QS_FQ_NEAREST=old; H200, e4m3fn, 268 M values, ratio to a device copy over three rounds in one call: this
// kernel 0.847-0.849, 72 registers; fq_lean_kernel's nearest 0.860-0.863, 48 registers): fast_bits specialised with the
// rounding mode fixed and the per-element branches turned into selects; an element fast_bits would
// refuse (NaN, inf, ieee overflow) is redone with encode_bits, as in fake_quant_kernel. Four float4 per
// thread in flight, streaming cache hints. H100, e4m3fn, n = 2^28, quant over copy GB/s: the generic
// kernel 0.876-0.881, this one 0.907-0.915; without the hints, with two float4 per thread or with a
// Markstein division instead of x / s it measured 0.874-0.887 (the arithmetic was not the limit).
__device__ __forceinline__ float near_one(const KernelParams& p, float x, uint32_t s0, uint32_t half_m1, uint32_t keep,
                                          bool& bad, BitsCounts& c) {
  const float y = p.scale != 1.0f ? x / p.scale : x;
  const uint32_t u = float_to_bits(y);
  const uint32_t sign = u & 0x80000000u;
  uint32_t a = u & 0x7fffffffu;
  bool b = a >= 0x7f800000u;
  bool clipped = false;
  if (p.saturate) {
    const bool big = a > p.max_bits;
    clipped = big && a >= p.ovf_bits;
    a = big ? p.max_bits : a;
  }
  const float vs = __fsub_rn(__fadd_rn(bits_to_float(a), p.magic), p.magic);
  const float vn = bits_to_float((a + ((a >> s0) & 1u) + half_m1) & keep);
  const float v0 = a < p.min_normal_bits ? vs : vn;
  const uint32_t vb = float_to_bits(v0);
  if (!p.saturate) b = b || vb > p.max_bits;
  const uint32_t sgn = (p.has_neg_zero || vb != 0u) ? sign : 0u;
  const float v = bits_to_float(vb | sgn);
  c.overflow += (clipped && !b) ? 1u : 0u;
  c.underflow += (vb == 0u && a != 0u && !b) ? 1u : 0u;
  bad = bad || b;
  return p.scale != 1.0f ? v * p.scale : v;
}

__global__ void __launch_bounds__(256) fq_nearest_kernel(KernelParams p, const float* __restrict__ x, float* __restrict__ y,
                                                         std::size_t n, DeviceCounts* counts) {
  constexpr int U = 4;
  BitsCounts c;
  const uint32_t s0 = 23u - uint32_t(p.M), half_m1 = (1u << (s0 - 1u)) - 1u, keep = ~((1u << s0) - 1u);
  const std::size_t n4 = n / 4;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float4* y4 = reinterpret_cast<float4*>(y);
  std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + (U - 1) * stride < n4; i += U * stride) {
    float4 v[U];
#pragma unroll
    for (int k = 0; k < U; ++k) v[k] = __ldcs(x4 + i + k * stride);
    bool bad = false;
    BitsCounts g;
    float o[4 * U];
#pragma unroll
    for (int k = 0; k < U; ++k) {
      o[4 * k + 0] = near_one(p, v[k].x, s0, half_m1, keep, bad, g);
      o[4 * k + 1] = near_one(p, v[k].y, s0, half_m1, keep, bad, g);
      o[4 * k + 2] = near_one(p, v[k].z, s0, half_m1, keep, bad, g);
      o[4 * k + 3] = near_one(p, v[k].w, s0, half_m1, keep, bad, g);
    }
    if (!bad) {
      c.overflow += g.overflow;
      c.underflow += g.underflow;
    } else {
      // Rare: the whole group again, element by element, as fake_quant_kernel<false, true> does it.
#pragma unroll
      for (int k = 0; k < U; ++k) {
        const float in[4] = {v[k].x, v[k].y, v[k].z, v[k].w};
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          uint32_t code;
          if (!fast_bits(p, in[j], 0u, o[4 * k + j], c)) encode_bits(p, in[j], 0u, code, o[4 * k + j], c);
        }
      }
    }
#pragma unroll
    for (int k = 0; k < U; ++k) __stcs(y4 + i + k * stride, make_float4(o[4 * k], o[4 * k + 1], o[4 * k + 2], o[4 * k + 3]));
  }
  for (; i < n4; i += stride) {
    uint32_t key_hi = 0, key = 0, code[4];
    float4 w;
    encode4<false, true>(p, x4[i], 0, key_hi, key, w, code, c);
    y4[i] = w;
  }
  if (blockIdx.x == 0 && threadIdx.x < n - 4 * n4) {
    const std::size_t j = 4 * n4 + threadIdx.x;
    uint32_t code;
    float out;
    encode_bits(p, x[j], 0u, code, out, c);
    y[j] = out;
  }
  flush_counts(c, counts);
}

// Values-only stochastic rounding, and round to nearest with ties to even (near_lean, same tests; since session 26),
// of plain formats (lean_ok: p.fast_ok, 1 <= 23 - M <= 22, 2^emin <= max finite < inf; no codes; for
// stochastic rounding every index of the call in one 2^32 block so that one key serves the whole grid). Each
// element goes through stoch_lean (encode_bits.h): one range test and one zero test decide whether it takes the
// value; what it refuses (NaN, inf, above max finite, a nonzero below 2^emin, -0 without a negative zero) is
// redone alone with encode_bits, as fake_quant_kernel does it, and counted there. When the call's first index is a
// multiple of 4 (A4), the hash's first xor-shift is done once per group of four: for lo a multiple of 4 and
// j < 4, lo + j = lo ^ j and (lo + j) >> 16 = lo >> 16 (H200, ratio to a device copy: 0.853-0.862 over nine runs
// in four calls, 56 registers, 340 M instructions for 268 M values by ncu; the previous kernel, with clip
// counts and overflow modes in the element: 0.812, 445 M; with __launch_bounds__(256, 5), 48 registers: 0.833-0.837;
// every block at once instead of one wave: 0.738). Two float4 per thread and iteration (U = 2; four: 0.786
// against 0.800 on H200, more registers), loaded two iterations ahead (H200, ratio to a device copy: 0.806-0.812
// against 0.790-0.801 when loaded where used, 0.805-0.806 one iteration ahead; U = 1 two or three ahead:
// 0.757-0.764), streaming hints, at most one wave of blocks. Measured and dropped: bulk copies of the input into a
// shared-memory ring by a producer warp (notes/issue18-session25-fq-bulk-experiment.diff, 0.61-0.77).
//
// Division (Dbl): y = RN32(x * d) in double with d = RN64(1 / scale), no branch, where x / scale (IEEE, a
// branch to a slow path per element) was the kernel's largest cost (H200: 0.616 with it, 0.800 without).
// For a positive normal scale s = S 2^b (2^23 <= S < 2^24) and float32 x = X 2^a: |x * d - x / s| <= 2^-52
// |x / s| (two double roundings, no overflow or underflow in double), while x / s is never a float32
// rounding midpoint m = M 2^c (M odd, 25 bits: S' M would have to fit 24 bits) and lies at least 2^c / S >
// 2^-49 |m| from each one (x - s m is a nonzero multiple of 2^(b + c)); the same holds for the overflow
// threshold and for the midpoint (2^24 - 1) 2^-150 just below 2^-126 (there a multiple of 2^(b - 150),
// >= 2^-48 |m|). So RN32(x * d) = RN32(x / s) whenever either is >= 2^-126; a result below 2^-126 (a float32
// subnormal, or 0 from a nonzero x) is outside stoch_lean's range, which starts at 2^emin >= 2^-126, and takes
// the exact fallback.

// stochastic_mix(key, lo) with the first xor-shift folded: (lo ^ key) ^ ((lo ^ key) >> 16) = lo ^ (lo >> 16) ^ k1,
// k1 = key ^ (key >> 16). (Measured and dropped: right shifts as umulhi(v, 2^(32 - k)) on the multiplier
// instead of the integer ALU, 0.74-0.78 against 0.79-0.80 on H200.)
// mix_tail: the rest of stochastic_mix after that first xor-shift, x = lo ^ (lo >> 16) ^ k1.
__device__ __forceinline__ uint32_t mix_tail(uint32_t x, uint32_t key) {
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return hash32(x + key);
}
__device__ __forceinline__ uint32_t mix_k1(uint32_t lo, uint32_t key, uint32_t k1) {
  return mix_tail(lo ^ (lo >> 16) ^ k1, key);
}

// The input runs D iterations ahead in registers (a ring of D x U float4 per thread), so that each warp's next
// loads are in flight while it computes.
// Stoch false: the same loop for round to nearest, ties to even (near_lean; index0 and key unused).
template <bool Stoch, bool Scaled, bool Dbl, bool A4, int U, int D>
__global__ void __launch_bounds__(256) fq_lean_kernel(KernelParams p, double d, const float* __restrict__ x,
                                                      float* __restrict__ y, std::size_t n, uint64_t index0, uint32_t key,
                                                      DeviceCounts* counts) {
  BitsCounts c;
  const LeanConsts lk = lean_consts(p);
  const uint32_t sh = 9u + uint32_t(p.M);
  const uint32_t lo0 = uint32_t(index0), k1 = key ^ (key >> 16);
  const std::size_t n4 = n / 4;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float4* y4 = reinterpret_cast<float4*>(y);
  std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  static_assert(D >= 1, "the ring holds at least one iteration");
  float4 q[D][U];
#pragma unroll
  for (int r = 0; r < D; ++r)
#pragma unroll
    for (int k = 0; k < U; ++k) {
      const std::size_t j = i + (std::size_t(r) * U + k) * stride;
      q[r][k] = j < n4 ? __ldcs(x4 + j) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
  for (; i + (U - 1) * stride < n4; i += U * stride) {
    float4 v[U];
#pragma unroll
    for (int k = 0; k < U; ++k) v[k] = q[0][k];
#pragma unroll
    for (int r = 0; r + 1 < D; ++r)
#pragma unroll
      for (int k = 0; k < U; ++k) q[r][k] = q[r + 1][k];
#pragma unroll
    for (int k = 0; k < U; ++k) {
      const std::size_t j = i + (std::size_t(D) * U + k) * stride;
      q[D - 1][k] = j < n4 ? __ldcs(x4 + j) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
    float o[4 * U];
    uint32_t mask = 0;
#pragma unroll
    for (int k = 0; k < U; ++k) {
      const float in[4] = {v[k].x, v[k].y, v[k].z, v[k].w};
      const uint32_t lo = lo0 + 4u * uint32_t(i + k * stride), base = lo ^ (lo >> 16) ^ k1;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        bool b;
        if constexpr (Stoch) {
          const uint32_t h = A4 ? mix_tail(base ^ uint32_t(j), key) : mix_k1(lo + j, key, k1);
          o[4 * k + j] = stoch_lean<Scaled, Dbl>(p, lk, d, in[j], h >> sh, b);
        } else {
          o[4 * k + j] = near_lean<Scaled, Dbl>(p, lk, d, in[j], b);
        }
        mask |= uint32_t(b) << (4 * k + j);
      }
    }
    if (mask) {
      // Rare: the refused elements one by one through encode_bits (local copies, one inlined encoder).
      float xin[4 * U], xo[4 * U];
#pragma unroll
      for (int k = 0; k < U; ++k) {
        xin[4 * k] = v[k].x, xin[4 * k + 1] = v[k].y, xin[4 * k + 2] = v[k].z, xin[4 * k + 3] = v[k].w;
#pragma unroll
        for (int j = 0; j < 4; ++j) xo[4 * k + j] = o[4 * k + j];
      }
      while (mask) {
        const int e = __ffs(mask) - 1;
        mask &= mask - 1u;
        const uint32_t lo = lo0 + 4u * uint32_t(i + (e >> 2) * stride) + uint32_t(e & 3);
        uint32_t code;
        encode_bits(p, xin[e], Stoch ? stochastic_mix(key, lo) : 0u, code, xo[e], c);
      }
#pragma unroll
      for (int e = 0; e < 4 * U; ++e) o[e] = xo[e];
    }
#pragma unroll
    for (int k = 0; k < U; ++k) __stcs(y4 + i + k * stride, make_float4(o[4 * k], o[4 * k + 1], o[4 * k + 2], o[4 * k + 3]));
  }
  uint32_t key_hi = Stoch ? uint32_t(index0 >> 32) : 0u, kk = Stoch ? key : 0u;
  for (; i < n4; i += stride) {
    uint32_t code[4];
    float4 w;
    encode4<Stoch, true>(p, x4[i], Stoch ? index0 + 4 * i : 0, key_hi, kk, w, code, c);
    y4[i] = w;
  }
  if (blockIdx.x == 0 && threadIdx.x < n - 4 * n4) {
    const std::size_t j = 4 * n4 + threadIdx.x;
    uint32_t code;
    float out;
    encode_bits(p, x[j], Stoch ? stochastic_bits(p.seed, index0 + j) : 0u, code, out, c);
    y[j] = out;
  }
  flush_counts(c, counts);
}

// One wave of resident 256-thread blocks of `Kernel` for n elements (in groups of four): the grid-stride
// loops do the rest, so no block waits for a second wave. Occupancy is queried once per kernel.
template <auto Kernel>
int one_wave_blocks(std::size_t n) {
  static int per_sm = 0, sms = 0;
  if (!per_sm) {
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "device query");
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, Kernel, 256, 0), "occupancy");
    per_sm = per_sm > 0 ? per_sm : 1;
  }
  const std::size_t want = (n / 4 + 255) / 256;
  return int(std::max<std::size_t>(1, std::min<std::size_t>(want, std::size_t(sms) * per_sm)));
}

template <bool Stoch, bool Fast>
void encode_f32_launch_generic(const KernelParams& p, const float* x, float* y, uint16_t* codes, std::size_t n, uint64_t index0,
                DeviceCounts* counts, cudaStream_t stream) {
  constexpr auto kernel = fake_quant_kernel<Stoch, Fast>;
  kernel<<<one_wave_blocks<kernel>(n), 256, 0, stream>>>(p, x, y, codes, n, index0, counts);
}

template <bool Stoch, bool Scaled, bool Dbl, bool A4>
void encode_f32_launch_lean_t(const KernelParams& p, const float* x, float* y, std::size_t n, uint64_t index0, uint32_t key,
                              DeviceCounts* counts, cudaStream_t stream) {
  constexpr int U = 2, D = 2;
  constexpr auto kernel = fq_lean_kernel<Stoch, Scaled, Dbl, A4, U, D>;
  // One wave at most, and no more blocks than give every thread U groups of four, so that small calls (the
  // self-test's) run the main loop too.
  const int wave = one_wave_blocks<kernel>(n);
  const std::size_t want = (n / 4 + std::size_t(256) * U - 1) / (std::size_t(256) * U);
  const int blocks = int(std::max<std::size_t>(1, std::min<std::size_t>(want, std::size_t(wave))));
  kernel<<<blocks, 256, 0, stream>>>(p, 1.0 / double(p.scale), x, y, n, index0, key, counts);
}

// The values-only lean kernel above when it applies (stochastic, or nearest with ties to even); false otherwise.
// Tuning switches (A/B in one build): QS_FQ_STOCH=generic forces fake_quant_kernel for stochastic rounding,
// QS_FQ_NEAREST=old fq_nearest_kernel for nearest, QS_FQ_STOCH_DIV=ieee divides by the scale as fast_bits does
// instead of the double product (both roundings).
bool encode_f32_launch_lean(const KernelParams& p, const float* x, float* y, std::size_t n, uint64_t index0, DeviceCounts* counts,
                            cudaStream_t stream) {
  const char* force = std::getenv(p.stochastic ? "QS_FQ_STOCH" : "QS_FQ_NEAREST");
  if (force && std::strcmp(force, p.stochastic ? "generic" : "old") == 0) return false;
  if (!lean_ok(p) || (!p.stochastic && p.rmode != 0)) return false;
  if (p.stochastic && (index0 >> 32) != ((index0 + n - 1) >> 32)) return false;
  const uint32_t key = p.stochastic ? stochastic_key(p.seed, uint32_t(index0 >> 32)) : 0u;
  const char* fd = std::getenv("QS_FQ_STOCH_DIV");
  const bool scaled = p.scale != 1.0f, a4 = index0 % 4 == 0;
  // The double product's argument needs a positive normal scale (see the division above).
  const bool dbl = std::isnormal(p.scale) && p.scale > 0.0f && !(fd && std::strcmp(fd, "ieee") == 0);
  void (*launch)(const KernelParams&, const float*, float*, std::size_t, uint64_t, uint32_t, DeviceCounts*, cudaStream_t);
  if (!p.stochastic) {
    launch = !scaled ? encode_f32_launch_lean_t<false, false, false, false>
                     : dbl ? encode_f32_launch_lean_t<false, true, true, false> : encode_f32_launch_lean_t<false, true, false, false>;
  } else if (!scaled) {
    launch = a4 ? encode_f32_launch_lean_t<true, false, false, true> : encode_f32_launch_lean_t<true, false, false, false>;
  } else if (dbl) {
    launch = a4 ? encode_f32_launch_lean_t<true, true, true, true> : encode_f32_launch_lean_t<true, true, true, false>;
  } else {
    launch = a4 ? encode_f32_launch_lean_t<true, true, false, true> : encode_f32_launch_lean_t<true, true, false, false>;
  }
  launch(p, x, y, n, index0, key, counts, stream);
  return true;
}

void encode_f32_launch(const KernelParams& p, const float* x, float* y, uint16_t* codes, std::size_t n, uint64_t index0,
                       DeviceCounts* counts, cudaStream_t stream) {
  if (n == 0) return;
  const bool fast = p.fast_ok && !codes;
  if (p.stochastic) {
    if (fast && y && encode_f32_launch_lean(p, x, y, n, index0, counts, stream)) {
    } else if (fast) encode_f32_launch_generic<true, true>(p, x, y, codes, n, index0, counts, stream);
    else encode_f32_launch_generic<true, false>(p, x, y, codes, n, index0, counts, stream);
  } else {
    if (fast && y && p.rmode == 0) {
      if (!encode_f32_launch_lean(p, x, y, n, index0, counts, stream))
        fq_nearest_kernel<<<one_wave_blocks<fq_nearest_kernel>(n), 256, 0, stream>>>(p, x, y, n, counts);
    } else if (fast) encode_f32_launch_generic<false, true>(p, x, y, codes, n, index0, counts, stream);
    else encode_f32_launch_generic<false, false>(p, x, y, codes, n, index0, counts, stream);
  }
  check(cudaGetLastError(), "kernel launch");
}

}  // namespace

void encode_f32_device(const Format& f, const EncodeOptions& opt, float scale, const float* x, float* y, uint16_t* codes,
                       std::size_t n, uint64_t index0, EncodeCountsDevice* counts, void* stream) {
  const KernelParams p = make_kernel_params(f, opt, scale);  // validates the scale
  if (n && (!x || !counts)) throw std::invalid_argument("encode_f32_device: null pointer");
  // The kernels read and write float4 / 8-byte groups.
  if ((reinterpret_cast<uintptr_t>(x) | reinterpret_cast<uintptr_t>(y) | reinterpret_cast<uintptr_t>(codes)) & 15)
    throw std::invalid_argument("encode_f32_device: x, y and codes must be 16-byte aligned");
  encode_f32_launch(p, x, y, codes, n, index0, counts, static_cast<cudaStream_t>(stream));
}

EncodeStats encode_f32_cuda(const Format& f, const EncodeOptions& opt, const EncodeJob& job) {
  const std::size_t n = job.n;
  DeviceBuffer<float> dx(n), dy(job.values ? n : 0);
  DeviceBuffer<uint16_t> dc((job.codes16 || job.codes8) ? n : 0);
  DeviceBuffer<DeviceCounts> dcount(1);
  check(cudaMemset(dcount.ptr, 0, sizeof(DeviceCounts)), "cudaMemset");
  if (n) check(cudaMemcpy(dx.ptr, job.x, n * sizeof(float), cudaMemcpyHostToDevice), "copy to device");
  encode_f32_device(f, opt, job.scale, dx.ptr, dy.ptr, dc.ptr, n, job.index0, dcount.ptr, nullptr);
  check(cudaDeviceSynchronize(), "fake-quant kernel");
  if (job.values && n) check(cudaMemcpy(job.values, dy.ptr, n * sizeof(float), cudaMemcpyDeviceToHost), "copy back");
  if ((job.codes16 || job.codes8) && n) {
    std::vector<uint16_t> c(n);
    check(cudaMemcpy(c.data(), dc.ptr, n * sizeof(uint16_t), cudaMemcpyDeviceToHost), "copy back");
    if (job.codes16) std::memcpy(job.codes16, c.data(), n * sizeof(uint16_t));
    if (job.codes8)
      for (std::size_t i = 0; i < n; ++i) job.codes8[i] = uint8_t(c[i]);
  }
  DeviceCounts hc{};
  check(cudaMemcpy(&hc, dcount.ptr, sizeof hc, cudaMemcpyDeviceToHost), "copy back");
  EncodeStats st;
  st.overflow = hc.overflow;
  st.underflow = hc.underflow;
  st.nan = hc.nan;
  return st;
}

}  // namespace qs::cuda
