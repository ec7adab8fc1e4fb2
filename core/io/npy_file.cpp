// A .npy file as a TensorFile: one tensor, named by the file's stem. Opening reads only the header;
// read() preads the data into its own buffer (read_f32() straight into the caller's floats), so a file
// that shrinks meanwhile gives an IoError, not SIGBUS.
// Exercise: tests/tst_tensorfile.cpp, `quantscope-cli analyze --in w.npy --scheme int8/tensor`.
#include "io/npy.h"
#include "io/tensor_file.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

namespace qs {

namespace {

constexpr std::size_t kHeadBytes = 4096;         // enough for any header numpy writes by default
constexpr std::size_t kMaxNpyHeader = 1u << 20;  // numpy itself refuses headers above 10,000 bytes

class NpyFile final : public TensorFile {
 public:
  explicit NpyFile(std::shared_ptr<const RandomAccessFile> file) : file_(std::move(file)) {
    path_ = file_->path();
    kind_ = "npy";
    const std::size_t size = static_cast<std::size_t>(file_->size());
    std::vector<uint8_t> head = file_->read_vector(0, std::min(size, kHeadBytes));
    // A header longer than the first read (v2/v3 allow up to 4 GB) is read on, up to a cap; one that
    // runs past the end of the file is left to parse_npy_header's message.
    if (head.size() >= 12 && std::memcmp(head.data(), "\x93NUMPY", 6) == 0) {
      const std::size_t len_bytes = head[6] == 1 ? 2 : 4;
      std::size_t header_len = 0;
      for (std::size_t i = len_bytes; i-- > 0;) header_len = (header_len << 8) | head[8 + i];
      const std::size_t needed = 8 + len_bytes + header_len;
      if (needed > head.size() && needed <= size) {
        if (needed > kMaxNpyHeader)
          throw IoError(path_ + ": .npy header of " + std::to_string(header_len) + " bytes is above the " +
                        std::to_string(kMaxNpyHeader) + "-byte limit");
        head = file_->read_vector(0, needed);
      }
    }
    const NpyHeader h = parse_npy_header(head.data(), head.size(), size, path_);
    offset_ = h.data_offset;
    TensorInfo info;
    info.name = std::filesystem::path(path_).stem().string();
    info.dtype = h.dtype;
    info.shape = h.shape;
    tensors_.push_back(std::move(info));
  }

  TensorBytes read(std::size_t index) const override {
    if (index != 0) throw IoError(path_ + ": no tensor #" + std::to_string(index) + " (a .npy file holds one)");
    // parse_npy_header checked that the data is exactly the rest of the file.
    return RandomAccessFile::read_owned(file_, offset_, static_cast<std::size_t>(file_->size()) - offset_);
  }

  void read_f32(std::size_t index, float* out) const override {
    if (index != 0) read(index);  // throws "no tensor #..."
    file_->read_f32(offset_, tensors_[0].dtype, tensors_[0].numel(), out);
  }

  bool reads_f32_in_parts() const override { return true; }
  void read_f32_part(std::size_t index, std::size_t begin, std::size_t count, float* out) const override {
    const TensorInfo& t = check_part(index, begin, count);
    file_->read_f32(offset_ + dtype_nbytes(t.dtype, begin), t.dtype, count, out);
  }

 private:
  std::shared_ptr<const RandomAccessFile> file_;
  std::size_t offset_ = 0;
};

}  // namespace

std::unique_ptr<TensorFile> open_npy_file(const std::string& path) {
  return std::make_unique<NpyFile>(RandomAccessFile::open(path));
}

}  // namespace qs
