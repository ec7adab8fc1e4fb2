// Optimizers (core/train/optim.h), GridOptim above all: the grid is every finite value of the format; a
// hand-built case with known grid, gradients and seed moves exactly the expected rungs (integer rung counts,
// and fractional ones predicted from the documented generator), counts flips / updates / bit-stalls /
// clamped moves, respects rung_clip and the grid ends, carries momentum and weight decay, takes a per-step
// scale, and never writes NaN; SGD and Adam against their formulas.
// Run: ninja -C build tst_gridoptim && build/tests/core/tst_gridoptim
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "format/format.h"
#include "test_rng.h"
#include "train/optim.h"
#include "train/shard_pool.h"

namespace {

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

TEST(GridOptim, Grid) {
  struct Case {
    const char* format;
    std::size_t size;
  };
  const Case cases[] = {{"e4m3fn", 253},
                        {"e5m2", 247},  // 256 codes - 6 NaN - 2 inf - one of +-0
                        {"e2m1fn", 15},
                        {"int8", 255},  // narrow range: -127..127
                        {"e4m3fnuz", 255}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.format);
    qs::GridOptim opt({.format = c.format});
    const std::vector<float> want = expected_grid(c.format);
    EXPECT_EQ(opt.grid().size(), c.size);
    ASSERT_EQ(opt.grid(), want);
    EXPECT_TRUE(std::is_sorted(opt.grid().begin(), opt.grid().end()));
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(float(qs::decode_ref(opt.format(), opt.grid_codes()[i])), want[i]) << "rung " << i;
      if (want[i] == 0.0f) {
        EXPECT_FALSE(std::signbit(qs::decode_ref(opt.format(), opt.grid_codes()[i])));  // +0's code
      }
    }
  }
}

TEST(GridOptim, IndexOf) {
  qs::GridOptim opt;  // e4m3fn
  const std::vector<float>& g = opt.grid();
  for (std::size_t i = 0; i < g.size(); ++i) EXPECT_EQ(opt.index_of(g[i]), i);
  const std::size_t zero = index_in(g, 0.0f);
  EXPECT_EQ(opt.index_of(-0.0f), zero);
  EXPECT_EQ(opt.index_of(std::nanf("")), zero);
  EXPECT_EQ(opt.index_of(1e9f), g.size() - 1);
  EXPECT_EQ(opt.index_of(-1e9f), 0u);
  EXPECT_EQ(opt.index_of(std::numeric_limits<float>::infinity()), g.size() - 1);
  // Nearest, ties to the smaller magnitude: 1.0625 lies between 1 and 1.125.
  EXPECT_EQ(g[opt.index_of(1.0625f)], 1.0f);
  EXPECT_EQ(g[opt.index_of(-1.0625f)], -1.0f);
  EXPECT_EQ(g[opt.index_of(1.07f)], 1.125f);
  EXPECT_EQ(g[opt.index_of(300.0f)], 288.0f);  // 288 and 320 around it
  EXPECT_EQ(g[opt.index_of(305.0f)], 320.0f);
  std::vector<float> p = {0.3f, -7.7f, 1000.0f};
  opt.project(p.data(), p.size(), p.data());
  EXPECT_EQ(p, (std::vector<float>{0.3125f, -7.5f, 448.0f}));
}

// scale 1, no momentum, no weight decay, integer velocities: the rung count is exact whatever U is.
TEST(GridOptim, IntegerRungs) {
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
    SCOPED_TRACE("case " + std::to_string(i));
    const float want = g[std::size_t(cases[i].expected)];
    EXPECT_EQ(master[i], want);
    EXPECT_EQ(model[i], want);
    const bool moved = std::size_t(cases[i].expected) != cases[i].start;
    flips += moved;
    updates += cases[i].grad != 0.0f;
    stalls += cases[i].grad != 0.0f && !moved;
  }
  EXPECT_EQ(counts.flips, flips);      // 7 moved
  EXPECT_EQ(counts.updates, updates);  // 8 non-zero gradients
  EXPECT_EQ(counts.stalls, stalls);    // the clamped move up from the top
  EXPECT_EQ(counts.clamped, 2u);
  EXPECT_EQ(counts.flips, 7u);
  EXPECT_EQ(counts.nonfinite, 0u);
}

// Fractional rung counts: m = floor(r + U) with U = GridOptim::uniform(seed, t, slot, i).
TEST(GridOptim, FractionalRungsFollowTheGenerator) {
  const uint64_t seed = 1234;
  qs::GridOptim opt({.format = "e5m2", .scale = 2.0, .momentum = 0.0, .weight_decay = 0.0, .rung_clip = 10.0, .seed = seed});
  const std::vector<float>& g = opt.grid();
  const std::size_t n = 500, slot = 3;
  Rng rng = Rng::from_tag("fractionalRungsFollowTheGenerator");
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
    EXPECT_EQ(master[i], g[std::size_t(std::ptrdiff_t(start[i]) - m)]) << "element " << i;
  }
  // Another seed moves some elements differently.
  qs::GridOptim other({.format = "e5m2", .scale = 2.0, .momentum = 0.0, .weight_decay = 0.0, .rung_clip = 10.0, .seed = seed + 1});
  std::vector<float> m2(n);
  for (std::size_t i = 0; i < n; ++i) m2[i] = g[start[i]];
  other.begin_step();
  other.begin_step();
  other.step(slot, {m2.data(), grad.data(), nullptr, n});
  EXPECT_NE(m2, master);
}

