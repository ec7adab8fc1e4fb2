// .safetensors reader: the JSON header is parsed with nlohmann::json and checked in full at open
// (dtype, shape overflow, data_offsets within the data section, sized dtype x shape, no overlaps);
// read() preads one tensor into its own buffer, so memory follows the tensor being used, not the file,
// and a file that shrinks meanwhile gives an IoError, not SIGBUS.
// Tensors are listed in file order (by data offset; empty tensors at one offset by name). Unused bytes
// between tensors are accepted (the reference library refuses them); overlapping ranges are not.
// Dtypes: every dtype of the format (safetensors' `Dtype` enum) is known. All but C64 are decoded,
// F8_E8M0 and the packed F4 / F6_E2M3 / F6_E3M2 through the format engine (io/dtype.h). The header's
// shape counts elements, not bytes; packed elements run LSB-first through the bytes (io/dtype.h), and a
// tensor holds ceil(numel * bits / 8) bytes (the reference library writes only whole bytes and refuses
// the rest; a final partial byte is accepted here). A C64 tensor or a dtype name the format does not
// have is listed in skipped() with its reason, its data range still checked: it never fails the file.
// Exercise: tests/tst_tensorfile.cpp, tests/fuzz/fuzz_safetensors.cpp.
#include "io/json_checked.h"
#include "util/printable.h"
#include "io/tensor_file.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string_view>
#include <unordered_set>

#include <nlohmann/json.hpp>

