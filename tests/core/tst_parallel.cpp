// parallel_chunks on the persistent pool and ShardPool on the same workers (issue 17 item 4): every chunk
// runs once, exceptions reach the caller, progress runs on the caller only and cancels, nested calls from
// workers run inline (no deadlock), concurrent callers share the workers, threads beyond the cores work.
// Runs under ThreadSanitizer too (see notes/issue17-pool-f16c.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <numeric>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "train/shard_pool.h"
#include "util/parallel.h"

namespace {

// Counts how often each index of [0, n) was visited.
std::vector<int> visits(std::size_t n, std::size_t chunk, int threads, bool* ok = nullptr) {
  std::vector<std::atomic<int>> v(n);
  const bool r = qs::parallel_chunks(n, chunk, threads, [&](std::size_t b, std::size_t e) {
    EXPECT_LE(e, n);
    EXPECT_LT(b, e);
    EXPECT_LE(e - b, std::max<std::size_t>(chunk, 1));
    for (std::size_t i = b; i < e; ++i) v[i].fetch_add(1);
  });
  if (ok) *ok = r;
  std::vector<int> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = v[i].load();
  return out;
}

TEST(Parallel, EveryIndexOnce) {
  for (int threads : {1, 2, 3, 8})
    for (std::size_t n : {std::size_t(1), std::size_t(7), std::size_t(64), std::size_t(1000), std::size_t(100003)})
      for (std::size_t chunk : {std::size_t(0), std::size_t(1), std::size_t(3), std::size_t(64), std::size_t(1) << 20}) {
        SCOPED_TRACE(testing::Message() << "threads " << threads << " n " << n << " chunk " << chunk);
        bool ok = false;
        const auto v = visits(n, chunk, threads, &ok);
        EXPECT_TRUE(ok);
        EXPECT_EQ(std::count(v.begin(), v.end(), 1), std::ptrdiff_t(n));
      }
}

TEST(Parallel, EmptyRange) {
  int calls = 0;
  std::size_t last_total = 99;
  EXPECT_TRUE(qs::parallel_chunks(0, 1, 4, [&](std::size_t, std::size_t) { ++calls; },
                                  [&](std::size_t, std::size_t t) { last_total = t; return true; }));
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(last_total, 0u);
}

TEST(Parallel, UsesWorkersAndTheCaller) {
  // With chunks that wait for each other, two threads must really run at once (the caller and a worker).
  std::atomic<int> inside{0};
  std::atomic<bool> met{false};
  const auto caller = std::this_thread::get_id();
  std::set<std::thread::id> ids;
  std::mutex m;
  qs::parallel_chunks(2, 1, 2, [&](std::size_t, std::size_t) {
    {
      std::lock_guard<std::mutex> lock(m);
      ids.insert(std::this_thread::get_id());
    }
    inside.fetch_add(1);
    for (int i = 0; i < 2000000 && inside.load() < 2; ++i) std::this_thread::yield();
    if (inside.load() == 2) met = true;
  });
  EXPECT_GE(qs::pool_workers(), 1);
  EXPECT_LE(qs::pool_workers(), qs::kMaxPoolWorkers);
  // A worker joins unless another call holds them all; here nothing else runs.
  EXPECT_TRUE(met.load());
  EXPECT_EQ(ids.size(), 2u);
  EXPECT_TRUE(ids.count(caller));
}

TEST(Parallel, ExceptionReachesCallerAndPoolStaysUsable) {
  for (int round = 0; round < 20; ++round) {
    const std::size_t bad = std::size_t(round * 37 % 100);
    EXPECT_THROW(qs::parallel_chunks(100, 1, 4,
                                     [&](std::size_t b, std::size_t) {
                                       if (b == bad) throw std::runtime_error("chunk " + std::to_string(b));
                                     }),
                 std::runtime_error);
  }
  try {
    qs::parallel_chunks(8, 1, 2, [](std::size_t b, std::size_t) {
      if (b == 5) throw std::out_of_range("five");
    });
    FAIL() << "no exception";
  } catch (const std::out_of_range& e) {
    EXPECT_STREQ(e.what(), "five");
  }
  // A throwing progress callback is rethrown after the workers have left the call (no dangling job).
  for (int round = 0; round < 20; ++round) {
    std::atomic<int> ran{0};
    EXPECT_THROW(qs::parallel_chunks(
                     64, 1, 2, [&](std::size_t, std::size_t) { ran.fetch_add(1); },
                     [&](std::size_t d, std::size_t) -> bool {
                       if (d >= 3) throw std::logic_error("progress");
                       return true;
                     }),
                 std::logic_error);
    EXPECT_LE(ran.load(), 64);
  }
  const auto v = visits(5000, 7, 4);
  EXPECT_EQ(std::count(v.begin(), v.end(), 1), 5000);
}

TEST(Parallel, ProgressOnCallerOnlyAndCancels) {
  const auto caller = std::this_thread::get_id();
  std::size_t last = 0;
  bool monotone = true, on_caller = true;
  std::atomic<std::size_t> ran{0};
  const bool ok = qs::parallel_chunks(
      1000, 10, 2, [&](std::size_t b, std::size_t e) { ran.fetch_add(e - b); },
      [&](std::size_t d, std::size_t t) {
        on_caller = on_caller && std::this_thread::get_id() == caller;
        monotone = monotone && d >= last && t == 1000;
        last = d;
        return true;
      });
  EXPECT_TRUE(ok);
  EXPECT_TRUE(on_caller);
  EXPECT_TRUE(monotone);
  EXPECT_EQ(last, 1000u);
  EXPECT_EQ(ran.load(), 1000u);

  // Cancel from the progress callback: the call returns false and stops claiming chunks.
  ran = 0;
  const bool ok2 = qs::parallel_chunks(
      1 << 20, 1, 2, [&](std::size_t b, std::size_t e) { ran.fetch_add(e - b); },
      [&](std::size_t d, std::size_t) { return d < 100; });
  EXPECT_FALSE(ok2);
  EXPECT_LT(ran.load(), std::size_t(1) << 20);

  // A caller's own cancel flag, set from another thread, read inside the chunks (as the GUI does).
  std::atomic<bool> stop{false};
  std::atomic<std::size_t> seen{0};
  std::thread canceller([&] {
    while (seen.load() < 50) std::this_thread::yield();
    stop = true;
  });
  const bool ok3 = qs::parallel_chunks(
      1 << 22, 1, 2,
      [&](std::size_t, std::size_t) {
        if (!stop.load()) seen.fetch_add(1);
      },
      [&](std::size_t, std::size_t) { return !stop.load(); });
  canceller.join();
  EXPECT_FALSE(ok3);
}

TEST(Parallel, NestedCallsRunInlineOnWorkers) {
  std::atomic<int> worker_calls{0}, total{0};
  qs::parallel_chunks(16, 1, 4, [&](std::size_t, std::size_t) {
    const bool on_worker = qs::on_pool_worker();
    const auto me = std::this_thread::get_id();
    bool same_thread = true;
    qs::parallel_chunks(64, 1, 4, [&](std::size_t b, std::size_t e) {
      if (on_worker && std::this_thread::get_id() != me) same_thread = false;
      total.fetch_add(int(e - b));
      // A third level, for good measure.
      qs::parallel_chunks(3, 1, 3, [&](std::size_t, std::size_t) {});
    });
    if (on_worker) {
      worker_calls.fetch_add(1);
      EXPECT_TRUE(same_thread);
    }
  });
  EXPECT_EQ(total.load(), 16 * 64);
  EXPECT_FALSE(qs::on_pool_worker());
}

TEST(Parallel, ConcurrentCallers) {
  std::vector<std::thread> callers;
  std::atomic<int> bad{0};
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&, c] {
      for (int r = 0; r < 50; ++r) {
        const std::size_t n = std::size_t(1000 + 13 * c + r);
        const auto v = visits(n, std::size_t(1 + r % 5), 2 + c % 3);
        if (std::count(v.begin(), v.end(), 1) != std::ptrdiff_t(n)) bad.fetch_add(1);
      }
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(Parallel, ManyMoreThreadsThanCores) {
  const auto v = visits(4096, 1, 64);
  EXPECT_EQ(std::count(v.begin(), v.end(), 1), 4096);
  EXPECT_LE(qs::pool_workers(), qs::kMaxPoolWorkers);
  // A later 2-thread call is not slowed into waking every worker (functional check only).
  const auto w = visits(10, 1, 2);
  EXPECT_EQ(std::count(w.begin(), w.end(), 1), 10);
}

TEST(ShardPool, RunsEachShardOnceOnThePool) {
  qs::ShardPool pool(2);
  EXPECT_EQ(pool.threads(), 2);
  for (int shards : {1, 2, 3, 8}) {
    std::vector<std::atomic<int>> hit(static_cast<std::size_t>(shards));
    for (int r = 0; r < 100; ++r) pool.run(shards, [&](int s) { hit[std::size_t(s)].fetch_add(1); });
    for (auto& h : hit) EXPECT_EQ(h.load(), 100);
  }
  pool.run(0, [](int) { FAIL(); });
  EXPECT_THROW(pool.run(2, [](int s) { if (s == 1) throw std::runtime_error("shard"); }), std::runtime_error);
  // Nested: a shard that runs another pool (and parallel_chunks) does not deadlock.
  qs::ShardPool inner(2);
  std::atomic<int> n{0};
  pool.run(2, [&](int) {
    inner.run(2, [&](int) {
      qs::parallel_chunks(4, 1, 2, [&](std::size_t b, std::size_t e) { n.fetch_add(int(e - b)); });
    });
  });
  EXPECT_EQ(n.load(), 2 * 2 * 4);
  EXPECT_EQ(qs::ShardPool(1).threads(), 1);
  EXPECT_GE(qs::ShardPool(0).threads(), 1);
}

}  // namespace
