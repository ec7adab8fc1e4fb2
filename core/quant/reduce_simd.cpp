// Run-time dispatch of the reductions (same levels as the encoders).
#include "quant/reduce_simd.h"

#include <cfloat>
#include <cmath>
#include <vector>

namespace qs {

void minmax_f32(const float* x, std::size_t n, float& lo, float& hi, SimdLevel level) {
  switch (level) {
#if defined(QS_HAVE_X86_SIMD)
    case SimdLevel::Avx512: return detail::minmax_f32_avx512(x, n, lo, hi);
    case SimdLevel::Avx2: return detail::minmax_f32_avx2(x, n, lo, hi);
#endif
    default: return detail::minmax_f32_generic(x, n, lo, hi);
  }
}

ErrorSums error_sums_f32(const float* x, const float* q, std::size_t n, double clip_lo, double clip_hi,
                         SimdLevel level) {
  switch (level) {
#if defined(QS_HAVE_X86_SIMD)
    case SimdLevel::Avx512: return detail::error_sums_f32_avx512(x, q, n, clip_lo, clip_hi);
    case SimdLevel::Avx2: return detail::error_sums_f32_avx2(x, q, n, clip_lo, clip_hi);
#endif
    default: return detail::error_sums_f32_generic(x, q, n, clip_lo, clip_hi);
  }
}

ErrorSums error_sums_groups_f32(const float* x, const float* q, std::size_t n, std::size_t group, const double* bound,
                                SimdLevel level) {
  switch (level) {
#if defined(QS_HAVE_X86_SIMD)
    case SimdLevel::Avx512: return detail::error_sums_groups_f32_avx512(x, q, n, group, bound);
    case SimdLevel::Avx2: return detail::error_sums_groups_f32_avx2(x, q, n, group, bound);
#endif
    default: return detail::error_sums_groups_f32_generic(x, q, n, group, bound);
  }
}

ErrorSums error_sums_ranges_f32(const float* x, const float* q, std::size_t n, std::size_t group, const double* lo,
                                const double* hi, SimdLevel level) {
  switch (level) {
#if defined(QS_HAVE_X86_SIMD)
    case SimdLevel::Avx512: return detail::error_sums_ranges_f32_avx512(x, q, n, group, lo, hi);
    case SimdLevel::Avx2: return detail::error_sums_ranges_f32_avx2(x, q, n, group, lo, hi);
#endif
    default: return detail::error_sums_ranges_f32_generic(x, q, n, group, lo, hi);
  }
}

namespace {
bool derive_grid_dist_params(const Format& f, GridDistParams& g) {
  if (f.kind != FormatKind::Float || !f.is_signed || f.no_zero || f.mbits < 0 || f.mbits > 22) return false;
  if (!(f.max_finite > 0) || !(f.min_normal > 0) || !(f.min_subnormal > 0)) return false;
  int emax = 0;
  (void)std::frexp(f.max_finite, &emax);  // max_finite in [2^(emax - 1), 2^emax)
  const int M = f.mbits, e_top = emax - 1;
  // The adders 2^(e + 23 - M) for e in [emin, e_top] must be normal floats.
  if (f.min_normal != std::ldexp(1.0, f.emin) || f.min_subnormal != std::ldexp(1.0, f.emin - M) ||
      e_top + 23 - M > 127 || f.emin + 23 - M < -126)
    return false;
  // max_finite on its binade's grid, and representable in float32.
  if (std::ldexp(std::floor(std::ldexp(f.max_finite, M - e_top)), e_top - M) != f.max_finite ||
      double(float(f.max_finite)) != f.max_finite)
    return false;
  g.max_finite = float(f.max_finite);
  g.cadd = uint32_t(23 - M) << 23;
  g.csub = float(std::ldexp(1.0, f.emin + 23 - M));
  return true;
}
}  // namespace

bool grid_dist_params(const Format& f, GridDistParams& g) {
  // Called per block by search_block_scale: the last format's answer is kept per thread (the fields it reads
  // are the key).
  struct Key {
    FormatKind kind;
    bool is_signed, no_zero;
    int mbits, emin;
    double max_finite, min_normal, min_subnormal;
    bool operator==(const Key&) const = default;
  };
  thread_local Key last{};
  thread_local bool have = false, ok = false;
  thread_local GridDistParams params;
  const Key k{f.kind, f.is_signed, f.no_zero, f.mbits, f.emin, f.max_finite, f.min_normal, f.min_subnormal};
  if (!have || !(k == last)) {
    ok = derive_grid_dist_params(f, params);
    last = k;
    have = true;
  }
  g = params;
  return ok;
}

RowCounts ggml_row_counts_ref(const float* x, float* y, std::size_t n, std::size_t group, const double* lo,
                               const double* hi) {
  RowCounts c;
  for (std::size_t b = 0, g = 0; b < n; b += group, ++g) {
    const std::size_t e = std::min(n, b + group);
    for (std::size_t i = b; i < e; ++i) {
      const float v = x[i];
      const bool is_nan = v != v, is_inf = std::fabs(v) == INFINITY;
      const bool outside = double(v) < lo[g] || double(v) > hi[g];
      c.nan += is_nan;
      c.inf += is_inf;
      c.outside += outside && !is_inf;
      c.underflow += !is_nan && !is_inf && !outside && v != 0 && y[i] == 0;
    }
    for (std::size_t i = b; i < e; ++i)
      if (!std::isfinite(x[i])) y[i] = x[i];
  }
  return c;
}

RowCounts ggml_row_counts_f32(const float* x, float* y, std::size_t n, std::size_t group, const float* lo,
                              const float* hi, SimdLevel level) {
  switch (group % 16 == 0 && n % group == 0 ? level : SimdLevel::Generic) {
#if defined(QS_HAVE_X86_SIMD)
    case SimdLevel::Avx512: return detail::ggml_row_counts_f32_avx512(x, y, n, group, lo, hi);
    case SimdLevel::Avx2: return detail::ggml_row_counts_f32_avx2(x, y, n, group, lo, hi);
#endif
    default:
      if (group % 4 == 0 && n % group == 0) return detail::ggml_row_counts_f32_generic(x, y, n, group, lo, hi);
      // Groups the 4-lane kernel would straddle: the same checks on the float bounds, one element at a time.
      {
        std::vector<double> lo_d(lo, lo + (n + group - 1) / group), hi_d(hi, hi + (n + group - 1) / group);
        return ggml_row_counts_ref(x, y, n, group, lo_d.data(), hi_d.data());
      }
  }
}

void float_interval(double lo, double hi, float& lo_f, float& hi_f) {
  // For a float v: v < lo (as doubles) exactly when v < the least float >= lo (+-inf included); NaN stays NaN
  // (no v compares). Ends beyond the float range become +-inf before the step (a defined conversion), which
  // the step then turns into the right float: lo below -FLT_MAX gives -FLT_MAX, hi above FLT_MAX gives FLT_MAX.
  auto to_float = [](double v) {
    return v > double(FLT_MAX) ? INFINITY : v < -double(FLT_MAX) ? -INFINITY : static_cast<float>(v);
  };
  lo_f = to_float(lo);
  if (double(lo_f) < lo) lo_f = std::nextafter(lo_f, INFINITY);
  hi_f = to_float(hi);
  if (double(hi_f) > hi) hi_f = std::nextafter(hi_f, -INFINITY);
}

uint32_t finite_copy_f32(const float* x, float* row, std::size_t n, SimdLevel level) {
  switch (level) {
#if defined(QS_HAVE_X86_SIMD)
    case SimdLevel::Avx512: return detail::finite_copy_f32_avx512(x, row, n);
    case SimdLevel::Avx2: return detail::finite_copy_f32_avx2(x, row, n);
#endif
    default: return detail::finite_copy_f32_generic(x, row, n);
  }
}

void grid_dist2_f32(const float* a, std::size_t n, const float* sc, std::size_t m, const GridDistParams& g,
                    float* out, SimdLevel level) {
  switch (level) {
#if defined(QS_HAVE_X86_SIMD)
    case SimdLevel::Avx512: return detail::grid_dist2_f32_avx512(a, n, sc, m, g, out);
    case SimdLevel::Avx2: return detail::grid_dist2_f32_avx2(a, n, sc, m, g, out);
#endif
    default: return detail::grid_dist2_f32_generic(a, n, sc, m, g, out);
  }
}

}  // namespace qs