namespace qs {

namespace {

using json = nlohmann::json;

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the safetensors library's own limit
constexpr int kMaxJsonDepth = 32;                  // a tensor entry needs 3; deeper is not a safetensors header

// The dtypes of the format. `skip` names why a known dtype is not read (it is then listed in skipped()).
struct DtypeRow {
  std::string_view name;
  DType dtype;
  unsigned bits;
  const char* skip = nullptr;
};
constexpr DtypeRow kDtypes[] = {
    {"F64", DType::F64, 64},          {"F32", DType::F32, 32},          {"F16", DType::F16, 16},
    {"BF16", DType::BF16, 16},        {"I8", DType::I8, 8},             {"U8", DType::U8, 8},
    {"I16", DType::I16, 16},          {"I32", DType::I32, 32},          {"I64", DType::I64, 64},
    {"F8_E4M3", DType::F8E4M3, 8},    {"F8_E5M2", DType::F8E5M2, 8},    {"BOOL", DType::Bool, 8},
    {"U16", DType::U16, 16},          {"U32", DType::U32, 32},          {"U64", DType::U64, 64},
    {"F8_E8M0", DType::F8E8M0, 8},    {"F8_E4M3FNUZ", DType::F8E4M3FNUZ, 8},
    {"F8_E5M2FNUZ", DType::F8E5M2FNUZ, 8},                             {"F4", DType::F4E2M1, 4},
    {"F6_E2M3", DType::F6E2M3, 6},    {"F6_E3M2", DType::F6E3M2, 6},
    {"C64", DType::F32, 64, "is complex (two float32 parts), which QuantScope does not analyse; not read"},
};

std::string read_dtypes() {
  std::string s;
  for (const DtypeRow& r : kDtypes) {
    if (r.skip) continue;
    if (!s.empty()) s += ", ";
    s += r.name;
  }
  return s;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

struct Entry {
  TensorInfo info;
  uint64_t begin = 0, end = 0;  // within the data section
  std::string skip;             // non-empty: not read, listed in skipped() as "<name>: <skip>"
};

class SafetensorsFile final : public TensorFile {
 public:
  explicit SafetensorsFile(std::shared_ptr<const RandomAccessFile> file) : file_(std::move(file)) {
    path_ = file_->path();
    kind_ = "safetensors";
    parse();
  }

  TensorBytes read(std::size_t index) const override {
    if (index >= offsets_.size())
      throw IoError(path_ + ": no tensor #" + std::to_string(index) + " (the file has " +
                    std::to_string(offsets_.size()) + ")");
    return RandomAccessFile::read_owned(file_, data_start_ + offsets_[index], tensors_[index].nbytes());
  }

  void read_f32(std::size_t index, float* out) const override {
    if (index >= offsets_.size()) read(index);  // throws "no tensor #..."
    file_->read_f32(data_start_ + offsets_[index], tensors_[index].dtype, tensors_[index].numel(), out);
  }

  bool reads_f32_in_parts() const override { return true; }
  void read_f32_part(std::size_t index, std::size_t begin, std::size_t count, float* out) const override {
    const TensorInfo& t = check_part(index, begin, count);
    file_->read_f32(data_start_ + offsets_[index] + dtype_nbytes(t.dtype, begin), t.dtype, count, out);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw IoError(path_ + ": " + what); }

  void parse() {
    const uint64_t size = file_->size();
    if (size < 8)
      fail(size == 0 ? "empty file, not a .safetensors file"
                     : "truncated: " + std::to_string(size) + " bytes, too short for the 8-byte header length");
    uint8_t len_bytes[8];
    file_->read_exact(0, len_bytes, 8);
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | len_bytes[i];
    if (header_len > kMaxHeaderBytes)
      fail("header length " + std::to_string(header_len) + " is above the 100 MB limit (" +
           std::to_string(kMaxHeaderBytes) + " bytes)");
    if (header_len > size - 8)
      fail("header length " + std::to_string(header_len) + " runs past the end of the file (" + std::to_string(size) +
           " bytes)");
    if (header_len == 0) fail("header is not a JSON object (expected '{' at offset 8)");
    // Checked against the file above, so this allocation is at most the file's own header.
    std::string text(static_cast<std::size_t>(header_len), '\0');
    file_->read_exact(8, text.data(), text.size());
    if (text[0] != '{') fail("header is not a JSON object (expected '{' at offset 8)");
    data_start_ = 8 + header_len;
    const uint64_t data_size = size - data_start_;

    json header;
    try {
      // Depth and duplicate keys (a duplicated tensor name or field must not be resolved to the last one).
      header = parse_checked_json(
          text, kMaxJsonDepth,
          {.too_deep = [&] { fail("header nests deeper than " + std::to_string(kMaxJsonDepth) + " levels"); },
           .duplicate = [&](const std::string& k, std::size_t depth, const std::string&) {
             fail("header has the key '" + printable(k) + "' twice" + (depth == 1 ? "" : " in one entry"));
           }});
    } catch (const json::exception& e) {
      fail("header is not valid JSON: " + json_error_text(e));
    }
    if (!header.is_object()) fail("header is not a JSON object");

    std::vector<Entry> entries;
    entries.reserve(header.size());
    for (const auto& [name, value] : header.items()) {
      if (name == "__metadata__") {  // a free-form string map: shown by `info`, otherwise not needed
        if (value.is_object())
          for (const auto& [k, v] : value.items())
            metadata_.emplace_back(printable(k, false, 200), v.is_string() ? printable(v.get<std::string>(), false, 300)
                                                                           : printable(v.dump(), false, 300));
        continue;
      }
      entries.push_back(parse_entry(name, value, data_size));
    }

    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      if (a.begin != b.begin) return a.begin < b.begin;
      if (a.end != b.end) return a.end < b.end;
      return a.info.name < b.info.name;
    });
    // In offset order, a non-empty tensor must start at or after the furthest end seen so far.
    const Entry* reach = nullptr;
    for (const Entry& e : entries) {
      if (e.begin == e.end) continue;  // empty tensors occupy no bytes
      if (reach && e.begin < reach->end)
        fail(printable(e.info.name) + ": data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
             ") overlap tensor '" + printable(reach->info.name) + "' [" + std::to_string(reach->begin) + ", " +
             std::to_string(reach->end) + ")");
      if (!reach || e.end > reach->end) reach = &e;
    }
    for (Entry& e : entries) {
      if (!e.skip.empty()) {
        skipped_.push_back(printable(e.info.name) + ": " + e.skip);
        continue;
      }
      offsets_.push_back(e.begin);
      tensors_.push_back(std::move(e.info));
    }
  }

