// libFuzzer entry point for the format-spec and scheme parsers (core/format/format.cpp parse_format,
// core/quant/scheme.cpp parse_scheme): each input line is parsed as both. A qs::FormatError is the expected
// answer to a bad spec; for a spec that parses, every code (up to 4096 of them) must decode, and every
// value within ±max_finite must encode back to the same value (±0 and duplicate codes aside).
// Anything else (a crash, a sanitizer report, another exception) is a finding.
// Build and run: tests/fuzz/README.md. Seeds: tests/fuzz/corpus/spec/.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "format/format.h"
#include "quant/scheme.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;  // specs are short; long inputs only slow the search down
  const std::string all(reinterpret_cast<const char*>(data), size);
  std::size_t pos = 0;
  while (pos <= all.size()) {
    const std::size_t nl = all.find('\n', pos);
    const std::string line = all.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? all.size() + 1 : nl + 1;
    try {
      const qs::Format f = qs::parse_format(line);
      const uint32_t n = std::min<uint32_t>(f.code_count(), 4096);
      for (uint32_t c = 0; c < n; ++c) {
        const double v = qs::decode_ref(f, c);
        // Only values within ±max_finite are the format's range: int8's code -128 lies outside the symmetric
        // ±127 that saturation keeps (found by this target: the check, not the encoder, was wrong).
        if (!std::isfinite(v) || std::fabs(v) > f.max_finite) continue;
        const uint32_t back = qs::encode_ref(f, v, qs::Rounding::Nearest, qs::Overflow::Saturate, 0);
        const double w = qs::decode_ref(f, back);
        if (!(w == v)) std::abort();  // a finite value of the format must round-trip exactly
      }
    } catch (const qs::FormatError&) {
    }
    try {
      (void)qs::parse_scheme(line);
    } catch (const qs::FormatError&) {
    }
  }
  return 0;
}
