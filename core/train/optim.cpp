// SGD with momentum, Adam and GridOptim (see optim.h for the exact update rules).
#include "train/optim.h"
#include "util/mix64.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "format/rng.h"
#include "train/shard_pool.h"

namespace qs {

namespace {

std::vector<float>& state(std::vector<std::vector<float>>& s, std::size_t slot, std::size_t n, const char* who) {
  if (slot >= s.size()) s.resize(slot + 1);
  if (s[slot].empty()) s[slot].assign(n, 0.0f);
  if (s[slot].size() != n)
    throw std::invalid_argument(std::string(who) + ": parameter slot " + std::to_string(slot) + " changed size from " +
                                std::to_string(s[slot].size()) + " to " + std::to_string(n));
  return s[slot];
}

void check_view(const ParamView& p, const char* who) {
  if (p.n && (!p.master || !p.grad)) throw std::invalid_argument(std::string(who) + ": null parameter or gradient");
}

}  // namespace

StepCounts Optimizer::split(std::size_t n, const std::function<StepCounts(std::size_t, std::size_t)>& fn) const {
  StepCounts part[2];
  const std::size_t half = n / 2;
  auto body = [&](int s) { part[s] = s == 0 ? fn(0, half) : fn(half, n); };
  if (pool_ && n >= 4096) pool_->run(2, body);
  else { body(0); body(1); }
  part[0] += part[1];
  return part[0];
}

// ---- SGD ------------------------------------------------------------------------------------------------

SgdMomentum::SgdMomentum(double lr, double momentum, double weight_decay)
    : lr_(float(lr)), mom_(float(momentum)), wd_(float(weight_decay)) {
  if (!(lr > 0) || !std::isfinite(lr)) throw std::invalid_argument("sgd: learning rate must be a positive number");
  if (!(momentum >= 0 && momentum < 1)) throw std::invalid_argument("sgd: momentum must be in [0, 1)");
  if (!(weight_decay >= 0) || !std::isfinite(weight_decay)) throw std::invalid_argument("sgd: weight decay must be >= 0");
}

StepCounts SgdMomentum::step(std::size_t slot, const ParamView& p) {
  check_view(p, "sgd");
  std::vector<float>& v = state(v_, slot, p.n, "sgd");
  return split(p.n, [&](std::size_t b, std::size_t e) {
    StepCounts c;
    float* __restrict w = p.master;
    const float* __restrict g = p.grad;
    float* __restrict vv = v.data();
    for (std::size_t i = b; i < e; ++i) {
      if (!std::isfinite(g[i])) { ++c.nonfinite; continue; }
      c.updates += g[i] != 0.0f;
      vv[i] = mom_ * vv[i] + (g[i] + wd_ * w[i]);
      w[i] -= lr_ * vv[i];
    }
    return c;
  });
}

// ---- Adam -----------------------------------------------------------------------------------------------

Adam::Adam(double lr, double beta1, double beta2, double eps, double weight_decay)
    : lr_(float(lr)), b1_(float(beta1)), b2_(float(beta2)), eps_(float(eps)), wd_(float(weight_decay)) {
  if (!(lr > 0) || !std::isfinite(lr)) throw std::invalid_argument("adam: learning rate must be a positive number");
  if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1)) throw std::invalid_argument("adam: betas must be in [0, 1)");
  if (!(eps > 0)) throw std::invalid_argument("adam: eps must be > 0");
  if (!(weight_decay >= 0) || !std::isfinite(weight_decay)) throw std::invalid_argument("adam: weight decay must be >= 0");
}

