// Dynamic int8 activation quantization through the format encoders (encode_f32 at the best SIMD level),
// one row per job. Exercise: tests/tst_gemm.cpp.
#include "gemm/gemm_quant.h"

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "format/encode_simd.h"
#include "format/quantize.h"
#include "quant/scheme.h"
#include "util/parallel.h"

namespace qs {
namespace detail {
float amax_finite_avx512(const float* x, std::size_t n);
EncodeStats quantize_int8_avx512(const float* x, std::size_t n, float scale, int8_t* q);
}  // namespace detail

EncodeStats quantize_act_int8(const float* X, int M, int K, std::ptrdiff_t ldx, bool per_row, int8_t* Q,
                              std::ptrdiff_t ldq, float* scales, int threads, SimdLevel level) {
  if (!X || !Q || !scales) throw std::invalid_argument("quantize_act_int8: null pointer");
  if (M <= 0 || K <= 0)
    throw std::invalid_argument("quantize_act_int8: M and K must be positive, got " + std::to_string(M) + " x " +
                                std::to_string(K));
  if (ldx == 0) ldx = K;
  if (ldq == 0) ldq = K;
  if (ldx < K || ldq < K) throw std::invalid_argument("quantize_act_int8: leading dimension smaller than K");
  static const Format f = parse_format("int8");
  const auto& levels = available_simd_levels();
  if (std::find(levels.begin(), levels.end(), level) == levels.end())
    throw std::invalid_argument(std::string("quantize_act_int8: level ") + to_string(level) + " is not available");
  bool fast = false;
#if defined(QS_HAVE_X86_SIMD)
  fast = level == SimdLevel::Avx512;
#endif
  auto amax_of = [&](const float* x) {
#if defined(QS_HAVE_X86_SIMD)
    if (fast) return double(detail::amax_finite_avx512(x, std::size_t(K)));
#endif
    return amax_f32(x, std::size_t(K), 1);
  };
  threads = resolve_threads(threads);
  // Rows per job: enough work to amortize a thread, at least one row.
  const std::size_t rows_per = std::max<std::size_t>(1, (std::size_t(1) << 16) / std::size_t(K));
  std::vector<double> amax(per_row ? 0 : std::size_t(M));
  if (!per_row) {
    parallel_chunks(std::size_t(M), rows_per, threads, [&](std::size_t b, std::size_t e) {
      for (std::size_t i = b; i < e; ++i) amax[i] = amax_of(X + std::ptrdiff_t(i) * ldx);
    });
    scales[0] = amax_scale(f, *std::max_element(amax.begin(), amax.end()));
  }
  EncodeStats total;
  std::mutex mu;
  parallel_chunks(std::size_t(M), rows_per, threads, [&](std::size_t b, std::size_t e) {
    EncodeStats st;
    for (std::size_t i = b; i < e; ++i) {
      const float* x = X + std::ptrdiff_t(i) * ldx;
      const float s = per_row ? (scales[i] = amax_scale(f, amax_of(x))) : scales[0];
#if defined(QS_HAVE_X86_SIMD)
      if (fast) {
        st += detail::quantize_int8_avx512(x, std::size_t(K), s, Q + std::ptrdiff_t(i) * ldq);
        continue;
      }
#endif
      EncodeJob job;
      job.x = x;
      job.n = std::size_t(K);
      job.scale = s;
      job.codes8 = reinterpret_cast<uint8_t*>(Q + std::ptrdiff_t(i) * ldq);  // two's complement codes
      st += encode_f32(f, EncodeOptions{}, job, level);
    }
    std::lock_guard<std::mutex> lock(mu);
    total += st;
  });
  return total;
}

}  // namespace qs
