// GGUF reader (llama.cpp's model files; ggml's docs/gguf.md): versions 2 and 3, little-endian. The header
// (magic, version, tensor count, key/value count), the metadata key/values (every value type, arrays of
// arrays included; shown as one printable line each in metadata(), long arrays summarised), the tensor infos
// and the aligned data section. Tensors of the plain types (F32, F16, BF16, F64, I8 ... I64) are read as
// stored; the block-quantized ones ggml's decoders know (Q4_0 ... Q8_0, Q2_K ... Q8_K, MXFP4:
// format/ggml_blocks.h) are read dequantized as float32 and labelled with their type (TensorInfo::stored);
// the IQ and ternary types and unknown type ids are listed in skipped() with the reason, and the file still
// opens. GGUF lists dims innermost first (ne[0] is the row length); shapes here are in C order.
//
// Every count and length is checked against the bytes that remain before anything is allocated for it; tensor
// data must lie inside the file, aligned, without overlaps. The header is read through a 1 MiB window, so a
// multi-gigabyte model costs only its header's bytes at open. Exercise: tests/core/tst_gguf.cpp,
// tests/fuzz/fuzz_gguf.cpp, `quantscope-cli info model.gguf`.
#include "format/ggml_blocks.h"
#include "io/tensor_file.h"
#include "util/printable.h"

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <limits>
#include <sstream>

namespace qs {

namespace {

constexpr uint64_t kMaxString = uint64_t(1) << 30;  // one metadata string or tensor name
constexpr int kMaxArrayDepth = 8;
constexpr uint32_t kMaxDims = 4;                     // GGML_MAX_DIMS
constexpr std::size_t kWindow = std::size_t(1) << 20;

enum ValueType : uint32_t { U8 = 0, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64, kTypeCount };
const char* const kTypeNames[] = {"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
                                  "bool",  "string", "array", "uint64", "int64", "float64"};
uint64_t value_size(uint32_t t) {  // fixed-size scalars; 0 for string/array
  switch (t) {
    case U8: case I8: case BOOL: return 1;
    case U16: case I16: return 2;
    case U32: case I32: case F32: return 4;
    case U64: case I64: case F64: return 8;
    default: return 0;
  }
}

// The ggml type ids GGUF files carry: plain types, the block types with a decoder, and the rest by name.
struct PlainType {
  int id;
  DType dtype;
};
constexpr PlainType kPlain[] = {{0, DType::F32}, {1, DType::F16}, {24, DType::I8},  {25, DType::I16},
                                {26, DType::I32}, {27, DType::I64}, {28, DType::F64}, {30, DType::BF16}};
struct NamedType {
  int id;
  const char* name;
};
constexpr NamedType kUndecoded[] = {{16, "IQ2_XXS"}, {17, "IQ2_XS"}, {18, "IQ3_XXS"}, {19, "IQ1_S"}, {20, "IQ4_NL"},
                                    {21, "IQ3_S"},   {22, "IQ2_S"},  {23, "IQ4_XS"},  {29, "IQ1_M"}, {34, "TQ1_0"},
                                    {35, "TQ2_0"},   {40, "NVFP4"},  {41, "Q1_0"},    {42, "Q2_0"}};

// Sequential reads of the header through a window of the file.
class Cursor {
 public:
  Cursor(const RandomAccessFile& f, const std::string& path) : f_(f), path_(path) {}
  uint64_t pos() const { return pos_; }
  uint64_t remaining() const { return f_.size() - pos_; }
  [[noreturn]] void fail(const std::string& what) const { throw IoError(path_ + ": " + what); }

  void bytes(void* dst, uint64_t n, const char* what) {
    if (n > remaining())
      fail("truncated: " + std::string(what) + " at offset " + std::to_string(pos_) + " needs " + std::to_string(n) +
           " bytes, the file has " + std::to_string(remaining()) + " left");
    auto* out = static_cast<uint8_t*>(dst);
    while (n > 0) {
      if (pos_ < win_start_ || pos_ >= win_start_ + win_.size()) load();
      const uint64_t off = pos_ - win_start_;
      const uint64_t take = std::min<uint64_t>(n, win_.size() - off);
      std::memcpy(out, win_.data() + off, take);
      out += take;
      pos_ += take;
      n -= take;
    }
  }
  void skip(uint64_t n, const char* what) {
    if (n > remaining()) bytes(nullptr, n, what);  // throws the truncation message
    pos_ += n;
  }
  template <class T> T get(const char* what) {
    T v;
    bytes(&v, sizeof v, what);
    return v;
  }
  // A gguf_string: uint64 length, then the bytes. `keep` false skips them.
  std::string str(const char* what, bool keep = true) {
    const uint64_t len = get<uint64_t>(what);
    if (len > kMaxString || len > remaining())
      fail(std::string(what) + " at offset " + std::to_string(pos_ - 8) + " claims " + std::to_string(len) +
           " bytes, more than the file has left (" + std::to_string(remaining()) + ")");
    if (!keep) {
      skip(len, what);
      return {};
    }
    std::string s(static_cast<std::size_t>(len), '\0');
    bytes(s.data(), len, what);
    return s;
  }