StepCounts Adam::step(std::size_t slot, const ParamView& p) {
  check_view(p, "adam");
  std::vector<float>& m = state(m_, slot, p.n, "adam");
  std::vector<float>& v = state(v_, slot, p.n, "adam");
  const uint64_t t = std::max<uint64_t>(t_, 1);
  const float c1 = float(1.0 / (1.0 - std::pow(double(b1_), double(t))));
  const float c2 = float(1.0 / (1.0 - std::pow(double(b2_), double(t))));
  const float b1 = b1_, b2 = b2_, lr = lr_, eps = eps_, wd = wd_;
  return split(p.n, [&](std::size_t b, std::size_t e) {
    StepCounts c;
    float* __restrict w = p.master + b;
    const float* __restrict g = p.grad + b;
    float* __restrict mm = m.data() + b;
    float* __restrict vv = v.data() + b;
    const std::size_t n = e - b;
    uint64_t nonfinite = 0, updates = 0;
    for (std::size_t i = 0; i < n; ++i) {
      nonfinite += !(std::fabs(g[i]) <= 3.402823466e38f);  // NaN and inf
      updates += g[i] != 0.0f;
    }
    if (nonfinite == 0) {  // the common case, free of branches so it vectorizes (built with -fno-math-errno)
      for (std::size_t i = 0; i < n; ++i) {
        const float gi = g[i] + wd * w[i];
        mm[i] = b1 * mm[i] + (1.0f - b1) * gi;
        vv[i] = b2 * vv[i] + (1.0f - b2) * gi * gi;
        w[i] -= lr * (mm[i] * c1) / (std::sqrt(vv[i] * c2) + eps);
      }
    } else {
      for (std::size_t i = 0; i < n; ++i) {
        if (!std::isfinite(g[i])) continue;
        const float gi = g[i] + wd * w[i];
        mm[i] = b1 * mm[i] + (1.0f - b1) * gi;
        vv[i] = b2 * vv[i] + (1.0f - b2) * gi * gi;
        w[i] -= lr * (mm[i] * c1) / (std::sqrt(vv[i] * c2) + eps);
      }
    }
    c.nonfinite = nonfinite;
    c.updates = updates - nonfinite;  // NaN compares != 0, inf is non-zero: neither is an update
    return c;
  });
}

// ---- GridOptim ------------------------------------------------------------------------------------------

GridOptim::GridOptim(const GridOptimConfig& config) : cfg_(config) {
  if (!(cfg_.scale > 0) || !std::isfinite(cfg_.scale)) throw std::invalid_argument("grid: scale must be a positive number");
  if (!(cfg_.momentum >= 0 && cfg_.momentum < 1)) throw std::invalid_argument("grid: momentum must be in [0, 1)");
  if (!(cfg_.weight_decay >= 0) || !std::isfinite(cfg_.weight_decay))
    throw std::invalid_argument("grid: weight decay must be >= 0");
  if (!(cfg_.rung_clip > 0 && cfg_.rung_clip <= 65536)) throw std::invalid_argument("grid: rung_clip must be in (0, 65536]");
  format_ = parse_format(cfg_.format);
  // The format's distinct finite values (as distinct_values defines them: int8 is the narrow [-127, 127]),
  // each with the code the encoder gives it (+0 for zero).
  std::map<float, uint32_t> by_value;
  for (double d : distinct_values(format_)) {
    if (!std::isfinite(d)) continue;
    const float v = float(d);
    if (!std::isfinite(v) || double(v) != d)
      throw FormatError("grid: format " + format_.name + " has values that float32 cannot hold exactly");
    const uint32_t code = encode_ref(format_, d, Rounding::Nearest, Overflow::Saturate, 0);
    if (decode_ref(format_, code) != d) throw FormatError("grid: format " + format_.name + " does not encode its own value exactly");
    by_value.emplace(v, code);
  }
  for (const auto& [v, code] : by_value) {
    grid_.push_back(v);
    codes_.push_back(code);
  }
}

std::size_t GridOptim::index_of(float v) const {
  if (std::isnan(v)) v = 0.0f;
  const std::size_t n = grid_.size();
  // First index with grid >= v (branch-free binary search).
  std::size_t lo = 0, len = n;
  while (len > 1) {
    const std::size_t half = len / 2;
    lo = grid_[lo + half - 1] < v ? lo + half : lo;
    len -= half;
  }
  if (grid_[lo] < v) return n - 1;  // beyond the top
  if (lo == 0 || grid_[lo] == v) return lo;
  const float up = grid_[lo] - v, down = v - grid_[lo - 1];
  if (up < down) return lo;
  if (down < up) return lo - 1;
  return std::fabs(grid_[lo]) < std::fabs(grid_[lo - 1]) ? lo : lo - 1;  // tie: the smaller magnitude
}

