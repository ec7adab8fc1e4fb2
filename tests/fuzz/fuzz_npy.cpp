// libFuzzer entry point for the .npy reader (core/io/npy_file.cpp, core/io/npy.cpp): opens each input as a
// file and reads every tensor; a qs::IoError is the expected answer to bad input, anything else
// (a crash, a sanitizer report, another exception, a huge allocation) is a finding.
// Build and run: tests/fuzz/README.md. Seeds: tests/fuzz/corpus/npy/.
#include "fuzz_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return qs_fuzz::run(data, size, "input.npy", [](const std::string& p) { return qs::open_npy_file(p); });
}
