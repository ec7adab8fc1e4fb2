// Observers over a stream of batches (quant/observe_stream.h): each observer's clip per batch against its
// published formula computed here on fixed sequences — PyTorch's MinMax and MovingAverageMinMax (observe,
// then quantize with the updated range), Transformer Engine's delayed scaling (the history of the batches
// before, max or most recent, times 2^margin) — and the SQNR / clipped count of each row against a direct
// fake quantization with that scale.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <vector>

#include "format/encode_simd.h"
#include "quant/observe_stream.h"
#include "quant/scheme.h"
#include "test_rng.h"

TEST(ObserveStream, FormulasOnAFixedSequence) {
  const qs::Format f = qs::parse_format("int8");
  const auto specs = qs::parse_observer_specs("current,minmax,movavg:0.25,delayed:3:max:1,delayed:2:recent:0");
  ASSERT_EQ(specs.size(), 5u);
  EXPECT_EQ(specs[2].text, "movavg:0.25");
  EXPECT_EQ(specs[3].text, "delayed:3:max:1");
  EXPECT_EQ(specs[4].text, "delayed:2:recent:0");
  qs::ObserveStream st(f, specs);
  Rng r = Rng::from_tag("stream");
  double mm_lo = 0, mm_hi = 0, ma_lo = 0, ma_hi = 0;
  std::deque<double> hist3, hist2;
  for (std::size_t b = 0; b < 12; ++b) {
    SCOPED_TRACE(b);
    std::vector<float> x(500);
    const double sigma = b == 6 ? 40.0 : 1.0 + 0.1 * double(b);  // drift, and a spike at batch 6
    for (float& v : x) v = float(r.normal() * sigma + (b % 2 ? 0.5 : -0.25));
    const double lo = *std::min_element(x.begin(), x.end()), hi = *std::max_element(x.begin(), x.end());
    const double amax = std::max(std::fabs(lo), std::fabs(hi));
    mm_lo = b ? std::min(mm_lo, lo) : lo;
    mm_hi = b ? std::max(mm_hi, hi) : hi;
    if (b == 0) ma_lo = lo, ma_hi = hi;
    else ma_lo += 0.25 * (lo - ma_lo), ma_hi += 0.25 * (hi - ma_hi);
    const double d3 = hist3.empty() ? amax : 2.0 * *std::max_element(hist3.begin(), hist3.end());
    const double d2 = hist2.empty() ? amax : hist2.back();
    const double want[] = {amax, std::max(std::fabs(mm_lo), std::fabs(mm_hi)), std::max(std::fabs(ma_lo), std::fabs(ma_hi)), d3, d2};
    const auto rows = st.step(x.data(), x.size());
    ASSERT_EQ(rows.size(), 5u);
    for (std::size_t k = 0; k < 5; ++k) {
      SCOPED_TRACE(specs[k].text);
      EXPECT_EQ(rows[k].batch, b);
      EXPECT_EQ(rows[k].batch_amax, amax);
      EXPECT_DOUBLE_EQ(rows[k].clip, want[k]);
      EXPECT_EQ(rows[k].scale, qs::amax_scale(f, rows[k].clip));
      // The row's errors are those of the batch fake-quantized with its scale.
      std::vector<float> y(x.size());
      qs::EncodeJob job;
      job.x = x.data();
      job.n = x.size();
      job.scale = rows[k].scale;
      job.values = y.data();
      qs::encode_f32_ref(f, {}, job);
      double sx2 = 0, se2 = 0;
      uint64_t clipped = 0;
      const double bound = qs::clip_bound(f, rows[k].scale);
      for (std::size_t i = 0; i < x.size(); ++i) {
        sx2 += double(x[i]) * x[i];
        se2 += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
        clipped += std::fabs(x[i]) > bound ? 1 : 0;
      }
      EXPECT_NEAR(rows[k].sqnr_db, 10 * std::log10(sx2 / se2), 1e-9);
      EXPECT_EQ(rows[k].clipped, clipped);
    }
    // At the spike, delayed scaling (history of calm batches) clips and current scaling does not.
    if (b == 6) {
      EXPECT_EQ(rows[0].clipped, 0u);
      EXPECT_GT(rows[3].clipped, 100u);
      EXPECT_GT(rows[4].clipped, 100u);
    }
    hist3.push_back(amax);
    if (hist3.size() > 3) hist3.pop_front();
    hist2.push_back(amax);
    if (hist2.size() > 2) hist2.pop_front();
  }
}

TEST(ObserveStream, BadSpecsRefused) {
  for (const char* bad : {"", "minmax,", "movavg:0", "movavg:1.5", "p0", "p100.5", "delayed:0", "delayed:4:mean",
                          "delayed:4:max:0.5", "histogram"}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(qs::parse_observer_specs(bad), qs::FormatError);
  }
  EXPECT_EQ(qs::parse_observer_specs("P99.9,MSE")[0].text, "p99.9");
}
