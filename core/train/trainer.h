// The training loop of the training lab: epochs of shuffled mini-batches through an Mlp (fp32, QAT with the
// STE, or GridOptim on a format's grid), per-step metrics handed to a callback by value, test accuracy at
// each epoch end. Built to be driven from a GUI worker thread: the callback returns false to stop (pause is
// the caller's business: block inside the callback). Exercise: tests/tst_trainer.cpp,
// `quantscope-cli train --dataset synthetic --epochs 2 --weights e4m3fn --acts e4m3fn`.
//
//   qs::TrainConfig cfg;                       // 784-256-128-10, 15 epochs, batch 128, Adam 1e-3, fp32
//   cfg.weights = cfg.acts = "e4m3fn/tensor";
//   qs::DataSplit data = qs::load_fashion_mnist();
//   qs::Trainer trainer(cfg, data.train, data.test);   // throws std::invalid_argument / qs::FormatError
//   qs::TrainResult r = trainer.run([](qs::StepMetrics m) { return !stop_requested; });
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "format/format.h"
#include "train/dataset.h"
#include "train/fake_quant.h"
#include "train/mlp.h"
#include "train/optim.h"

namespace qs {

struct TrainConfig {
  std::vector<int> sizes{784, 256, 128, 10};  // inputs (= the data's features), hidden..., classes
  int epochs = 15;                            // 1..10000
  int batch = 128;                            // 1..65536 (the last batch of an epoch may be smaller)
  OptimizerKind optimizer = OptimizerKind::Adam;
  double lr = 0;                 // 0: the optimizer's default (sgd 0.05, adam 1e-3, grid 6 = GridOptim's scale)
  double momentum = 0.9;         // sgd and grid, in [0, 1)
  double weight_decay = -1;      // < 0: the default (sgd and adam 0, grid 1e-4)
  double rung_clip = 10;         // grid: most rungs per step
  std::string weights;           // weight scheme (empty: fp32). grid: its format is the grid (default e4m3fn)
  std::string acts;              // activation scheme (empty: fp32)
  Rounding rounding = Rounding::Nearest;   // of the fake quantization
  Overflow overflow = Overflow::Saturate;
  ScalingMode scaling = ScalingMode::Current;
  int history = 16;              // delayed scaling: amax history length
  bool ste_zero_clipped = false; // STE: no gradient where the value was clipped
  uint64_t seed = 1;             // initialisation, shuffling and stochastic rounding
  int threads = 0;               // <= 0: all cores (at most 2 are used); results do not depend on it
  int histogram_every = 0;       // code-usage histograms of the weights every N steps (0: never)
  uint64_t max_steps = 0;        // stop after this many steps (0: run all epochs)
  bool evaluate_epochs = true;   // test accuracy at each epoch end
  // int8 linear layers (train/int8_linear.h: X per tensor or per row, W per output channel or per tensor,
  // int8 GEMM forward, float32 backward on the dequantized operands). GPU only (cuda/train_cuda.cuh); the
  // layers quantize themselves, so no --weights / --acts scheme and no grid optimizer with them.
  bool int8 = false;
  bool int8_x_per_row = false;
  bool int8_w_per_tensor = false;

  double effective_lr() const;
  double effective_weight_decay() const;
  // The format whose codes flips, bit-stalls and histograms count: the weight scheme's, or for grid the grid's;
  // empty for fp32 weights.
  std::string weight_format_name() const;
};

// Throws std::invalid_argument or FormatError (one line naming the bad value) when cfg cannot run.
void validate(const TrainConfig& cfg);
// The data against cfg, as every lab needs it: both sets non-empty, features = sizes.front(), at least as many
// outputs as classes. Throws std::invalid_argument (one line).
void validate_data(const TrainConfig& cfg, const Dataset* train, const Dataset* test);

// The order in which an epoch visits the n training rows: Fisher-Yates with the counter-based generator,
// the same on every platform and backend for (seed, epoch).
std::vector<uint32_t> epoch_permutation(std::size_t n, uint64_t seed, int epoch);

// One weight matrix's view of a step. Flips, updates and bit-stalls count the weight matrix only (not the
// bias). "Code" is the weight format's code (grid index for GridOptim), or the float32 bits for fp32 weights.
struct LayerMetrics {
  uint64_t weights = 0;          // elements of the matrix
  uint64_t flips = 0;            // code changed by this step
  uint64_t updates = 0;          // finite non-zero gradient entries
  uint64_t bit_stalls = 0;       // non-zero gradient, code unchanged
  uint64_t weight_overflow = 0, weight_underflow = 0;  // weight quantization (grid: moves cut at a grid end)
  uint64_t act_overflow = 0, act_underflow = 0;        // quantization of this layer's input
  uint64_t weight_clipped = 0, act_clipped = 0;        // beyond their group's range (the STE's clip mask)
  float weight_scale = 0, act_scale = 0;   // scales of /tensor schemes (0: fp32 or per-group scales)
  double weight_amax = 0, act_amax = 0;
  // Count per code of the weight format (code_count() entries) on histogram steps; empty otherwise.
  std::vector<uint32_t> code_histogram;
};

struct StepMetrics {
  uint64_t step = 0;             // 1-based over the run
  int epoch = 0;                 // 1-based
  int step_in_epoch = 0;         // 1-based
  int steps_per_epoch = 0;
  int batch = 0;                 // rows in this batch
  double loss = 0;               // mean cross-entropy of the batch (NaN: diverged)
  double train_acc = 0;          // batch accuracy
  double test_acc = -1;          // test accuracy at an epoch end (evaluated after this step); -1 otherwise
  bool epoch_end = false;
  double seconds = 0;            // since run() started
  std::vector<LayerMetrics> layers;

