// An int from the whole of a string: optional '+' or '-', decimal digits, nothing else, no overflow. For the
// numbers inside format and scheme spellings ("e4m3_bias7", "channel:-1", "block:128x128").
//   int axis; if (!qs::parse_int("-1", axis)) throw ...;
#pragma once

#include <charconv>
#include <string_view>

namespace qs {

inline bool parse_int(std::string_view s, int& out) {
  if (s.empty()) return false;
  const char* b = s.data();
  const char* e = s.data() + s.size();
  if (*b == '+') ++b;
  auto [p, ec] = std::from_chars(b, e, out);
  return ec == std::errc() && p == e && b != e;
}

}  // namespace qs
