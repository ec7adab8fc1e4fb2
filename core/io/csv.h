// CSV cells per RFC 4180, for every CSV QuantScope writes (the CLI, the GUI's exports, reports): a cell
// holding a comma, a double quote, a carriage return or a line feed is wrapped in double quotes with its
// quotes doubled; any other cell is written as it is. Tensor names, file paths, run names and scheme
// labels go through csv_field; numbers need not. Control bytes are escaped (csv_is_escaped_control).
//   out << qs::csv_field(file.path()) << ',' << qs::csv_field(tensor.name) << ',' << numel << '\n';
// Exercise: tests/tst_tensorfile.cpp (csvField), tests/cli/cli_contract.cmake (a tensor named a,"b\nc).
#pragma once

#include <string>
#include <string_view>

namespace qs {

inline bool csv_needs_quotes(std::string_view s) { return s.find_first_of(",\"\r\n") != std::string_view::npos; }

// Control bytes other than tab, CR and LF (ESC above all: a crafted tensor name must not drive the
// terminal a CSV is printed to) are written as the four characters \xNN.
inline bool csv_is_escaped_control(unsigned char c) { return (c < 0x20 && c != '\t' && c != '\r' && c != '\n') || c == 0x7f; }

inline std::string csv_field(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  const bool quote = csv_needs_quotes(s);
  if (quote) out += '"';
  for (char c : s) {
    if (csv_is_escaped_control(static_cast<unsigned char>(c))) {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[(static_cast<unsigned char>(c) >> 4) & 15];
      out += hex[static_cast<unsigned char>(c) & 15];
      continue;
    }
    if (c == '"') out += '"';
    out += c;
  }
  if (quote) out += '"';
  return out;
}

}  // namespace qs
