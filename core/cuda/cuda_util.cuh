// Shared CUDA helpers for the .cu files of this folder (never included by public headers): error
// checks that throw one-line messages, an RAII device buffer and an event timer (median of runs).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace qs::cuda::detail {

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA ") + what + ": " + cudaGetErrorString(e));
}

template <typename T>
struct DeviceBuffer {
  T* ptr = nullptr;
  explicit DeviceBuffer(std::size_t count) {
    if (count) check(cudaMalloc(&ptr, count * sizeof(T)), "cudaMalloc (out of device memory?)");
  }
  ~DeviceBuffer() {
    if (ptr) cudaFree(ptr);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

// Runs fn once to warm up, then `reps` times between events on `stream`; median seconds.
template <typename Fn>
double median_seconds(Fn&& fn, int reps, cudaStream_t stream) {
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), "event");
  check(cudaEventCreate(&e1), "event");
  fn();
  std::vector<float> ms;
  for (int k = 0; k < std::max(1, reps); ++k) {
    check(cudaEventRecord(e0, stream), "event");
    fn();
    check(cudaEventRecord(e1, stream), "event");
    check(cudaEventSynchronize(e1), "event");
    float t = 0;
    check(cudaEventElapsedTime(&t, e0, e1), "event");
    ms.push_back(t);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(ms.begin(), ms.end());
  return double(ms[ms.size() / 2]) / 1e3;
}

}  // namespace qs::cuda::detail
