// libFuzzer entry point for the GGUF reader (core/io/gguf_file.cpp): opens each input as a file and reads
// every tensor (dequantizing the block types); a qs::IoError is the expected answer to bad input, anything
// else (a crash, a sanitizer report, another exception, a huge allocation) is a finding.
// Build and run: tests/fuzz/README.md. Seeds: tests/fuzz/corpus/gguf/.
#include "fuzz_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return qs_fuzz::run(data, size, "input.gguf", [](const std::string& p) { return qs::open_gguf_file(p); });
}
