// libFuzzer entry point for the .npz reader (core/io/npz_file.cpp: libzip + the .npy header parser): opens each input as a
// file and reads every tensor; a qs::IoError is the expected answer to bad input, anything else
// (a crash, a sanitizer report, another exception, a huge allocation) is a finding.
// Build and run: tests/fuzz/README.md. Seeds: tests/fuzz/corpus/npz/.
#include "fuzz_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return qs_fuzz::run(data, size, "input.npz", [](const std::string& p) { return qs::open_npz_file(p); });
}
