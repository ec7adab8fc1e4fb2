// Timing harness shared by the CLI benchmarks and (later) the GUI latency view: median of repeated
// runs after a warm-up, and the quantize benchmark against a memcpy of the same bytes.
// Exercise: `quantscope-cli bench quantize --backend cpu --format e4m3fn --n 67108864 --threads 1`.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "format/format.h"
#include "format/encode_simd.h"

namespace qs {

// Runs fn once to warm up, then `reps` times; returns the median wall time in seconds.
double median_seconds(const std::function<void()>& fn, int reps);

struct BenchQuantizeConfig {
  std::string format = "e4m3fn";
  Rounding rounding = Rounding::Nearest;
  std::size_t n = std::size_t(1) << 26;
  int threads = 1;
  int reps = 7;
  uint64_t seed = 1;
};

struct BenchQuantizeResult {
  std::string backend = "cpu", format, rounding, simd;
  std::size_t n = 0;
  int threads = 1;
  double quant_gbps = 0, memcpy_gbps = 0, ratio = 0;  // bytes read + written per second / 1e9
  std::size_t checked = 0;  // elements verified against encode_ref before timing
};

// Correctness before timing: compares y (a fake-quantized copy of x, element i drawn with stochastic
// index i) with encode_ref on up to `samples` evenly spread elements; throws std::runtime_error naming
// `what` and the first element that differs. Returns the number of elements checked.
std::size_t check_sample_against_ref(const Format& f, const EncodeOptions& opt, float scale, const float* x,
                                     const float* y, std::size_t n, std::size_t samples, const std::string& what);

// Checks a sample of the fast path against the reference first and throws std::runtime_error if
// it differs; then times the fake-quant round trip (x -> decode(encode(x / s)) * s) and a memcpy
// of the same buffers on the same number of threads.
BenchQuantizeResult bench_quantize_cpu(const BenchQuantizeConfig& cfg);

struct BenchAnalyzeConfig {
  std::size_t size_mb = 1024;
  int tensors = 256;
  int threads = 1;
  std::string scheme = "e4m3fn/tensor";
  std::string dir = "/tmp";
  uint64_t seed = 1;
};

struct BenchAnalyzeResult {
  std::string path;
  int threads = 1;
  std::size_t tensors = 0, file_bytes = 0, largest_tensor_bytes = 0;
  double seconds = 0, gbps = 0, gbps_per_thread = 0;
  double peak_rss_mb = 0, rss_before_mb = 0, rss_budget_mb = 0;
};

// Generates a .safetensors file in cfg.dir (removed afterwards), analyses it once to warm the page
// cache, then times a second analysis and reads the peak resident memory (VmHWM, reset before).
BenchAnalyzeResult bench_analyze(const BenchAnalyzeConfig& cfg);

// `bench pool`: microseconds per parallel_chunks call of `threads` one-element chunks. pool_hot_us: trivial
// chunks back to back (the caller's cost; it may run them all before a worker arrives). *_join_us: chunks
// that wait until all `threads` have started, so each call really runs on `threads` threads: the pool
// back to back, after 2 ms idle (cold: workers asleep), ShardPool::run, and the pre-pool baseline that
// starts threads - 1 std::threads per call. Checked first (every chunk ran exactly once per call).
struct BenchPoolResult {
  int threads = 1, calls = 0, workers = 0;  // workers: the pool's threads after the run
  int timeouts = 0;  // rendezvous that gave up after 200 ms (a worker never came): should be 0
  double pool_hot_us = 0, pool_join_us = 0, pool_cold_us = 0, shard_join_us = 0, spawn_join_us = 0;
};
BenchPoolResult bench_pool(int threads, int calls = 2000, int reps = 9);

// `bench convert`: float16 / bfloat16 -> float32 of n codes: the scalar loop, each SIMD level on one
// thread, the dispatched path (format/float16.h) on 1 and `threads` threads; every output checked bit for
// bit against the scalar loop before timing. GB/s counts 2 bytes read + 4 written per element.
struct BenchConvertConfig {
  std::string type = "fp16";   // fp16 | bf16
  std::string data = "normal"; // normal: N(0, 0.05) rounded to the type; codes: uniform 16-bit patterns
  std::size_t n = std::size_t(1) << 24;
  int threads = 2;
  int reps = 9;
  uint64_t seed = 1;
};
struct BenchConvertRow {
  std::string path;  // "scalar", "generic", "avx2", "avx512", "<level> dispatched"
  int threads = 1;
  double ms = 0, gbps = 0, speedup = 0;  // speedup: scalar ms / this ms
};
struct BenchConvertResult {
  std::size_t n = 0;
  int threads = 1, checked_runs = 0;
  std::string simd;
  std::vector<BenchConvertRow> rows;
};
BenchConvertResult bench_convert(const BenchConvertConfig& cfg);

}  // namespace qs
