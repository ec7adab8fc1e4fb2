// Conventions: how named libraries round, overflow and spell specials, as exact presets over QuantScope's
// formats, so that their disagreements can be listed input by input. Float conventions are a rounding, an
// overflow rule and a special-value convention applied through the reference encoder (encode_ref); integer
// conventions add the library's per-tensor scale rule. Sources (library, version, function) in
// docs/conventions.md. Exercise: `quantscope-cli compare-conventions`, tests/core/tst_convention.cpp.
//
//   const qs::Format f = qs::parse_format("e4m3fn");
//   qs::ConventionCode a = qs::encode_convention(f, qs::find_convention("ml_dtypes"), 465.0f);  // NaN (0x7f)
//   qs::ConventionCode b = qs::encode_convention(f, qs::find_convention("satfinite"), 465.0f);  // 448 (0x7e)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "format/format.h"

namespace qs {

// What a NaN input becomes: the format's NaN code (with the input's sign where the format signs NaN), torch's
// e5m2 spelling (0x7f | sign: all mantissa bits set, where ml_dtypes writes 0x7e; fnuz formats keep their one
// NaN code 0x80), or ±max (QPyTorch, whose
// exponent clip treats a NaN like a large number).
// MlDtypes: as Format, except in formats without NaN (fp6, fp4), where ml_dtypes 0.5 writes the zero of the
// opposite sign (+NaN -> -0, -NaN -> +0; measured on the GPU machine, tests/oracle/check_conventions.py).
enum class NanRule : uint8_t { Format, AllOnes, Max, MlDtypes };

// Integer conventions: the per-tensor scale rule and the code range.
enum class IntRule : uint8_t {
  None,           // a float convention
  TorchQint8,     // torch.ao MinMaxObserver per_tensor_symmetric qint8 + quantize_per_tensor:
                  // s = max(amax / 127.5, 2^-23), q = clamp(nearbyint(x * (1 / s)), -128, 127)
  Narrow127,      // TensorRT / LLM.int8 / QuantScope's int8 schemes: s = amax / 127, q = clamp(rint(x / s), -127, 127)
  TorchAffineU8,  // torch.ao MinMaxObserver per_tensor_affine quint8: lo = min(x, 0), hi = max(x, 0),
                  // s = max((hi - lo) / 255, 2^-23), z = clamp(-rint(lo / s), 0, 255),
                  // q = clamp(nearbyint(x * (1 / s)) + z, 0, 255)
  TightAffineU8,  // min/max affine without 0 forced into the range: s = (max - min) / 255,
                  // q = clamp(rint((x - min) / s), 0, 255), value = min + q * s
};

struct Convention {
  std::string name;    // what --conventions takes
  std::string title;   // one line for tables and the GUI
  std::string source;  // library, version, function
  IntRule int_rule = IntRule::None;
  Rounding rounding = Rounding::Nearest;
  Overflow overflow = Overflow::Ieee;
  bool all_finite = false;            // the format's fields with every code finite (QPyTorch: e4m3 reaches 480)
  bool subnormal_prerounding = false; // QPyTorch: |x| < 2^emin first becomes fl32(x ± 2^emin) ∓ 2^emin
  NanRule nan = NanRule::Format;
  bool inf_kept = false;              // microxcaling: ±inf inputs stay ±inf (the format's inf or NaN code; ±max
                                      // in formats with neither)
  bool is_int() const { return int_rule != IntRule::None; }
};

// Every preset, floats first.
const std::vector<Convention>& conventions();
// By name; throws FormatError listing the names.
const Convention& find_convention(std::string_view name);
// The names for --help, comma separated.
std::string convention_names();

// The format a float convention encodes into: f itself, or f's fields with every code finite (all_finite).
Format convention_format(const Format& f, const Convention& c);

struct ConventionCode {
  uint32_t code = 0;
  double value = 0;  // decoded (times the scale, for integer conventions)
};

// A float convention on one input (f must be a float format).
ConventionCode encode_convention(const Format& f, const Convention& c, float x);

// An integer convention's parameters for a tensor (its finite values) and its encoder.
struct IntParams {
  float scale = 1;
  int32_t zero_point = 0;
  float offset = 0;  // TightAffineU8: the tensor's minimum
  int32_t qmin = 0, qmax = 0;
};
IntParams int_params(const Convention& c, const float* x, std::size_t n);
ConventionCode encode_int(const Convention& c, const IntParams& p, float x);

// Inputs where float conventions can part: every value of the format (and of its all-finite variant), the
// midpoints between neighbours, the floats beside each, the overflow thresholds of every rounding, the largest
// float, ±inf and NaN, both signs. Sorted by value (NaN last).
std::vector<float> convention_probes(const Format& f);

// A comparison of conventions over inputs (a tensor, or the probes when x is null for a float format; integer
// conventions on null x take a fixed ramp of 2,001 values in [-1, 1]).
struct ConventionRange {
  float lo = 0, hi = 0;  // the first and last input of a run of consecutive inputs that disagree
  std::size_t count = 0;
};
struct ConventionStats {
  std::size_t differs_from_first = 0;  // inputs whose code or value differs from the first convention's
  double sqnr_db = 0;                  // over the finite inputs with a finite output (inf when exact)
  std::size_t nan_out = 0;             // finite inputs that came out NaN
};
struct ConventionComparison {
  Format format;
  std::vector<const Convention*> conventions;
  std::vector<float> inputs;                        // in the order compared (probes: ascending)
  std::vector<std::vector<ConventionCode>> codes;   // [convention][input]
  std::vector<IntParams> params;                    // integer conventions: per convention
  std::vector<uint8_t> differ;                      // per input: some convention disagrees
  std::size_t differing = 0;
  std::vector<ConventionRange> ranges;              // runs of disagreeing inputs (probes: value ranges)
  std::vector<ConventionStats> stats;               // per convention
};
// Throws FormatError for an unknown name, fewer than two conventions, or conventions of the wrong kind for
// the format (float conventions need a float format; integer ones int8 / uint8 as their range says).
ConventionComparison compare_conventions(const Format& f, const std::vector<std::string>& names,
                                         const float* x = nullptr, std::size_t n = 0);

}  // namespace qs
