// Tensor files opened one tensor at a time: .npy, .npz, .safetensors and .onnx behind one interface,
// so that memory follows the largest tensor, not the file. Exercise: tests/tst_tensorfile.cpp,
// `quantscope-cli analyze --in model.onnx --scheme e4m3fn/tensor`.
//
//   auto file = qs::open_tensor_file("model.safetensors");    // throws qs::IoError (one line)
//   for (std::size_t i = 0; i < file->tensors().size(); ++i) {
//     qs::TensorBytes b = file->read(i);                     // mmap view or owned buffer
//     std::vector<float> x(file->tensors()[i].numel());
//     qs::convert_to_f32(file->tensors()[i].dtype, b.data, x.size(), x.data());
//   }
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/dtype.h"

namespace qs {

struct TensorInfo {
  std::string name;              // unique within the file
  DType dtype = DType::F32;
  std::vector<int64_t> shape;    // empty = scalar
  std::size_t numel() const;
  std::size_t nbytes() const { return numel() * dtype_size(dtype); }
};

// The bytes of one tensor (little-endian, C order, exactly nbytes()); valid while `owner` lives.
struct TensorBytes {
  const uint8_t* data = nullptr;
  std::size_t size = 0;
  std::shared_ptr<const void> owner;
};

class TensorFile {
 public:
  virtual ~TensorFile() = default;
  const std::string& path() const { return path_; }
  const std::string& kind() const { return kind_; }   // "npy", "npz", "safetensors", "onnx"
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  // Reads (or maps) tensor `index`. Throws IoError "<file>: <tensor>: <what is wrong>".
  virtual TensorBytes read(std::size_t index) const = 0;

 protected:
  std::string path_, kind_;
  std::vector<TensorInfo> tensors_;
};

// Chooses the reader by magic bytes (falling back to the extension). Throws IoError.
std::unique_ptr<TensorFile> open_tensor_file(const std::string& path);

std::unique_ptr<TensorFile> open_npy_file(const std::string& path);
std::unique_ptr<TensorFile> open_npz_file(const std::string& path);          // needs libzip
std::unique_ptr<TensorFile> open_safetensors_file(const std::string& path);  // needs nlohmann-json
std::unique_ptr<TensorFile> open_onnx_file(const std::string& path);         // needs libprotobuf

// Which of the optional readers this build has ("npz", "safetensors", "onnx").
bool tensor_reader_available(const std::string& kind);

// A read-only memory map of a whole file (empty files map to size 0). Throws IoError.
struct MappedFile {
  const uint8_t* data = nullptr;
  std::size_t size = 0;
  ~MappedFile();
  static std::shared_ptr<const MappedFile> open(const std::string& path);
  // A view of [offset, offset + size) whose release tells the kernel the pages are no longer
  // needed (madvise DONTNEED), so resident memory follows the tensor in use, not the whole file.
  static TensorBytes view(const std::shared_ptr<const MappedFile>& map, std::size_t offset, std::size_t size);
};

}  // namespace qs
