// libFuzzer entry point for the restricted unpickler (core/io/pickle_min.cpp): the input is data.pkl itself.
// A qs::IoError is the expected answer to bad input; a crash, a sanitizer report, another exception, deep
// recursion or a huge allocation is a finding. Seeds: tests/fuzz/corpus/pickle/.
#include <cstdint>
#include <cstdlib>
#include <exception>

#include "io/pickle_min.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    qs::pickle::load(data, size, "data.pkl");
  } catch (const qs::IoError&) {
  } catch (const std::exception&) {
    std::abort();  // anything but IoError is a finding
  }
  return 0;
}