TEST(GridOptim, StochasticRoundingIsUnbiased) {
  qs::GridOptim opt({.format = "e4m3fn", .scale = 1.0, .momentum = 0.0, .weight_decay = 0.0, .rung_clip = 10.0, .seed = 9});
  const std::size_t n = 20000;
  const std::vector<float>& g = opt.grid();
  const std::size_t z = index_in(g, 0.0f);
  std::vector<float> master(n, g[z + 50]), grad(n, 0.3f);  // 0.3 rungs down on average
  opt.begin_step();
  const qs::StepCounts c = opt.step(0, {master.data(), grad.data(), nullptr, n});
  std::size_t moved = 0, elsewhere = 0;
  for (float v : master) {
    elsewhere += !(v == g[z + 50] || v == g[z + 49]);
    moved += v == g[z + 49];
  }
  EXPECT_EQ(elsewhere, 0u) << "weights that moved other than one rung down";
  EXPECT_EQ(c.flips, uint64_t(moved));
  EXPECT_EQ(c.stalls, uint64_t(n - moved));
  const double frac = double(moved) / double(n);  // sd 0.0032
  EXPECT_LT(std::fabs(frac - 0.3), 0.015) << frac;
}

// v = momentum v + g + wd w, with the master value of the step.
TEST(GridOptim, MomentumAndWeightDecay) {
  const double mom = 0.5, wd = 0.25;
  const uint64_t seed = 77;
  qs::GridOptim opt({.format = "e4m3fn", .scale = 1.0, .momentum = mom, .weight_decay = wd, .rung_clip = 10.0, .seed = seed});
  const std::vector<float>& g = opt.grid();
  std::vector<float> master = {4.0f, -2.5f}, grads[3] = {{2.0f, -1.0f}, {0.0f, 0.0f}, {-3.0f, 0.5f}};
  std::vector<double> v = {0, 0};
  std::vector<std::size_t> k = {index_in(g, 4.0f), index_in(g, -2.5f)};
  for (int t = 1; t <= 3; ++t) {
    SCOPED_TRACE("step " + std::to_string(t));
    std::vector<float> before = master;
    opt.begin_step();
    const qs::StepCounts c = opt.step(0, {master.data(), grads[t - 1].data(), nullptr, 2});
    uint64_t updates = 0;
    for (std::size_t i = 0; i < 2; ++i) {
      v[i] = double(float(mom * v[i] + (double(grads[t - 1][i]) + wd * double(before[i]))));
      const double r = std::clamp(v[i], -10.0, 10.0);
      const std::ptrdiff_t m = r == 0 ? 0 : std::ptrdiff_t(std::floor(r + qs::GridOptim::uniform(seed, uint64_t(t), 0, i)));
      k[i] = std::size_t(std::clamp<std::ptrdiff_t>(std::ptrdiff_t(k[i]) - m, 0, std::ptrdiff_t(g.size()) - 1));
      EXPECT_EQ(master[i], g[k[i]]) << "element " << i;
      updates += grads[t - 1][i] != 0.0f;
    }
    EXPECT_EQ(c.updates, updates);
    if (t == 2) {
      EXPECT_GT(c.flips, 0u) << "momentum moves weights without a gradient";
    }
  }
}

TEST(GridOptim, ScaleOverride) {
  qs::GridOptim opt({.format = "e4m3fn", .scale = 6.0, .momentum = 0.0, .weight_decay = 0.0, .rung_clip = 10.0, .seed = 1});
  const std::vector<float>& g = opt.grid();
  const std::size_t z = index_in(g, 0.0f);
  std::vector<float> w = {0.0f}, grad = {1.0f};
  opt.begin_step();
  opt.step(0, {w.data(), grad.data(), nullptr, 1}, 3.0);  // this step only: 3 rungs
  EXPECT_EQ(w[0], g[z - 3]);
  opt.begin_step();
  opt.step(0, {w.data(), grad.data(), nullptr, 1});  // back to the configured 6
  EXPECT_EQ(w[0], g[z - 9]);
  EXPECT_THROW(opt.step(0, {w.data(), grad.data(), nullptr, 1}, 0.0), std::invalid_argument);
  EXPECT_THROW(opt.step(0, {w.data(), grad.data(), nullptr, 1}, std::nan("")), std::invalid_argument);
}

