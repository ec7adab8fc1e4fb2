// Run-time dispatch of the reductions (same levels as the encoders).
#include "quant/reduce_simd.h"

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

}  // namespace qs
