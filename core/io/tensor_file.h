// Tensor files opened one tensor at a time: .npy, .npz, .safetensors, .onnx and .gguf behind one interface,
// so that memory follows the largest tensor, not the file. Exercise: tests/tst_tensorfile.cpp,
// `quantscope-cli analyze --in model.onnx --scheme e4m3fn/tensor`.
//
//   auto file = qs::open_tensor_file("model.safetensors");    // throws qs::IoError (one line)
//   for (std::size_t i = 0; i < file->tensors().size(); ++i) {
//     std::vector<float> x(file->tensors()[i].numel());
//     file->read_f32(i, x.data());                           // or read(i): the bytes as stored
//   }
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "io/dtype.h"

namespace qs {

struct TensorInfo {
  std::string name;              // unique within the file
  DType dtype = DType::F32;
  std::vector<int64_t> shape;    // empty = scalar
  // What the file stores when it is not `dtype` itself: a block-quantized type that the reader decodes
  // exactly and read() hands out dequantized as `dtype` (GGUF "Q4_K", "MXFP4", ...); empty otherwise.
  // `stored_bytes` is then the tensor's size in the file (the `info` command shows both).
  std::string stored;
  uint64_t stored_bytes = 0;
  std::size_t numel() const;
  std::size_t nbytes() const { return dtype_nbytes(dtype, numel()); }  // packed types: ceil(numel * bits / 8)
};

// An ONNX DequantizeLinear node, y = (x - x_zero_point) * x_scale, by the names its inputs have in
// tensors() (zero_point empty when absent); axis and block_size as the node says (defaults 1 and 0).
struct DequantizeLinearInfo {
  std::string output, x, scale, zero_point;
  int64_t axis = 1, block_size = 0;
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
  const std::string& kind() const { return kind_; }   // "npy", "npz", "safetensors", "onnx", "sharded safetensors"
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  // Reads tensor `index` into a buffer of its own (or points into a parsed model). Throws IoError
  // "<file>: <tensor>: <what is wrong>", and "<file>: changed size while reading ..." when the file
  // shrank since it was opened.
  virtual TensorBytes read(std::size_t index) const = 0;
  // Tensor `index` converted to float32 into out[0, numel()): the values convert_to_f32 gives on read(),
  // but the .npy and .safetensors readers pread straight into `out` (float32) or through a small staging
  // buffer, so the bytes cross memory once and no tensor-sized byte buffer is allocated. Throws as read().
  virtual void read_f32(std::size_t index, float* out) const;
  // Whether read_f32_part() reads pieces of a tensor on their own (.safetensors, sharded, .npy); analyze_file
  // then splits a tensor's read between its threads instead of reading the next one on a thread of its own.
  virtual bool reads_f32_in_parts() const { return false; }
  // Elements [begin, begin + count) of tensor `index` as float32 into out[0, count): the values read_f32
  // puts there, with the same errors. `begin` is a multiple of 8 (a packed piece starts on a byte). Parts
  // may be read from several threads at once. Only where reads_f32_in_parts(); the default reads the
  // whole tensor into a buffer of its own and copies the part out.
  virtual void read_f32_part(std::size_t index, std::size_t begin, std::size_t count, float* out) const;
  // Entries of the file that are not tensors here, each "<name>: <why>" (an .npz member that is not an
  // .npy file, a safetensors dtype or an ONNX data type QuantScope cannot decode, ...): listed so that
  // nothing vanishes silently; the CLI and the GUI show them. A file may open with no tensors and only
  // skipped entries; it is the caller that decides this is an error (`analyze` does).
  const std::vector<std::string>& skipped() const { return skipped_; }
  // The file's own key/value metadata, in file order, values as printable one-line text (GGUF's
  // general.architecture, a safetensors "__metadata__", ONNX producer/opset, ...): `quantscope-cli info`
  // and the GUI's file details show it. Long arrays are summarised by the reader ("[151936 strings]").
  const std::vector<std::pair<std::string, std::string>>& metadata() const { return metadata_; }
  // Every file the tensors are read from (the file itself; a sharded model's index and its shards): what an
  // output must not overwrite.
  virtual std::vector<std::string> source_files() const { return {path_}; }
  // The graph's DequantizeLinear nodes whose inputs are tensors of this file (ONNX QDQ models; empty for
  // every other kind): what io/prequant.h needs to show each quantized initializer dequantized.
  virtual std::vector<DequantizeLinearInfo> dequantize_nodes() const { return {}; }

