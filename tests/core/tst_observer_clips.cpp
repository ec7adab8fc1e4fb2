// The observers of quant/observer.h as weight scale rules (issue: block-scale rules and observers):
// "e4m3fn/tensor:p99.9" and "int8/channel:0:mse" take s = clip / max_finite from a HistogramPercentileObserver
// or an MseObserver fed the group's values. Checked against the observers run here directly, through
// apply_scheme and the Error view.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "format/encode_simd.h"
#include "quant/error_view.h"
#include "quant/observer.h"
#include "quant/scheme.h"
#include "test_rng.h"

namespace {

std::vector<float> fakeQuant(const qs::Format& f, const float* x, std::size_t n, float scale) {
  std::vector<float> y(n);
  qs::EncodeJob job;
  job.x = x;
  job.n = n;
  job.scale = scale;
  job.values = y.data();
  qs::encode_f32_ref(f, {}, job);
  return y;
}

}  // namespace

TEST(ObserverClips, Spellings) {
  struct Case {
    const char* in;
    const char* text;
    qs::Scheme::Clip clip;
    double pct;
  };
  const Case cases[] = {{"e4m3fn/tensor:p99.9", "e4m3fn/tensor:p99.9", qs::Scheme::Clip::Percentile, 99.9},
                        {"int8/channel:0:mse", "int8/channel:0:mse", qs::Scheme::Clip::Mse, 100},
                        {"E4M3FN/TENSOR:MSE", "e4m3fn/tensor:mse", qs::Scheme::Clip::Mse, 100},
                        {"int8/channel:-1:p99.99", "int8/channel:-1:p99.99", qs::Scheme::Clip::Percentile, 99.99},
                        {"int8/channel:1", "int8/channel:1", qs::Scheme::Clip::Amax, 100}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.in);
    const qs::Scheme s = qs::parse_scheme(c.in);
    EXPECT_EQ(s.text, c.text);
    EXPECT_EQ(s.clip, c.clip);
    EXPECT_EQ(s.percentile, c.pct);
    EXPECT_EQ(qs::parse_scheme(s.text).text, s.text);
  }
  for (const char* bad : {"uint8/tensor:mse", "e4m3fn/tensor:q5", "e4m3fn/tensor:p0", "e4m3fn/tensor:p101",
                          "e4m3fn/tensor:p", "e4m3fn/block:32:p99"}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW(qs::parse_scheme(bad), qs::FormatError);
  }
}

TEST(ObserverClips, TensorPercentileIsTheObserversClip) {
  Rng r = Rng::from_tag("pct");
  std::vector<float> x(200000);
  for (float& v : x) v = float(r.laplace());
  const qs::Scheme s = qs::parse_scheme("e4m3fn/tensor:p99.9");
  qs::HistogramPercentileObserver o(99.9, 2048);
  o.observe(x.data(), x.size());
  const float want_scale = float(o.amax()) / 448.0f;
  std::vector<float> y(x.size());
  qs::ErrorMetrics m;
  const qs::SchemeOutput out = qs::apply_scheme(s, x.data(), {int64_t(x.size())}, y.data(), 2, {}, &m);
  ASSERT_EQ(out.observed_scales.size(), 1u);
  EXPECT_EQ(out.observed_scales[0], want_scale);
  EXPECT_EQ(y, fakeQuant(s.format, x.data(), x.size(), want_scale));
  EXPECT_GT(m.clipped, 0u);  // the top 0.1% lies beyond the clip
  EXPECT_LT(m.clipped, x.size() / 500);
  const qs::ErrorView v = qs::compute_error_view(s, x.data(), {int64_t(x.size())});
  EXPECT_EQ(v.clipped, m.clipped);
  EXPECT_EQ(v.grid.scale, want_scale);
}

TEST(ObserverClips, ChannelMseIsTheObserversClip) {
  Rng r = Rng::from_tag("mse");
  const std::size_t rows = 6, cols = 3000;
  std::vector<float> x(rows * cols);
  for (float& v : x) v = float(r.normal());
  for (std::size_t i = 0; i < x.size(); i += 311) x[i] *= 30;  // outliers that an MSE clip cuts
  const qs::Scheme s = qs::parse_scheme("int8/channel:0:mse");
  std::vector<float> y(x.size());
  qs::ErrorMetrics m_mse, m_amax;
  const qs::SchemeOutput out = qs::apply_scheme(s, x.data(), {int64_t(rows), int64_t(cols)}, y.data(), 3, {}, &m_mse);
  ASSERT_EQ(out.observed_scales.size(), rows);
  for (std::size_t c = 0; c < rows; ++c) {
    qs::MseObserver o(s.format, std::size_t(1) << 20, 1);
    o.observe(x.data() + c * cols, cols);
    const float want = float(o.amax()) / 127.0f;
    EXPECT_EQ(out.observed_scales[c], want) << "channel " << c;
    const auto wy = fakeQuant(s.format, x.data() + c * cols, cols, want);
    for (std::size_t i = 0; i < cols; ++i) ASSERT_EQ(y[c * cols + i], wy[i]) << c << "," << i;
  }
  std::vector<float> ya(x.size());
  qs::apply_scheme(qs::parse_scheme("int8/channel:0"), x.data(), {int64_t(rows), int64_t(cols)}, ya.data(), 1, {}, &m_amax);
  EXPECT_GT(m_mse.sqnr_db(), m_amax.sqnr_db());  // with 1% outliers at 30 sigma, clipping them pays
  const qs::ErrorView v = qs::compute_error_view(s, x.data(), {int64_t(rows), int64_t(cols)});
  EXPECT_EQ(v.clipped, m_mse.clipped);
}
