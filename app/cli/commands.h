// Subcommand registration for quantscope-cli; each cmd_*.cpp adds its subcommand and callback.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

namespace qs::cli {

void add_formats(CLI::App& app);     // formats, grid
void add_quantize(CLI::App& app);    // quantize
void add_bench(CLI::App& app);       // bench quantize
void add_bench_gemm(CLI::App& bench);  // bench gemm (called by add_bench)
void add_bench_error(CLI::App& bench);  // bench error-view (called by add_bench)
void add_bench_runtime(CLI::App& bench);  // bench pool, bench convert (called by add_bench)
void add_selftest(CLI::App& app);    // selftest
void add_analyze(CLI::App& app);     // analyze
void add_train(CLI::App& app);       // train
void add_observe(CLI::App& app);     // observe
void add_info(CLI::App& app);        // info
void add_conventions(CLI::App& app); // compare-conventions

// Writes `text` to `path` atomically when a path is given, else prints it to stdout (throws
// StdoutError when stdout cannot take it: main reports the reason and exits 1).
void emit(const std::string& text, const std::string& path);
struct StdoutError {
  int err;  // errno of the failed write
};

// Checks of integer flags, run on the text before CLI11 converts it (so nothing wraps or clamps:
// `--seed -1` or `--seed 99999999999999999999` are refused, not turned into 2^64 - 1), with the valid
// range in the message.
inline CLI::Validator integer_in(uint64_t lo, uint64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        uint64_t v = 0;
        const char* end = s.data() + s.size();
        auto [p, ec] = std::from_chars(s.data(), end, v);
        if (s.empty() || ec != std::errc() || p != end || v < lo || v > hi)
          return "'" + s + "' is not an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
        return {};
      },
      "INT in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
}
inline CLI::Validator threads_check() { return integer_in(0, 1024); }          // 0 = all cores
inline CLI::Validator seed_check() { return integer_in(0, UINT64_MAX); }

// Refuses a request for more memory than the machine has, naming both (before anything allocates).
void check_memory(uint64_t bytes, const std::string& what);
// Shortest decimal that reads back to the same double (and so to the same float32).
std::string fmt_value(double v);

}  // namespace qs::cli
