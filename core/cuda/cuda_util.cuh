// Shared CUDA helpers for the .cu files of this folder (never included by public headers): error
// checks that throw one-line messages, an RAII device buffer and an event timer (median of runs).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
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

// Stream-ordered scratch memory (cudaMallocFromPoolAsync / cudaFreeAsync) from one pool of ours that keeps
// its memory: the default pool returns it at every synchronisation, which made a split-K GEMM 2.5x slower.
// No host synchronisation is needed to free scratch that kernels on the same stream still use.
inline cudaMemPool_t scratch_pool() {
  static cudaMemPool_t pool = [] {
    int dev = 0;
    check(cudaGetDevice(&dev), "device");
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = dev;
    cudaMemPool_t p = nullptr;
    check(cudaMemPoolCreate(&p, &props), "scratch memory pool");
    uint64_t keep = UINT64_MAX;
    check(cudaMemPoolSetAttribute(p, cudaMemPoolAttrReleaseThreshold, &keep), "scratch memory pool");
    return p;
  }();
  return pool;
}

template <typename T>
struct StreamScratch {  // freed in stream order when it goes out of scope
  T* ptr = nullptr;
  cudaStream_t stream = nullptr;
  StreamScratch(std::size_t count, cudaStream_t s) : stream(s) {
    if (count) check(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&ptr), count * sizeof(T), scratch_pool(), s),
                     "scratch allocation (out of device memory?)");
  }
  ~StreamScratch() {
    if (ptr) cudaFreeAsync(ptr, stream);
  }
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;
};

struct NoAfter {
  void operator()() const {}
};

// Runs fn once to warm up, then `reps` times between events on `stream`, appending each run's milliseconds
// to `ms` (nothing at all for reps <= 0). `after` is enqueued after each run's closing event, so its work
// is not timed (the bench's clock witness).
template <typename Fn, typename After = NoAfter>
void time_runs(Fn&& fn, int reps, cudaStream_t stream, std::vector<float>& ms, After&& after = {}) {
  if (reps <= 0) return;
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), "event");
  check(cudaEventCreate(&e1), "event");
  fn();
  for (int k = 0; k < reps; ++k) {
    check(cudaEventRecord(e0, stream), "event");
    fn();
    check(cudaEventRecord(e1, stream), "event");
    after();
    check(cudaEventSynchronize(e1), "event");
    float t = 0;
    check(cudaEventElapsedTime(&t, e0, e1), "event");
    ms.push_back(t);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
}

// The median of ms (which it sorts), in seconds.
inline double median_of(std::vector<float>& ms) {
  std::sort(ms.begin(), ms.end());
  return ms.empty() ? 0.0 : double(ms[ms.size() / 2]) / 1e3;
}

// Runs fn once to warm up, then `reps` times between events on `stream`; median seconds.
template <typename Fn>
double median_seconds(Fn&& fn, int reps, cudaStream_t stream) {
  std::vector<float> ms;
  time_runs(fn, std::max(1, reps), stream, ms);
  return median_of(ms);
}

}  // namespace qs::cuda::detail