  uint64_t flips() const;
  uint64_t updates() const;
  uint64_t bit_stalls() const;
  uint64_t overflow() const;     // weights + activations
  uint64_t underflow() const;
  uint64_t weights() const;
};

// The steps CSV of `quantscope-cli train --csv` and the GUI's export:
// step,epoch,loss,train_acc,test_acc,flips,updates,bit_stalls,overflow,underflow (test_acc empty except at
// epoch ends).
const char* train_steps_csv_header();
std::string train_steps_csv_row(const StepMetrics& m);

struct EpochSummary {
  int epoch = 0;
  double loss = 0, train_acc = 0;   // means over the epoch's batches (weighted by rows)
  double test_acc = -1;             // -1 when not evaluated
  double seconds = 0;               // this epoch's training time (without the test evaluation)
};

struct TrainResult {
  enum class Status { Completed, Stopped, Diverged };
  Status status = Status::Completed;
  std::string message;              // why it stopped (Stopped / Diverged), one line
  uint64_t steps = 0;
  std::vector<EpochSummary> epochs;
  double test_acc = -1;             // on the whole test set with the final weights
  double seconds = 0;
};
const char* to_string(TrainResult::Status s);  // "completed", "stopped", "diverged"

class Trainer {
 public:
  // Called after every step with the step's metrics (by value); return false to stop after it.
  using StepCallback = std::function<bool(StepMetrics)>;

  // Validates cfg against the data (features = sizes.front(), classes); throws std::invalid_argument / FormatError.
  Trainer(TrainConfig cfg, std::shared_ptr<const Dataset> train, std::shared_ptr<const Dataset> test);
  ~Trainer();

  const TrainConfig& config() const { return cfg_; }
  std::size_t steps_per_epoch() const;
  // The format the histograms count codes of (null for fp32 weights).
  const Format* weight_format() const { return has_wfmt_ ? &wfmt_ : nullptr; }
  const Mlp& model() const { return *net_; }
  Mlp& model() { return *net_; }
  const GridOptim* grid_optimizer() const;

  // Runs the configured epochs (once; a second call throws std::logic_error). A NaN or infinite loss stops
  // the run with Status::Diverged after delivering that step (loss NaN). After the last step (or a stop),
  // the final weights are evaluated on the whole test set. `cancel`, when given, may be set from another
  // thread to stop within the step in progress (checked between layers; a large batch's step can take
  // seconds): the run ends with Status::Stopped and the steps delivered so far.
  TrainResult run(const StepCallback& on_step = {}, const std::atomic<bool>* cancel = nullptr);

 private:
  TrainConfig cfg_;
  std::shared_ptr<const Dataset> train_, test_;
  std::unique_ptr<Mlp> net_;
  std::unique_ptr<Optimizer> opt_;
  Format wfmt_;
  bool has_wfmt_ = false;
  bool ran_ = false;
};

// The loop every lab shares (Trainer::run, cuda::train_cuda): epochs in epoch_permutation order, each step's
// StepMetrics frame (step, epoch, batch, seed), a non-finite loss ending the run as Diverged, the epoch
// summaries with their test accuracy, the callback and the step limit, the final test accuracy.
// `step` trains rows order[first, first + n) and fills m.loss, m.train_acc and m.layers, returning the number of
// rows classified right; it may throw TrainingCancelled (that step is not delivered, the run ends Stopped).
// `test_accuracy(final)`: the current weights on the test set; `final` is the evaluation after the last step.
using TrainStepFn = std::function<std::size_t(StepMetrics& m, const std::vector<uint32_t>& order, std::size_t first,
                                              std::size_t n, uint64_t step_seed)>;
TrainResult run_training(const TrainConfig& cfg, std::size_t rows, const TrainStepFn& step,
                         const std::function<double(bool final)>& test_accuracy, const Trainer::StepCallback& on_step,
                         std::chrono::steady_clock::time_point started);

}  // namespace qs
