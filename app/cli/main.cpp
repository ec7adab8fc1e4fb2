// quantscope-cli: the scriptable front end over qs_core. `quantscope-cli --help`, `<cmd> --help`.
// Results go to stdout; an error is one line on stderr and a non-zero exit.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <exception>
#include <iostream>

#include "cli/commands.h"
#include "io/atomic_file.h"

namespace qs::cli {

void emit(const std::string& text, const std::string& path) {
  if (path.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  } else {
    write_file_atomic(path, text);
  }
}

std::string fmt_value(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, p);
}

}  // namespace qs::cli

namespace {
std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"quantscope-cli: number formats and quantization from the command line"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "quantscope-cli 0.1.0");
  qs::cli::add_formats(app);
  qs::cli::add_quantize(app);
  qs::cli::add_bench(app);
  qs::cli::add_selftest(app);
  qs::cli::add_analyze(app);
  qs::cli::add_train(app);
  if (argc > 1 && argv[1][0] != '-') {
    const std::string first = argv[1];
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) known |= sub->get_name() == first;
    if (!known) {
      std::cerr << "quantscope-cli: unknown subcommand '" << first
                << "' (formats, grid, quantize, analyze, bench, train, selftest; see --help)\n";
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "quantscope-cli: " << one_line(e.what()) << " (see --help)\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "quantscope-cli: " << one_line(e.what()) << "\n";
    return 1;
  }
  return 0;
}
