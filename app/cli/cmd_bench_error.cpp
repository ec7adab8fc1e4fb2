// `bench error-view`: the Error tab's computation (quantization, metrics, value and error histograms)
// for n normal values of one scheme, checked against a plain element loop and against apply_scheme's
// own metrics first, then timed (median) against the 150 ms budget (16 Mi values, one thread of an AVX2 laptop-class
// core: issue 17's, tightened from issue 4's 200 ms) and against the quantization alone (apply_scheme with error
// sums), timed in the same run: ms, apply_ms, x_apply = ms / apply_ms, budget_ms = 150, ratio = ms / budget_ms.
// Exercise: `quantscope-cli bench error-view --n 16777216 --scheme e4m3fn/tensor --threads 1`.
#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "bench/bench.h"
#include "cli/commands.h"
#include "format/encode_simd.h"
#include "quant/error_view.h"
#include "quant/synthetic.h"

namespace qs::cli {
namespace {

constexpr double kBudgetMs = 150.0;

[[noreturn]] void mismatch(const std::string& what) { throw std::runtime_error("bench error-view: check failed: " + what); }

// The reference: a plain loop over (x, q) for the value histogram and the relative errors, and
// apply_scheme's own metrics (an independent code path) for the absolute errors and the clipped count.
void check(const Scheme& s, const std::vector<float>& x, const std::vector<int64_t>& shape, const ErrorView& v,
           int bins) {
  const std::size_t n = x.size();
  std::vector<float> q(n);
  ErrorMetrics m;  // with its log2 histograms
  const SchemeOutput out = apply_scheme(s, x.data(), shape, q.data(), 1, {}, &m);
  if (v.values.total() != n) mismatch("value histogram holds " + std::to_string(v.values.total()) + " of " + std::to_string(n));
  if (v.abs_error.total() != v.finite || v.rel_error.total() != v.finite) mismatch("error histograms do not add up");
  if (v.metrics.count != m.count || v.metrics.sum_e2 != m.sum_e2 || out.stats.overflow != v.out.stats.overflow)
    mismatch("metrics differ from apply_scheme");
  if (v.clipped != m.clipped) mismatch("clipped " + std::to_string(v.clipped) + " vs apply_scheme " + std::to_string(m.clipped));

  std::vector<uint64_t> value(std::size_t(bins), 0);
  std::vector<uint64_t> rel(Log2ErrorHistogram::kBins, 0);
  const double lo = v.values.lo, hi = v.values.hi;
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) continue;
    const double xd = x[i];
    if (xd >= lo && xd <= hi) value[std::size_t(std::min(std::floor((xd - lo) * (bins / (hi - lo))), double(bins - 1)))]++;
    const float e = std::fabs(x[i] - q[i]);
    if (x[i] != 0 && e != 0 && std::isfinite(e)) rel[std::size_t(Log2ErrorHistogram::bin_of(e / std::fabs(x[i])))]++;
  }
  for (int k = 0; k < bins; ++k)
    if (value[std::size_t(k)] != v.values.counts[std::size_t(k)]) mismatch("value bin " + std::to_string(k));
  for (int k = 0; k < Log2ErrorHistogram::kBins; ++k) {
    if (rel[std::size_t(k)] != v.rel_error.rounding[std::size_t(k)] + v.rel_error.clipping[std::size_t(k)])
      mismatch("relative error bin " + std::to_string(k));
    // ErrorMetrics bins by the exponent of float(|x - q|) with the difference taken in double; the two agree
    // whenever that difference is exact, which holds for every element of a rounding or clipping error here.
    const uint64_t mine = v.abs_error.rounding[std::size_t(k)] + v.abs_error.clipping[std::size_t(k)];
    uint64_t theirs = 0;
    for (int e = Log2Histogram::kMinExp; e <= Log2Histogram::kMaxExp; ++e) {
      const int bin = e < -126 ? 0 : std::min(e + 127, 254);
      if (bin == k) theirs += m.abs_error.counts[std::size_t(e - Log2Histogram::kMinExp)];
    }
    if (mine != theirs) mismatch("absolute error bin " + std::to_string(k));
  }
  if (v.abs_error.zeros != m.abs_error.zeros) mismatch("exact elements");
}

}  // namespace

