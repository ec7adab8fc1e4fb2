// Mlp (core/train/mlp.h): analytic gradients against central finite differences, results independent of
// the thread count, the straight-through estimator through fake-quantized weights (gradient unchanged, or
// zero where clipped) and through fake-quantized activations (against a hand-written reference), the
// training products against a double reference and bit for bit against their canonical FMA chain at every
// SIMD level (a level this CPU lacks shows as skipped), and bad input.
// Run: ninja -C build tst_mlp && build/tests/core/tst_mlp
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "format/encode_simd.h"
#include "test_rng.h"
#include "train/fake_quant.h"
#include "train/mlp.h"
#include "train/train_gemm.h"

namespace {

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

// "6-5-4-3" -> {6, 5, 4, 3}
std::vector<int> parse_sizes(const std::string& s) {
  std::vector<int> out;
  std::istringstream in(s);
  for (std::string p; std::getline(in, p, '-');) out.push_back(std::stoi(p));
  return out;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

// Weight and activation schemes (designated initializers would leave -Wmissing-field-initializers warnings for
// MlpQuant's members without defaults).
qs::MlpQuant quant(const std::string& weights, const std::string& acts = "") {
  qs::MlpQuant q;
  q.weights = weights;
  q.acts = acts;
  return q;
}

}  // namespace

TEST(Mlp, GradientsMatchFiniteDifferences) {
  struct Case {
    const char* name;
    const char* sizes;
    int batch;
  };
  const Case cases[] = {{"4-3/b1", "4-3", 1},         {"4-3-2/b1", "4-3-2", 1},
                        {"6-5-4-3/b3", "6-5-4-3", 3}, {"10-8-6-4/b7", "10-8-6-4", 7},
                        {"20-16-5/b16", "20-16-5", 16}, {"9-12-12-10/b5", "9-12-12-10", 5}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const int batch = c.batch;
    Rng rng = Rng::from_tag(c.name);
    const std::vector<int> sz = parse_sizes(c.sizes);
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
          EXPECT_LE(std::fabs(a - double(g[i])), tol)
              << "layer " << l << (which ? " bias " : " weight ") << i << ": analytic " << g[i] << ", finite difference " << a;
        }
      }
    }
    EXPECT_LE(kinks * 20, checked + kinks) << "too many kinks skipped: " << kinks;
  }
}

