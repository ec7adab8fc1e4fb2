// Optimizers (core/train/optim.h), GridOptim above all: the grid is every finite value of the format; a
// hand-built case with known grid, gradients and seed moves exactly the expected rungs (integer rung counts,
// and fractional ones predicted from the documented generator), counts flips / updates / bit-stalls /
// clamped moves, respects rung_clip and the grid ends, carries momentum and weight decay, takes a per-step
// scale, and never writes NaN; SGD and Adam against their formulas. Run: build/tests/tst_gridoptim
#include "format/format.h"
#include "train/optim.h"
#include "train/shard_pool.h"

#include "test_rng.h"

#include <QTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace {

const char* tag() { return QTest::currentDataTag() ? QTest::currentDataTag() : QTest::currentTestFunction(); }

// The grid the issue specifies, built independently: finite distinct values, ascending.
std::vector<float> expected_grid(const std::string& spec) {
  std::vector<float> g;
  for (double v : qs::distinct_values(qs::parse_format(spec)))
    if (std::isfinite(v)) g.push_back(float(v));
  return g;
}

std::size_t index_in(const std::vector<float>& g, float v) {
  return std::size_t(std::find(g.begin(), g.end(), v) - g.begin());
}

}  // namespace

class tst_GridOptim : public QObject {
  Q_OBJECT

 private slots:
  void grid_data();
  void grid();
  void indexOf();
  void integerRungs();
  void fractionalRungsFollowTheGenerator();
  void stochasticRoundingIsUnbiased();
  void momentumAndWeightDecay();
  void scaleOverride();
  void nonFiniteNeverSpreads();
  void poolDoesNotChangeResults();
  void badConfig();
  void sgdAndAdam();
};

void tst_GridOptim::grid_data() {
  QTest::addColumn<QString>("format");
  QTest::addColumn<int>("size");
  QTest::newRow("e4m3fn") << "e4m3fn" << 253;
  QTest::newRow("e5m2") << "e5m2" << 247;   // 256 codes - 6 NaN - 2 inf - one of +-0
  QTest::newRow("e2m1fn") << "e2m1fn" << 15;
  QTest::newRow("int8") << "int8" << 255;   // narrow range: -127..127
  QTest::newRow("e4m3fnuz") << "e4m3fnuz" << 255;
}

void tst_GridOptim::grid() {
  QFETCH(QString, format);
  QFETCH(int, size);
  qs::GridOptim opt({.format = format.toStdString()});
  const std::vector<float> want = expected_grid(format.toStdString());
  QCOMPARE(opt.grid().size(), std::size_t(size));
  QVERIFY(opt.grid() == want);
  QVERIFY(std::is_sorted(opt.grid().begin(), opt.grid().end()));
  for (std::size_t i = 0; i < want.size(); ++i) {
    QCOMPARE(float(qs::decode_ref(opt.format(), opt.grid_codes()[i])), want[i]);
    if (want[i] == 0.0f) QVERIFY(!std::signbit(qs::decode_ref(opt.format(), opt.grid_codes()[i])));  // +0's code
  }
}

void tst_GridOptim::indexOf() {
  qs::GridOptim opt;  // e4m3fn
  const std::vector<float>& g = opt.grid();
  for (std::size_t i = 0; i < g.size(); ++i) QCOMPARE(opt.index_of(g[i]), i);
  const std::size_t zero = index_in(g, 0.0f);
  QCOMPARE(opt.index_of(-0.0f), zero);
  QCOMPARE(opt.index_of(std::nanf("")), zero);
  QCOMPARE(opt.index_of(1e9f), g.size() - 1);
  QCOMPARE(opt.index_of(-1e9f), std::size_t(0));
  QCOMPARE(opt.index_of(std::numeric_limits<float>::infinity()), g.size() - 1);
  // Nearest, ties to the smaller magnitude: 1.0625 lies between 1 and 1.125.
  QCOMPARE(g[opt.index_of(1.0625f)], 1.0f);
  QCOMPARE(g[opt.index_of(-1.0625f)], -1.0f);
  QCOMPARE(g[opt.index_of(1.07f)], 1.125f);
  QCOMPARE(g[opt.index_of(300.0f)], 288.0f);   // 288 and 320 around it
  QCOMPARE(g[opt.index_of(305.0f)], 320.0f);
  std::vector<float> p = {0.3f, -7.7f, 1000.0f};
  opt.project(p.data(), p.size(), p.data());
  QCOMPARE(p, (std::vector<float>{0.3125f, -7.5f, 448.0f}));
}

