// `compare-conventions`: where named libraries' conventions part on one format, input by input
// (format/convention.h). stdout: a summary; --csv: one row per input with each convention's code and value.
#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "cli/commands.h"
#include "format/convention.h"
#include "io/atomic_file.h"
#include "io/dtype.h"
#include "io/tensor_file.h"

namespace qs::cli {

namespace {

struct Options {
  std::string format, conventions, in, tensor, csv;
  std::size_t show = 12;
};
Options o;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s + ",") {
    if (ch == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (ch != ' ') {
      cur += ch;
    }
  }
  return out;
}

std::string hex(uint32_t code, int bits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*x", (bits + 3) / 4, code);
  return buf;
}

std::string db(double v) {
  if (std::isinf(v)) return "inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

}  // namespace

void add_conventions(CLI::App& app) {
  auto* c = app.add_subcommand("compare-conventions",
                               "Where libraries' conventions disagree on one format: every input where the codes or "
                               "values part (conventions: " + convention_names() + ")");
  c->add_option("--format", o.format, "Format (float conventions: any float format; torch-qint8, narrow-symmetric: "
                                      "int8; the affine ones: uint8)")
      ->required();
  c->add_option("--conventions", o.conventions, "Two or more, comma separated: " + convention_names())->required();
  c->add_option("--in", o.in, "A tensor file: compare on its values (default: the format's probe inputs — every "
                              "value, midpoint and neighbour, thresholds, specials)");
  c->add_option("--tensor", o.tensor, "With --in: the tensor's name (default: the first float tensor)");
  c->add_option("--csv", o.csv, "Write one row per input (input, differ, each convention's code and value) here");
  c->add_option("--show", o.show, "Rows and ranges printed on stdout")->capture_default_str()->check(CLI::Range(0, 100000));
  c->callback([] {
    const Format f = parse_format(o.format);
    const std::vector<std::string> names = split(o.conventions);
    if (!o.csv.empty()) check_writable(o.csv);
    std::vector<float> x;
    std::string source = f.is_int() ? "a ramp of 2001 values in [-1, 1]" : "probe inputs";
    if (!o.in.empty()) {
      const auto file = open_tensor_file(o.in);
      const auto& ts = file->tensors();
      std::size_t pick = ts.size();
      for (std::size_t i = 0; i < ts.size(); ++i)
        if (o.tensor.empty() ? dtype_is_float(ts[i].dtype) : ts[i].name == o.tensor) {
          pick = i;
          break;
        }
      if (pick == ts.size())
        throw std::runtime_error(o.in + ": " + (o.tensor.empty() ? std::string("no float tensor") : "no tensor named '" + o.tensor + "'"));
      const TensorInfo& t = ts[pick];
      if (!dtype_is_float(t.dtype)) throw std::runtime_error(o.in + ": " + t.name + " is not a float tensor");
      check_memory(uint64_t(t.numel()) * 4 * (names.size() * 4 + 2), "tensor " + t.name);
      x.resize(t.numel());
      file->read_f32(pick, x.data());
      source = t.name + " (" + std::to_string(x.size()) + " values)";
    }
    const ConventionComparison cmp = compare_conventions(f, names, o.in.empty() ? nullptr : x.data(), x.size());
    const std::size_t m = cmp.inputs.size();
    std::ostringstream out;
    out << f.name << " on " << source << ": " << cmp.differing << " of " << m << " inputs differ\n";
    for (std::size_t k = 0; k < cmp.conventions.size(); ++k) {
      const Convention& cv = *cmp.conventions[k];
      out << "  " << cv.name << ": " << cv.title;
      if (cv.is_int()) {
        const IntParams& p = cmp.params[k];
        out << " [scale " << fmt_value(p.scale) << (cv.int_rule == IntRule::TightAffineU8 ? ", min " + fmt_value(p.offset)
                                                                                              : ", zero point " + std::to_string(p.zero_point))
            << "]";
      }
      if (!o.in.empty()) out << "; SQNR " << db(cmp.stats[k].sqnr_db) << " dB";
      if (k > 0) out << "; differs from " << cmp.conventions[0]->name << " on " << cmp.stats[k].differs_from_first;
      if (cmp.stats[k].nan_out) out << "; " << cmp.stats[k].nan_out << " finite inputs to NaN";
      out << '\n';
    }
    if (o.in.empty() && !cmp.ranges.empty()) {  // the probes are in ascending order
      out << "ranges of disagreement (inclusive, float32 inputs):\n";
      std::size_t shown = 0;
      for (const ConventionRange& r : cmp.ranges) {
        if (shown++ == o.show) {
          out << "  ... " << cmp.ranges.size() - o.show << " more\n";
          break;
        }
        out << "  [" << fmt_value(r.lo) << ", " << fmt_value(r.hi) << "]\n";
      }
    }
    if (cmp.differing) {
      out << "input";
      for (const Convention* cv : cmp.conventions) out << '\t' << cv->name;
      out << '\n';
      std::size_t shown = 0;
      for (std::size_t i = 0; i < m && shown < o.show; ++i) {
        if (!cmp.differ[i]) continue;
        ++shown;
        out << fmt_value(cmp.inputs[i]);
        for (std::size_t k = 0; k < cmp.conventions.size(); ++k)
          out << '\t' << hex(cmp.codes[k][i].code, f.bits) << " = " << fmt_value(cmp.codes[k][i].value);
        out << '\n';
      }
    }
    if (!o.csv.empty()) {
      std::string csv = "input,differ";
      for (const Convention* cv : cmp.conventions) csv += "," + cv->name + "_code," + cv->name + "_value";
      csv += '\n';
      for (std::size_t i = 0; i < m; ++i) {
        csv += fmt_value(cmp.inputs[i]) + (cmp.differ[i] ? ",1" : ",0");
        for (std::size_t k = 0; k < cmp.conventions.size(); ++k)
          csv += "," + hex(cmp.codes[k][i].code, f.bits) + "," + fmt_value(cmp.codes[k][i].value);
        csv += '\n';
      }
      emit(csv, o.csv);
    }
    emit(out.str(), "");
  });
}

}  // namespace qs::cli
