// `bench quantize`: the fake-quant round trip against a memcpy of the same bytes, same run.
#include <sstream>

#include "bench/bench.h"
#include "cli/commands.h"
#include "cuda/device.h"
#include "cuda/bench_quantize_cuda.cuh"
#include "io/atomic_file.h"

namespace qs::cli {

void add_bench(CLI::App& app) {
  auto* bench = app.add_subcommand("bench", "Benchmarks that check their results, then time them");
  bench->require_subcommand(1);
  add_bench_gemm(*bench);
  add_bench_error(*bench);
  add_bench_runtime(*bench);
  auto* q = bench->add_subcommand("quantize", "Fake-quant throughput vs memcpy (GB/s, bytes read + written)");
  struct Opts {
    std::string backend = "cpu", format = "e4m3fn", rounding = "nearest", csv;
    std::size_t n = std::size_t(1) << 26;
    int threads = 1, reps = 7;
    uint64_t seed = 1;
  };
  static Opts o;
  q->add_option("--backend", o.backend, "cpu | cuda")->capture_default_str();
  q->add_option("--format", o.format, "Format spec")->capture_default_str();
  q->add_option("--n", o.n, "Number of float32 values")->capture_default_str()->check(integer_in(1, uint64_t(1) << 40));
  q->add_option("--threads", o.threads, "Threads (0 = all cores)")->capture_default_str()->check(threads_check());
  q->add_option("--rounding", o.rounding, "nearest | stochastic")->capture_default_str();
  q->add_option("--reps", o.reps, "Timed repetitions (median reported)")->capture_default_str()->check(integer_in(1, 100000));
  q->add_option("--seed", o.seed, "Seed for the data and stochastic rounding")->capture_default_str()->check(seed_check());
  q->add_option("--csv", o.csv, "Also write the CSV row to this file");
  q->callback([] {
    if (o.backend != "cpu" && o.backend != "cuda")
      throw std::runtime_error("unknown backend '" + o.backend + "' (cpu or cuda)");
    if (o.backend == "cuda") {
      const auto& d = cuda::device_info();
      if (!d.available) throw std::runtime_error(d.message);
    }
    if (!o.csv.empty()) check_writable(o.csv);
    BenchQuantizeConfig cfg;
    cfg.format = o.format;
    cfg.rounding = parse_rounding(o.rounding);
    cfg.n = o.n;
    cfg.threads = o.threads;
    cfg.reps = o.reps;
    cfg.seed = o.seed;
    check_memory(uint64_t(o.n) * 12, "bench quantize --n " + std::to_string(o.n));  // input, output, codes
    const BenchQuantizeResult r = o.backend == "cuda" ? cuda::bench_quantize_cuda(cfg) : bench_quantize_cpu(cfg);
    std::ostringstream out;
    out << "backend,format,rounding,n,threads,quant_gbps,memcpy_gbps,ratio\n"
        << r.backend << ',' << r.format << ',' << r.rounding << ',' << r.n << ',' << r.threads << ','
        << r.quant_gbps << ',' << r.memcpy_gbps << ',' << r.ratio << '\n';
    emit(out.str(), "");
    if (!o.csv.empty()) emit(out.str(), o.csv);
    std::fprintf(stderr, "# simd=%s, %zu elements checked against encode_ref before timing\n", r.simd.c_str(), r.checked);
  });

  auto* qi = bench->add_subcommand("quantize-int8", "Symmetric int8 quantization (per tensor or row) vs a device copy");
  struct QiOpts {
    std::string backend = "cuda", per = "row", dtype = "fp32", csv;
    std::size_t rows = 8192, cols = 8192;
    int reps = 20;
  };
  static QiOpts qo;
  qi->add_option("--backend", qo.backend, "cuda")->capture_default_str();
  qi->add_option("--rows", qo.rows, "Rows")->capture_default_str()->check(integer_in(1, 1 << 20));
  qi->add_option("--cols", qo.cols, "Columns")->capture_default_str()->check(integer_in(1, 1 << 20));
  qi->add_option("--per", qo.per, "row | tensor")->capture_default_str();
  qi->add_option("--dtype", qo.dtype, "fp32 | fp16")->capture_default_str();
  qi->add_option("--reps", qo.reps, "Timed repetitions (median)")->capture_default_str()->check(integer_in(1, 100000));
  qi->add_option("--csv", qo.csv, "Also write the CSV to this file");
  qi->callback([] {
    if (qo.backend != "cuda") throw std::runtime_error("bench quantize-int8 runs on --backend cuda only");
    if (qo.per != "row" && qo.per != "tensor") throw std::runtime_error("--per must be row or tensor");
    if (qo.dtype != "fp32" && qo.dtype != "fp16") throw std::runtime_error("--dtype must be fp32 or fp16");
    const auto& d = cuda::device_info();
    if (!d.available) throw std::runtime_error(d.message);
    if (!qo.csv.empty()) check_writable(qo.csv);
    const cuda::BenchInt8Result r =
        cuda::bench_quantize_int8_cuda(qo.rows, qo.cols, qo.per == "row", qo.dtype == "fp16", qo.reps);
    std::ostringstream out;
    out << "backend,kernel,rows,cols,quant_gbps,memcpy_gbps,ratio\ncuda," << r.kernel << ',' << qo.rows << ','
        << qo.cols << ',' << r.quant_gbps << ',' << r.memcpy_gbps << ',' << r.ratio << '\n';
    emit(out.str(), "");
    if (!qo.csv.empty()) emit(out.str(), qo.csv);
  });

  auto* a = bench->add_subcommand("analyze", "Analyse a generated .safetensors file: GB/s and peak memory");
  static BenchAnalyzeConfig ac;
  static std::string acsv;
  a->add_option("--size-mb", ac.size_mb, "File size in MiB")->capture_default_str()->check(integer_in(1, 1 << 22));
  a->add_option("--tensors", ac.tensors, "Number of tensors")->capture_default_str()->check(integer_in(1, 1000000));
  a->add_option("--threads", ac.threads, "Threads (0 = all cores)")->capture_default_str()->check(threads_check());
  a->add_option("--scheme", ac.scheme, "Scheme")->capture_default_str();
  a->add_option("--dir", ac.dir, "Folder for the temporary file")->capture_default_str();
  a->add_option("--csv", acsv, "Also write the CSV row to this file");
  a->callback([] {
    if (!acsv.empty()) check_writable(acsv);
    const BenchAnalyzeResult r = bench_analyze(ac);
    std::ostringstream out;
    out << "scheme,file_mb,tensors,threads,seconds,gbps,gbps_per_thread,largest_tensor_mb,peak_rss_mb,rss_budget_mb,"
           "rss_within_budget\n"
        << ac.scheme << ',' << double(r.file_bytes) / 1048576.0 << ',' << r.tensors << ',' << r.threads << ','
        << r.seconds << ',' << r.gbps << ',' << r.gbps_per_thread << ',' << double(r.largest_tensor_bytes) / 1048576.0
        << ',' << r.peak_rss_mb << ',' << r.rss_budget_mb << ',' << (r.peak_rss_mb <= r.rss_budget_mb ? "yes" : "no")
        << '\n';
    emit(out.str(), "");
    if (!acsv.empty()) emit(out.str(), acsv);
    std::fprintf(stderr, "# simd=%s (QS_SIMD_LEVEL caps it)\n", to_string(best_simd_level()));
  });
}

}  // namespace qs::cli
