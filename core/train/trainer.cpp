// Trainer: validation, the epoch/batch loop, optimizer dispatch (the grid optimizer owns the weight grid,
// the others leave quantization to the Mlp's weight scheme), and the per-step metrics.
#include "train/trainer.h"
#include "util/mix64.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "format/rng.h"
#include "train/shard_pool.h"

namespace qs {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

[[noreturn]] void bad(const std::string& what) { throw std::invalid_argument(what); }

bool is_affine(const Format& f) { return f.is_int() && !f.is_signed; }

// Elements whose code changed (flips) and, among the unchanged ones, those with a finite non-zero gradient
// (bit-stalls); two fixed halves on the pool, in loops that vectorize.
template <class Code>
void count_changes(ShardPool* pool, const Code* a, const Code* b, const float* grad, std::size_t n, uint64_t& flips,
                   uint64_t& stalls) {
  uint64_t f[2] = {0, 0}, s[2] = {0, 0};
  auto body = [&](int h) {
    const std::size_t b0 = h == 0 ? 0 : n / 2, b1 = h == 0 ? n / 2 : n;
    uint32_t ff = 0, ss = 0;
    for (std::size_t i = b0; i < b1; ++i) {
      const uint32_t same = a[i] == b[i];
      const uint32_t live = (grad[i] != 0.0f) & (std::fabs(grad[i]) <= 3.402823466e38f);
      ff += 1 - same;
      ss += same & live;
    }
    f[h] = ff;
    s[h] = ss;
  };
  if (pool) pool->run(2, body);
  else { body(0); body(1); }
  flips = f[0] + f[1];
  stalls = s[0] + s[1];
}

void count_codes(const Format& f, const uint16_t* codes, std::size_t n, std::vector<uint32_t>& hist) {
  hist.assign(f.code_count(), 0);
  for (std::size_t i = 0; i < n; ++i) hist[codes[i]]++;
}

}  // namespace

std::vector<uint32_t> epoch_permutation(std::size_t n, uint64_t seed, int epoch) {
  std::vector<uint32_t> p(n);
  for (std::size_t i = 0; i < n; ++i) p[i] = uint32_t(i);
  const uint64_t key = mix64(seed * 0x9e3779b97f4a7c15ULL ^ (uint64_t(epoch) << 32 | 0x5bd1e995u));
  for (std::size_t i = n; i > 1; --i) {
    const uint64_t r = (uint64_t(stochastic_bits(key, 2 * i)) << 32) | stochastic_bits(key, 2 * i + 1);
    const std::size_t j = std::size_t(r % i);
    std::swap(p[i - 1], p[j]);
  }
  return p;
}

double TrainConfig::effective_lr() const {
  if (lr > 0) return lr;
  switch (optimizer) {
    case OptimizerKind::Sgd: return 0.05;
    case OptimizerKind::Adam: return 1e-3;
    case OptimizerKind::Grid: return 6.0;
  }
  return 1e-3;
}

double TrainConfig::effective_weight_decay() const {
  if (weight_decay >= 0) return weight_decay;
  return optimizer == OptimizerKind::Grid ? 1e-4 : 0.0;
}

std::string TrainConfig::weight_format_name() const {
  if (int8) return "int8";
  if (!weights.empty()) return parse_scheme(weights).format.name;
  return optimizer == OptimizerKind::Grid ? "e4m3fn" : "";
}

