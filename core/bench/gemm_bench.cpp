// The GEMM benchmark: data and references per shape, then every kernel checked, then timed, with the
// fp32 Eigen baseline first so each row carries its speedup. Exercise: `quantscope-cli bench gemm`.
#include <cstdio>
#include "bench/gemm_bench.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>

#include "bench/bench.h"
#include "gemm/gemm.h"
#include "gemm/gemm_f32.h"
#include "gemm/gemm_quant.h"
#include "io/npy.h"
#if defined(QS_HAVE_DNNL)
#include "gemm/gemm_onednn.h"
#endif

namespace qs {
namespace {

constexpr double kUnitRoundoff = 0x1p-24;  // float32
// Epilogue: float(acc), two products and the bias add, each rounded once (see Dequant).
constexpr double kDequantRoundings = 4;
// Float GEMM: any summation order of K products stays within (K + 2) u sum |x w| (recursive-sum bound).
constexpr double kF32ExtraRoundings = 2;
constexpr int kCheckRows = 64;  // rows compared on large shapes (spread from first to last)


void fill_normal(std::vector<float>& v, uint64_t seed, double sd, int threads) {
  const std::size_t chunk = std::size_t(1) << 18;
  parallel_chunks(v.size(), chunk, threads, [&](std::size_t b, std::size_t e) {
    std::mt19937_64 gen(seed * 0x9e3779b97f4a7c15ULL + b / chunk);
    std::normal_distribution<float> nd(0.0f, float(sd));
    for (std::size_t i = b; i < e; ++i) v[i] = nd(gen);
  });
}

std::vector<int> check_rows(int M) {
  std::vector<int> r;
  if (M <= kCheckRows) {
    for (int i = 0; i < M; ++i) r.push_back(i);
  } else {
    for (int s = 0; s < kCheckRows; ++s) r.push_back(int(int64_t(s) * (M - 1) / (kCheckRows - 1)));
  }
  return r;
}

std::string at(int i, int j) { return "(" + std::to_string(i) + ", " + std::to_string(j) + ")"; }

}  // namespace

std::vector<std::string> bench_gemm_kernels() {
  std::vector<std::string> k{"fp32-eigen"};
#if defined(QS_HAVE_DNNL)
  k.push_back("fp32-onednn");
  k.push_back("int8-onednn");
#endif
  k.push_back("int8-ref");
  const auto& levels = available_gemm_levels();
  for (auto it = levels.rbegin(); it != levels.rend(); ++it) {
    const std::string base = std::string("int8-") + gemm_level_name(*it);
    k.push_back(base);
    k.push_back(base + "-dq");
    k.push_back(base + "-e2e");
  }
  return k;
}

std::string bench_gemm_comparison() {
#if defined(QS_HAVE_DNNL)
  return "oneDNN " + detail::onednn_version();
#else
  return "";
#endif
}

void validate_bench_gemm_config(const BenchGemmConfig& cfg, const std::vector<std::string>& all) {
  for (const auto& k : cfg.kernels)
    if (std::find(all.begin(), all.end(), k) == all.end()) {
      std::string list;
      for (const auto& a : all) list += (list.empty() ? "" : ", ") + a;
      throw std::invalid_argument("bench gemm: unknown kernel '" + k + "' (available here: " + list + ")");
    }
  if (cfg.shapes.empty()) throw std::invalid_argument("bench gemm: no shapes");
  const int64_t kmax = gemm_max_k(QType::S8, QType::S8);
  for (const auto& s : cfg.shapes) {
    if (s.M <= 0 || s.K <= 0 || s.N <= 0)
      throw std::invalid_argument("bench gemm: shape " + std::to_string(s.M) + "x" + std::to_string(s.K) + "x" +
                                  std::to_string(s.N) + " has a non-positive size");
    if (s.K > kmax)
      throw std::invalid_argument("bench gemm: K = " + std::to_string(s.K) + " exceeds the int32-safe bound " +
                                  std::to_string(kmax) + " for int8 x int8");
  }
}

GemmBenchData make_gemm_bench_data(const GemmShape& shape, bool act_per_row, uint64_t seed, int setup) {
  GemmBenchData d;
  const int M = shape.M, K = shape.K, N = shape.N;
  d.M = M;
  d.K = K;
  d.N = N;
  const std::size_t MK = std::size_t(M) * K, KN = std::size_t(K) * N;
  // Activations ~ N(0, 1), weights ~ N(0, 1/K) stored N x K (a linear layer's out x in), small bias.
  d.X.resize(MK);
  d.Wt.resize(KN);
  d.bias.resize(std::size_t(N));
  fill_normal(d.X, seed * 3 + 0, 1.0, setup);
  fill_normal(d.Wt, seed * 3 + 1, 1.0 / std::sqrt(double(K)), setup);
  fill_normal(d.bias, seed * 3 + 2, 0.1, setup);
  d.W.resize(KN);  // K x N for the float kernels
  parallel_chunks(std::size_t(K), 64, setup, [&](std::size_t b, std::size_t e) {
    for (std::size_t k = b; k < e; ++k)
      for (int j = 0; j < N; ++j) d.W[k * N + j] = d.Wt[std::size_t(j) * K + k];
  });
  // Weights: symmetric int8 per output channel; activations: dynamic int8 per row or per tensor.
  d.qw.resize(KN);
  d.qa.resize(MK);
  d.sw.resize(std::size_t(N));
  d.sa.resize(act_per_row ? std::size_t(M) : 1);
  quantize_act_int8(d.Wt.data(), N, K, K, true, d.qw.data(), K, d.sw.data(), setup);
  quantize_act_int8(d.X.data(), M, K, K, act_per_row, d.qa.data(), K, d.sa.data(), setup);
  d.qwT.resize(KN);  // K x N for the reference and oneDNN
  parallel_chunks(std::size_t(K), 64, setup, [&](std::size_t b, std::size_t e) {
    for (std::size_t k = b; k < e; ++k)
      for (int j = 0; j < N; ++j) d.qwT[k * N + j] = d.qw[std::size_t(j) * K + k];
  });

  d.rows = check_rows(M);
  const std::size_t R = d.rows.size();
  d.acc.assign(R * N, 0);
  d.y.assign(R * N, 0);
  d.ymag.assign(R * N, 0);
  d.f.assign(R * N, 0);
  d.fmag.assign(R * N, 0);
  parallel_chunks(R, 1, setup, [&](std::size_t b, std::size_t e) {
    for (std::size_t r = b; r < e; ++r) {
      const std::size_t i = std::size_t(d.rows[r]);
      int64_t* acc = &d.acc[r * N];
      double* f = &d.f[r * N];
      double* fm = &d.fmag[r * N];
      for (int k = 0; k < K; ++k) {
        const int64_t a = d.qa[i * K + k];
        const double x = d.X[i * K + k];
        const int8_t* qrow = &d.qwT[std::size_t(k) * N];
        const float* wrow = &d.W[std::size_t(k) * N];
        for (int j = 0; j < N; ++j) {
          acc[j] += a * qrow[j];
          f[j] += x * double(wrow[j]);
          fm[j] += std::fabs(x * double(wrow[j]));
        }
      }
      const double s_a = d.sa[act_per_row ? i : 0];
      for (int j = 0; j < N; ++j) {
        const double p = double(acc[j]) * s_a * double(d.sw[std::size_t(j)]);
        d.y[r * N + j] = p + double(d.bias[std::size_t(j)]);
        d.ymag[r * N + j] = std::fabs(p) + std::fabs(double(d.bias[std::size_t(j)]));
      }
    }
  });
  return d;
}

int bench_gemm_reps(const BenchGemmConfig& cfg, double first_seconds) {
  // --min-time asks for at most 1000 runs; --reps may ask for more (std::clamp needs lo <= hi).
  const int floor = std::max(1, cfg.reps);
  return std::clamp(int(std::ceil(cfg.min_seconds / std::max(first_seconds, 1e-9))), floor, std::max(1000, floor));
}

std::vector<BenchGemmRow> bench_gemm_cpu(const BenchGemmConfig& cfg,
                                         const std::function<void(const BenchGemmRow&)>& on_row,
                                         const ProgressFn& progress) {
  const std::vector<std::string> all = bench_gemm_kernels();
  validate_bench_gemm_config(cfg, all);
  const int threads = resolve_threads(cfg.threads);
  const int setup = resolve_threads(0);
  auto slow = [](const std::string& n) { return n == "int8-ref" || n.rfind("int8-generic", 0) == 0; };
  auto wanted = [&](const std::string& n, const GemmShape& s) {
    if (n == "fp32-eigen" || n == "fp32-onednn") return true;  // the baselines (onednn where built)
    if (!cfg.kernels.empty()) return std::find(cfg.kernels.begin(), cfg.kernels.end(), n) != cfg.kernels.end();
    return !slow(n) || std::max({s.M, s.K, s.N}) <= cfg.slow_max_dim;
  };
  std::size_t total = 0, done = 0;
  for (const auto& s : cfg.shapes)
    for (const auto& n : all) total += wanted(n, s);

  std::vector<BenchGemmRow> rows;
  for (const auto& shape : cfg.shapes) {
    const int M = shape.M, K = shape.K, N = shape.N;
    const std::size_t MK = std::size_t(M) * K, MN = std::size_t(M) * N;
    const GemmBenchData data = make_gemm_bench_data(shape, cfg.act_per_row, cfg.seed, setup);
    const std::vector<float>& X = data.X;
    const std::vector<float>& W = data.W;
    const std::vector<float>& bias = data.bias;
    const std::vector<int8_t>& qa = data.qa;
    const std::vector<int8_t>& qwT = data.qwT;
    const std::vector<float>& sa = data.sa;
    const std::vector<float>& sw = data.sw;
    const PackedB packed = pack_b_int8(data.qw.data(), K, N, K, BLayout::NxK);
    const GemmBenchData& ref = data;
    const std::size_t R = ref.rows.size();

    std::vector<int32_t> C(MN);
    std::vector<float> Y(MN);
    const Dequant dq{.scale_a = sa, .scale_b = sw, .bias = bias};

    // Checks: throw on a wrong result, else return the largest error and the number of outputs compared.
    // Our kernels must be exact: a difference stops the benchmark. A vendor's int8 row (oneDNN) is timed
    // whatever it computes and keeps its largest error in max_abs_err_vs_ref: oneDNN's AVX2 u8s8s32 adds
    // byte products in saturating 16-bit pairs (vpmaddubsw) and is not exact on full-range operands.
    auto check_int = [&](const std::string& name, bool vendor = false) {
      double err = 0;
      for (std::size_t r = 0; r < R; ++r)
        for (int j = 0; j < N; ++j) {
          const int64_t got = C[std::size_t(ref.rows[r]) * N + j], want = ref.acc[r * N + j];
          if (got != want && !vendor)
            throw std::runtime_error("bench gemm: " + name + " differs from the int64 reference at " +
                                     at(ref.rows[r], j) + ": " + std::to_string(got) + " vs " + std::to_string(want));
          err = std::max(err, std::fabs(double(got - want)));
        }
      return err;
    };
    auto check_float = [&](const std::string& name, const std::vector<double>& want, const std::vector<double>& mag,
                           double roundings) {
      double err = 0;
      for (std::size_t r = 0; r < R; ++r)
        for (int j = 0; j < N; ++j) {
          const double got = Y[std::size_t(ref.rows[r]) * N + j];
          const double e = std::fabs(got - want[r * N + j]);
          const double tol = roundings * kUnitRoundoff * mag[r * N + j] + 1e-30;
          if (!(e <= tol))
            throw std::runtime_error("bench gemm: " + name + " is off by " + std::to_string(e) + " at " +
                                     at(ref.rows[r], j) + " (tolerance " + std::to_string(tol) + ")");
          err = std::max(err, e);
        }
      return err;
    };

    double fp32_ms = 0, best_fp32_ms = 0;
    auto measure = [&](const std::string& name, const std::function<void()>& fn,
                       const std::function<double()>& check) {
      if (!wanted(name, shape)) return true;
      std::fill(C.begin(), C.end(), int32_t(0x5a5a5a5a));
      std::fill(Y.begin(), Y.end(), std::numeric_limits<float>::quiet_NaN());
      fn();  // checked below; also the warm-up (oneDNN generates its kernels here)
      BenchGemmRow row;
      row.kernel = name;
      row.M = M;
      row.N = N;
      row.K = K;
      row.threads = threads;
      row.max_abs_err_vs_ref = check();
      row.checked = R * std::size_t(N);
      const auto t0 = std::chrono::steady_clock::now();
      fn();
      const double first = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      row.reps = bench_gemm_reps(cfg, first);
      const double t = median_seconds(fn, row.reps);
      row.median_ms = t * 1e3;
      row.gops = 2.0 * double(M) * double(N) * double(K) / t / 1e9;
      // The fp32 rows compare with fp32-eigen; every other row with the best fp32 baseline of this run and
      // shape (the faster of fp32-eigen and fp32-onednn), so an int8 speedup is never against a weak float.
      if (name == "fp32-eigen") fp32_ms = best_fp32_ms = row.median_ms;
      row.speedup_vs_fp32 = name.rfind("fp32-", 0) == 0 ? (fp32_ms > 0 ? fp32_ms / row.median_ms : 0)
                                                        : (best_fp32_ms > 0 ? best_fp32_ms / row.median_ms : 0);
      if (name.rfind("fp32-", 0) == 0) best_fp32_ms = std::min(best_fp32_ms, row.median_ms);
      rows.push_back(row);
      if (on_row) on_row(row);
      ++done;
      return !progress || progress(done, total);
    };

    const double f32_roundings = double(K) + kF32ExtraRoundings;
    auto f32_check = [&](const std::string& n) { return [&, n] { return check_float(n, ref.f, ref.fmag, f32_roundings); }; };
    if (!measure("fp32-eigen", [&] { gemm_f32_eigen(X.data(), W.data(), Y.data(), M, K, N, threads); },
                 f32_check("fp32-eigen")))
      return rows;
#if defined(QS_HAVE_DNNL)
    if (!measure("fp32-onednn", [&] { detail::onednn_sgemm(X.data(), W.data(), Y.data(), M, K, N, threads); },
                 f32_check("fp32-onednn")))
      return rows;
    {
      // oneDNN multiplies uint8 by int8: A + 128 with the offset ao = 128 is the same product.
      std::vector<uint8_t> qa_u8(MK);
      for (std::size_t i = 0; i < MK; ++i) qa_u8[i] = uint8_t(qa[i] ^ 0x80);
      if (!measure("int8-onednn",
                   [&] { detail::onednn_gemm_u8s8s32(qa_u8.data(), 128, qwT.data(), C.data(), M, K, N, threads); },
                   [&] { return check_int("int8-onednn", /*vendor=*/true); }))
        return rows;
    }
#endif
    if (!measure("int8-ref", [&] { gemm_int8_ref(qa.data(), qwT.data(), C.data(), M, K, N); },
                 [&] { return check_int("int8-ref"); }))
      return rows;
    const auto& levels = available_gemm_levels();
    for (auto it = levels.rbegin(); it != levels.rend(); ++it) {
      const SimdLevel lv = *it;
      const std::string base = std::string("int8-") + gemm_level_name(lv);
      if (!measure(base, [&] { gemm_int8(qa.data(), M, K, K, packed, C.data(), N, threads, lv); },
                   [&] { return check_int(base); }))
        return rows;
      const QMatrixA A{.data = qa.data(), .type = QType::S8, .M = M, .K = K, .ld = K};
      if (!measure(base + "-dq", [&] { gemm_q8_dequant(A, packed, dq, Y.data(), N, threads, lv); },
                   [&] { return check_float(base + "-dq", ref.y, ref.ymag, kDequantRoundings); }))
        return rows;
      // End to end: float activations in, float outputs out (quantize + GEMM + fused dequant).
      std::vector<int8_t> q_tmp(MK);
      std::vector<float> s_tmp(sa.size());
      auto e2e = [&] {
        quantize_act_int8(X.data(), M, K, K, cfg.act_per_row, q_tmp.data(), K, s_tmp.data(), threads);
        const QMatrixA Aq{.data = q_tmp.data(), .type = QType::S8, .M = M, .K = K, .ld = K};
        gemm_q8_dequant(Aq, packed, Dequant{.scale_a = s_tmp, .scale_b = sw, .bias = bias}, Y.data(), N, threads, lv);
      };
      if (!measure(base + "-e2e", e2e, [&] { return check_float(base + "-e2e", ref.y, ref.ymag, kDequantRoundings); }))
        return rows;
    }
  }
  return rows;
}

double gemm_bench_check_int32(const GemmBenchData& d, const std::string& kernel, const int32_t* got) {
  const std::size_t N = std::size_t(d.N);
  for (std::size_t r = 0; r < d.rows.size(); ++r)
    for (std::size_t j = 0; j < N; ++j)
      if (int64_t(got[r * N + j]) != d.acc[r * N + j])
        throw std::runtime_error("bench gemm: " + kernel + " differs from the int64 reference at " +
                                 at(d.rows[r], int(j)) + ": " + std::to_string(got[r * N + j]) + " vs " +
                                 std::to_string(d.acc[r * N + j]));
  return 0;
}

double gemm_bench_check_dequant(const GemmBenchData& d, const std::string& kernel, const float* got_f32,
                                const uint16_t* got_f16) {
  const int N = d.N;
  std::vector<int32_t> acc(static_cast<std::size_t>(N));
  std::vector<float> want(static_cast<std::size_t>(N));
  double err = 0;
  for (std::size_t r = 0; r < d.rows.size(); ++r) {
    const int i = d.rows[r];
    for (int j = 0; j < N; ++j) acc[std::size_t(j)] = int32_t(d.acc[r * N + j]);
    const float sa = d.sa[d.sa.size() == 1 ? 0 : std::size_t(i)];
    dequant_ref(acc.data(), 1, N, N, Dequant{.scale_a = {&sa, 1}, .scale_b = d.sw, .bias = d.bias}, want.data());
    for (int j = 0; j < N; ++j) {
      const std::size_t o = r * N + j;
      float g;
      bool same;
      if (got_f16) {
        same = got_f16[o] == float_to_half(want[std::size_t(j)]);
        g = half_to_float(got_f16[o]);
      } else {
        g = got_f32[o];
        same = std::bit_cast<uint32_t>(g) == std::bit_cast<uint32_t>(want[std::size_t(j)]);
      }
      if (!same)
        throw std::runtime_error("bench gemm: " + kernel + " is not bit-identical to dequant_ref at " + at(i, j) + ": " +
                                 std::to_string(g) + " vs " + std::to_string(want[std::size_t(j)]));
      err = std::max(err, std::fabs(double(g) - d.y[o]));
    }
  }
  return err;
}

double gemm_bench_check_float(const GemmBenchData& d, const std::string& kernel, const float* got, double input_rel) {
  const std::size_t N = std::size_t(d.N);
  // Rounded inputs: x (1 + a) * w (1 + b) is off by at most 2 rel + rel^2 relative, then the float32 sum.
  const double rel = 2 * input_rel + input_rel * input_rel + (double(d.K) + kF32ExtraRoundings) * kUnitRoundoff;
  double err = 0;
  for (std::size_t r = 0; r < d.rows.size(); ++r)
    for (std::size_t j = 0; j < N; ++j) {
      const std::size_t o = r * N + j;
      const double e = std::fabs(double(got[o]) - d.f[o]);
      const double tol = rel * d.fmag[o] + 1e-30;
      if (!(e <= tol))
        throw std::runtime_error("bench gemm: " + kernel + " is off by " + std::to_string(e) + " at " +
                                 at(d.rows[r], int(j)) + " (tolerance " + std::to_string(tol) + ")");
      err = std::max(err, e);
    }
  return err;
}

const char* bench_gemm_csv_header() {
  return "backend,kernel,M,N,K,threads,median_ms,gops,speedup_vs_fp32,max_abs_err_vs_ref\n";
}

std::string bench_gemm_csv_row(const BenchGemmRow& r) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s,%s,%d,%d,%d,%d,%.6g,%.2f,%.3f,%.6g\n", r.backend.c_str(), r.kernel.c_str(), r.M,
                r.N, r.K, r.threads, r.median_ms, r.gops, r.speedup_vs_fp32, r.max_abs_err_vs_ref);
  return buf;
}

}  // namespace qs
