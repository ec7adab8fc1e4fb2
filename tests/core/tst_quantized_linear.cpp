// QuantizedLinear (core/gemm/quantized_linear.h): bit-for-bit equal to quantizing by hand (the int8 encoder
// oracle encode_f32_ref, and quantize_int8_ref for the dynamic modes) and calling the GEMM + epilogue
// directly, at every GEMM level (one test per level; a level this CPU lacks shows as skipped) and against the
// scalar oracle (gemm_int8_ref + dequant_ref); close to the float64 matmul within a bound derived from the
// scales; static (any observer) and dynamic (per row, per tensor) activations, per-channel and per-tensor
// weights, bias, odd shapes; weight memory about 1/4 of float32; batching and thread count do not change
// results; zeros, NaN and bad input.
// Run: ninja -C build tst_quantized_linear && build/tests/core/tst_quantized_linear
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "format/encode_simd.h"
#include "format/format.h"
#include "gemm/gemm.h"
#include "gemm/quantized_linear.h"
#include "quant/int8_quant.h"
#include "quant/observer.h"
#include "quant/scheme.h"
#include "test_rng.h"

namespace {

// Inputs are seeded from the row (or test) name with this basis, so a failing row reproduces its input exactly.
constexpr uint64_t kSeedBasis = 0x9e3779b97f4a7c15ULL;

Rng rng_for(const std::string& tag) { return Rng::from_tag(tag.c_str(), kSeedBasis); }

const qs::Format& int8f() {
  static const qs::Format f = qs::parse_format("int8");
  return f;
}

// rows x cols, each row with its own magnitude 2^(r % 5 - 2), so per-row scales differ.
std::vector<float> random_matrix(Rng& rng, std::size_t rows, std::size_t cols) {
  std::vector<float> m(rows * cols);
  for (std::size_t r = 0; r < rows; ++r) {
    const double mag = std::ldexp(1.0, int(r % 5) - 2);
    for (std::size_t c = 0; c < cols; ++c) m[r * cols + c] = float(rng.between(-mag, mag));
  }
  return m;
}

double amax_finite(const float* x, std::size_t n) {
  double a = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (std::isfinite(x[i])) a = std::max(a, double(std::fabs(x[i])));
  return a;
}

// Quantizing by hand with the int8 encoder oracle: s = amax_scale(int8, amax) per row or per tensor
// (or the given fixed scale), codes = encode_f32_ref(int8, nearest + saturate).
void hand_quantize(const float* x, std::size_t rows, std::size_t cols, bool per_row, float fixed_scale,
                   std::vector<int8_t>& q, std::vector<float>& s) {
  q.assign(rows * cols, 0);
  s.assign(per_row ? rows : 1, 0.0f);
  if (!per_row) s[0] = fixed_scale > 0 ? fixed_scale : qs::amax_scale(int8f(), amax_finite(x, rows * cols));
  for (std::size_t r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    const float sc = per_row ? (s[r] = qs::amax_scale(int8f(), amax_finite(row, cols))) : s[0];
    qs::EncodeJob job;
    job.x = row;
    job.n = cols;
    job.scale = sc;
    job.codes8 = reinterpret_cast<uint8_t*>(q.data() + r * cols);
    job.index0 = r * cols;
    qs::encode_f32_ref(int8f(), qs::EncodeOptions{}, job);
  }
}

// The same bits, or a failure naming the first difference.
::testing::AssertionResult same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << "sizes differ: " << a.size() << " vs " << b.size();
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0)
      return ::testing::AssertionFailure() << "index " << i << ": " << ::testing::PrintToString(a[i]) << " vs "
                                           << ::testing::PrintToString(b[i]);
  return ::testing::AssertionSuccess();
}

struct ByHandCase {
  int M, K, N;
  qs::WeightGranularity gran;
  qs::ActQuant act;
  bool withBias;
  int threads;
};

