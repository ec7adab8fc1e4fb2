// CUDA per-group fake quantization: group amax (atomic max of non-negative float bits) -> group scale
// (amax_scale or the MX rule, as in quant/scheme.cpp) -> element kernel running encode_bits with the
// group's scale -> host entry that validates the scheme and copies in and out.
#include <cuda_runtime.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "cuda/cuda_util.cuh"
#include "cuda/scheme_quant.cuh"
#include "format/encode_bits.h"
#include "format/rng.h"

namespace qs::cuda {

namespace {

using detail::check;
using detail::DeviceBuffer;

// Element i of a C-order tensor -> its group: channel c = (i / inner) % C, or block (row, i % L / n).
struct Grouping {
  bool channel = true;
  uint64_t inner = 1, channels = 1;  // channel
  uint64_t L = 1, n = 1, blocks_per_row = 1;  // block
  __host__ __device__ uint64_t group(uint64_t i) const {
    if (channel) return (i / inner) % channels;
    return (i / L) * blocks_per_row + (i % L) / n;
  }
};

__global__ void group_amax_kernel(const float* __restrict__ x, uint64_t n, Grouping g, unsigned int* amax_bits) {
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x) {
    const float a = fabsf(x[i]);
    if (a <= FLT_MAX && a > 0.0f) atomicMax(&amax_bits[g.group(i)], __float_as_uint(a));
  }
}

__global__ void group_scale_kernel(const unsigned int* amax_bits, uint64_t groups, bool mx, float max_finite,
                                   int emax_elem, float* scales) {
  for (uint64_t k = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < groups; k += uint64_t(gridDim.x) * blockDim.x) {
    const float amax = __uint_as_float(amax_bits[k]);
    float s = 1.0f;
    if (amax > 0.0f) {
      if (mx) {
        int ex;
        frexpf(amax, &ex);
        s = ldexpf(1.0f, max(-127, min(127, (ex - 1) - emax_elem)));
      } else {
        s = fmaxf(amax / max_finite, FLT_MIN);
      }
    }
    scales[k] = s;
  }
}

struct Counts {
  unsigned long long overflow, underflow, nan;
};

__global__ void group_quant_kernel(KernelParams p, const float* __restrict__ x, float* __restrict__ y, uint64_t n,
                                   Grouping g, const float* __restrict__ scales, Counts* counts) {
  BitsCounts c;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x) {
    KernelParams q = p;
    q.scale = scales[g.group(i)];
    uint32_t code;
    const uint32_t rnd = p.stochastic ? stochastic_bits(p.seed, i) : 0u;
    encode_bits(q, x[i], rnd, code, y[i], c);
  }
  for (int off = 16; off > 0; off >>= 1) {
    c.overflow += __shfl_down_sync(0xffffffffu, c.overflow, off);
    c.underflow += __shfl_down_sync(0xffffffffu, c.underflow, off);
    c.nan += __shfl_down_sync(0xffffffffu, c.nan, off);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(&counts->overflow, (unsigned long long)c.overflow);
    atomicAdd(&counts->underflow, (unsigned long long)c.underflow);
    atomicAdd(&counts->nan, (unsigned long long)c.nan);
  }
}

int floor_log2(double v) {
  int ex;
  std::frexp(v, &ex);
  return ex - 1;
}

}  // namespace

SchemeOutput apply_scheme_cuda(const Scheme& s, const float* x, const std::vector<int64_t>& shape, float* y) {
  const bool mx = s.scale_format && s.scale_format->name == "e8m0fnu";
  if ((s.format.is_int() && !s.format.is_signed) || (s.scale_format && !mx) || s.granularity == Granularity::None)
    throw std::runtime_error("scheme " + s.text + " is not supported on CUDA yet (CPU only)");
  uint64_t n = 1;
  for (int64_t d : shape) n *= uint64_t(d);
  Grouping g;
  uint64_t groups = 1;
  if (s.granularity == Granularity::Tensor || shape.empty()) {
    g.channel = true;  // one channel: every element in group 0
    g.inner = n ? n : 1;
    g.channels = 1;
  } else if (s.granularity == Granularity::Channel) {
    const int rank = int(shape.size());
    const int axis = s.axis < 0 ? s.axis + rank : s.axis;
    if (axis < 0 || axis >= rank) throw std::runtime_error("scheme " + s.text + ": axis out of range");
    for (int i = axis + 1; i < rank; ++i) g.inner *= uint64_t(shape[i]);
    g.channels = uint64_t(shape[axis]);
    groups = g.channels;
  } else {
    g.channel = false;
    g.L = uint64_t(shape.back());
    g.n = uint64_t(s.block);
    g.blocks_per_row = (g.L + g.n - 1) / g.n;
    groups = (g.L ? n / g.L : 0) * g.blocks_per_row;
  }
  SchemeOutput out;
  out.groups = groups;
  if (n == 0) return out;
  const KernelParams p = make_kernel_params(s.format, s.options, 1.0f);
  DeviceBuffer<float> dx(n), dy(n), ds(groups);
  DeviceBuffer<unsigned int> da(groups);
  DeviceBuffer<Counts> dc(1);
  check(cudaMemcpy(dx.ptr, x, n * 4, cudaMemcpyHostToDevice), "copy to device");
  check(cudaMemset(da.ptr, 0, groups * 4), "memset");
  check(cudaMemset(dc.ptr, 0, sizeof(Counts)), "memset");
  const int threads = 256;
  const int blocks = int(std::min<uint64_t>((n + threads - 1) / threads, 4096));
  group_amax_kernel<<<blocks, threads>>>(dx.ptr, n, g, da.ptr);
  group_scale_kernel<<<int(std::min<uint64_t>((groups + 255) / 256, 4096)), 256>>>(
      da.ptr, groups, mx, static_cast<float>(s.format.max_finite), floor_log2(s.format.max_finite), ds.ptr);
  group_quant_kernel<<<blocks, threads>>>(p, dx.ptr, dy.ptr, n, g, ds.ptr, dc.ptr);
  check(cudaGetLastError(), "kernel launch");
  check(cudaDeviceSynchronize(), "scheme kernels");
  check(cudaMemcpy(y, dy.ptr, n * 4, cudaMemcpyDeviceToHost), "copy back");
  Counts hc{};
  check(cudaMemcpy(&hc, dc.ptr, sizeof hc, cudaMemcpyDeviceToHost), "copy back");
  std::vector<unsigned int> am(groups);
  check(cudaMemcpy(am.data(), da.ptr, groups * 4, cudaMemcpyDeviceToHost), "copy back");
  for (unsigned int b : am) {
    float f;
    std::memcpy(&f, &b, 4);
    out.amax = std::max(out.amax, double(f));
  }
  out.stats.overflow = hc.overflow;
  out.stats.underflow = hc.underflow;
  out.stats.nan = hc.nan;
  return out;
}

}  // namespace qs::cuda
