// libFuzzer entry point for the PyTorch checkpoint reader (core/io/torch_file.cpp): each input is a whole
// torch.save zip, opened and every tensor read; a qs::IoError is the expected answer to bad input, anything
// else (a crash, a sanitizer report, another exception, a huge allocation) is a finding.
// Build and run: tests/fuzz/README.md. Seeds: tests/fuzz/corpus/torch/.
#include "fuzz_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return qs_fuzz::run(data, size, "input.pt", [](const std::string& p) { return qs::open_torch_file(p); });
}
