// Mlp (core/train/mlp.h): analytic gradients against central finite differences, results independent of
// the thread count, the straight-through estimator through fake-quantized weights (gradient unchanged, or
// zero where clipped) and through fake-quantized activations (against a hand-written reference), the
// training products against a double reference, and bad input. Run: build/tests/tst_mlp
#include "train/fake_quant.h"
#include "train/mlp.h"
#include "train/train_gemm.h"

#include "test_rng.h"

#include <QTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace {

const char* tag() { return QTest::currentDataTag() ? QTest::currentDataTag() : QTest::currentTestFunction(); }

// Finite differences of a float32 network: the loss is accurate to about 1e-7 relative, so with a step
// h = 1e-3 the central difference carries about 1e-4 of noise.
constexpr double kFdStep = 1e-3;
constexpr double kFdAbsTol = 1e-3;
constexpr double kFdRelTol = 2e-2;
// Products in float32 against double loops: about K * 2^-24 relative for inputs of one magnitude.
constexpr double kGemmRelTol = 1e-5;

struct Batch {
  std::vector<float> x;
  std::vector<int> y;
};

Batch random_batch(Rng& rng, int batch, int in, int classes) {
  Batch b;
  b.x.resize(std::size_t(batch) * std::size_t(in));
  for (float& v : b.x) v = float(rng.between(-1, 1));
  for (int i = 0; i < batch; ++i) b.y.push_back(int(rng.next() % uint64_t(classes)));
  return b;
}

std::vector<int> parse_sizes(const QString& s) {
  std::vector<int> out;
  for (const QString& p : s.split('-')) out.push_back(p.toInt());
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

}  // namespace

class tst_Mlp : public QObject {
  Q_OBJECT

 private slots:
  void gradientsMatchFiniteDifferences_data();
  void gradientsMatchFiniteDifferences();
  void threadsDoNotChangeResults_data();
  void threadsDoNotChangeResults();
  void steWeightsPassGradientUnchanged_data();
  void steWeightsPassGradientUnchanged();
  void steWeightsZeroWhereClipped();
  void steActivationsMatchReference_data();
  void steActivationsMatchReference();
  void trainGemmMatchesDouble_data();
  void trainGemmMatchesDouble();
  void badInput();
};

void tst_Mlp::gradientsMatchFiniteDifferences_data() {
  QTest::addColumn<QString>("sizes");
  QTest::addColumn<int>("batch");
  QTest::newRow("4-3/b1") << "4-3" << 1;
  QTest::newRow("4-3-2/b1") << "4-3-2" << 1;
  QTest::newRow("6-5-4-3/b3") << "6-5-4-3" << 3;
  QTest::newRow("10-8-6-4/b7") << "10-8-6-4" << 7;
  QTest::newRow("20-16-5/b16") << "20-16-5" << 16;
  QTest::newRow("9-12-12-10/b5") << "9-12-12-10" << 5;
}

void tst_Mlp::gradientsMatchFiniteDifferences() {
  QFETCH(QString, sizes);
  QFETCH(int, batch);
  Rng rng = Rng::from_tag(tag());
  const std::vector<int> sz = parse_sizes(sizes);
  qs::Mlp net(sz, rng.next(), 2);
  for (int l = 0; l < net.layer_count(); ++l)
    for (float& b : net.layer(l).b) b = float(rng.between(-0.2, 0.2));  // non-zero biases are tested too
  const Batch bt = random_batch(rng, batch, sz.front(), sz.back());
  net.train_batch(bt.x.data(), bt.y.data(), batch);
  std::vector<std::vector<float>> dW, db;
  for (int l = 0; l < net.layer_count(); ++l) {
    dW.push_back(net.layer(l).dW);
    db.push_back(net.layer(l).db);
  }
  auto loss = [&] { return net.train_batch(bt.x.data(), bt.y.data(), batch); };
  // Central difference with step h; a ReLU kink inside [w - h, w + h] makes h and h/2 disagree: skip those.
  auto fd = [&](float& w, double h) {
    const float keep = w;
    w = float(keep + h);
    const double up = loss();
    w = float(keep - h);
    const double down = loss();
    w = keep;
    return (up - down) / (double(float(keep + h)) - double(float(keep - h)));
  };
  int checked = 0, kinks = 0;
  for (int l = 0; l < net.layer_count(); ++l) {
    for (int which = 0; which < 2; ++which) {
      std::vector<float>& p = which == 0 ? net.layer(l).W : net.layer(l).b;
      const std::vector<float>& g = which == 0 ? dW[std::size_t(l)] : db[std::size_t(l)];
      for (std::size_t i = 0; i < p.size(); ++i) {
        const double a = fd(p[i], kFdStep), b = fd(p[i], kFdStep / 2);
        if (std::fabs(a - b) > kFdAbsTol + kFdRelTol * std::fabs(a)) {
          ++kinks;
          continue;
        }
        ++checked;
        const double tol = kFdAbsTol + kFdRelTol * std::fabs(a);
        QVERIFY2(std::fabs(a - double(g[i])) <= tol,
                 ("layer " + std::to_string(l) + (which ? " bias " : " weight ") + std::to_string(i) + ": analytic " +
                  std::to_string(g[i]) + ", finite difference " + std::to_string(a))
                     .c_str());
      }
    }
  }
  QVERIFY2(kinks * 20 <= checked + kinks, ("too many kinks skipped: " + std::to_string(kinks)).c_str());
}

