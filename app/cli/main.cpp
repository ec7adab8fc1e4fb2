// quantscope-cli: the scriptable front end over qs_core. `quantscope-cli --help`, `<cmd> --help`.
// Results go to stdout; an error is one line on stderr and a non-zero exit.
#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <new>
#include <stdexcept>

#include <unistd.h>
#include <cstdio>
#include <exception>
#include <iostream>

#include "cli/commands.h"
#include "qs_version.h"
#include "io/atomic_file.h"

namespace qs::cli {

void emit(const std::string& text, const std::string& path) {
  if (path.empty()) {
    // A failed write (a full disk, /dev/full, a closed stdout) is an error, never a silent exit 0.
    errno = 0;
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0)
      throw StdoutError{errno ? errno : EIO};
  } else {
    write_file_atomic(path, text);
  }
}

void check_memory(uint64_t bytes, const std::string& what) {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return;
  const double have = double(pages) * double(page), need = double(bytes);
  if (need > 0.9 * have) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s needs %.1f GB of memory, this machine has %.1f GB", what.c_str(), need / 1e9,
                  have / 1e9);
    throw std::runtime_error(buf);
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

// Flushes and closes stdout (and checks std::cout): the last chance to notice that results were lost.
// Returns the errno of the failure, or 0.
int close_stdout() {
  std::cout.flush();
  int err = 0;
  if (!std::cout) err = EIO;
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) err = errno ? errno : EIO;
  errno = 0;
  if (std::fclose(stdout) != 0 && !err) err = errno ? errno : EIO;
  return err;
}

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
  app.set_version_flag("--version", "quantscope-cli " QS_VERSION);
  qs::cli::add_formats(app);
  qs::cli::add_observe(app);
  qs::cli::add_info(app);
  qs::cli::add_conventions(app);
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
  int out_err = 0;
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
  } catch (const qs::cli::StdoutError& e) {
    out_err = e.err;  // reported below
  } catch (const std::bad_alloc&) {
    std::cerr << "quantscope-cli: out of memory: this machine cannot hold what the command needs "
                 "(try smaller sizes or fewer threads)\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "quantscope-cli: " << one_line(e.what()) << "\n";
    return 1;
  }
  const int close_err = close_stdout();
  if (out_err || close_err) {
    std::cerr << "quantscope-cli: stdout: " << std::strerror(out_err ? out_err : close_err)
              << " (the output is incomplete)\n";
    return 1;
  }
  return 0;
}