// scale 1, no momentum, no weight decay, integer velocities: the rung count is exact whatever U is.
void tst_GridOptim::integerRungs() {
  qs::GridOptim opt({.format = "e4m3fn", .scale = 1.0, .momentum = 0.0, .weight_decay = 0.0, .rung_clip = 10.0, .seed = 3});
  const std::vector<float>& g = opt.grid();
  const std::size_t z = index_in(g, 0.0f), top = g.size() - 1;
  struct Case {
    std::size_t start;
    float grad;
    std::ptrdiff_t expected;  // index after the step
  };
  const Case cases[] = {
      {z, 2.0f, std::ptrdiff_t(z) - 2},           // positive gradient: two rungs down
      {z + 40, -3.0f, std::ptrdiff_t(z) + 43},    // negative: three rungs up
      {z + 5, 0.0f, std::ptrdiff_t(z) + 5},       // no gradient, no velocity: stays (no update)
      {z, 100.0f, std::ptrdiff_t(z) - 10},        // rung_clip: at most 10 rungs
      {z, -1e30f, std::ptrdiff_t(z) + 10},
      {top, 1.0f, std::ptrdiff_t(top) - 1},       // from the top, down is fine
      {top, -1.0f, std::ptrdiff_t(top)},          // up from the top: clamped
      {1, 5.0f, 0},                               // 5 down from index 1: clamped at 0
      {z + 1, 1.0f, std::ptrdiff_t(z)},           // onto zero
  };
  std::vector<float> master, model, grad;
  for (const Case& c : cases) {
    master.push_back(g[c.start]);
    model.push_back(g[c.start]);
    grad.push_back(c.grad);
  }
  opt.begin_step();
  const qs::StepCounts counts = opt.step(0, {master.data(), grad.data(), model.data(), master.size()});
  uint64_t flips = 0, updates = 0, stalls = 0;
  for (std::size_t i = 0; i < std::size(cases); ++i) {
    const float want = g[std::size_t(cases[i].expected)];
    QVERIFY2(master[i] == want, ("case " + std::to_string(i) + ": " + std::to_string(master[i]) + " != " + std::to_string(want)).c_str());
    QCOMPARE(model[i], want);
    const bool moved = std::size_t(cases[i].expected) != cases[i].start;
    flips += moved;
    updates += cases[i].grad != 0.0f;
    stalls += cases[i].grad != 0.0f && !moved;
  }
  QCOMPARE(counts.flips, flips);      // 7 moved
  QCOMPARE(counts.updates, updates);  // 8 non-zero gradients
  QCOMPARE(counts.stalls, stalls);    // the clamped move up from the top
  QCOMPARE(counts.clamped, uint64_t(2));
  QCOMPARE(counts.flips, uint64_t(7));
  QCOMPARE(counts.nonfinite, uint64_t(0));
}

