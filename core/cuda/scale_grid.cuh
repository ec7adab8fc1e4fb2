// Block-scale rounding on the device (NVFP4's two-level scales, 16-bit scales): a scale format's
// non-negative grid as a table, searched the way the host's round_nearest_saturate decides (format/scale_rule.h's
// TwoLevel and Rounded16 rules take it as their round_scale). Used by apply_scheme_cuda (scheme_quant.cu) and
// the training fake quantization (train_cuda.cu); never included by a public header.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "cuda/cuda_util.cuh"
#include "format/format.h"

namespace qs::cuda::detail {

// Two-level block scales (NVFP4: e4m3fn block scales under an fp32 tensor scale) round
// want = amax / (max_finite * ts) into the scale format as the host's round_nearest_saturate does, decided
// on the double value: the host passes the format's non-negative grid, the midpoints between neighbours and
// whether encode_ref sends each exact midpoint up, so the device reproduces it with a binary search.
struct ScaleGrid {
  const double* value = nullptr;  // ascending, npts values
  const double* mid = nullptr;    // npts - 1 midpoints
  const uint8_t* tie_up = nullptr;
  int npts = 0;
  __device__ double operator()(double want) const {
    int lo = 0, hi = npts - 1;  // first point whose upper midpoint is not passed by want; saturates at the top
    while (lo < hi) {
      const int m = (lo + hi) / 2;
      const bool up = want > mid[m] || (want == mid[m] && tie_up[m]);
      if (up) lo = m + 1;
      else hi = m;
    }
    return value[lo];
  }
};

// Whether the device can round into this scale format: the table lists every code, so at most 16 bits
// (wider block-scale formats are rounded on the CPU; apply_scheme_cuda and the training lab both ask here).
inline bool scale_grid_fits(const Format& sf) { return sf.bits <= 16; }

// The scale format's rounding as a device table (see ScaleGrid): its non-negative finite values, the
// midpoints between neighbours and whether encode_ref sends each exact midpoint up.
struct ScaleGridBuffers {
  std::vector<double> vals, mids;
  std::vector<uint8_t> up;
  DeviceBuffer<double> dv, dm;
  DeviceBuffer<uint8_t> du;
  static std::vector<double> values_of(const Format& sf) {
    std::vector<double> vals;
    for (uint32_t c = 0; c < (1u << sf.bits); ++c) {
      const double v = decode_ref(sf, c);
      if (std::isfinite(v) && v >= 0 && !std::signbit(v)) vals.push_back(v);
    }
    std::sort(vals.begin(), vals.end());
    vals.erase(std::unique(vals.begin(), vals.end()), vals.end());
    return vals;
  }
  explicit ScaleGridBuffers(const Format& sf)
      : vals(values_of(sf)), mids(vals.size() > 1 ? vals.size() - 1 : 0), up(mids.size()), dv(vals.size()),
        dm(mids.size()), du(up.size()) {
    for (std::size_t k = 0; k < mids.size(); ++k) {
      mids[k] = (vals[k] + vals[k + 1]) / 2;  // exact: both have few significant bits
      up[k] = decode_ref(sf, encode_ref(sf, mids[k], Rounding::Nearest, Overflow::Saturate, 0)) == vals[k + 1];
    }
    check(cudaMemcpy(dv.ptr, vals.data(), vals.size() * 8, cudaMemcpyHostToDevice), "copy to device");
    if (!mids.empty()) {
      check(cudaMemcpy(dm.ptr, mids.data(), mids.size() * 8, cudaMemcpyHostToDevice), "copy to device");
      check(cudaMemcpy(du.ptr, up.data(), up.size(), cudaMemcpyHostToDevice), "copy to device");
    }
  }
  ScaleGrid grid() const { return ScaleGrid{dv.ptr, dm.ptr, du.ptr, int(vals.size())}; }
};

}  // namespace qs::cuda::detail
