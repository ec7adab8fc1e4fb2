// The engine's persistent thread pool behind parallel_chunks (util/parallel.h).
//
// A call publishes a Job (on the caller's stack) in the pool's list of open jobs, wakes at most
// threads - 1 sleeping workers and claims chunks itself. A worker joins the first open job that still has
// a helper slot and unclaimed chunks; joining and leaving happen under the pool's mutex, and the caller
// takes its job off the list under that mutex before it waits for the helpers that joined, so no worker
// can reach a job after its caller returned. The caller never waits for a worker that has not joined:
// when every worker is busy with other calls (or none exists, e.g. after fork()), it simply runs all the
// chunks itself. Workers (as many as there are other cores) spin briefly on an atomic counter before sleeping, so back-to-back calls (a GEMM
// per layer, a training step's shards) find them awake.
//
// The pool is never destroyed: its workers sleep on its condition variable until the process exits, so a
// static destructor that still calls parallel_chunks finds a live pool.
#include "util/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define QS_CPU_RELAX() _mm_pause()
#else
#define QS_CPU_RELAX() std::this_thread::yield()
#endif

namespace qs {

namespace {

thread_local bool t_on_worker = false;

struct Job {
  const std::function<void(std::size_t, std::size_t)>* fn = nullptr;
  const ProgressFn* progress = nullptr;
  std::size_t n = 0, chunk = 1, chunks = 0;
  std::atomic<std::size_t> next{0}, done{0};
  std::atomic<bool> cancelled{false};
  std::mutex error_mutex;
  std::exception_ptr error;
  // Guarded by the pool's mutex.
  int slots = 0;   // workers that may still join
  int active = 0;  // workers inside run()
  std::condition_variable left;  // signalled (under the pool's mutex) when active drops to 0

  bool claimable() const { return slots > 0 && next.load(std::memory_order_relaxed) < chunks &&
                                  !cancelled.load(std::memory_order_relaxed); }

  // Claims and runs chunks until none are left, the job is cancelled or a chunk threw.
  void run(bool reporter) {
    for (;;) {
      if (cancelled.load(std::memory_order_relaxed)) return;
      const std::size_t c = next.fetch_add(1);
      if (c >= chunks) return;
      const std::size_t b = c * chunk, e = std::min(n, b + chunk);
      try {
        (*fn)(b, e);
        const std::size_t d = done.fetch_add(e - b) + (e - b);
        // The progress callback may throw too: caught like a chunk's exception, so the caller still
        // takes its job off the list and waits for the workers before rethrowing.
        if (reporter && *progress && !(*progress)(d, n)) cancelled = true;
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        cancelled = true;
        return;
      }
    }
  }
};

class Pool {
 public:
  // Starts workers until there are `want` (capped); a failed thread start keeps the ones there are.
  void ensure(int want) {
    want = std::min(want, kMaxPoolWorkers);
    if (started_.load(std::memory_order_acquire) >= want) return;
    std::lock_guard<std::mutex> lock(mu_);
    while (int(workers_.size()) < want) {
      try {
        const int index = int(workers_.size());
        workers_.emplace_back([this, index] { loop(index); });
      } catch (...) {
        break;
      }
      started_.store(int(workers_.size()), std::memory_order_release);
    }
  }

  int started() const { return started_.load(std::memory_order_acquire); }

  void open(Job& j) {
    int slots;
    {
      std::lock_guard<std::mutex> lock(mu_);
      slots = j.slots;  // read here: workers change it under mu_ as soon as the job is listed
      jobs_.push_back(&j);
      ++posted_;
      epoch_.fetch_add(1, std::memory_order_release);
    }
    // Spinning workers see the epoch change; sleeping ones need a wake-up, at most one per slot.
    const int wake = std::min(slots, sleeping_.load(std::memory_order_acquire));
    for (int i = 0; i < wake; ++i) wake_.notify_one();
  }

  // Takes the job off the list and waits until every worker that joined it has left.
  void close(Job& j) {
    std::unique_lock<std::mutex> lock(mu_);
    jobs_.erase(std::find(jobs_.begin(), jobs_.end(), &j));
    j.left.wait(lock, [&] { return j.active == 0; });
  }

 private:
  Job* pick() {  // with mu_ held
    for (Job* j : jobs_)
      if (j->claimable()) return j;
    return nullptr;
  }

  void loop(int index) {
    t_on_worker = true;
    // Only as many workers spin as there are other cores: more would take the CPU from the callers.
    const bool spins = index + 1 < resolve_threads(0);
    std::unique_lock<std::mutex> lock(mu_);
    uint64_t seen = posted_;
    for (;;) {
      if (Job* j = pick()) {
        --j->slots;
        ++j->active;
        lock.unlock();
        j->run(false);
        lock.lock();
        if (--j->active == 0) j->left.notify_all();
        continue;
      }
      seen = posted_;
      // Nothing to join: spin a little on the epoch (no lock), then sleep until a job is posted.
      lock.unlock();
      const uint64_t e0 = epoch_.load(std::memory_order_acquire);
      bool changed = false;
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicros);
      for (int i = 0; spins; ++i) {
        if (epoch_.load(std::memory_order_acquire) != e0) {
          changed = true;
          break;
        }
        QS_CPU_RELAX();
        if ((i & 63) == 63 && std::chrono::steady_clock::now() >= until) break;
      }
      lock.lock();
      if (changed || posted_ != seen) continue;
      sleeping_.fetch_add(1, std::memory_order_acq_rel);
      wake_.wait(lock, [&] { return posted_ != seen; });
      sleeping_.fetch_sub(1, std::memory_order_acq_rel);
    }
  }

  static constexpr int kSpinMicros = 50;

  std::mutex mu_;
  std::condition_variable wake_;
  std::vector<Job*> jobs_;          // open jobs, oldest first
  std::vector<std::thread> workers_;
  uint64_t posted_ = 0;             // jobs ever opened (guarded by mu_)
  std::atomic<uint64_t> epoch_{0};  // the same count, readable without the lock (spinning workers)
  std::atomic<int> sleeping_{0};    // workers waiting on wake_
  std::atomic<int> started_{0};
};

Pool& pool() {
  static Pool* p = new Pool;  // never destroyed (see the top of this file)
  return *p;
}

}  // namespace

bool on_pool_worker() { return t_on_worker; }

int pool_workers() { return pool().started(); }

bool parallel_chunks(std::size_t n, std::size_t chunk, int threads,
                     const std::function<void(std::size_t, std::size_t)>& fn, const ProgressFn& progress) {
  if (n == 0) return progress ? progress(0, 0) : true;
  Job j;
  j.fn = &fn;
  j.progress = &progress;
  j.n = n;
  j.chunk = std::max<std::size_t>(chunk, 1);
  j.chunks = (n + j.chunk - 1) / j.chunk;
  threads = std::max(1, int(std::min<std::size_t>(std::size_t(std::max(threads, 1)), j.chunks)));
  if (threads == 1 || t_on_worker) {
    j.run(true);  // inline: one thread, or a nested call on a worker
  } else {
    Pool& p = pool();
    p.ensure(threads - 1);
    j.slots = threads - 1;
    p.open(j);
    j.run(true);
    p.close(j);
  }
  if (j.error) std::rethrow_exception(j.error);
  if (!j.cancelled && progress) progress(n, n);
  return !j.cancelled;
}

}  // namespace qs
