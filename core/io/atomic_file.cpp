// Atomic file output (temp file in the target's folder, fsync, rename) and whole-file reads, POSIX.
// Exercise: tests/tst_npy.cpp (atomicWrite*, checkWritable*), tests/cli/cli_npy_errors.cmake.
#include "io/atomic_file.h"

#include "io/npy.h"  // IoError

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <random>

#include <csignal>

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

// ---- temp files removed on signals: a fixed table the handler can walk without allocating.
constexpr int kTempSlots = 64;
std::atomic<char*> g_temp[kTempSlots];
struct sigaction g_old[3];
const int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
std::atomic<bool> g_installed{false};

extern "C" void remove_temps_on_signal(int sig) {
  for (auto& slot : g_temp) {
    char* p = slot.load();
    if (p) ::unlink(p);
  }
  for (int i = 0; i < 3; ++i)
    if (kSignals[i] == sig) ::sigaction(sig, &g_old[i], nullptr);  // what was there before us
  ::raise(sig);
}

void install_temp_handlers() {
  bool expected = false;
  if (!g_installed.compare_exchange_strong(expected, true)) return;
  for (int i = 0; i < 3; ++i) {
    struct sigaction sa {};
    ::sigaction(kSignals[i], nullptr, &g_old[i]);
    if (g_old[i].sa_handler == SIG_IGN) continue;  // nohup and friends: leave ignored signals ignored
    sa.sa_handler = remove_temps_on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    ::sigaction(kSignals[i], &sa, nullptr);
  }
}

// What a write to `path` really targets (see atomic_file.h): the path itself, a symlink's final target,
// or an existing special file to write in place.
struct Target {
  std::string path;     // the file to replace, or the special file to open
  bool in_place = false;
};

Target resolve_target(const std::string& path) {
  Target t{path, false};
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) != 0) return t;  // a new file (or an unreadable folder: reported later)
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (S_ISLNK(lst.st_mode)) {
    if (!exists) fail(path, "is a symbolic link to a file that does not exist; refusing to guess where to write");
    if (S_ISREG(st.st_mode)) {
      // Replace the file the link points to; the link keeps pointing at it.
      std::error_code ec;
      const fs::path real = fs::canonical(path, ec);
      if (ec) fail(path, "cannot resolve the symbolic link", ec.value());
      t.path = real.string();
      return t;
    }
  }
  const mode_t m = exists ? st.st_mode : lst.st_mode;
  if (S_ISDIR(m)) fail(path, "is a directory, not a file");
  if (S_ISBLK(m)) fail(path, "is a block device; refusing to write to it");
  if (S_ISCHR(m) || S_ISFIFO(m) || S_ISSOCK(m)) t.in_place = true;  // /dev/null, /dev/stdout on a pipe, a named pipe
  return t;
}

void write_all(int fd, const void* data, std::size_t size, const std::function<void(const std::string&, int)>& on_error) {
  const auto* p = static_cast<const uint8_t*>(data);
  std::size_t left = size;
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      on_error("cannot write", errno);
      return;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

}  // namespace

TempFileGuard::TempFileGuard(std::string path) : path_(std::move(path)) {
  install_temp_handlers();
  char* copy = ::strdup(path_.c_str());
  for (int i = 0; i < kTempSlots && copy; ++i) {
    char* expected = nullptr;
    if (g_temp[i].compare_exchange_strong(expected, copy)) {
      slot_ = i;
      return;
    }
  }
  std::free(copy);  // table full: removed on scope exit only
}

void TempFileGuard::release() {
  if (slot_ >= 0) std::free(g_temp[slot_].exchange(nullptr));
  slot_ = -1;
  path_.clear();
}

TempFileGuard::~TempFileGuard() {
  if (!path_.empty()) ::unlink(path_.c_str());
  release();
}