void GridOptim::project(const float* x, std::size_t n, float* y) const {
  for (std::size_t i = 0; i < n; ++i) y[i] = grid_[index_of(x[i])];
}

double GridOptim::uniform(uint64_t seed, uint64_t t, std::size_t slot, std::size_t i) {
  const uint64_t key = mix64(seed ^ mix64(t * 0x9e3779b97f4a7c15ULL + slot + 1));
  return double(stochastic_bits(key, i) >> 8) * 0x1p-24;
}

StepCounts GridOptim::step(std::size_t slot, const ParamView& p) { return step(slot, p, cfg_.scale); }

StepCounts GridOptim::step(std::size_t slot, const ParamView& p, double scale) {
  check_view(p, "grid");
  if (!(scale > 0) || !std::isfinite(scale)) throw std::invalid_argument("grid: scale must be a positive number");
  state(v_, slot, p.n, "grid");
  if (slot >= idx_.size()) idx_.resize(slot + 1);
  if (idx_[slot].size() != p.n) idx_[slot].assign(p.n, 0);
  return split(p.n, [&](std::size_t b, std::size_t e) { return step_range(slot, p, scale, b, e); });
}

StepCounts GridOptim::step_range(std::size_t slot, const ParamView& p, double scale, std::size_t begin, std::size_t end) {
  std::vector<float>& v = v_[slot];
  std::vector<uint16_t>& hint = idx_[slot];
  const uint64_t t = t_;
  const uint64_t key = mix64(cfg_.seed ^ mix64(t * 0x9e3779b97f4a7c15ULL + slot + 1));
  const double mom = cfg_.momentum, wd = cfg_.weight_decay, clip = cfg_.rung_clip;
  const std::ptrdiff_t top = std::ptrdiff_t(grid_.size()) - 1;
  StepCounts c;
  for (std::size_t i = begin; i < end; ++i) {
    const float gi = p.grad[i];
    if (!std::isfinite(gi)) { ++c.nonfinite; continue; }
    const float w = p.master[i];
    // The hint is the index this element had after the last step; the binary search runs when the master
    // value is not that grid value (first step, or changed from outside).
    std::size_t k = hint[i];
    if (!(grid_[k] == w)) k = index_of(w);
    const float old = p.model ? p.model[i] : grid_[k];
    const double decay_w = std::isfinite(w) ? double(w) : double(grid_[k]);  // a NaN master is not spread
    float vi = float(mom * double(v[i]) + (double(gi) + wd * decay_w));
    if (!std::isfinite(vi)) vi = 0.0f;  // float overflow of the velocity: start again rather than write NaN
    v[i] = vi;
    const double r = std::clamp(double(vi) * scale, -clip, clip);
    std::ptrdiff_t move = 0;
    if (r != 0.0) {
      const double u = double(stochastic_bits(key, i) >> 8) * 0x1p-24;
      const double t = r + u;  // floor(t) without a library call: |t| <= rung_clip + 1
      move = std::ptrdiff_t(t);
      move -= double(move) > t;
    }
    std::ptrdiff_t nk = std::ptrdiff_t(k) - move;
    if (nk < 0 || nk > top) {
      ++c.clamped;
      nk = std::clamp<std::ptrdiff_t>(nk, 0, top);
    }
    const float nv = grid_[std::size_t(nk)];
    p.master[i] = nv;
    if (p.model) p.model[i] = nv;
    hint[i] = uint16_t(nk);
    const bool flipped = nv != old;
    c.flips += flipped;
    if (gi != 0.0f) {
      ++c.updates;
      c.stalls += !flipped;
    }
  }
  return c;
}

const char* to_string(OptimizerKind k) {
  switch (k) {
    case OptimizerKind::Sgd: return "sgd";
    case OptimizerKind::Adam: return "adam";
    case OptimizerKind::Grid: return "grid";
  }
  return "?";
}

OptimizerKind parse_optimizer(std::string_view s) {
  if (s == "sgd") return OptimizerKind::Sgd;
  if (s == "adam") return OptimizerKind::Adam;
  if (s == "grid") return OptimizerKind::Grid;
  throw std::invalid_argument("unknown optimizer '" + std::string(s) + "' (sgd, adam or grid)");
}

}  // namespace qs