TEST(GridOptim, NonFiniteNeverSpreads) {
  qs::GridOptim opt({.format = "e4m3fn", .scale = 6.0, .momentum = 0.9, .weight_decay = 1e-4, .rung_clip = 10.0, .seed = 5});
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  std::vector<float> master = {1.0f, 2.0f, nan, inf, -inf, 0.5f, 3e38f};
  std::vector<float> model = master;
  std::vector<float> grad = {nan, inf, 0.1f, -0.1f, 0.0f, -inf, 1e38f};
  opt.begin_step();
  const qs::StepCounts c = opt.step(0, {master.data(), grad.data(), model.data(), master.size()});
  EXPECT_EQ(c.nonfinite, 3u);
  EXPECT_EQ(master[0], 1.0f);  // skipped: untouched
  EXPECT_EQ(master[1], 2.0f);
  for (std::size_t i : {std::size_t(2), std::size_t(3), std::size_t(4), std::size_t(6)}) {
    SCOPED_TRACE("element " + std::to_string(i));
    EXPECT_TRUE(std::isfinite(master[i]) && master[i] == model[i]) << master[i] << " vs " << model[i];
    EXPECT_EQ(opt.grid()[opt.index_of(master[i])], master[i]);  // on the grid
  }
  // A long random run with wild gradients stays finite and on the grid.
  Rng rng = Rng::from_tag("nonFiniteNeverSpreads");
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
    std::size_t off = 0;
    for (float x : w) off += !(std::isfinite(x) && opt.grid()[opt.index_of(x)] == x);
    ASSERT_EQ(off, 0u) << "weights off the grid or not finite after step " << t;
  }
}

TEST(GridOptim, PoolDoesNotChangeResults) {
  Rng rng = Rng::from_tag("poolDoesNotChangeResults");
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
  EXPECT_TRUE(out[0] == out[1]);
  EXPECT_EQ(c[0].flips, c[1].flips);
  EXPECT_EQ(c[0].stalls, c[1].stalls);
}

TEST(GridOptim, BadConfig) {
  EXPECT_THROW(qs::GridOptim({.scale = 0}), std::invalid_argument);
  EXPECT_THROW(qs::GridOptim({.momentum = 1.0}), std::invalid_argument);
  EXPECT_THROW(qs::GridOptim({.weight_decay = -1}), std::invalid_argument);
  EXPECT_THROW(qs::GridOptim({.rung_clip = 0}), std::invalid_argument);
  EXPECT_THROW(qs::GridOptim({.rung_clip = 1e300}), std::invalid_argument);
  EXPECT_THROW(qs::GridOptim({.format = "e4m9x"}), qs::FormatError);
  qs::GridOptim opt;
  std::vector<float> w(4), g(4);
  opt.step(0, {w.data(), g.data(), nullptr, 4});
  EXPECT_THROW(opt.step(0, {w.data(), g.data(), nullptr, 3}), std::invalid_argument);  // slot changed size
  EXPECT_THROW(opt.step(1, {nullptr, g.data(), nullptr, 3}), std::invalid_argument);
  EXPECT_THROW(qs::parse_optimizer("lbfgs"), std::invalid_argument);
  EXPECT_EQ(qs::parse_optimizer("grid"), qs::OptimizerKind::Grid);
  EXPECT_THROW(qs::SgdMomentum(-0.1), std::invalid_argument);
  EXPECT_THROW(qs::Adam(0.0), std::invalid_argument);
  EXPECT_THROW(qs::Adam(1e-3, 1.0), std::invalid_argument);
}

TEST(GridOptim, SgdAndAdam) {
  // SGD: v = 0.9 v + g + wd w; w -= lr v, two steps.
  qs::SgdMomentum sgd(0.5, 0.9, 0.1);
  std::vector<float> w = {1.0f, -2.0f}, g = {0.5f, 0.0f};
  double v[2] = {0, 0}, ref[2] = {1.0, -2.0};
  for (int t = 0; t < 2; ++t) {
    SCOPED_TRACE("step " + std::to_string(t + 1));
    sgd.begin_step();
    const qs::StepCounts c = sgd.step(0, {w.data(), g.data(), nullptr, 2});
    EXPECT_EQ(c.updates, 1u);
    for (int i = 0; i < 2; ++i) {
      v[i] = 0.9 * v[i] + g[std::size_t(i)] + 0.1 * ref[i];
      ref[i] -= 0.5 * v[i];
      EXPECT_LT(std::fabs(w[std::size_t(i)] - ref[i]), 1e-6) << "weight " << i;
    }
  }
  // Adam's first step moves each weight by lr * g / (|g| + eps): lr in the gradient's direction.
  qs::Adam adam(0.01);
  std::vector<float> a = {1.0f, 1.0f, 1.0f}, ag = {3.0f, -1e-3f, 0.0f};
  adam.begin_step();
  adam.step(0, {a.data(), ag.data(), nullptr, 3});
  EXPECT_LT(std::fabs(a[0] - 0.99f), 1e-6);
  EXPECT_LT(std::fabs(a[1] - 1.01f), 1e-5);
  EXPECT_EQ(a[2], 1.0f);
  // A NaN gradient is skipped and counted.
  std::vector<float> bad = {std::nanf(""), 1.0f, 0.0f};
  adam.begin_step();
  const qs::StepCounts c = adam.step(0, {a.data(), bad.data(), nullptr, 3});
  EXPECT_EQ(c.nonfinite, 1u);
  EXPECT_EQ(c.updates, 1u);
  EXPECT_TRUE(std::isfinite(a[0]));
}
