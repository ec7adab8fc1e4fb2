// Vectorized reductions over float32 tensors (finite min/max, error sums in double), compiled per ISA
// like the encoders and dispatched at run time. Exercise: tests/tst_metrics.cpp, tests/tst_scheme.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/encode_simd.h"

namespace qs {

// Sums over the finite x (non-finite x are skipped): x^2, e^2, |e| and max |e| with e = x - q, the
// clipping part (x - clamp(x, lo, hi))^2 and the rounding part (clamp(x) - q)^2, all in double; clipped
// counts the x outside [lo, hi]. Symmetric schemes clip at [-bound, bound]; ggml's blocks at the interval
// their codes cover (format/ggml_quantize.h, clip_ranges).
struct ErrorSums {
  double sx2 = 0, se2 = 0, sae = 0, sc2 = 0, sr2 = 0, mae = 0;
  uint64_t count = 0, clipped = 0;
};

// lo > hi when nothing is finite.
void minmax_f32(const float* x, std::size_t n, float& lo, float& hi, SimdLevel level = best_simd_level());
ErrorSums error_sums_f32(const float* x, const float* q, std::size_t n, double clip_lo, double clip_hi,
                         SimdLevel level = best_simd_level());

// The same over consecutive groups of `group` elements (the last may be shorter), group g clipped at
// [-bound[g], bound[g]]: one call for a run of blocks instead of one per block. Its sums are added in
// another order than per-group calls would (fixed for a level).
ErrorSums error_sums_groups_f32(const float* x, const float* q, std::size_t n, std::size_t group, const double* bound,
                                SimdLevel level = best_simd_level());

namespace detail {
void minmax_f32_generic(const float* x, std::size_t n, float& lo, float& hi);
void minmax_f32_avx2(const float* x, std::size_t n, float& lo, float& hi);
void minmax_f32_avx512(const float* x, std::size_t n, float& lo, float& hi);
ErrorSums error_sums_f32_generic(const float* x, const float* q, std::size_t n, double clip_lo, double clip_hi);
ErrorSums error_sums_f32_avx2(const float* x, const float* q, std::size_t n, double clip_lo, double clip_hi);
ErrorSums error_sums_f32_avx512(const float* x, const float* q, std::size_t n, double clip_lo, double clip_hi);
ErrorSums error_sums_groups_f32_generic(const float* x, const float* q, std::size_t n, std::size_t group, const double* bound);
ErrorSums error_sums_groups_f32_avx2(const float* x, const float* q, std::size_t n, std::size_t group, const double* bound);
ErrorSums error_sums_groups_f32_avx512(const float* x, const float* q, std::size_t n, std::size_t group, const double* bound);
}  // namespace detail

}  // namespace qs
