// Subcommand registration for quantscope-cli; each cmd_*.cpp adds its subcommand and callback.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace qs::cli {

void add_formats(CLI::App& app);     // formats, grid
void add_quantize(CLI::App& app);    // quantize
void add_bench(CLI::App& app);       // bench quantize
void add_bench_gemm(CLI::App& bench);  // bench gemm (called by add_bench)
void add_bench_error(CLI::App& bench);  // bench error-view (called by add_bench)
void add_selftest(CLI::App& app);    // selftest
void add_analyze(CLI::App& app);     // analyze
void add_train(CLI::App& app);       // train

// Writes `text` to `path` atomically when a path is given, else prints it to stdout.
void emit(const std::string& text, const std::string& path);
// Shortest decimal that reads back to the same double (and so to the same float32).
std::string fmt_value(double v);

}  // namespace qs::cli
