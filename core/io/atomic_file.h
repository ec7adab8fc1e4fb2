// Atomic file output: write to a temporary file next to the target, then rename over it, so a
// crash or an error never leaves a half-written file. Exercise: tests/tst_npy.cpp, tests/cli/cli_hostile.cmake.
//
// What "the target" is (write_file_atomic and check_writable agree on it):
//  - a regular file or a new name: replaced atomically as above;
//  - a symlink: the file it points to is replaced, never the link (users link outputs into place,
//    `latest.csv -> run42.csv`, and expect the link to keep pointing there);
//  - a character device, FIFO or socket (/dev/null, /dev/stdout on a pipe, a named pipe): written in
//    place, as a shell's `>` would; renaming a file over it would replace a device node for the whole
//    machine when run as root;
//  - a block device or a directory: refused.
// Temp files are registered with TempFileGuard, so SIGINT/SIGTERM/SIGHUP remove them too.
//
//   qs::check_writable("out/y.npy");          // fail before any work (throws qs::IoError)
//   qs::write_file_atomic("out/y.npy", bytes);
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
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

// Reads a whole file; throws IoError naming the path when it cannot be read. At most `max_bytes`
// (a stream such as /dev/zero or a FIFO has no size to check first): more is an error naming the limit.
std::vector<uint8_t> read_file(const std::string& path, std::size_t max_bytes = std::size_t(1) << 36);

// The first min(max_bytes, file size) bytes of a regular file, and the file's size in *file_size.
std::vector<uint8_t> read_file_prefix(const std::string& path, std::size_t max_bytes, uint64_t* file_size);

// Removes a file on scope exit (unless release()d) and on SIGINT, SIGTERM and SIGHUP: for temp files
// that must not outlive an error, a Ctrl-C or a kill. The signal handler unlinks every registered path
// (async-signal-safe), then hands the signal to the handler that was there before (or the default).
class TempFileGuard {
 public:
  explicit TempFileGuard(std::string path);
  ~TempFileGuard();
  TempFileGuard(const TempFileGuard&) = delete;
  TempFileGuard& operator=(const TempFileGuard&) = delete;
  const std::string& path() const { return path_; }
  void release();  // keep the file (it was renamed into place)
 private:
  std::string path_;
  int slot_ = -1;
};

// Refuses outputs that are the same file as an input or as another output (st_dev/st_ino for files
// that exist, the resolved path for new ones): `--csv model.npy` must not replace the model.
// `outputs` and `inputs` are (flag, path) pairs; empty paths are ignored. Throws IoError naming both flags.
void check_distinct_files(const std::vector<std::pair<std::string, std::string>>& outputs,
                          const std::vector<std::pair<std::string, std::string>>& inputs);

}  // namespace qs
