// Runs a fixed number of shards of work on up to `threads` threads. The shard split is part of the
// computation (shard s always gets the same rows), so results are the same for any thread count; the
// threads only decide how many shards run at once. Since issue 17 item 4 the shards run on the engine's
// one persistent pool (util/parallel.h, the workers parallel_chunks uses): a ShardPool is only a thread
// count, and a run pays a wake-up of sleeping (or still spinning) workers, no thread start.
// Exercise: tests/tst_mlp.cpp (thread counts), tests/core/tst_parallel.cpp.
//
//   qs::ShardPool pool(2);
//   pool.run(2, [&](int s) { forward_rows(s * half, half); });   // returns when both shards are done
#pragma once

#include <functional>

namespace qs {

class ShardPool {
 public:
  // threads <= 0: all hardware threads. The calling thread is one of them.
  explicit ShardPool(int threads = 0);
  ShardPool(const ShardPool&) = delete;
  ShardPool& operator=(const ShardPool&) = delete;

  int threads() const { return threads_; }
  // Calls fn(0) .. fn(shards - 1), each at most once, and returns when all that started are done;
  // rethrows the first exception (the shards not started by then are skipped). A run from inside a
  // shard (or from any pool worker) runs its shards inline on that thread.
  void run(int shards, const std::function<void(int)>& fn);

 private:
  int threads_;
};

}  // namespace qs
