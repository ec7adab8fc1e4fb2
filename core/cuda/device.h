// CUDA runtime detection with no CUDA types in the interface: the same binary runs on machines
// without a GPU or driver and says so. Exercise: `quantscope-cli selftest --backend cuda`.
//
//   qs::cuda::DeviceInfo d = qs::cuda::device_info();
//   if (!d.available) std::puts(d.message.c_str());   // e.g. "no CUDA device: ..."
#pragma once

#include <cstddef>
#include <string>

namespace qs::cuda {

struct DeviceInfo {
  bool compiled = false;    // this build contains the CUDA backend
  bool available = false;   // a usable device was found at run time
  std::string name;         // e.g. "NVIDIA H100 80GB HBM3"
  int cc_major = 0, cc_minor = 0;
  std::size_t memory_bytes = 0;
  std::string message;      // one line: the device, or why there is none
};

// Queried once and cached; never throws, never aborts.
const DeviceInfo& device_info();

}  // namespace qs::cuda