void check_by_hand(const ByHandCase& c, const std::string& name, qs::SimdLevel level) {
  const int M = c.M, K = c.K, N = c.N, threads = c.threads;
  const qs::WeightGranularity gran = c.gran;
  const qs::ActQuant act = c.act;
  const bool withBias = c.withBias;
  Rng rng = rng_for(name);
  const std::vector<float> W = random_matrix(rng, N, K);
  const std::vector<float> x = random_matrix(rng, M, K);
  std::vector<float> bias(withBias ? N : 0);
  for (auto& v : bias) v = float(rng.between(-1, 1));
  const bool per_channel = gran == qs::WeightGranularity::PerChannel;

  qs::QuantizedLinear lin(W.data(), N, K, withBias ? bias.data() : nullptr, gran, act, threads);
  EXPECT_EQ(lin.out_features(), N);
  EXPECT_EQ(lin.in_features(), K);
  float s_static = 0;
  if (act == qs::ActQuant::Static) {
    // Calibrate in two batches; the by-hand scale comes from one MinMaxObserver over all of x.
    const std::size_t half = std::size_t(M) / 2;
    lin.calibrate(x.data(), half);
    lin.calibrate(x.data() + half * K, std::size_t(M) - half);
    EXPECT_EQ(lin.calibrated_rows(), std::size_t(M));
    EXPECT_FALSE(lin.frozen());
    lin.freeze();
    EXPECT_TRUE(lin.frozen());
    qs::MinMaxObserver obs;
    obs.observe(x.data(), x.size());
    s_static = qs::amax_scale(int8f(), obs.amax());
    EXPECT_EQ(lin.static_scale(), s_static);
  }

  // Weights by hand: per output channel = per row of W (N x K), packed as the NxK weight of a linear layer.
  std::vector<int8_t> wq;
  std::vector<float> sw;
  hand_quantize(W.data(), N, K, per_channel, 0, wq, sw);
  ASSERT_EQ(lin.weight_scales().size(), sw.size());
  for (std::size_t j = 0; j < sw.size(); ++j) EXPECT_EQ(lin.weight_scales()[j], sw[j]) << "channel " << j;
  const qs::PackedB pw = qs::pack_b_int8(wq.data(), K, N, K, qs::BLayout::NxK);
  const qs::PackedB& lw = lin.packed_weights();
  EXPECT_EQ(lw.K(), K);
  EXPECT_EQ(lw.N(), N);
  ASSERT_EQ(lw.bytes(), pw.bytes());
  EXPECT_EQ(std::memcmp(lw.data(), pw.data(), std::size_t(pw.panels()) * pw.k_groups() * qs::kGemmPanel * 4), 0);
  EXPECT_EQ(std::memcmp(lw.u(), pw.u(), std::size_t(N) * sizeof(int32_t)), 0);

  // Activations by hand.
  std::vector<int8_t> xq;
  std::vector<float> sx;
  hand_quantize(x.data(), M, K, act == qs::ActQuant::DynamicPerRow, s_static, xq, sx);
  if (act != qs::ActQuant::Static) {
    // The classic reference quantizer (quant/int8_quant.h) gives the same codes and scales here.
    std::vector<int8_t> rq(xq.size());
    std::vector<float> rs(sx.size());
    qs::quantize_int8_ref(x.data(), M, K, act == qs::ActQuant::DynamicPerRow, rq.data(), rs.data());
    EXPECT_EQ(rq, xq);
    EXPECT_EQ(rs, sx);
  }
  qs::Dequant dq;
  dq.scale_a = sx;
  dq.scale_b = sw;
  dq.bias = bias;
  qs::QMatrixA A;
  A.data = xq.data();
  A.M = M;
  A.K = K;

  // The scalar oracle: unpacked K x N weight (W transposed), int32 product, epilogue.
  std::vector<int8_t> wkn(std::size_t(K) * N);
  for (int j = 0; j < N; ++j)
    for (int k = 0; k < K; ++k) wkn[std::size_t(k) * N + j] = wq[std::size_t(j) * K + k];
  std::vector<int32_t> C(std::size_t(M) * N);
  qs::gemm_int8_ref(xq.data(), wkn.data(), C.data(), M, K, N);
  std::vector<float> y_ref(std::size_t(M) * N);
  qs::dequant_ref(C.data(), M, N, N, dq, y_ref.data(), N);

  std::vector<float> y(std::size_t(M) * N, -1.0f), y_hand(std::size_t(M) * N);
  const qs::EncodeStats st = lin.forward(x.data(), M, y.data(), threads, level);
  EXPECT_EQ(st.nan, 0u);
  EXPECT_EQ(st.overflow, 0u);
  qs::gemm_q8_dequant(A, pw, dq, y_hand.data(), N, threads, level);
  EXPECT_TRUE(same_bits(y, y_hand)) << "forward vs by hand";
  EXPECT_TRUE(same_bits(y, y_ref)) << "forward vs the scalar oracle";

  // Close to the float64 matmul: x̂ŵ - xw = (x̂ - x)ŵ + x(ŵ - w) with |x̂ - x| <= s_x/2, |ŵ - w| <= s_w/2 and
  // |ŵ| <= |w|max + s_w/2, so each term is within (s_x (|w|max + s_w/2) + s_w |x|max) / 2; summed over K,
  // plus a small allowance for float32 rounding of the scales and the epilogue.
  double worst = 0;
  std::size_t bad = 0;
  for (int i = 0; i < M; ++i) {
    const float* xi = x.data() + std::size_t(i) * K;
    const double xmax = amax_finite(xi, K);
    const double s_x = sx[sx.size() == 1 ? 0 : i];
    for (int j = 0; j < N; ++j) {
      const float* wj = W.data() + std::size_t(j) * K;
      const double wmax = amax_finite(wj, K);
      const double s_w = sw[sw.size() == 1 ? 0 : j];
      double exact = withBias ? bias[j] : 0.0, mag = withBias ? std::fabs(bias[j]) : 0.0;
      for (int k = 0; k < K; ++k) {
        exact += double(xi[k]) * wj[k];
        mag += std::fabs(double(xi[k]) * wj[k]);
      }
      const double bound = K * (s_x * (wmax + s_w / 2) + s_w * xmax) / 2 + 1e-5 * (mag + K * s_x * s_w * 127 * 127);
      const double err = std::fabs(double(y[std::size_t(i) * N + j]) - exact);
      if (!(err <= bound) && bad++ == 0) ADD_FAILURE() << "(" << i << "," << j << "): |err| " << err << " > " << bound;
      worst = std::max(worst, err / bound);
    }
  }
  EXPECT_EQ(bad, 0u) << "outputs beyond the bound";
  EXPECT_LE(worst, 1.0);
}

