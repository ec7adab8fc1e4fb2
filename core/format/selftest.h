// Cross-check of every compiled vectorized encoder against encode_ref: all codes of every named
// format and of the 8-bit sweep, their midpoints and float32 neighbours, specials and seeded random
// inputs, for both roundings, both overflow modes, with and without a scale.
// Exercise: `quantscope-cli selftest`, tests/tst_encode_simd.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "format/encode_simd.h"
#include "format/format.h"

namespace qs {

// Inputs that probe a format: every finite value with both signs, every midpoint between
// neighbours and the float32 numbers next to each, zeros, NaN, +-inf, float32 extremes, values
// just beyond max, and `n_random` seeded random bit patterns and magnitudes.
std::vector<float> probe_inputs(const Format& f, uint64_t seed, std::size_t n_random);

struct SelftestCase {
  std::string name;   // e.g. "e4m3fn/stochastic/ieee/scaled/avx512"
  bool passed = false;
  std::string detail; // first mismatch, when failed
};

// Runs one case: level vs encode_f32_ref on the inputs; codes, values (bitwise) and stats.
SelftestCase check_level_against_ref(const Format& f, const EncodeOptions& opt, float scale,
                                     SimdLevel level, const std::vector<float>& inputs);

// The scalar bit-level encoder (encode_bits.h, the algorithm of the CUDA kernels) vs encode_ref.
SelftestCase check_bits_against_ref(const Format& f, const EncodeOptions& opt, float scale,
                                    const std::vector<float>& inputs);

// All formats x roundings x overflow modes x {unscaled, scaled} x available levels.
// `report` is called after each case (for streaming output).
std::vector<SelftestCase> run_cpu_selftest(const std::function<void(const SelftestCase&)>& report = {});

}  // namespace qs
