// The names of the int8 GEMM's kernel and output choices (cuda/gemm_int8.cuh), compiled with and without CUDA
// (the CLI and the Latency tab print them either way).
#include "cuda/gemm_int8.cuh"

namespace qs::cuda {

const char* to_string(GemmKernel k) {
  switch (k) {
    case GemmKernel::Dp4a: return "dp4a";
    case GemmKernel::Mma: return "mma";
    case GemmKernel::Wgmma: return "wgmma";
    default: return "auto";
  }
}

const char* to_string(GemmOut o) {
  switch (o) {
    case GemmOut::I32: return "i32";
    case GemmOut::F16: return "f16";
    default: return "f32";
  }
}

}  // namespace qs::cuda
