// `bench pool`: what one parallel_chunks call costs on its own (the dispatch overhead every threaded GEMM,
// analysis and error view pays), against the same call with a thread started per worker, as
// parallel_chunks did before the persistent pool (issue 17 item 4), measured in the same run.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench.h"
#include "train/shard_pool.h"
#include "util/parallel.h"

namespace qs {

namespace {

using Clock = std::chrono::steady_clock;

// The pre-pool parallel_chunks (one std::thread per extra worker, joined at the end), kept as the baseline.
void spawn_chunks(std::size_t n, int threads, const std::function<void(std::size_t, std::size_t)>& fn) {
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t c; (c = next.fetch_add(1)) < n;) fn(c, c + 1);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
}

// Microseconds per call: median over `reps` batches of `calls` back-to-back calls (hot), or median of
// single calls each made after `idle_us` of idling (cold: the workers have gone to sleep).
double per_call_us(const std::function<void()>& call, int calls, int reps, int idle_us) {
  std::vector<double> t;
  call();  // warm-up (starts the pool's workers)
  for (int r = 0; r < reps; ++r) {
    if (idle_us > 0) {
      for (int c = 0; c < calls; ++c) {
        std::this_thread::sleep_for(std::chrono::microseconds(idle_us));
        const auto t0 = Clock::now();
        call();
        t.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      }
    } else {
      const auto t0 = Clock::now();
      for (int c = 0; c < calls; ++c) call();
      t.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / calls);
    }
  }
  std::nth_element(t.begin(), t.begin() + std::ptrdiff_t(t.size() / 2), t.end());
  return t[t.size() / 2];
}

}  // namespace

BenchPoolResult bench_pool(int threads, int calls, int reps) {
  if (threads < 1 || calls < 1 || reps < 1) throw std::invalid_argument("bench pool: threads, calls and reps must be >= 1");
  BenchPoolResult r;
  r.threads = threads;
  r.calls = calls;
  const std::size_t n = std::size_t(threads);
  // Trivial chunks (one per thread, each touching its own slot): what the caller pays to publish a call
  // and wait for it; the caller may well run every chunk itself before a worker arrives.
  std::vector<std::size_t> hits(n * 16);
  const auto body = [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) hits[i * 16] += 1;
  };
  // Rendezvous chunks: each waits until all `threads` chunks of the call have started, so every call
  // really runs on `threads` threads at once: the fork-join latency of a call that needs them all.
  std::atomic<std::size_t> arrived{0};
  std::atomic<std::size_t> timeouts{0};
  const auto meet = [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) {
      const std::size_t v = arrived.fetch_add(1) + 1;
      const std::size_t target = (v - 1) / n * n + n;
      const auto give_up = Clock::now() + std::chrono::milliseconds(200);
      while (arrived.load() < target) {
        std::this_thread::yield();
        if (Clock::now() > give_up) {  // a worker never came: counted, and the next calls realign
          timeouts.fetch_add(1);
          arrived.fetch_add(target - arrived.load());
          break;
        }
      }
    }
  };
  auto pooled = [&] { parallel_chunks(n, 1, threads, body); };
  auto pooled_meet = [&] { parallel_chunks(n, 1, threads, meet); };
  auto spawned_meet = [&] { spawn_chunks(n, threads, meet); };
  ShardPool shards(threads);
  auto sharded_meet = [&] { shards.run(threads, [&](int s) { meet(std::size_t(s), std::size_t(s) + 1); }); };
  // Check before timing: every chunk ran exactly once per call on each path.
  std::fill(hits.begin(), hits.end(), 0);
  pooled();
  spawn_chunks(n, threads, body);
  shards.run(threads, [&](int s) { body(std::size_t(s), std::size_t(s) + 1); });
  for (std::size_t i = 0; i < n; ++i)
    if (hits[i * 16] != 3) throw std::runtime_error("bench pool: chunk " + std::to_string(i) + " ran " +
                                                    std::to_string(hits[i * 16]) + " times in 3 calls");
  r.pool_hot_us = per_call_us(pooled, calls, reps, 0);
  r.pool_join_us = per_call_us(pooled_meet, calls, reps, 0);
  r.pool_cold_us = per_call_us(pooled_meet, std::max(1, calls / 20), reps, 2000);
  r.shard_join_us = per_call_us(sharded_meet, calls, reps, 0);
  r.spawn_join_us = per_call_us(spawned_meet, std::max(1, calls / 10), reps, 0);
  r.workers = pool_workers();
  r.timeouts = int(timeouts.load());
  return r;
}

}  // namespace qs
