// One-line, terminal-safe text for messages that quote a file's own bytes (tensor names, zip members,
// JSON keys, header text): control bytes (and, with ascii_only, every byte >= 0x80) become the four
// characters \xNN, and text longer than max_len is cut with "...". Exercise: tests/cli/cli_hostile.cmake.
//   throw qs::IoError(path + ": tensor '" + qs::printable(name) + "': shape is negative");
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace qs {

inline std::string printable(std::string_view s, bool ascii_only = false, std::size_t max_len = 120) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < s.size() && i < max_len; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f || (ascii_only && c >= 0x80)) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > max_len) out += "...";
  return out;
}

}  // namespace qs
