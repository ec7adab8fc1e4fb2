// Whole-file analysis: every float tensor of a TensorFile x every scheme -> error metrics, one tensor
// in memory at a time (float32 copy + quantized copy + the reader's view: about 3x the largest tensor);
// with threads >= 2 the next tensor is read meanwhile on a thread of its own when its float32 copy is at most
// 64 MiB, except where no core is spare for that thread (threads >= the machine's cores): there a (sharded)
// .safetensors or .npy tensor is read in pieces by the analysing threads (TensorFile::read_f32_part, nothing
// extra held).
// Used by `quantscope-cli analyze`, `bench analyze` and the explorer window. Exercise: tests/core/tst_analyze.cpp.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "io/tensor_file.h"
#include "quant/metrics.h"
#include "quant/scheme.h"

namespace qs {

struct AnalyzeRow {
  const TensorFile* file = nullptr;
  const TensorInfo* tensor = nullptr;
  const Scheme* scheme = nullptr;
  SchemeOutput out;
  ErrorMetrics metrics;
};

struct AnalyzeSummary {
  std::size_t analysed = 0;      // tensors
  std::size_t skipped = 0;       // non-float or fewer than 2 elements
  std::size_t skipped_axis = 0;  // tensor x scheme pairs the scheme cannot apply to: a channel axis beyond
                                 // the rank, or a ggml scheme on a last axis that is not whole blocks
  std::size_t bytes = 0;         // tensor bytes read
  bool cancelled = false;
};

// `select(name)` filters tensors (empty = all). `on_row` receives each result as it is computed.
// `progress(done, total)` counts tensors; returning false cancels. Errors: IoError / FormatError
// naming the file and tensor.
AnalyzeSummary analyze_file(const TensorFile& file, const std::vector<Scheme>& schemes,
                            const std::function<bool(const std::string&)>& select,
                            const std::function<void(const AnalyzeRow&)>& on_row, int threads = 1,
                            const ProgressFn& progress = {}, bool histograms = true);

std::string shape_string(const std::vector<int64_t>& shape);  // "128x65x3"

}  // namespace qs
