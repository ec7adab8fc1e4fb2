// `bench pool`: parallel_chunks dispatch overhead on the persistent pool against a thread start per call.
#include <cstdio>
#include <sstream>

#include "bench/bench.h"
#include "cli/commands.h"
#include "io/atomic_file.h"
#include "util/parallel.h"

namespace qs::cli {

void add_bench_runtime(CLI::App& bench) {
  auto* p = bench.add_subcommand("pool", "Thread-pool dispatch: microseconds per parallel_chunks call (pool vs thread start)");
  struct Opts {
    int threads = 2, calls = 2000, reps = 9;
    std::string csv;
  };
  static Opts o;
  p->add_option("--threads", o.threads, "Threads per call (0 = all cores)")->capture_default_str()->check(threads_check());
  p->add_option("--calls", o.calls, "Calls per timed batch")->capture_default_str()->check(integer_in(1, 10000000));
  p->add_option("--reps", o.reps, "Timed batches (median reported)")->capture_default_str()->check(integer_in(1, 100000));
  p->add_option("--csv", o.csv, "Also write the CSV row to this file");
  p->callback([] {
    if (!o.csv.empty()) check_writable(o.csv);
    const BenchPoolResult r = bench_pool(resolve_threads(o.threads), o.calls, o.reps);
    std::ostringstream out;
    out << "threads,pool_trivial_us,pool_join_us,pool_cold_join_us,shard_pool_join_us,thread_start_join_us,pool_workers,"
           "timeouts\n"
        << r.threads << ',' << r.pool_hot_us << ',' << r.pool_join_us << ',' << r.pool_cold_us << ',' << r.shard_join_us
        << ',' << r.spawn_join_us << ',' << r.workers << ',' << r.timeouts << '\n';
    emit(out.str(), "");
    if (!o.csv.empty()) emit(out.str(), o.csv);
  });

}

}  // namespace qs::cli