void tst_Mlp::threadsDoNotChangeResults_data() {
  QTest::addColumn<QString>("acts");
  QTest::newRow("fp32") << "";
  QTest::newRow("e4m3fn/tensor") << "e4m3fn/tensor";
  QTest::newRow("int8/channel:1") << "int8/channel:1";
}

void tst_Mlp::threadsDoNotChangeResults() {
  QFETCH(QString, acts);
  Rng rng = Rng::from_tag(tag());
  const std::vector<int> sz = {50, 33, 17, 10};
  const Batch bt = random_batch(rng, 29, sz.front(), sz.back());
  std::vector<float> dW[2], logits[2];
  double loss[2];
  for (int t = 0; t < 2; ++t) {
    qs::Mlp net(sz, 5, t + 1);
    QCOMPARE(net.threads(), t + 1);
    net.set_quant({.weights = "e5m2/tensor", .acts = acts.toStdString()});
    net.quantize_weights(3);
    loss[t] = net.train_batch(bt.x.data(), bt.y.data(), 29, nullptr, nullptr, 11);
    dW[t] = net.layer(0).dW;
    logits[t].resize(29 * 10);
    net.forward(bt.x.data(), 29, logits[t].data());
  }
  QCOMPARE(loss[0], loss[1]);
  QVERIFY(same_bits(dW[0], dW[1]));
  QVERIFY(same_bits(logits[0], logits[1]));
}

void tst_Mlp::steWeightsPassGradientUnchanged_data() {
  QTest::addColumn<QString>("scheme");
  QTest::newRow("e4m3fn/tensor") << "e4m3fn/tensor";
  QTest::newRow("e2m1fn/block:16:e8m0fnu") << "e2m1fn/block:16:e8m0fnu";
  QTest::newRow("int4/channel:0") << "int4/channel:0";
}

// With weight fake quantization, dW for the master weights equals the gradient of a float32 network whose
// weights are the quantized ones: the STE passes it unchanged (here also where MX scales clip).
void tst_Mlp::steWeightsPassGradientUnchanged() {
  QFETCH(QString, scheme);
  Rng rng = Rng::from_tag(tag());
  const std::vector<int> sz = {40, 24, 10};
  const Batch bt = random_batch(rng, 16, sz.front(), sz.back());
  qs::Mlp q(sz, 9, 2), ref(sz, 9, 2);
  q.set_quant({.weights = scheme.toStdString()});
  q.quantize_weights(1);
  for (int l = 0; l < q.layer_count(); ++l) {
    QVERIFY(!same_bits(q.layer(l).Wq, q.layer(l).W));  // the quantization does something
    ref.layer(l).W = q.layer(l).Wq;
  }
  const double lq = q.train_batch(bt.x.data(), bt.y.data(), 16);
  const double lr = ref.train_batch(bt.x.data(), bt.y.data(), 16);
  QCOMPARE(lq, lr);
  for (int l = 0; l < q.layer_count(); ++l) {
    QVERIFY(same_bits(q.layer(l).dW, ref.layer(l).dW));
    QVERIFY(same_bits(q.layer(l).db, ref.layer(l).db));
  }
}