void validate(const TrainConfig& c) {
  if (c.sizes.size() < 2) bad("network: needs at least an input and an output size");
  for (int s : c.sizes)
    if (s < 1 || s > 65536) bad("network: layer size " + std::to_string(s) + " is outside 1..65536");
  if (c.epochs < 1 || c.epochs > 10000) bad("epochs must be in 1..10000 (got " + std::to_string(c.epochs) + ")");
  if (c.batch < 1 || c.batch > 65536) bad("batch must be in 1..65536 (got " + std::to_string(c.batch) + ")");
  if (!(c.lr >= 0) || !std::isfinite(c.lr)) bad("learning rate must be a positive number");
  if (!(c.momentum >= 0 && c.momentum < 1)) bad("momentum must be in [0, 1)");
  if (std::isnan(c.weight_decay) || !std::isfinite(c.weight_decay)) bad("weight decay must be a number >= 0");
  if (!(c.rung_clip > 0 && c.rung_clip <= 65536)) bad("rung_clip must be in (0, 65536]");
  if (c.history < 1 || c.history > 100000) bad("amax history must be in 1..100000");
  if (c.histogram_every < 0) bad("histogram_every must be >= 0");
  if (c.int8 && (!c.weights.empty() || !c.acts.empty() || c.optimizer == OptimizerKind::Grid))
    bad("int8 layers quantize their own weights and activations: no weight or activation scheme and no grid "
        "optimizer with them");
  if (!c.int8 && (c.int8_x_per_row || c.int8_w_per_tensor)) bad("int8 scale options need int8 layers");
  if (!c.weights.empty()) {
    const Scheme s = parse_scheme(c.weights);  // throws FormatError naming the scheme
    if (c.optimizer == OptimizerKind::Grid) {
      if (s.granularity != Granularity::Tensor)
        bad("grid optimizer: the weights live on the unscaled grid of a format; give --weights FORMAT (e.g. e4m3fn), not " +
            s.text);
      if (!s.format.is_signed) bad("grid optimizer: the grid format must be signed (" + s.format.name + " is not)");
    } else if (c.scaling == ScalingMode::Delayed && (s.granularity != Granularity::Tensor || is_affine(s.format))) {
      bad("delayed scaling needs /tensor schemes of signed formats (weights: " + s.text + ")");
    }
  }
  if (!c.acts.empty()) {
    const Scheme s = parse_scheme(c.acts);
    if (c.scaling == ScalingMode::Delayed && (s.granularity != Granularity::Tensor || is_affine(s.format)))
      bad("delayed scaling needs /tensor schemes of signed formats (activations: " + s.text + ")");
  }
}

uint64_t StepMetrics::flips() const { uint64_t s = 0; for (auto& l : layers) s += l.flips; return s; }
uint64_t StepMetrics::updates() const { uint64_t s = 0; for (auto& l : layers) s += l.updates; return s; }
uint64_t StepMetrics::bit_stalls() const { uint64_t s = 0; for (auto& l : layers) s += l.bit_stalls; return s; }
uint64_t StepMetrics::overflow() const {
  uint64_t s = 0;
  for (auto& l : layers) s += l.weight_overflow + l.act_overflow;
  return s;
}
uint64_t StepMetrics::underflow() const {
  uint64_t s = 0;
  for (auto& l : layers) s += l.weight_underflow + l.act_underflow;
  return s;
}
uint64_t StepMetrics::weights() const { uint64_t s = 0; for (auto& l : layers) s += l.weights; return s; }

const char* train_steps_csv_header() {
  return "step,epoch,loss,train_acc,test_acc,flips,updates,bit_stalls,overflow,underflow\n";
}

std::string train_steps_csv_row(const StepMetrics& m) {
  char test[32] = "";
  if (m.epoch_end && m.test_acc >= 0) std::snprintf(test, sizeof test, "%.6f", m.test_acc);
  char buf[256];
  std::snprintf(buf, sizeof buf, "%llu,%d,%.6g,%.6f,%s,%llu,%llu,%llu,%llu,%llu\n", (unsigned long long)m.step, m.epoch,
                m.loss, m.train_acc, test, (unsigned long long)m.flips(), (unsigned long long)m.updates(),
                (unsigned long long)m.bit_stalls(), (unsigned long long)m.overflow(), (unsigned long long)m.underflow());
  return buf;
}

const char* to_string(TrainResult::Status s) {
  switch (s) {
    case TrainResult::Status::Completed: return "completed";
    case TrainResult::Status::Stopped: return "stopped";
    case TrainResult::Status::Diverged: return "diverged";
  }
  return "?";
}

