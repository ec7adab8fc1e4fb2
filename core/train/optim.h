// Optimizers of the training lab: SGD with momentum, Adam, and GridOptim, which keeps every weight on the
// grid of a number format and moves it by whole rungs. Exercise: tests/tst_gridoptim.cpp,
// `quantscope-cli train --optimizer grid`.
//
//   qs::GridOptim opt({.format = "e4m3fn"});          // scale 6, momentum 0.9, weight decay 1e-4, rung_clip 10
//   opt.begin_step();
//   qs::StepCounts c = opt.step(0, {.master = W, .grad = dW, .model = Wq, .n = W_size});
//   // c.flips: weights whose value changed; c.updates: non-zero gradient entries
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "format/format.h"

namespace qs {

// One parameter tensor: the float32 master values, its gradient, and optionally the model copy the forward
// pass uses (GridOptim writes its grid values to both; the others update the master only).
struct ParamView {
  float* master = nullptr;
  const float* grad = nullptr;
  float* model = nullptr;
  std::size_t n = 0;
};

struct StepCounts {
  uint64_t flips = 0;      // GridOptim: elements whose (grid) value changed
  uint64_t updates = 0;    // finite non-zero gradient entries
  uint64_t stalls = 0;     // GridOptim: non-zero gradient, value unchanged
  uint64_t clamped = 0;    // GridOptim: moves cut at an end of the grid
  uint64_t nonfinite = 0;  // NaN / inf gradient entries (skipped: no update, state unchanged)
  StepCounts& operator+=(const StepCounts& o) {
    flips += o.flips; updates += o.updates; stalls += o.stalls; clamped += o.clamped; nonfinite += o.nonfinite;
    return *this;
  }
};

class ShardPool;

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Element-wise updates run as 2 fixed halves on this pool (null: on the calling thread). Results do not
  // depend on it.
  void set_pool(ShardPool* pool) { pool_ = pool; }
  virtual std::string name() const = 0;
  // Starts a training step (Adam's bias correction and GridOptim's random stream use the step number).
  void begin_step() { ++t_; }
  uint64_t step_number() const { return t_; }  // 1 for the first step
  // Updates parameter `slot` in place; state (momentum, moments) is kept per slot, created on first use
  // with p.n elements (a later call with another size throws std::invalid_argument).
  virtual StepCounts step(std::size_t slot, const ParamView& p) = 0;

 protected:
  // Runs fn(begin, end) over [0, n) in two fixed halves and adds up their counts.
  StepCounts split(std::size_t n, const std::function<StepCounts(std::size_t, std::size_t)>& fn) const;

  uint64_t t_ = 0;
  ShardPool* pool_ = nullptr;
};

// PyTorch SGD: g += weight_decay * w; v = momentum * v + g; w -= lr * v.
class SgdMomentum : public Optimizer {
 public:
  SgdMomentum(double lr, double momentum = 0.9, double weight_decay = 0.0);
  std::string name() const override { return "sgd"; }
  StepCounts step(std::size_t slot, const ParamView& p) override;
 private:
  float lr_, mom_, wd_;
  std::vector<std::vector<float>> v_;
};

// Adam (Kingma & Ba) with bias correction; weight_decay adds wd * w to the gradient (L2, as torch.optim.Adam).
class Adam : public Optimizer {
 public:
  explicit Adam(double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-8, double weight_decay = 0.0);
  std::string name() const override { return "adam"; }
  StepCounts step(std::size_t slot, const ParamView& p) override;
 private:
  float lr_, b1_, b2_, eps_, wd_;
  std::vector<std::vector<float>> m_, v_;
};

struct GridOptimConfig {
  std::string format = "e4m3fn";  // the grid: every finite value of this format, sorted
  double scale = 6.0;             // rungs per unit of velocity (> 0)
  double momentum = 0.9;          // in [0, 1)
  double weight_decay = 1e-4;     // >= 0
  double rung_clip = 10.0;        // most rungs one step may move (> 0)
  uint64_t seed = 1;              // stochastic rounding of the rung count
};

// Per element i of a slot, at step t (begin_step() counts):
//   g = grad[i] + weight_decay * master[i];  v[i] = momentum * v[i] + g
//   k = index of master[i] on the grid (nearest value; binary search; ties go to the smaller magnitude)
//   r = clamp(v[i] * scale, -rung_clip, rung_clip);  m = floor(r + U), U = uniform(seed, t, slot, i) in [0, 1)
//   k' = clamp(k - m, 0, grid size - 1);  master[i] = model[i] = grid[k']
// Non-finite gradient entries leave the element and its velocity alone. Never writes NaN.
class GridOptim : public Optimizer {
 public:
  explicit GridOptim(const GridOptimConfig& config = {});  // throws FormatError / std::invalid_argument
  std::string name() const override { return "grid"; }
  const GridOptimConfig& config() const { return cfg_; }
  const Format& format() const { return format_; }
  const std::vector<float>& grid() const { return grid_; }          // ascending, +-0 once
  const std::vector<uint32_t>& grid_codes() const { return codes_; } // the format's code of each grid value
  // Nearest grid index of v (NaN: the index of 0; beyond the ends: the end).
  std::size_t index_of(float v) const;
  // y[i] = grid[index_of(x[i])] (x and y may alias).
  void project(const float* x, std::size_t n, float* y) const;

  StepCounts step(std::size_t slot, const ParamView& p) override;  // uses config().scale
  // The same step with another scale for this call only (the per-step scale override).
  StepCounts step(std::size_t slot, const ParamView& p, double scale);

  // The uniform number in [0, 1) element i of `slot` draws at step t (24 random bits): exposed so tests
  // can predict the stochastic rounding.
  static double uniform(uint64_t seed, uint64_t t, std::size_t slot, std::size_t i);

 private:
  GridOptimConfig cfg_;
  Format format_;
  std::vector<float> grid_;
  std::vector<uint32_t> codes_;
  std::vector<std::vector<float>> v_;
  std::vector<std::vector<uint16_t>> idx_;  // last index per element: a hint checked against the master value
  StepCounts step_range(std::size_t slot, const ParamView& p, double scale, std::size_t begin, std::size_t end);
};

enum class OptimizerKind { Sgd, Adam, Grid };
const char* to_string(OptimizerKind k);        // "sgd", "adam", "grid"
OptimizerKind parse_optimizer(std::string_view s);  // throws std::invalid_argument

}  // namespace qs
