// QuantizedLinear (core/gemm/quantized_linear.h): bit-for-bit equal to quantizing by hand (the int8 encoder
// oracle encode_f32_ref, and quantize_int8_ref for the dynamic modes) and calling the GEMM + epilogue
// directly, at every GEMM level this CPU runs and against the scalar oracle (gemm_int8_ref + dequant_ref);
// close to the float64 matmul within a bound derived from the scales; static (any observer) and dynamic
// (per row, per tensor) activations, per-channel and per-tensor weights, bias, odd shapes; weight memory
// about 1/4 of float32; batching and thread count do not change results; zeros, NaN and bad input.
// Run: cmake --build build --target tst_quantized_linear && build/tests/tst_quantized_linear
#include "format/encode_simd.h"

#include "test_rng.h"
#include "format/format.h"
#include "gemm/gemm.h"
#include "gemm/quantized_linear.h"
#include "quant/int8_quant.h"
#include "quant/observer.h"
#include "quant/scheme.h"

#include <QTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace {

// SplitMix64 seeded from the row name, so a failing row reproduces its input exactly.

const char* tag() { return QTest::currentDataTag() ? QTest::currentDataTag() : QTest::currentTestFunction(); }

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

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::string first_diff(const std::vector<float>& a, const std::vector<float>& b) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0)
      return "index " + std::to_string(i) + ": " + std::to_string(a[i]) + " vs " + std::to_string(b[i]);
  return "sizes differ";
}

}  // namespace

Q_DECLARE_METATYPE(qs::WeightGranularity)
Q_DECLARE_METATYPE(qs::ActQuant)

class tst_QuantizedLinear : public QObject {
  Q_OBJECT

 private slots:
  void matchesByHand_data();
  void matchesByHand();
  void weightMemory_data();
  void weightMemory();
  void staticObserverSetter_data();
  void staticObserverSetter();
  void batchingAndThreads_data();
  void batchingAndThreads();
  void zerosAndNonFinite();
  void badInput();
};

void tst_QuantizedLinear::matchesByHand_data() {
  QTest::addColumn<int>("M");
  QTest::addColumn<int>("K");
  QTest::addColumn<int>("N");
  QTest::addColumn<qs::WeightGranularity>("gran");
  QTest::addColumn<qs::ActQuant>("act");
  QTest::addColumn<bool>("withBias");
  QTest::addColumn<int>("threads");
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
          QTest::newRow(name.c_str()) << sh.M << sh.K << sh.N << g << a << b << threads;
        }
}