void validate_data(const TrainConfig& c, const Dataset* train, const Dataset* test) {
  if (!train || train->size() == 0) bad("training set is empty");
  if (!test || test->size() == 0) bad("test set is empty");
  if (train->features() != c.sizes.front() || test->features() != c.sizes.front())
    bad("network takes " + std::to_string(c.sizes.front()) + " inputs, the data has " +
        std::to_string(train->features()) + " features");
  if (c.sizes.back() < train->classes)
    bad("network has " + std::to_string(c.sizes.back()) + " outputs for " + std::to_string(train->classes) + " classes");
}

Trainer::Trainer(TrainConfig cfg, std::shared_ptr<const Dataset> train, std::shared_ptr<const Dataset> test)
    : cfg_(std::move(cfg)), train_(std::move(train)), test_(std::move(test)) {
  validate(cfg_);
  if (cfg_.int8)
    bad("int8 layers train on the GPU (--backend cuda); the CPU lab trains fp32, fake-quantized (--weights, --acts) "
        "or grid weights");
  validate_data(cfg_, train_.get(), test_.get());

  net_ = std::make_unique<Mlp>(cfg_.sizes, cfg_.seed, cfg_.threads);
  MlpQuant q;
  q.options.rounding = cfg_.rounding;
  q.options.overflow = cfg_.overflow;
  q.options.seed = cfg_.seed;
  q.scaling = cfg_.scaling;
  q.history = cfg_.history;
  q.ste_zero_clipped = cfg_.ste_zero_clipped;
  q.acts = cfg_.acts;
  const double lr = cfg_.effective_lr(), wd = cfg_.effective_weight_decay();
  switch (cfg_.optimizer) {
    case OptimizerKind::Sgd: opt_ = std::make_unique<SgdMomentum>(lr, cfg_.momentum, wd); break;
    case OptimizerKind::Adam: opt_ = std::make_unique<Adam>(lr, 0.9, 0.999, 1e-8, wd); break;
    case OptimizerKind::Grid: {
      GridOptimConfig g;
      g.format = cfg_.weight_format_name();
      g.scale = lr;
      g.momentum = cfg_.momentum;
      g.weight_decay = wd;
      g.rung_clip = cfg_.rung_clip;
      g.seed = cfg_.seed;
      opt_ = std::make_unique<GridOptim>(g);
      break;
    }
  }
  if (cfg_.optimizer != OptimizerKind::Grid) q.weights = cfg_.weights;  // grid: the optimizer keeps weights on its grid
  net_->set_quant(q);
  opt_->set_pool(net_->pool());
  const std::string wf = cfg_.weight_format_name();
  if (!wf.empty()) {
    wfmt_ = parse_format(wf);
    has_wfmt_ = true;
  }
  if (auto* g = dynamic_cast<GridOptim*>(opt_.get())) {
    // The model starts on the grid: each weight's nearest grid value (the masters follow at the first step).
    for (int l = 0; l < net_->layer_count(); ++l) {
      MlpLayer& L = net_->layer(l);
      L.Wq.resize(L.W.size());
      g->project(L.W.data(), L.W.size(), L.Wq.data());
      g->project(L.b.data(), L.b.size(), L.b.data());
    }
  }
}

Trainer::~Trainer() = default;

std::size_t Trainer::steps_per_epoch() const {
  return (train_->size() + std::size_t(cfg_.batch) - 1) / std::size_t(cfg_.batch);
}

const GridOptim* Trainer::grid_optimizer() const { return dynamic_cast<const GridOptim*>(opt_.get()); }