// Fractional rung counts: m = floor(r + U) with U = GridOptim::uniform(seed, t, slot, i).
void tst_GridOptim::fractionalRungsFollowTheGenerator() {
  const uint64_t seed = 1234;
  qs::GridOptim opt({.format = "e5m2", .scale = 2.0, .momentum = 0.0, .weight_decay = 0.0, .rung_clip = 10.0, .seed = seed});
  const std::vector<float>& g = opt.grid();
  const std::size_t n = 500, slot = 3;
  Rng rng = Rng::from_tag(tag());
  std::vector<float> master(n), grad(n);
  std::vector<std::size_t> start(n);
  for (std::size_t i = 0; i < n; ++i) {
    start[i] = 20 + rng.next() % (g.size() - 40);
    master[i] = g[start[i]];
    grad[i] = float(rng.between(-1.6, 1.6));  // r = 2 g in (-3.2, 3.2)
  }
  for (int t = 1; t <= 2; ++t) opt.begin_step();  // step number 2
  opt.step(slot, {master.data(), grad.data(), nullptr, n});
  for (std::size_t i = 0; i < n; ++i) {
    const double r = double(float(double(grad[i]))) * 2.0;
    const double u = qs::GridOptim::uniform(seed, 2, slot, i);
    const std::ptrdiff_t m = std::ptrdiff_t(std::floor(r + u));
    QVERIFY2(master[i] == g[std::size_t(std::ptrdiff_t(start[i]) - m)], ("element " + std::to_string(i)).c_str());
  }
  // Another seed moves some elements differently.
  qs::GridOptim other({.format = "e5m2", .scale = 2.0, .momentum = 0.0, .weight_decay = 0.0, .rung_clip = 10.0, .seed = seed + 1});
  std::vector<float> m2(n);
  for (std::size_t i = 0; i < n; ++i) m2[i] = g[start[i]];
  other.begin_step();
  other.begin_step();
  other.step(slot, {m2.data(), grad.data(), nullptr, n});
  QVERIFY(m2 != master);
}

void tst_GridOptim::stochasticRoundingIsUnbiased() {
  qs::GridOptim opt({.format = "e4m3fn", .scale = 1.0, .momentum = 0.0, .weight_decay = 0.0, .rung_clip = 10.0, .seed = 9});
  const std::size_t n = 20000;
  const std::vector<float>& g = opt.grid();
  const std::size_t z = index_in(g, 0.0f);
  std::vector<float> master(n, g[z + 50]), grad(n, 0.3f);  // 0.3 rungs down on average
  opt.begin_step();
  const qs::StepCounts c = opt.step(0, {master.data(), grad.data(), nullptr, n});
  std::size_t moved = 0;
  for (float v : master) {
    QVERIFY(v == g[z + 50] || v == g[z + 49]);
    moved += v == g[z + 49];
  }
  QCOMPARE(c.flips, uint64_t(moved));
  QCOMPARE(c.stalls, uint64_t(n - moved));
  const double frac = double(moved) / double(n);  // sd 0.0032
  QVERIFY2(std::fabs(frac - 0.3) < 0.015, std::to_string(frac).c_str());
}

// v = momentum v + g + wd w, with the master value of the step.
void tst_GridOptim::momentumAndWeightDecay() {
  const double mom = 0.5, wd = 0.25;
  const uint64_t seed = 77;
  qs::GridOptim opt({.format = "e4m3fn", .scale = 1.0, .momentum = mom, .weight_decay = wd, .rung_clip = 10.0, .seed = seed});
  const std::vector<float>& g = opt.grid();
  std::vector<float> master = {4.0f, -2.5f}, grads[3] = {{2.0f, -1.0f}, {0.0f, 0.0f}, {-3.0f, 0.5f}};
  std::vector<double> v = {0, 0};
  std::vector<std::size_t> k = {index_in(g, 4.0f), index_in(g, -2.5f)};
  for (int t = 1; t <= 3; ++t) {
    std::vector<float> before = master;
    opt.begin_step();
    const qs::StepCounts c = opt.step(0, {master.data(), grads[t - 1].data(), nullptr, 2});
    uint64_t updates = 0;
    for (std::size_t i = 0; i < 2; ++i) {
      v[i] = double(float(mom * v[i] + (double(grads[t - 1][i]) + wd * double(before[i]))));
      const double r = std::clamp(v[i], -10.0, 10.0);
      const std::ptrdiff_t m = r == 0 ? 0 : std::ptrdiff_t(std::floor(r + qs::GridOptim::uniform(seed, uint64_t(t), 0, i)));
      k[i] = std::size_t(std::clamp<std::ptrdiff_t>(std::ptrdiff_t(k[i]) - m, 0, std::ptrdiff_t(g.size()) - 1));
      QVERIFY2(master[i] == g[k[i]], ("step " + std::to_string(t) + " element " + std::to_string(i)).c_str());
      updates += grads[t - 1][i] != 0.0f;
    }
    QCOMPARE(c.updates, updates);
    if (t == 2) QVERIFY2(c.flips > 0, "momentum moves weights without a gradient");
  }
}

