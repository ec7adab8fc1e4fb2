// `analyze`: every float tensor of one or more model files × every scheme -> one CSV row of error
// metrics each (and optional histograms). Tensors are read one at a time.
#include <chrono>
#include <cstdio>
#include <regex>
#include <sstream>

#include "cli/commands.h"
#include "io/atomic_file.h"
#include "io/tensor_file.h"
#include "quant/scheme.h"

namespace qs::cli {

void add_analyze(CLI::App& app) {
  auto* c = app.add_subcommand("analyze", "Quantize every float tensor of model files with each scheme; CSV of error metrics");
  struct Opts {
    std::vector<std::string> in, schemes;
    std::string tensor, csv, hist, rounding = "nearest", overflow = "saturate";
    int threads = 0;
    uint64_t seed = 0;
  };
  static Opts o;
  c->add_option("--in", o.in, ".npy, .npz, .safetensors or .onnx file (repeatable)")->required();
  c->add_option("--scheme", o.schemes, "FORMAT[/tensor|/channel:<axis>|/block:<n>[:<scale format>]] (repeatable)")
      ->required();
  c->add_option("--tensor", o.tensor, "Only tensors whose name matches this regular expression");
  c->add_option("--csv", o.csv, "Write the metrics CSV here instead of stdout");
  c->add_option("--histogram-csv", o.hist, "Write error and binade histograms here");
  c->add_option("--threads", o.threads, "Threads (0 = all cores)")->capture_default_str();
  c->add_option("--rounding", o.rounding, "nearest | stochastic")->capture_default_str();
  c->add_option("--overflow", o.overflow, "saturate | ieee")->capture_default_str();
  c->add_option("--seed", o.seed, "Seed of stochastic rounding")->capture_default_str();
  c->callback([] {
    EncodeOptions opt;
    opt.rounding = parse_rounding(o.rounding);
    opt.overflow = parse_overflow(o.overflow);
    opt.seed = o.seed;
    std::vector<Scheme> schemes;
    for (const std::string& s : o.schemes) schemes.push_back(parse_scheme(s, opt));
    std::regex filter;
    try {
      filter = std::regex(o.tensor.empty() ? ".*" : o.tensor);
    } catch (const std::regex_error& e) {
      throw std::runtime_error("--tensor '" + o.tensor + "' is not a valid regular expression");
    }
    if (!o.csv.empty()) check_writable(o.csv);
    if (!o.hist.empty()) check_writable(o.hist);
    // Open every file first so that a bad file fails before any work.
    std::vector<std::unique_ptr<TensorFile>> files;
    for (const std::string& p : o.in) files.push_back(open_tensor_file(p));

    std::ostringstream csv, hist;
    csv << "file,tensor,dtype,shape,numel,scheme,amax,mse,sqnr_db,max_abs_err,mean_abs_err,overflow_count,"
           "underflow_count,nan_count\n";
    if (!o.hist.empty()) hist << "file,tensor,scheme,kind,bin_lo,bin_hi,count\n";
    std::size_t skipped = 0, skipped_axis = 0, analysed = 0;
    auto last_report = std::chrono::steady_clock::now();
    for (const auto& file : files) {
      const auto& ts = file->tensors();
      for (std::size_t i = 0; i < ts.size(); ++i) {
        const TensorInfo& t = ts[i];
        if (!std::regex_search(t.name, filter)) continue;
        if (!dtype_is_float(t.dtype) || t.numel() < 2) {
          ++skipped;
          continue;
        }
        const TensorBytes bytes = file->read(i);
        std::vector<float> x(t.numel()), y(t.numel());
        convert_to_f32(t.dtype, bytes.data, x.size(), x.data());
        std::string shape;
        for (std::size_t d = 0; d < t.shape.size(); ++d) shape += (d ? "x" : "") + std::to_string(t.shape[d]);
        for (const Scheme& s : schemes) {
          if (s.granularity == Granularity::Channel) {
            const int rank = int(t.shape.size());
            if (s.axis >= rank || s.axis < -rank) {
              ++skipped_axis;
              continue;
            }
          }
          ErrorMetrics m;
          SchemeOutput r;
          try {
            r = apply_scheme(s, x.data(), t.shape, y.data(), o.threads, {}, &m);
          } catch (const std::exception& e) {
            throw std::runtime_error(file->path() + ": " + t.name + ": " + e.what());
          }
          csv << file->path() << ',' << t.name << ',' << to_string(t.dtype) << ',' << shape << ',' << t.numel() << ','
              << s.text << ',' << fmt_value(r.amax) << ',' << fmt_value(m.mse()) << ',' << fmt_value(m.sqnr_db()) << ','
              << fmt_value(m.max_abs_e) << ',' << fmt_value(m.mean_abs_error()) << ',' << r.stats.overflow << ','
              << r.stats.underflow << ',' << r.stats.nan << '\n';
          if (!o.hist.empty()) hist << histogram_csv_rows(m, file->path() + "," + t.name + "," + s.text + ",");
        }
        ++analysed;
        const auto now = std::chrono::steady_clock::now();
        if (now - last_report > std::chrono::seconds(2)) {
          std::fprintf(stderr, "analyze: %s: %zu/%zu tensors\n", file->path().c_str(), i + 1, ts.size());
          last_report = now;
        }
      }
    }
    emit(csv.str(), o.csv);
    if (!o.hist.empty()) write_file_atomic(o.hist, hist.str());
    std::fprintf(stderr, "analyze: %zu tensors analysed, %zu skipped (non-float or fewer than 2 elements)%s\n", analysed,
                 skipped, skipped_axis ? (", " + std::to_string(skipped_axis) + " tensor x scheme pairs skipped (channel axis beyond the tensor's rank)").c_str() : "");
  });
}

}  // namespace qs::cli
