// The CUDA bandwidth benchmarks of `bench quantize --backend cuda` and `bench quantize-int8 --backend cuda`:
// each checks the device result against the CPU reference, then times the op's device entry on
// device-resident data against a device-to-device copy of the same bytes in the same run.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/bench_quantize_cuda.cuh"
#include "cuda/cuda_util.cuh"
#include "cuda/fake_quant.cuh"
#include "cuda/quantize_int8.cuh"
#include "format/float16.h"
#include "quant/int8_quant.h"

namespace qs::cuda {

using detail::check;
using detail::DeviceBuffer;

BenchQuantizeResult bench_quantize_cuda(const BenchQuantizeConfig& cfg) {
  const Format f = parse_format(cfg.format);
  const std::size_t n = cfg.n;
  if (n == 0) throw std::invalid_argument("--n must be positive");
  std::vector<float> hx(n);
  std::mt19937 gen(static_cast<uint32_t>(cfg.seed));
  std::exponential_distribution<float> ex(1.0f);
  for (std::size_t i = 0; i < n; ++i) hx[i] = (gen() & 1 ? 1.0f : -1.0f) * ex(gen);
  float amax = 0;
  for (float v : hx) amax = std::max(amax, std::fabs(v));
  const float scale = std::max(amax / static_cast<float>(f.max_finite), 1e-30f);
  EncodeOptions opt;
  opt.rounding = cfg.rounding;
  opt.seed = cfg.seed;

  DeviceBuffer<float> dx(n), dy(n);
  DeviceBuffer<EncodeCountsDevice> dcount(1);
  check(cudaMemset(dcount.ptr, 0, sizeof(EncodeCountsDevice)), "cudaMemset");
  check(cudaMemcpy(dx.ptr, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice), "copy to device");
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "stream");
  BenchQuantizeResult r;
  r.backend = "cuda";
  try {
    encode_f32_device(f, opt, scale, dx.ptr, dy.ptr, nullptr, n, 0, dcount.ptr, stream);
    check(cudaStreamSynchronize(stream), "fake-quant kernel");
    // Correctness before timing: a strided sample against the CPU reference.
    std::vector<float> dev(n);
    check(cudaMemcpy(dev.data(), dy.ptr, n * sizeof(float), cudaMemcpyDeviceToHost), "copy back");
    r.checked = check_sample_against_ref(f, opt, scale, hx.data(), dev.data(), n, std::size_t(1) << 16,
                                         "bench quantize --backend cuda: device result");
    auto time_it = [&](auto&& fn) { return detail::median_seconds(fn, cfg.reps, stream); };
    const double tq = time_it([&] { encode_f32_device(f, opt, scale, dx.ptr, dy.ptr, nullptr, n, 0, dcount.ptr, stream); });
    const double tc = time_it([&] {
      check(cudaMemcpyAsync(dy.ptr, dx.ptr, n * sizeof(float), cudaMemcpyDeviceToDevice, stream), "copy");
    });
    const double bytes = 2.0 * double(n) * sizeof(float);
    r.quant_gbps = bytes / tq / 1e9;
    r.memcpy_gbps = bytes / tc / 1e9;
    r.ratio = r.quant_gbps / r.memcpy_gbps;
  } catch (...) {
    cudaStreamDestroy(stream);
    throw;
  }
  cudaStreamDestroy(stream);
  r.format = f.name;
  r.rounding = to_string(cfg.rounding);
  r.simd = "cuda";
  r.n = n;
  r.threads = 0;
  return r;
}

BenchInt8Result bench_quantize_int8_cuda(std::size_t rows, std::size_t cols, bool per_row, bool fp16, int reps) {
  const std::size_t n = rows * cols, ns = per_row ? rows : 1;
  const std::size_t esize = fp16 ? 2 : 4;
  std::vector<float> hx(n);
  std::vector<uint16_t> hh(fp16 ? n : 0);
  std::mt19937 gen(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (std::size_t i = 0; i < n; ++i) {
    hx[i] = nd(gen) * (1.0f + float(i / cols % 17));
    if (fp16) {
      hh[i] = float_to_half(hx[i]);
      hx[i] = half_to_float(hh[i]);
    }
  }
  DeviceBuffer<float> dx(n);
  DeviceBuffer<uint16_t> dh(fp16 ? n : 0);
  DeviceBuffer<int8_t> dq(n);
  DeviceBuffer<float> ds(ns);
  DeviceBuffer<unsigned int> dm(1);
  DeviceBuffer<uint8_t> dcopy(n * esize);
  if (fp16) check(cudaMemcpy(dh.ptr, hh.data(), n * 2, cudaMemcpyHostToDevice), "copy");
  else check(cudaMemcpy(dx.ptr, hx.data(), n * 4, cudaMemcpyHostToDevice), "copy");
  auto run = [&] {
    quantize_int8_device(fp16 ? nullptr : dx.ptr, fp16 ? dh.ptr : nullptr, rows, cols, per_row, dq.ptr, ds.ptr, dm.ptr,
                         nullptr);
  };
  BenchInt8Result r;
  r.kernel = std::string("int8-quant-") + (per_row ? "row-" : "tensor-") + (fp16 ? "fp16" : "fp32");
  // Correctness first: codes and scales against the CPU reference.
  run();
  check(cudaDeviceSynchronize(), "int8 quantization kernel");
  std::vector<int8_t> q(n), qref(n);
  std::vector<float> s(ns), sref(ns);
  check(cudaMemcpy(q.data(), dq.ptr, n, cudaMemcpyDeviceToHost), "copy back");
  check(cudaMemcpy(s.data(), ds.ptr, ns * 4, cudaMemcpyDeviceToHost), "copy back");
  if (fp16) quantize_int8_ref_f16(hh.data(), rows, cols, per_row, qref.data(), sref.data());
  else quantize_int8_ref(hx.data(), rows, cols, per_row, qref.data(), sref.data());
  if (std::memcmp(q.data(), qref.data(), n) != 0 || std::memcmp(s.data(), sref.data(), ns * 4) != 0)
    throw std::runtime_error("bench quantize-int8: device codes or scales differ from the CPU reference");
  r.checked = n;
  auto time_it = [&](auto&& fn) { return detail::median_seconds(fn, reps, 0); };
  const double tq = time_it(run);
  const void* src = fp16 ? static_cast<const void*>(dh.ptr) : static_cast<const void*>(dx.ptr);
  const double tc = time_it([&] { check(cudaMemcpyAsync(dcopy.ptr, src, n * esize, cudaMemcpyDeviceToDevice, 0), "copy"); });
  r.quant_gbps = double(n * esize + n + ns * 4) / tq / 1e9;
  r.memcpy_gbps = double(2 * n * esize) / tc / 1e9;
  r.ratio = r.quant_gbps / r.memcpy_gbps;
  return r;
}

}  // namespace qs::cuda
