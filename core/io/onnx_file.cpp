// .onnx reader: parses the ModelProto with libprotobuf and a minimal schema (io/onnx_min.proto) and lists
// the initializers and Constant tensors of the main graph and of every subgraph (If/Loop/Scan bodies).
// Exercise: tests/tst_onnx.cpp, tests/fuzz/fuzz_onnx.cpp, `quantscope-cli analyze --in model.onnx ...`.
//
// Names: a main-graph tensor keeps its own name; a tensor inside a subgraph is named
// `<node name>/<attribute name>/<tensor name>`, nested once per level (`If_0/then_branch/Loop_3/body/w`),
// so that names stay unique when branches repeat them. A Constant node's tensor is named by the tensor's
// own name, or by the node's first output when that is empty.
//
// Memory: protobuf parses a whole message at once, so the parsed model (about the file's size) stays in
// memory while the file is open, and read() of a raw_data tensor points into it without copying. That is
// acceptable because protobuf cannot parse a message above 2 GiB anyway; bigger models keep their weights
// in external data files, which read() loads one tensor at a time. The model file is streamed into the
// parser with pread (no memory map, no second copy), so a file that shrinks meanwhile gives an IoError.
#include "io/tensor_file.h"

#include "onnx_min.pb.h"

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace qs {

// raw_data and external data are little-endian; the bytes are handed out as they are.
static_assert(std::endian::native == std::endian::little, "onnx_file.cpp assumes a little-endian host");

namespace {

namespace fs = std::filesystem;
using qs_onnx::TensorProto;

// ONNX data_type -> DType. Every numeric type of onnx.proto (IR version 12: up to UINT2 / INT2) is
// read; the packed ones (UINT4, INT4, FLOAT4E2M1 two per byte, UINT2 / INT2 four per byte, first
// element in the least significant bits) keep their packing in read() and decode in convert_to_f32.
// STRING and the complex types are known but not numbers here, and a number onnx.proto does not define
// (a newer type, or a damaged file) cannot be sized: both are listed in skipped() with the type, never
// dropped silently and never failing the file.
enum class TypeClass { Mapped, Skipped, Unknown };
struct OnnxType {
  TypeClass cls;
  DType dtype;
  const char* name = "";  // for skipped types
};
OnnxType onnx_type(int32_t t) {
  switch (t) {
    case TensorProto::FLOAT: return {TypeClass::Mapped, DType::F32};
    case TensorProto::UINT8: return {TypeClass::Mapped, DType::U8};
    case TensorProto::INT8: return {TypeClass::Mapped, DType::I8};
    case TensorProto::UINT16: return {TypeClass::Mapped, DType::U16};
    case TensorProto::INT16: return {TypeClass::Mapped, DType::I16};
    case TensorProto::INT32: return {TypeClass::Mapped, DType::I32};
    case TensorProto::INT64: return {TypeClass::Mapped, DType::I64};
    case TensorProto::BOOL: return {TypeClass::Mapped, DType::Bool};
    case TensorProto::FLOAT16: return {TypeClass::Mapped, DType::F16};
    case TensorProto::DOUBLE: return {TypeClass::Mapped, DType::F64};
    case TensorProto::UINT32: return {TypeClass::Mapped, DType::U32};
    case TensorProto::UINT64: return {TypeClass::Mapped, DType::U64};
    case TensorProto::BFLOAT16: return {TypeClass::Mapped, DType::BF16};
    case TensorProto::FLOAT8E4M3FN: return {TypeClass::Mapped, DType::F8E4M3};
    case TensorProto::FLOAT8E5M2: return {TypeClass::Mapped, DType::F8E5M2};
    case TensorProto::FLOAT8E4M3FNUZ: return {TypeClass::Mapped, DType::F8E4M3FNUZ};
    case TensorProto::FLOAT8E5M2FNUZ: return {TypeClass::Mapped, DType::F8E5M2FNUZ};
    case TensorProto::UINT4: return {TypeClass::Mapped, DType::U4};
    case TensorProto::INT4: return {TypeClass::Mapped, DType::I4};
    case TensorProto::FLOAT4E2M1: return {TypeClass::Mapped, DType::F4E2M1};
    case TensorProto::FLOAT8E8M0: return {TypeClass::Mapped, DType::F8E8M0};
    case TensorProto::UINT2: return {TypeClass::Mapped, DType::U2};
    case TensorProto::INT2: return {TypeClass::Mapped, DType::I2};
    case TensorProto::STRING: return {TypeClass::Skipped, DType::U8, "STRING (text)"};
    case TensorProto::COMPLEX64: return {TypeClass::Skipped, DType::U8, "COMPLEX64 (complex)"};
    case TensorProto::COMPLEX128: return {TypeClass::Skipped, DType::U8, "COMPLEX128 (complex)"};
    case TensorProto::UNDEFINED: return {TypeClass::Skipped, DType::U8, "UNDEFINED (0)"};
    default: return {TypeClass::Unknown, DType::U8};
  }
}

// Where a listed tensor's bytes are.
enum class Source { Raw, Typed, External };

struct Entry {
  const TensorProto* proto = nullptr;
  Source source = Source::Raw;
  fs::path external;        // resolved (canonical) path of the external data file
  uint64_t offset = 0;      // into `external`
};

std::optional<uint64_t> parse_u64(std::string_view s) {
  uint64_t v = 0;
  if (s.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// True when `p` is `dir` or below it, compared component by component (both canonical).
bool is_within(const fs::path& p, const fs::path& dir) {
  auto pi = p.begin();
  for (auto di = dir.begin(); di != dir.end(); ++di, ++pi) {
    if (di->empty() && std::next(di) == dir.end()) break;  // a trailing separator
    if (pi == p.end() || *pi != *di) return false;
  }
  return true;
}

// Feeds protobuf from a RandomAccessFile. A read error or an early end (the file shrank) is remembered
// and reported after the parse, since no exception may pass through protobuf.
class PreadInputStream final : public google::protobuf::io::CopyingInputStream {
 public:
  explicit PreadInputStream(const RandomAccessFile& file) : file_(file) {}
  int Read(void* buffer, int size) override {
    if (pos_ >= file_.size() || size <= 0) return 0;
    const auto n = static_cast<std::size_t>(std::min<uint64_t>(uint64_t(size), file_.size() - pos_));
    const long got = file_.pread_some(pos_, buffer, n);
    if (got <= 0) {
      error_ = got < 0 ? errno : 0;
      failed_ = true;
      return -1;
    }
    pos_ += static_cast<uint64_t>(got);
    return static_cast<int>(got);
  }
  bool failed() const { return failed_; }
  int error() const { return error_; }  // errno, or 0 when the file ended early

 private:
  const RandomAccessFile& file_;
  uint64_t pos_ = 0;
  bool failed_ = false;
  int error_ = 0;
};

class OnnxFile final : public TensorFile {
 public:
  explicit OnnxFile(const std::string& path) {
    path_ = path;
    kind_ = "onnx";
    const auto file = RandomAccessFile::open(path);
    if (file->size() > static_cast<uint64_t>(INT_MAX))
      fail_file("larger than 2 GiB, which protobuf cannot parse; store the weights as ONNX external data");
    auto model = std::make_shared<qs_onnx::ModelProto>();
    PreadInputStream in(*file);
    bool parsed = false;
    {
      google::protobuf::io::CopyingInputStreamAdaptor stream(&in, 1 << 20);
      // Bounded by the size at open: protobuf reserves string memory only within that bound.
      parsed = model->ParseFromBoundedZeroCopyStream(&stream, static_cast<int>(file->size()));
    }
    if (in.failed()) {
      file->check_unchanged();
      fail_file(in.error() ? std::string("cannot read: ") + std::strerror(in.error())
                           : std::string("ended early while reading; was it rewritten while being read?"));
    }
    if (!parsed) fail_file("not an ONNX model (protobuf parse failed)");
    if (!model->has_graph()) fail_file("not an ONNX model (no graph)");
    model_ = std::move(model);  // every byte now lives in `model`

    std::error_code ec;
    const fs::path abs = fs::absolute(fs::path(path), ec);
    if (!ec) dir_ = fs::canonical(abs.parent_path(), ec);
    if (ec) fail_file("cannot resolve the model's folder: " + ec.message());

    collect_graph(model_->graph(), "");
  }

  TensorBytes read(std::size_t index) const override {
    if (index >= entries_.size())
      throw IoError(path_ + ": tensor index " + std::to_string(index) + " out of range");
    const Entry& e = entries_[index];
    const TensorInfo& info = tensors_[index];
    const std::size_t nbytes = info.nbytes();
    switch (e.source) {
      case Source::Raw: {
        const auto* p = reinterpret_cast<const uint8_t*>(e.proto->raw_data().data());
        return {p, nbytes, std::shared_ptr<const void>(model_, p)};
      }
      case Source::Typed: {
        auto buf = std::make_shared<std::vector<uint8_t>>(nbytes);
        fill_typed(*e.proto, info.dtype, dtype_is_packed(info.dtype) ? nbytes : info.numel(), buf->data());
        return {buf->data(), nbytes, buf};
      }
      case Source::External: return read_external(e, info);
    }
    return {};
  }

 private:
  [[noreturn]] void fail_file(const std::string& what) const { throw IoError(path_ + ": " + what); }
  [[noreturn]] void fail(const std::string& tensor, const std::string& what) const {
    throw IoError(path_ + ": " + tensor + ": " + what);
  }

  // Protobuf refuses messages nested deeper than 100, so this recursion is bounded by the parser.
  void collect_graph(const qs_onnx::GraphProto& g, const std::string& prefix) {
    for (int k = 0; k < g.initializer_size(); ++k) {
      const TensorProto& t = g.initializer(k);
      add(t, prefix + (t.name().empty() ? "initializer#" + std::to_string(k) : t.name()));
    }
    for (int k = 0; k < g.node_size(); ++k) {
      const qs_onnx::NodeProto& node = g.node(k);
      const bool is_constant =
          node.op_type() == "Constant" && (node.domain().empty() || node.domain() == "ai.onnx");
      // A node without a name is labelled by its first output (unique in a graph by SSA), else by position.
      const std::string label = !node.name().empty()      ? node.name()
                                : node.output_size() > 0 && !node.output(0).empty()
                                    ? node.output(0)
                                    : node.op_type() + "#" + std::to_string(k);
      if (node.op_type() == "DequantizeLinear" && node.input_size() >= 2) add_dequantize_node(node, prefix);
      for (const qs_onnx::AttributeProto& a : node.attribute()) {
        if (is_constant && a.name() == "value" && a.has_t()) {
          const TensorProto& t = a.t();
          const std::string name = !t.name().empty()                               ? t.name()
                                   : node.output_size() > 0 && !node.output(0).empty() ? node.output(0)
                                                                                       : label;
          add(t, prefix + name);
        }
        if (a.has_g()) collect_graph(a.g(), prefix + label + "/" + a.name() + "/");
        for (int j = 0; j < a.graphs_size(); ++j)
          collect_graph(a.graphs(j), prefix + label + "/" + a.name() + "[" + std::to_string(j) + "]/");
      }
    }
  }

  // A DequantizeLinear node (ai.onnx or com.microsoft), for io/prequant.h; its inputs are named as
  // this graph's tensors are listed (with the subgraph prefix).
  void add_dequantize_node(const qs_onnx::NodeProto& node, const std::string& prefix) {
    if (!node.domain().empty() && node.domain() != "ai.onnx" && node.domain() != "com.microsoft") return;
    DequantizeLinearInfo d;
    d.output = node.output_size() > 0 && !node.output(0).empty() ? prefix + node.output(0) : std::string();
    d.x = prefix + node.input(0);
    d.scale = prefix + node.input(1);
    if (node.input_size() >= 3 && !node.input(2).empty()) d.zero_point = prefix + node.input(2);
    for (const qs_onnx::AttributeProto& a : node.attribute()) {
      if (a.name() == "axis") d.axis = a.i();
      if (a.name() == "block_size") d.block_size = a.i();
    }
    dq_nodes_.push_back(std::move(d));
  }

 public:
  std::vector<DequantizeLinearInfo> dequantize_nodes() const override { return dq_nodes_; }

 private:
  std::string unique_name(const std::string& name) {
    if (names_.insert(name).second) return name;
    // Malformed files may repeat a name (the ONNX checker refuses that); keep every tensor reachable as
    // `name#2`, `name#3`, ... The next suffix is remembered per name, so many repeats stay linear.
    std::size_t& n = next_suffix_[name];
    for (n = std::max<std::size_t>(n, 2);; ++n) {
      std::string candidate = name + "#" + std::to_string(n);
      if (names_.insert(candidate).second) {
        ++n;
        return candidate;
      }
    }
  }

  void add(const TensorProto& t, const std::string& raw_name) {
    const OnnxType type = onnx_type(t.data_type());
    if (type.cls == TypeClass::Unknown) {
      skipped_.push_back(raw_name + ": unknown ONNX data_type " + std::to_string(t.data_type()) +
                         " (not in onnx.proto as of IR version 12), not read");
      return;
    }
    if (type.cls == TypeClass::Skipped) {
      skipped_.push_back(raw_name + ": ONNX data_type " + type.name + ", not read");
      return;
    }

    TensorInfo info;
    info.name = unique_name(raw_name);
    info.dtype = type.dtype;
    const std::string& name = info.name;
    if (t.has_segment()) fail(name, "segmented tensors (TensorProto.segment) are not supported");

    // numel and nbytes, refusing negative dims and any product that overflows, even when a later
    // dimension is 0, so that no caller has to be careful with partial products.
    uint64_t numel = 1;
    bool zero = false;
    for (int64_t d : t.dims()) {
      if (d < 0) fail(name, "negative dimension " + std::to_string(d));
      info.shape.push_back(d);
      if (d == 0) {
        zero = true;
        continue;
      }
      if (__builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel) || numel > uint64_t(INT64_MAX))
        fail(name, "shape product overflows");
    }
    if (zero) numel = 0;
    uint64_t nbytes = 0;
    if (!dtype_nbytes(info.dtype, numel, &nbytes) || nbytes > uint64_t(INT64_MAX))
      fail(name, "shape × dtype size overflows");

    Entry e;
    e.proto = &t;
    if (t.data_location() == TensorProto::EXTERNAL) {
      e.source = Source::External;
      resolve_external(t, name, nbytes, e);
    } else if (t.data_location() != TensorProto::DEFAULT) {
      fail(name, "unknown data_location " + std::to_string(t.data_location()));
    } else if (t.has_raw_data()) {
      // raw_data wins over typed fields, as in onnx.numpy_helper.to_array.
      e.source = Source::Raw;
      if (t.raw_data().size() != nbytes)
        fail(name, "raw_data holds " + std::to_string(t.raw_data().size()) + " bytes, but dims × " +
                       to_string(info.dtype) + " need " + std::to_string(nbytes) + packing(info.dtype));
    } else {
      e.source = Source::Typed;
      // A packed type has one int32_data value per byte (two 4-bit or four 2-bit elements).
      const auto [field, count] = typed_count(t, info.dtype);
      const uint64_t need = dtype_is_packed(info.dtype) ? nbytes : numel;
      if (count != need)
        fail(name, std::string(field) + " holds " + std::to_string(count) + " values, but dims need " +
                       std::to_string(need) + packing(info.dtype));
    }
    entries_.push_back(std::move(e));
    tensors_.push_back(std::move(info));
  }

  // " (two int4 per byte)" for the size messages of packed types.
  static std::string packing(DType dtype) {
    if (!dtype_is_packed(dtype)) return {};
    return std::string(" (") + (dtype_bits(dtype) == 4 ? "two " : "four ") + to_string(dtype) + " per byte)";
  }

  // The typed field that carries `dtype` per onnx.proto, and how many values it holds.
  static std::pair<const char*, uint64_t> typed_count(const TensorProto& t, DType dtype) {
    switch (dtype) {
      case DType::F32: return {"float_data", uint64_t(t.float_data_size())};
      case DType::F64: return {"double_data", uint64_t(t.double_data_size())};
      case DType::I64: return {"int64_data", uint64_t(t.int64_data_size())};
      case DType::U32:
      case DType::U64: return {"uint64_data", uint64_t(t.uint64_data_size())};
      default: return {"int32_data", uint64_t(t.int32_data_size())};
    }
  }

  // Typed fields -> little-endian element bytes. int32_data carries the narrower types: integers as
  // values, (b)float16 and float8 as bit patterns in the low bits (onnx.proto); both keep the low bits.
  // Packed types: one int32_data value per byte, as packed; `n` is then the byte count.
  static void fill_typed(const TensorProto& t, DType dtype, std::size_t n, uint8_t* out) {
    auto narrow = [&](auto tag) {
      using T = decltype(tag);
      for (std::size_t i = 0; i < n; ++i) {
        const T v = static_cast<T>(static_cast<uint32_t>(t.int32_data(static_cast<int>(i))));
        std::memcpy(out + i * sizeof(T), &v, sizeof(T));
      }
    };
    if (n == 0) return;
    switch (dtype) {
      case DType::F32: std::memcpy(out, t.float_data().data(), n * 4); break;
      case DType::F64: std::memcpy(out, t.double_data().data(), n * 8); break;
      case DType::I64: std::memcpy(out, t.int64_data().data(), n * 8); break;
      case DType::U64: std::memcpy(out, t.uint64_data().data(), n * 8); break;
      case DType::I32: std::memcpy(out, t.int32_data().data(), n * 4); break;
      case DType::U32:
        for (std::size_t i = 0; i < n; ++i) {
          const auto v = static_cast<uint32_t>(t.uint64_data(static_cast<int>(i)));
          std::memcpy(out + i * 4, &v, 4);
        }
        break;
      case DType::I16: case DType::U16: case DType::F16: case DType::BF16: narrow(uint16_t{}); break;
      case DType::I8: case DType::U8: case DType::F8E4M3: case DType::F8E5M2: case DType::F8E4M3FNUZ:
      case DType::F8E5M2FNUZ: case DType::F8E8M0: case DType::F4E2M1: case DType::F6E2M3: case DType::F6E3M2:
      case DType::I4: case DType::U4: case DType::I2: case DType::U2: narrow(uint8_t{}); break;
      case DType::Bool:
        for (std::size_t i = 0; i < n; ++i) out[i] = t.int32_data(static_cast<int>(i)) != 0 ? 1 : 0;
        break;
    }
  }

  // External data: `location` relative to the model's folder, optional `offset` and `length`.
  // A model must not make QuantScope read arbitrary files, so a location that is absolute, has a `..`
  // component, or resolves (through symlinks) outside the model's folder is refused.
  void resolve_external(const TensorProto& t, const std::string& name, uint64_t nbytes, Entry& e) const {
    std::optional<std::string> location;
    std::optional<uint64_t> offset, length;
    for (const auto& kv : t.external_data()) {
      if (kv.key() == "location") {
        location = kv.value();
      } else if (kv.key() == "offset" || kv.key() == "length") {
        const auto v = parse_u64(kv.value());
        if (!v) fail(name, "external data " + kv.key() + " '" + kv.value() + "' is not a non-negative integer");
        (kv.key() == "offset" ? offset : length) = v;
      }
      // "checksum" and unknown keys are ignored.
    }
    if (!location || location->empty()) fail(name, "external data without a location");
    const std::string& loc = *location;
    if (loc.find('\0') != std::string::npos) fail(name, "external data location contains a NUL byte");
    const fs::path rel(loc);
    if (rel.is_absolute() || rel.has_root_directory() || rel.has_root_name())
      fail(name, "external data location '" + loc + "' is absolute; it must be relative to the model's folder");
    for (const fs::path& part : rel)
      if (part == "..") fail(name, "external data location '" + loc + "' leaves the model's folder");

    std::error_code ec;
    const fs::path target = fs::weakly_canonical(dir_ / rel, ec);
    if (ec) fail(name, "external data location '" + loc + "': " + ec.message());
    if (!is_within(target, dir_) || target == dir_)
      fail(name, "external data location '" + loc + "' resolves outside the model's folder");
    const auto st = fs::status(target, ec);
    if (ec || !fs::exists(st)) fail(name, "external data file '" + loc + "' not found");
    if (!fs::is_regular_file(st)) fail(name, "external data file '" + loc + "' is not a regular file");
    const uint64_t size = fs::file_size(target, ec);
    if (ec) fail(name, "external data file '" + loc + "': " + ec.message());

    const uint64_t off = offset.value_or(0);
    if (off > size)
      fail(name, "external data offset " + std::to_string(off) + " is past the end of '" + loc + "' (" +
                     std::to_string(size) + " bytes)");
    const uint64_t len = length.value_or(size - off);
    if (len > size - off)
      fail(name, "external data runs past the end of '" + loc + "' (offset " + std::to_string(off) +
                     " + length " + std::to_string(len) + " > " + std::to_string(size) + " bytes)");
    if (len != nbytes)
      fail(name, "external data holds " + std::to_string(len) + " bytes, but dims × " +
                     to_string(onnx_type(t.data_type()).dtype) + " need " + std::to_string(nbytes));
    e.external = target;
    e.offset = off;
  }

  TensorBytes read_external(const Entry& e, const TensorInfo& info) const {
    const std::size_t nbytes = info.nbytes();
    // The folder may have changed since open(): check the containment again before reading.
    std::error_code ec;
    const fs::path now = fs::weakly_canonical(e.external, ec);
    if (ec || now != e.external || !is_within(now, dir_))
      fail(info.name, "external data file '" + e.external.string() + "' changed since the model was opened");
    // RandomAccessFile refuses a FIFO or device put in the file's place (without blocking), and the
    // size is checked before the buffer is allocated.
    try {
      const auto file = RandomAccessFile::open(e.external.string());
      if (file->size() < e.offset || file->size() - e.offset < nbytes)
        fail(info.name, "external data file '" + e.external.string() + "' is shorter than expected (" +
                            std::to_string(file->size()) + " bytes, the tensor needs " + std::to_string(nbytes) +
                            " at offset " + std::to_string(e.offset) + ")");
      return RandomAccessFile::read_owned(file, e.offset, nbytes);
    } catch (const IoError& err) {
      const std::string what = err.what();
      if (what.starts_with(path_ + ": ")) throw;  // already ours
      fail(info.name, "external data: " + what);
    }
  }

  std::shared_ptr<const qs_onnx::ModelProto> model_;
  fs::path dir_;                       // canonical folder of the model file
  std::vector<Entry> entries_;         // parallel to tensors_
  std::unordered_set<std::string> names_;
  std::unordered_map<std::string, std::size_t> next_suffix_;
  std::vector<DequantizeLinearInfo> dq_nodes_;  // io/prequant.h reads them
};

}  // namespace

std::unique_ptr<TensorFile> open_onnx_file(const std::string& path) {
  return std::make_unique<OnnxFile>(path);
}

}  // namespace qs
