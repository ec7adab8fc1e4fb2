// Shared body of the reader fuzz targets (fuzz_npy/npz/safetensors/onnx): each input is written to a
// file in a private folder (the readers take paths and memory-map them), opened, and every tensor read
// and converted. A qs::IoError is the expected answer to bad input; anything else (a crash, a
// sanitizer report, another exception, a huge allocation) is a finding. Build and run: README.md.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "io/tensor_file.h"

namespace qs_fuzz {

// <private folder>/<file_name>; the folder holds nothing else, so an ONNX external-data location in
// an input can reach only the input itself, never other files.
inline const std::string& input_path(const char* file_name) {
  static const std::string path = [file_name] {
    const char* base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
    std::string tmpl = std::string(base) + "/qs_fuzz.XXXXXX";
    if (!::mkdtemp(tmpl.data())) std::abort();
    static std::string dir = tmpl;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    });
    return dir + "/" + file_name;
  }();
  return path;
}

template <typename Open>
int run(const uint8_t* data, size_t size, const char* file_name, Open open) {
  const std::string& path = input_path(file_name);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  try {
    std::unique_ptr<qs::TensorFile> file = open(path);
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
      // Readers that read a tensor in parts (analyze_file's threads do): the parts must be the whole read.
      if (file->reads_f32_in_parts() && t.numel() <= 4096) {
        std::vector<float> whole(t.numel()), parts(t.numel());
        file->read_f32(i, whole.data());
        for (std::size_t p = 0; p < t.numel(); p += 24)
          file->read_f32_part(i, p, t.numel() - p < 24 ? t.numel() - p : 24, parts.data() + p);
        if (t.numel() && std::memcmp(whole.data(), parts.data(), t.numel() * sizeof(float)) != 0) std::abort();
      }
    }
  } catch (const qs::IoError&) {
  }
  return 0;
}

}  // namespace qs_fuzz