TEST(Mlp, ThreadsDoNotChangeResults) {
  struct Case {
    const char* name;
    const char* acts;
  };
  const Case cases[] = {{"fp32", ""}, {"e4m3fn/tensor", "e4m3fn/tensor"}, {"int8/channel:1", "int8/channel:1"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Rng rng = Rng::from_tag(c.name);
    const std::vector<int> sz = {50, 33, 17, 10};
    const Batch bt = random_batch(rng, 29, sz.front(), sz.back());
    std::vector<float> dW[2], logits[2];
    double loss[2];
    for (int t = 0; t < 2; ++t) {
      qs::Mlp net(sz, 5, t + 1);
      EXPECT_EQ(net.threads(), t + 1);
      net.set_quant(quant("e5m2/tensor", c.acts));
      net.quantize_weights(3);
      loss[t] = net.train_batch(bt.x.data(), bt.y.data(), 29, nullptr, nullptr, 11);
      dW[t] = net.layer(0).dW;
      logits[t].resize(29 * 10);
      net.forward(bt.x.data(), 29, logits[t].data());
    }
    EXPECT_EQ(loss[0], loss[1]);  // bit for bit: two fixed shards whatever the thread count
    EXPECT_TRUE(same_bits(dW[0], dW[1]));
    EXPECT_TRUE(same_bits(logits[0], logits[1]));
  }
}

// With weight fake quantization, dW for the master weights equals the gradient of a float32 network whose
// weights are the quantized ones: the STE passes it unchanged (here also where MX scales clip).
TEST(Mlp, SteWeightsPassGradientUnchanged) {
  for (const char* scheme : {"e4m3fn/tensor", "e2m1fn/block:16:e8m0fnu", "int4/channel:0"}) {
    SCOPED_TRACE(scheme);
    Rng rng = Rng::from_tag(scheme);
    const std::vector<int> sz = {40, 24, 10};
    const Batch bt = random_batch(rng, 16, sz.front(), sz.back());
    qs::Mlp q(sz, 9, 2), ref(sz, 9, 2);
    q.set_quant(quant(scheme));
    q.quantize_weights(1);
    for (int l = 0; l < q.layer_count(); ++l) {
      EXPECT_FALSE(same_bits(q.layer(l).Wq, q.layer(l).W)) << "layer " << l;  // the quantization does something
      ref.layer(l).W = q.layer(l).Wq;
    }
    const double lq = q.train_batch(bt.x.data(), bt.y.data(), 16);
    const double lr = ref.train_batch(bt.x.data(), bt.y.data(), 16);
    EXPECT_EQ(lq, lr);
    for (int l = 0; l < q.layer_count(); ++l) {
      EXPECT_TRUE(same_bits(q.layer(l).dW, ref.layer(l).dW)) << "layer " << l;
      EXPECT_TRUE(same_bits(q.layer(l).db, ref.layer(l).db)) << "layer " << l;
    }
  }
}

// Delayed scaling whose history is smaller than the weights: the clipped weights get no gradient with
// ste_zero_clipped, the others the unchanged gradient.
TEST(Mlp, SteWeightsZeroWhereClipped) {
  Rng rng = Rng::from_tag("steWeightsZeroWhereClipped");
  const std::vector<int> sz = {30, 20, 10};
  const Batch bt = random_batch(rng, 12, sz.front(), sz.back());
  for (bool zero : {false, true}) {
    SCOPED_TRACE(zero ? "ste_zero_clipped" : "pass");
    qs::Mlp q(sz, 4, 2), ref(sz, 4, 2);
    qs::MlpQuant mq = quant("e4m3fn/tensor");
    mq.scaling = qs::ScalingMode::Delayed;
    mq.history = 4;
    mq.ste_zero_clipped = zero;
    q.set_quant(mq);
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
    EXPECT_GT(clipped, 100u);
    q.train_batch(bt.x.data(), bt.y.data(), 12);
    ref.train_batch(bt.x.data(), bt.y.data(), 12);
    for (int l = 0; l < q.layer_count(); ++l) {
      const auto& L = q.layer(l);
      std::size_t bad = 0;
      for (std::size_t i = 0; i < L.W.size(); ++i) {
        const float want = (zero && L.clipped[i]) ? 0.0f : ref.layer(l).dW[i];
        if (std::memcmp(&L.dW[i], &want, 4) != 0 && bad++ == 0)
          ADD_FAILURE() << "layer " << l << " weight " << i << ": " << L.dW[i] << ", want " << want;
      }
      EXPECT_EQ(bad, 0u) << "layer " << l;
    }
  }
}

// A 2-layer network with fake-quantized layer inputs against a hand-written forward/backward in double:
// dW2 = dz2ᵀ q1, dq1 = dz2 W2, da1 = dq1 (STE; 0 where clipped with the option), dz1 = da1 ⊙ [z1 > 0], dW1 = dz1ᵀ q0.
TEST(Mlp, SteActivationsMatchReference) {
  struct Case {
    const char* name;
    const char* scheme;
    bool zero;
  };
  const Case cases[] = {{"e4m3fn/tensor", "e4m3fn/tensor", false},
                        {"int4/tensor", "int4/tensor", false},
                        {"e2m1fn/block:8:e8m0fnu/zero_clipped", "e2m1fn/block:8:e8m0fnu", true},
                        {"e2m1fn/block:8:e8m0fnu/pass", "e2m1fn/block:8:e8m0fnu", false}};
  for (const Case& cs : cases) {
    SCOPED_TRACE(cs.name);
    const bool zero = cs.zero;
    Rng rng = Rng::from_tag(cs.name);
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
    qs::MlpQuant mq = quant("", cs.scheme);
    mq.ste_zero_clipped = zero;
    net.set_quant(mq);
    net.train_batch(bt.x.data(), bt.y.data(), B);
    const auto& L1 = net.layer(0);
    const auto& L2 = net.layer(1);

    qs::FakeQuant fq(qs::parse_scheme(cs.scheme));
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
    if (zero) {
      EXPECT_GT(clipped, 0u) << "the MX scheme should clip some activations";
    }
    // got[j, k] against want(j, k) within 1e-6 + 1e-4 |want|; dW1 rows of kinked hidden units are left out.
    auto check = [&](const char* what, const std::vector<float>& got, int rows, int cols, auto&& want) {
      std::size_t bad = 0;
      for (int j = 0; j < rows; ++j)
        for (int k = 0; k < cols && !(what[2] == '1' && kink[std::size_t(j)]); ++k) {
          const double w = want(j, k), g = got[std::size_t(j * cols + k)];
          if (!(std::fabs(g - w) <= 1e-6 + 1e-4 * std::fabs(w)) && bad++ == 0)
            ADD_FAILURE() << what << "[" << j << "," << k << "] = " << g << ", want " << w;
        }
      EXPECT_EQ(bad, 0u) << what;
    };
    check("dW2", L2.dW, C, H, [&](int j, int k) {
      double s = 0;
      for (int r = 0; r < B; ++r) s += dz2[std::size_t(r * C + j)] * q1[std::size_t(r * H + k)];
      return s;
    });
    EXPECT_LE(std::count(kink.begin(), kink.end(), true), H / 4);
    check("dW1", L1.dW, H, I, [&](int j, int k) {
      double s = 0;
      for (int r = 0; r < B; ++r) s += z1[std::size_t(r * H + j)] * q0[std::size_t(r * I + k)];
      return s;
    });
  }
}

// The training products (A B, A Bᵀ, Aᵀ B, with and without accumulation into C) against double loops; one test
// per SIMD level, a level this CPU cannot run reported as skipped.
class MlpAtLevel : public ::testing::TestWithParam<qs::SimdLevel> {
 protected:
  void SetUp() override {
    const auto& levels = qs::available_simd_levels();
    if (std::find(levels.begin(), levels.end(), GetParam()) == levels.end())
      GTEST_SKIP() << "SIMD level " << qs::to_string(GetParam()) << " is not available on this CPU";
  }
};

TEST_P(MlpAtLevel, TrainGemmMatchesDouble) {
  const qs::SimdLevel level = GetParam();
  for (int v = 0; v < 3; ++v)
    for (bool acc : {false, true}) {
      const bool ta = v == 2, tb = v == 1;
      const std::string name = std::string(qs::to_string(level)) + (ta ? "/AtB" : tb ? "/ABt" : "/AB") + (acc ? "/acc" : "");
      SCOPED_TRACE(name);
      Rng rng = Rng::from_tag(name.c_str());
      const int M = 13, N = 37, K = 71, pad = 3;  // leading dimensions wider than the rows
      const int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
      std::vector<float> A(std::size_t((ta ? K : M) * lda)), Bm(std::size_t((tb ? N : K) * ldb)), Cm(std::size_t(M * ldc));
      for (float& x : A) x = float(rng.between(-1, 1));
      for (float& x : Bm) x = float(rng.between(-1, 1));
      for (float& x : Cm) x = float(rng.between(-1, 1));
      const std::vector<float> C0 = Cm;
      qs::train_gemm(ta, tb, M, N, K, A.data(), lda, Bm.data(), ldb, Cm.data(), ldc, acc, level);
      std::size_t bad = 0;
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
          double s = acc ? C0[std::size_t(i * ldc + j)] : 0.0, mag = std::fabs(s);
          for (int k = 0; k < K; ++k) {
            const double a = ta ? A[std::size_t(k * lda + i)] : A[std::size_t(i * lda + k)];
            const double b = tb ? Bm[std::size_t(j * ldb + k)] : Bm[std::size_t(k * ldb + j)];
            s += a * b;
            mag += std::fabs(a * b);
          }
          if (!(std::fabs(Cm[std::size_t(i * ldc + j)] - s) <= kGemmRelTol * mag) && bad++ == 0)
            ADD_FAILURE() << "C[" << i << "," << j << "] = " << Cm[std::size_t(i * ldc + j)] << ", want " << s;
        }
      EXPECT_EQ(bad, 0u) << "elements outside the tolerance";
      for (int i = 0; i < M; ++i)  // the padding is never written
        for (int j = N; j < ldc; ++j) EXPECT_EQ(Cm[std::size_t(i * ldc + j)], C0[std::size_t(i * ldc + j)]) << i << "," << j;
    }
}

