// .npy reader/writer: a strict parser for the header's Python-literal dict that checks every size
// against the file before allocating, numpy-identical header output, and exact float16 conversion.
// Exercise: tests/tst_npy.cpp, tests/cli/cli_npy_errors.cmake.
#include "util/printable.h"
#include "io/npy.h"

#include "io/atomic_file.h"

#include <bit>
#include <cctype>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>

namespace qs {

// The in-memory layout is the file's layout (little-endian); a big-endian host would need swaps.
static_assert(std::endian::native == std::endian::little, "npy.cpp assumes a little-endian host");

namespace {

constexpr uint8_t kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr std::size_t kAlign = 64;             // numpy's ARRAY_ALIGN
constexpr std::size_t kGrowthAxisDigits = 21;  // numpy's GROWTH_AXIS_MAX_DIGITS
constexpr std::size_t kMaxDims = 64;           // numpy 2's NPY_MAXDIMS

// descr spellings we accept. Only little-endian and, for one-byte types, byte-order-free ones:
// '=' (native) is unambiguous only where there are no bytes to order.
struct DescrRow {
  std::string_view descr;
  DType dtype;
};
constexpr DescrRow kDescrs[] = {
    {"<f4", DType::F32}, {"<f8", DType::F64}, {"<f2", DType::F16}, {"<i4", DType::I32},
    {"<u2", DType::U16}, {"|i1", DType::I8},  {"<i1", DType::I8},  {"=i1", DType::I8},
    {"|u1", DType::U8},  {"<u1", DType::U8},  {"=u1", DType::U8},
};

const char* canonical_descr(DType t) {
  switch (t) {
    case DType::F32: return "<f4";
    case DType::F64: return "<f8";
    case DType::F16: return "<f2";
    case DType::I8: return "|i1";
    case DType::U8: return "|u1";
    case DType::I32: return "<i4";
    case DType::U16: return "<u2";
    default: return nullptr;  // not storable in .npy by this writer
  }
}


// Checked product for shapes: numel, and numel * itemsize, must fit before anything is allocated.
bool mul_overflows(uint64_t a, uint64_t b, uint64_t& out) { return __builtin_mul_overflow(a, b, &out); }

// Recursive descent over the subset of Python literals numpy writes in a header:
// {'key': value, ...} with values 'str', True/False, (int, ...). Anything else is an error with a
// position, never undefined behaviour: the parser only indexes within `s`.
class HeaderParser {
 public:
  HeaderParser(std::string_view s, const std::string& name) : s_(s), name_(name) {}

  struct Result {
    std::string descr;
    bool fortran_order = false;
    std::vector<int64_t> shape;
  };

  Result parse() {
    Result r;
    bool have_descr = false, have_fortran = false, have_shape = false;
    skip_ws();
    if (!eat('{')) error("header is not a Python dict (expected '{' " + where() + ")");
    for (;;) {
      skip_ws();
      if (eat('}')) break;
      const std::string key = parse_string("a key");
      skip_ws();
      if (!eat(':')) error("expected ':' after key '" + printable(key, true, 40) + "' " + where());
      skip_ws();
      if (key == "descr") {
        if (have_descr) error("duplicate key 'descr' in header");
        have_descr = true;
        if (peek() == '[') error("structured dtypes (a list for 'descr') are not supported");
        r.descr = parse_string("the 'descr' string");
      } else if (key == "fortran_order") {
        if (have_fortran) error("duplicate key 'fortran_order' in header");
        have_fortran = true;
        r.fortran_order = parse_bool();
      } else if (key == "shape") {
        if (have_shape) error("duplicate key 'shape' in header");
        have_shape = true;
        r.shape = parse_shape();
      } else {
        error("unexpected key '" + printable(key, true, 40) + "' in header (expected 'descr', 'fortran_order', 'shape')");
      }
      skip_ws();
      if (eat(',')) continue;  // also covers the trailing comma numpy writes
      skip_ws();
      if (eat('}')) break;
      error("expected ',' or '}' in header " + where());
    }
    skip_ws();
    if (pos_ != s_.size()) error("unexpected text after the header dict " + where());
    if (!have_descr) error("header has no 'descr' key");
    if (!have_fortran) error("header has no 'fortran_order' key");
    if (!have_shape) error("header has no 'shape' key");
    return r;
  }

 private:
  [[noreturn]] void error(const std::string& what) const { throw IoError(name_ + ": " + what); }
  std::string where() const {
    if (pos_ >= s_.size()) return "at end of header";
    return "at header offset " + std::to_string(pos_) + " near '" + printable(s_.substr(pos_), true, 12) + "'";
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool eat(char c) {
    if (pos_ >= s_.size() || s_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool eat_word(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w) return false;
    // "Truex" is not True.
    const std::size_t end = pos_ + w.size();
    if (end < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[end])) || s_[end] == '_')) return false;
    pos_ = end;
    return true;
  }

