// A batched multi-layer perceptron (ReLU hidden layers, softmax cross-entropy) with optional fake-quantized
// weights and activations (quantization-aware training with the straight-through estimator). The batch is
// split into 2 fixed shards that run on up to 2 threads, so results are identical for 1 or 2 threads.
// Exercise: tests/tst_mlp.cpp (gradients against finite differences, STE), `quantscope-cli train`.
//
//   qs::Mlp net({784, 256, 128, 10}, /*seed=*/1, /*threads=*/2);
//   net.set_quant({.weights = "e4m3fn/tensor", .acts = "e4m3fn/tensor"});
//   net.quantize_weights(step);                          // Wq = fake-quant(W), codes, clip mask
//   double loss = net.train_batch(x, labels, 128, &correct, &act_stats, step);   // fills dW, db
//   // ... optimizer updates W and b, then quantize_weights() again before the next batch
#pragma once

#include <atomic>
#include <stdexcept>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "format/format.h"
#include "train/fake_quant.h"

namespace qs {

// Thrown by Mlp's passes when the cancel flag (set_cancel_flag) is set; Trainer::run turns it into a stop.
struct TrainingCancelled : std::runtime_error {
  TrainingCancelled() : std::runtime_error("training cancelled") {}
};

struct Dataset;
class ShardPool;

struct MlpLayer {
  int in = 0, out = 0;
  std::vector<float> W;        // master weights, out x in row-major (float32)
  std::vector<float> b;        // bias, out (never quantized)
  // The weights the forward pass uses when not empty: fake-quant(W) under a weight scheme, or the grid
  // values GridOptim writes. Empty: the forward pass uses W.
  std::vector<float> Wq;
  std::vector<uint16_t> codes; // codes of Wq in the weight format (weight scheme only)
  std::vector<uint8_t> clipped;// 1 where W was beyond its group's range (weight scheme only)
  std::vector<float> dW, db;   // gradients of the last train_batch (dW after the STE, i.e. for W)
  const float* forward_weights() const { return Wq.empty() ? W.data() : Wq.data(); }
};

// Quantization of the forward pass. Empty scheme texts mean float32.
struct MlpQuant {
  std::string weights;               // scheme for every weight matrix, e.g. "e4m3fn/tensor"
  std::string acts;                  // scheme for every layer's input (the image and the hidden ReLU outputs)
  EncodeOptions options;             // rounding (nearest | stochastic), overflow; the seed varies per step
  ScalingMode scaling = ScalingMode::Current;
  int history = 16;                  // delayed scaling: amax history length
  bool ste_zero_clipped = false;     // STE: zero the gradient where the value was clipped
};

class Mlp {
 public:
  // sizes = {inputs, hidden..., classes}: at least 2 entries, each in 1..65536. Weights He-uniform
  // (U(-sqrt(6 / in), sqrt(6 / in)) from a counter-based generator keyed by seed), biases 0.
  // threads <= 0: all cores (at most 2 are used). Throws std::invalid_argument.
  explicit Mlp(std::vector<int> sizes = {784, 256, 128, 10}, uint64_t seed = 1, int threads = 0);
  ~Mlp();
  Mlp(Mlp&&) noexcept;
  Mlp& operator=(Mlp&&) noexcept;

  const std::vector<int>& sizes() const { return sizes_; }
  int layer_count() const { return int(layers_.size()); }
  int inputs() const { return sizes_.front(); }
  int classes() const { return sizes_.back(); }
  MlpLayer& layer(int l) { return layers_[std::size_t(l)]; }
  const MlpLayer& layer(int l) const { return layers_[std::size_t(l)]; }
  std::size_t parameter_count() const;
  int threads() const;
  // The network's 2-shard pool, for element-wise work that goes with a step (optimizer, metrics).
  ShardPool* pool() const { return pool_.get(); }

  // Parses the schemes (throws FormatError naming the bad one); clears Wq, codes and the delayed histories.
  void set_quant(const MlpQuant& q);
  const MlpQuant& quant() const { return quant_; }
  bool quantizes_weights() const { return !wq_.empty(); }
  bool quantizes_acts() const { return !aq_.empty(); }
  const FakeQuant* weight_quant(int l) const { return wq_.empty() ? nullptr : &wq_[std::size_t(l)]; }
  const FakeQuant* act_quant(int l) const { return aq_.empty() ? nullptr : &aq_[std::size_t(l)]; }

  // Wq = fake-quant(W) with codes and clip mask for every layer (weight scheme only; otherwise returns an
  // empty vector and leaves Wq alone). `seed` keys stochastic rounding.
  std::vector<FakeQuantResult> quantize_weights(uint64_t seed = 0);

  // One training pass: forward with fake-quantized activations (recorded into the delayed histories),
  // mean cross-entropy over the batch, backward into dW and db (STE through every fake quantization).
  // x: batch x inputs, labels in [0, classes). Returns the loss (NaN if it is not finite); *correct gets
  // the number of rows whose argmax is the label; *act_stats one entry per layer (its input's quantization).
  double train_batch(const float* x, const int* labels, int batch, int* correct = nullptr,
                     std::vector<FakeQuantResult>* act_stats = nullptr, uint64_t seed = 0);

  // Logits (batch x classes) with the forward pass of training (activations quantized, history not touched).
  void forward(const float* x, int batch, float* logits, uint64_t seed = 0);
  // Accuracy over a data set, in chunks of `chunk` rows (the batch size, so per-batch activation scales see
  // batches like training's).
  double accuracy(const Dataset& data, int chunk = 128);

  // A flag another thread may set to end the work in progress: train_batch, forward and accuracy check it
  // between layers (and chunks) and throw TrainingCancelled once it is set. Null (the default): never.
  void set_cancel_flag(const std::atomic<bool>* flag) { cancel_ = flag; }

 private:
  void check_cancel() const {
    if (cancel_ && cancel_->load(std::memory_order_relaxed)) throw TrainingCancelled();
  }
  struct Work;
  void ensure_work(int batch);
  // Forward of rows [0, batch) into the work buffers; returns the logits pointer.
  const float* forward_impl(const float* x, int batch, bool record, uint64_t seed,
                            std::vector<FakeQuantResult>* act_stats);

  std::vector<int> sizes_;
  std::vector<MlpLayer> layers_;
  MlpQuant quant_;
  std::vector<FakeQuant> wq_, aq_;
  std::unique_ptr<ShardPool> pool_;
  std::unique_ptr<Work> work_;
  const std::atomic<bool>* cancel_ = nullptr;
};

}  // namespace qs