void tst_QuantizedLinear::matchesByHand() {
  QFETCH(int, M);
  QFETCH(int, K);
  QFETCH(int, N);
  QFETCH(qs::WeightGranularity, gran);
  QFETCH(qs::ActQuant, act);
  QFETCH(bool, withBias);
  QFETCH(int, threads);
  Rng rng = Rng::from_tag(tag(), 0x9e3779b97f4a7c15ULL);
  const std::vector<float> W = random_matrix(rng, N, K);
  const std::vector<float> x = random_matrix(rng, M, K);
  std::vector<float> bias(withBias ? N : 0);
  for (auto& v : bias) v = float(rng.between(-1, 1));
  const bool per_channel = gran == qs::WeightGranularity::PerChannel;

  qs::QuantizedLinear lin(W.data(), N, K, withBias ? bias.data() : nullptr, gran, act, threads);
  QCOMPARE(lin.out_features(), N);
  QCOMPARE(lin.in_features(), K);
  float s_static = 0;
  if (act == qs::ActQuant::Static) {
    // Calibrate in two batches; the by-hand scale comes from one MinMaxObserver over all of x.
    const std::size_t half = std::size_t(M) / 2;
    lin.calibrate(x.data(), half);
    lin.calibrate(x.data() + half * K, std::size_t(M) - half);
    QCOMPARE(lin.calibrated_rows(), std::size_t(M));
    QVERIFY(!lin.frozen());
    lin.freeze();
    QVERIFY(lin.frozen());
    qs::MinMaxObserver obs;
    obs.observe(x.data(), x.size());
    s_static = qs::amax_scale(int8f(), obs.amax());
    QCOMPARE(lin.static_scale(), s_static);
  }

  // Weights by hand: per output channel = per row of W (N x K), packed as the NxK weight of a linear layer.
  std::vector<int8_t> wq;
  std::vector<float> sw;
  hand_quantize(W.data(), N, K, per_channel, 0, wq, sw);
  QCOMPARE(lin.weight_scales().size(), sw.size());
  for (std::size_t j = 0; j < sw.size(); ++j) QCOMPARE(lin.weight_scales()[j], sw[j]);
  const qs::PackedB pw = qs::pack_b_int8(wq.data(), K, N, K, qs::BLayout::NxK);
  const qs::PackedB& lw = lin.packed_weights();
  QCOMPARE(lw.K(), K);
  QCOMPARE(lw.N(), N);
  QCOMPARE(lw.bytes(), pw.bytes());
  QVERIFY(std::memcmp(lw.data(), pw.data(), std::size_t(pw.panels()) * pw.k_groups() * qs::kGemmPanel * 4) == 0);
  QVERIFY(std::memcmp(lw.u(), pw.u(), std::size_t(N) * sizeof(int32_t)) == 0);

  // Activations by hand.
  std::vector<int8_t> xq;
  std::vector<float> sx;
  hand_quantize(x.data(), M, K, act == qs::ActQuant::DynamicPerRow, s_static, xq, sx);
  if (act != qs::ActQuant::Static) {
    // The classic reference quantizer (quant/int8_quant.h) gives the same codes and scales here.
    std::vector<int8_t> rq(xq.size());
    std::vector<float> rs(sx.size());
    qs::quantize_int8_ref(x.data(), M, K, act == qs::ActQuant::DynamicPerRow, rq.data(), rs.data());
    QVERIFY(rq == xq);
    QVERIFY(rs == sx);
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

  std::vector<float> y(std::size_t(M) * N), y_hand(std::size_t(M) * N);
  for (qs::SimdLevel level : qs::available_gemm_levels()) {
    std::fill(y.begin(), y.end(), -1.0f);
    const qs::EncodeStats st = lin.forward(x.data(), M, y.data(), threads, level);
    QCOMPARE(st.nan, uint64_t(0));
    QCOMPARE(st.overflow, uint64_t(0));
    qs::gemm_q8_dequant(A, pw, dq, y_hand.data(), N, threads, level);
    QVERIFY2(same_bits(y, y_hand), (std::string(qs::gemm_level_name(level)) + ": " + first_diff(y, y_hand)).c_str());
    QVERIFY2(same_bits(y, y_ref), (std::string(qs::gemm_level_name(level)) + " vs oracle: " + first_diff(y, y_ref)).c_str());
  }

  // Close to the float64 matmul: x̂ŵ - xw = (x̂ - x)ŵ + x(ŵ - w) with |x̂ - x| <= s_x/2, |ŵ - w| <= s_w/2 and
  // |ŵ| <= |w|max + s_w/2, so each term is within (s_x (|w|max + s_w/2) + s_w |x|max) / 2; summed over K,
  // plus a small allowance for float32 rounding of the scales and the epilogue.
  double worst = 0;
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
      QVERIFY2(err <= bound, ("(" + std::to_string(i) + "," + std::to_string(j) + "): |err| " + std::to_string(err) +
                              " > " + std::to_string(bound)).c_str());
      worst = std::max(worst, err / bound);
    }
  }
  QVERIFY(worst <= 1.0);
}

void tst_QuantizedLinear::weightMemory_data() {
  QTest::addColumn<int>("out");
  QTest::addColumn<int>("in");
  QTest::addColumn<qs::WeightGranularity>("gran");
  QTest::newRow("768x768/channel") << 768 << 768 << qs::WeightGranularity::PerChannel;
  QTest::newRow("768x768/tensor") << 768 << 768 << qs::WeightGranularity::PerTensor;
  QTest::newRow("4096x1024/channel") << 4096 << 1024 << qs::WeightGranularity::PerChannel;
  QTest::newRow("1000x1001/channel") << 1000 << 1001 << qs::WeightGranularity::PerChannel;
  QTest::newRow("96x512/tensor") << 96 << 512 << qs::WeightGranularity::PerTensor;
}

void tst_QuantizedLinear::weightMemory() {
  QFETCH(int, out);
  QFETCH(int, in);
  QFETCH(qs::WeightGranularity, gran);
  Rng rng = Rng::from_tag(tag(), 0x9e3779b97f4a7c15ULL);
  const std::vector<float> W = random_matrix(rng, out, in);
  const qs::QuantizedLinear lin(W.data(), out, in, nullptr, gran, qs::ActQuant::DynamicPerRow, 0);
  const std::size_t scales = gran == qs::WeightGranularity::PerChannel ? std::size_t(out) : 1;
  QCOMPARE(lin.float_weight_bytes(), std::size_t(4) * out * in);
  QCOMPARE(lin.weight_bytes(), lin.packed_weights().bytes() + scales * sizeof(float));
  // Packed int8: one byte per weight, padded to whole panels of columns and groups of 4 in K, plus
  // int32 per-column terms over the padded columns and the float32 scales.
  const double padN = double(lin.packed_weights().panels()) * qs::kGemmPanel;
  const double padK = double(lin.packed_weights().k_groups()) * 4;
  const double ratio = double(lin.weight_bytes()) / double(lin.float_weight_bytes());
  const double hi = (padN * padK + 2 * 4 * padN + 4 * double(scales)) / (4.0 * out * in);
  qInfo("%s: int8 %zu bytes vs float32 %zu bytes, ratio %.4f", tag(), lin.weight_bytes(), lin.float_weight_bytes(),
        ratio);
  QVERIFY(ratio >= 0.25);
  QVERIFY(ratio <= hi + 1e-12);
  QVERIFY(ratio < 0.27);  // about 1/4 for layer-sized matrices
}

