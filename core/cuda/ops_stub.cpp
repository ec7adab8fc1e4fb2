// CPU-only build of the CUDA operations (fake_quant, quantize_int8, scheme_quant, gemm_int8, linear_backward,
// gemm_cublas, bench_gemm_cuda, bench_quantize_cuda): every entry throws std::runtime_error with device_info()'s message ("no GPU:
// this build has no CUDA backend ..."), and the queries answer "nothing here", so callers need no #if
// (issue 12 item 4). The training entries have their own stub (train_stub.cpp).
#include <stdexcept>

#include "cuda/device.h"
#include "cuda/fake_quant.cuh"
#include "cuda/bench_gemm_cuda.cuh"
#include "cuda/bench_quantize_cuda.cuh"
#include "cuda/gemm_cublas.cuh"
#include "cuda/gemm_int8.cuh"
#include "cuda/linear_backward.cuh"
#include "cuda/quantize_int8.cuh"
#include "cuda/scheme_quant.cuh"

namespace qs::cuda {

namespace {
[[noreturn]] void no_cuda() { throw std::runtime_error(device_info().message); }
}  // namespace

EncodeStats encode_f32_cuda(const Format&, const EncodeOptions&, const EncodeJob&) { no_cuda(); }
void encode_f32_device(const Format&, const EncodeOptions&, float, const float*, float*, uint16_t*, std::size_t, uint64_t,
                       EncodeCountsDevice*, void*) {
  no_cuda();
}
BenchQuantizeResult bench_quantize_cuda(const BenchQuantizeConfig&) { no_cuda(); }

void quantize_int8_cuda(const float*, const uint16_t*, std::size_t, std::size_t, bool, int8_t*, float*) { no_cuda(); }
void quantize_int8_device(const float*, const uint16_t*, std::size_t, std::size_t, bool, int8_t*, float*, void*, void*) { no_cuda(); }
BenchInt8Result bench_quantize_int8_cuda(std::size_t, std::size_t, bool, bool, int) { no_cuda(); }

SchemeOutput apply_scheme_cuda(const Scheme&, const float*, const std::vector<int64_t>&, float*) { no_cuda(); }

bool gemm_int8_supported(GemmKernel, int, int, int) { return false; }
GemmKernel gemm_int8_resolve(GemmKernel, int, int, int, std::string* why) {
  if (why) *why = device_info().message;
  return GemmKernel::Dp4a;
}
GemmKernel gemm_int8_device(const int8_t*, const int8_t*, int, int, int, const GemmEpilogueDev&, GemmOut, void*, GemmKernel,
                            void*) {
  no_cuda();
}
GemmKernel gemm_int8_cuda(const int8_t*, const int8_t*, int, int, int, const GemmEpilogueHost&, GemmOut, void*, GemmKernel) {
  no_cuda();
}
std::string gemm_int8_take_plan() { return ""; }  // nothing ever runs here

void linear_backward_cuda(const LinearBackwardArgs&) { no_cuda(); }
void linear_backward_device(const LinearBackwardArgs&, void*) { no_cuda(); }

struct GemmLibrary::Impl {};
GemmLibrary::GemmLibrary() { no_cuda(); }
GemmLibrary::~GemmLibrary() = default;
std::string GemmLibrary::int8(const int8_t*, const int8_t*, int, int, int, int32_t*, void*) { no_cuda(); }
void GemmLibrary::f32(const float*, const float*, int, int, int, float*, bool, void*) { no_cuda(); }
void GemmLibrary::sgemm(bool, bool, int, int, int, const float*, int, const float*, int, float*, int, void*) { no_cuda(); }
void GemmLibrary::bf16gemm(bool, bool, int, int, int, const uint16_t*, int, const uint16_t*, int, float*, int, void*) {
  no_cuda();
}
void GemmLibrary::bf16(const uint16_t*, const uint16_t*, int, int, int, float*, void*) { no_cuda(); }
std::string GemmLibrary::version() { return "none (" + device_info().message + ")"; }

std::vector<std::string> bench_gemm_cuda_kernels() { return {}; }
std::string bench_gemm_cuda_comparison() { return "none (" + device_info().message + ")"; }
std::vector<BenchGemmRow> bench_gemm_cuda(const BenchGemmConfig&, const std::function<void(const BenchGemmRow&)>&,
                                          const std::function<void(const std::string&)>&, const ProgressFn&) {
  no_cuda();
}

}  // namespace qs::cuda
