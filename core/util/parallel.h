// A small parallel-for over index chunks with the engine's progress/cancel hook
// (`progress(done, total) -> bool`, false cancels). Exercise: quantize_f32 with threads > 1.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace qs {

using ProgressFn = std::function<bool(std::size_t done, std::size_t total)>;

// Number of worker threads for a request: <= 0 means all hardware threads.
inline int resolve_threads(int requested) {
  if (requested > 0) return requested;
  unsigned hw = std::thread::hardware_concurrency();
  return hw ? static_cast<int>(hw) : 1;
}

// Calls fn(begin, end) for consecutive chunks of [0, n) on `threads` threads. Progress is reported
// from the calling thread's chunks (so a GUI callback never runs concurrently with itself).
// Returns false when cancelled; rethrows the first exception a chunk threw.
inline bool parallel_chunks(std::size_t n, std::size_t chunk, int threads,
                            const std::function<void(std::size_t, std::size_t)>& fn,
                            const ProgressFn& progress = {}) {
  if (n == 0) return progress ? progress(0, 0) : true;
  chunk = std::max<std::size_t>(chunk, 1);
  const std::size_t chunks = (n + chunk - 1) / chunk;
  threads = std::max(1, std::min<int>(threads, static_cast<int>(chunks)));
  std::atomic<std::size_t> next{0}, done{0};
  std::atomic<bool> cancelled{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto worker = [&](bool reporter) {
    for (;;) {
      if (cancelled.load(std::memory_order_relaxed)) return;
      const std::size_t c = next.fetch_add(1);
      if (c >= chunks) return;
      const std::size_t b = c * chunk, e = std::min(n, b + chunk);
      try {
        fn(b, e);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        cancelled = true;
        return;
      }
      const std::size_t d = done.fetch_add(e - b) + (e - b);
      if (reporter && progress && !progress(d, n)) cancelled = true;
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker, false);
  worker(true);
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  if (!cancelled && progress) progress(n, n);
  return !cancelled;
}

}  // namespace qs