void check_distinct_files(const std::vector<std::pair<std::string, std::string>>& outputs,
                          const std::vector<std::pair<std::string, std::string>>& inputs) {
  struct Id {
    std::string flag, path;
    bool exists = false;
    dev_t dev = 0;
    ino_t ino = 0;
    std::string resolved;
  };
  auto id_of = [](const std::pair<std::string, std::string>& fp) {
    Id id;
    id.flag = fp.first;
    id.path = fp.second;
    struct stat st {};
    if (::stat(fp.second.c_str(), &st) == 0) {
      id.exists = true;
      id.dev = st.st_dev;
      id.ino = st.st_ino;
    }
    std::error_code ec;
    id.resolved = fs::weakly_canonical(fs::absolute(fp.second, ec), ec).string();
    return id;
  };
  auto special = [](const Id& id) {  // /dev/null may well be given twice
    struct stat st {};
    return id.exists && ::stat(id.path.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
  };
  auto same = [](const Id& a, const Id& b) {
    if (a.exists && b.exists) return a.dev == b.dev && a.ino == b.ino;
    return a.resolved == b.resolved;
  };
  std::vector<Id> outs, ins;
  for (const auto& o : outputs)
    if (!o.second.empty()) outs.push_back(id_of(o));
  for (const auto& i : inputs)
    if (!i.second.empty()) ins.push_back(id_of(i));
  for (std::size_t a = 0; a < outs.size(); ++a) {
    if (special(outs[a])) continue;
    for (const Id& in : ins)
      if (same(outs[a], in))
        throw IoError(outs[a].path + ": " + outs[a].flag + " is the input " + in.flag + " " + in.path +
                      "; refusing to overwrite an input");
    for (std::size_t b = a + 1; b < outs.size(); ++b)
      if (same(outs[a], outs[b]))
        throw IoError(outs[a].path + ": given to both " + outs[a].flag + " and " + outs[b].flag +
                      "; one would overwrite the other");
  }
}

void check_writable(const std::string& path) {
  if (path.empty()) throw IoError("<empty path>: no output file name given");
  const Target t = resolve_target(path);
  if (t.in_place) {
    if (::access(t.path.c_str(), W_OK) != 0) fail(path, "cannot write", errno);
    return;
  }
  check_parent_dir(t.path);
  // access(W_OK) would be cheaper but is wrong for root, ACLs and read-only mounts; a real probe
  // file answers the actual question.
  std::string probe;
  Fd f{open_temp_next_to(t.path, probe)};
  if (f.fd < 0) fail(path, "cannot create files in folder '" + parent_dir(t.path) + "'", errno);
  ::unlink(probe.c_str());
}

void write_file_atomic(const std::string& path_in, const void* data, std::size_t size) {
  if (path_in.empty()) throw IoError("<empty path>: no output file name given");
  const Target t = resolve_target(path_in);
  if (t.in_place) {  // a device, FIFO or socket: no temp file, no rename; written like a shell's `>`
    Fd f{::open(t.path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC)};
    if (f.fd < 0) fail(path_in, "cannot open for writing", errno);
    write_all(f.fd, data, size, [&](const std::string& what, int err) { fail(path_in, what, err); });
    const int fd = f.fd;
    f.fd = -1;
    if (::close(fd) != 0) fail(path_in, "cannot close", errno);
    return;
  }
  const std::string& path = t.path;
  check_parent_dir(path);
  std::string temp;
  Fd f{open_temp_next_to(path, temp)};
  if (f.fd < 0) fail(path_in, "cannot create a temporary file in '" + parent_dir(path) + "'", errno);
  TempFileGuard guard(temp);  // removed on every error path below, and on SIGINT/SIGTERM/SIGHUP

  auto fail_clean = [&](const std::string& what, int err) {
    if (f.fd >= 0) {
      ::close(f.fd);
      f.fd = -1;
    }
    fail(path_in, what, err);  // the guard removes the temp file while the exception leaves
  };
  write_all(f.fd, data, size, fail_clean);
  // fsync before rename: otherwise a crash can leave the new name pointing at an empty file.
  if (::fsync(f.fd) != 0) fail_clean("cannot flush to disk", errno);
  const int fd = f.fd;
  f.fd = -1;
  if (::close(fd) != 0) fail_clean("cannot close", errno);
  if (::rename(temp.c_str(), path.c_str()) != 0) fail_clean("cannot replace", errno);
  guard.release();

  // Best effort: make the rename itself durable. Some file systems refuse fsync on folders.
  Fd d{::open(parent_dir(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (d.fd >= 0) ::fsync(d.fd);
}

namespace {
// Opens a regular file for reading. O_NONBLOCK: opening a FIFO with no writer must not hang (it is
// refused right after, like every other non-regular file: a stream has no size to check first).
int open_regular(const std::string& path, struct stat& st) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (f.fd < 0) fail(path, "cannot open", errno);
  if (::fstat(f.fd, &st) != 0) fail(path, "cannot stat", errno);
  if (S_ISDIR(st.st_mode)) fail(path, "is a directory, not a file");
  if (!S_ISREG(st.st_mode)) fail(path, "is not a regular file (a device, FIFO or socket); give a file");
  ::fcntl(f.fd, F_SETFL, ::fcntl(f.fd, F_GETFL) & ~O_NONBLOCK);
  const int fd = f.fd;
  f.fd = -1;
  return fd;
}
}  // namespace

std::vector<uint8_t> read_file_prefix(const std::string& path, std::size_t max_bytes, uint64_t* file_size) {
  struct stat st {};
  Fd f{open_regular(path, st)};
  *file_size = static_cast<uint64_t>(st.st_size);
  std::vector<uint8_t> out(std::min<uint64_t>(max_bytes, static_cast<uint64_t>(st.st_size)));
  std::size_t used = 0;
  while (used < out.size()) {
    ssize_t n = ::pread(f.fd, out.data() + used, out.size() - used, static_cast<off_t>(used));
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(path, "cannot read", errno);
    }
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
  }
  out.resize(used);
  return out;
}

std::vector<uint8_t> read_file(const std::string& path, std::size_t max_bytes) {
  struct stat st {};
  Fd f{open_regular(path, st)};
  if (static_cast<uint64_t>(st.st_size) > max_bytes)
    fail(path, "is " + std::to_string(st.st_size) + " bytes, more than the " + std::to_string(max_bytes) +
                   "-byte limit of this reader");
  // Read to EOF rather than trusting st_size alone: a file may grow while we read (up to the limit).
  std::vector<uint8_t> out(static_cast<std::size_t>(st.st_size));
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
    if (full) {
      if (out.size() + static_cast<std::size_t>(n) > max_bytes)
        fail(path, "grew past the " + std::to_string(max_bytes) + "-byte limit while being read");
      out.insert(out.end(), spill, spill + n);
    }
    used += static_cast<std::size_t>(n);
  }
  out.resize(used);
  return out;
}

}  // namespace qs
