// CUDA per-group fake quantization: group amax (atomic max of non-negative float bits) -> group scale
// (amax_scale, the MX rule or two-level NVFP4 scales, as in quant/scheme.cpp) -> element kernel running
// encode_bits with the group's scale; unsigned affine integers: group min / max -> scale and zero point ->
// affine codes -> host entry that validates the scheme and copies in and out.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "cuda/cuda_util.cuh"
#include "cuda/scheme_quant.cuh"
#include "format/encode_bits.h"
#include "format/format.h"
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
    if (!(q.scale > 0.0f) || isinf(q.scale)) {  // a two-level block scale that underflowed: zeros
      if (isnan(x[i])) ++c.nan;
      else if (x[i] != 0.0f) ++c.underflow;
      y[i] = 0.0f;
      continue;
    }
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

// Two-level block scales (NVFP4: e4m3fn block scales under an fp32 tensor scale). The block scale is
// the scale format's encoding of want = amax / (max_finite * ts), decided on the double value as
// encode_ref does: the host passes the format's non-negative grid, the midpoints between neighbours and
// whether encode_ref sends each exact midpoint up, so the device reproduces it with a binary search.
struct ScaleGrid {
  const double* value = nullptr;  // ascending, npts values
  const double* mid = nullptr;    // npts - 1 midpoints
  const uint8_t* tie_up = nullptr;
  int npts = 0;
};

__global__ void two_level_scale_kernel(const unsigned int* amax_bits, uint64_t groups, double denom, float ts,
                                       ScaleGrid grid, float* scales) {
  for (uint64_t k = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < groups; k += uint64_t(gridDim.x) * blockDim.x) {
    const float amax = __uint_as_float(amax_bits[k]);
    if (!(amax > 0.0f)) {
      scales[k] = 1.0f;
      continue;
    }
    const double want = double(amax) / denom;
    int lo = 0, hi = grid.npts - 1;  // first point whose upper midpoint is not passed by want; saturates at the top
    while (lo < hi) {
      const int m = (lo + hi) / 2;
      const bool up = want > grid.mid[m] || (want == grid.mid[m] && grid.tie_up[m]);
      if (up) lo = m + 1;
      else hi = m;
    }
    scales[k] = __fmul_rn(float(grid.value[lo]), ts);  // 0 when the block scale underflows: zeros below
  }
}

// Unsigned affine integers (uint8, uint4): per group the finite min and max (as order-preserving integer
// keys, so atomics can take them), then s and the zero point by affine_params' float32 rule, then the codes
// by encode_affine_f32's rule.
__device__ __forceinline__ int order_key(float f) {
  const int b = __float_as_int(f);
  return b >= 0 ? b : b ^ 0x7FFFFFFF;
}
__device__ __forceinline__ float key_value(int k) { return __int_as_float(k >= 0 ? k : k ^ 0x7FFFFFFF); }

__global__ void group_minmax_kernel(const float* __restrict__ x, uint64_t n, Grouping g, int* lo_key, int* hi_key) {
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x) {
    const float v = x[i];
    if (fabsf(v) <= FLT_MAX) {
      const uint64_t gi = g.group(i);
      atomicMin(&lo_key[gi], order_key(v));
      atomicMax(&hi_key[gi], order_key(v));
    }
  }
}

__global__ void affine_params_kernel(const int* lo_key, const int* hi_key, uint64_t groups, float qmax, float* scales,
                                     int* zero_points) {
  for (uint64_t k = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < groups; k += uint64_t(gridDim.x) * blockDim.x) {
    const bool any = lo_key[k] <= hi_key[k];
    float lo = any ? key_value(lo_key[k]) : 0.0f, hi = any ? key_value(hi_key[k]) : 0.0f;
    lo = 0.0f < lo ? 0.0f : lo;  // std::min(lo, 0.0f)
    hi = hi < 0.0f ? 0.0f : hi;  // std::max(hi, 0.0f)
    float sc = __fdiv_rn(__fsub_rn(hi, lo), qmax);
    sc = sc < FLT_EPSILON ? FLT_EPSILON : sc;
    const float z = __fsub_rn(0.0f, rintf(__fdiv_rn(lo, sc)));
    scales[k] = sc;
    zero_points[k] = int(fminf(fmaxf(z, 0.0f), qmax));
  }
}

