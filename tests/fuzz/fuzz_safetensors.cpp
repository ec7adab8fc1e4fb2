// libFuzzer entry point for the .safetensors reader (core/io/safetensors_file.cpp): opens each input as a
// file and reads every tensor; a qs::IoError is the expected answer to bad input, anything else
// (a crash, a sanitizer report, another exception, a huge allocation) is a finding.
// Build and run: tests/fuzz/README.md. Seeds: tests/fuzz/corpus/safetensors/.
#include "fuzz_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return qs_fuzz::run(data, size, "input.safetensors", [](const std::string& p) { return qs::open_safetensors_file(p); });
}
