// Numbers as text for test messages and row names: g17 (exact, "%.17g") and g6 (QTest's "%1" of a double,
// six significant digits), shared by the engine suites converted from Qt Test.
#pragma once

#include <cstdio>
#include <string>

inline std::string g17(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

inline std::string g6(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