__device__ __forceinline__ void warp_add_counts(BitsCounts& c, Counts* counts) {
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

__global__ void affine_quant_kernel(const float* __restrict__ x, float* __restrict__ y, uint64_t n, Grouping g,
                                    const float* __restrict__ scales, const int* __restrict__ zero_points, double qmax,
                                    bool stochastic, uint64_t seed, Counts* counts) {
  BitsCounts c;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t gi = g.group(i);
    const float sc = scales[gi];
    const int zp = zero_points[gi];
    const float xi = x[i];
    double q;
    if (isnan(xi)) {
      ++c.nan;
      q = zp;
    } else {
      const double yv = double(__fdiv_rn(xi, sc));
      double r;
      if (isinf(yv)) {
        r = yv;
      } else if (!stochastic) {
        r = rint(yv);
      } else {
        const double fl = floor(yv);
        r = fl + (double(stochastic_bits(seed, i)) < floor((yv - fl) * 4294967296.0) ? 1 : 0);
      }
      q = r + zp;
      if (q < 0 || q > qmax) {
        ++c.overflow;
        q = fmin(fmax(q, 0.0), qmax);
      } else if (q == zp && xi != 0.0f) {
        ++c.underflow;
      }
    }
    const uint32_t code = uint32_t(q);
    y[i] = __double2float_rn(double(int32_t(code) - zp) * double(sc));
  }
  warp_add_counts(c, counts);
}

int floor_log2(double v) {
  int ex;
  std::frexp(v, &ex);
  return ex - 1;
}

}  // namespace

