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

EncodeStats quantize_act_int8(const float* X, int M, int K, std::ptrdiff_t ldx, bool per_row, int8_t* Q,
                              std::ptrdiff_t ldq, float* scales, int threads) {
  if (!X || !Q || !scales) throw std::invalid_argument("quantize_act_int8: null pointer");
  if (M <= 0 || K <= 0)
    throw std::invalid_argument("quantize_act_int8: M and K must be positive, got " + std::to_string(M) + " x " +
                                std::to_string(K));
  if (ldx == 0) ldx = K;
  if (ldq == 0) ldq = K;
  if (ldx < K || ldq < K) throw std::invalid_argument("quantize_act_int8: leading dimension smaller than K");
  static const Format f = parse_format("int8");
  threads = resolve_threads(threads);
  // Rows per job: enough work to amortize a thread, at least one row.
  const std::size_t rows_per = std::max<std::size_t>(1, (std::size_t(1) << 16) / std::size_t(K));
  std::vector<double> amax(per_row ? 0 : std::size_t(M));
  if (!per_row) {
    parallel_chunks(std::size_t(M), rows_per, threads, [&](std::size_t b, std::size_t e) {
      for (std::size_t i = b; i < e; ++i) amax[i] = amax_f32(X + std::ptrdiff_t(i) * ldx, std::size_t(K), 1);
    });
    scales[0] = amax_scale(f, *std::max_element(amax.begin(), amax.end()));
  }
  EncodeStats total;
  std::mutex mu;
  parallel_chunks(std::size_t(M), rows_per, threads, [&](std::size_t b, std::size_t e) {
    EncodeStats st;
    for (std::size_t i = b; i < e; ++i) {
      const float* x = X + std::ptrdiff_t(i) * ldx;
      const float s = per_row ? (scales[i] = amax_scale(f, amax_f32(x, std::size_t(K), 1))) : scales[0];
      EncodeJob job;
      job.x = x;
      job.n = std::size_t(K);
      job.scale = s;
      job.codes8 = reinterpret_cast<uint8_t*>(Q + std::ptrdiff_t(i) * ldq);  // two's complement codes
      st += encode_f32(f, EncodeOptions{}, job);
    }
    std::lock_guard<std::mutex> lock(mu);
    total += st;
  });
  return total;
}

}  // namespace qs
