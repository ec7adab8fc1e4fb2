// Atomic file output (temp file in the target's folder, fsync, rename) and whole-file reads, POSIX.
// Exercise: tests/tst_npy.cpp (atomicWrite*, checkWritable*), tests/cli/cli_npy_errors.cmake.
#include "io/atomic_file.h"

#include "io/npy.h"  // IoError

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace qs {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& path, const std::string& what, int err = 0) {
  std::string msg = path + ": " + what;
  if (err != 0) msg += std::string(": ") + std::strerror(err);
  throw IoError(msg);
}

// The folder a new file at `path` would live in ("." for a bare name).
std::string parent_dir(const std::string& path) {
  fs::path p(path);
  fs::path parent = p.parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

// Closes on scope exit unless released; keeps the error paths below short.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Creates a fresh file next to `path` with O_EXCL (so two writers never share a temp) and mode
// 0666 & ~umask, like a plain open() would give the target; mkstemp's 0600 would leak into the
// renamed file. The name starts with '.' and carries the target's name, so a leftover after a
// crash is recognisable.
int open_temp_next_to(const std::string& path, std::string& temp_out) {
  static std::atomic<unsigned> counter{0};
  const std::string dir = parent_dir(path);
  const std::string base = fs::path(path).filename().string();
  std::random_device rd;
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string name = dir + "/." + base + ".tmp." + std::to_string(::getpid()) + "." +
                             std::to_string(counter.fetch_add(1)) + "." + std::to_string(rd() % 1000000u);
    int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      temp_out = name;
      return fd;
    }
    if (errno != EEXIST) return -1;
  }
  errno = EEXIST;
  return -1;
}

void check_parent_dir(const std::string& path) {
  const std::string dir = parent_dir(path);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) fail(path, "folder '" + dir + "' does not exist");
    fail(path, "cannot access folder '" + dir + "'", errno);
  }
  if (!S_ISDIR(st.st_mode)) fail(path, "'" + dir + "' is not a folder");
}

}  // namespace

void check_writable(const std::string& path) {
  if (path.empty()) throw IoError("<empty path>: no output file name given");
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) fail(path, "is a directory, not a file");
  check_parent_dir(path);
  // access(W_OK) would be cheaper but is wrong for root, ACLs and read-only mounts; a real probe
  // file answers the actual question.
  std::string probe;
  Fd f{open_temp_next_to(path, probe)};
  if (f.fd < 0) fail(path, "cannot create files in folder '" + parent_dir(path) + "'", errno);
  ::unlink(probe.c_str());
}

void write_file_atomic(const std::string& path, const void* data, std::size_t size) {
  if (path.empty()) throw IoError("<empty path>: no output file name given");
  check_parent_dir(path);
  std::string temp;
  Fd f{open_temp_next_to(path, temp)};
  if (f.fd < 0) fail(path, "cannot create a temporary file in '" + parent_dir(path) + "'", errno);

  // From here on every failure removes the temp file before throwing.
  auto fail_and_clean = [&](const std::string& what, int err) {
    if (f.fd >= 0) {
      ::close(f.fd);
      f.fd = -1;
    }
    ::unlink(temp.c_str());
    fail(path, what, err);
  };

  const auto* p = static_cast<const uint8_t*>(data);
  std::size_t left = size;
  while (left > 0) {
    ssize_t n = ::write(f.fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_and_clean("cannot write", errno);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  // fsync before rename: otherwise a crash can leave the new name pointing at an empty file.
  if (::fsync(f.fd) != 0) fail_and_clean("cannot flush to disk", errno);
  const int fd = f.fd;
  f.fd = -1;
  if (::close(fd) != 0) fail_and_clean("cannot close", errno);
  if (::rename(temp.c_str(), path.c_str()) != 0) fail_and_clean("cannot replace", errno);

  // Best effort: make the rename itself durable. Some file systems refuse fsync on folders.
  Fd d{::open(parent_dir(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (d.fd >= 0) ::fsync(d.fd);
}

std::vector<uint8_t> read_file(const std::string& path) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) fail(path, "cannot open", errno);
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) fail(path, "cannot stat", errno);
  if (S_ISDIR(st.st_mode)) fail(path, "is a directory, not a file");
  // Read to EOF rather than trusting st_size alone: pipes and /proc files report 0, and a file
  // may grow while we read. For a regular file the first read fills the exact size.
  std::vector<uint8_t> out(S_ISREG(st.st_mode) ? static_cast<std::size_t>(st.st_size) : 0);
  std::size_t used = 0;
  uint8_t spill[1 << 14];  // past the expected end: read here, so the common case never reallocates
  for (;;) {
    const bool full = used == out.size();
    uint8_t* dst = full ? spill : out.data() + used;
    const std::size_t cap = full ? sizeof spill : out.size() - used;
    ssize_t n = ::read(f.fd, dst, cap);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(path, "cannot read", errno);
    }
    if (n == 0) break;
    if (full) out.insert(out.end(), spill, spill + n);
    used += static_cast<std::size_t>(n);
  }
  out.resize(used);
  return out;
}

}  // namespace qs
