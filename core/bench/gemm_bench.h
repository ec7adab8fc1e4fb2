// The GEMM latency benchmark shared by `quantscope-cli bench gemm` and the GUI's latency view: for each
// shape, fp32 (Eigen, the baseline) and every int8 kernel, each checked against a reference before it
// is timed, with the int8 end-to-end path (quantize activations + GEMM + fused dequant) next to the
// pre-quantized one. Exercise: `quantscope-cli bench gemm --backend cpu --sizes 1024 --threads 1`.
//
//   qs::BenchGemmConfig cfg;
//   cfg.shapes = {{.M = 1024, .K = 1024, .N = 1024}};
//   for (const auto& row : qs::bench_gemm_cpu(cfg)) std::printf("%s %.3f ms\n", row.kernel.c_str(), row.median_ms);
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "util/parallel.h"

namespace qs {

struct GemmShape {
  int M = 0, K = 0, N = 0;  // activations M x K, weights K x N
};

struct BenchGemmConfig {
  std::vector<GemmShape> shapes;
  int threads = 1;              // <= 0: all cores; every kernel of a run uses the same count
  int reps = 5;                 // at least this many timed runs (median reported) ...
  double min_seconds = 0.25;    // ... and more, up to max(1000, reps), until they add up to this
  int slow_max_dim = 512;       // int8-ref and int8-generic only when max(M, K, N) <= this ...
  std::vector<std::string> kernels;  // ... unless named here; non-empty: run only these (plus the fp32 baselines)
  bool act_per_row = true;      // dynamic activation scales per row (token) or per tensor
  uint64_t seed = 1;
};

// One CSV row: backend,kernel,M,N,K,threads,median_ms,gops,speedup_vs_fp32,max_abs_err_vs_ref.
// gops = 2 M N K / time / 1e9. speedup_vs_fp32 = the best fp32 baseline's median (the faster of fp32-eigen and
// fp32-onednn, both always run where built) / this median, same shape and threads; the fp32 rows themselves
// compare with fp32-eigen.
// max_abs_err_vs_ref: int8 kernels against the int64 reference (0 = exact); fp32 kernels against a
// float64 product of the same inputs; -dq and -e2e rows against the float64 product of the dequantized
// operands plus bias. `checked` outputs were compared (all, or every column of up to 64 spread rows).
struct BenchGemmRow {
  std::string backend = "cpu", kernel;
  int M = 0, N = 0, K = 0, threads = 1;
  double median_ms = 0, gops = 0, speedup_vs_fp32 = 0, max_abs_err_vs_ref = 0;
  std::size_t checked = 0;
  int reps = 0;
};

// The CSV header and one row exactly as `quantscope-cli bench gemm` prints them (the Latency tab's
// export uses the same, so files from either compare line by line).
const char* bench_gemm_csv_header();  // ends with '\n'
std::string bench_gemm_csv_row(const BenchGemmRow& r);  // ends with '\n'


// Kernel names this build and CPU can run, in the order they are timed.
std::vector<std::string> bench_gemm_kernels();
// The optional comparison library built in, e.g. "oneDNN 2.6.3", or "" when there is none.
std::string bench_gemm_comparison();

// One shape's inputs and references, shared by the CPU and CUDA benchmarks. Activations X ~ N(0, 1)
// (M x K), weights ~ N(0, 1/K) stored N x K (Wt; W is the same K x N), bias ~ N(0, 0.1); int8 codes (qa
// M x K, qw N x K, qwT K x N) with scales (sw per output channel, sa per row or one). For up to 64 rows
// spread from first to last (`rows`), per output: the int64 accumulator, the dequantized product plus bias
// in float64 (y) and the float64 product of the float inputs (f), with the magnitudes (ymag, fmag) that
// the tolerances scale with.
struct GemmBenchData {
  int M = 0, K = 0, N = 0;
  std::vector<float> X, Wt, W, bias, sa, sw;
  std::vector<int8_t> qa, qw, qwT;
  std::vector<int> rows;
  std::vector<int64_t> acc;
  std::vector<double> y, ymag, f, fmag;
};
GemmBenchData make_gemm_bench_data(const GemmShape& shape, bool act_per_row, uint64_t seed, int threads);
// Throws std::invalid_argument for a kernel name not in `available`, no shapes, a non-positive size or K
// beyond the int32-safe bound.
void validate_bench_gemm_config(const BenchGemmConfig& cfg, const std::vector<std::string>& available);

// How many timed runs a kernel gets whose first run took `first_seconds`: at least cfg.reps, more until they
// add up to cfg.min_seconds, those extra runs capped at 1000 (the CPU and GPU benchmarks both).
int bench_gemm_reps(const BenchGemmConfig& cfg, double first_seconds);

// Checks of another backend's output rows: `got` holds rows.size() rows of N values in the order of
// `rows`. Each throws std::runtime_error naming `kernel` and the first wrong output, else returns the
// largest absolute error against the float64 reference (0 for exact int32 results).
// int32: equal to the int64 accumulators.
double gemm_bench_check_int32(const GemmBenchData& d, const std::string& kernel, const int32_t* got);
// Epilogue outputs (float32 in got_f32, or float16 bits in got_f16): bit-identical to dequant_ref on the
// exact accumulators (float16: that float32 value through float_to_half); the error is against y.
double gemm_bench_check_dequant(const GemmBenchData& d, const std::string& kernel, const float* got_f32,
                                const uint16_t* got_f16 = nullptr);
// Float GEMMs whose inputs were rounded with relative error up to input_rel (0 for float32, 2^-10 for TF32,
// 2^-9 for bfloat16): within (2 input_rel + input_rel^2 + (K + 2) 2^-24) * fmag of f.
double gemm_bench_check_float(const GemmBenchData& d, const std::string& kernel, const float* got, double input_rel);

// Runs the benchmark; on_row sees each row as soon as it is measured. A kernel whose check fails throws
// std::runtime_error (nothing is timed after a wrong result). progress(done, total) counts kernel runs;
// returning false stops after the current kernel (the rows so far are returned).
std::vector<BenchGemmRow> bench_gemm_cpu(const BenchGemmConfig& cfg,
                                         const std::function<void(const BenchGemmRow&)>& on_row = {},
                                         const ProgressFn& progress = {});

}  // namespace qs