// Every element is the canonical chain s = fma(a_k, b_k, s) from +0 (train_gemm.h), bit for bit, at every
// level: sizes around the register blocks (rows 1..9 x columns 1..40, both sides of 8 / 6 / 4 rows and 8 / 16 /
// 32 columns), every layout, accumulation, and special values (NaN, infinities, signed zeros, subnormals,
// products that overflow), which the tolerance test above cannot see.
TEST_P(MlpAtLevel, TrainGemmIsTheCanonicalChain) {
  const qs::SimdLevel level = GetParam();
  Rng rng = Rng::from_tag("canonical-chain");
  const float specials[] = {0.0f, -0.0f, 1e-40f, -3e-39f, INFINITY, -INFINITY, NAN, 3e38f, -2e38f, 1.0f};
  std::size_t checked = 0;
  for (int v = 0; v < 3; ++v)
    for (int M : {1, 5, 6, 7, 8, 9})
      for (int N : {1, 7, 8, 15, 16, 17, 31, 32, 33, 40})
        for (bool acc : {false, true}) {
          const bool ta = v == 2, tb = v == 1;
          const int K = 1 + (M * 7 + N) % 23, pad = 2;
          const int lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
          std::vector<float> A(std::size_t((ta ? K : M) * lda)), Bm(std::size_t((tb ? N : K) * ldb)), Cm(std::size_t(M * ldc));
          auto fill = [&](std::vector<float>& x, bool special) {
            for (float& e : x) e = special && rng.next() % 9 == 0 ? specials[rng.next() % 10] : float(rng.between(-1, 1));
          };
          const bool special = (M + N) % 3 == 0;  // a third of the shapes carry special values
          fill(A, special);
          fill(Bm, special);
          fill(Cm, special);
          const std::vector<float> C0 = Cm;
          qs::train_gemm(ta, tb, M, N, K, A.data(), lda, Bm.data(), ldb, Cm.data(), ldc, acc, level);
          for (int i = 0; i < M; ++i)
            for (int j = 0; j < N; ++j) {
              float c = 0.0f;
              for (int k = 0; k < K; ++k)
                c = std::fma(ta ? A[std::size_t(k * lda + i)] : A[std::size_t(i * lda + k)],
                             tb ? Bm[std::size_t(j * ldb + k)] : Bm[std::size_t(k * ldb + j)], c);
              if (acc) c = C0[std::size_t(i * ldc + j)] + c;
              const float got = Cm[std::size_t(i * ldc + j)];
              uint32_t gb, wb;
              std::memcpy(&gb, &got, 4);
              std::memcpy(&wb, &c, 4);
              if (gb != wb && !(std::isnan(got) && std::isnan(c)))
                FAIL() << qs::to_string(level) << (ta ? " AtB" : tb ? " ABt" : " AB") << (acc ? " acc" : "") << " M=" << M
                       << " N=" << N << " K=" << K << ": C[" << i << "," << j << "] = " << got << ", the chain gives " << c;
              ++checked;
            }
        }
  EXPECT_GT(checked, 10000u);
}