 private:
  void load() {
    const uint64_t n = std::min<uint64_t>(kWindow, f_.size() - pos_);
    win_ = f_.read_vector(pos_, static_cast<std::size_t>(n));
    win_start_ = pos_;
  }
  const RandomAccessFile& f_;
  const std::string& path_;
  uint64_t pos_ = 0, win_start_ = 0;
  std::vector<uint8_t> win_;
};

std::string number_text(double v) {
  std::ostringstream o;
  o.precision(9);
  o << v;
  return o.str();
}

struct Entry {
  TensorInfo info;
  uint64_t offset = 0, bytes = 0;       // within the data section
  std::optional<ggml::BlockType> block;
};

class GgufFile final : public TensorFile {
 public:
  explicit GgufFile(std::shared_ptr<const RandomAccessFile> file) : file_(std::move(file)) {
    path_ = file_->path();
    kind_ = "gguf";
    parse();
  }

  TensorBytes read(std::size_t index) const override {
    check_index(index);
    const Entry& e = entries_[index];
    if (!e.block) return RandomAccessFile::read_owned(file_, data_start_ + e.offset, static_cast<std::size_t>(e.bytes));
    auto values = std::make_shared<std::vector<float>>(e.info.numel());
    read_f32(index, values->data());
    TensorBytes b;
    b.data = reinterpret_cast<const uint8_t*>(values->data());
    b.size = values->size() * sizeof(float);
    b.owner = values;
    return b;
  }

  void read_f32(std::size_t index, float* out) const override {
    check_index(index);
    const Entry& e = entries_[index];
    if (!e.block) {
      file_->read_f32(data_start_ + e.offset, e.info.dtype, e.info.numel(), out);
      return;
    }
    // Block by block through a bounded staging buffer: memory stays at the float32 output.
    const ggml::BlockInfo& bi = ggml::block_info(*e.block);
    const std::size_t per_chunk = std::max<std::size_t>(1, (std::size_t(1) << 20) / bi.block_bytes);
    const std::size_t blocks = e.info.numel() / bi.block_elems;
    std::vector<uint8_t> stage(std::min(blocks, per_chunk) * bi.block_bytes);
    for (std::size_t b0 = 0; b0 < blocks; b0 += per_chunk) {
      const std::size_t nb = std::min(per_chunk, blocks - b0);
      file_->read_exact(data_start_ + e.offset + uint64_t(b0) * bi.block_bytes, stage.data(), nb * bi.block_bytes);
      ggml::dequantize(*e.block, stage.data(), nb * bi.block_elems, out + b0 * bi.block_elems);
    }
  }

 private:
  void check_index(std::size_t index) const {
    if (index >= entries_.size())
      throw IoError(path_ + ": no tensor #" + std::to_string(index) + " (the file has " +
                    std::to_string(entries_.size()) + ")");
  }

  // One metadata value as a line of text; arrays of more than 16 elements are summarised.
  std::string value_text(Cursor& c, uint32_t type, int depth, const std::string& key) {
    if (type >= kTypeCount) c.fail("metadata '" + printable(key) + "' has unknown value type " + std::to_string(type));
    switch (type) {
      case U8: return std::to_string(c.get<uint8_t>("a uint8 value"));
      case I8: return std::to_string(c.get<int8_t>("an int8 value"));
      case U16: return std::to_string(c.get<uint16_t>("a uint16 value"));
      case I16: return std::to_string(c.get<int16_t>("an int16 value"));
      case U32: return std::to_string(c.get<uint32_t>("a uint32 value"));
      case I32: return std::to_string(c.get<int32_t>("an int32 value"));
      case U64: return std::to_string(c.get<uint64_t>("a uint64 value"));
      case I64: return std::to_string(c.get<int64_t>("an int64 value"));
      case F32: return number_text(c.get<float>("a float32 value"));
      case F64: return number_text(c.get<double>("a float64 value"));
      case BOOL: {
        const uint8_t b = c.get<uint8_t>("a bool value");
        if (b > 1) c.fail("metadata '" + printable(key) + "' has bool value " + std::to_string(b));
        return b ? "true" : "false";
      }
      case STRING: return printable(c.str("a string value"), false, 200);
      case ARRAY: {
        if (depth >= kMaxArrayDepth)
          c.fail("metadata '" + printable(key) + "' nests arrays deeper than " + std::to_string(kMaxArrayDepth));
        const uint32_t et = c.get<uint32_t>("an array type");
        const uint64_t len = c.get<uint64_t>("an array length");
        if (et >= kTypeCount) c.fail("metadata '" + printable(key) + "' is an array of unknown type " + std::to_string(et));
        // Every element takes at least one byte (a string at least 8): a length the file cannot hold is refused
        // before any element is read.
        const uint64_t min_elem = value_size(et) ? value_size(et) : (et == STRING ? 8 : 12);
        if (len > c.remaining() / min_elem)
          c.fail("metadata '" + printable(key) + "' claims an array of " + std::to_string(len) + " " + kTypeNames[et] +
                 " values, more than the file's remaining " + std::to_string(c.remaining()) + " bytes hold");
        if (len > 16) {
          if (value_size(et)) c.skip(len * value_size(et), "an array");
          else for (uint64_t i = 0; i < len; ++i) {
            if (et == STRING) c.str("an array string", false);
            else value_text(c, et, depth + 1, key);
          }
          return "[" + std::to_string(len) + " " + kTypeNames[et] + (et == STRING ? "s" : " values") + "]";
        }
        std::string s = "[";
        for (uint64_t i = 0; i < len; ++i) s += (i ? ", " : "") + value_text(c, et, depth + 1, key);
        return s + "]";
      }
    }
    return {};
  }

