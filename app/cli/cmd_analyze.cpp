// `analyze`: every float tensor of one or more model files × every scheme -> one CSV row of error
// metrics each (and optional histograms). Tensors are read one at a time.
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <optional>
#include <regex>
#include <sstream>

#include "util/printable.h"
#include "io/csv.h"
#include "cli/commands.h"
#include "io/atomic_file.h"
#include "io/prequant.h"
#include "io/tensor_file.h"
#include "quant/analyze.h"
#include "quant/requant_check.h"

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
  c->add_option("--in", o.in, ".npy, .npz, .safetensors or .onnx file, a sharded model's *.safetensors.index.json or its folder (repeatable)")->required();
  c->add_option("--scheme", o.schemes, "FORMAT[/tensor|/channel:<axis>|/block:<n>[:<scale format>[:floor|ceil|even|rceil]][/axis:<k>]|/block:<r>x<c>|/none], "
                 "or a llama.cpp type q4_0 q4_1 q5_0 q5_1 q8_0 q4_k q5_k q6_k (repeatable)")
      ->required();
  c->add_option("--tensor", o.tensor, "Only tensors whose name matches this regular expression");
  c->add_option("--csv", o.csv, "Write the metrics CSV here instead of stdout");
  c->add_option("--histogram-csv", o.hist, "Write error and binade histograms here");
  c->add_option("--threads", o.threads, "Threads (0 = all cores)")->capture_default_str()->check(threads_check());
  c->add_option("--rounding", o.rounding, "nearest | stochastic")->capture_default_str();
  c->add_option("--overflow", o.overflow, "saturate | ieee")->capture_default_str();
  c->add_option("--seed", o.seed, "Seed of stochastic rounding")->capture_default_str()->check(seed_check());
  c->callback([] {
    EncodeOptions opt;
    opt.rounding = parse_rounding(o.rounding);
    opt.overflow = parse_overflow(o.overflow);
    opt.seed = o.seed;
    std::vector<Scheme> schemes;
    for (const std::string& s : o.schemes) schemes.push_back(parse_scheme(s, opt));
    // No --tensor: no filter at all. With one, libstdc++'s polynomial (breadth-first) executor: its default
    // backtracking executor recurses once per character and overflows the stack on names of ~30k
    // characters, which a crafted file can hold.
    std::optional<std::regex> filter;
    if (!o.tensor.empty()) {
      try {
        filter.emplace(o.tensor, std::regex::ECMAScript | std::regex_constants::__polynomial);
      } catch (const std::regex_error& e) {
        throw std::runtime_error("--tensor '" + o.tensor + "' is not a valid regular expression (" + e.what() + ")");
      }
    }
    if (!o.csv.empty()) check_writable(o.csv);
    if (!o.hist.empty()) check_writable(o.hist);
    // Open every file first so that a bad file fails before any work.
    std::vector<std::unique_ptr<TensorFile>> files;
    for (const std::string& p : o.in) files.push_back(open_tensor_file(p));
    // No output may be an input: the files named, and the shards a sharded model reads besides its index.
    std::vector<std::pair<std::string, std::string>> inputs;
    for (const auto& f : files)
      for (const std::string& src : f->source_files()) inputs.push_back({"--in", src});
    check_distinct_files({{"--csv", o.csv}, {"--histogram-csv", o.hist}}, inputs);
    // Entries that are not tensors (an .npz member that is not an .npy file, ...): named, never silent.
    std::vector<std::string> not_tensors;
    for (const auto& f : files)
      for (const std::string& s : f->skipped()) not_tensors.push_back(printable(f->path()) + ": " + printable(s, false, 300));

    std::ostringstream csv, hist;
    csv << "file,tensor,dtype,shape,numel,scheme,amax,mse,sqnr_db,max_abs_err,mean_abs_err,overflow_count,"
           "underflow_count,nan_count,bits_per_value\n";
    if (!o.hist.empty()) hist << "file,tensor,scheme,kind,bin_lo,bin_hi,count\n";
    AnalyzeSummary total;
    std::size_t rows = 0;
    std::vector<std::string> stored_lines;  // the re-quantization check of each pre-quantized weight
    for (const auto& file : files) {
      auto last_report = std::chrono::steady_clock::now();
      const auto selected = [&](const std::string& name) { return !filter || std::regex_search(name, *filter); };
      const auto on_row = [&](const AnalyzeRow& r) {
        ++rows;
        const TensorInfo& t = *r.tensor;
        const ErrorMetrics& m = r.metrics;
        csv << csv_field(file->path()) << ',' << csv_field(t.name) << ','
            << (t.stored.empty() ? std::string(to_string(t.dtype)) : csv_field(t.stored)) << ',' << shape_string(t.shape) << ','
            << t.numel() << ',' << csv_field(r.scheme->text) << ',' << fmt_value(r.out.amax) << ',' << fmt_value(m.mse())
            << ',' << fmt_value(m.sqnr_db()) << ',' << fmt_value(m.max_abs_e) << ','
            << fmt_value(m.mean_abs_error()) << ',' << r.out.stats.overflow << ',' << r.out.stats.underflow << ','
            << r.out.stats.nan << ',' << fmt_value(bits_per_value(*r.scheme, t.shape)) << '\n';
        if (!o.hist.empty()) hist << histogram_csv_rows(m, csv_field(file->path()) + "," + csv_field(t.name) + "," + csv_field(r.scheme->text) + ",");
      };
      const AnalyzeSummary s = analyze_file(
          *file, schemes, selected, on_row,
          o.threads, [&](std::size_t done, std::size_t n) {
            const auto now = std::chrono::steady_clock::now();
            if (now - last_report > std::chrono::seconds(2)) {
              std::fprintf(stderr, "analyze: %s: %zu/%zu tensors\n", file->path().c_str(), done, n);
              last_report = now;
            }
            return true;
          },
          /*histograms=*/!o.hist.empty());
      total.analysed += s.analysed;
      total.skipped += s.skipped;
      total.skipped_axis += s.skipped_axis;
      // Pre-quantized weights (io/prequant.h): each also analysed with its stored scheme, in a row whose scheme
      // reads "stored:<scheme>" (its SQNR: how exactly the stored scheme reproduces itself), and one line on
      // stderr saying whether re-quantizing the dequantized weight gives the stored codes and scales back.
      if (const auto* pq = dynamic_cast<const PrequantizedFile*>(file.get())) {
        std::map<std::string, std::set<std::string>> by_scheme;
        for (std::size_t i = 0; i < pq->tensors().size(); ++i) {
          const PrequantInfo* p = pq->prequant(i);
          const std::string& name = pq->tensors()[i].name;
          if (!p || !selected(name)) continue;
          if (!p->scheme.empty()) by_scheme[p->scheme].insert(name);
          stored_lines.push_back(requant_summary(printable(name), *p, requantize_check(*pq, i)));
        }
        for (const auto& [text, names] : by_scheme) {
          Scheme stored = parse_scheme(text, opt);
          stored.text = "stored:" + stored.text;
          total.skipped_axis += analyze_file(*file, {stored}, [&](const std::string& n) { return names.count(n) > 0; },
                                             on_row, o.threads, {}, !o.hist.empty()).skipped_axis;
        }
      }
    }
    const std::string axis_note =
        total.skipped_axis ? ", " + std::to_string(total.skipped_axis) +
                                 " tensor x scheme pairs skipped (channel axis beyond the tensor's rank, or a last axis that is not a "
                                 "whole number of ggml blocks)"
                           : "";
    if (rows == 0) {  // nothing was analysed: say why instead of printing a header-only CSV with exit 0
      throw std::runtime_error(
          "nothing analysed: " + std::to_string(total.skipped) + " tensors skipped (non-float or fewer than 2 elements)" +
          (not_tensors.empty() ? std::string()
                               : ", " + std::to_string(not_tensors.size()) + " entries not read (" + not_tensors.front() +
                                     (not_tensors.size() > 1 ? ", ..." : "") + ")") +
          axis_note + (filter ? ", --tensor '" + o.tensor + "' applied" : std::string()));
    }
    emit(csv.str(), o.csv);
    if (!o.hist.empty()) write_file_atomic(o.hist, hist.str());
    for (const std::string& s : not_tensors) std::fprintf(stderr, "analyze: skipped %s\n", s.c_str());
    for (const std::string& s : stored_lines) std::fprintf(stderr, "analyze: %s\n", s.c_str());
    std::fprintf(stderr, "analyze: %zu tensors analysed, %zu skipped (non-float or fewer than 2 elements)%s\n",
                 total.analysed, total.skipped, axis_note.c_str());
  });
}

}  // namespace qs::cli
