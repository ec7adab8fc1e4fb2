// Runtime dispatch of the vectorized encoders and the element-wise reference path they are
// checked against. Exercise: tests/tst_encode_simd.cpp, `quantscope-cli selftest`.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "format/encode_simd.h"
#include "format/rng.h"

namespace qs {

const char* to_string(SimdLevel l) {
  switch (l) {
    case SimdLevel::Generic: return "generic";
    case SimdLevel::Avx2: return "avx2";
    case SimdLevel::Avx512: return "avx512";
  }
  return "?";
}

const std::vector<SimdLevel>& available_simd_levels() {
  static const std::vector<SimdLevel> levels = [] {
    std::vector<SimdLevel> v{SimdLevel::Generic};
#if defined(QS_HAVE_X86_SIMD)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) v.push_back(SimdLevel::Avx2);
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
      v.push_back(SimdLevel::Avx512);
#endif
    // QS_SIMD_LEVEL=generic|avx2|avx512 caps the list (read once, at the first call): an AVX-512 CPU then
    // measures and tests what an AVX2-only CPU runs. A level the CPU lacks caps nothing; an unknown name is
    // reported once on stderr and ignored.
    if (const char* cap = std::getenv("QS_SIMD_LEVEL"); cap && *cap) {
      int want = -1;
      for (SimdLevel l : {SimdLevel::Generic, SimdLevel::Avx2, SimdLevel::Avx512})
        if (std::strcmp(cap, to_string(l)) == 0) want = static_cast<int>(l);
      if (want < 0)
        std::fprintf(stderr, "quantscope: QS_SIMD_LEVEL=%s is not generic, avx2 or avx512; ignored\n", cap);
      else
        while (v.size() > 1 && static_cast<int>(v.back()) > want) v.pop_back();
    }
    return v;
  }();
  return levels;
}

SimdLevel best_simd_level() { return available_simd_levels().back(); }

KernelParams make_kernel_params(const Format& f, const EncodeOptions& opt, float scale) {
  if (!(scale > 0.0f) || !std::isfinite(scale))
    throw FormatError("scale must be positive and finite, got " + std::to_string(scale));
  KernelParams p{};
  p.M = f.mbits;
  p.emin = f.emin;
  p.bits = f.bits;
  p.max_finite = static_cast<float>(f.max_finite);
  std::memcpy(&p.max_bits, &p.max_finite, sizeof p.max_bits);
  const float thr = static_cast<float>(overflow_threshold(f, opt.rounding));
  std::memcpy(&p.ovf_bits, &thr, sizeof p.ovf_bits);
  p.min_value = static_cast<float>(decode_ref(f, 0));
  p.sign_bit = f.sign_bit();
  p.nan_code = f.nan_code;
  p.inf_code = f.inf_code;
  p.max_code_mag = f.max_code_mag;
  p.code_mask = (1u << f.bits) - 1u;
  if (f.has_inf) {
    p.overflow_code = f.inf_code;
    p.overflow_value = INFINITY;
  } else if (f.has_nan) {
    p.overflow_code = f.nan_code;
    p.overflow_value = NAN;
  } else {
    p.overflow_code = f.max_code_mag;
    p.overflow_value = p.max_finite;
  }
  p.saturate = opt.overflow == Overflow::Saturate;
  p.stochastic = opt.rounding == Rounding::Stochastic;
  p.rmode = opt.rounding == Rounding::NearestAway ? 1 : opt.rounding == Rounding::TowardZero ? 2 : 0;
  p.is_signed = f.is_signed;
  p.has_neg_zero = f.has_negative_zero;
  p.has_nan = f.has_nan;
  p.has_inf = f.has_inf;
  p.no_zero = f.no_zero;
  p.is_int = f.is_int();
  p.fixed = f.ebits == 0;
  p.nan_signed = f.is_signed && f.specials != Specials::Fnuz;
  p.scale = scale;
  p.fast_ok = f.is_signed && f.ebits > 0 && !f.no_zero && !f.is_int() && f.mbits >= 1 && f.emin >= -126;
  if (p.fast_ok) {
    const float mn = std::ldexp(1.0f, f.emin);
    std::memcpy(&p.min_normal_bits, &mn, sizeof mn);
    p.magic = std::ldexp(1.0f, f.emin - f.mbits + 23);
  }
  p.seed = opt.seed;
  return p;
}

namespace {
void check_job(const Format& f, const EncodeJob& job) {
  if (job.codes8 && f.bits > 8)
    throw FormatError(f.name + " has " + std::to_string(f.bits) + "-bit codes; use 16-bit code storage");
  if (job.n && !job.x) throw std::invalid_argument("encode_f32: null input");
}
}  // namespace

EncodeStats encode_f32(const Format& f, const EncodeOptions& opt, const EncodeJob& job, SimdLevel level) {
  check_job(f, job);
  const KernelParams p = make_kernel_params(f, opt, job.scale);
  EncodeStats total;
  // Split at 2^32 index boundaries: the kernels keep the low index half in 32-bit lanes.
  std::size_t done = 0;
  while (done < job.n) {
    const uint64_t idx = job.index0 + done;
    const uint64_t to_boundary = (uint64_t(1) << 32) - (idx & 0xffffffffu);
    const std::size_t len = static_cast<std::size_t>(std::min<uint64_t>(job.n - done, to_boundary));
    EncodeJob part = job;
    part.x = job.x + done;
    part.n = len;
    part.index0 = idx;
    if (job.values) part.values = job.values + done;
    if (job.codes8) part.codes8 = job.codes8 + done;
    if (job.codes16) part.codes16 = job.codes16 + done;
    const uint32_t key = stochastic_key(opt.seed, static_cast<uint32_t>(idx >> 32));
    switch (level) {
#if defined(QS_HAVE_X86_SIMD)
      case SimdLevel::Avx512: total += detail::encode_f32_avx512(p, part, key); break;
      case SimdLevel::Avx2: total += detail::encode_f32_avx2(p, part, key); break;
#endif
      default: total += detail::encode_f32_generic(p, part, key); break;
    }
    done += len;
  }
  return total;
}

BlockEncoder::BlockEncoder(const Format& f, const EncodeOptions& opt, SimdLevel level)
    : f_(&f), opt_(opt), level_(level), p_(make_kernel_params(f, opt, 1.0f)), key0_(stochastic_key(opt.seed, 0)) {}

EncodeStats BlockEncoder::run(const EncodeJob& job) const {
  // Anything but a plain job below index 2^32 with a usable scale takes encode_f32 (which checks and throws).
  if (job.n == 0 || job.codes8 || !job.x || !(job.scale > 0.0f) || !std::isfinite(job.scale) ||
      (job.index0 >> 32) != ((job.index0 + job.n - 1) >> 32) || (job.index0 >> 32) != 0)
    return encode_f32(*f_, opt_, job, level_);
  KernelParams p = p_;
  p.scale = job.scale;
  switch (level_) {
#if defined(QS_HAVE_X86_SIMD)
    case SimdLevel::Avx512: return detail::encode_f32_avx512(p, job, key0_);
    case SimdLevel::Avx2: return detail::encode_f32_avx2(p, job, key0_);
#endif
    default: return detail::encode_f32_generic(p, job, key0_);
  }
}

EncodeStats BlockEncoder::run_groups(const EncodeJob& job, const float* scales, std::size_t group) const {
  const bool plain = p_.is_signed && !p_.fixed && !p_.no_zero && !p_.is_int;
  bool fast = plain && p_.fast_ok && job.values && !job.codes8 && !job.codes16 && job.x && group >= 16 &&
              (group & (group - 1)) == 0 && job.n % group == 0 && (job.index0 >> 32) == 0 &&
              ((job.index0 + job.n) >> 32) == 0;
  for (std::size_t g = 0; fast && g < job.n / group; ++g) fast = scales[g] > 0.0f && scales[g] <= FLT_MAX;
  if (!fast || job.n == 0) {
    EncodeStats st;
    for (std::size_t b = 0, g = 0; b < job.n; b += group, ++g) {
      EncodeJob j = job;
      j.x = job.x + b;
      j.n = std::min(group, job.n - b);
      j.scale = scales[g];
      j.index0 = job.index0 + b;
      if (job.values) j.values = job.values + b;
      if (job.codes8) j.codes8 = job.codes8 + b;
      if (job.codes16) j.codes16 = job.codes16 + b;
      st += run(j);
    }
    return st;
  }
  const unsigned shift = unsigned(__builtin_ctzll(group));
  switch (level_) {
#if defined(QS_HAVE_X86_SIMD)
    case SimdLevel::Avx512: return detail::encode_f32_groups_avx512(p_, job, key0_, scales, shift);
    case SimdLevel::Avx2: return detail::encode_f32_groups_avx2(p_, job, key0_, scales, shift);
#endif
    default: return detail::encode_f32_groups_generic(p_, job, key0_, scales, shift);
  }
}

EncodeStats encode_f32_ref(const Format& f, const EncodeOptions& opt, const EncodeJob& job) {
  check_job(f, job);
  (void)make_kernel_params(f, opt, job.scale);  // same validation as the fast path
  EncodeStats st;
  for (std::size_t i = 0; i < job.n; ++i) {
    const float y = job.scale != 1.0f ? job.x[i] / job.scale : job.x[i];
    const uint32_t rnd = opt.rounding == Rounding::Stochastic ? stochastic_bits(opt.seed, job.index0 + i) : 0u;
    const uint32_t code = encode_ref(f, y, opt.rounding, opt.overflow, rnd, &st);
    if (job.codes8) job.codes8[i] = static_cast<uint8_t>(code);
    if (job.codes16) job.codes16[i] = static_cast<uint16_t>(code);
    if (job.values) {
      const float v = static_cast<float>(decode_ref(f, code));
      job.values[i] = job.scale != 1.0f ? v * job.scale : v;
    }
  }
  return st;
}

}  // namespace qs
