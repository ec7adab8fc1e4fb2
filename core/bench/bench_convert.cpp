// `bench convert`: float16 / bfloat16 -> float32 widening (issue 17 item 5): the scalar reference loop
// (what io/dtype.cpp ran before), each SIMD level on one thread, and the dispatched path on `threads`
// threads, all on the same codes in the same run; every output is compared bit for bit with the scalar
// reference before anything is timed.
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench.h"
#include "format/encode_simd.h"
#include "format/float16.h"
#include "util/parallel.h"

namespace qs {

BenchConvertResult bench_convert(const BenchConvertConfig& cfg) {
  if (cfg.type != "fp16" && cfg.type != "bf16") throw std::invalid_argument("bench convert: --type must be fp16 or bf16");
  if (cfg.data != "normal" && cfg.data != "codes")
    throw std::invalid_argument("bench convert: --data must be normal or codes");
  const bool bf = cfg.type == "bf16";
  const std::size_t n = cfg.n;
  BenchConvertResult r;
  r.n = n;
  r.threads = resolve_threads(cfg.threads);
  // Codes: float32 ~ N(0, 0.05) rounded to the type (weights-like), or every 16-bit pattern uniformly.
  std::vector<uint16_t> src(n);
  {
    std::mt19937_64 gen(cfg.seed);
    std::normal_distribution<float> nd(0.0f, 0.05f);
    for (auto& c : src) {
      if (cfg.data == "codes") {
        c = uint16_t(gen());
      } else {
        const float x = nd(gen);
        uint32_t u;
        std::memcpy(&u, &x, 4);
        c = bf ? uint16_t((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16) : float_to_half(x);
      }
    }
  }
  std::vector<float> want(n), got(n);
  auto scalar = [&] {
    if (bf)
      for (std::size_t i = 0; i < n; ++i) want[i] = bf16_to_float(src[i]);
    else
      for (std::size_t i = 0; i < n; ++i) want[i] = half_to_float(src[i]);
  };
  scalar();
  auto check = [&](const std::string& what) {
    if (std::memcmp(want.data(), got.data(), n * 4) != 0)
      for (std::size_t i = 0; i < n; ++i)
        if (std::memcmp(&want[i], &got[i], 4) != 0)
          throw std::runtime_error("bench convert: " + what + " differs from the scalar reference at element " +
                                   std::to_string(i) + " (code " + std::to_string(src[i]) + ")");
    ++r.checked_runs;
  };
  const double bytes = double(n) * 6.0;  // 2 read + 4 written per element
  auto row = [&](const std::string& path, int threads, double s) {
    r.rows.push_back({path, threads, s * 1e3, bytes / s / 1e9, 0.0});
  };
  row("scalar", 1, median_seconds(scalar, cfg.reps));
  for (SimdLevel l : available_simd_levels()) {
    auto run = [&] { (bf ? bf16_to_float_n_at : half_to_float_n_at)(l, src.data(), n, got.data()); };
    try {
      run();
    } catch (const std::invalid_argument&) {
      continue;  // no F16C
    }
    check(to_string(l));
    row(to_string(l), 1, median_seconds(run, cfg.reps));
  }
  r.simd = to_string(float16_simd_level());
  for (int t : {1, r.threads}) {
    auto run = [&] { (bf ? bf16_to_float_n : half_to_float_n)(src.data(), n, got.data(), t); };
    std::fill(got.begin(), got.end(), 0.0f);
    run();
    check("dispatched, " + std::to_string(t) + " threads");
    row(r.simd + " dispatched", t, median_seconds(run, cfg.reps));
    if (t == r.threads) break;
  }
  for (auto& x : r.rows) x.speedup = r.rows[0].ms / x.ms;
  return r;
}

}  // namespace qs
