// `selftest`: vectorized paths (and, later, CUDA) against the scalar reference; ends with
// "N passed, M failed" and exits 0 only when nothing failed.
#include <cstdio>

#include "cli/commands.h"
#include "cuda/device.h"
#include "format/selftest.h"

namespace qs::cli {

void add_selftest(CLI::App& app) {
  auto* s = app.add_subcommand("selftest", "Cross-check the vectorized encoders against the reference");
  static std::string backend = "cpu";
  static bool verbose = false;
  s->add_option("--backend", backend, "cpu | cuda")->capture_default_str();
  s->add_flag("--verbose", verbose, "Print every case, not only failures");
  s->callback([] {
    if (backend == "cuda") {
      const auto& d = cuda::device_info();
      if (!d.available) throw std::runtime_error(d.message);
      throw std::runtime_error("CUDA kernels are not in this build yet (found " + d.message + ")");
    }
    if (backend != "cpu") throw std::runtime_error("unknown backend '" + backend + "' (cpu or cuda)");
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