void tst_QuantizedLinear::staticObserverSetter_data() {
  QTest::addColumn<int>("observer");  // 0 MinMax (default), 1 MovingAverageMinMax, 2 HistogramPercentile, 3 Mse
  QTest::newRow("minmax") << 0;
  QTest::newRow("moving-average") << 1;
  QTest::newRow("percentile-99") << 2;
  QTest::newRow("mse") << 3;
}

void tst_QuantizedLinear::staticObserverSetter() {
  QFETCH(int, observer);
  auto make = [&]() -> std::unique_ptr<qs::Observer> {
    switch (observer) {
      case 1: return std::make_unique<qs::MovingAverageMinMaxObserver>(0.1);
      case 2: return std::make_unique<qs::HistogramPercentileObserver>(99.0);
      case 3: return std::make_unique<qs::MseObserver>(int8f(), 4096, 7);
      default: return std::make_unique<qs::MinMaxObserver>();
    }
  };
  const int M = 24, K = 37, N = 19;
  Rng rng = Rng::from_tag(tag(), 0x9e3779b97f4a7c15ULL);
  const std::vector<float> W = random_matrix(rng, N, K);
  std::vector<float> calib = random_matrix(rng, 3 * M, K);
  std::vector<float> x = random_matrix(rng, M, K);
  x[5] = 40.0f;  // an outlier beyond any calibrated range: saturates in the static path
  std::vector<float> bias(N);
  for (auto& v : bias) v = float(rng.between(-1, 1));

  qs::QuantizedLinear lin(W.data(), N, K, bias.data(), qs::WeightGranularity::PerChannel, qs::ActQuant::Static);
  if (observer != 0) lin.set_observer(make());
  auto twin = make();
  for (int b = 0; b < 3; ++b) {
    lin.calibrate(calib.data() + std::size_t(b) * M * K, M);
    twin->observe(calib.data() + std::size_t(b) * M * K, std::size_t(M) * K);
  }
  lin.freeze();
  const float s = qs::amax_scale(int8f(), twin->amax());
  QCOMPARE(lin.static_scale(), s);
  QCOMPARE(lin.observer().amax(), twin->amax());

  std::vector<float> y(std::size_t(M) * N), y_hand(y.size());
  const qs::EncodeStats st = lin.forward(x.data(), M, y.data(), 2);
  QVERIFY(st.overflow >= 1);  // the outlier

  std::vector<int8_t> xq, wq;
  std::vector<float> sx, sw;
  hand_quantize(x.data(), M, K, false, s, xq, sx);
  QCOMPARE(xq[5], int8_t(127));
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
  QVERIFY2(same_bits(y, y_hand), first_diff(y, y_hand).c_str());

  // Replacing the observer forgets the calibration and the frozen scale.
  lin.set_observer(nullptr);
  QVERIFY(!lin.frozen());
  QCOMPARE(lin.calibrated_rows(), std::size_t(0));
  QVERIFY_THROWS_EXCEPTION(std::logic_error, lin.forward(x.data(), M, y.data()));
  QVERIFY_THROWS_EXCEPTION(std::logic_error, lin.freeze());
}

void tst_QuantizedLinear::batchingAndThreads_data() {
  QTest::addColumn<qs::ActQuant>("act");
  QTest::newRow("dynamic-row") << qs::ActQuant::DynamicPerRow;
  QTest::newRow("static") << qs::ActQuant::Static;
}

