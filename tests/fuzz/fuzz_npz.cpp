// libFuzzer entry point for the .npz reader (core/io/npz_file.cpp: libzip + the .npy header parser): opens each input as a
// file and reads every tensor; a qs::IoError is the expected answer to bad input, anything else
// (a crash, a sanitizer report, another exception, a huge allocation) is a finding.
// Build and run: tests/fuzz/README.md. Seeds: tests/fuzz/corpus/npz/.
#include "io/tensor_file.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

namespace {

// The readers take a path (they memory-map it), so each input goes to a file in a private folder.
const std::string& inputPath() {
  static const std::string path = [] {
    const char* base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
    std::string tmpl = std::string(base) + "/fuzz_npz.XXXXXX";
    if (!::mkdtemp(tmpl.data())) std::abort();
    static std::string dir = tmpl;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    });
    return dir + "/input.npz";
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = inputPath();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  try {
    auto file = qs::open_npz_file(path);
    for (std::size_t i = 0; i < file->tensors().size(); ++i) {
      const qs::TensorInfo& t = file->tensors()[i];
      const qs::TensorBytes b = file->read(i);
      if (b.size != t.nbytes() || (b.size > 0 && !b.data)) std::abort();
      // Touch every byte so that AddressSanitizer sees any view past the data, and convert a prefix
      // so that the dtype conversions run on hostile bytes too.
      volatile uint8_t sum = 0;
      for (std::size_t k = 0; k < b.size; ++k) sum = uint8_t(sum + b.data[k]);
      float out[64];
      const std::size_t n = t.numel() < 64 ? t.numel() : 64;
      qs::convert_to_f32(t.dtype, b.data, n, out);
    }
  } catch (const qs::IoError&) {
  }
  return 0;
}
