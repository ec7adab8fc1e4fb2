// Whole-file analysis loop shared by the CLI, the benchmark and the GUI.
#include "quant/analyze.h"

#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "util/parallel.h"

namespace qs {

namespace {

// Reads one tensor ahead on a thread of its own while the caller analyses the current one (threads >= 2):
// the read (a copy out of the page cache, or a conversion) was the serial part of the loop, a third of its
// time with two threads. Used where a core is spare for it, and for files that cannot read a tensor in parts;
// otherwise the analysing threads split each read between them, so that two cores do not run three busy
// threads (analyze_file below; notes/issue17-analyze.md). One request at a time; wait() hands back the read
// or rethrows its error. Only tensors of at most kMaxAheadBytes of floats are read ahead, so the extra memory
// stays inside analyze.h's budget.
class ReadAhead {
 public:
  static constexpr std::size_t kMaxAheadBytes = std::size_t(64) << 20;

  explicit ReadAhead(const TensorFile& file) : file_(file), thread_([this] { loop(); }) {}
  ~ReadAhead() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    thread_.join();  // after a request in flight has finished: the buffer outlives it
  }
  void start(std::size_t index, std::vector<float>& dst) {
    dst.resize(file_.tensors()[index].numel());
    std::lock_guard<std::mutex> lock(mu_);
    index_ = index;
    dst_ = dst.data();
    error_ = nullptr;
    state_ = State::Requested;
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return state_ == State::Done; });
    state_ = State::Idle;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  enum class State { Idle, Requested, Done };
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return quit_ || state_ == State::Requested; });
      if (state_ != State::Requested) return;  // quit with nothing requested
      const std::size_t index = index_;
      float* dst = dst_;
      lock.unlock();
      std::exception_ptr err;
      try {
        file_.read_f32(index, dst);
      } catch (...) {
        err = std::current_exception();
      }
      lock.lock();
      error_ = err;
      state_ = State::Done;
      cv_.notify_all();
    }
  }
  const TensorFile& file_;
  std::mutex mu_;
  std::condition_variable cv_;
  State state_ = State::Idle;
  bool quit_ = false;
  std::size_t index_ = 0;
  float* dst_ = nullptr;
  std::exception_ptr error_;
  std::thread thread_;  // last: started after every member it uses
};

// Elements per piece of a tensor read in parts (1 MiB of float32; a multiple of 8, as read_f32_part asks).
constexpr std::size_t kReadPart = std::size_t(1) << 18;

}  // namespace

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
  // What becomes of each tensor (select is asked once per tensor, on this thread): not selected, skipped
  // (not a float tensor, or fewer than 2 elements) or analysed.
  enum : char { kNotSelected, kSkipped, kAnalysed };
  std::vector<char> fate(ts.size());
  for (std::size_t i = 0; i < ts.size(); ++i)
    fate[i] = select && !select(ts[i].name) ? kNotSelected
              : dtype_is_float(ts[i].dtype) && ts[i].numel() >= 2 ? kAnalysed : kSkipped;
  std::vector<float> x, y, next;
  // With threads >= 2 and no core to spare for a reader (threads >= the machine's cores), a file that reads in
  // parts has each tensor read by the threads that then analyse it (parallel_chunks over pieces): no third
  // thread competing for the cores (2 vCPUs: 1.63-1.69x one thread against 1.60-1.64x). With a core to spare
  // the next tensor is read ahead on a thread of its own, which overlaps the copy entirely (a 16-core Xeon:
  // 1.98-2.38x), as it is for files that cannot read in parts. QS_ANALYZE_READ=parts | ahead forces one.
  const int nt = resolve_threads(threads);
  const unsigned cores = std::thread::hardware_concurrency();
  bool spare_core = cores > unsigned(nt);
  if (const char* how = std::getenv("QS_ANALYZE_READ")) {
    if (std::strcmp(how, "parts") == 0) spare_core = false;
    else if (std::strcmp(how, "ahead") == 0) spare_core = true;
  }
  const bool in_parts = nt >= 2 && !spare_core && file.reads_f32_in_parts();
  std::unique_ptr<ReadAhead> ahead;
  if (nt >= 2 && !in_parts) ahead = std::make_unique<ReadAhead>(file);
  std::size_t ahead_index = ts.size();  // the tensor being read ahead into `next` (none: ts.size())
  for (std::size_t i = 0; i < ts.size(); ++i) {
    if (progress && !progress(i, ts.size())) {
      sum.cancelled = true;
      return sum;
    }
    const TensorInfo& t = ts[i];
    if (fate[i] != kAnalysed) {
      sum.skipped += fate[i] == kSkipped;
      continue;
    }
    {
      if (ahead_index == i) {
        ahead->wait();
        std::swap(x, next);
        ahead_index = ts.size();
      } else if (in_parts) {
        x.resize(t.numel());
        parallel_chunks(t.numel(), kReadPart, threads,
                        [&](std::size_t b, std::size_t e) { file.read_f32_part(i, b, e - b, x.data() + b); });
      } else {
        x.resize(t.numel());
        file.read_f32(i, x.data());
      }
      y.resize(t.numel());
      sum.bytes += t.nbytes();
      if (ahead) {  // the next analysed tensor, while this one is quantized
        std::size_t j = i + 1;
        while (j < ts.size() && fate[j] != kAnalysed) ++j;
        if (j < ts.size() && ts[j].numel() * sizeof(float) <= ReadAhead::kMaxAheadBytes) {
          ahead->start(j, next);
          ahead_index = j;
        }
      }
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
