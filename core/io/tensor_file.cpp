// TensorFile plumbing: positional reads (pread), the reader chosen by magic bytes (then by extension),
// and the "this build has no ... support" stand-ins for readers whose library was not found at
// configure time.
// Exercise: tests/tst_tensorfile.cpp (dispatch rows), `quantscope-cli analyze --in FILE`.
#include "io/tensor_file.h"
#include "io/prequant.h"  // safetensors and ONNX files are wrapped: pre-quantized weights shown dequantized

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string_view>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace qs {

std::size_t TensorInfo::numel() const {
  // Readers refuse shapes whose product overflows, so the plain product is exact here.
  std::size_t n = 1;
  for (int64_t d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

namespace {

// "a FIFO (named pipe)" and the like, for "<file>: is a FIFO (named pipe), not a regular file".
const char* file_type_name(mode_t m) {
  if (S_ISFIFO(m)) return "a FIFO (named pipe)";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "a special file";
}

[[noreturn]] void refuse_type(const std::string& path, mode_t m) {
  if (S_ISDIR(m)) throw IoError(path + ": is a directory, not a tensor file");
  throw IoError(path + ": is " + file_type_name(m) + ", not a regular file; tensor files must be regular files");
}

}  // namespace

std::shared_ptr<const RandomAccessFile> RandomAccessFile::open(const std::string& path) {
  // stat before open: opening a FIFO blocks until a writer comes, and opening a device may have effects.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw IoError(path + ": cannot open: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) refuse_type(path, st.st_mode);
  // O_NONBLOCK (no effect on a regular file) in case the path became a FIFO since the stat.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw IoError(path + ": cannot open: " + std::strerror(errno));
  std::shared_ptr<RandomAccessFile> f(new RandomAccessFile);
  f->fd_ = fd;
  f->path_ = path;
  if (::fstat(fd, &st) != 0) throw IoError(path + ": cannot stat: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) refuse_type(path, st.st_mode);
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  f->size_ = static_cast<uint64_t>(st.st_size);
  return f;
}

RandomAccessFile::~RandomAccessFile() {
  if (fd_ >= 0) ::close(fd_);
}

long RandomAccessFile::pread_some(uint64_t offset, void* dst, std::size_t n) const noexcept {
  if (offset > static_cast<uint64_t>(std::numeric_limits<off_t>::max())) {
    errno = EOVERFLOW;
    return -1;
  }
  n = std::min<std::size_t>(n, std::size_t(1) << 30);  // Linux reads at most ~2 GiB per call anyway
  for (;;) {
    const ssize_t got = ::pread(fd_, dst, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    return static_cast<long>(got);
  }
}

void RandomAccessFile::check_range(uint64_t offset, std::size_t n) const {
  if (offset > size_ || n > size_ - offset)
    throw IoError(path_ + ": cannot read " + std::to_string(n) + " bytes at offset " + std::to_string(offset) +
                  ": past the end of the file (" + std::to_string(size_) + " bytes)");
}

void RandomAccessFile::read_exact(uint64_t offset, void* dst, std::size_t n) const {
  check_range(offset, n);
  auto* p = static_cast<uint8_t*>(dst);
  for (std::size_t done = 0; done < n;) {
    const long got = pread_some(offset + done, p + done, n - done);
    if (got < 0) throw IoError(path_ + ": cannot read: " + std::strerror(errno));
    if (got == 0) fail_changed();
    done += static_cast<std::size_t>(got);
  }
}

std::vector<uint8_t> RandomAccessFile::read_vector(uint64_t offset, std::size_t n) const {
  check_range(offset, n);  // before allocating
  std::vector<uint8_t> v(n);
  read_exact(offset, v.data(), n);
  return v;
}

TensorBytes RandomAccessFile::read_owned(const std::shared_ptr<const RandomAccessFile>& file, uint64_t offset,
                                         std::size_t n) {
  static const uint8_t kEmpty = 0;
  TensorBytes b;
  if (n == 0) {
    b.data = &kEmpty;
    b.owner = file;
    return b;
  }
  file->check_range(offset, n);  // before allocating
  std::unique_ptr<uint8_t[]> buf;
  std::size_t capacity = 0;
  {
    std::lock_guard lock(file->spare_mutex_);
    if (file->spare_ && file->spare_size_ >= n) {
      buf = std::move(file->spare_);
      capacity = file->spare_size_;
    }
  }
  if (!buf) {
    buf.reset(new uint8_t[n]);  // new[] without (): no pass to zero what pread overwrites
    capacity = n;
  }
  file->read_exact(offset, buf.get(), n);  // on a throw, `buf` is simply freed
  b.data = buf.get();
  b.size = n;
  // Released bytes go back to the file as its spare (the larger one is kept), unless the file is gone.
  std::weak_ptr<const RandomAccessFile> weak = file;
  b.owner = std::shared_ptr<const void>(buf.release(), [weak, capacity](const void* p) {
    std::unique_ptr<uint8_t[]> done(static_cast<uint8_t*>(const_cast<void*>(p)));
    if (const auto f = weak.lock()) {
      std::lock_guard lock(f->spare_mutex_);
      if (!f->spare_ || f->spare_size_ < capacity) {
        std::swap(f->spare_, done);
        f->spare_size_ = capacity;
      }
    }
  });
  return b;
}

void RandomAccessFile::read_f32(uint64_t offset, DType dtype, std::size_t numel, float* out) const {
  static_assert(std::endian::native == std::endian::little, "float32 tensors are read in place");
  uint64_t nbytes = 0;
  if (!dtype_nbytes(dtype, uint64_t(numel), &nbytes) || nbytes > std::numeric_limits<std::size_t>::max())
    throw IoError(path_ + ": tensor of " + std::to_string(numel) + " elements is too large");
  check_range(offset, static_cast<std::size_t>(nbytes));
  if (dtype == DType::F32) return read_exact(offset, out, numel * 4);
  // Staged in pieces small enough to stay in cache between the read and the conversion. A piece holds a
  // multiple of 8 elements, so a packed piece starts and ends on a byte boundary.
  constexpr std::size_t kStageBytes = std::size_t(1) << 18;
  const std::size_t per = kStageBytes * 8 / dtype_bits(dtype) / 8 * 8;
  std::vector<uint8_t> stage(dtype_nbytes(dtype, std::min(numel, per)));
  for (std::size_t done = 0; done < numel;) {
    const std::size_t n = std::min(numel - done, per);
    read_exact(offset + dtype_nbytes(dtype, done), stage.data(), dtype_nbytes(dtype, n));
    convert_to_f32(dtype, stage.data(), n, out + done);
    done += n;
  }
}

void RandomAccessFile::check_unchanged() const {
  struct stat st {};
  if (::fstat(fd_, &st) == 0 && static_cast<uint64_t>(st.st_size) != size_) fail_changed();
}

void RandomAccessFile::fail_changed() const {
  struct stat st {};
  if (::fstat(fd_, &st) == 0 && static_cast<uint64_t>(st.st_size) != size_)
    throw IoError(path_ + ": changed size while reading (" + std::to_string(size_) + " bytes when opened, " +
                  std::to_string(st.st_size) + " now); was it rewritten while being read?");
  throw IoError(path_ + ": ended early while reading (" + std::to_string(size_) +
                " bytes when opened); was it rewritten while being read?");
}

void TensorFile::read_f32(std::size_t index, float* out) const {
  const TensorBytes b = read(index);
  convert_to_f32(tensors_.at(index).dtype, b.data, tensors_[index].numel(), out);
}

const TensorInfo& TensorFile::check_part(std::size_t index, std::size_t begin, std::size_t count) const {
  if (index >= tensors_.size())
    throw IoError(path_ + ": no tensor #" + std::to_string(index) + " (the file has " + std::to_string(tensors_.size()) + ")");
  const TensorInfo& t = tensors_[index];
  const std::size_t n = t.numel();
  if (begin % 8 != 0 || begin > n || count > n - begin)
    throw IoError(path_ + ": " + t.name + ": elements [" + std::to_string(begin) + ", +" + std::to_string(count) +
                  ") are not a part of the tensor");
  return t;
}

void TensorFile::read_f32_part(std::size_t index, std::size_t begin, std::size_t count, float* out) const {
  std::vector<float> all(check_part(index, begin, count).numel());
  read_f32(index, all.data());
  std::copy_n(all.begin() + std::ptrdiff_t(begin), count, out);
}

namespace {

std::string lower_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return ext;
}

// The first bytes of the file. Non-regular files are refused here, before any reader opens them.
std::size_t read_prefix(const std::string& path, std::array<uint8_t, 16>& buf) {
  const auto f = RandomAccessFile::open(path);
  const std::size_t n = static_cast<std::size_t>(std::min<uint64_t>(f->size(), buf.size()));
  f->read_exact(0, buf.data(), n);
  return n;
}

}  // namespace

std::unique_ptr<TensorFile> open_tensor_file(const std::string& path) {
  // A folder, or a .json (`model.safetensors.index.json`): a sharded model, whose reader says so when
  // the folder holds no shards or the JSON is not an index.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return recognise_prequantized(open_sharded_model(path));
  if (lower_extension(path) == ".json") return recognise_prequantized(open_sharded_model(path));
  std::array<uint8_t, 16> head{};
  const std::size_t n = read_prefix(path, head);
  auto starts_with = [&](std::string_view magic) {
    return n >= magic.size() && std::memcmp(head.data(), magic.data(), magic.size()) == 0;
  };
  if (starts_with("\x93NUMPY")) return open_npy_file(path);
  if (starts_with("GGUF")) return open_gguf_file(path);
  if (starts_with("PK\x03\x04") || starts_with(std::string_view("PK\x05\x06", 4))) return open_zip_tensor_file(path);
  // A pickle (protocol 2) beginning with torch's legacy magic number: torch.save before the zip format.
  if (starts_with("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8"))
    throw IoError(path + ": a legacy (pre-1.6, non-zip) PyTorch file; re-save it with torch.save(obj, path) from "
                         "PyTorch >= 1.6 to read it here");
  if (n >= 9 && head[8] == '{') return recognise_prequantized(open_safetensors_file(path));  // u64 header length, then the JSON '{'

  // No magic we know: a truncated or damaged file still gets its own reader's precise message.
  const std::string ext = lower_extension(path);
  if (ext == ".onnx") return recognise_prequantized(open_onnx_file(path));
  if (ext == ".npy") return open_npy_file(path);
  if (ext == ".npz") return open_npz_file(path);
  if (ext == ".safetensors") return recognise_prequantized(open_safetensors_file(path));
  if (ext == ".gguf") return open_gguf_file(path);
  if ((ext == ".pt" || ext == ".pth" || ext == ".bin" || ext == ".ckpt") && n >= 1 && head[0] == 0x80)
    throw IoError(path + ": a pickle that is not a torch.save zip archive; only zip checkpoints (PyTorch >= 1.6, "
                         "torch.save's default) are read");
  if (n == 0) throw IoError(path + ": empty file, not a tensor file");
  throw IoError(path +
                ": not a recognised tensor file (supported: .npy, .npz, .safetensors, .gguf, PyTorch zip checkpoints by their magic bytes; .onnx by "
                "extension; a sharded model by its *.safetensors.index.json or folder)");
}

bool tensor_reader_available(const std::string& kind) {
  if (kind == "npy" || kind == "gguf") return true;
#ifdef QS_HAVE_LIBZIP
  if (kind == "npz" || kind == "pytorch") return true;
#endif
#ifdef QS_HAVE_JSON
  if (kind == "safetensors" || kind == "sharded safetensors") return true;
#endif
#ifdef QS_HAVE_PROTOBUF
  if (kind == "onnx") return true;
#endif
  return false;
}

// Stand-ins for readers this build lacks; the real ones live in npz_file.cpp, safetensors_file.cpp
// (and sharded_model.cpp) and onnx_file.cpp, each compiled only with its library.
#ifndef QS_HAVE_LIBZIP
std::unique_ptr<TensorFile> open_npz_file(const std::string& path) {
  throw IoError(path + ": this build has no .npz support (install libzip-dev and rebuild)");
}
std::unique_ptr<TensorFile> open_torch_file(const std::string& path) {
  throw IoError(path + ": this build has no PyTorch checkpoint support (install libzip-dev and rebuild)");
}
std::unique_ptr<TensorFile> open_zip_tensor_file(const std::string& path) {
  throw IoError(path + ": this build has no zip archive support (.npz, PyTorch checkpoints; install libzip-dev and rebuild)");
}
#endif
#ifndef QS_HAVE_JSON
std::unique_ptr<TensorFile> open_safetensors_file(const std::string& path) {
  throw IoError(path + ": this build has no .safetensors support (install nlohmann-json3-dev and rebuild)");
}
std::unique_ptr<TensorFile> open_sharded_model(const std::string& path) {
  throw IoError(path + ": this build has no sharded safetensors support (install nlohmann-json3-dev and rebuild)");
}
#endif
#ifndef QS_HAVE_PROTOBUF
std::unique_ptr<TensorFile> open_onnx_file(const std::string& path) {
  throw IoError(path + ": this build has no .onnx support (install libprotobuf-dev and protobuf-compiler and rebuild)");
}
#endif

}  // namespace qs