void add_bench_error(CLI::App& bench) {
  auto* c = bench.add_subcommand("error-view", "Error tab computation (metrics + histograms): checked, then timed");
  struct Opts {
    std::string scheme = "e4m3fn/tensor", dist = "normal", rounding = "nearest", overflow = "saturate";
    std::size_t n = std::size_t(1) << 24;
    int threads = 1, reps = 5, bins = 512;
    uint64_t seed = 1;
  };
  static Opts o;
  c->add_option("--n", o.n, "Number of float32 values (a multiple of 1024)")->capture_default_str()->check(integer_in(1, uint64_t(1) << 36));
  c->add_option("--scheme", o.scheme, "Scheme, e.g. e4m3fn/tensor, int8/channel:0, e2m1fn/block:32:e8m0fnu")->capture_default_str();
  c->add_option("--threads", o.threads, "Threads (0 = all cores)")->capture_default_str()->check(threads_check());
  c->add_option("--reps", o.reps, "Timed repetitions (median)")->capture_default_str()->check(integer_in(1, 100000));
  c->add_option("--bins", o.bins, "Value histogram bins")->capture_default_str()->check(CLI::Range(1, 65536));
  c->add_option("--rounding", o.rounding, "nearest | stochastic | nearest-away | toward-zero (the Setup dock's rounding)")->capture_default_str();
  c->add_option("--overflow", o.overflow, "saturate | ieee")->capture_default_str();
  c->add_option("--dist", o.dist, "normal | laplace | uniform | student-t | outliers")->capture_default_str();
  c->add_option("--seed", o.seed, "Seed of the synthetic tensor")->capture_default_str()->check(seed_check());
  c->callback([] {
    EncodeOptions eo;
    eo.rounding = parse_rounding(o.rounding);
    eo.overflow = parse_overflow(o.overflow);
    eo.seed = o.seed;
    const Scheme s = parse_scheme(o.scheme, eo);
    check_memory(uint64_t(o.n) * 16, "bench error-view --n " + std::to_string(o.n));  // data, scratch, reference
    SyntheticSpec spec;
    spec.dist = parse_distribution(o.dist);
    spec.n = o.n;
    spec.cols = o.n % 1024 == 0 ? 1024 : o.n;
    spec.seed = o.seed;
    const std::vector<float> x = make_synthetic(spec, 0);
    const std::vector<int64_t> shape{int64_t(o.n / spec.cols), int64_t(spec.cols)};
    ErrorViewOptions opt;
    opt.value_bins = o.bins;
    opt.threads = o.threads;
    std::vector<float> scratch;

    check(s, x, shape, compute_error_view(s, x.data(), shape, opt, {}, &scratch), o.bins);

    ErrorView v;
    const double t = median_seconds([&] { v = compute_error_view(s, x.data(), shape, opt, {}, &scratch); }, o.reps);
    ErrorMetrics sums;
    sums.histograms = false;
    const double ta = median_seconds([&] {
      sums = ErrorMetrics{};
      sums.histograms = false;
      apply_scheme(s, x.data(), shape, scratch.data(), opt.threads, {}, &sums);
    }, o.reps);
    const double ms = t * 1e3;
    std::ostringstream out;
    out << "scheme,n,threads,simd,ms,apply_ms,x_apply,budget_ms,ratio,sqnr_db\n"
        << s.text << ',' << o.n << ',' << resolve_threads(o.threads) << ',' << to_string(best_simd_level()) << ','
        << ms << ',' << ta * 1e3 << ',' << t / ta << ',' << kBudgetMs << ',' << ms / kBudgetMs << ','
        << fmt_value(v.metrics.sqnr_db()) << '\n';
    emit(out.str(), "");
    std::fprintf(stderr, "# %s: value histogram (%d bins) and both error histograms matched the reference before timing; %s\n",
                 (ms <= kBudgetMs ? "within budget" : "OVER BUDGET"), o.bins, v.grid.note.c_str());
  });
}

}  // namespace qs::cli
