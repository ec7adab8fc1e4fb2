// CUDA build of the device query: asks the runtime for device 0, turning every error (no driver,
// no device, insufficient driver) into a one-line message instead of an abort.
#include <cuda_runtime.h>

#include "cuda/device.h"

namespace qs::cuda {

const DeviceInfo& device_info() {
  static const DeviceInfo info = [] {
    DeviceInfo d;
    d.compiled = true;
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
      if (err == cudaErrorNoDevice) d.message = "no GPU: no CUDA device found";
      else if (err == cudaErrorInsufficientDriver) d.message = "no GPU: no NVIDIA driver (or one too old for this build)";
      else d.message = std::string("no GPU: ") + cudaGetErrorString(err);
      cudaGetLastError();  // clear the sticky error so later calls start clean
      return d;
    }
    if (count == 0) {
      d.message = "no GPU: no CUDA device found";
      return d;
    }
    cudaDeviceProp prop{};
    err = cudaGetDeviceProperties(&prop, 0);
    if (err != cudaSuccess) {
      d.message = std::string("no GPU: ") + cudaGetErrorString(err);
      return d;
    }
    d.available = true;
    d.name = prop.name;
    d.cc_major = prop.major;
    d.cc_minor = prop.minor;
    d.memory_bytes = prop.totalGlobalMem;
    d.message = d.name + " (sm_" + std::to_string(d.cc_major) + std::to_string(d.cc_minor) + ", " +
                std::to_string(d.memory_bytes >> 20) + " MiB)";
    return d;
  }();
  return info;
}

}  // namespace qs::cuda