  void parse() {
    Cursor c(*file_, path_);
    const uint64_t size = file_->size();
    if (size == 0) c.fail("empty file, not a GGUF file");
    char magic[4];
    c.bytes(magic, 4, "the magic");
    if (std::memcmp(magic, "GGUF", 4) != 0) c.fail("not a GGUF file (no 'GGUF' magic)");
    const uint32_t version = c.get<uint32_t>("the version");
    const uint32_t swapped = __builtin_bswap32(version);
    if (version != 2 && version != 3) {
      if (swapped >= 1 && swapped <= 3)
        c.fail("a big-endian GGUF file (version " + std::to_string(swapped) +
               "); QuantScope reads little-endian GGUF, the layout llama.cpp writes on x86 and ARM");
      if (version == 1) c.fail("GGUF version 1 (32-bit counts) is not read; convert it with llama.cpp's current tools");
      c.fail("unknown GGUF version " + std::to_string(version) + " (2 and 3 are read)");
    }
    const uint64_t n_tensors = c.get<uint64_t>("the tensor count");
    const uint64_t n_kv = c.get<uint64_t>("the metadata count");
    // A key/value takes at least 13 bytes (an empty key, a type, one byte); a tensor info at least 28.
    if (n_kv > c.remaining() / 13)
      c.fail("claims " + std::to_string(n_kv) + " metadata entries, more than its " + std::to_string(c.remaining()) +
             " remaining bytes can hold");
    if (n_tensors > c.remaining() / 28)
      c.fail("claims " + std::to_string(n_tensors) + " tensors, more than its " + std::to_string(c.remaining()) +
             " remaining bytes can hold");
    metadata_.emplace_back("GGUF.version", std::to_string(version));
    uint64_t alignment = 32;
    for (uint64_t k = 0; k < n_kv; ++k) {
      const std::string key = c.str("a metadata key");
      const uint32_t type = c.get<uint32_t>("a metadata value type");
      if (key == "general.alignment") {
        if (type != U32) c.fail("general.alignment is a " + std::string(type < kTypeCount ? kTypeNames[type] : "?") + ", not a uint32");
        alignment = c.get<uint32_t>("general.alignment");
        if (alignment == 0 || (alignment & (alignment - 1)) != 0)
          c.fail("general.alignment " + std::to_string(alignment) + " is not a power of two");
        metadata_.emplace_back(key, std::to_string(alignment));
        continue;
      }
      metadata_.emplace_back(printable(key, false, 200), value_text(c, type, 0, key));
    }

    std::vector<Entry> entries;
    entries.reserve(static_cast<std::size_t>(n_tensors));  // checked against the file above
    std::vector<std::string> names;
    for (uint64_t t = 0; t < n_tensors; ++t) {
      Entry e;
      e.info.name = c.str("a tensor name");
      const std::string shown = printable(e.info.name);
      const uint32_t n_dims = c.get<uint32_t>("a tensor's dimension count");
      if (n_dims > kMaxDims)
        c.fail("tensor '" + shown + "' has " + std::to_string(n_dims) + " dimensions (at most " + std::to_string(kMaxDims) + ")");
      uint64_t ne[kMaxDims] = {1, 1, 1, 1};
      uint64_t numel = 1;
      for (uint32_t d = 0; d < n_dims; ++d) {
        ne[d] = c.get<uint64_t>("a tensor dimension");
        if (ne[d] > uint64_t(std::numeric_limits<int64_t>::max()) || (ne[d] && numel > std::numeric_limits<uint64_t>::max() / ne[d]))
          c.fail("tensor '" + shown + "': dimensions overflow 64 bits");
        numel *= ne[d];
      }
      const uint32_t type = c.get<uint32_t>("a tensor type");
      e.offset = c.get<uint64_t>("a tensor offset");
      for (uint32_t d = n_dims; d-- > 0;) e.info.shape.push_back(int64_t(ne[d]));  // C order: outermost first
      std::string skip;
      const PlainType* plain = nullptr;
      for (const PlainType& p : kPlain)
        if (p.id == int(type)) plain = &p;
      if (plain) {
        e.info.dtype = plain->dtype;
        if (!dtype_nbytes(plain->dtype, numel, &e.bytes)) c.fail("tensor '" + shown + "': its byte size overflows 64 bits");
      } else if (const auto bt = ggml::block_type_from_ggml(int(type)); bt && *bt != ggml::BlockType::Q8_1) {
        const ggml::BlockInfo& bi = ggml::block_info(*bt);
        if (n_dims == 0 || ne[0] % bi.block_elems != 0)
          c.fail("tensor '" + shown + "' of type " + bi.name + ": its rows (" + std::to_string(n_dims ? ne[0] : 1) +
                 " values) are not whole blocks of " + std::to_string(bi.block_elems));
        e.block = bt;
        e.info.dtype = DType::F32;
        e.info.stored = bi.name;
        e.bytes = numel / bi.block_elems * bi.block_bytes;
        if (numel / bi.block_elems > std::numeric_limits<uint64_t>::max() / bi.block_bytes)
          c.fail("tensor '" + shown + "': its byte size overflows 64 bits");
        e.info.stored_bytes = e.bytes;
      } else {
        std::string name = bt ? ggml::block_info(*bt).name : "";
        for (const NamedType& n : kUndecoded)
          if (n.id == int(type)) name = n.name;
        skip = name.empty() ? "unknown ggml type " + std::to_string(type) + ", not read"
                            : "ggml type " + name + " is not decoded by QuantScope, not read";
      }
      if (e.offset % alignment != 0)
        c.fail("tensor '" + shown + "' starts at data offset " + std::to_string(e.offset) + ", not a multiple of the alignment " +
               std::to_string(alignment));
      if (!skip.empty()) {
        skipped_.push_back(shown + ": " + skip);
        continue;
      }
      names.push_back(e.info.name);
      entries.push_back(std::move(e));
    }
    // The data section starts at the next multiple of the alignment after the tensor infos.
    const uint64_t after = c.pos();
    const uint64_t start = (after + alignment - 1) / alignment * alignment;
    if (start < after || (start > size && !entries.empty()))
      c.fail("the data section (offset " + std::to_string(start) + ") lies past the end of the file (" + std::to_string(size) + " bytes)");
    data_start_ = start;
    const uint64_t data_size = size > start ? size - start : 0;
    {
      std::vector<std::string> sorted = names;
      std::sort(sorted.begin(), sorted.end());
      if (const auto dup = std::adjacent_find(sorted.begin(), sorted.end()); dup != sorted.end())
        c.fail("the tensor name '" + printable(*dup) + "' appears twice");
    }
    for (const Entry& e : entries)
      if (e.offset > data_size || e.bytes > data_size - e.offset)
        c.fail("tensor '" + printable(e.info.name) + "': its " + std::to_string(e.bytes) + " bytes at data offset " +
               std::to_string(e.offset) + " run past the end of the file (data section " + std::to_string(data_size) + " bytes)");
    std::vector<const Entry*> by_offset;
    for (const Entry& e : entries) by_offset.push_back(&e);
    std::sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) { return a->offset < b->offset; });
    for (std::size_t i = 1; i < by_offset.size(); ++i)
      if (by_offset[i - 1]->bytes && by_offset[i]->offset < by_offset[i - 1]->offset + by_offset[i - 1]->bytes)
        c.fail("tensors '" + printable(by_offset[i - 1]->info.name) + "' and '" + printable(by_offset[i]->info.name) + "' overlap");
    entries_ = std::move(entries);
    for (const Entry& e : entries_) tensors_.push_back(e.info);
  }

  std::shared_ptr<const RandomAccessFile> file_;
  std::vector<Entry> entries_;
  uint64_t data_start_ = 0;
};

}  // namespace

std::unique_ptr<TensorFile> open_gguf_file(const std::string& path) {
  return std::make_unique<GgufFile>(RandomAccessFile::open(path));
}

}  // namespace qs