// One instance per GEMM level ("generic", "avx2", "vnni"); a level this CPU cannot run is skipped, saying so.
class QuantizedLinearAtLevel : public ::testing::TestWithParam<qs::SimdLevel> {
 protected:
  void SetUp() override {
    const auto& levels = qs::available_gemm_levels();
    if (std::find(levels.begin(), levels.end(), GetParam()) == levels.end())
      GTEST_SKIP() << "gemm level " << qs::gemm_level_name(GetParam()) << " is not available on this CPU";
  }
};

}  // namespace

TEST_P(QuantizedLinearAtLevel, MatchesByHand) {
  struct Shape { int M, K, N; };
  const Shape shapes[] = {{1, 1, 1}, {1, 5, 1}, {3, 7, 1}, {1, 7, 3}, {4, 13, 50}, {17, 33, 97}, {32, 256, 130}, {9, 1030, 49}};
  const qs::WeightGranularity grans[] = {qs::WeightGranularity::PerChannel, qs::WeightGranularity::PerTensor};
  const qs::ActQuant acts[] = {qs::ActQuant::DynamicPerRow, qs::ActQuant::DynamicPerTensor, qs::ActQuant::Static};
  int n = 0;
  for (const Shape& sh : shapes)
    for (auto g : grans)
      for (auto a : acts)
        for (bool b : {false, true}) {
          const int threads = (n++ % 3 == 0) ? 3 : 1;
          const std::string name = std::to_string(sh.M) + "x" + std::to_string(sh.K) + "x" + std::to_string(sh.N) + "/" +
                                   qs::to_string(g) + "/" + qs::to_string(a) + (b ? "/bias" : "/nobias") + "/t" +
                                   std::to_string(threads);
          SCOPED_TRACE(name + "/" + qs::gemm_level_name(GetParam()));
          check_by_hand({sh.M, sh.K, sh.N, g, a, b, threads}, name, GetParam());
        }
}

