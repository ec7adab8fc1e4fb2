// The engine's conformance suite: what the formats promise, checked against their definitions rather than
// against the engine itself. One code path for `quantscope-cli selftest --report DIR`, the GUI's
// Help -> Conformance and tests/core/tst_conformance.cpp. Families:
//   decode       every code of every named and sweep format decodes to the value its fields define
//                ((-1)^s 2^(e-bias) (1 + m/2^M), subnormals m 2^(1-bias-M), two's-complement integers,
//                E8M0 2^(e-127)) and the special codes of its convention (ieee / fn / fnuz / none)
//   round-trip   encode(decode(c)) gives back c's value (nearest, saturate) for every non-NaN code
//   ties         every midpoint between neighbouring values goes to the neighbour with the even code
//                (round to nearest, ties to even), and the doubles just beside it to the nearer one
//   specials     NaN and inf inputs and the overflow threshold under saturate and ieee, as documented
//   stochastic   the documented rule (away from lo iff random < floor(F 2^32)) at its boundary, and the
//                up-rate over 20,000 draws within 5 sigma of F
//   simd         every vectorized encoder level equals the scalar reference (run_cpu_selftest)
// The encoder under test is a parameter, so a test can hand in a broken one and see the failing codes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "format/format.h"

namespace qs {

struct ConformanceFailure {
  std::string format;
  uint32_t code = 0;
  double input = 0;
  std::string what;  // one line: "code 0x7e decodes to 448, its definition is 480"
};

struct ConformanceFamily {
  std::string name, description;
  uint64_t checks = 0, failed = 0;
  std::vector<ConformanceFailure> failures;  // the first 20
  bool skipped = false;
  std::string skip_reason;
  bool passed() const { return !skipped && failed == 0; }
};

struct ConformanceReport {
  std::vector<ConformanceFamily> families;
  bool cancelled = false;
  bool passed() const;
  // A Markdown report: build, CPU level, GPU line, then one section per family.
  std::string markdown(const std::string& version, const std::string& cpu, const std::string& gpu) const;
};

using EncodeFn = std::function<uint32_t(const Format&, double x, Rounding, Overflow, uint32_t random)>;

struct ConformanceOptions {
  EncodeFn encode;  // empty: encode_ref
  bool simd = true;  // include the SIMD family (the slowest: every level over every probe)
  // Called between checks with (families done, families); returning false cancels.
  std::function<bool(int, int)> progress;
};

// The definition of a code's value, written from the standards (not from decode_ref).
double decode_definition(const Format& f, uint32_t code);

ConformanceReport run_conformance(const ConformanceOptions& opt = {});

}  // namespace qs
