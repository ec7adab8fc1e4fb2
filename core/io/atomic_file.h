// Atomic file output: write to a temporary file next to the target, then rename over it, so a
// crash or an error never leaves a half-written file. Exercise: tests/tst_npy.cpp.
//
//   qs::check_writable("out/y.npy");          // fail before any work (throws qs::IoError)
//   qs::write_file_atomic("out/y.npy", bytes);
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qs {

// Throws IoError when `path` cannot be created (missing folder, no permission, is a directory).
// Creates and removes a probe file in the target folder; leaves nothing behind.
void check_writable(const std::string& path);

void write_file_atomic(const std::string& path, const void* data, std::size_t size);
inline void write_file_atomic(const std::string& path, std::string_view text) {
  write_file_atomic(path, text.data(), text.size());
}
inline void write_file_atomic(const std::string& path, const std::vector<uint8_t>& bytes) {
  write_file_atomic(path, bytes.data(), bytes.size());
}

// Reads a whole file; throws IoError naming the path when it cannot be read.
std::vector<uint8_t> read_file(const std::string& path);

}  // namespace qs
