// Unsigned affine integers (uint8, uint4: a scale and a zero point per group) on the device, shared by
// apply_scheme_cuda (scheme_quant.cu) and the training lab's fake quantization (train_cuda.cu), so that both
// run one copy of the arithmetic that equals format/quantize.cpp's encode_affine_f32 bit for bit:
// per group the finite min and max as order-preserving integer keys (atomics take them), the scale and zero
// point by group_scale's Affine case (PyTorch's MinMax rule), then per element q = round(x / s) + zp clamped
// to [0, qmax], y = (q - zp) * s. Exercise: `selftest --backend cuda` (the scheme and fakequant cases).
#pragma once

#include <cfloat>
#include <climits>
#include <cstdint>

#include "format/encode_bits.h"
#include "format/rng.h"
#include "format/scale_rule.h"

namespace qs::cuda::detail {
namespace {  // kernels defined in a header: one copy per including file

__device__ __forceinline__ int order_key(float f) {
  const int b = __float_as_int(f);
  return b >= 0 ? b : b ^ 0x7FFFFFFF;
}
__device__ __forceinline__ float key_value(int k) { return __int_as_float(k >= 0 ? k : k ^ 0x7FFFFFFF); }

// lo / hi keys of `groups` groups set to "empty" (lo > hi).
__global__ void affine_minmax_init_kernel(int* lo_key, int* hi_key, uint64_t groups) {
  for (uint64_t k = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < groups; k += uint64_t(gridDim.x) * blockDim.x) {
    lo_key[k] = INT_MAX;
    hi_key[k] = INT_MIN;
  }
}

// The finite min and max of each group (G: any grouping with group(i)).
template <class G>
__global__ void affine_minmax_kernel(const float* __restrict__ x, uint64_t n, G g, int* lo_key, int* hi_key) {
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += uint64_t(gridDim.x) * blockDim.x) {
    const float v = x[i];
    if (fabsf(v) <= FLT_MAX) {
      const uint64_t gi = g.group(i);
      atomicMin(&lo_key[gi], order_key(v));
      atomicMax(&hi_key[gi], order_key(v));
    }
  }
}

// Each group's scale and zero point; with amax_bits, also the largest finite |x| of all groups (float bits,
// atomic max: the caller zeroes it), which apply_scheme reports as the tensor's amax.
__global__ void affine_scale_kernel(ScaleRuleParams rule, const int* __restrict__ lo_key, const int* __restrict__ hi_key,
                                    uint64_t groups, float* __restrict__ scales, int* __restrict__ zero_points,
                                    unsigned* amax_bits) {
  for (uint64_t k = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < groups; k += uint64_t(gridDim.x) * blockDim.x) {
    GroupStats st;
    const bool any = lo_key[k] <= hi_key[k];
    st.lo = any ? key_value(lo_key[k]) : 0.0f;
    st.hi = any ? key_value(hi_key[k]) : 0.0f;
    const GroupScale gs = group_scale(rule, st);
    scales[k] = gs.scale;
    zero_points[k] = gs.zero_point;
    if (amax_bits && any) atomicMax(amax_bits, __float_as_uint(fmaxf(fabsf(float(st.lo)), fabsf(float(st.hi)))));
  }
}

// One element: encode_affine_f32's rule (rounding as Rounding, stochastic draws by `index`), counts into c.
__device__ __forceinline__ float affine_encode(float xi, float sc, int zp, double qmax, int rounding, uint64_t seed,
                                               uint64_t index, BitsCounts& c) {
  double q;
  if (isnan(xi)) {
    ++c.nan;
    q = zp;
  } else {
    const double yv = double(__fdiv_rn(xi, sc));
    double r;
    if (isinf(yv)) {
      r = yv;
    } else if (rounding == int(Rounding::Nearest)) {
      r = rint(yv);
    } else if (rounding == int(Rounding::NearestAway)) {
      r = round(yv);
    } else if (rounding == int(Rounding::TowardZero)) {
      r = trunc(yv);
    } else {
      const double fl = floor(yv);
      r = fl + (double(stochastic_bits(seed, index)) < floor((yv - fl) * 4294967296.0) ? 1 : 0);
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
  return __double2float_rn(double(int32_t(code) - zp) * double(sc));
}

}  // namespace
}  // namespace qs::cuda::detail