TrainResult Trainer::run(const StepCallback& on_step, const std::atomic<bool>* cancel) {
  if (ran_) throw std::logic_error("Trainer::run: a trainer runs once; make a new one");
  ran_ = true;
  const auto t0 = Clock::now();
  Mlp& net = *net_;
  const int L = net.layer_count();
  const std::size_t B = std::size_t(cfg_.batch);
  auto* grid = dynamic_cast<GridOptim*>(opt_.get());
  const bool wquant = net.quantizes_weights();

  std::vector<FakeQuantResult> wres = net.quantize_weights(mix64(cfg_.seed));  // the weights of step 1
  std::vector<std::vector<uint16_t>> old_codes(static_cast<std::size_t>(L));
  std::vector<std::vector<float>> old_w(static_cast<std::size_t>(L));
  std::vector<float> x(B * std::size_t(net.inputs()));
  std::vector<int> y(B);
  std::vector<FakeQuantResult> acts;
  net.set_cancel_flag(cancel);

  auto step = [&](StepMetrics& m, const std::vector<uint32_t>& perm, std::size_t first, std::size_t n,
                  uint64_t step_seed) -> std::size_t {
    train_->gather(perm.data() + first, n, x.data(), y.data());
    int correct = 0;
    const double loss = net.train_batch(x.data(), y.data(), int(n), &correct, &acts, step_seed);
    m.loss = loss;
    m.train_acc = double(correct) / double(n);
    for (int l = 0; l < L; ++l) {
      LayerMetrics& lm = m.layers[std::size_t(l)];
      lm.weights = net.layer(l).W.size();
      if (!acts.empty()) {
        const FakeQuantResult& a = acts[std::size_t(l)];
        lm.act_overflow = a.stats.overflow;
        lm.act_underflow = a.stats.underflow;
        lm.act_clipped = a.clipped;
        lm.act_scale = a.scale;
        lm.act_amax = a.amax;
      }
    }
    if (!std::isfinite(loss)) return std::size_t(correct);  // run_training ends the run: no update
    // Remember the codes (or float32 weights) the step starts from.
    for (int l = 0; l < L; ++l) {
      const MlpLayer& lay = net.layer(l);
      if (wquant && !lay.codes.empty()) old_codes[std::size_t(l)] = lay.codes;
      else if (!grid) old_w[std::size_t(l)] = wquant ? lay.Wq : lay.W;
    }
    opt_->begin_step();
    for (int l = 0; l < L; ++l) {
      MlpLayer& lay = net.layer(l);
      LayerMetrics& lm = m.layers[std::size_t(l)];
      const StepCounts cw = opt_->step(std::size_t(2 * l), {lay.W.data(), lay.dW.data(), grid ? lay.Wq.data() : nullptr, lay.W.size()});
      opt_->step(std::size_t(2 * l + 1), {lay.b.data(), lay.db.data(), nullptr, lay.b.size()});
      lm.updates = cw.updates;
      if (grid) {
        lm.flips = cw.flips;
        lm.bit_stalls = cw.stalls;
        lm.weight_overflow = cw.clamped;
        lm.weight_scale = 1.0f;
      }
    }
    if (wquant) wres = net.quantize_weights(step_seed);
    const bool hist = cfg_.histogram_every > 0 && (m.step == 1 || m.step % uint64_t(cfg_.histogram_every) == 0 || m.epoch_end);
    for (int l = 0; l < L; ++l) {
      const MlpLayer& lay = net.layer(l);
      LayerMetrics& lm = m.layers[std::size_t(l)];
      if (grid) {
        if (hist) {
          lm.code_histogram.assign(wfmt_.code_count(), 0);
          for (float v : lay.Wq) lm.code_histogram[grid->grid_codes()[grid->index_of(v)]]++;
        }
        continue;
      }
      const std::size_t n_w = lay.W.size();
      uint64_t flips = 0, stalls = 0;
      if (wquant && !lay.codes.empty()) {
        count_changes(net.pool(), old_codes[std::size_t(l)].data(), lay.codes.data(), lay.dW.data(), n_w, flips, stalls);
        if (hist) count_codes(wfmt_, lay.codes.data(), n_w, lm.code_histogram);
      } else {  // float32 bits
        const float* a = old_w[std::size_t(l)].data();
        const float* b = wquant ? lay.Wq.data() : lay.W.data();
        count_changes(net.pool(), reinterpret_cast<const uint32_t*>(a), reinterpret_cast<const uint32_t*>(b),
                      lay.dW.data(), n_w, flips, stalls);
      }
      lm.flips = flips;
      lm.bit_stalls = stalls;
      if (wquant) {
        const FakeQuantResult& w = wres[std::size_t(l)];
        lm.weight_overflow = w.stats.overflow;
        lm.weight_underflow = w.stats.underflow;
        lm.weight_clipped = w.clipped;
        lm.weight_scale = w.scale;
        lm.weight_amax = w.amax;
      }
    }
    return std::size_t(correct);
  };
  auto test_accuracy = [&](bool final) {
    if (final) net.set_cancel_flag(nullptr);  // the final evaluation runs to the end (one pass over the test set)
    return net.accuracy(*test_, cfg_.batch);
  };
  TrainResult res = run_training(cfg_, train_->size(), step, test_accuracy, on_step, t0);
  net.set_cancel_flag(nullptr);
  return res;
}

