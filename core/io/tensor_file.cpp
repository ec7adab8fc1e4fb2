// TensorFile plumbing: memory maps, the reader chosen by magic bytes (then by extension), and the
// "this build has no ... support" stand-ins for readers whose library was not found at configure time.
// Exercise: tests/tst_tensorfile.cpp (dispatch rows), `quantscope-cli analyze --in FILE`.
#include "io/tensor_file.h"

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace qs {

std::size_t TensorInfo::numel() const {
  // Readers refuse shapes whose product overflows, so the plain product is exact here.
  std::size_t n = 1;
  for (int64_t d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

MappedFile::~MappedFile() {
  if (data) ::munmap(const_cast<uint8_t*>(data), size);
}

std::shared_ptr<const MappedFile> MappedFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw IoError(path + ": cannot stat: " + std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw IoError(path + ": is a directory, not a tensor file");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw IoError(path + ": not a regular file");
  }
  auto m = std::make_shared<MappedFile>();
  m->size = static_cast<std::size_t>(st.st_size);
  if (m->size > 0) {
    void* p = ::mmap(nullptr, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      m->size = 0;
      throw IoError(path + ": cannot map " + std::to_string(st.st_size) + " bytes: " + std::strerror(err));
    }
    m->data = static_cast<const uint8_t*>(p);
  }
  ::close(fd);  // the mapping keeps the file alive
  return m;
}

TensorBytes MappedFile::view(const std::shared_ptr<const MappedFile>& map, std::size_t offset, std::size_t size) {
  TensorBytes b;
  b.data = map->data + offset;
  b.size = size;
  if (size == 0) {
    b.owner = map;
    return b;
  }
  // The deleter holds the map alive until the view is gone, then drops the view's whole pages.
  b.owner = std::shared_ptr<const void>(b.data, [map, offset, size](const void*) {
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const std::size_t begin = (offset + page - 1) / page * page, end = (offset + size) / page * page;
    if (end > begin) ::madvise(const_cast<uint8_t*>(map->data) + begin, end - begin, MADV_DONTNEED);
  });
  return b;
}

namespace {

std::string lower_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return ext;
}

// The first bytes of the file, without mapping it (dispatch must not fail on a huge or odd file).
std::size_t read_prefix(const std::string& path, std::array<uint8_t, 16>& buf) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw IoError(path + ": is a directory, not a tensor file");
  }
  std::size_t got = 0;
  while (got < buf.size()) {
    const ssize_t n = ::read(fd, buf.data() + got, buf.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw IoError(path + ": cannot read: " + std::strerror(err));
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return got;
}

}  // namespace

std::unique_ptr<TensorFile> open_tensor_file(const std::string& path) {
  std::array<uint8_t, 16> head{};
  const std::size_t n = read_prefix(path, head);
  auto starts_with = [&](std::string_view magic) {
    return n >= magic.size() && std::memcmp(head.data(), magic.data(), magic.size()) == 0;
  };
  if (starts_with("\x93NUMPY")) return open_npy_file(path);
  if (starts_with("PK\x03\x04") || starts_with(std::string_view("PK\x05\x06", 4))) return open_npz_file(path);
  if (n >= 9 && head[8] == '{') return open_safetensors_file(path);  // u64 header length, then the JSON '{'

  // No magic we know: a truncated or damaged file still gets its own reader's precise message.
  const std::string ext = lower_extension(path);
  if (ext == ".onnx") return open_onnx_file(path);
  if (ext == ".npy") return open_npy_file(path);
  if (ext == ".npz") return open_npz_file(path);
  if (ext == ".safetensors") return open_safetensors_file(path);
  if (n == 0) throw IoError(path + ": empty file, not a tensor file");
  throw IoError(path +
                ": not a recognised tensor file (supported: .npy, .npz, .safetensors by their magic bytes; .onnx by "
                "extension)");
}

bool tensor_reader_available(const std::string& kind) {
  if (kind == "npy") return true;
#ifdef QS_HAVE_LIBZIP
  if (kind == "npz") return true;
#endif
#ifdef QS_HAVE_JSON
  if (kind == "safetensors") return true;
#endif
#ifdef QS_HAVE_PROTOBUF
  if (kind == "onnx") return true;
#endif
  return false;
}

// Stand-ins for readers this build lacks; the real ones live in npz_file.cpp, safetensors_file.cpp
// and onnx_file.cpp, each compiled only with its library.
#ifndef QS_HAVE_LIBZIP
std::unique_ptr<TensorFile> open_npz_file(const std::string& path) {
  throw IoError(path + ": this build has no .npz support (install libzip-dev and rebuild)");
}
#endif
#ifndef QS_HAVE_JSON
std::unique_ptr<TensorFile> open_safetensors_file(const std::string& path) {
  throw IoError(path + ": this build has no .safetensors support (install nlohmann-json3-dev and rebuild)");
}
#endif
#ifndef QS_HAVE_PROTOBUF
std::unique_ptr<TensorFile> open_onnx_file(const std::string& path) {
  throw IoError(path + ": this build has no .onnx support (install libprotobuf-dev and protobuf-compiler and rebuild)");
}
#endif

}  // namespace qs