SchemeOutput apply_scheme_cuda(const Scheme& s, const float* x, const std::vector<int64_t>& shape, float* y) {
  const bool mx = s.scale_format && s.scale_format->name == "e8m0fnu";
  const bool two_level = s.scale_format && !mx;
  const bool affine = s.format.is_int() && !s.format.is_signed;
  if (s.granularity == Granularity::None)
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
  DeviceBuffer<float> dx(n), dy(n), ds(groups);
  DeviceBuffer<Counts> dc(1);
  check(cudaMemcpy(dx.ptr, x, n * 4, cudaMemcpyHostToDevice), "copy to device");
  check(cudaMemset(dc.ptr, 0, sizeof(Counts)), "memset");
  const int threads = 256;
  const int blocks = int(std::min<uint64_t>((n + threads - 1) / threads, 4096));
  const int gblocks = int(std::min<uint64_t>((groups + 255) / 256, 4096));

  if (affine) {
    DeviceBuffer<int> dlo(groups), dhi(groups), dzp(groups);
    std::vector<int> lo(groups, INT32_MAX), hi(groups, INT32_MIN);  // empty: lo > hi
    check(cudaMemcpy(dlo.ptr, lo.data(), groups * 4, cudaMemcpyHostToDevice), "copy to device");
    check(cudaMemcpy(dhi.ptr, hi.data(), groups * 4, cudaMemcpyHostToDevice), "copy to device");
    group_minmax_kernel<<<blocks, threads>>>(dx.ptr, n, g, dlo.ptr, dhi.ptr);
    affine_params_kernel<<<gblocks, 256>>>(dlo.ptr, dhi.ptr, groups, float(s.format.max_finite), ds.ptr, dzp.ptr);
    affine_quant_kernel<<<blocks, threads>>>(dx.ptr, dy.ptr, n, g, ds.ptr, dzp.ptr, s.format.max_finite,
                                             s.options.rounding == Rounding::Stochastic, s.options.seed, dc.ptr);
    check(cudaGetLastError(), "kernel launch");
    check(cudaDeviceSynchronize(), "affine scheme kernels");
    check(cudaMemcpy(lo.data(), dlo.ptr, groups * 4, cudaMemcpyDeviceToHost), "copy back");
    check(cudaMemcpy(hi.data(), dhi.ptr, groups * 4, cudaMemcpyDeviceToHost), "copy back");
    auto value = [](int k) {
      const int32_t b = k >= 0 ? k : k ^ 0x7FFFFFFF;
      float f;
      std::memcpy(&f, &b, 4);
      return double(f);
    };
    for (uint64_t k = 0; k < groups; ++k)
      if (lo[k] <= hi[k]) out.amax = std::max({out.amax, std::fabs(value(lo[k])), std::fabs(value(hi[k]))});
  } else {
    const KernelParams p = make_kernel_params(s.format, s.options, 1.0f);
    DeviceBuffer<unsigned int> da(groups);
    check(cudaMemset(da.ptr, 0, groups * 4), "memset");
    group_amax_kernel<<<blocks, threads>>>(dx.ptr, n, g, da.ptr);
    std::vector<unsigned int> am(groups);
    if (two_level) {
      // The fp32 tensor scale from the tensor's amax (the largest block amax), exactly as apply_scheme.
      check(cudaMemcpy(am.data(), da.ptr, groups * 4, cudaMemcpyDeviceToHost), "copy back");
      float t_amax = 0.0f;
      for (unsigned int b : am) {
        float f;
        std::memcpy(&f, &b, 4);
        t_amax = std::max(t_amax, f);
      }
      const Format& sf = *s.scale_format;
      out.tensor_scale = t_amax > 0 ? std::max(t_amax / static_cast<float>(sf.max_finite * s.format.max_finite), FLT_MIN)
                                    : 1.0f;
      std::vector<double> vals;
      for (uint32_t c = 0; c < (1u << sf.bits); ++c) {
        const double v = decode_ref(sf, c);
        if (std::isfinite(v) && v >= 0 && !std::signbit(v)) vals.push_back(v);
      }
      std::sort(vals.begin(), vals.end());
      vals.erase(std::unique(vals.begin(), vals.end()), vals.end());
      std::vector<double> mids(vals.size() > 1 ? vals.size() - 1 : 0);
      std::vector<uint8_t> up(mids.size());
      for (std::size_t k = 0; k < mids.size(); ++k) {
        mids[k] = (vals[k] + vals[k + 1]) / 2;  // exact: both have few significant bits
        up[k] = decode_ref(sf, encode_ref(sf, mids[k], Rounding::Nearest, Overflow::Saturate, 0)) == vals[k + 1];
      }
      DeviceBuffer<double> dv(vals.size()), dm(mids.size());
      DeviceBuffer<uint8_t> du(up.size());
      check(cudaMemcpy(dv.ptr, vals.data(), vals.size() * 8, cudaMemcpyHostToDevice), "copy to device");
      if (!mids.empty()) {
        check(cudaMemcpy(dm.ptr, mids.data(), mids.size() * 8, cudaMemcpyHostToDevice), "copy to device");
        check(cudaMemcpy(du.ptr, up.data(), up.size(), cudaMemcpyHostToDevice), "copy to device");
      }
      ScaleGrid sg{dv.ptr, dm.ptr, du.ptr, int(vals.size())};
      two_level_scale_kernel<<<gblocks, 256>>>(da.ptr, groups, s.format.max_finite * double(out.tensor_scale),
                                               out.tensor_scale, sg, ds.ptr);
      group_quant_kernel<<<blocks, threads>>>(p, dx.ptr, dy.ptr, n, g, ds.ptr, dc.ptr);
      check(cudaGetLastError(), "kernel launch");
      check(cudaDeviceSynchronize(), "two-level scheme kernels");
    } else {
      group_scale_kernel<<<gblocks, 256>>>(da.ptr, groups, mx, static_cast<float>(s.format.max_finite),
                                           floor_log2(s.format.max_finite), ds.ptr);
      group_quant_kernel<<<blocks, threads>>>(p, dx.ptr, dy.ptr, n, g, ds.ptr, dc.ptr);
      check(cudaGetLastError(), "kernel launch");
      check(cudaDeviceSynchronize(), "scheme kernels");
      check(cudaMemcpy(am.data(), da.ptr, groups * 4, cudaMemcpyDeviceToHost), "copy back");
    }
    for (unsigned int b : am) {
      float f;
      std::memcpy(&f, &b, 4);
      out.amax = std::max(out.amax, double(f));
    }
  }
  check(cudaMemcpy(y, dy.ptr, n * 4, cudaMemcpyDeviceToHost), "copy back");
  Counts hc{};
  check(cudaMemcpy(&hc, dc.ptr, sizeof hc, cudaMemcpyDeviceToHost), "copy back");
  out.stats.overflow = hc.overflow;
  out.stats.underflow = hc.underflow;
  out.stats.nan = hc.nan;
  return out;
}

}  // namespace qs::cuda
