// Vectorized float32 encoders: AVX-512, AVX2 and a generic fallback, chosen at run time, each giving
// codes and values identical to encode_ref/decode_ref. Exercise: `quantscope-cli selftest`,
// tests/tst_encode_simd.cpp (every compiled level this CPU supports).
//
//   qs::EncodeJob job{.x = in, .n = n, .scale = s, .values = out};
//   qs::EncodeStats st = qs::encode_f32(qs::parse_format("e4m3fn"), {}, job);
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "format/format.h"

namespace qs {

enum class SimdLevel { Generic = 0, Avx2 = 1, Avx512 = 2 };
const char* to_string(SimdLevel l);

// Levels compiled into this binary and supported by this CPU, best last.
const std::vector<SimdLevel>& available_simd_levels();
SimdLevel best_simd_level();

// One contiguous piece of work. Element i is y = x[i] / scale; its code is encode(y) and its value
// decode(code) * scale (computed in float32). Any output pointer may be null. Stochastic rounding
// draws stochastic_bits(seed, index0 + i), so results do not depend on how a tensor is split.
struct EncodeJob {
  const float* x = nullptr;
  std::size_t n = 0;
  float scale = 1.0f;          // > 0 and finite
  float* values = nullptr;     // fake-quantized output
  uint8_t* codes8 = nullptr;   // codes of formats with <= 8 bits
  uint16_t* codes16 = nullptr; // codes of any format
  uint64_t index0 = 0;
};

EncodeStats encode_f32(const Format& f, const EncodeOptions& opt, const EncodeJob& job,
                       SimdLevel level = best_simd_level());

// The same contract through encode_ref/decode_ref one element at a time (the oracle).
EncodeStats encode_f32_ref(const Format& f, const EncodeOptions& opt, const EncodeJob& job);

// Parameters the kernels read, derived once per call from a Format (internal).
struct KernelParams {
  int32_t M, emin, bits;
  uint32_t max_bits;        // float32 bits of max_finite
  uint32_t ovf_bits;        // float32 bits of overflow_threshold (saturate counts |y| >= it)
  float max_finite;
  float min_value;          // no_zero formats: the smallest code's value
  uint32_t sign_bit, nan_code, inf_code, max_code_mag, code_mask;
  float overflow_value;     // ieee overflow result magnitude: inf, NaN or max
  uint32_t overflow_code;   // and its code (sign added separately, except fnuz NaN)
  bool saturate, stochastic, is_signed, has_neg_zero, has_nan, has_inf, no_zero, is_int, fixed;
  int32_t rmode;            // rounding when !stochastic: 0 ties to even, 1 ties away, 2 toward zero
  bool nan_signed;          // NaN code takes the input's sign (ieee / fn)
  float scale;
  bool fast_ok;             // the bit-rounding fast path applies (plain float, M >= 1, emin >= -126)
  uint32_t min_normal_bits; // float32 bits of 2^emin
  float magic;              // 2^(emin - M + 23)
  uint64_t seed;
};
KernelParams make_kernel_params(const Format& f, const EncodeOptions& opt, float scale);

// encode_f32 for many short jobs of one format and options (the groups of a block scheme): the kernel
// parameters are derived once, a job only brings its scale. Same codes, values and stats as encode_f32 at
// the same level; run() is const and may be called from several threads.
class BlockEncoder {
 public:
  BlockEncoder(const Format& f, const EncodeOptions& opt, SimdLevel level = best_simd_level());
  EncodeStats run(const EncodeJob& job) const;
  // A run of consecutive groups of `group` elements, group g with scale scales[g] (job.scale unused): the same
  // results as run() per group, in one kernel call where it can (values only, a plain float format, group a
  // power of two of at least 16, n a whole number of groups, every scale usable, below index 2^32); else run()
  // per group.
  EncodeStats run_groups(const EncodeJob& job, const float* scales, std::size_t group) const;
  SimdLevel level() const { return level_; }

 private:
  const Format* f_;
  EncodeOptions opt_;
  SimdLevel level_;
  KernelParams p_{};
  uint32_t key0_ = 0;  // stochastic_key(seed, 0): jobs below index 2^32
};

namespace detail {
// key = stochastic_key(seed, index_hi); the job never crosses a 2^32 index boundary.
EncodeStats encode_f32_generic(const KernelParams& p, const EncodeJob& job, uint32_t key);
EncodeStats encode_f32_avx2(const KernelParams& p, const EncodeJob& job, uint32_t key);
EncodeStats encode_f32_avx512(const KernelParams& p, const EncodeJob& job, uint32_t key);
// Values only, a plain format with p.fast_ok, job.n a multiple of N lanes, every scale usable: element i is
// scaled by scales[i >> shift] (groups of 2^shift >= the level's lanes), not p.scale (BlockEncoder::run_groups).
EncodeStats encode_f32_groups_generic(const KernelParams& p, const EncodeJob& job, uint32_t key, const float* scales, unsigned shift);
EncodeStats encode_f32_groups_avx2(const KernelParams& p, const EncodeJob& job, uint32_t key, const float* scales, unsigned shift);
EncodeStats encode_f32_groups_avx512(const KernelParams& p, const EncodeJob& job, uint32_t key, const float* scales, unsigned shift);
}  // namespace detail

}  // namespace qs