void tst_GridOptim::scaleOverride() {
  qs::GridOptim opt({.format = "e4m3fn", .scale = 6.0, .momentum = 0.0, .weight_decay = 0.0, .rung_clip = 10.0, .seed = 1});
  const std::vector<float>& g = opt.grid();
  const std::size_t z = index_in(g, 0.0f);
  std::vector<float> w = {0.0f}, grad = {1.0f};
  opt.begin_step();
  opt.step(0, {w.data(), grad.data(), nullptr, 1}, 3.0);  // this step only: 3 rungs
  QCOMPARE(w[0], g[z - 3]);
  opt.begin_step();
  opt.step(0, {w.data(), grad.data(), nullptr, 1});       // back to the configured 6
  QCOMPARE(w[0], g[z - 9]);
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, opt.step(0, {w.data(), grad.data(), nullptr, 1}, 0.0));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, opt.step(0, {w.data(), grad.data(), nullptr, 1}, std::nan("")));
}

void tst_GridOptim::nonFiniteNeverSpreads() {
  qs::GridOptim opt({.format = "e4m3fn", .scale = 6.0, .momentum = 0.9, .weight_decay = 1e-4, .rung_clip = 10.0, .seed = 5});
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  std::vector<float> master = {1.0f, 2.0f, nan, inf, -inf, 0.5f, 3e38f};
  std::vector<float> model = master;
  std::vector<float> grad = {nan, inf, 0.1f, -0.1f, 0.0f, -inf, 1e38f};
  opt.begin_step();
  const qs::StepCounts c = opt.step(0, {master.data(), grad.data(), model.data(), master.size()});
  QCOMPARE(c.nonfinite, uint64_t(3));
  QCOMPARE(master[0], 1.0f);  // skipped: untouched
  QCOMPARE(master[1], 2.0f);
  for (std::size_t i : {std::size_t(2), std::size_t(3), std::size_t(4), std::size_t(6)}) {
    QVERIFY2(std::isfinite(master[i]) && master[i] == model[i], ("element " + std::to_string(i)).c_str());
    QCOMPARE(opt.grid()[opt.index_of(master[i])], master[i]);  // on the grid
  }
  // A long random run with wild gradients stays finite and on the grid.
  Rng rng = Rng::from_tag(tag());
  std::vector<float> w(1000), gr(1000);
  for (float& x : w) x = float(rng.normal() * 100);
  opt.project(w.data(), w.size(), w.data());  // a skipped (non-finite gradient) element keeps its value
  for (int t = 0; t < 50; ++t) {
    for (float& x : gr) {
      const uint64_t r = rng.next() % 20;
      x = r == 0 ? nan : r == 1 ? inf : r == 2 ? -3e38f : float(rng.normal() * std::ldexp(1.0, int(rng.next() % 60) - 30));
    }
    opt.begin_step();
    opt.step(1, {w.data(), gr.data(), nullptr, w.size()});
    for (float x : w) QVERIFY(std::isfinite(x) && opt.grid()[opt.index_of(x)] == x);
  }
}

