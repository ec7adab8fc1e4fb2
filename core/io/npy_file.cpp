// A .npy file as a TensorFile: one tensor, named by the file's stem, read as a view into a memory map
// (no copy). Exercise: tests/tst_tensorfile.cpp, `quantscope-cli analyze --in w.npy --scheme int8/tensor`.
#include "io/npy.h"
#include "io/tensor_file.h"

#include <filesystem>

namespace qs {

namespace {

class NpyFile final : public TensorFile {
 public:
  NpyFile(const std::string& path, std::shared_ptr<const MappedFile> map) : map_(std::move(map)) {
    path_ = path;
    kind_ = "npy";
    const NpyHeader h = parse_npy_header(map_->data, map_->size, path);
    offset_ = h.data_offset;
    TensorInfo info;
    info.name = std::filesystem::path(path).stem().string();
    info.dtype = h.dtype;
    info.shape = h.shape;
    tensors_.push_back(std::move(info));
  }

  TensorBytes read(std::size_t index) const override {
    if (index != 0) throw IoError(path_ + ": no tensor #" + std::to_string(index) + " (a .npy file holds one)");
    return MappedFile::view(map_, offset_, map_->size - offset_);  // parse_npy_header checked the size
  }

 private:
  std::shared_ptr<const MappedFile> map_;
  std::size_t offset_ = 0;
};

}  // namespace

std::unique_ptr<TensorFile> open_npy_file(const std::string& path) {
  return std::make_unique<NpyFile>(path, MappedFile::open(path));
}

}  // namespace qs
