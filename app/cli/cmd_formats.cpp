// `formats` (one row per named format) and `grid` (one row per code of one format).
#include <cstdio>
#include <sstream>

#include "cli/commands.h"
#include "format/format.h"
#include "io/atomic_file.h"

namespace qs::cli {

namespace {
const char* tf(bool b) { return b ? "true" : "false"; }

std::string hex_code(uint32_t code, int bits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*x", (bits + 3) / 4, code);
  return buf;
}
}  // namespace

void add_formats(CLI::App& app) {
  auto* formats = app.add_subcommand("formats", "List the named formats and their facts as CSV");
  static std::string formats_csv;
  formats->add_option("--csv", formats_csv, "Write the table to this file instead of stdout");
  formats->callback([] {
    if (!formats_csv.empty()) check_writable(formats_csv);
    std::ostringstream out;
    out << "name,bits,exponent_bits,mantissa_bits,bias,signed,has_inf,has_nan,has_negative_zero,"
           "max,min_normal,min_subnormal,distinct_values\n";
    for (const Format& f : named_formats()) {
      const bool i = f.is_int();
      out << f.name << ',' << f.bits << ',' << (i ? 0 : f.ebits) << ',' << f.mbits << ','
          << (i ? 0 : f.bias) << ',' << tf(f.is_signed) << ',' << tf(f.has_inf) << ','
          << tf(f.has_nan) << ',' << tf(f.has_negative_zero) << ',' << fmt_value(f.max_finite) << ','
          << fmt_value(f.min_normal) << ',' << fmt_value(f.min_subnormal) << ','
          << distinct_values(f).size() << '\n';
    }
    emit(out.str(), formats_csv);
  });

  auto* g = app.add_subcommand("grid", "List every code of a format: code,hex,value,class");
  static std::string spec, grid_csv;
  g->add_option("--format", spec, "Format: a named format (e4m3fn, int8, ...) or e<E>m<M>[:bias=B][:specials=ieee|fn|fnuz|none][:unsigned]")
      ->required();
  g->add_option("--csv", grid_csv, "Write the grid to this file instead of stdout");
  g->callback([] {
    const Format f = parse_format(spec);
    if (!grid_csv.empty()) check_writable(grid_csv);
    std::string out = "code,hex,value,class\n";
    out.reserve(f.code_count() * 40);
    for (const GridEntry& e : grid(f)) {
      out += std::to_string(e.code);
      out += ',';
      out += hex_code(e.code, f.bits);
      out += ',';
      out += fmt_value(e.value);
      out += ',';
      out += to_string(e.cls);
      out += '\n';
    }
    emit(out, grid_csv);
  });
}

}  // namespace qs::cli