void tst_GridOptim::poolDoesNotChangeResults() {
  Rng rng = Rng::from_tag(tag());
  const std::size_t n = 50000;
  std::vector<float> w0(n), gr(n);
  for (float& x : w0) x = float(rng.normal() * 0.05);
  for (float& x : gr) x = float(rng.normal() * 0.01);
  qs::ShardPool pool(2);
  std::vector<float> out[2];
  qs::StepCounts c[2];
  for (int p = 0; p < 2; ++p) {
    qs::GridOptim opt;
    if (p) opt.set_pool(&pool);
    out[p] = w0;
    for (int t = 0; t < 3; ++t) {
      opt.begin_step();
      c[p] = opt.step(0, {out[p].data(), gr.data(), nullptr, n});
    }
  }
  QVERIFY(out[0] == out[1]);
  QCOMPARE(c[0].flips, c[1].flips);
  QCOMPARE(c[0].stalls, c[1].stalls);
}

void tst_GridOptim::badConfig() {
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, qs::GridOptim({.scale = 0}));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, qs::GridOptim({.momentum = 1.0}));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, qs::GridOptim({.weight_decay = -1}));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, qs::GridOptim({.rung_clip = 0}));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, qs::GridOptim({.rung_clip = 1e300}));
  QVERIFY_THROWS_EXCEPTION(qs::FormatError, qs::GridOptim({.format = "e4m9x"}));
  qs::GridOptim opt;
  std::vector<float> w(4), g(4);
  opt.step(0, {w.data(), g.data(), nullptr, 4});
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, opt.step(0, {w.data(), g.data(), nullptr, 3}));  // slot changed size
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, opt.step(1, {nullptr, g.data(), nullptr, 3}));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, qs::parse_optimizer("lbfgs"));
  QCOMPARE(qs::parse_optimizer("grid"), qs::OptimizerKind::Grid);
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, qs::SgdMomentum(-0.1));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, qs::Adam(0.0));
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, qs::Adam(1e-3, 1.0));
}

void tst_GridOptim::sgdAndAdam() {
  // SGD: v = 0.9 v + g + wd w; w -= lr v, two steps.
  qs::SgdMomentum sgd(0.5, 0.9, 0.1);
  std::vector<float> w = {1.0f, -2.0f}, g = {0.5f, 0.0f};
  double v[2] = {0, 0}, ref[2] = {1.0, -2.0};
  for (int t = 0; t < 2; ++t) {
    sgd.begin_step();
    const qs::StepCounts c = sgd.step(0, {w.data(), g.data(), nullptr, 2});
    QCOMPARE(c.updates, uint64_t(1));
    for (int i = 0; i < 2; ++i) {
      v[i] = 0.9 * v[i] + g[std::size_t(i)] + 0.1 * ref[i];
      ref[i] -= 0.5 * v[i];
      QVERIFY(std::fabs(w[std::size_t(i)] - ref[i]) < 1e-6);
    }
  }
  // Adam's first step moves each weight by lr * g / (|g| + eps): lr in the gradient's direction.
  qs::Adam adam(0.01);
  std::vector<float> a = {1.0f, 1.0f, 1.0f}, ag = {3.0f, -1e-3f, 0.0f};
  adam.begin_step();
  adam.step(0, {a.data(), ag.data(), nullptr, 3});
  QVERIFY(std::fabs(a[0] - 0.99f) < 1e-6);
  QVERIFY(std::fabs(a[1] - 1.01f) < 1e-5);
  QCOMPARE(a[2], 1.0f);
  // A NaN gradient is skipped and counted.
  std::vector<float> bad = {std::nanf(""), 1.0f, 0.0f};
  adam.begin_step();
  const qs::StepCounts c = adam.step(0, {a.data(), bad.data(), nullptr, 3});
  QCOMPARE(c.nonfinite, uint64_t(1));
  QCOMPARE(c.updates, uint64_t(1));
  QVERIFY(std::isfinite(a[0]));
}

QTEST_APPLESS_MAIN(tst_GridOptim)
#include "tst_gridoptim.moc"
