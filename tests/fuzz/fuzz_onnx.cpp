// libFuzzer entry point for the .onnx reader (core/io/onnx_file.cpp): opens each input as a model and
// reads every tensor; a qs::IoError is the expected answer to bad input, anything else (a crash, a
// sanitizer report, another exception, a huge allocation) is a finding.
// Build and run: tests/fuzz/README.md. Seeds: tests/fuzz/corpus/onnx/, written by
// `QS_ONNX_FUZZ_CORPUS=tests/fuzz/corpus/onnx build/tests/tst_onnx writeFuzzCorpus`.
#include "fuzz_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return qs_fuzz::run(data, size, "model.onnx", [](const std::string& p) { return qs::open_onnx_file(p); });
}