 protected:
  // read_f32_part's argument check, shared by every reader: tensor `index` exists and [begin, begin + count)
  // lies inside it with begin a multiple of 8; else IoError. Returns the tensor.
  const TensorInfo& check_part(std::size_t index, std::size_t begin, std::size_t count) const;
  std::string path_, kind_;
  std::vector<TensorInfo> tensors_;
  std::vector<std::string> skipped_;
  std::vector<std::pair<std::string, std::string>> metadata_;
};

// Chooses the reader by magic bytes (falling back to the extension); a folder or a .json file (a
// sharded model's index) opens with open_sharded_model. Throws IoError.
std::unique_ptr<TensorFile> open_tensor_file(const std::string& path);

std::unique_ptr<TensorFile> open_npy_file(const std::string& path);
std::unique_ptr<TensorFile> open_npz_file(const std::string& path);          // needs libzip
std::unique_ptr<TensorFile> open_safetensors_file(const std::string& path);  // needs nlohmann-json
std::unique_ptr<TensorFile> open_onnx_file(const std::string& path);         // needs libprotobuf
// GGUF v2/v3 (llama.cpp): plain tensors as stored, ggml block types dequantized (TensorInfo::stored = "Q4_K"),
// IQ / ternary / unknown types in skipped(); the key/values in metadata(). Kind "gguf".
std::unique_ptr<TensorFile> open_gguf_file(const std::string& path);
// torch.save zip checkpoints (needs libzip): a state dict's tensors (nested dicts as dotted names, views
// honoured), through a restricted unpickler that never imports or calls anything (io/pickle_min.h). Kind
// "pytorch". open_zip_tensor_file picks it or open_npz_file by whether the zip has a data.pkl member.
std::unique_ptr<TensorFile> open_torch_file(const std::string& path);
std::unique_ptr<TensorFile> open_zip_tensor_file(const std::string& path);
// A sharded Hugging Face checkpoint as one model (kind "sharded safetensors"; needs nlohmann-json): `path`
// is a `*.safetensors.index.json` ({"weight_map": {"tensor": "model-00001-of-00003.safetensors", ...}}) or
// a folder (its index if it has one, else every *.safetensors file in it). Tensors are listed shard by
// shard (shards by name, each in its file order); read() opens the tensor's shard on demand and keeps
// only a few open. Throws IoError for a missing shard, a tensor the index puts in a shard that lacks it,
// a tensor in two shards, a shard name outside the folder, a malformed index or one above 64 MiB; a
// shard tensor the index does not name is listed in skipped() ("<tensor>: in <shard> but not in the
// index, not read"), as are the shards' own skipped entries ("<shard>: <entry>").
//   auto m = qs::open_sharded_model("llama/model.safetensors.index.json");  // or "llama/"
std::unique_ptr<TensorFile> open_sharded_model(const std::string& path);

// Which of the optional readers this build has ("npz", "safetensors", "onnx", "sharded safetensors").
bool tensor_reader_available(const std::string& kind);

// A regular file read at fixed offsets with pread, never memory-mapped: its size is taken once at open,
// and a read that finds fewer bytes (a checkpoint truncated or rewritten in place while it is analysed)
// throws IoError "<file>: changed size while reading ..." where a map would raise SIGBUS. FIFOs, devices
// and directories are refused at open without blocking. Reads share no file position, so one object
// serves several threads.
//
//   auto f = qs::RandomAccessFile::open("w.safetensors");            // throws qs::IoError
//   std::vector<uint8_t> head = f->read_vector(0, std::min<uint64_t>(f->size(), 16));
//   qs::TensorBytes b = qs::RandomAccessFile::read_owned(f, offset, nbytes);  // its own buffer
class RandomAccessFile {
 public:
  static std::shared_ptr<const RandomAccessFile> open(const std::string& path);
  ~RandomAccessFile();
  RandomAccessFile(const RandomAccessFile&) = delete;
  RandomAccessFile& operator=(const RandomAccessFile&) = delete;

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }  // bytes, as of open

  // Exactly `n` bytes at `offset` (which must lie within size()); throws IoError.
  void read_exact(uint64_t offset, void* dst, std::size_t n) const;
  std::vector<uint8_t> read_vector(uint64_t offset, std::size_t n) const;
  // `numel` little-endian elements of `dtype` (dtype_nbytes(dtype, numel) bytes) at `offset`, converted
  // to float32 into `out`.
  void read_f32(uint64_t offset, DType dtype, std::size_t numel, float* out) const;
  // The bytes in a buffer of their own (reused from the previous read once that is released; never
  // zero-filled first, so pages are touched only as data arrives).
  static TensorBytes read_owned(const std::shared_ptr<const RandomAccessFile>& file, uint64_t offset, std::size_t n);
  // At most `n` bytes at `offset`: the count (0 at the end of the file), or -1 with errno set. Never
  // throws, for C callbacks (libzip) that cannot pass an exception through.
  long pread_some(uint64_t offset, void* dst, std::size_t n) const noexcept;
  // Throws the "changed size while reading" IoError when the file is no longer size() bytes long;
  // readers call it when a library reports a read failure, to say why.
  void check_unchanged() const;

 private:
  RandomAccessFile() = default;
  void check_range(uint64_t offset, std::size_t n) const;  // throws unless [offset, offset + n) is in the file
  [[noreturn]] void fail_changed() const;
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string path_;
  // The buffer of the last released read_owned() result, reused by the next one: a fresh buffer per
  // tensor costs a page fault and a kernel zero-fill per 4 KiB (about half the throughput of
  // `bench analyze --tensors 16`).
  // Holds at most one buffer of the largest tensor read, the same bound as the reads themselves.
  mutable std::mutex spare_mutex_;
  mutable std::unique_ptr<uint8_t[]> spare_;
  mutable std::size_t spare_size_ = 0;
};

}  // namespace qs
