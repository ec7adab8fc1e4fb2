// ShardPool: workers sleep on a condition variable between runs; shards are claimed under the mutex
// (a handful per run, so contention does not matter).
#include "train/shard_pool.h"

#include "util/parallel.h"

namespace qs {

ShardPool::ShardPool(int threads) {
  const int n = resolve_threads(threads);
  for (int t = 1; t < n; ++t) workers_.emplace_back([this] { worker_loop(); });
}

ShardPool::~ShardPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ShardPool::drain() {  // called with mu_ unlocked; claims shards until none are left
  for (;;) {
    int s;
    const std::function<void(int)>* fn;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (next_ >= shards_) return;
      s = next_++;
      fn = fn_;
    }
    std::exception_ptr err;
    try {
      (*fn)(s);
    } catch (...) {
      err = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (err && !error_) error_ = err;
    if (++finished_ == shards_) done_cv_.notify_all();
  }
}

void ShardPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    drain();
  }
}

void ShardPool::run(int shards, const std::function<void(int)>& fn) {
  if (shards <= 0) return;
  if (workers_.empty() || shards == 1) {
    for (int s = 0; s < shards; ++s) fn(s);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    shards_ = shards;
    next_ = 0;
    finished_ = 0;
    error_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  drain();
  std::exception_ptr err;
  {
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [&] { return finished_ == shards_; });
    err = error_;
    fn_ = nullptr;
    shards_ = 0;
  }
  if (err) std::rethrow_exception(err);
}

}  // namespace qs
