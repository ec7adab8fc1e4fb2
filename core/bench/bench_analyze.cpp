// `bench analyze`: writes a .safetensors file of the requested size (float32 tensors of equal size,
// Laplace-like data), then analyses it with one scheme while the file is in the page cache and
// reports GB/s (file tensor bytes / wall time), GB/s per thread and peak resident memory against
// the budget of 3x the largest tensor + 150 MB.
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>

#include "bench/bench.h"
#include "io/atomic_file.h"
#include "io/tensor_file.h"
#include "quant/analyze.h"
#include "util/parallel.h"

namespace qs {

namespace {
long peak_rss_kb() {
  std::ifstream st("/proc/self/status");
  std::string line;
  while (std::getline(st, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}
void reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  if (f) f << "5";  // Linux: resets VmHWM to the current RSS
}
}  // namespace

BenchAnalyzeResult bench_analyze(const BenchAnalyzeConfig& cfg) {
  if (cfg.tensors < 1 || cfg.size_mb < 1) throw std::invalid_argument("bench analyze: --size-mb and --tensors must be positive");
  const Scheme scheme = parse_scheme(cfg.scheme);
  if (uint64_t(cfg.size_mb) > (uint64_t(1) << 22))
    throw std::invalid_argument("bench analyze: --size-mb " + std::to_string(cfg.size_mb) + " is over the 4 TiB limit");
  const std::size_t total = std::size_t(cfg.size_mb) << 20;
  if (std::size_t(cfg.tensors) * 1024 * 4 > total)
    throw std::invalid_argument("bench analyze: " + std::to_string(cfg.tensors) + " tensors do not fit in " +
                                std::to_string(cfg.size_mb) + " MiB (each needs at least 4 KiB)");
  const std::size_t per = (total / std::size_t(cfg.tensors)) / 4 * 4;
  const std::size_t numel = per / 4;
  const std::string path = cfg.dir + "/quantscope-bench-" + std::to_string(::getpid()) + ".safetensors";
  struct statvfs vfs {};
  if (::statvfs(cfg.dir.c_str(), &vfs) != 0)
    throw std::runtime_error("bench analyze: --dir " + cfg.dir + ": " + std::strerror(errno));
  const double free_bytes = double(vfs.f_bavail) * double(vfs.f_frsize);
  if (double(total) + 64e6 > free_bytes) {
    char msg[256];
    std::snprintf(msg, sizeof msg, "bench analyze: the %.2f GB test file does not fit in %s (%.2f GB free)",
                  double(total) / 1e9, cfg.dir.c_str(), free_bytes / 1e9);
    throw std::runtime_error(msg);
  }
  // Removed on every way out: errors (the guard's destructor), Ctrl-C, SIGTERM and SIGHUP (its handler).
  TempFileGuard guard(path);
  {
    std::string header = "{";
    for (int t = 0; t < cfg.tensors; ++t) {
      const std::size_t b = std::size_t(t) * per;
      header += (t ? "," : "") + std::string("\"layer.") + std::to_string(t) + ".weight\":{\"dtype\":\"F32\",\"shape\":[" +
                std::to_string(numel / 1024) + ",1024],\"data_offsets\":[" + std::to_string(b) + "," +
                std::to_string(b + (numel / 1024) * 1024 * 4) + "]}";
    }
    header += "}";
    while (header.size() % 8) header += ' ';
    std::ofstream out(path, std::ios::binary);
    if (!out) throw std::runtime_error("bench analyze: cannot write " + path);
    const uint64_t hl = header.size();
    out.write(reinterpret_cast<const char*>(&hl), 8);
    out.write(header.data(), std::streamsize(header.size()));
    std::vector<float> buf((numel / 1024) * 1024);
    std::mt19937 gen(static_cast<uint32_t>(cfg.seed));
    std::exponential_distribution<float> ex(30.0f);
    for (int t = 0; t < cfg.tensors; ++t) {
      for (float& v : buf) v = (gen() & 1 ? ex(gen) : -ex(gen));
      out.write(reinterpret_cast<const char*>(buf.data()), std::streamsize(buf.size() * 4));
      if (t + 1 < cfg.tensors) out.seekp(std::streamoff(8 + header.size() + std::size_t(t + 1) * per));
    }
    if (!out) throw std::runtime_error("bench analyze: writing " + path + " failed");
  }
  BenchAnalyzeResult r;
  r.path = path;
  r.threads = resolve_threads(cfg.threads);
  r.largest_tensor_bytes = (numel / 1024) * 1024 * 4;
  {
    auto run = [&] {
      auto file = open_tensor_file(path);
      return analyze_file(*file, {scheme}, {}, {}, r.threads, {}, /*histograms=*/false);
    };
    run();  // page cache warm-up
    reset_peak_rss();
    const long before = peak_rss_kb();
    const auto t0 = std::chrono::steady_clock::now();
    const AnalyzeSummary s = run();
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.file_bytes = s.bytes;
    r.tensors = s.analysed;
    r.peak_rss_mb = double(peak_rss_kb()) / 1024.0;
    r.rss_before_mb = double(before) / 1024.0;
  }
  r.gbps = double(r.file_bytes) / r.seconds / 1e9;
  r.gbps_per_thread = r.gbps / r.threads;
  r.rss_budget_mb = 3.0 * double(r.largest_tensor_bytes) / 1048576.0 + 150.0;
  return r;
}

}  // namespace qs
