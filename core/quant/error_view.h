// Everything the Error tab shows for one float32 tensor and one scheme, in one quantization and one
// fused pass: the error metrics, a linear value histogram, the format grid to overlay, and
// absolute/relative error histograms on log2 bins split into clipping and rounding parts.
// Exercise: tests/tst_error_view.cpp, `quantscope-cli bench error-view --n 16777216 --threads 1`.
//
//   qs::Scheme s = qs::parse_scheme("e4m3fn/tensor");
//   qs::ErrorView v = qs::compute_error_view(s, x.data(), {rows, cols});
//   double db = v.metrics.sqnr_db();                 // the same number `analyze` prints
//   uint64_t in_bin_10 = v.values.counts[10];        // [v.values.bin_lo(10), v.values.bin_hi(10))
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "quant/metrics.h"
#include "quant/scheme.h"
#include "util/parallel.h"

namespace qs {

// Equal-width bins over [lo, hi]. Finite x in [lo, hi] goes to bin min(floor((x - lo) * (bins / (hi - lo))),
// bins - 1), computed in double (so x == hi is in the last bin); finite x outside is `below` / `above`.
// Every element is counted exactly once: sum(counts) + below + above + nan + pos_inf + neg_inf = n.
struct LinearHistogram {
  double lo = -1, hi = 1;
  std::vector<uint64_t> counts;
  uint64_t below = 0, above = 0, nan = 0, pos_inf = 0, neg_inf = 0;

  int bins() const { return int(counts.size()); }
  double bin_width() const { return counts.empty() ? 0.0 : (hi - lo) / double(counts.size()); }
  double bin_lo(int k) const { return lo + bin_width() * k; }
  double bin_hi(int k) const { return k + 1 == bins() ? hi : lo + bin_width() * (k + 1); }
  uint64_t total() const;
};

// Magnitudes binned by their float32 binary exponent, the error split by whether the element was
// clipped (|x| > B, B = clip_bound(format, scale) of its group, as in ErrorMetrics) or only rounded.
// Bin k in [1, 254] holds [2^(k-127), 2^(k-126)); bin 0 holds the float32 subnormals (0, 2^-126).
// For n finite inputs: sum(rounding) + sum(clipping) + zeros + non_finite + undefined = n.
struct Log2ErrorHistogram {
  static constexpr int kBins = 255;
  std::array<uint64_t, kBins> rounding{}, clipping{};
  uint64_t zeros = 0;       // exact (error 0); never clipped
  uint64_t non_finite = 0;  // the quantized value is inf or NaN (ieee overflow) while x is finite
  uint64_t undefined = 0;   // relative error of x = 0 (always 0 for the absolute histogram)

  static double bin_lo(int k);  // 2^(k - 127); bin 0: the smallest subnormal 2^-149
  static double bin_hi(int k);  // 2^(k - 126)
  // The bin of a finite, non-zero float magnitude (the test oracle uses this too).
  static int bin_of(float magnitude);
  uint64_t total() const;
  // First and last non-empty bins (rounding or clipping); first > last when all are empty.
  int first_bin() const;
  int last_bin() const;
};

// The format's representable values as the scheme places them on the data: decode(code) * scale in
// float32 (affine formats: (code - zero_point) * scale), restricted to the value histogram's range
// plus the nearest value beyond each end (where x at the ends rounds to: float rounding of s * max can
// land a hair beyond amax, and an affine zero point shifts the grid by up to half a step).
struct GridOverlay {
  std::vector<double> values;   // ascending, distinct, finite
  float scale = 1.0f;           // the scale of the group drawn
  int32_t zero_point = 0;       // affine (unsigned integer) formats
  std::size_t group = 0;        // which group's scale (0 for per-tensor schemes)
  std::size_t groups = 1;       // how many groups the scheme has
  std::size_t total_values = 0; // values of the grid before restricting to the range
  std::string note;             // "per-tensor scale 0.0035"; "block 17 of 4096 (largest amax, scale 2^-3)"
};

// Which group's grid a channel/block scheme shows: the group holding the tensor's amax (its grid spans
// the whole value axis), or the group with the median scale (a typical group).
enum class GridGroup { Largest, Median };

struct ErrorViewOptions {
  int value_bins = 512;                  // linear bins of the value histogram, 1..65536
  double range_lo = 0, range_hi = 0;     // value histogram range; hi <= lo (default): [-amax, amax]
  GridGroup grid_group = GridGroup::Largest;
  int threads = 1;                       // <= 0: all hardware threads
};

struct ErrorView {
  std::string scheme;            // canonical scheme text
  std::size_t n = 0;             // elements
  uint64_t finite = 0, nan = 0, pos_inf = 0, neg_inf = 0;  // inputs by class
  SchemeOutput out;              // overflow / underflow / NaN counts, amax, groups, tensor scale
  ErrorMetrics metrics;          // MSE, SQNR, max/mean |error|, clipping vs rounding sums, clipped
  uint64_t clipped = 0;          // elements in the clipping parts (equals metrics.clipped)
  LinearHistogram values;        // of x
  Log2ErrorHistogram abs_error;  // |x - q| (float32 arithmetic)
  Log2ErrorHistogram rel_error;  // |x - q| / |x| (float32 arithmetic)
  GridOverlay grid;
  bool cancelled = false;        // progress returned false: the rest of the result is incomplete
  double bits_per_value = 0;     // storage per value with the scales (quant/scheme.h bits_per_value)
};

// Quantizes x (float32, C order, `shape`; its product is the element count) with `s` through
// apply_scheme, then makes one pass over (x, q) for the histograms. `progress(done, total)` counts
// 2 x n steps (quantization, then histograms); returning false cancels. `scratch`, when given, holds
// the quantized tensor afterwards (reused between calls, so repeated views do not reallocate).
// Throws FormatError for a channel axis out of range, std::invalid_argument for bad options.
ErrorView compute_error_view(const Scheme& s, const float* x, const std::vector<int64_t>& shape,
                             const ErrorViewOptions& opt = {}, const ProgressFn& progress = {},
                             std::vector<float>* scratch = nullptr);

// CSV of the error histograms, "kind,part,bin_lo,bin_hi,count" with kind abs_error | rel_error and
// part rounding | clipping (non-empty bins), then the zero / non_finite / undefined counters (bin_lo =
// bin_hi = 0). Each line prefixed by `prefix` (e.g. "e4m3fn/tensor,").
std::string error_view_histogram_csv(const ErrorView& v, const std::string& prefix = {});

}  // namespace qs
