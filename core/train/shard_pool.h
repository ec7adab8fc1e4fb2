// A persistent pool that runs a fixed number of shards of work on up to `threads` threads. The shard split
// is part of the computation (shard s always gets the same rows), so results are the same for any thread
// count; the threads only decide how many shards run at once. Exercise: tests/tst_mlp.cpp (thread counts).
//
//   qs::ShardPool pool(2);
//   pool.run(2, [&](int s) { forward_rows(s * half, half); });   // returns when both shards are done
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace qs {

class ShardPool {
 public:
  // threads <= 0: all hardware threads. The calling thread is one of them.
  explicit ShardPool(int threads = 0);
  ~ShardPool();
  ShardPool(const ShardPool&) = delete;
  ShardPool& operator=(const ShardPool&) = delete;

  int threads() const { return int(workers_.size()) + 1; }
  // Calls fn(0) .. fn(shards - 1), each once, and returns when all are done; rethrows the first exception.
  // Not reentrant: fn must not call run() on the same pool.
  void run(int shards, const std::function<void(int)>& fn);

 private:
  void worker_loop();
  void drain();

  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_, done_cv_;
  const std::function<void(int)>* fn_ = nullptr;
  int shards_ = 0, next_ = 0, finished_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

}  // namespace qs