TrainResult run_training(const TrainConfig& cfg, std::size_t rows, const TrainStepFn& train_step,
                         const std::function<double(bool)>& test_accuracy, const Trainer::StepCallback& on_step,
                         std::chrono::steady_clock::time_point t0) {
  TrainResult res;
  const std::size_t B = std::size_t(cfg.batch), N = rows, spe = (N + B - 1) / B;
  const int L = int(cfg.sizes.size()) - 1;
  uint64_t step = 0;
  bool stop = false;
  try {
  for (int epoch = 1; epoch <= cfg.epochs && !stop; ++epoch) {
    const std::vector<uint32_t> perm = epoch_permutation(N, cfg.seed, epoch);
    const auto te = Clock::now();
    double loss_sum = 0, hit_sum = 0;
    std::size_t rows_sum = 0;
    for (std::size_t s = 0; s < spe && !stop; ++s) {
      const std::size_t first = s * B, n = std::min(B, N - first);
      ++step;
      StepMetrics m;
      m.step = step;
      m.epoch = epoch;
      m.step_in_epoch = int(s + 1);
      m.steps_per_epoch = int(spe);
      m.batch = int(n);
      m.epoch_end = s + 1 == spe;
      m.layers.resize(std::size_t(L));
      const uint64_t step_seed = mix64(cfg.seed ^ (step * 0x9e3779b97f4a7c15ULL));
      const std::size_t correct = train_step(m, perm, first, n, step_seed);
      if (!std::isfinite(m.loss)) {
        res.status = TrainResult::Status::Diverged;
        res.message = "loss is not finite at step " + std::to_string(step) + " (epoch " + std::to_string(epoch) +
                      "): the run diverged; try a smaller learning rate";
        m.loss = std::nan("");
        m.seconds = since(t0);
        if (on_step) on_step(std::move(m));
        stop = true;
        break;
      }
      loss_sum += m.loss * double(n);
      hit_sum += double(correct);
      rows_sum += n;
      if (m.epoch_end) {
        EpochSummary e;
        e.epoch = epoch;
        e.seconds = since(te);
        e.loss = loss_sum / double(rows_sum);
        e.train_acc = hit_sum / double(rows_sum);
        if (cfg.evaluate_epochs) e.test_acc = m.test_acc = test_accuracy(false);
        res.epochs.push_back(e);
      }
      m.seconds = since(t0);
      if (on_step && !on_step(std::move(m))) {
        res.status = TrainResult::Status::Stopped;
        res.message = "stopped at step " + std::to_string(step) + " (epoch " + std::to_string(epoch) + ")";
        stop = true;
      }
      if (cfg.max_steps && step >= cfg.max_steps && !stop) {
        res.status = TrainResult::Status::Stopped;
        res.message = "step limit " + std::to_string(cfg.max_steps) + " reached";
        stop = true;
      }
    }
  }
  } catch (const TrainingCancelled&) {  // the cancel flag, within a step: that step is not delivered
    --step;
    res.status = TrainResult::Status::Stopped;
    res.message = "stopped during step " + std::to_string(step + 1);
  }
  res.steps = step;
  if (res.status == TrainResult::Status::Completed && !res.epochs.empty() && res.epochs.back().test_acc >= 0)
    res.test_acc = res.epochs.back().test_acc;
  else
    res.test_acc = test_accuracy(true);
  res.seconds = since(t0);
  return res;
}

}  // namespace qs
