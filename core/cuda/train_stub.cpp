// CPU-only build of cuda/train_cuda.cuh: every entry says that this build has no CUDA backend, so callers
// (the CLI's `train --backend cuda`, the Training tab) need no #if.
#include <stdexcept>

#include "cuda/device.h"
#include "cuda/train_cuda.cuh"

namespace qs::cuda {

namespace {
[[noreturn]] void no_cuda() { throw std::runtime_error(device_info().message); }
}  // namespace

struct Int8LinearCuda::Impl {};
Int8LinearCuda::Int8LinearCuda(int, int, uint64_t, Int8LinearConfig) { no_cuda(); }
Int8LinearCuda::~Int8LinearCuda() = default;
Int8LinearCuda::Int8LinearCuda(Int8LinearCuda&&) noexcept = default;
Int8LinearCuda& Int8LinearCuda::operator=(Int8LinearCuda&&) noexcept = default;
int Int8LinearCuda::in() const { no_cuda(); }
int Int8LinearCuda::out() const { no_cuda(); }
void Int8LinearCuda::set_parameters(const float*, const float*) { no_cuda(); }
void Int8LinearCuda::forward(const float*, int, float*) { no_cuda(); }
void Int8LinearCuda::backward(const float*, float*) { no_cuda(); }
void Int8LinearCuda::parameters(float*, float*) const { no_cuda(); }
void Int8LinearCuda::gradients(float*, float*) const { no_cuda(); }
void Int8LinearCuda::context(std::vector<int8_t>&, std::vector<float>&, std::vector<int8_t>&, std::vector<float>&) const {
  no_cuda();
}
void Int8LinearCuda::quantize_weights_device(void*) { no_cuda(); }
void Int8LinearCuda::forward_device(const float*, int, float*, void*) { no_cuda(); }
void Int8LinearCuda::backward_device(const float*, float*, void*) { no_cuda(); }
float* Int8LinearCuda::W_device() { no_cuda(); }
float* Int8LinearCuda::b_device() { no_cuda(); }
const float* Int8LinearCuda::dW_device() const { no_cuda(); }
const float* Int8LinearCuda::db_device() const { no_cuda(); }
const int8_t* Int8LinearCuda::wq_device() const { no_cuda(); }

std::string training_unsupported(const TrainConfig& cfg) {
  validate(cfg);
  return device_info().message;
}

std::string training_host_work(const TrainConfig&) { return ""; }

TrainResult train_cuda(const TrainConfig& cfg, std::shared_ptr<const Dataset>, std::shared_ptr<const Dataset>,
                       const Trainer::StepCallback&, const std::atomic<bool>*, std::vector<MlpLayer>*) {
  validate(cfg);
  no_cuda();
}

OptimTrace optimizer_trace_cuda(OptimizerKind, double, double, double, const GridOptimConfig&, std::size_t,
                                const std::vector<float>&, const std::vector<float>&,
                                const std::vector<std::vector<float>>&) {
  no_cuda();
}

FakeQuantResult fake_quant_cuda(const Scheme&, const float*, std::size_t, std::size_t, float*, uint16_t*, uint8_t*,
                                uint64_t) {
  no_cuda();
}

std::vector<FakeQuantResult> fake_quant_sequence_cuda(const Scheme&, ScalingMode, int, std::size_t, std::size_t,
                                                      const std::vector<FakeQuantCall>&) {
  no_cuda();
}

}  // namespace qs::cuda