INSTANTIATE_TEST_SUITE_P(AllLevels, QuantizedLinearAtLevel,
                         ::testing::Values(qs::SimdLevel::Generic, qs::SimdLevel::Avx2, qs::SimdLevel::Avx512),
                         [](const ::testing::TestParamInfo<qs::SimdLevel>& i) { return std::string(qs::gemm_level_name(i.param)); });

TEST(QuantizedLinear, WeightMemory) {
  struct Case {
    const char* name;
    int out, in;
    qs::WeightGranularity gran;
  };
  const Case cases[] = {{"768x768/channel", 768, 768, qs::WeightGranularity::PerChannel},
                        {"768x768/tensor", 768, 768, qs::WeightGranularity::PerTensor},
                        {"4096x1024/channel", 4096, 1024, qs::WeightGranularity::PerChannel},
                        {"1000x1001/channel", 1000, 1001, qs::WeightGranularity::PerChannel},
                        {"96x512/tensor", 96, 512, qs::WeightGranularity::PerTensor}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Rng rng = rng_for(c.name);
    const std::vector<float> W = random_matrix(rng, c.out, c.in);
    const qs::QuantizedLinear lin(W.data(), c.out, c.in, nullptr, c.gran, qs::ActQuant::DynamicPerRow, 0);
    const std::size_t scales = c.gran == qs::WeightGranularity::PerChannel ? std::size_t(c.out) : 1;
    EXPECT_EQ(lin.float_weight_bytes(), std::size_t(4) * c.out * c.in);
    EXPECT_EQ(lin.weight_bytes(), lin.packed_weights().bytes() + scales * sizeof(float));
    // Packed int8: one byte per weight, padded to whole panels of columns and groups of 4 in K, plus
    // int32 per-column terms over the padded columns and the float32 scales.
    const double padN = double(lin.packed_weights().panels()) * qs::kGemmPanel;
    const double padK = double(lin.packed_weights().k_groups()) * 4;
    const double ratio = double(lin.weight_bytes()) / double(lin.float_weight_bytes());
    const double hi = (padN * padK + 2 * 4 * padN + 4 * double(scales)) / (4.0 * c.out * c.in);
    std::cout << c.name << ": int8 " << lin.weight_bytes() << " bytes vs float32 " << lin.float_weight_bytes()
              << " bytes, ratio " << ratio << "\n";
    EXPECT_GE(ratio, 0.25);
    EXPECT_LE(ratio, hi + 1e-12);
    EXPECT_LT(ratio, 0.27);  // about 1/4 for layer-sized matrices
  }
}