// Delayed scaling whose history is smaller than the weights: the clipped weights get no gradient with
// ste_zero_clipped, the others the unchanged gradient.
void tst_Mlp::steWeightsZeroWhereClipped() {
  Rng rng = Rng::from_tag(tag());
  const std::vector<int> sz = {30, 20, 10};
  const Batch bt = random_batch(rng, 12, sz.front(), sz.back());
  for (bool zero : {false, true}) {
    qs::Mlp q(sz, 4, 2), ref(sz, 4, 2);
    q.set_quant({.weights = "e4m3fn/tensor", .scaling = qs::ScalingMode::Delayed, .history = 4, .ste_zero_clipped = zero});
    for (int l = 0; l < q.layer_count(); ++l)
      for (float& w : q.layer(l).W) w *= 0.25f;
    q.quantize_weights();  // history: the small amax
    for (int l = 0; l < q.layer_count(); ++l)
      for (float& w : q.layer(l).W) w *= 4.0f;
    const std::vector<qs::FakeQuantResult> r = q.quantize_weights();  // scale from history: 3/4 of the range clips
    uint64_t clipped = 0;
    for (int l = 0; l < q.layer_count(); ++l) {
      clipped += r[std::size_t(l)].clipped;
      ref.layer(l).W = q.layer(l).Wq;
    }
    QVERIFY(clipped > 100);
    q.train_batch(bt.x.data(), bt.y.data(), 12);
    ref.train_batch(bt.x.data(), bt.y.data(), 12);
    for (int l = 0; l < q.layer_count(); ++l) {
      const auto& L = q.layer(l);
      for (std::size_t i = 0; i < L.W.size(); ++i) {
        const float want = (zero && L.clipped[i]) ? 0.0f : ref.layer(l).dW[i];
        QVERIFY2(std::memcmp(&L.dW[i], &want, 4) == 0,
                 ("layer " + std::to_string(l) + " weight " + std::to_string(i)).c_str());
      }
    }
  }
}

void tst_Mlp::steActivationsMatchReference_data() {
  QTest::addColumn<QString>("scheme");
  QTest::addColumn<bool>("zero");
  QTest::newRow("e4m3fn/tensor") << "e4m3fn/tensor" << false;
  QTest::newRow("int4/tensor") << "int4/tensor" << false;
  QTest::newRow("e2m1fn/block:8:e8m0fnu/zero_clipped") << "e2m1fn/block:8:e8m0fnu" << true;
  QTest::newRow("e2m1fn/block:8:e8m0fnu/pass") << "e2m1fn/block:8:e8m0fnu" << false;
}

