// The CPU quantize benchmark: correctness check first, then fake-quant vs memcpy, same buffers,
// same threads, same run.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>

#include "bench/bench.h"
#include "format/encode_simd.h"
#include "format/quantize.h"
#include "util/parallel.h"

namespace qs {

std::size_t check_sample_against_ref(const Format& f, const EncodeOptions& opt, float scale, const float* x,
                                     const float* y, std::size_t n, std::size_t samples, const std::string& what) {
  const std::size_t stride = std::max<std::size_t>(1, n / std::max<std::size_t>(samples, 1));
  std::size_t checked = 0;
  for (std::size_t i = 0; i < n; i += stride) {
    EncodeJob job;
    job.x = &x[i];
    job.n = 1;
    job.scale = scale;
    float ref;
    job.values = &ref;
    job.index0 = i;
    encode_f32_ref(f, opt, job);
    if (std::memcmp(&ref, &y[i], sizeof ref) != 0)
      throw std::runtime_error(what + " differs from encode_ref at element " + std::to_string(i));
    ++checked;
  }
  return checked;
}

double median_seconds(const std::function<void()>& fn, int reps) {
  fn();
  std::vector<double> t;
  for (int i = 0; i < std::max(1, reps); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

BenchQuantizeResult bench_quantize_cpu(const BenchQuantizeConfig& cfg) {
  const Format f = parse_format(cfg.format);
  const int threads = resolve_threads(cfg.threads);
  const std::size_t n = cfg.n;
  if (n == 0) throw std::invalid_argument("--n must be positive");
  std::vector<float> x(n), y(n);
  // Laplace-like data with a few large values, filled in parallel (also faults the pages in).
  parallel_chunks(n, std::size_t(1) << 20, threads, [&](std::size_t b, std::size_t e) {
    std::mt19937 gen(static_cast<uint32_t>(cfg.seed * 7919 + b));
    std::exponential_distribution<float> ex(1.0f);
    for (std::size_t i = b; i < e; ++i) x[i] = (gen() & 1 ? 1.0f : -1.0f) * ex(gen);
    std::memset(y.data() + b, 0, (e - b) * sizeof(float));
  });
  const double amax = amax_f32(x.data(), n, threads);
  const float scale = std::max(static_cast<float>(amax) / static_cast<float>(f.max_finite), 1e-30f);
  EncodeOptions opt;
  opt.rounding = cfg.rounding;
  opt.seed = cfg.seed;

  auto quantize = [&] {
    parallel_chunks(n, std::size_t(1) << 22, threads, [&](std::size_t b, std::size_t e) {
      EncodeJob job;
      job.x = x.data() + b;
      job.n = e - b;
      job.scale = scale;
      job.values = y.data() + b;
      job.index0 = b;
      encode_f32(f, opt, job);
    });
  };
  auto copy = [&] {
    parallel_chunks(n, std::size_t(1) << 22, threads, [&](std::size_t b, std::size_t e) {
      std::memcpy(y.data() + b, x.data() + b, (e - b) * sizeof(float));
    });
  };

  // Correctness before timing: a strided sample against the scalar reference.
  quantize();
  BenchQuantizeResult r;
  r.checked = check_sample_against_ref(f, opt, scale, x.data(), y.data(), n, std::size_t(1) << 18,
                                       "bench quantize: vectorized result");

  const double bytes = 2.0 * double(n) * sizeof(float);
  const double tq = median_seconds(quantize, cfg.reps);
  const double tc = median_seconds(copy, cfg.reps);
  r.format = f.name;
  r.rounding = to_string(cfg.rounding);
  r.simd = to_string(best_simd_level());
  r.n = n;
  r.threads = threads;
  r.quant_gbps = bytes / tq / 1e9;
  r.memcpy_gbps = bytes / tc / 1e9;
  r.ratio = r.quant_gbps / r.memcpy_gbps;
  return r;
}

}  // namespace qs