  std::string parse_string(const std::string& what) {
    const char q = peek();
    if (q != '\'' && q != '"') error("expected " + what + " in quotes " + where());
    ++pos_;
    const std::size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != q) {
      if (s_[pos_] == '\\') error("escape sequences in header strings are not supported " + where());
      ++pos_;
    }
    if (pos_ >= s_.size()) error("unterminated string in header");
    std::string out(s_.substr(start, pos_ - start));
    ++pos_;
    return out;
  }

  bool parse_bool() {
    if (eat_word("True")) return true;
    if (eat_word("False")) return false;
    error("'fortran_order' must be True or False " + where());
  }

  int64_t parse_dim() {
    if (peek() == '-') {
      std::size_t p = pos_ + 1;
      while (p < s_.size() && std::isdigit(static_cast<unsigned char>(s_[p]))) ++p;
      error("negative dimension " + printable(s_.substr(pos_, p - pos_), true, 40) + " in shape");
    }
    if (!std::isdigit(static_cast<unsigned char>(peek()))) error("expected an integer in 'shape' " + where());
    uint64_t v = 0;
    const std::size_t start = pos_;
    bool too_big = false;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      const uint64_t d = static_cast<uint64_t>(s_[pos_] - '0');
      if (v > (static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - d) / 10) too_big = true;
      if (!too_big) v = v * 10 + d;
      ++pos_;
    }
    if (too_big) error("dimension " + printable(s_.substr(start, pos_ - start), true, 40) + " in shape is too large");
    if (peek() == 'L') ++pos_;  // Python 2 numpy wrote longs as 3L
    return static_cast<int64_t>(v);
  }

  std::vector<int64_t> parse_shape() {
    if (!eat('(')) error("'shape' must be a tuple like (2, 3) " + where());
    std::vector<int64_t> shape;
    skip_ws();
    if (eat(')')) return shape;
    for (;;) {
      skip_ws();
      shape.push_back(parse_dim());
      if (shape.size() > kMaxDims) error("shape has more than " + std::to_string(kMaxDims) + " dimensions");
      skip_ws();
      if (eat(',')) {
        skip_ws();
        if (eat(')')) return shape;
        continue;
      }
      if (eat(')')) {
        // Python: (3) is the int 3, not a tuple; numpy refuses it, so do we.
        if (shape.size() == 1)
          error("'shape' (" + std::to_string(shape[0]) + ") is not a tuple; expected (" + std::to_string(shape[0]) +
                ",)");
        return shape;
      }
      error("expected ',' or ')' in 'shape' " + where());
    }
  }

  std::string_view s_;
  const std::string& name_;
  std::size_t pos_ = 0;
};

std::optional<DType> dtype_from_descr(std::string_view d) {
  for (const DescrRow& r : kDescrs)
    if (r.descr == d) return r.dtype;
  return std::nullopt;
}

std::string refuse_descr_message(const std::string& d) {
  std::string msg = "unsupported dtype '" + printable(d, true, 40) + "'";
  if (!d.empty() && d[0] == '>')
    msg += " (big-endian; convert with a.astype(a.dtype.newbyteorder('<')))";
  else if (d.find('O') != std::string::npos)
    msg += " (object arrays are not supported)";
  msg += "; supported: float32, float64, float16, int8, uint8, int32, uint16 (little-endian)";
  return msg;
}

[[noreturn]] void fail_file(const std::string& name, const std::string& what) { throw IoError(name + ": " + what); }

