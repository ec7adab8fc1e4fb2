// CUDA per-group fake quantization: group statistics (amax by atomic max of non-negative float bits; min /
// max keys for unsigned affine integers) -> group scale and zero point by the scheme's rule (group_scale of
// format/scale_rule.h, the function apply_scheme calls) -> element kernel running encode_bits (or the affine
// codes) with the group's scale -> host entry that validates the scheme and copies in and out.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>

#include "cuda/affine_quant.cuh"
#include "cuda/cuda_util.cuh"
#include "cuda/scale_grid.cuh"
#include "cuda/scheme_quant.cuh"
#include "format/encode_bits.h"
#include "format/format.h"
#include "format/rng.h"
#include "format/scale_rule.h"
#include "quant/scheme.h"

namespace qs::cuda {

namespace {

using detail::check;
using detail::DeviceBuffer;
using detail::ScaleGrid;
using detail::ScaleGridBuffers;

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

struct Counts {
  unsigned long long overflow, underflow, nan;
};

__global__ void group_quant_kernel(KernelParams p, const float* __restrict__ x, float* __restrict__ y, uint64_t n,
                                   Grouping g, const float* __restrict__ scales, Counts* counts) {
  BitsCounts c;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x) {
    KernelParams q = p;
    q.scale = scales[g.group(i)];
    if (!scale_is_usable(q.scale)) {  // a two-level block scale that underflowed: zeros
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


// Each group's scale by the scheme's rule from its amax (ts and grid for TwoLevel); Affine: affine_quant.cuh.
__global__ void group_scale_kernel(ScaleRuleParams rule, const unsigned int* amax_bits, uint64_t groups, float ts,
                                   ScaleGrid grid, float* scales) {
  for (uint64_t k = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < groups; k += uint64_t(gridDim.x) * blockDim.x) {
    GroupStats st;
    st.amax = __uint_as_float(amax_bits[k]);
    scales[k] = group_scale(rule, st, ts, grid).scale;
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
                                    int rounding, uint64_t seed, Counts* counts) {
  BitsCounts c;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t gi = g.group(i);
    y[i] = detail::affine_encode(x[i], scales[gi], zero_points[gi], qmax, rounding, seed, i, c);
  }
  warp_add_counts(c, counts);
}

// NVFP4 block scales searched for the least squared error (TensorRT Model Optimizer's MSE calibration), one
// thread per block: every candidate sb of the scale format, ascending, tried as s = float(sb) * ts, the block
// encoded to nearest with that scale (encode_bits, the encoder of every kernel here) and sum (x - q)^2 over
// its finite x accumulated in double in element order; the first least one wins. This is search_block_scale
// without its shortcuts, which only skip candidates that cannot win, so the choice is the same bit for bit.
__global__ void search_scale_kernel(KernelParams p, const float* __restrict__ x, Grouping g, uint64_t groups,
                                    const double* __restrict__ candidates, int ncand, float ts, float* scales) {
  for (uint64_t k = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < groups; k += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t row = k / g.blocks_per_row, j = k % g.blocks_per_row;
    const uint64_t off = row * g.L + j * g.n;
    const uint64_t len = g.L - j * g.n < g.n ? g.L - j * g.n : g.n;
    double amax = 0;
    for (uint64_t i = 0; i < len; ++i) {
      const float v = x[off + i];
      if (isfinite(v)) amax = fmax(amax, double(fabsf(v)));
    }
    if (!(amax > 0)) {  // nothing to scale: 1, as every rule
      scales[k] = 1.0f;
      continue;
    }
    double best = INFINITY;
    float best_s = 0.0f;
    for (int c = 0; c < ncand; ++c) {
      const float sc = float(candidates[c]) * ts;
      if (!scale_is_usable(sc)) continue;
      KernelParams q = p;
      q.scale = sc;
      BitsCounts unused;
      double se = 0;
      for (uint64_t i = 0; i < len; ++i) {
        const float v = x[off + i];
        uint32_t code;
        float y;
        encode_bits(q, v, 0u, code, y, unused);
        if (isfinite(v)) se += (double(v) - y) * (double(v) - y);
      }
      if (se < best) best = se, best_s = sc;
    }
    scales[k] = best_s;
  }
}


}  // namespace

SchemeOutput apply_scheme_cuda(const Scheme& s, const float* x, const std::vector<int64_t>& shape, float* y) {
  // The rule of the scheme for every group, a 0-d tensor included (on the CPU, a 0-d tensor under a block
  // scheme takes the amax rule: see apply_scheme).
  const ScaleRuleParams rule = scale_rule_params(s);
  // Rules and layouts the kernels do not have yet: scales chosen from the data (ggml's quantizers, the NVFP4
  // search, observer clips), block scales wider than 16 bits, 2-D tiles and blocks along another axis. (MX exponent
  // roundings are in group_scale, so they run here.)
  const bool other_axis = s.granularity == Granularity::Block && s.block_axis != -1 &&
                          !(shape.size() > 0 && s.block_axis == int(shape.size()) - 1);
  // Observer clips (percentile, MSE) are a host-side calibration: their scales are computed on the host as
  // apply_scheme does and the element kernel applies them; not for affine (zero-point) integers.
  const bool observed = s.clip != Scheme::Clip::Amax;
  const bool wide_scales = rule.rule == ScaleRule::Rounded16 && !detail::scale_grid_fits(*s.scale_format);
  if (rule.rule == ScaleRule::None || rule.rule == ScaleRule::GgmlBlock || wide_scales ||
      (observed && (rule.rule == ScaleRule::Affine || s.granularity == Granularity::Block)) || s.block_rows > 1 || other_axis)
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

  if (rule.rule == ScaleRule::Affine) {
    DeviceBuffer<int> dlo(groups), dhi(groups), dzp(groups);
    DeviceBuffer<unsigned int> damax(1);
    check(cudaMemset(damax.ptr, 0, 4), "memset");
    detail::affine_minmax_init_kernel<<<gblocks, 256>>>(dlo.ptr, dhi.ptr, groups);
    detail::affine_minmax_kernel<<<blocks, threads>>>(dx.ptr, n, g, dlo.ptr, dhi.ptr);
    detail::affine_scale_kernel<<<gblocks, 256>>>(rule, dlo.ptr, dhi.ptr, groups, ds.ptr, dzp.ptr, damax.ptr);
    affine_quant_kernel<<<blocks, threads>>>(dx.ptr, dy.ptr, n, g, ds.ptr, dzp.ptr, s.format.max_finite,
                                             int(s.options.rounding), s.options.seed, dc.ptr);
    check(cudaGetLastError(), "kernel launch");
    check(cudaDeviceSynchronize(), "affine scheme kernels");
    unsigned int amax_bits = 0;
    check(cudaMemcpy(&amax_bits, damax.ptr, 4, cudaMemcpyDeviceToHost), "copy back");
    float amax;
    std::memcpy(&amax, &amax_bits, 4);
    out.amax = double(amax);
  } else {
    const KernelParams p = make_kernel_params(s.format, s.options, 1.0f);
    DeviceBuffer<unsigned int> da(groups);
    check(cudaMemset(da.ptr, 0, groups * 4), "memset");
    group_amax_kernel<<<blocks, threads>>>(dx.ptr, n, g, da.ptr);
    std::vector<unsigned int> am(groups);
    if (rule.rule == ScaleRule::TwoLevel) {
      // The fp32 tensor scale from the tensor's amax (the largest block amax), exactly as apply_scheme.
      check(cudaMemcpy(am.data(), da.ptr, groups * 4, cudaMemcpyDeviceToHost), "copy back");
      float t_amax = 0.0f;
      for (unsigned int b : am) {
        float f;
        std::memcpy(&f, &b, 4);
        t_amax = std::max(t_amax, f);
      }
      out.tensor_scale = two_level_tensor_scale(rule, t_amax);
      const ScaleGridBuffers sg(*s.scale_format);
      if (s.mse) {
        KernelParams nearest = p;
        nearest.stochastic = false;
        nearest.rmode = 0;
        const std::vector<double> cand = search_candidates(s);
        DeviceBuffer<double> dcand(cand.size());
        check(cudaMemcpy(dcand.ptr, cand.data(), cand.size() * 8, cudaMemcpyHostToDevice), "copy to device");
        search_scale_kernel<<<gblocks, 128>>>(nearest, dx.ptr, g, groups, dcand.ptr, int(cand.size()), out.tensor_scale,
                                              ds.ptr);
        check(cudaGetLastError(), "kernel launch");
        check(cudaDeviceSynchronize(), "block scale search");
      } else {
        group_scale_kernel<<<gblocks, 256>>>(rule, da.ptr, groups, out.tensor_scale, sg.grid(), ds.ptr);
      }
      group_quant_kernel<<<blocks, threads>>>(p, dx.ptr, dy.ptr, n, g, ds.ptr, dc.ptr);
      check(cudaGetLastError(), "kernel launch");
      check(cudaDeviceSynchronize(), "two-level scheme kernels");
    } else if (observed) {
      // The observers' scales on the host, group by group as apply_scheme (a group without a positive amax
      // takes the rule's scale), then the element kernel.
      check(cudaMemcpy(am.data(), da.ptr, groups * 4, cudaMemcpyDeviceToHost), "copy back");
      std::vector<float> sc(groups);
      const ScaleRuleParams tensor_rule = rule;
      for (uint64_t k = 0; k < groups; ++k) {
        float a;
        std::memcpy(&a, &am[k], 4);
        if (!(a > 0)) {
          sc[k] = group_scale(tensor_rule, GroupStats{double(a)}).scale;
        } else if (g.channel && groups == 1) {
          sc[k] = observed_scale_tensor(s, x, n);
        } else {
          const uint64_t outer = n / (g.inner * g.channels);
          sc[k] = observed_scale_channel(s, x, outer, g.channels, g.inner, k);
        }
      }
      out.observed_scales.assign(sc.begin(), sc.end());
      check(cudaMemcpy(ds.ptr, sc.data(), groups * 4, cudaMemcpyHostToDevice), "copy to device");
      group_quant_kernel<<<blocks, threads>>>(p, dx.ptr, dy.ptr, n, g, ds.ptr, dc.ptr);
      check(cudaGetLastError(), "kernel launch");
      check(cudaDeviceSynchronize(), "scheme kernels");
    } else {
      // 16-bit block scales rounded into their format by its table of values (ScaleGrid), as TwoLevel's.
      std::unique_ptr<ScaleGridBuffers> sg;
      if (rule.rule == ScaleRule::Rounded16) sg = std::make_unique<ScaleGridBuffers>(*s.scale_format);
      group_scale_kernel<<<gblocks, 256>>>(rule, da.ptr, groups, 1.0f, sg ? sg->grid() : ScaleGrid{}, ds.ptr);
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
