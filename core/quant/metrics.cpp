// Error metrics: one fused pass over (x, q) per quantization group, in double, with exponent-bit
// histograms (no logarithms per element).
#include "quant/metrics.h"
#include "quant/reduce_simd.h"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <sstream>

namespace qs {

namespace {
// floor(log2 |v|) for finite non-zero float v, from its bits (subnormals included).
inline int exponent_of(float v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  const int e = int((u >> 23) & 0xff);
  if (e != 0) return e - 127;
  return 31 - std::countl_zero(u & 0x7fffffu) - 149;  // subnormal: f * 2^-149
}
}  // namespace

Log2Histogram& Log2Histogram::operator+=(const Log2Histogram& o) {
  for (std::size_t i = 0; i < counts.size(); ++i) counts[i] += o.counts[i];
  zeros += o.zeros;
  return *this;
}

double ErrorMetrics::sqnr_db() const {
  if (count == 0) return NAN;
  if (sum_e2 == 0) return INFINITY;
  return 10.0 * std::log10(sum_x2 / sum_e2);
}

ErrorMetrics& ErrorMetrics::operator+=(const ErrorMetrics& o) {
  count += o.count;
  sum_x2 += o.sum_x2;
  sum_e2 += o.sum_e2;
  sum_abs_e += o.sum_abs_e;
  max_abs_e = std::max(max_abs_e, o.max_abs_e);
  sum_clip2 += o.sum_clip2;
  sum_round2 += o.sum_round2;
  clipped += o.clipped;
  abs_error += o.abs_error;
  rel_error += o.rel_error;
  binade += o.binade;
  return *this;
}

namespace {

void histogram_pass(ErrorMetrics& m, const float* x, const float* q, std::size_t n, float scale) {
  for (std::size_t i = 0; i < n; ++i) {
    const double xi = x[i];
    if (!std::isfinite(xi)) continue;
    const double ae = std::fabs(xi - double(q[i]));
    const float fe = static_cast<float>(ae);
    if (fe == 0) m.abs_error.zeros++;
    else if (std::isfinite(fe)) m.abs_error.add_exponent(exponent_of(fe));
    if (xi != 0) {
      const float rel = static_cast<float>(ae / std::fabs(xi));
      if (rel == 0) m.rel_error.zeros++;
      else if (std::isfinite(rel)) m.rel_error.add_exponent(exponent_of(rel));
      const float scaled = x[i] / scale;  // the value the encoder saw
      if (scaled == 0) m.binade.zeros++;
      else if (std::isfinite(scaled)) m.binade.add_exponent(exponent_of(scaled));
    } else {
      m.binade.zeros++;  // x = 0 has no relative error
    }
  }
}

}  // namespace

void accumulate_metrics(ErrorMetrics& m, const float* x, const float* q, std::size_t n, float scale, double bound) {
  accumulate_metrics(m, x, q, n, scale, -bound, bound);
}

void accumulate_metrics(ErrorMetrics& m, const float* x, const float* q, std::size_t n, float scale, double clip_lo,
                        double clip_hi) {
  add_error_sums(m, error_sums_f32(x, q, n, clip_lo, clip_hi));
  if (m.histograms) histogram_pass(m, x, q, n, scale);
}

void add_error_sums(ErrorMetrics& m, const ErrorSums& s) {
  m.count += s.count;
  m.sum_x2 += s.sx2;
  m.sum_e2 += s.se2;
  m.sum_abs_e += s.sae;
  m.max_abs_e = std::max(m.max_abs_e, s.mae);
  m.sum_clip2 += s.sc2;
  m.sum_round2 += s.sr2;
  m.clipped += s.clipped;
}

void accumulate_histograms(ErrorMetrics& m, const float* x, const float* q, std::size_t n, float scale) {
  if (m.histograms) histogram_pass(m, x, q, n, scale);
}

std::string histogram_csv_rows(const ErrorMetrics& m, const std::string& prefix) {
  std::ostringstream out;
  out.precision(17);
  auto emit = [&](const char* kind, const Log2Histogram& h) {
    if (h.zeros) out << prefix << kind << ",0,0," << h.zeros << '\n';
    for (std::size_t i = 0; i < h.counts.size(); ++i) {
      if (!h.counts[i]) continue;
      const int e = int(i) + Log2Histogram::kMinExp;
      out << prefix << kind << ',' << std::ldexp(1.0, e) << ',' << std::ldexp(1.0, e + 1) << ',' << h.counts[i] << '\n';
    }
  };
  emit("abs_error", m.abs_error);
  emit("rel_error", m.rel_error);
  emit("binade", m.binade);
  return out.str();
}

}  // namespace qs
