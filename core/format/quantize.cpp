// Whole-tensor fake quantization: scale choice, threading, the affine path of unsigned integers,
// statistics and SQNR. The per-element work is encode_f32 (vectorized) or encode_ref.
#include "format/quantize.h"
#include "format/scale_rule.h"

#include <algorithm>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <mutex>

#include "format/rng.h"

namespace qs {

namespace {
constexpr std::size_t kChunk = std::size_t(1) << 20;

bool affine(const Format& f, ScaleChoice s) { return f.is_int() && !f.is_signed && s.kind == ScaleChoice::Amax; }

template <typename T>
void minmax_finite(const T* x, std::size_t n, int threads, double& lo, double& hi, double& amax) {
  std::mutex mu;
  double glo = 0, ghi = 0, gamax = 0;
  bool any = false;
  parallel_chunks(n, kChunk, threads, [&](std::size_t b, std::size_t e) {
    double l = INFINITY, h = -INFINITY, a = 0;
    bool seen = false;
    for (std::size_t i = b; i < e; ++i) {
      const double v = static_cast<double>(x[i]);
      if (!std::isfinite(v)) continue;
      seen = true;
      l = std::min(l, v);
      h = std::max(h, v);
      a = std::max(a, std::fabs(v));
    }
    std::lock_guard<std::mutex> lock(mu);
    if (!seen) return;
    glo = any ? std::min(glo, l) : l;
    ghi = any ? std::max(ghi, h) : h;
    gamax = std::max(gamax, a);
    any = true;
  });
  lo = glo;
  hi = ghi;
  amax = gamax;
}

}  // namespace

// The PyTorch MinMax affine rule for quint8-like grids: the scale rule's Affine case (format/scale_rule.h).
void affine_params(const Format& f, double lo_x, double hi_x, float& s, int32_t& zp) {
  const GroupScale g = group_scale(scale_rule_params(ScaleRule::Affine, f), GroupStats{.lo = lo_x, .hi = hi_x});
  s = g.scale;
  zp = g.zero_point;
}

namespace {
template <typename T>
void affine_chunk(const Format& f, const EncodeOptions& opt, const T* x, std::size_t b, std::size_t e,
                  float s, int32_t zp, float* values, uint16_t* c16, uint8_t* c8, EncodeStats& st,
                  uint64_t index0 = 0) {
  const double qmax = f.max_finite;
  for (std::size_t i = b; i < e; ++i) {
    const double xi = static_cast<double>(x[i]);
    double q;
    if (std::isnan(xi)) {
      ++st.nan;
      q = zp;
    } else {
      const double y = std::is_same_v<T, float> ? double(static_cast<float>(x[i]) / s) : xi / double(s);
      double r;
      if (std::isinf(y)) {
        r = y;
      } else if (opt.rounding == Rounding::Nearest) {
        r = std::nearbyint(y);
      } else if (opt.rounding == Rounding::NearestAway) {
        r = std::round(y);
      } else if (opt.rounding == Rounding::TowardZero) {
        r = std::trunc(y);
      } else {
        const double fl = std::floor(y);
        const double frac = y - fl;  // exact in double
        r = fl + (double(stochastic_bits(opt.seed, index0 + i)) < std::floor(std::ldexp(frac, 32)) ? 1 : 0);
      }
      q = r + zp;
      if (q < 0 || q > qmax) {
        ++st.overflow;
        q = std::clamp(q, 0.0, qmax);
      } else if (q == zp && xi != 0) {
        ++st.underflow;
      }
    }
    const uint32_t code = static_cast<uint32_t>(q);
    if (c16) c16[i] = static_cast<uint16_t>(code);
    if (c8) c8[i] = static_cast<uint8_t>(code);
    if (values) values[i] = static_cast<float>(double(int32_t(code) - zp) * double(s));
  }
}

}  // namespace

EncodeStats encode_affine_f32(const Format& f, const EncodeOptions& opt, const float* x, std::size_t n,
                              uint64_t index0, float scale, int32_t zero_point, float* values) {
  EncodeStats st;
  affine_chunk(f, opt, x, 0, n, scale, zero_point, values, nullptr, nullptr, st, index0);
  return st;
}

namespace {
template <typename T>
double sqnr_impl(const T* x, const float* y, std::size_t n) {
  double sig = 0, err = 0;
  std::size_t finite = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double xi = static_cast<double>(x[i]);
    if (!std::isfinite(xi)) continue;
    ++finite;
    const double d = xi - static_cast<double>(y[i]);
    sig += xi * xi;
    err += d * d;
  }
  if (finite == 0) return NAN;  // nothing finite was compared: no score (as analyze reports it), not a perfect one
  if (err == 0) return INFINITY;
  if (std::isnan(err)) return NAN;
  return 10.0 * std::log10(sig / err);
}
}  // namespace

ScaleChoice parse_scale(std::string_view s) {
  if (s == "amax") return {ScaleChoice::Amax, 1.0};
  if (s == "none") return {ScaleChoice::None, 1.0};
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size())
    throw FormatError("scale '" + std::string(s) + "' is not amax, none or a number");
  if (!(v > 0) || !std::isfinite(v) || !(static_cast<float>(v) > 0) || !std::isfinite(static_cast<float>(v)))
    throw FormatError("scale " + std::string(s) + " must be a positive, finite float32 number");
  return {ScaleChoice::Value, v};
}