uint32_t read_le(const uint8_t* p, int n) {
  uint32_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::string shape_repr(const std::vector<int64_t>& shape) {
  if (shape.empty()) return "()";
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

// numel and byte count of a shape, or an error text when they do not fit in 64 bits. A zero
// dimension does not excuse an overflowing product of the others: such a header is nonsense.
std::optional<std::string> checked_sizes(const std::vector<int64_t>& shape, std::size_t itemsize, uint64_t& numel,
                                         uint64_t& nbytes) {
  uint64_t prod_nonzero = 1;
  bool has_zero = false;
  for (int64_t d : shape) {
    if (d < 0) return "negative dimension " + std::to_string(d) + " in shape";
    if (d == 0) {
      has_zero = true;
      continue;
    }
    if (mul_overflows(prod_nonzero, static_cast<uint64_t>(d), prod_nonzero))
      return "shape " + shape_repr(shape) + " has too many elements (size overflows)";
  }
  if (mul_overflows(prod_nonzero, itemsize, nbytes) ||
      nbytes > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return "shape " + shape_repr(shape) + " is too large (byte size overflows)";
  numel = has_zero ? 0 : prod_nonzero;
  nbytes = numel * itemsize;
  return std::nullopt;
}

}  // namespace

std::size_t NpyArray::numel() const {
  std::size_t n = 1;
  for (int64_t d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

namespace {

// Validates everything (header, dtype, sizes against `total`, the image's size, of which the first
// `size` bytes are at `bytes`) and fills dtype and shape of `a`; returns where the data starts.
// Nothing is allocated from the header's claims.
std::size_t parse_header(const uint8_t* bytes, std::size_t size, std::size_t total, const std::string& name,
                         NpyArray& a) {
  auto fail = [&](const std::string& what) { fail_file(name, what); };
  if (size < 8) {
    if (size >= 6 && std::memcmp(bytes, kMagic, 6) == 0)
      fail("truncated header (file has only " + std::to_string(size) + " bytes)");
    fail(size == 0 ? "empty file, not a .npy file" : "not a .npy file (too short for the magic string)");
  }
  if (std::memcmp(bytes, kMagic, 6) != 0) fail("not a .npy file (bad magic; expected \\x93NUMPY)");
  const int major = bytes[6], minor = bytes[7];
  if (!((major == 1 || major == 2 || major == 3) && minor == 0))
    fail("unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
         " (supported: 1.0, 2.0, 3.0)");
  const int len_bytes = major == 1 ? 2 : 4;
  const std::size_t prefix = 8 + static_cast<std::size_t>(len_bytes);
  if (size < prefix) fail("truncated header (file ends inside the header length field)");
  const std::size_t header_len = read_le(bytes + 8, len_bytes);
  if (header_len > size - prefix && header_len <= total - prefix)
    fail("header length " + std::to_string(header_len) + " is more than the " + std::to_string(size - prefix) +
         " header bytes read");
  if (header_len > size - prefix)
    fail("header length " + std::to_string(header_len) + " runs past the end of the file (" + std::to_string(total) +
         " bytes)");
  const std::string_view header(reinterpret_cast<const char*>(bytes + prefix), header_len);
  // v1/v2 are latin-1 and v3 UTF-8, but every header we can read is plain ASCII; refusing other
  // bytes up front keeps garbage out of the parser and the error messages.
  for (std::size_t i = 0; i < header.size(); ++i) {
    const auto c = static_cast<unsigned char>(header[i]);
    if (c >= 0x80 || (c < 0x20 && c != '\n' && c != '\r' && c != '\t')) {
      static const char* hex = "0123456789abcdef";
      fail(std::string("header contains a non-ASCII or control byte 0x") + hex[c >> 4] + hex[c & 15] + " at offset " +
           std::to_string(prefix + i));
    }
  }

  HeaderParser::Result h = HeaderParser(header, name).parse();
  const std::optional<DType> dtype = dtype_from_descr(h.descr);
  if (!dtype) fail(refuse_descr_message(h.descr));
  if (h.fortran_order)
    fail(
        "Fortran-order arrays are not supported; save a C-order copy with "
        "np.save(path, np.ascontiguousarray(a))");

  uint64_t numel = 0, nbytes = 0;
  if (auto err = checked_sizes(h.shape, dtype_size(*dtype), numel, nbytes)) fail(*err);
  const std::size_t have = total - prefix - header_len;
  if (nbytes != have) {
    fail("shape " + shape_repr(h.shape) + " of " + to_string(*dtype) + " needs " + std::to_string(nbytes) +
         " data bytes but the file has " + std::to_string(have) +
         (have < nbytes ? " (truncated)" : " (trailing data)"));
  }

  a.dtype = *dtype;
  a.shape = std::move(h.shape);
  return prefix + header_len;
}

}  // namespace

NpyHeader parse_npy_header(const uint8_t* bytes, std::size_t size, std::size_t total_size, const std::string& name) {
  if (size > total_size) throw std::invalid_argument("parse_npy_header: size > total_size");
  NpyArray a;
  NpyHeader h;
  h.data_offset = parse_header(bytes, size, total_size, name, a);
  h.dtype = a.dtype;
  h.shape = std::move(a.shape);
  h.nbytes = total_size - h.data_offset;
  return h;
}

NpyHeader parse_npy_header(const uint8_t* bytes, std::size_t size, const std::string& name) {
  return parse_npy_header(bytes, size, size, name);
}

NpyArray parse_npy(const uint8_t* bytes, std::size_t size, const std::string& name) {
  NpyArray a;
  const std::size_t offset = parse_header(bytes, size, size, name, a);
  a.data.assign(bytes + offset, bytes + size);
  return a;
}

NpyArray read_npy(const std::string& path) {
  {  // the header first, from the file's first MiB: a bad or lying file is refused before its data is read
    uint64_t total = 0;
    const std::vector<uint8_t> head = read_file_prefix(path, std::size_t(1) << 20, &total);
    parse_npy_header(head.data(), head.size(), std::size_t(total), path);
  }
  std::vector<uint8_t> bytes = read_file(path);
  NpyArray a;
  const std::size_t offset = parse_header(bytes.data(), bytes.size(), bytes.size(), path, a);
  // Reuse the file buffer: peak memory stays at one copy of the file, not two.
  bytes.erase(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(offset));
  a.data = std::move(bytes);
  return a;
}

std::vector<uint8_t> serialize_npy(const NpyArray& a) {
  uint64_t numel = 0, nbytes = 0;
  if (auto err = checked_sizes(a.shape, dtype_size(a.dtype), numel, nbytes))
    throw std::invalid_argument("serialize_npy: " + *err);
  if (!canonical_descr(a.dtype))
    throw std::invalid_argument(std::string("serialize_npy: .npy output of ") + to_string(a.dtype) + " is not supported");
  if (a.data.size() != nbytes)
    throw std::invalid_argument("serialize_npy: shape " + shape_repr(a.shape) + " needs " + std::to_string(nbytes) +
                                " bytes, data has " + std::to_string(a.data.size()));

  // Byte-identical to numpy's _write_array_header: sorted keys, repr() values, a trailing ", ",
  // spare room to grow axis 0 in place, then spaces and '\n' so the data starts on a multiple of 64.
  std::string header = std::string("{'descr': '") + canonical_descr(a.dtype) +
                       "', 'fortran_order': False, 'shape': " + shape_repr(a.shape) + ", }";
  if (!a.shape.empty()) {
    const std::size_t digits = std::to_string(a.shape[0]).size();
    if (digits < kGrowthAxisDigits) header.append(kGrowthAxisDigits - digits, ' ');
  }
  auto wrap = [&](int major) {
    const std::size_t prefix = major == 1 ? 10 : 12;
    const std::size_t hlen = header.size() + 1;
    const std::size_t pad = kAlign - (prefix + hlen) % kAlign;  // numpy pads a full 64 when aligned
    return std::pair{prefix, hlen + pad};
  };
  int major = 1;
  auto [prefix, total] = wrap(1);
  if (total > 0xFFFF) {  // only with thousands of dims; kept for parity with numpy
    major = 2;
    std::tie(prefix, total) = wrap(2);
  }

  std::vector<uint8_t> out;
  out.reserve(prefix + total + a.data.size());
  for (uint8_t c : kMagic) out.push_back(c);
  out.push_back(static_cast<uint8_t>(major));
  out.push_back(0);
  for (std::size_t i = 0; i < prefix - 8; ++i) out.push_back(static_cast<uint8_t>(total >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), total - header.size() - 1, ' ');
  out.push_back('\n');
  out.insert(out.end(), a.data.begin(), a.data.end());
  return out;
}

void write_npy(const std::string& path, const NpyArray& a) {
  const std::vector<uint8_t> bytes = serialize_npy(a);
  write_file_atomic(path, bytes);
}

NpyArray make_npy(DType dtype, const std::vector<int64_t>& shape, const void* data) {
  uint64_t numel = 0, nbytes = 0;
  if (auto err = checked_sizes(shape, dtype_size(dtype), numel, nbytes))
    throw std::invalid_argument("make_npy: " + *err);
  NpyArray a;
  a.dtype = dtype;
  a.shape = shape;
  const auto* p = static_cast<const uint8_t*>(data);
  if (nbytes > 0) a.data.assign(p, p + nbytes);
  return a;
}

namespace {

template <typename Out>
std::vector<Out> to_floating(const NpyArray& a) {
  const std::size_t n = a.numel();
  if (a.data.size() != n * dtype_size(a.dtype))
    throw std::invalid_argument("to_float: data size does not match shape " + shape_repr(a.shape));
  std::vector<Out> out(n);
  if constexpr (std::is_same_v<Out, float>) convert_to_f32(a.dtype, a.data.data(), n, out.data());
  else convert_to_f64(a.dtype, a.data.data(), n, out.data());
  return out;
}

}  // namespace

std::vector<float> to_float32(const NpyArray& a) { return to_floating<float>(a); }
std::vector<double> to_float64(const NpyArray& a) { return to_floating<double>(a); }

}  // namespace qs
