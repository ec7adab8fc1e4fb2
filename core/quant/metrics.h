// Error metrics of a quantized tensor, computed once in core/ for the CLI and the GUI: MSE, SQNR,
// max / mean absolute error, the error split into clipping and rounding parts, and log2-binned
// histograms (absolute error, relative error, values per binade of the format).
// Exercise: tests/tst_scheme.cpp, `quantscope-cli analyze ... --histogram-csv h.csv`.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "format/format.h"

namespace qs {

// Bins by binary exponent: bin k holds magnitudes in [2^(k + kMinExp), 2^(k + kMinExp + 1)).
struct Log2Histogram {
  static constexpr int kMinExp = -160, kMaxExp = 160;
  std::array<uint64_t, kMaxExp - kMinExp + 1> counts{};
  uint64_t zeros = 0;  // exact zeros (no binade)
  void add_exponent(int e) { counts[std::size_t(std::clamp(e, kMinExp, kMaxExp) - kMinExp)]++; }
  Log2Histogram& operator+=(const Log2Histogram& o);
};

struct ErrorMetrics {
  uint64_t count = 0;          // finite inputs measured
  double sum_x2 = 0, sum_e2 = 0, sum_abs_e = 0, max_abs_e = 0;
  double sum_clip2 = 0;        // squared error of the clipping part: x - clamp(x, -B, B)
  double sum_round2 = 0;       // squared error of the rounding part: clamp(x, -B, B) - q
  uint64_t clipped = 0;        // elements with |x| > B (B = clip_bound(format, scale) of their group)
  Log2Histogram abs_error;     // |x - q|
  Log2Histogram rel_error;     // |x - q| / |x| for x != 0
  Log2Histogram binade;        // |x / s|: which binade of the format each value falls in
  bool histograms = true;      // off: only the sums (the fast path of `analyze` without --histogram-csv)

  double mse() const { return count ? sum_e2 / double(count) : 0.0; }
  double mean_abs_error() const { return count ? sum_abs_e / double(count) : 0.0; }
  // 10 log10(sum x^2 / sum (x - q)^2); +inf when exact, NaN when nothing was measured.
  double sqnr_db() const;
  ErrorMetrics& operator+=(const ErrorMetrics& o);
};

// Accumulates one group of n elements quantized with scale s and clip bound B (see clip_bound in scheme.h).
void accumulate_metrics(ErrorMetrics& m, const float* x, const float* q, std::size_t n, float scale, double bound);
// The same with an interval [clip_lo, clip_hi] instead of [-B, B] (ggml's blocks: see reduce_simd.h).
void accumulate_metrics(ErrorMetrics& m, const float* x, const float* q, std::size_t n, float scale, double clip_lo,
                        double clip_hi);

// Only the log2 histograms of accumulate_metrics (nothing when m.histograms is off): for callers that take
// the sums of a run of groups in one call (error_sums_groups_f32, quant/reduce_simd.h).
void accumulate_histograms(ErrorMetrics& m, const float* x, const float* q, std::size_t n, float scale);
// Adds such a call's sums (quant/reduce_simd.h) to m's.
struct ErrorSums;
void add_error_sums(ErrorMetrics& m, const ErrorSums& s);

// "kind,bin_lo,bin_hi,count" rows (kind = abs_error | rel_error | binade), non-empty bins only,
// each line prefixed by `prefix` (e.g. "file,tensor,scheme,").
std::string histogram_csv_rows(const ErrorMetrics& m, const std::string& prefix);

}  // namespace qs