// Per-row dynamic and static scales make each output row a function of its input row only: running the
// batch at once, row by row, on 1 thread or on all of them gives the same bits.
void tst_QuantizedLinear::batchingAndThreads() {
  QFETCH(qs::ActQuant, act);
  const int M = 67, K = 301, N = 150;
  Rng rng = Rng::from_tag(tag(), 0x9e3779b97f4a7c15ULL);
  const std::vector<float> W = random_matrix(rng, N, K);
  const std::vector<float> x = random_matrix(rng, M, K);
  qs::QuantizedLinear lin(W.data(), N, K, nullptr, qs::WeightGranularity::PerChannel, act);
  if (act == qs::ActQuant::Static) {
    lin.calibrate(x.data(), M);
    lin.freeze();
  }
  std::vector<float> y1(std::size_t(M) * N), yall(y1.size()), yrows(y1.size());
  lin.forward(x.data(), M, y1.data(), 1);
  lin.forward(x.data(), M, yall.data(), 0);
  for (int i = 0; i < M; ++i) lin.forward(x.data() + std::size_t(i) * K, 1, yrows.data() + std::size_t(i) * N, 1);
  QVERIFY2(same_bits(y1, yall), first_diff(y1, yall).c_str());
  QVERIFY2(same_bits(y1, yrows), first_diff(y1, yrows).c_str());
}

void tst_QuantizedLinear::zerosAndNonFinite() {
  const int M = 3, K = 10, N = 5;
  Rng rng = Rng::from_tag(tag(), 0x9e3779b97f4a7c15ULL);
  std::vector<float> W = random_matrix(rng, N, K);
  std::fill(W.begin() + 2 * K, W.begin() + 3 * K, 0.0f);  // an all-zero output channel: scale 1, codes 0
  std::vector<float> bias(N);
  for (auto& v : bias) v = float(rng.between(-1, 1));
  qs::QuantizedLinear lin(W.data(), N, K, bias.data());
  QCOMPARE(lin.weight_scales()[2], 1.0f);

  // All-zero input: y is the bias exactly, in every mode.
  const std::vector<float> zeros(std::size_t(M) * K, 0.0f);
  std::vector<float> y(std::size_t(M) * N);
  for (qs::ActQuant a : {qs::ActQuant::DynamicPerRow, qs::ActQuant::DynamicPerTensor, qs::ActQuant::Static}) {
    lin.set_act_quant(a);
    if (a == qs::ActQuant::Static) {
      lin.calibrate(zeros.data(), M);
      lin.freeze();
      QCOMPARE(lin.static_scale(), 1.0f);
    }
    lin.forward(zeros.data(), M, y.data());
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) QCOMPARE(y[std::size_t(i) * N + j], bias[j]);
  }

  // NaN and inf in the input are counted; the output stays finite (NaN -> 0, inf -> +-127).
  std::vector<float> x = random_matrix(rng, M, K);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  x[K + 4] = std::numeric_limits<float>::infinity();
  lin.set_act_quant(qs::ActQuant::DynamicPerRow);
  const qs::EncodeStats st = lin.forward(x.data(), M, y.data());
  QCOMPARE(st.nan, uint64_t(1));
  QCOMPARE(st.overflow, uint64_t(1));
  for (float v : y) QVERIFY(std::isfinite(v));

  // NaN in the weights: counted at construction, code 0.
  W[7] = std::numeric_limits<float>::quiet_NaN();
  const qs::QuantizedLinear lnan(W.data(), N, K);
  QCOMPARE(lnan.weight_stats().nan, uint64_t(1));
}

void tst_QuantizedLinear::badInput() {
  const std::vector<float> W(12, 0.5f), x(8, 1.0f);
  std::vector<float> y(8);
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, qs::QuantizedLinear(nullptr, 3, 4));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, qs::QuantizedLinear(W.data(), 0, 4));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, qs::QuantizedLinear(W.data(), 3, -1));
  qs::QuantizedLinear lin(W.data(), 3, 4);
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, lin.forward(nullptr, 2, y.data()));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, lin.forward(x.data(), 2, nullptr));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, lin.forward(x.data(), 0, y.data()));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, lin.calibrate(nullptr, 2));
  lin.set_act_quant(qs::ActQuant::Static);
  QVERIFY_THROWS_EXCEPTION(std::logic_error, lin.forward(x.data(), 2, y.data()));
  QVERIFY_THROWS_EXCEPTION(std::logic_error, lin.freeze());
  lin.calibrate(x.data(), 2);
  lin.freeze();
  lin.forward(x.data(), 2, y.data());
  for (float v : y) QVERIFY(std::isfinite(v));

  // in_features beyond the GEMM's int32-safe depth: refused by the GEMM with a clear message.
  const int bigK = 200000;
  const std::vector<float> Wbig(bigK, 0.25f), xbig(bigK, 1.0f);
  qs::QuantizedLinear big(Wbig.data(), 1, bigK);
  float yb = 0;
  QVERIFY_THROWS_EXCEPTION(qs::GemmError, big.forward(xbig.data(), 1, &yb));
}

QTEST_APPLESS_MAIN(tst_QuantizedLinear)
#include "tst_quantized_linear.moc"
