// `bench gemm`: fp32 (Eigen, or cuBLAS on the GPU) against every int8 kernel on the same shapes and
// threads, each checked before it is timed; CSV on stdout (rows as they are measured) and optionally to a
// file. With --backend cuda every int8 row also reports its ratio to cuBLASLt int8 (on stderr).
// Exercise: `quantscope-cli bench gemm --backend cpu --sizes 1024,2048 --threads 1 --csv gemm.csv`,
//           `quantscope-cli bench gemm --backend cuda --sizes 4096,8192`.
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>

#include "cli/commands.h"
#include "cuda/device.h"
#include "gemm/gemm.h"
#include "bench/gemm_bench.h"
#include "io/atomic_file.h"
#include "cuda/bench_gemm_cuda.cuh"

namespace qs::cli {
namespace {

int parse_dim(const std::string& s, const std::string& what) {
  std::size_t used = 0;
  long v = 0;
  try {
    v = std::stol(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || s.empty() || v <= 0 || v > (1L << 30))
    throw std::runtime_error("bench gemm: bad " + what + " '" + s + "' (a positive integer)");
  return int(v);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}


}  // namespace

void add_bench_gemm(CLI::App& bench) {
  auto* g = bench.add_subcommand("gemm", "fp32 vs int8 matmul: checked, then timed (median ms, GOP/s, speedup)");
  struct Opts {
    std::string backend = "cpu", csv, act = "row";
    std::vector<std::string> sizes, shapes, kernels;
    int threads = 1, reps = 5;
    double min_time = 0.25;
    uint64_t seed = 1;
  };
  static Opts o;
  g->add_option("--backend", o.backend, "cpu | cuda")->capture_default_str();
  g->add_option("--sizes", o.sizes, "Square sizes M = K = N, comma separated (default 256,512,1024,2048 "
                                    "plus 1x4096x4096 and 16x4096x4096; cuda: 1024,2048,4096,8192 plus 16x4096x4096)")
      ->delimiter(',');
  g->add_option("--shape", o.shapes, "MxKxN: activations M x K times weights K x N (repeatable)")->delimiter(',');
  g->add_option("--threads", o.threads, "Threads for every kernel (0 = all cores; cpu only)")->capture_default_str()->check(threads_check());
  g->add_option("--kernels", o.kernels, "Only these kernels (comma separated; the fp32 baselines fp32-eigen and fp32-onednn always run)")->delimiter(',');
  g->add_option("--act-scale", o.act, "Dynamic activation scales: row | tensor")->capture_default_str();
  g->add_option("--reps", o.reps, "At least this many timed runs per kernel")->capture_default_str()->check(integer_in(1, 100000));
  g->add_option("--min-time", o.min_time, "Repeat until the timed runs add up to this many seconds")
      ->capture_default_str();
  g->add_option("--seed", o.seed, "Seed of the generated activations and weights")->capture_default_str()->check(seed_check());
  g->add_option("--csv", o.csv, "Also write the CSV to this file");
  g->callback([] {
    if (o.backend != "cpu" && o.backend != "cuda")
      throw std::runtime_error("bench gemm: unknown backend '" + o.backend + "' (cpu or cuda)");
    const bool gpu = o.backend == "cuda";
    if (gpu && !cuda::device_info().available) throw std::runtime_error(cuda::device_info().message);
    if (o.act != "row" && o.act != "tensor")
      throw std::runtime_error("bench gemm: --act-scale must be row or tensor, got '" + o.act + "'");
    if (!o.csv.empty()) check_writable(o.csv);
    BenchGemmConfig cfg;
    for (const auto& s : o.sizes) {
      const int n = parse_dim(s, "size");
      cfg.shapes.push_back({.M = n, .K = n, .N = n});
    }
    for (const auto& s : o.shapes) {
      const auto d = split(s, 'x');
      if (d.size() != 3) throw std::runtime_error("bench gemm: bad shape '" + s + "' (MxKxN, e.g. 16x4096x4096)");
      cfg.shapes.push_back({.M = parse_dim(d[0], "M"), .K = parse_dim(d[1], "K"), .N = parse_dim(d[2], "N")});
    }
    if (cfg.shapes.empty() && gpu) {
      for (int n : {1024, 2048, 4096, 8192}) cfg.shapes.push_back({.M = n, .K = n, .N = n});
      cfg.shapes.push_back({.M = 16, .K = 4096, .N = 4096});
    } else if (cfg.shapes.empty()) {
      for (int n : {256, 512, 1024, 2048}) cfg.shapes.push_back({.M = n, .K = n, .N = n});
      cfg.shapes.push_back({.M = 1, .K = 4096, .N = 4096});
      cfg.shapes.push_back({.M = 16, .K = 4096, .N = 4096});
    }
    for (const auto& sh : cfg.shapes)  // fp32 and int8 copies of A, B and C, with the reference output
      check_memory((uint64_t(sh.M) * uint64_t(sh.K) + uint64_t(sh.K) * uint64_t(sh.N) + uint64_t(sh.M) * uint64_t(sh.N)) * 12,
                   "bench gemm " + std::to_string(sh.M) + "x" + std::to_string(sh.K) + "x" + std::to_string(sh.N));
    cfg.threads = o.threads;
    cfg.reps = o.reps;
    cfg.min_seconds = o.min_time;
    cfg.kernels = o.kernels;
    cfg.act_per_row = o.act == "row";
    cfg.seed = o.seed;

    if (gpu) {
      std::fprintf(stderr, "# device: %s; comparison: %s; activations quantized per %s; each kernel checked before timing\n",
                   cuda::device_info().message.c_str(), cuda::bench_gemm_cuda_comparison().c_str(), o.act.c_str());
      const std::string header = bench_gemm_csv_header();
      std::string all = header;
      std::map<std::string, double> lt_ms;  // int8-cublaslt median per shape, for the ratios
      auto on_row = [&](const BenchGemmRow& r) {
        const std::string key = std::to_string(r.M) + "x" + std::to_string(r.K) + "x" + std::to_string(r.N);
        if (r.kernel == "int8-cublaslt") lt_ms[key] = r.median_ms;
        if (all.size() == header.size()) emit(header, "");
        const std::string line = bench_gemm_csv_row(r);
        all += line;
        emit(line, "");
        std::string ratio;
        if (r.kernel.rfind("int8-", 0) == 0 && lt_ms.count(key))
          ratio = ", " + std::to_string(lt_ms[key] / r.median_ms).substr(0, 5) + "x int8-cublaslt";
        std::fprintf(stderr, "#   %s %s: %zu outputs checked, %d timed runs%s\n", r.kernel.c_str(), key.c_str(),
                     r.checked, r.reps, ratio.c_str());
      };
      auto on_note = [](const std::string& s) { std::fprintf(stderr, "#   %s\n", s.c_str()); };
      try {
        cuda::bench_gemm_cuda(cfg, on_row, on_note);
      } catch (...) {
        if (!o.csv.empty() && all.size() > header.size()) emit(all, o.csv);  // the rows that passed
        throw;
      }
      if (!o.csv.empty()) emit(all, o.csv);
      return;
    }
    std::string levels;
    for (SimdLevel l : available_gemm_levels()) {
      levels += std::string(levels.empty() ? "" : " ") + gemm_level_name(l);
      if (l == SimdLevel::Avx2) levels += std::string(" (kernel ") + gemm_kernel_name(gemm_kernel_for(l)) + ")";
    }
    const std::string extra = bench_gemm_comparison();
    std::fprintf(stderr, "# int8 levels: %s; activations quantized per %s; comparison: %s; each kernel checked before timing\n",
                 levels.c_str(), o.act.c_str(), extra.empty() ? "none (oneDNN not built in)" : extra.c_str());
    const std::string header = bench_gemm_csv_header();
    std::string all = header;
    bench_gemm_cpu(cfg, [&](const BenchGemmRow& r) {
      const std::string line = bench_gemm_csv_row(r);
      if (all.size() == header.size()) emit(header, "");  // after validation: an error prints no header
      all += line;
      emit(line, "");
      std::fprintf(stderr, "#   %s %dx%dx%d: %zu outputs checked, %d timed runs\n", r.kernel.c_str(), r.M, r.K, r.N,
                   r.checked, r.reps);
    });
    if (!o.csv.empty()) emit(all, o.csv);
  });
}

}  // namespace qs::cli