INSTANTIATE_TEST_SUITE_P(AllLevels, MlpAtLevel,
                         ::testing::Values(qs::SimdLevel::Generic, qs::SimdLevel::Avx2, qs::SimdLevel::Avx512),
                         [](const ::testing::TestParamInfo<qs::SimdLevel>& i) { return std::string(qs::to_string(i.param)); });

TEST(Mlp, BadInput) {
  EXPECT_THROW(qs::Mlp({784}), std::invalid_argument);
  EXPECT_THROW(qs::Mlp({784, 0, 10}), std::invalid_argument);
  EXPECT_THROW(qs::Mlp({784, 70000, 10}), std::invalid_argument);
  qs::Mlp net({4, 3}, 1, 1);
  EXPECT_THROW(net.set_quant(quant("e9m9")), qs::FormatError);
  EXPECT_THROW(net.set_quant(quant("", "e4m3fn/diagonal")), qs::FormatError);
  qs::MlpQuant delayed_channel = quant("int8/channel:0");
  delayed_channel.scaling = qs::ScalingMode::Delayed;
  EXPECT_THROW(net.set_quant(delayed_channel), qs::FormatError);
  EXPECT_FALSE(net.quantizes_weights());  // a failed set_quant leaves the network as it was
  std::vector<float> x(8, 0.5f);
  std::vector<int> y = {0, 3};
  EXPECT_THROW(net.train_batch(x.data(), y.data(), 2), std::invalid_argument);  // label 3 of 3 classes
  EXPECT_THROW(net.train_batch(x.data(), y.data(), 0), std::invalid_argument);
  EXPECT_THROW(qs::train_gemm(true, true, 1, 1, 1, x.data(), 1, x.data(), 1, x.data(), 1, false), std::invalid_argument);
  EXPECT_THROW(qs::train_gemm(false, false, 0, 1, 1, x.data(), 1, x.data(), 1, x.data(), 1, false), std::invalid_argument);
  // NaN input: the loss says so instead of throwing.
  std::vector<float> xn(4, std::nanf(""));
  std::vector<int> y1 = {1};
  EXPECT_TRUE(std::isnan(net.train_batch(xn.data(), y1.data(), 1)));
}