// A 2-layer network with fake-quantized layer inputs against a hand-written forward/backward in double:
// dW2 = dz2ᵀ q1, dq1 = dz2 W2, da1 = dq1 (STE; 0 where clipped with the option), dz1 = da1 ⊙ [z1 > 0], dW1 = dz1ᵀ q0.
void tst_Mlp::steActivationsMatchReference() {
  QFETCH(QString, scheme);
  QFETCH(bool, zero);
  Rng rng = Rng::from_tag(tag());
  const int B = 8, I = 24, H = 16, C = 5;
  Batch bt = random_batch(rng, B, I, C);
  qs::Mlp net({I, H, C}, 21, 2);
  // Inputs, weights and biases on a 1/16 grid: every product and sum below is exact in float32, so the
  // network's activations (and their quantization) equal the reference's bit for bit.
  auto grid16 = [](float& v) { v = std::round(v * 16.0f) / 16.0f; };
  std::for_each(bt.x.begin(), bt.x.end(), grid16);
  for (int l = 0; l < 2; ++l) {
    std::for_each(net.layer(l).W.begin(), net.layer(l).W.end(), grid16);
    for (float& b : net.layer(l).b) b = float(rng.next() % 9) / 16.0f - 0.25f;
  }
  net.set_quant({.acts = scheme.toStdString(), .ste_zero_clipped = zero});
  net.train_batch(bt.x.data(), bt.y.data(), B);
  const auto& L1 = net.layer(0);
  const auto& L2 = net.layer(1);

  qs::FakeQuant fq(qs::parse_scheme(scheme.toStdString()));
  std::vector<float> q0(std::size_t(B * I)), a1(std::size_t(B * H)), q1(std::size_t(B * H));
  std::vector<uint8_t> c1(std::size_t(B * H));
  fq.apply(bt.x.data(), B, I, q0.data());
  std::vector<double> z1(std::size_t(B * H));
  for (int r = 0; r < B; ++r)
    for (int j = 0; j < H; ++j) {
      double s = L1.b[std::size_t(j)];
      for (int k = 0; k < I; ++k) s += double(q0[std::size_t(r * I + k)]) * L1.W[std::size_t(j * I + k)];
      z1[std::size_t(r * H + j)] = s;
      a1[std::size_t(r * H + j)] = float(std::max(s, 0.0));
    }
  fq.apply(a1.data(), B, H, q1.data(), nullptr, c1.data());
  std::vector<double> dz2(std::size_t(B * C));
  for (int r = 0; r < B; ++r) {
    std::vector<double> z(static_cast<std::size_t>(C));
    double m = -1e300;
    for (int j = 0; j < C; ++j) {
      double s = L2.b[std::size_t(j)];
      for (int k = 0; k < H; ++k) s += double(q1[std::size_t(r * H + k)]) * L2.W[std::size_t(j * H + k)];
      z[std::size_t(j)] = s;
      m = std::max(m, s);
    }
    double sum = 0;
    for (double v : z) sum += std::exp(v - m);
    for (int j = 0; j < C; ++j)
      dz2[std::size_t(r * C + j)] = (std::exp(z[std::size_t(j)] - m) / sum - (j == bt.y[std::size_t(r)] ? 1 : 0)) / B;
  }
  // A pre-activation within rounding of 0 (quantized inputs make exact cancellations possible) has a ReLU
  // derivative float32 and double may disagree on: its hidden unit's row of dW1 is not compared.
  std::vector<bool> kink(std::size_t(H), false);
  for (int r = 0; r < B; ++r)
    for (int k = 0; k < H; ++k) kink[std::size_t(k)] = kink[std::size_t(k)] || std::fabs(z1[std::size_t(r * H + k)]) < 1e-5;
  uint64_t clipped = 0;
  for (int r = 0; r < B; ++r)
    for (int k = 0; k < H; ++k) {
      double dq = 0;
      for (int j = 0; j < C; ++j) dq += dz2[std::size_t(r * C + j)] * L2.W[std::size_t(j * H + k)];
      const bool clip = c1[std::size_t(r * H + k)] != 0;
      clipped += clip;
      const double dz1 = (zero && clip) || !(z1[std::size_t(r * H + k)] > 0) ? 0.0 : dq;
      z1[std::size_t(r * H + k)] = dz1;  // reuse: now dz1
    }
  if (zero) QVERIFY2(clipped > 0, "the MX scheme should clip some activations");
  auto check = [&](const char* what, const std::vector<float>& got, int rows, int cols, auto&& want) {
    for (int j = 0; j < rows; ++j)
      for (int k = 0; k < cols && !(what[2] == '1' && kink[std::size_t(j)]); ++k) {
        const double w = want(j, k), g = got[std::size_t(j * cols + k)];
        QVERIFY2(std::fabs(g - w) <= 1e-6 + 1e-4 * std::fabs(w),
                 (std::string(what) + "[" + std::to_string(j) + "," + std::to_string(k) + "] = " + std::to_string(g) + ", want " +
                  std::to_string(w)).c_str());
      }
  };
  check("dW2", L2.dW, C, H, [&](int j, int k) {
    double s = 0;
    for (int r = 0; r < B; ++r) s += dz2[std::size_t(r * C + j)] * q1[std::size_t(r * H + k)];
    return s;
  });
  QVERIFY(std::count(kink.begin(), kink.end(), true) <= H / 4);
  check("dW1", L1.dW, H, I, [&](int j, int k) {
    double s = 0;
    for (int r = 0; r < B; ++r) s += z1[std::size_t(r * H + j)] * q0[std::size_t(r * I + k)];
    return s;
  });
}

