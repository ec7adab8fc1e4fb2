// A small parallel-for over index chunks with the engine's progress/cancel hook
// (`progress(done, total) -> bool`, false cancels), run on the engine's one persistent thread pool
// (core/util/parallel.cpp): the workers are started on first use, grow to the largest thread count any
// call asked for, and sleep between calls, so a call pays a wake-up, not a thread start. The training lab's
// ShardPool (train/shard_pool.h) runs on the same workers. Exercise: quantize_f32 with threads > 1,
// tests/core/tst_parallel.cpp, `quantscope-cli bench pool`.
#pragma once

// <algorithm> .. <vector>: kept for the files that got them through this header before the pool.
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

// Calls fn(begin, end) for consecutive chunks of [0, n) on up to `threads` threads: the calling thread
// works too, and up to threads - 1 of the pool's workers join it (fewer when other calls keep them busy;
// the chunks are the same, only who runs them changes). Progress is reported from the calling thread's
// chunks (so a GUI callback never runs concurrently with itself). Returns false when cancelled; rethrows
// the first exception a chunk threw, after every chunk that started has returned. A call made from
// inside a chunk on a pool worker runs all its chunks on that worker (inline), so nesting never waits
// for a worker that is itself waiting.
bool parallel_chunks(std::size_t n, std::size_t chunk, int threads,
                     const std::function<void(std::size_t, std::size_t)>& fn, const ProgressFn& progress = {});

// True on one of the pool's worker threads (where parallel_chunks runs inline).
bool on_pool_worker();
// Workers started so far (0 until a call with threads > 1 needed one; at most kMaxPoolWorkers).
int pool_workers();
inline constexpr int kMaxPoolWorkers = 255;

}  // namespace qs
