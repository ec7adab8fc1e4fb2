// Whole-file analysis loop shared by the CLI, the benchmark and the GUI.
#include "quant/analyze.h"

#include <stdexcept>

namespace qs {

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s;
  for (std::size_t d = 0; d < shape.size(); ++d) s += (d ? "x" : "") + std::to_string(shape[d]);
  return s;
}

AnalyzeSummary analyze_file(const TensorFile& file, const std::vector<Scheme>& schemes,
                            const std::function<bool(const std::string&)>& select,
                            const std::function<void(const AnalyzeRow&)>& on_row, int threads,
                            const ProgressFn& progress, bool histograms) {
  AnalyzeSummary sum;
  const auto& ts = file.tensors();
  std::vector<float> x, y;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    if (progress && !progress(i, ts.size())) {
      sum.cancelled = true;
      return sum;
    }
    const TensorInfo& t = ts[i];
    if (select && !select(t.name)) continue;
    if (!dtype_is_float(t.dtype) || t.numel() < 2) {
      ++sum.skipped;
      continue;
    }
    {
      x.resize(t.numel());
      y.resize(t.numel());
      file.read_f32(i, x.data());
      sum.bytes += t.nbytes();
    }
    for (const Scheme& s : schemes) {
      if (!ggml_rows_fit(s, t.shape) || !block_axis_fits(s, t.shape)) {  // llama.cpp would not store this tensor in s's type either
        ++sum.skipped_axis;
        continue;
      }
      if (s.granularity == Granularity::Channel) {
        const int rank = int(t.shape.size());
        if (s.axis >= rank || s.axis < -rank) {
          ++sum.skipped_axis;
          continue;
        }
      }
      AnalyzeRow row;
      row.file = &file;
      row.tensor = &t;
      row.scheme = &s;
      row.metrics.histograms = histograms;
      try {
        row.out = apply_scheme(s, x.data(), t.shape, y.data(), threads, {}, &row.metrics);
      } catch (const std::exception& e) {
        throw std::runtime_error(file.path() + ": " + t.name + ": " + e.what());
      }
      if (on_row) on_row(row);
    }
    ++sum.analysed;
  }
  if (progress) progress(ts.size(), ts.size());
  return sum;
}

}  // namespace qs