void tst_Mlp::trainGemmMatchesDouble_data() {
  QTest::addColumn<bool>("ta");
  QTest::addColumn<bool>("tb");
  QTest::addColumn<bool>("acc");
  QTest::addColumn<int>("level");
  for (qs::SimdLevel lv : qs::available_simd_levels())
    for (int v = 0; v < 3; ++v)
      for (bool acc : {false, true}) {
        const bool ta = v == 2, tb = v == 1;
        const std::string name = std::string(qs::to_string(lv)) + (ta ? "/AtB" : tb ? "/ABt" : "/AB") + (acc ? "/acc" : "");
        QTest::newRow(name.c_str()) << ta << tb << acc << int(lv);
      }
}

void tst_Mlp::trainGemmMatchesDouble() {
  QFETCH(bool, ta);
  QFETCH(bool, tb);
  QFETCH(bool, acc);
  QFETCH(int, level);
  Rng rng = Rng::from_tag(tag());
  const int M = 13, N = 37, K = 71, pad = 3;  // leading dimensions wider than the rows
  const int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
  std::vector<float> A(std::size_t((ta ? K : M) * lda)), Bm(std::size_t((tb ? N : K) * ldb)), Cm(std::size_t(M * ldc));
  for (float& v : A) v = float(rng.between(-1, 1));
  for (float& v : Bm) v = float(rng.between(-1, 1));
  for (float& v : Cm) v = float(rng.between(-1, 1));
  const std::vector<float> C0 = Cm;
  qs::train_gemm(ta, tb, M, N, K, A.data(), lda, Bm.data(), ldb, Cm.data(), ldc, acc, qs::SimdLevel(level));
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double s = acc ? C0[std::size_t(i * ldc + j)] : 0.0, mag = std::fabs(s);
      for (int k = 0; k < K; ++k) {
        const double a = ta ? A[std::size_t(k * lda + i)] : A[std::size_t(i * lda + k)];
        const double b = tb ? Bm[std::size_t(j * ldb + k)] : Bm[std::size_t(k * ldb + j)];
        s += a * b;
        mag += std::fabs(a * b);
      }
      QVERIFY2(std::fabs(Cm[std::size_t(i * ldc + j)] - s) <= kGemmRelTol * mag,
               ("C[" + std::to_string(i) + "," + std::to_string(j) + "]").c_str());
    }
  for (int i = 0; i < M; ++i)  // the padding is never written
    for (int j = N; j < ldc; ++j) QCOMPARE(Cm[std::size_t(i * ldc + j)], C0[std::size_t(i * ldc + j)]);
}

void tst_Mlp::badInput() {
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, qs::Mlp({784}));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, qs::Mlp({784, 0, 10}));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, qs::Mlp({784, 70000, 10}));
  qs::Mlp net({4, 3}, 1, 1);
  QVERIFY_THROWS_EXCEPTION(qs::FormatError, net.set_quant({.weights = "e9m9"}));
  QVERIFY_THROWS_EXCEPTION(qs::FormatError, net.set_quant({.acts = "e4m3fn/diagonal"}));
  QVERIFY_THROWS_EXCEPTION(qs::FormatError, net.set_quant({.weights = "int8/channel:0", .scaling = qs::ScalingMode::Delayed}));
  QVERIFY(!net.quantizes_weights());  // a failed set_quant leaves the network as it was
  std::vector<float> x(8, 0.5f);
  std::vector<int> y = {0, 3};
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, net.train_batch(x.data(), y.data(), 2));  // label 3 of 3 classes
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, net.train_batch(x.data(), y.data(), 0));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, qs::train_gemm(true, true, 1, 1, 1, x.data(), 1, x.data(), 1, x.data(), 1, false));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, qs::train_gemm(false, false, 0, 1, 1, x.data(), 1, x.data(), 1, x.data(), 1, false));
  // NaN input: the loss says so instead of throwing.
  std::vector<float> xn(4, std::nanf(""));
  std::vector<int> y1 = {1};
  QVERIFY(std::isnan(net.train_batch(xn.data(), y1.data(), 1)));
}

QTEST_APPLESS_MAIN(tst_Mlp)
#include "tst_mlp.moc"
