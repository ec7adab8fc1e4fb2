// The training lab on the GPU: the trainable int8 linear layer (the CUDA twin of train/int8_linear.h), the
// Fashion-MNIST MLP trained with float32 products, int8 layers, or STE fake quantization, and the
// optimizers (SGD, Adam, GridOptim) as device kernels with the CPU's arithmetic, so that for the same inputs
// they write the same bits as train/optim.h. No CUDA types here; without a CUDA build every entry throws
// std::runtime_error saying so (train_stub.cpp). Exercise: `quantscope-cli selftest --backend cuda` (cases
// int8-linear/..., optim/..., fakequant/...), `quantscope-cli train --backend cuda [--int8]`.
//
//   qs::TrainConfig cfg;                                     // as for the CPU lab
//   if (std::string why = qs::cuda::training_unsupported(cfg); !why.empty()) fail(why);
//   qs::TrainResult r = qs::cuda::train_cuda(cfg, data.train, data.test, on_step);
//
// What runs on the GPU, per step (one host synchronisation per step, for the metrics):
//   the batch gathered on the device from the resident uint8 images (pixel * (1/255), as Dataset::gather);
//   forward: fp32 / fake-quant layers Y = in * W^T (train_gemm's canonical FMA chains) + b, ReLU; int8
//   layers as Int8LinearCuda; softmax cross-entropy; backward: dW = dz^T in, dX = dz W (or the int8 layer's
//   backward kernels), db column sums in row order, the STE (and its clip masks); the optimizer kernels; the
//   weight fake quantization for the next step; flips, bit-stalls and code histograms counted on the device.
// The epoch order, the initial weights, and every seed (stochastic rounding, GridOptim's draws) are the CPU
// lab's, and so is every float operation: the products' summation order (train/train_gemm.h), the softmax
// (train/repro_math.h), the sums of db and of the loss. A float32, fake-quantization or GridOptim run on the
// GPU is therefore the CPU's run bit for bit, step by step (the self-test's train-equal/... cases check it).
// int8-layer runs are not: their backward runs cuBLAS on dequantized operands (the forward is exact).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "quant/scheme.h"
#include "train/fake_quant.h"
#include "train/int8_linear.h"
#include "train/optim.h"
#include "train/trainer.h"

namespace qs::cuda {

// The int8 layer with device-resident parameters (W out x in, b), gradients and the saved context.
class Int8LinearCuda {
 public:
  // Parameters start as int8_linear_init(in, out, seed) (the CPU layer's). Throws std::invalid_argument for
  // sizes outside 1..65536, std::runtime_error without a device.
  Int8LinearCuda(int in, int out, uint64_t seed = 1, Int8LinearConfig cfg = {});
  ~Int8LinearCuda();
  Int8LinearCuda(Int8LinearCuda&&) noexcept;
  Int8LinearCuda& operator=(Int8LinearCuda&&) noexcept;

  int in() const;
  int out() const;

  // Host pointers (copies; synchronous). forward quantizes the current W first.
  void set_parameters(const float* W, const float* b);
  void forward(const float* x, int rows, float* y);
  void backward(const float* dy, float* dx);  // dx may be null
  void parameters(float* W, float* b) const;
  void gradients(float* dW, float* db) const;
  // The context of the last forward (codes and scales of X and W).
  void context(std::vector<int8_t>& xq, std::vector<float>& sx, std::vector<int8_t>& wq, std::vector<float>& sw) const;

  // Device pointers, asynchronous on `stream` (a cudaStream_t). forward_device uses the weights of the last
  // quantize_weights_device (call it after each update of W).
  void quantize_weights_device(void* stream);
  void forward_device(const float* x, int rows, float* y, void* stream);
  void backward_device(const float* dy, float* dx, void* stream);
  float* W_device();
  float* b_device();
  const float* dW_device() const;
  const float* db_device() const;
  const int8_t* wq_device() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> p_;
};

// Why `cfg` cannot train on the GPU (one line), or empty when it can: the build and the device.
// validate(cfg) errors are thrown, as the CPU lab throws them.
std::string training_unsupported(const TrainConfig& cfg);
// Every scheme the CPU lab takes trains on the GPU too. The device's own kernels cover per-tensor, per-row and
// per-column (channel:0 / channel:1), none and row blocks with amax, MX, NVFP4 two-level, 16-bit or unsigned
// affine (scale and zero point) scales, current or delayed; the others (ggml blocks, observer clips and
// searched scales, 2-D tiles) run the CPU's FakeQuant on a copy each step. This says which, in one line
// (empty: all on the device).
std::string training_host_work(const TrainConfig& cfg);

// The Trainer's loop (train/trainer.h: the same epochs, batches, metrics, callback and cancel contract) on
// the GPU. `final_model`, when given, receives the trained layers (W, b; Wq for quantized weights).
// Throws std::invalid_argument / FormatError as Trainer does, std::runtime_error when training_unsupported.
TrainResult train_cuda(const TrainConfig& cfg, std::shared_ptr<const Dataset> train, std::shared_ptr<const Dataset> test,
                       const Trainer::StepCallback& on_step = {}, const std::atomic<bool>* cancel = nullptr,
                       std::vector<MlpLayer>* final_model = nullptr);

// For the self-test (CPU = GPU on the same inputs):
// `steps` optimizer steps of one parameter slot on the device, grads[t] the gradient of step t + 1; returns
// the master values after each step (and model values for grid) and each step's counts.
struct OptimTrace {
  std::vector<std::vector<float>> master, model;
  std::vector<StepCounts> counts;
};
OptimTrace optimizer_trace_cuda(OptimizerKind kind, double lr, double momentum, double weight_decay,
                                const GridOptimConfig& grid, std::size_t slot, const std::vector<float>& init,
                                const std::vector<float>& model_init, const std::vector<std::vector<float>>& grads);
// FakeQuant::apply (current scaling) of a rows x cols matrix on the device (or, for schemes without a
// device path, on the host as training does); codes and clipped as FakeQuant.
FakeQuantResult fake_quant_cuda(const Scheme& s, const float* x, std::size_t rows, std::size_t cols, float* y,
                                uint16_t* codes, uint8_t* clipped, uint64_t seed);
// A sequence of calls of one FakeQuant(s, mode, history) on the device (host pointers): delayed scaling's
// history carries from call to call as on the CPU; `record` false is an evaluation pass.
struct FakeQuantCall {
  const float* x = nullptr;
  float* y = nullptr;
  uint16_t* codes = nullptr;
  uint8_t* clipped = nullptr;
  uint64_t seed = 0;
  bool record = true;
};
std::vector<FakeQuantResult> fake_quant_sequence_cuda(const Scheme& s, ScalingMode mode, int history, std::size_t rows,
                                                      std::size_t cols, const std::vector<FakeQuantCall>& calls);

}  // namespace qs::cuda
