// CPU-only build of the device query: reports that CUDA support was not compiled in.
#include "cuda/device.h"

namespace qs::cuda {

const DeviceInfo& device_info() {
  static const DeviceInfo info = [] {
    DeviceInfo d;
    d.message = "no GPU: this build has no CUDA backend (configure with QS_WITH_CUDA=ON and a CUDA toolkit)";
    return d;
  }();
  return info;
}

}  // namespace qs::cuda
