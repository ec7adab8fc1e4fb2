// `selftest`: vectorized paths (and, with --backend cuda, the CUDA kernels) against the scalar references; ends with
// "N passed, M failed" and exits 0 only when nothing failed.
#include <cstdio>
#include <functional>

#include "cli/commands.h"
#include "cuda/device.h"
#include "format/conformance.h"
#include "format/selftest.h"
#include "io/atomic_file.h"
#include "qs_version.h"
#include "cuda/selftest_cuda.h"

namespace qs::cli {

void add_selftest(CLI::App& app) {
  auto* s = app.add_subcommand("selftest", "Cross-check the vectorized encoders against the reference");
  static std::string backend = "cpu";
  static bool verbose = false;
  static std::string report_dir;
  s->add_option("--backend", backend, "cpu | cuda")->capture_default_str();
  s->add_flag("--verbose", verbose, "Print every case, not only failures");
  s->add_option("--report", report_dir,
                "Run the whole conformance suite (decode against the definitions, round trips, ties, specials, "
                "stochastic rounding, SIMD = scalar) and write DIR/conformance.md (cpu backend)");
  s->callback([] {
    if (backend == "cuda") {
      const auto& d = cuda::device_info();
      if (!d.available) throw std::runtime_error(d.message);
      std::printf("device: %s\n", d.message.c_str());
      std::size_t passed = 0, failed = 0;
      auto report = [&](const SelftestCase& c) {
        (c.passed ? passed : failed)++;
        if (!c.passed) std::printf("FAIL %s: %s\n", c.name.c_str(), c.detail.c_str());
        else if (verbose) std::printf("ok   %s\n", c.name.c_str());
        std::fflush(stdout);
      };
      cuda::run_selftest_cuda(report);
      std::printf("%zu passed, %zu failed\n", passed, failed);
      std::fflush(stdout);
      if (failed) std::exit(1);
      return;
    }
    if (backend != "cpu") throw std::runtime_error("unknown backend '" + backend + "' (cpu or cuda)");
    if (!report_dir.empty()) {
      const std::string path = report_dir + "/conformance.md";
      check_writable(path);  // before minutes of work
      const ConformanceReport rep = run_conformance();
      std::size_t passed = 0, failed = 0;
      for (const ConformanceFamily& f : rep.families) {
        (f.passed() ? passed : failed)++;
        std::printf("%-4s %-11s %llu checks, %llu failed\n", f.passed() ? "ok" : "FAIL", f.name.c_str(),
                    (unsigned long long)f.checks, (unsigned long long)f.failed);
        for (const ConformanceFailure& x : f.failures)
          if (verbose) std::printf("     %s code %u: %s\n", x.format.c_str(), x.code, x.what.c_str());
      }
      const auto& d = cuda::device_info();
      write_file_atomic(path, rep.markdown(QS_VERSION, to_string(best_simd_level()),
                                           d.available ? d.message + " (CPU = CUDA: quantscope-cli selftest --backend cuda)"
                                                       : "none (" + d.message + ")"));
      std::printf("report: %s\n%zu passed, %zu failed\n", path.c_str(), passed, failed);
      std::fflush(stdout);
      if (failed) std::exit(1);
      return;
    }
    std::size_t passed = 0, failed = 0;
    std::printf("simd levels:");
    for (SimdLevel l : available_simd_levels()) std::printf(" %s", to_string(l));
    std::printf("\n");
    run_cpu_selftest([&](const SelftestCase& c) {
      (c.passed ? passed : failed)++;
      if (!c.passed) std::printf("FAIL %s: %s\n", c.name.c_str(), c.detail.c_str());
      else if (verbose) std::printf("ok   %s\n", c.name.c_str());
    });
    std::printf("%zu passed, %zu failed\n", passed, failed);
    std::fflush(stdout);
    if (failed) std::exit(1);
  });
}

}  // namespace qs::cli