  Entry parse_entry(const std::string& name, const json& value, uint64_t data_size) const {
    auto tfail = [&](const std::string& what) { fail(printable(name) + ": " + what); };
    if (!value.is_object()) tfail("entry is not an object with dtype, shape and data_offsets");
    Entry e;
    e.info.name = name;

    const auto dt = value.find("dtype");
    if (dt == value.end()) tfail("entry has no 'dtype'");
    if (!dt->is_string()) tfail("'dtype' is not a string");
    const std::string& dname = dt->get_ref<const std::string&>();
    const auto row = std::find_if(std::begin(kDtypes), std::end(kDtypes),
                                  [&](const DtypeRow& r) { return r.name == dname; });
    if (row == std::end(kDtypes)) {
      // A dtype newer than this reader: its size is unknown, so only its data range is checked.
      e.skip = "unsupported dtype '" + printable(dname, false, 40) + "', not read (read: " + read_dtypes() + ")";
      parse_offsets(name, value, data_size, e);
      return e;
    }
    e.info.dtype = row->dtype;
    if (row->skip) e.skip = "dtype " + std::string(row->name) + " " + row->skip;

    const auto sh = value.find("shape");
    if (sh == value.end()) tfail("entry has no 'shape'");
    if (!sh->is_array()) tfail("'shape' is not an array");
    uint64_t numel_nonzero = 1;
    bool has_zero = false;
    for (const json& d : *sh) {
      if (d.is_number_integer() && d.get<int64_t>() < 0 && !d.is_number_unsigned())
        tfail("negative dimension " + std::to_string(d.get<int64_t>()) + " in 'shape'");
      if (!d.is_number_unsigned()) tfail("'shape' holds something other than non-negative integers");
      const uint64_t v = d.get<uint64_t>();
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        tfail("dimension " + std::to_string(v) + " in 'shape' is too large");
      e.info.shape.push_back(static_cast<int64_t>(v));
      if (v == 0)
        has_zero = true;
      else if (__builtin_mul_overflow(numel_nonzero, v, &numel_nonzero))
        tfail("'shape' has too many elements (the product of its dimensions overflows 64 bits)");
    }
    // Bits per element from the row (C64 has no DType of its own); packed dtypes round up to whole bytes.
    uint64_t nbits = 0, nbytes = 0;
    if (__builtin_mul_overflow(numel_nonzero, static_cast<uint64_t>(row->bits), &nbits))
      tfail("shape " + shape_text(e.info.shape) + " of " + dname + " is too large (byte size overflows)");
    nbytes = nbits / 8 + (nbits % 8 != 0);
    if (has_zero) nbytes = 0;

    parse_offsets(name, value, data_size, e);
    const std::string range = "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + ")";
    if (e.end - e.begin != nbytes)
      tfail(range + " hold " + std::to_string(e.end - e.begin) + " bytes but shape " + shape_text(e.info.shape) +
            " of " + dname + " needs " + std::to_string(nbytes) +
            (row->bits < 8 ? " (" + std::to_string(row->bits) + " bits per element, packed)" : std::string()));
    return e;
  }

  // data_offsets: a pair [begin, end) within the data section.
  void parse_offsets(const std::string& name, const json& value, uint64_t data_size, Entry& e) const {
    auto tfail = [&](const std::string& what) { fail(printable(name) + ": " + what); };
    const auto off = value.find("data_offsets");
    if (off == value.end()) tfail("entry has no 'data_offsets'");
    if (!off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() || !(*off)[1].is_number_unsigned())
      tfail("'data_offsets' is not a pair of non-negative integers [begin, end]");
    e.begin = (*off)[0].get<uint64_t>();
    e.end = (*off)[1].get<uint64_t>();
    const std::string range = "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + ")";
    if (e.begin > e.end) tfail(range + " end before they begin");
    if (e.end > data_size)
      tfail(range + " run past the end of the data section (" + std::to_string(data_size) + " bytes)");
  }

  std::shared_ptr<const RandomAccessFile> file_;
  std::size_t data_start_ = 0;
  std::vector<uint64_t> offsets_;  // per tensor, within the data section
};

}  // namespace

std::unique_ptr<TensorFile> open_safetensors_file(const std::string& path) {
  return std::make_unique<SafetensorsFile>(RandomAccessFile::open(path));
}

}  // namespace qs