namespace {
void check_scale(ScaleChoice scale) {
  if (scale.kind == ScaleChoice::Value &&
      (!(scale.value > 0) || !std::isfinite(scale.value) || !(static_cast<float>(scale.value) > 0) ||
       !std::isfinite(static_cast<float>(scale.value))))
    throw FormatError("scale " + std::to_string(scale.value) + " must be a positive, finite float32 number");
}
}  // namespace

double amax_f32(const float* x, std::size_t n, int threads) {
  double lo, hi, a;
  minmax_finite(x, n, threads, lo, hi, a);
  return a;
}

double sqnr_db(const float* x, const float* y, std::size_t n) { return sqnr_impl(x, y, n); }
double sqnr_db(const double* x, const float* y, std::size_t n) { return sqnr_impl(x, y, n); }

QuantizeResult quantize_f32(const Format& f, const EncodeOptions& opt, ScaleChoice scale, const float* x,
                            std::size_t n, float* values, uint16_t* codes16, uint8_t* codes8, int threads,
                            const ProgressFn& progress, SimdLevel level) {
  check_scale(scale);
  QuantizeResult res;
  res.count = n;
  threads = resolve_threads(threads);
  double lo = 0, hi = 0;
  if (scale.kind == ScaleChoice::Amax) minmax_finite(x, n, threads, lo, hi, res.amax);
  std::mutex mu;
  if (affine(f, scale)) {
    float s;
    affine_params(f, lo, hi, s, res.zero_point);
    res.scale = s;
    res.cancelled = !parallel_chunks(n, kChunk, threads, [&](std::size_t b, std::size_t e) {
      EncodeStats st;
      affine_chunk(f, opt, x, b, e, s, res.zero_point, values, codes16, codes8, st);
      std::lock_guard<std::mutex> lock(mu);
      res.stats += st;
    }, progress);
  } else {
    float s = 1.0f;
    if (scale.kind == ScaleChoice::Value) s = static_cast<float>(scale.value);
    // The schemes' amax rule (1 for an all-zero tensor), the one apply_scheme uses for "/tensor".
    if (scale.kind == ScaleChoice::Amax) s = group_scale(scale_rule_params(ScaleRule::Amax, f), GroupStats{.amax = res.amax}).scale;
    res.scale = s;
    res.cancelled = !parallel_chunks(n, kChunk, threads, [&](std::size_t b, std::size_t e) {
      EncodeJob job;
      job.x = x + b;
      job.n = e - b;
      job.scale = s;
      job.values = values ? values + b : nullptr;
      job.codes16 = codes16 ? codes16 + b : nullptr;
      job.codes8 = codes8 ? codes8 + b : nullptr;
      job.index0 = b;
      const EncodeStats st = encode_f32(f, opt, job, level);
      std::lock_guard<std::mutex> lock(mu);
      res.stats += st;
    }, progress);
  }
  if (values && !res.cancelled) res.sqnr_db = sqnr_db(x, values, n);
  return res;
}

QuantizeResult quantize_f64(const Format& f, const EncodeOptions& opt, ScaleChoice scale, const double* x,
                            std::size_t n, float* values, uint16_t* codes16, uint8_t* codes8, int threads,
                            const ProgressFn& progress) {
  check_scale(scale);
  QuantizeResult res;
  res.count = n;
  threads = resolve_threads(threads);
  double lo = 0, hi = 0;
  if (scale.kind == ScaleChoice::Amax) minmax_finite(x, n, threads, lo, hi, res.amax);
  if (codes8 && f.bits > 8) throw FormatError(f.name + " needs 16-bit code storage");
  std::mutex mu;
  if (affine(f, scale)) {
    float s;
    affine_params(f, lo, hi, s, res.zero_point);
    res.scale = s;
    res.cancelled = !parallel_chunks(n, kChunk, threads, [&](std::size_t b, std::size_t e) {
      EncodeStats st;
      affine_chunk(f, opt, x, b, e, s, res.zero_point, values, codes16, codes8, st);
      std::lock_guard<std::mutex> lock(mu);
      res.stats += st;
    }, progress);
  } else {
    double s = 1.0;
    if (scale.kind == ScaleChoice::Value) s = scale.value;
    if (scale.kind == ScaleChoice::Amax && res.amax > 0) s = res.amax / f.max_finite;
    res.scale = s;
    res.cancelled = !parallel_chunks(n, kChunk, threads, [&](std::size_t b, std::size_t e) {
      EncodeStats st;
      for (std::size_t i = b; i < e; ++i) {
        const uint32_t rnd = opt.rounding == Rounding::Stochastic ? stochastic_bits(opt.seed, i) : 0u;
        const uint32_t code = encode_ref(f, x[i] / s, opt.rounding, opt.overflow, rnd, &st);
        if (codes16) codes16[i] = static_cast<uint16_t>(code);
        if (codes8) codes8[i] = static_cast<uint8_t>(code);
        if (values) values[i] = static_cast<float>(decode_ref(f, code) * s);
      }
      std::lock_guard<std::mutex> lock(mu);
      res.stats += st;
    }, progress);
  }
  if (values && !res.cancelled) res.sqnr_db = sqnr_db(x, values, n);
  return res;
}

}  // namespace qs