TEST(QuantizedLinear, StaticObserverSetter) {
  struct Case {
    const char* name;
    int observer;  // 0 MinMax (default), 1 MovingAverageMinMax, 2 HistogramPercentile, 3 Mse
  };
  const Case cases[] = {{"minmax", 0}, {"moving-average", 1}, {"percentile-99", 2}, {"mse", 3}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto make = [&]() -> std::unique_ptr<qs::Observer> {
      switch (c.observer) {
        case 1: return std::make_unique<qs::MovingAverageMinMaxObserver>(0.1);
        case 2: return std::make_unique<qs::HistogramPercentileObserver>(99.0);
        case 3: return std::make_unique<qs::MseObserver>(int8f(), 4096, 7);
        default: return std::make_unique<qs::MinMaxObserver>();
      }
    };
    const int M = 24, K = 37, N = 19;
    Rng rng = rng_for(c.name);
    const std::vector<float> W = random_matrix(rng, N, K);
    std::vector<float> calib = random_matrix(rng, 3 * M, K);
    std::vector<float> x = random_matrix(rng, M, K);
    x[5] = 40.0f;  // an outlier beyond any calibrated range: saturates in the static path
    std::vector<float> bias(N);
    for (auto& v : bias) v = float(rng.between(-1, 1));

    qs::QuantizedLinear lin(W.data(), N, K, bias.data(), qs::WeightGranularity::PerChannel, qs::ActQuant::Static);
    if (c.observer != 0) lin.set_observer(make());
    auto twin = make();
    for (int b = 0; b < 3; ++b) {
      lin.calibrate(calib.data() + std::size_t(b) * M * K, M);
      twin->observe(calib.data() + std::size_t(b) * M * K, std::size_t(M) * K);
    }
    lin.freeze();
    const float s = qs::amax_scale(int8f(), twin->amax());
    EXPECT_EQ(lin.static_scale(), s);
    EXPECT_EQ(lin.observer().amax(), twin->amax());

    std::vector<float> y(std::size_t(M) * N), y_hand(y.size());
    const qs::EncodeStats st = lin.forward(x.data(), M, y.data(), 2);
    EXPECT_GE(st.overflow, 1u);  // the outlier

    std::vector<int8_t> xq, wq;
    std::vector<float> sx, sw;
    hand_quantize(x.data(), M, K, false, s, xq, sx);
    EXPECT_EQ(xq[5], int8_t(127));
    hand_quantize(W.data(), N, K, true, 0, wq, sw);
    const qs::PackedB pw = qs::pack_b_int8(wq.data(), K, N, K, qs::BLayout::NxK);
    qs::QMatrixA A;
    A.data = xq.data();
    A.M = M;
    A.K = K;
    qs::Dequant dq;
    dq.scale_a = sx;
    dq.scale_b = sw;
    dq.bias = bias;
    qs::gemm_q8_dequant(A, pw, dq, y_hand.data(), N, 2);
    EXPECT_TRUE(same_bits(y, y_hand));

    // Replacing the observer forgets the calibration and the frozen scale.
    lin.set_observer(nullptr);
    EXPECT_FALSE(lin.frozen());
    EXPECT_EQ(lin.calibrated_rows(), 0u);
    EXPECT_THROW(lin.forward(x.data(), M, y.data()), std::logic_error);
    EXPECT_THROW(lin.freeze(), std::logic_error);
  }
}

// Per-row dynamic and static scales make each output row a function of its input row only: running the
// batch at once, row by row, on 1 thread or on all of them gives the same bits.
TEST(QuantizedLinear, BatchingAndThreads) {
  struct Case {
    const char* name;
    qs::ActQuant act;
  };
  const Case cases[] = {{"dynamic-row", qs::ActQuant::DynamicPerRow}, {"static", qs::ActQuant::Static}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const int M = 67, K = 301, N = 150;
    Rng rng = rng_for(c.name);
    const std::vector<float> W = random_matrix(rng, N, K);
    const std::vector<float> x = random_matrix(rng, M, K);
    qs::QuantizedLinear lin(W.data(), N, K, nullptr, qs::WeightGranularity::PerChannel, c.act);
    if (c.act == qs::ActQuant::Static) {
      lin.calibrate(x.data(), M);
      lin.freeze();
    }
    std::vector<float> y1(std::size_t(M) * N), yall(y1.size()), yrows(y1.size());
    lin.forward(x.data(), M, y1.data(), 1);
    lin.forward(x.data(), M, yall.data(), 0);
    for (int i = 0; i < M; ++i) lin.forward(x.data() + std::size_t(i) * K, 1, yrows.data() + std::size_t(i) * N, 1);
    EXPECT_TRUE(same_bits(y1, yall)) << "1 thread vs all";
    EXPECT_TRUE(same_bits(y1, yrows)) << "batch vs row by row";
  }
}

