// Vectorized reductions over float32 tensors (finite min/max, error sums in double), compiled per ISA
// like the encoders and dispatched at run time. Exercise: tests/tst_metrics.cpp, tests/tst_scheme.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/encode_simd.h"
#include "format/format.h"

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
// The same with group g clipped at [lo[g], hi[g]] (ggml's blocks: the interval their codes cover).
ErrorSums error_sums_ranges_f32(const float* x, const float* q, std::size_t n, std::size_t group, const double* lo,
                                const double* hi, SimdLevel level = best_simd_level());

// Squared distances to a format's grid, for search_block_scale's bounds (quant/scheme.cpp, where the argument
// is). The element format's nonnegative values must be the plain minifloat grid G with subnormals: 0, then in
// each binade [2^e, 2^(e+1)) from e = emin the multiples of 2^(e - M), and below 2^emin the multiples of
// 2^(emin - M), up to max_finite (grid_dist_params checks a Format's fields for that). For candidate j:
// r = fl(1 / sc[j]) (0 when sc[j] < FLT_MIN), t_i = fl(a_i * r) and out[j] = the float sum over i of d_i^2,
// d_i = fl(t_i - q_i), q_i the grid value nearest min(t_i, max_finite) (exactly: the adder rounding to the
// binade's step), so |d_i| <= t_i and |d_i| is dist(t_i, G) within 2^-24 t_i. sc and out hold m rounded up to
// a multiple of 16 (pad sc with 1). The sums differ between levels in their last bits.
struct GridDistParams {
  float max_finite = 0;
  uint32_t cadd = 0;  // (23 - M) << 23: added to a float's exponent bits gives 2^(e + 23 - M), the adder that
                      // rounds to the binade's step
  float csub = 0;     // the adder of binade emin, 2^(emin + 23 - M), which also rounds below it
};
// Whether f's values are that grid and the adders are normal floats; fills g.
bool grid_dist_params(const Format& f, GridDistParams& g);
void grid_dist2_f32(const float* a, std::size_t n, const float* sc, std::size_t m, const GridDistParams& g,
                    float* out, SimdLevel level = best_simd_level());

// A ggml row's checks (apply_scheme's ggml path), groups of `group` consecutive x (vectorized where group is
// a multiple of 16 and n of group), group g with the clip interval [lo[g], hi[g]] as floats such that for a float v,
// v < lo[g] exactly when v is below the double interval's low end (its smallest float above or at it), and
// v > hi[g] likewise (float_interval). Counts NaN x, infinite x, finite x outside the interval and underflows
// (x finite, inside, nonzero, y == 0); then sets y = x where x is not finite.
struct RowCounts {
  uint64_t nan = 0, inf = 0, outside = 0, underflow = 0;
};
RowCounts ggml_row_counts_f32(const float* x, float* y, std::size_t n, std::size_t group, const float* lo,
                              const float* hi, SimdLevel level = best_simd_level());
// The definition, on the double interval (lo[g], hi[g]): the oracle of the tests.
RowCounts ggml_row_counts_ref(const float* x, float* y, std::size_t n, std::size_t group, const double* lo,
                              const double* hi);
// The floats [lo_f, hi_f] that float_interval describes for a double interval [lo, hi].
void float_interval(double lo, double hi, float& lo_f, float& hi_f);
// row[i] = x[i] where finite, else 0; returns the largest |x| of the finite x as float bits.
uint32_t finite_copy_f32(const float* x, float* row, std::size_t n, SimdLevel level = best_simd_level());

namespace detail {
RowCounts ggml_row_counts_f32_generic(const float* x, float* y, std::size_t n, std::size_t group, const float* lo, const float* hi);
RowCounts ggml_row_counts_f32_avx2(const float* x, float* y, std::size_t n, std::size_t group, const float* lo, const float* hi);
RowCounts ggml_row_counts_f32_avx512(const float* x, float* y, std::size_t n, std::size_t group, const float* lo, const float* hi);
uint32_t finite_copy_f32_generic(const float* x, float* row, std::size_t n);
uint32_t finite_copy_f32_avx2(const float* x, float* row, std::size_t n);
uint32_t finite_copy_f32_avx512(const float* x, float* row, std::size_t n);
void grid_dist2_f32_generic(const float* a, std::size_t n, const float* sc, std::size_t m, const GridDistParams& g, float* out);
void grid_dist2_f32_avx2(const float* a, std::size_t n, const float* sc, std::size_t m, const GridDistParams& g, float* out);
void grid_dist2_f32_avx512(const float* a, std::size_t n, const float* sc, std::size_t m, const GridDistParams& g, float* out);
void minmax_f32_generic(const float* x, std::size_t n, float& lo, float& hi);
void minmax_f32_avx2(const float* x, std::size_t n, float& lo, float& hi);
void minmax_f32_avx512(const float* x, std::size_t n, float& lo, float& hi);
ErrorSums error_sums_f32_generic(const float* x, const float* q, std::size_t n, double clip_lo, double clip_hi);
ErrorSums error_sums_f32_avx2(const float* x, const float* q, std::size_t n, double clip_lo, double clip_hi);
ErrorSums error_sums_f32_avx512(const float* x, const float* q, std::size_t n, double clip_lo, double clip_hi);
ErrorSums error_sums_groups_f32_generic(const float* x, const float* q, std::size_t n, std::size_t group, const double* bound);
ErrorSums error_sums_groups_f32_avx2(const float* x, const float* q, std::size_t n, std::size_t group, const double* bound);
ErrorSums error_sums_groups_f32_avx512(const float* x, const float* q, std::size_t n, std::size_t group, const double* bound);
ErrorSums error_sums_ranges_f32_generic(const float* x, const float* q, std::size_t n, std::size_t group, const double* lo, const double* hi);
ErrorSums error_sums_ranges_f32_avx2(const float* x, const float* q, std::size_t n, std::size_t group, const double* lo, const double* hi);
ErrorSums error_sums_ranges_f32_avx512(const float* x, const float* q, std::size_t n, std::size_t group, const double* lo, const double* hi);
}  // namespace detail

}  // namespace qs
