// `bench pool`: parallel_chunks dispatch overhead on the persistent pool against a thread start per call;
// `bench convert`: float16 / bfloat16 widening, scalar vs SIMD vs threads.
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

  auto* c = bench.add_subcommand("convert", "float16 / bfloat16 -> float32: scalar vs SIMD levels vs threads (GB/s)");
  static BenchConvertConfig cc;
  static std::string ccsv;
  c->add_option("--type", cc.type, "fp16 | bf16")->capture_default_str();
  c->add_option("--data", cc.data, "normal (N(0, 0.05) rounded) | codes (uniform bit patterns)")->capture_default_str();
  c->add_option("--n", cc.n, "Number of values")->capture_default_str()->check(integer_in(1, uint64_t(1) << 36));
  c->add_option("--threads", cc.threads, "Threads of the last row (0 = all cores)")->capture_default_str()->check(threads_check());
  c->add_option("--reps", cc.reps, "Timed repetitions (median reported)")->capture_default_str()->check(integer_in(1, 100000));
  c->add_option("--seed", cc.seed, "Seed of the data")->capture_default_str()->check(seed_check());
  c->add_option("--csv", ccsv, "Also write the CSV to this file");
  c->callback([] {
    if (!ccsv.empty()) check_writable(ccsv);
    check_memory(uint64_t(cc.n) * 10, "bench convert --n " + std::to_string(cc.n));  // codes + two float outputs
    const BenchConvertResult r = bench_convert(cc);
    std::ostringstream out;
    out << "type,n,path,threads,ms,gbps,speedup_vs_scalar\n";
    for (const auto& x : r.rows)
      out << cc.type << ',' << r.n << ',' << x.path << ',' << x.threads << ',' << x.ms << ',' << x.gbps << ','
          << x.speedup << '\n';
    emit(out.str(), "");
    if (!ccsv.empty()) emit(out.str(), ccsv);
    std::fprintf(stderr, "# %d outputs checked bit for bit against the scalar reference before timing\n", r.checked_runs);
  });
}

}  // namespace qs::cli
