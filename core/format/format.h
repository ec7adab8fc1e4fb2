// Number-format descriptors, the named-format table, the custom spec parser and the scalar
// reference encoder/decoder (`_ref`) that every vectorized and CUDA path is checked against.
// Exercise: `quantscope-cli formats`, `quantscope-cli grid --format e4m3fn`, tests/tst_format.cpp.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace qs {

// Thrown for an invalid format spec or option; what() names the problem in one line.
struct FormatError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Nearest: ties to even (IEEE's roundTiesToEven). NearestAway: ties away from zero (microxcaling's
// "nearest", QPyTorch). TowardZero: truncation. Stochastic: see encode_ref. docs/conventions.md lists
// which library does what.
enum class Rounding { Nearest, Stochastic, NearestAway, TowardZero };
inline constexpr Rounding kAllRoundings[] = {Rounding::Nearest, Rounding::Stochastic, Rounding::NearestAway,
                                             Rounding::TowardZero};
enum class Overflow { Saturate, Ieee };
// ieee: top exponent reserved (M=0 -> inf, M!=0 -> NaN). fn: no inf, NaN only S.11..1.
// fnuz: no inf, no -0, NaN = 1.00..0. none: every code finite.
enum class Specials { Ieee, Fn, Fnuz, None };
enum class FormatKind { Float, Int };
enum class ValueClass { Zero, Subnormal, Normal, Inf, Nan };

const char* to_string(Rounding r);
const char* to_string(Overflow o);
const char* to_string(Specials s);
const char* to_string(ValueClass c);
// "nearest" | "stochastic" | "nearest-away" | "toward-zero"; throws FormatError
Rounding parse_rounding(std::string_view s);
Overflow parse_overflow(std::string_view s);  // "saturate" | "ieee"; throws FormatError

// A format: a sign bit (unless unsigned), E exponent bits and M mantissa bits.
// Int formats are stored as E = 0 fixed-point grids with quantum 1 (int8 = +-m, m <= 127) and use
// two's-complement codes; their table columns report exponent_bits 0 and bias 0.
struct Format {
  std::string name;        // table name, or the canonical custom spec
  FormatKind kind = FormatKind::Float;
  int bits = 8;            // total bits, <= 16
  int ebits = 4;           // E
  int mbits = 3;           // M
  int bias = 7;            // exponent bias (for E = 0: value = m * 2^(1 - bias - M))
  bool is_signed = true;
  Specials specials = Specials::Fn;
  bool no_zero = false;    // e8m0fnu: code 0 is 2^-bias, no zero, no subnormals

  // Derived facts (filled by finalize(); never set by hand).
  int emin = 0;            // unbiased exponent of the smallest normal binade (or of the fixed grid)
  uint32_t max_code_mag = 0;  // largest magnitude code (sign bit excluded) that is finite
  uint32_t nan_code = 0;      // canonical NaN code (positive sign), valid when has_nan
  uint32_t inf_code = 0;      // +inf code, valid when has_inf
  bool has_inf = false, has_nan = false, has_negative_zero = false;
  double max_finite = 0, min_normal = 0, min_subnormal = 0;
  // Smallest |x| that round-to-nearest would take beyond max_finite (464 rounds to 448 in e4m3fn,
  // so its threshold is the float after 464). Overflow counts use it in every mode.
  double overflow_threshold = 0;

  uint32_t code_count() const { return 1u << bits; }
  uint32_t sign_bit() const { return is_signed ? 1u << (bits - 1) : 0u; }
  bool is_int() const { return kind == FormatKind::Int; }
  bool operator==(const Format& o) const;
};

// The named formats of docs/DESIGN.md (Named formats), in display order.
const std::vector<Format>& named_formats();
// The five-format 8-bit sweep used by the training studies.
const std::vector<std::string>& sweep_8bit_specs();

// Parses a table name ("e4m3fn", "int8") or a custom spec
// "e<E>m<M>[:bias=<B>][:specials=ieee|fn|fnuz|none][:unsigned]".
// Throws FormatError naming what is wrong (e.g. "e9m9: 19 bits, at most 16 allowed").
Format parse_format(std::string_view spec);

// Exact value of a code (NaN for NaN codes, +-inf for inf codes). code < 2^bits.
double decode_ref(const Format& f, uint32_t code);
ValueClass classify_ref(const Format& f, uint32_t code);

// Per-call statistics of an encode: overflow (|x| at or beyond overflow_threshold, i.e. clipped
// or sent to inf/NaN by range; under ieee + stochastic, the inputs that actually went beyond max;
// infinite inputs count unless the format keeps them as inf under `ieee`; negative inputs of
// unsigned formats count too), underflow (non-zero finite input that became zero), nan (NaN inputs).
struct EncodeStats {
  uint64_t overflow = 0, underflow = 0, nan = 0;
  EncodeStats& operator+=(const EncodeStats& o) {
    overflow += o.overflow; underflow += o.underflow; nan += o.nan;
    return *this;
  }
};

struct EncodeOptions {
  Rounding rounding = Rounding::Nearest;
  Overflow overflow = Overflow::Saturate;
  uint64_t seed = 0;  // stochastic rounding: key of the counter-based generator
};

// Reference encoder, decided on the exact (double) value x. `random` is the 32-bit uniform number
// for this element (see rng.h: stochastic_bits(seed, index)); ignored for nearest rounding.
// Stochastic rule: with F = (|x| - lo) / (hi - lo), round away from lo iff random < floor(F * 2^32).
uint32_t encode_ref(const Format& f, double x, Rounding r, Overflow o, uint32_t random,
                    EncodeStats* stats = nullptr);

// Every code in order, with value and class: the rows of `quantscope-cli grid`.
struct GridEntry {
  uint32_t code;
  double value;
  ValueClass cls;
};
std::vector<GridEntry> grid(const Format& f);
// Distinct non-NaN values (+0 and -0 count once; +-inf count), sorted ascending.
std::vector<double> distinct_values(const Format& f);

// decode_ref(f, encode_ref(f, x, Nearest, Saturate)) for a finite x >= 0, without the table walk:
// round to f's precision at x's binade (ties to even, decided exactly in double) and clamp to max
// finite. For float formats with at least one mantissa bit and a zero (not E8M0-style); others take
// the reference path. Used per block for two-level (NVFP4) block scales. Exercise: tst_format.
double round_nearest_saturate(const Format& f, double x);

// The smallest |x| that rounding `r` takes beyond max_finite: overflow_threshold for Nearest (and
// Stochastic, whose overflow counts use it), the midpoint above max for NearestAway, and the value one
// quantum above max for TowardZero (inf in float32 for E8M0's 2^128). Saturating encoders count an
// overflow at or beyond it.
double overflow_threshold(const Format& f, Rounding r);

}  // namespace qs