TEST(QuantizedLinear, ZerosAndNonFinite) {
  const int M = 3, K = 10, N = 5;
  Rng rng = rng_for("zerosAndNonFinite");
  std::vector<float> W = random_matrix(rng, N, K);
  std::fill(W.begin() + 2 * K, W.begin() + 3 * K, 0.0f);  // an all-zero output channel: scale 1, codes 0
  std::vector<float> bias(N);
  for (auto& v : bias) v = float(rng.between(-1, 1));
  qs::QuantizedLinear lin(W.data(), N, K, bias.data());
  EXPECT_EQ(lin.weight_scales()[2], 1.0f);

  // All-zero input: y is the bias exactly, in every mode.
  const std::vector<float> zeros(std::size_t(M) * K, 0.0f);
  std::vector<float> y(std::size_t(M) * N);
  for (qs::ActQuant a : {qs::ActQuant::DynamicPerRow, qs::ActQuant::DynamicPerTensor, qs::ActQuant::Static}) {
    SCOPED_TRACE(qs::to_string(a));
    lin.set_act_quant(a);
    if (a == qs::ActQuant::Static) {
      lin.calibrate(zeros.data(), M);
      lin.freeze();
      EXPECT_EQ(lin.static_scale(), 1.0f);
    }
    lin.forward(zeros.data(), M, y.data());
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) EXPECT_EQ(y[std::size_t(i) * N + j], bias[j]) << "(" << i << ", " << j << ")";
  }

  // NaN and inf in the input are counted; the output stays finite (NaN -> 0, inf -> +-127).
  std::vector<float> x = random_matrix(rng, M, K);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  x[K + 4] = std::numeric_limits<float>::infinity();
  lin.set_act_quant(qs::ActQuant::DynamicPerRow);
  const qs::EncodeStats st = lin.forward(x.data(), M, y.data());
  EXPECT_EQ(st.nan, 1u);
  EXPECT_EQ(st.overflow, 1u);
  for (float v : y) EXPECT_TRUE(std::isfinite(v)) << v;

  // NaN in the weights: counted at construction, code 0.
  W[7] = std::numeric_limits<float>::quiet_NaN();
  const qs::QuantizedLinear lnan(W.data(), N, K);
  EXPECT_EQ(lnan.weight_stats().nan, 1u);
}

TEST(QuantizedLinear, BadInput) {
  const std::vector<float> W(12, 0.5f), x(8, 1.0f);
  std::vector<float> y(8);
  EXPECT_THROW(qs::QuantizedLinear(nullptr, 3, 4), std::invalid_argument);
  EXPECT_THROW(qs::QuantizedLinear(W.data(), 0, 4), std::invalid_argument);
  EXPECT_THROW(qs::QuantizedLinear(W.data(), 3, -1), std::invalid_argument);
  qs::QuantizedLinear lin(W.data(), 3, 4);
  EXPECT_THROW(lin.forward(nullptr, 2, y.data()), std::invalid_argument);
  EXPECT_THROW(lin.forward(x.data(), 2, nullptr), std::invalid_argument);
  EXPECT_THROW(lin.forward(x.data(), 0, y.data()), std::invalid_argument);
  EXPECT_THROW(lin.calibrate(nullptr, 2), std::invalid_argument);
  lin.set_act_quant(qs::ActQuant::Static);
  EXPECT_THROW(lin.forward(x.data(), 2, y.data()), std::logic_error);
  EXPECT_THROW(lin.freeze(), std::logic_error);
  lin.calibrate(x.data(), 2);
  lin.freeze();
  lin.forward(x.data(), 2, y.data());
  for (float v : y) EXPECT_TRUE(std::isfinite(v)) << v;

  // in_features beyond the GEMM's int32-safe depth: refused by the GEMM with a clear message.
  const int bigK = 200000;
  const std::vector<float> Wbig(bigK, 0.25f), xbig(bigK, 1.0f);
  qs::QuantizedLinear big(Wbig.data(), 1, bigK);
  float yb = 0;
  EXPECT_THROW(big.forward(xbig.data(), 1, &yb), qs::GemmError);
}
