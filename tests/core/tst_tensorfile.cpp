// Tests for core/io/tensor_file.h: .npy, .npz and .safetensors round trips of every dtype (bytes exact),
// dispatch by magic, and every bad-input case of issue 3 as a table row (one-line IoError naming file
// and tensor); files that shrink after open, FIFOs and devices, and a 100,000-tensor header (reliability
// findings F5, F7, F12). Issue 13: every low-bit safetensors dtype (F8_E8M0, the FNUZ float8s, packed F4,
// F6_E2M3, F6_E3M2) decodes to decode_ref of every code; dtypes that are not read are listed in skipped()
// beside the tensors that are; a torch.save zip is named as one. Issue 13 item 4: a sharded model (an
// index + shards, or a folder) reads as one model, and each bad index or shard set gives its one line.
// Fixtures are built here: safetensors by a small writer, .npz with libzip (QS_TEST_HAVE_ZIP, set by
// tests/core/CMakeLists.txt when the build found libzip).
// Run: ninja -C build tst_tensorfile && build/tests/core/tst_tensorfile [--gtest_filter=TensorFile.BadInput]
// Error lines: QS_SHOW_ERRORS=1 prints each message the bad-input tables provoke.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <limits>
#include <ostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/format.h"
#include "io/npy.h"
#include "io/tensor_file.h"
#include "test_files.h"

#ifdef QS_TEST_HAVE_ZIP
#include <zip.h>
#endif

namespace qs {
inline void PrintTo(DType t, std::ostream* os) { *os << to_string(t); }
}  // namespace qs

namespace {

namespace fs = std::filesystem;
using qs_test::contains;
using Shape = std::vector<int64_t>;

bool startsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// Deterministic, non-trivial bytes (a failing row name reproduces its input exactly).
std::string patternBytes(std::size_t n, unsigned seed = 11) {
  std::string b(n, '\0');
  uint32_t s = seed * 2654435761u + 1;
  for (std::size_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    b[i] = char(s >> 24);
  }
  return b;
}

std::size_t numelOf(const Shape& s) {
  std::size_t n = 1;
  for (int64_t d : s) n *= std::size_t(d);
  return n;
}

std::string shapeName(const Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

std::string le64(uint64_t v) {
  std::string b(8, '\0');
  for (int i = 0; i < 8; ++i) b[std::size_t(i)] = char((v >> (8 * i)) & 0xFF);
  return b;
}

// Every occurrence of `from` in `s` replaced by `to` (same length here, so offsets stay put).
[[maybe_unused]] std::string replaceAll(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

// --- .safetensors writer -------------------------------------------------------------------------

struct StTensor {
  std::string name, dtype;
  Shape shape;
  std::string data;
};

// A file as the safetensors library writes it: u64 header length, JSON header padded with spaces to
// a multiple of 8, tensors back to back in the given order.
std::string safetensorsImage(const std::vector<StTensor>& ts, const std::string& metadata = {}) {
  std::string json = "{";
  if (!metadata.empty()) json += "\"__metadata__\":" + metadata;
  std::string data;
  for (const StTensor& t : ts) {
    if (json.size() > 1) json += ",";
    std::string shape;
    for (int64_t d : t.shape) {
      if (!shape.empty()) shape += ",";
      shape += std::to_string(d);
    }
    json += "\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[" + shape + "],\"data_offsets\":[" +
            std::to_string(data.size()) + "," + std::to_string(data.size() + t.data.size()) + "]}";
    data += t.data;
  }
  json += "}";
  while ((8 + json.size()) % 8) json += ' ';
  return le64(uint64_t(json.size())) + json + data;
}

// Header text exactly as given (no padding), for rows that spell a broken header.
std::string safetensorsRaw(const std::string& json, const std::string& data = {}) {
  return le64(uint64_t(json.size())) + json + data;
}

struct DtypeCase {
  const char* st;
  qs::DType dtype;
};
const DtypeCase kStDtypes[] = {
    {"F64", qs::DType::F64},  {"F32", qs::DType::F32},        {"F16", qs::DType::F16},
    {"BF16", qs::DType::BF16}, {"I8", qs::DType::I8},         {"U8", qs::DType::U8},
    {"I16", qs::DType::I16},  {"I32", qs::DType::I32},        {"I64", qs::DType::I64},
    {"F8_E4M3", qs::DType::F8E4M3}, {"F8_E5M2", qs::DType::F8E5M2}, {"BOOL", qs::DType::Bool},
    {"U16", qs::DType::U16},  {"U32", qs::DType::U32},        {"U64", qs::DType::U64},
    {"F8_E8M0", qs::DType::F8E8M0}, {"F8_E4M3FNUZ", qs::DType::F8E4M3FNUZ}, {"F8_E5M2FNUZ", qs::DType::F8E5M2FNUZ},
    {"F4", qs::DType::F4E2M1}, {"F6_E2M3", qs::DType::F6E2M3}, {"F6_E3M2", qs::DType::F6E3M2},
};

const char* stName(qs::DType t) {
  for (const DtypeCase& c : kStDtypes)
    if (c.dtype == t) return c.st;
  return nullptr;
}

// The low-bit float dtypes of safetensors with the format-engine name of their element format.
struct LowBitCase {
  const char* st;
  qs::DType dtype;
  const char* format;
  unsigned bits;
};
const LowBitCase kLowBit[] = {
    {"F8_E8M0", qs::DType::F8E8M0, "e8m0fnu", 8},          {"F8_E4M3", qs::DType::F8E4M3, "e4m3fn", 8},
    {"F8_E5M2", qs::DType::F8E5M2, "e5m2", 8},             {"F8_E4M3FNUZ", qs::DType::F8E4M3FNUZ, "e4m3fnuz", 8},
    {"F8_E5M2FNUZ", qs::DType::F8E5M2FNUZ, "e5m2fnuz", 8}, {"F4", qs::DType::F4E2M1, "e2m1fn", 4},
    {"F6_E2M3", qs::DType::F6E2M3, "e2m3fn", 6},           {"F6_E3M2", qs::DType::F6E3M2, "e3m2fn", 6},
};

// Codes packed the way the formats store sub-byte elements, bit by bit: element i at bits
// [i*bits, i*bits + bits) of the little-endian bit stream (the first element in the low bits of byte 0).
std::string packCodes(const std::vector<uint32_t>& codes, unsigned bits) {
  std::string out((codes.size() * bits + 7) / 8, '\0');
  for (std::size_t i = 0; i < codes.size(); ++i)
    for (unsigned k = 0; k < bits; ++k)
      if ((codes[i] >> k) & 1) {
        const std::size_t bit = i * bits + k;
        out[bit / 8] = char(uint8_t(out[bit / 8]) | (1u << (bit % 8)));
      }
  return out;
}

// Every code of a `bits`-wide format once, then `extra` more (so the count is odd where extra is),
// in a scrambled but seeded order.
std::vector<uint32_t> everyCode(unsigned bits, unsigned extra) {
  const uint32_t count = 1u << bits;
  std::vector<uint32_t> codes;
  for (uint32_t c = 0; c < count + extra; ++c) codes.push_back((c * 37u + 11u) % count);
  return codes;
}
const qs::DType kNpyDtypes[] = {qs::DType::F32, qs::DType::F64, qs::DType::F16, qs::DType::I8,
                                qs::DType::U8,  qs::DType::I32, qs::DType::U16};

std::string npyBytes(qs::DType t, const Shape& shape, const std::string& data) {
  const std::vector<uint8_t> img = qs::serialize_npy(qs::make_npy(t, shape, data.data()));
  return std::string(reinterpret_cast<const char*>(img.data()), img.size());
}

// A .npy image with the header text exactly as given, then `pad` spaces and '\n' (format version
// `major`; 0 = 1.0 when the header fits, else 2.0).
std::string npyRaw(const std::string& header, const std::string& data, int pad = 0, int major = 0) {
  const std::string h = header + std::string(std::size_t(pad), ' ') + "\n";
  if (major == 0) major = h.size() <= 0xFFFF ? 1 : 2;
  const bool v1 = major == 1;
  std::string out("\x93NUMPY", 6);
  out += char(major);
  out += char(0);
  for (int i = 0; i < (v1 ? 2 : 4); ++i) out += char((h.size() >> (8 * i)) & 0xFF);
  return out + h + data;
}

// --- .npz writer (libzip) ------------------------------------------------------------------------

struct ZipMember {
  std::string name, bytes;
  bool deflate = true;
};

#ifdef QS_TEST_HAVE_ZIP
std::string zipImage(const std::vector<ZipMember>& members) {
  // libzip writes no file for an empty archive; Python's zipfile writes the bare end record.
  if (members.empty()) return std::string("PK\x05\x06", 4) + std::string(18, '\0');
  qs_test::TempDir dir;
  const std::string path = dir.file("z.zip");
  int err = 0;
  zip_t* za = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  if (!za) throw std::runtime_error("zip_open failed: " + std::to_string(err));
  for (const ZipMember& m : members) {  // `members` outlives zip_close, so the buffers may be borrowed
    zip_source_t* src = zip_source_buffer(za, m.bytes.data(), zip_uint64_t(m.bytes.size()), 0);
    const zip_int64_t idx = src ? zip_file_add(za, m.name.c_str(), src, ZIP_FL_ENC_UTF_8) : -1;
    if (idx < 0) throw std::runtime_error(std::string("zip_file_add: ") + zip_strerror(za));
    zip_set_file_compression(za, zip_uint64_t(idx), m.deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0);
  }
  if (zip_close(za) != 0) throw std::runtime_error(std::string("zip_close: ") + zip_strerror(za));
  return qs_test::read_file(path);
}
#endif

// Offset and size of the first member's (compressed) data, from its local file header.
[[maybe_unused]] std::pair<std::size_t, std::size_t> firstMemberData(const std::string& zip) {
  auto u16 = [&](std::size_t at) { return std::size_t(uint8_t(zip[at]) | uint8_t(zip[at + 1]) << 8); };
  auto u32 = [&](std::size_t at) { return std::size_t(u16(at) | u16(at + 2) << 16); };
  return {30 + u16(26) + u16(28), u32(18)};
}

// Base64 (RFC 4648) to bytes, for fixtures kept as text.
std::string fromBase64(const std::string& text) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '+') v = 62;
    else if (c == '/') v = 63;
    else if (c == '=') break;
    else throw std::invalid_argument("not base64");
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += char((acc >> bits) & 0xFF);
      acc &= (1u << bits) - 1;
    }
  }
  return out;
}

// --- helpers -------------------------------------------------------------------------------------

std::string writeFile(const qs_test::TempDir& dir, const std::string& name, const std::string& bytes) {
  const std::string path = dir.file(name);
  qs_test::write_file(path, bytes);
  return path;
}

std::string bytesOf(const qs::TensorBytes& b) { return std::string(reinterpret_cast<const char*>(b.data), b.size); }

// Opens by dispatch and reads every tensor; returns the IoError text, or empty when all went well.
std::string openAndReadAllError(const std::string& path) {
  try {
    auto f = qs::open_tensor_file(path);
    for (std::size_t i = 0; i < f->tensors().size(); ++i) {
      const qs::TensorBytes b = f->read(i);
      if (b.size != f->tensors()[i].nbytes()) return "size mismatch (test failure, not an IoError)";
    }
  } catch (const qs::IoError& e) {
    return e.what();
  }
  return {};
}

bool haveNpz() { return qs::tensor_reader_available("npz"); }
bool haveSafetensors() { return qs::tensor_reader_available("safetensors"); }
bool showErrors() { return std::getenv("QS_SHOW_ERRORS") != nullptr; }

// --- sharded models ------------------------------------------------------------------------------

using NamePairs = std::vector<std::pair<std::string, std::string>>;

// A Hugging Face index: {"metadata": {...}, "weight_map": {tensor: shard, ...}}, entries in the given order.
std::string indexJson(const NamePairs& weightMap) {
  std::string wm;
  for (const auto& [tensor, shard] : weightMap)
    wm += std::string(wm.empty() ? "" : ",") + "\n    \"" + tensor + "\": \"" + shard + "\"";
  return "{\n  \"metadata\": {\"total_size\": 1234},\n  \"weight_map\": {" + wm + "\n  }\n}\n";
}

// Files to write into one folder (names may hold a subfolder).
using Files = NamePairs;
void writeFiles(const qs_test::TempDir& dir, const Files& files) {
  for (const auto& [name, bytes] : files) writeFile(dir, name, bytes);  // write_file makes the folders
}
Files operator+(Files a, const Files& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Three shards in the layout of `save_pretrained`: the index lists tensors by name (so it interleaves the
// shards), every shard holds what the index gives it, one dtype per shard and a scalar.
struct ShardedFixture {
  std::vector<StTensor> shard[3];
  Files files() const {
    Files f;
    NamePairs wm;
    for (int k = 0; k < 3; ++k) {
      const std::string name = "model-0000" + std::to_string(k + 1) + "-of-00003.safetensors";
      f.emplace_back(name, safetensorsImage(shard[k], R"({"format":"pt"})"));
      for (const StTensor& t : shard[k]) wm.emplace_back(t.name, name);
    }
    std::sort(wm.begin(), wm.end());
    f.emplace_back("model.safetensors.index.json", indexJson(wm));
    return f;
  }
  std::vector<StTensor> all() const {
    std::vector<StTensor> out;
    for (const auto& s : shard) out.insert(out.end(), s.begin(), s.end());
    return out;
  }
};
ShardedFixture shardedFixture() {
  ShardedFixture m;
  m.shard[0] = {{"model.layers.0.w", "F32", {2, 3}, patternBytes(24, 1)}, {"model.embed", "F32", {4}, patternBytes(16, 2)}};
  m.shard[1] = {{"model.layers.1.w", "BF16", {3, 2}, patternBytes(12, 3)}, {"model.layers.10.w", "F16", {5}, patternBytes(10, 4)}};
  m.shard[2] = {{"lm_head", "F8_E4M3", {2, 4}, patternBytes(8, 5)}, {"scale", "F32", {}, patternBytes(4, 6)}};
  return m;
}

}  // namespace

TEST(TensorFile, Availability) {
  EXPECT_TRUE(qs::tensor_reader_available("npy"));
  EXPECT_FALSE(qs::tensor_reader_available("hdf5"));
#ifdef QS_TEST_HAVE_ZIP
  EXPECT_TRUE(haveNpz());  // the build found libzip, so the .npz reader must be there
#endif
  if (!haveSafetensors()) {
    qs_test::TempDir dir;
    const std::string path = writeFile(dir, "x.safetensors", safetensorsImage({}));
    const std::string msg = openAndReadAllError(path);
    EXPECT_EQ(msg, path + ": this build has no .safetensors support (install nlohmann-json3-dev and rebuild)");
    const std::string index = writeFile(dir, "model.safetensors.index.json", indexJson({{"w", "x.safetensors"}}));
    const std::string imsg = openAndReadAllError(index);
    EXPECT_EQ(imsg, index + ": this build has no sharded safetensors support (install nlohmann-json3-dev and rebuild)");
  }
}

// --- .safetensors --------------------------------------------------------------------------------

namespace {

void checkSafetensorsRoundTrip(const char* stDtype, qs::DType dtype, const Shape& shape) {
  const std::size_t n = qs::dtype_nbytes(dtype, numelOf(shape));
  // Two tensors around the one under test, so offsets other than 0 and the file's end are used.
  const std::string before = patternBytes(5, 1), payload = patternBytes(n, unsigned(shape.size()) + 3),
                    after = patternBytes(3, 2);
  qs_test::TempDir dir;
  const std::string path = writeFile(dir, "model.safetensors",
                                     safetensorsImage({{"a.before", "U8", {5}, before},
                                                       {"b.tensor", stDtype, shape, payload},
                                                       {"c.after", "I8", {3}, after}}));
  auto f = qs::open_tensor_file(path);
  EXPECT_EQ(f->kind(), "safetensors");
  EXPECT_EQ(f->path(), path);
  ASSERT_EQ(f->tensors().size(), 3u);
  const qs::TensorInfo& t = f->tensors()[1];
  EXPECT_EQ(t.name, "b.tensor");
  EXPECT_EQ(t.dtype, dtype);
  EXPECT_EQ(t.shape, shape);
  EXPECT_EQ(t.numel(), numelOf(shape));
  EXPECT_EQ(t.nbytes(), n);
  EXPECT_EQ(bytesOf(f->read(1)), payload);
  EXPECT_EQ(bytesOf(f->read(0)), before);
  EXPECT_EQ(bytesOf(f->read(2)), after);
}

}  // namespace

TEST(TensorFile, SafetensorsRoundTrip) {
  if (!haveSafetensors()) GTEST_SKIP() << "built without nlohmann-json";
  const Shape shapes[] = {{}, {0}, {1}, {7}, {2, 3}, {3, 0, 2}, {2, 1, 3, 4}, {1000}};
  for (const DtypeCase& c : kStDtypes)
    for (const Shape& s : shapes) {
      SCOPED_TRACE(std::string(c.st) + " " + shapeName(s));
      checkSafetensorsRoundTrip(c.st, c.dtype, s);
    }
}

TEST(TensorFile, SafetensorsFileOrderAndMetadata) {
  if (!haveSafetensors()) GTEST_SKIP() << "built without nlohmann-json";
  // Keys out of offset order, a gap between tensors, metadata, UTF-8 names: listed by offset.
  const std::string json =
      R"({"z.first":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("__metadata__":{"format":"pt","note":"x"},)"
      R"("a.third":{"dtype":"U8","shape":[3],"data_offsets":[20,23]},)"
      "\"m.\xc3\xa9\xe2\x82\xac\":{\"dtype\":\"I16\",\"shape\":[2,2],\"data_offsets\":[8,16]},"
      R"("empty":{"dtype":"F64","shape":[0,4],"data_offsets":[16,16]}})";
  const std::string data = patternBytes(23, 5);
  qs_test::TempDir dir;
  const std::string path = writeFile(dir, "order.safetensors", safetensorsRaw(json, data));
  auto f = qs::open_tensor_file(path);
  std::vector<std::string> names;
  for (const qs::TensorInfo& t : f->tensors()) names.push_back(t.name);
  ASSERT_EQ(names, (std::vector<std::string>{"z.first", "m.\xc3\xa9\xe2\x82\xac", "empty", "a.third"}));
  EXPECT_EQ(bytesOf(f->read(0)), data.substr(0, 8));
  EXPECT_EQ(bytesOf(f->read(1)), data.substr(8, 8));
  EXPECT_EQ(f->read(2).size, 0u);
  EXPECT_EQ(bytesOf(f->read(3)), data.substr(20, 3));
}

TEST(TensorFile, SafetensorsValues) {
  if (!haveSafetensors()) GTEST_SKIP() << "built without nlohmann-json";
  // Known codes decode to known values: the dtype mapping is right, not just the bytes.
  const std::string bf16("\x80\x3f\x00\xc0\x80\x7f", 6);         // 1, -2, inf
  const std::string e4m3("\x7e\x38\xfe\x01", 4);                 // 448, 1, -448, 2^-9
  const std::string e5m2("\x7b\x3c\x7c\x01", 4);                 // 57344, 1, inf, 2^-16
  const std::string i64 = le64(uint64_t(-5)) + le64(1ull << 40);  // -5, 2^40
  qs_test::TempDir dir;
  const std::string path = writeFile(dir, "v.safetensors",
                                     safetensorsImage({{"bf16", "BF16", {3}, bf16},
                                                       {"e4m3", "F8_E4M3", {4}, e4m3},
                                                       {"e5m2", "F8_E5M2", {4}, e5m2},
                                                       {"i64", "I64", {2}, i64},
                                                       {"bool", "BOOL", {2}, std::string("\x00\x01", 2)}}));
  auto f = qs::open_tensor_file(path);
  ASSERT_EQ(f->tensors().size(), 5u);
  auto values = [&](std::size_t i) {
    const qs::TensorBytes b = f->read(i);
    std::vector<double> v(f->tensors()[i].numel());
    qs::convert_to_f64(f->tensors()[i].dtype, b.data, v.size(), v.data());
    return v;
  };
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(values(0), std::vector<double>({1.0, -2.0, inf}));
  EXPECT_EQ(values(1), std::vector<double>({448.0, 1.0, -448.0, std::ldexp(1.0, -9)}));
  EXPECT_EQ(values(2), std::vector<double>({57344.0, 1.0, inf, std::ldexp(1.0, -16)}));
  EXPECT_EQ(values(3), std::vector<double>({-5.0, std::ldexp(1.0, 40)}));
  EXPECT_EQ(values(4), std::vector<double>({0.0, 1.0}));
}

// Every code of every low-bit float dtype, in tensors of 2^bits + {0, 1, 3} elements (odd counts end
// inside a byte for F4 and F6), reads back as decode_ref of that code: through read_f32 and through
// read() + convert_to_f64, NaN codes as NaN.
namespace {

void checkLowBit(const LowBitCase& c, unsigned extra) {
  const qs::Format fmt = qs::parse_format(c.format);
  ASSERT_EQ(unsigned(fmt.bits), c.bits);
  const std::vector<uint32_t> codes = everyCode(c.bits, extra);
  const std::string packed = packCodes(codes, c.bits);
  qs_test::TempDir dir;
  // A byte-sized tensor before and after, so that the packed one starts and ends mid-file.
  const std::string path = writeFile(dir, "lowbit.safetensors",
                                     safetensorsImage({{"a", "U8", {3}, "abc"},
                                                       {"w", c.st, {int64_t(codes.size())}, packed},
                                                       {"z", "F32", {1}, patternBytes(4)}}));
  auto f = qs::open_tensor_file(path);
  EXPECT_TRUE(f->skipped().empty());
  ASSERT_EQ(f->tensors().size(), 3u);
  const qs::TensorInfo& t = f->tensors()[1];
  ASSERT_EQ(t.dtype, c.dtype);
  ASSERT_EQ(t.numel(), codes.size());
  ASSERT_EQ(t.nbytes(), packed.size());
  EXPECT_TRUE(qs::dtype_is_float(t.dtype));
  EXPECT_EQ(bytesOf(f->read(1)), packed);
  std::vector<float> got(codes.size() + 1, -7.0f);
  f->read_f32(1, got.data());
  EXPECT_EQ(got.back(), -7.0f);
  std::vector<double> wide(codes.size());
  const qs::TensorBytes b = f->read(1);
  qs::convert_to_f64(t.dtype, b.data, wide.size(), wide.data());
  for (std::size_t i = 0; i < codes.size(); ++i) {
    const double want = qs::decode_ref(fmt, codes[i]);
    const bool ok = std::isnan(want) ? std::isnan(got[i]) && std::isnan(wide[i])
                                     : double(got[i]) == want && wide[i] == want &&
                                           std::signbit(got[i]) == std::signbit(want);
    if (!ok)
      FAIL() << "element " << i << " (code 0x" << std::hex << codes[i] << std::dec << "): want " << want
             << ", read_f32 " << got[i] << ", convert_to_f64 " << wide[i];
  }
  EXPECT_EQ(bytesOf(f->read(2)), patternBytes(4));
}

}  // namespace

TEST(TensorFile, SafetensorsLowBitDtypes) {
  if (!haveSafetensors()) GTEST_SKIP() << "built without nlohmann-json";
  for (const LowBitCase& c : kLowBit)
    for (unsigned extra : {0u, 1u, 3u}) {
      SCOPED_TRACE(std::string(c.st) + " " + std::to_string((1u << c.bits) + extra) + " codes");
      checkLowBit(c, extra);
    }
}

// The bit order, spelled out by hand: F4 codes 1, 2, 7 are bytes 0x21 0x07 (first element in the low
// nibble, the last byte's high nibble padding); F6_E2M3 codes 0x08, 0x3C are bytes 0x08 0x0F (the second
// element's low two bits in the top of byte 0); F6_E3M2 codes 0x0C x4 are bytes 0x0C 0xC3 0x30.
TEST(TensorFile, SafetensorsPackedPinned) {
  if (!haveSafetensors()) GTEST_SKIP() << "built without nlohmann-json";
  qs_test::TempDir dir;
  const std::string path = writeFile(dir, "pinned.safetensors",
                                     safetensorsImage({{"f4", "F4", {3}, std::string("\x21\xf7", 2)},
                                                       {"f6a", "F6_E2M3", {2}, std::string("\x08\x0f", 2)},
                                                       {"f6b", "F6_E3M2", {4}, std::string("\x0c\xc3\x30", 3)},
                                                       {"e8m0", "F8_E8M0", {4}, std::string("\x7f\x00\xfe\xff", 4)}}));
  auto f = qs::open_tensor_file(path);
  ASSERT_EQ(f->tensors().size(), 4u);
  auto values = [&](std::size_t i) {
    std::vector<double> v(f->tensors()[i].numel());
    const qs::TensorBytes b = f->read(i);
    qs::convert_to_f64(f->tensors()[i].dtype, b.data, v.size(), v.data());
    return v;
  };
  EXPECT_EQ(values(0), std::vector<double>({0.5, 1.0, 6.0}));       // e2m1: 0001, 0010, 0111
  EXPECT_EQ(values(1), std::vector<double>({1.0, -6.0}));           // e2m3: 0 01 000, 1 11 100
  EXPECT_EQ(values(2), std::vector<double>({1.0, 1.0, 1.0, 1.0}));  // e3m2: 0 011 00 = 2^0
  const std::vector<double> e8 = values(3);  // e8m0: 2^(c - 127), 0xFF = NaN
  ASSERT_EQ(e8.size(), 4u);
  EXPECT_EQ(e8[0], 1.0);
  EXPECT_EQ(e8[1], std::ldexp(1.0, -127));
  EXPECT_EQ(e8[2], std::ldexp(1.0, 127));
  EXPECT_TRUE(std::isnan(e8[3]));
}

// A dtype the reader cannot decode (C64, or a name the format does not have) is listed in skipped() with
// its reason and never fails the file; the tensors beside it stay readable. A file of nothing but such
// entries still opens (the caller decides that nothing to analyse is an error).
TEST(TensorFile, SafetensorsSkipsWhatItCannotRead) {
  if (!haveSafetensors()) GTEST_SKIP() << "built without nlohmann-json";
  qs_test::TempDir dir;
  const std::string f32 = patternBytes(8, 3);
  const std::string path = writeFile(dir, "mixed.safetensors",
                                     safetensorsImage({{"w", "F32", {2}, f32},
                                                       {"future", "F2_E1M0", {8}, std::string("\x1b\xe4", 2)},
                                                       {"cplx", "C64", {1}, patternBytes(8)},
                                                       {"b", "BF16", {1}, std::string("\x80\x3f", 2)}}));
  auto f = qs::open_tensor_file(path);
  ASSERT_EQ(f->tensors().size(), 2u);
  EXPECT_EQ(f->tensors()[0].name, "w");
  EXPECT_EQ(f->tensors()[1].name, "b");
  EXPECT_EQ(bytesOf(f->read(0)), f32);
  EXPECT_EQ(bytesOf(f->read(1)), std::string("\x80\x3f", 2));
  ASSERT_EQ(f->skipped().size(), 2u);
  const std::string s0 = f->skipped()[0], s1 = f->skipped()[1];
  EXPECT_TRUE(startsWith(s0, "future: unsupported dtype 'F2_E1M0', not read (read: F64, F32")) << s0;
  EXPECT_TRUE(contains(s0, "F8_E8M0") && contains(s0, "F4") && contains(s0, "F6_E3M2") && !contains(s0, "\n")) << s0;
  EXPECT_TRUE(startsWith(s1, "cplx: dtype C64 is complex")) << s1;

  const std::string only = writeFile(dir, "only.safetensors", safetensorsImage({{"x", "F2_E1M0", {4}, "a"}}));
  auto g = qs::open_tensor_file(only);
  EXPECT_TRUE(g->tensors().empty());
  EXPECT_EQ(g->skipped().size(), 1u);

  // A skipped entry's data range is still checked: overlapping another tensor is a corrupt file.
  const std::string json = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                           R"("x":{"dtype":"F2_E1M0","shape":[4],"data_offsets":[4,9]}})";
  const std::string bad = writeFile(dir, "overlap.safetensors", safetensorsRaw(json, patternBytes(9)));
  EXPECT_EQ(openAndReadAllError(bad), bad + ": x: data_offsets [4, 9) overlap tensor 'w' [0, 8)");
}

TEST(TensorFile, SafetensorsReadOwnsItsBytes) {
  if (!haveSafetensors()) GTEST_SKIP() << "built without nlohmann-json";
  qs_test::TempDir dir;
  const std::string payload = patternBytes(4096, 9);
  const std::string path = writeFile(dir, "own.safetensors", safetensorsImage({{"w", "F32", {1024}, payload}}));
  auto f = qs::open_tensor_file(path);
  {
    const qs::TensorBytes a = f->read(0), b = f->read(0);
    EXPECT_NE(a.data, b.data);  // pread into a buffer per live read, never a shared map (F5)
    EXPECT_EQ(bytesOf(a), payload);
    EXPECT_EQ(bytesOf(b), payload);
  }
  const qs::TensorBytes c = f->read(0);  // reuses a released buffer
  EXPECT_TRUE(c.owner);
  f.reset();  // the bytes stay valid while `owner` lives
  EXPECT_EQ(bytesOf(c), payload);
}

// F7: the header of a file listing 100,000 tensors parses in linear time (nlohmann's callback parser
// took about two minutes); the depth and duplicate-key checks still hold at that size.
TEST(TensorFile, SafetensorsManyTensors) {
  if (!haveSafetensors()) GTEST_SKIP() << "built without nlohmann-json";
  constexpr int kCount = 100'000;
  std::string json = "{\"__metadata__\":{\"format\":\"pt\"}";
  json.reserve(8'000'000);
  // Listed in reverse, so that the reader's offset order is checked too.
  for (int i = kCount - 1; i >= 0; --i)
    json += ",\"t" + std::to_string(i) + "\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[" +
            std::to_string(8 * i) + "," + std::to_string(8 * i + 8) + "]}";
  const std::string data = patternBytes(8 * kCount, 17);
  qs_test::TempDir dir;
  const std::string path = writeFile(dir, "many.safetensors", safetensorsRaw(json + "}", data));
  auto f = qs::open_tensor_file(path);
  ASSERT_EQ(f->tensors().size(), std::size_t(kCount));
  for (int i : {0, 1, 54321, kCount - 1}) {
    SCOPED_TRACE(i);
    const qs::TensorInfo& t = f->tensors()[std::size_t(i)];
    EXPECT_EQ(t.name, "t" + std::to_string(i));
    EXPECT_EQ(t.dtype, qs::DType::F32);
    EXPECT_EQ(t.shape, Shape({2}));
    EXPECT_EQ(bytesOf(f->read(std::size_t(i))), data.substr(std::size_t(8 * i), 8));
  }

  const std::string again = R"(,"t77777":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}})";
  const std::string dup = writeFile(dir, "dup.safetensors", safetensorsRaw(json + again, data));
  EXPECT_EQ(openAndReadAllError(dup), dup + ": header has the key 't77777' twice");
}

// read_f32 gives what convert_to_f32 gives on read(), across the reader's staging pieces.
namespace {

struct ReadF32Case {
  std::string name, kind;
  qs::DType dtype;
  int64_t numel;
};

void checkReadF32(const ReadF32Case& c) {
  if (c.kind == "safetensors" && !haveSafetensors()) GTEST_SKIP() << "built without nlohmann-json";
  const std::string payload = patternBytes(qs::dtype_nbytes(c.dtype, std::size_t(c.numel)), 21);
  const Shape shape{c.numel};
  qs_test::TempDir dir;
  std::string path;
  if (c.kind == "safetensors") {
    path = writeFile(dir, "w.safetensors",
                     safetensorsImage({{"pad", "U8", {3}, "abc"}, {"w", stName(c.dtype), shape, payload}}));
  } else if (c.kind == "npy") {
    path = writeFile(dir, "w.npy", npyBytes(c.dtype, shape, payload));
  } else {
#ifdef QS_TEST_HAVE_ZIP
    path = writeFile(dir, "w.npz", zipImage({{"w.npy", npyBytes(c.dtype, shape, payload), true}}));
#endif
  }
  auto f = qs::open_tensor_file(path);
  ASSERT_FALSE(f->tensors().empty());
  const std::size_t i = f->tensors().size() - 1;
  ASSERT_EQ(f->tensors()[i].numel(), std::size_t(c.numel));
  std::vector<float> want(std::size_t(c.numel) + 1, -7.0f), got(std::size_t(c.numel) + 1, -7.0f);
  const qs::TensorBytes b = f->read(i);
  qs::convert_to_f32(c.dtype, b.data, std::size_t(c.numel), want.data());
  f->read_f32(i, got.data());
  EXPECT_EQ(got.back(), -7.0f);  // nothing written past numel
  for (std::size_t k = 0; k < want.size(); ++k)  // bit patterns: NaNs compare too
    if (std::bit_cast<uint32_t>(got[k]) != std::bit_cast<uint32_t>(want[k])) FAIL() << "element " << k << " differs";
  EXPECT_THROW(f->read_f32(i + 1, got.data()), qs::IoError);
  // read_f32_part (analyze_file splits a read between threads): the same values piece by piece, from the
  // reader's own part read (.safetensors) or the default (whole read, then copy).
  const std::size_t numel = std::size_t(c.numel);
  std::vector<float> parts(numel + 1, -7.0f);
  for (std::size_t p = 0; p < numel;) {
    const std::size_t n = std::min<std::size_t>(numel - p, p == 0 ? 8 : 65536);
    f->read_f32_part(i, p, n, parts.data() + p);
    p += n;
  }
  EXPECT_EQ(parts.back(), -7.0f);
  for (std::size_t k = 0; k < want.size(); ++k)
    if (std::bit_cast<uint32_t>(parts[k]) != std::bit_cast<uint32_t>(want[k])) FAIL() << "part: element " << k << " differs";
  EXPECT_THROW(f->read_f32_part(i, 0, numel + 1, parts.data()), qs::IoError);
  if (numel > 8) {  // not on a multiple of 8
    EXPECT_THROW(f->read_f32_part(i, 4, 1, parts.data()), qs::IoError);
  }
  EXPECT_THROW(f->read_f32_part(i + 1, 0, 0, parts.data()), qs::IoError);
}

}  // namespace

TEST(TensorFile, ReadF32) {
  std::vector<ReadF32Case> cases;
  for (const DtypeCase& c : kStDtypes)
    for (int64_t n : {int64_t(0), int64_t(1), int64_t(300'001)})
      cases.push_back({"safetensors " + std::string(c.st) + " " + std::to_string(n), "safetensors", c.dtype, n});
  // Packed dtypes over several staging pieces, ending inside a byte.
  for (const DtypeCase& c : kStDtypes)
    if (qs::dtype_is_packed(c.dtype))
      cases.push_back({"safetensors " + std::string(c.st) + " 1048583", "safetensors", c.dtype, 1'048'583});
  for (qs::DType t : kNpyDtypes) cases.push_back({"npy " + std::string(qs::to_string(t)) + " 300001", "npy", t, 300'001});
#ifdef QS_TEST_HAVE_ZIP
  cases.push_back({"npz (default: read + convert) float16", "npz", qs::DType::F16, 1000});
#endif
  for (const ReadF32Case& c : cases) {
    SCOPED_TRACE(c.name);
    checkReadF32(c);
  }
}

// --- .npy ----------------------------------------------------------------------------------------

TEST(TensorFile, NpyRoundTrip) {
  const Shape shapes[] = {{}, {0}, {7}, {2, 3}, {3, 0, 2}, {1000}};
  for (qs::DType dtype : kNpyDtypes)
    for (const Shape& shape : shapes) {
      SCOPED_TRACE(std::string(qs::to_string(dtype)) + " " + shapeName(shape));
      const std::string payload = patternBytes(numelOf(shape) * qs::dtype_size(dtype), 4);
      qs_test::TempDir dir;
      const std::string path = writeFile(dir, "weights.v2.npy", npyBytes(dtype, shape, payload));
      auto f = qs::open_tensor_file(path);
      EXPECT_EQ(f->kind(), "npy");
      ASSERT_EQ(f->tensors().size(), 1u);
      EXPECT_EQ(f->tensors()[0].name, "weights.v2");  // the stem
      EXPECT_EQ(f->tensors()[0].dtype, dtype);
      EXPECT_EQ(f->tensors()[0].shape, shape);
      EXPECT_EQ(bytesOf(f->read(0)), payload);
    }
}

// --- .npz ----------------------------------------------------------------------------------------

#ifdef QS_TEST_HAVE_ZIP
namespace {

void checkNpzRoundTrip(qs::DType dtype, const Shape& shape, bool deflate) {
  const std::size_t n = numelOf(shape) * qs::dtype_size(dtype);
  // Half pattern, half zeros: deflate has something to do and the data is still checked exactly.
  std::string payload = patternBytes(n, 6);
  for (std::size_t i = n / 2; i < n; ++i) payload[i] = 0;
  const std::string other = patternBytes(12, 8);
  qs_test::TempDir dir;
  const std::string path = writeFile(dir, "arrays.npz",
                                     zipImage({{"arr_0.npy", npyBytes(qs::DType::F32, {3}, other), deflate},
                                               {"layer/w.npy", npyBytes(dtype, shape, payload), deflate}}));
  auto f = qs::open_tensor_file(path);
  EXPECT_EQ(f->kind(), "npz");
  ASSERT_EQ(f->tensors().size(), 2u);
  EXPECT_EQ(f->tensors()[0].name, "arr_0");
  EXPECT_EQ(f->tensors()[1].name, "layer/w");
  EXPECT_EQ(f->tensors()[1].dtype, dtype);
  EXPECT_EQ(f->tensors()[1].shape, shape);
  EXPECT_EQ(bytesOf(f->read(1)), payload);
  qs::TensorBytes first = f->read(0);
  f.reset();  // an owned buffer outlives the file object
  EXPECT_EQ(bytesOf(first), other);
}

}  // namespace
#endif

TEST(TensorFile, NpzRoundTrip) {
#ifdef QS_TEST_HAVE_ZIP
  const Shape shapes[] = {{}, {0}, {7}, {2, 3}, {300, 400}};
  for (bool deflate : {false, true})
    for (qs::DType t : kNpyDtypes)
      for (const Shape& s : shapes) {
        SCOPED_TRACE(std::string(deflate ? "deflated " : "stored ") + qs::to_string(t) + " " + shapeName(s));
        checkNpzRoundTrip(t, s, deflate);
      }
#else
  GTEST_SKIP() << "built without libzip";
#endif
}

// Archives written the way np.savez / np.savez_compressed write them (Python's zipfile with
// force_zip64=True: zip64 extra fields in every header), holding a = float32 [1.5, -2, nan] and
// b = uint8 [[0, 1], [254, 255]]. Also tests/fuzz/corpus/npz/numpy_savez*.npz.
TEST(TensorFile, NpzWrittenLikeNumpy) {
  if (!haveNpz()) GTEST_SKIP() << "built without libzip";
  struct Case {
    const char* name;
    const char* base64;
  };
  const Case cases[] = {
      {"np.savez (stored, zip64)",
       "UEsDBC0AAAAAAAAAIQAzpPlz//////////8FABQAYS5ucHkBABAAjAAAAAAAAACMAAAAAAAAAJNOVU1QWQEAdgB7J2Rlc2Ny"
       "JzogJzxmNCcsICdmb3J0cmFuX29yZGVyJzogRmFsc2UsICdzaGFwZSc6ICgzLCksIH0gICAgICAgICAgICAgICAgICAgICAg"
       "ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAKAADAPwAAAMAAAMB/UEsDBC0AAAAAAAAAIQDaMt/a////"
       "//////8FABQAYi5ucHkBABAAhAAAAAAAAACEAAAAAAAAAJNOVU1QWQEAdgB7J2Rlc2NyJzogJ3x1MScsICdmb3J0cmFuX29y"
       "ZGVyJzogRmFsc2UsICdzaGFwZSc6ICgyLCAyKSwgfSAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAg"
       "ICAgICAgICAgICAgICAgICAKAAH+/1BLAQItAy0AAAAAAAAAIQAzpPlzjAAAAIwAAAAFAAAAAAAAAAAAAACAAQAAAABhLm5w"
       "eVBLAQItAy0AAAAAAAAAIQDaMt/ahAAAAIQAAAAFAAAAAAAAAAAAAACAAcMAAABiLm5weVBLBQYAAAAAAgACAGYAAAB+AQAA"
       "AAA="},
      {"np.savez_compressed (deflated, zip64)",
       "UEsDBC0AAAAIAAAAIQAzpPlz//////////8FABQAYS5ucHkBABAAjAAAAAAAAABNAAAAAAAAAJvsF+obEMnIUMZQrZ6SWpxc"
       "pG6loG6TZqKuo6Cell9UUpSYF59flJIKEndLzClOBYoXZyQWpAL5GsY6mjoKtQoUAC4GhgP2DEACiOoBUEsDBC0AAAAIAAAA"
       "IQDaMt/a//////////8FABQAYi5ucHkBABAAhAAAAAAAAABKAAAAAAAAAJvsF+obEMnIUMZQrZ6SWpxcpG6loF5Taqiuo6Ce"
       "ll9UUpSYF59flJIKEndLzClOBYoXZyQWpAL5GkY6CkaaOgq1CmQDLgbGf/8BUEsBAi0DLQAAAAgAAAAhADOk+XNNAAAAjAAA"
       "AAUAAAAAAAAAAAAAAIABAAAAAGEubnB5UEsBAi0DLQAAAAgAAAAhANoy39pKAAAAhAAAAAUAAAAAAAAAAAAAAIABhAAAAGIu"
       "bnB5UEsFBgAAAAACAAIAZgAAAAUBAAAAAA=="},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    qs_test::TempDir dir;
    const std::string path = writeFile(dir, "np.npz", fromBase64(c.base64));
    auto f = qs::open_tensor_file(path);
    ASSERT_EQ(f->tensors().size(), 2u);
    EXPECT_EQ(f->tensors()[0].name, "a");
    EXPECT_EQ(f->tensors()[0].dtype, qs::DType::F32);
    EXPECT_EQ(f->tensors()[1].shape, Shape({2, 2}));
    EXPECT_EQ(bytesOf(f->read(0)), std::string("\x00\x00\xc0\x3f\x00\x00\x00\xc0\x00\x00\xc0\x7f", 12));
    EXPECT_EQ(bytesOf(f->read(1)), std::string("\x00\x01\xfe\xff", 4));
  }
}

TEST(TensorFile, NpzLongHeaderAndSkippedMembers) {
#ifdef QS_TEST_HAVE_ZIP
  // A 20 KB header (longer than the first read of a member) and members that are not tensors.
  const std::string data = patternBytes(24, 3);
  const std::string longHeader = npyRaw("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", data, 20000);
  qs_test::TempDir dir;
  const std::string path = writeFile(dir, "long.npz",
                                     zipImage({{"README.txt", "not a tensor", true},
                                               {"long.npy", longHeader, true},
                                               {"dir/", {}, false},
                                               {"raw.npy", longHeader, false}}));
  auto f = qs::open_tensor_file(path);
  ASSERT_EQ(f->tensors().size(), 2u);
  EXPECT_EQ(f->tensors()[0].name, "long");
  EXPECT_EQ(f->tensors()[0].shape, Shape({2, 3}));
  EXPECT_EQ(bytesOf(f->read(0)), data);
  EXPECT_EQ(bytesOf(f->read(1)), data);
#else
  GTEST_SKIP() << "built without libzip";
#endif
}

TEST(TensorFile, NpzConcurrentReads) {
#ifdef QS_TEST_HAVE_ZIP
  // analyze --threads reads several tensors of one file at once; each read must get its own bytes.
  std::vector<ZipMember> members;
  std::vector<std::string> payloads;
  for (int i = 0; i < 8; ++i) {
    payloads.push_back(patternBytes(std::size_t(40000 + i * 4), unsigned(i)));
    members.push_back(ZipMember{std::string("t").append(std::to_string(i)).append(".npy"),
                                npyBytes(qs::DType::I8, {40000 + i * 4}, payloads.back()), i % 2 == 0});
  }
  qs_test::TempDir dir;
  const std::string path = writeFile(dir, "many.npz", zipImage(members));
  auto f = qs::open_tensor_file(path);
  ASSERT_EQ(f->tensors().size(), 8u);
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 5; ++round)
        for (int i = 0; i < 8; ++i) {
          const int k = (i + t) % 8;
          if (bytesOf(f->read(std::size_t(k))) != payloads[std::size_t(k)]) ++bad;
        }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
#else
  GTEST_SKIP() << "built without libzip";
#endif
}

TEST(TensorFile, NpzCorruptStreamFailsAtRead) {
#ifdef QS_TEST_HAVE_ZIP
  // The header decompresses fine at open; the damage near the end of the stream shows at read().
  std::string payload(400000, '\0');
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = char((i * i) >> 7);
  std::string zip = zipImage({{"w.npy", npyBytes(qs::DType::U8, {400000}, payload), true}});
  const auto [at, size] = firstMemberData(zip);
  ASSERT_GT(size, 1000u);
  for (std::size_t i = at + size - 600; i < at + size - 500; ++i) zip[i] = char(~zip[i]);
  qs_test::TempDir dir;
  const std::string path = writeFile(dir, "late.npz", zip);
  auto f = qs::open_tensor_file(path);
  ASSERT_EQ(f->tensors().size(), 1u);
  std::string msg;
  try {
    f->read(0);
  } catch (const qs::IoError& e) {
    msg = e.what();
  }
  EXPECT_TRUE(startsWith(msg, path + ": w.npy: ")) << msg;
  EXPECT_FALSE(contains(msg, "\n")) << msg;
#else
  GTEST_SKIP() << "built without libzip";
#endif
}

// --- all formats ---------------------------------------------------------------------------------

namespace {

void checkNanInf(const std::string& kind, qs::DType dtype) {
  if (kind == "safetensors" && !haveSafetensors()) GTEST_SKIP() << "built without nlohmann-json";
  if (kind == "npz" && !haveNpz()) GTEST_SKIP() << "built without libzip";
  // NaN, +inf, -inf, -0 in each dtype's own encoding (float8 e4m3fn has no inf: NaN, max, -max, -0).
  std::string data;
  switch (dtype) {
    case qs::DType::F32: data = std::string("\x00\x00\xc0\x7f\x00\x00\x80\x7f\x00\x00\x80\xff\x00\x00\x00\x80", 16); break;
    case qs::DType::F64:
      data = le64(0x7ff8000000000000ull) + le64(0x7ff0000000000000ull) + le64(0xfff0000000000000ull) +
             le64(0x8000000000000000ull);
      break;
    case qs::DType::F16: data = std::string("\x00\x7e\x00\x7c\x00\xfc\x00\x80", 8); break;
    case qs::DType::BF16: data = std::string("\xc0\x7f\x80\x7f\x80\xff\x00\x80", 8); break;
    case qs::DType::F8E4M3: data = std::string("\x7f\x7e\xfe\x80", 4); break;
    case qs::DType::F8E5M2: data = std::string("\x7f\x7c\xfc\x80", 4); break;
    default: FAIL() << "no row for this dtype";
  }
  qs_test::TempDir dir;
  std::string path;
  if (kind == "npy") {
    path = writeFile(dir, "x.npy", npyBytes(dtype, {4}, data));
  } else if (kind == "npz") {
#ifdef QS_TEST_HAVE_ZIP
    path = writeFile(dir, "x.npz", zipImage({{"x.npy", npyBytes(dtype, {4}, data), true}}));
#endif
  } else {
    path = writeFile(dir, "x.safetensors", safetensorsImage({{"x", stName(dtype), {4}, data}}));
  }
  auto f = qs::open_tensor_file(path);
  ASSERT_EQ(f->tensors().size(), 1u);
  const qs::TensorBytes b = f->read(0);
  ASSERT_EQ(bytesOf(b), data);
  float v[4];
  qs::convert_to_f32(dtype, b.data, 4, v);
  EXPECT_TRUE(std::isnan(v[0]));
  if (dtype == qs::DType::F8E4M3) {
    EXPECT_EQ(v[1], 448.0f);
    EXPECT_EQ(v[2], -448.0f);
  } else {
    EXPECT_EQ(v[1], std::numeric_limits<float>::infinity());
    EXPECT_EQ(v[2], -std::numeric_limits<float>::infinity());
  }
  EXPECT_EQ(std::bit_cast<uint32_t>(v[3]), 0x80000000u);
}

}  // namespace

TEST(TensorFile, NanInfReadFine) {
  std::vector<std::pair<std::string, qs::DType>> cases;
  for (const char* kind : {"npy", "npz", "safetensors"})
    for (qs::DType t : {qs::DType::F32, qs::DType::F64, qs::DType::F16}) cases.emplace_back(kind, t);
  cases.emplace_back("safetensors", qs::DType::BF16);
  cases.emplace_back("safetensors", qs::DType::F8E4M3);
  cases.emplace_back("safetensors", qs::DType::F8E5M2);
  for (const auto& [kind, dtype] : cases) {
    SCOPED_TRACE(kind + " " + qs::to_string(dtype));
    checkNanInf(kind, dtype);
  }
}

namespace {

struct DispatchCase {
  std::string name, fileName, bytes;
  std::string kind;   // the reader chosen; "" = an error is expected
  std::string error;  // a substring of that error
};

void checkDispatch(const DispatchCase& c) {
  qs_test::TempDir dir;
  const std::string path = writeFile(dir, c.fileName, c.bytes);
  if ((c.kind == "safetensors" && !haveSafetensors()) || (c.kind == "npz" && !haveNpz()) ||
      (contains(c.error, "sharded-model") && !haveSafetensors()))
    GTEST_SKIP() << "reader not built";
  if (!c.kind.empty()) {
    auto f = qs::open_tensor_file(path);
    EXPECT_EQ(f->kind(), c.kind);
    return;
  }
  const std::string msg = openAndReadAllError(path);
  EXPECT_TRUE(startsWith(msg, path + ": ")) << msg;
  EXPECT_FALSE(contains(msg, "\n")) << msg;
  EXPECT_TRUE(contains(msg, c.error)) << msg;
}

}  // namespace

TEST(TensorFile, Dispatch) {
  const std::string npy = npyBytes(qs::DType::F32, {2}, patternBytes(8));
  const std::string st = safetensorsImage({{"w", "F32", {2}, patternBytes(8)}});
  // The onnx reader's own first words, so the row shows the file went there (with or without protobuf).
  const std::string onnxError =
      qs::tensor_reader_available("onnx") ? "not an ONNX model (protobuf parse failed)" : "this build has no .onnx support";
  std::vector<DispatchCase> cases = {
      {"npy magic, odd extension", "a.bin", npy, "npy", ""},
      {"safetensors magic, no extension", "model", st, "safetensors", ""},
      {"safetensors magic, .npy extension", "wrong.npy", st, "safetensors", ""},
  };
#ifdef QS_TEST_HAVE_ZIP
  const std::string npz = zipImage({{"w.npy", npy, true}});
  cases.push_back({"zip magic, .dat extension", "a.dat", npz, "npz", ""});
  cases.push_back({"empty zip (PK\\5\\6)", "empty.npz", zipImage({}), "npz", ""});
  cases.push_back({"empty .npz (0 bytes)", "empty.npz", "", "", "empty file, not a .npz file"});
#endif
  const DispatchCase more[] = {
      {"unknown bytes, unknown extension", "notes.txt", "hello world, no tensors", "",
       "not a recognised tensor file (supported: .npy, .npz"},
      {"empty file, unknown extension", "empty.bin", "", "", "empty file"},
      {"empty .npy", "empty.npy", "", "", "empty file, not a .npy file"},
      {"short .safetensors", "short.safetensors", std::string("\x10\x00\x00", 3), "",
       "too short for the 8-byte header length"},
      {"garbage .onnx goes to the onnx reader", "m.onnx", "\x01\x02garbage", "", onnxError},
      {".json that is not an index", "config.json", R"({"hidden_size": 4})", "",
       "not a sharded-model index: no \"weight_map\""},
      {".json whose 9th byte is '{' is not taken for .safetensors", "m.JSON", R"({"meta":{"a":1}})", "",
       "not a sharded-model index"},
  };
  cases.insert(cases.end(), std::begin(more), std::end(more));
  for (const DispatchCase& c : cases) {
    SCOPED_TRACE(c.name);
    checkDispatch(c);
  }
}

namespace {

struct BadInputCase {
  std::string name, fileName, bytes;
  int64_t sparseSize;    // > 0: extend the file (sparsely) to this size
  std::string tensor;    // named in the message as "<file>: <tensor>: " ("" = none)
  std::string expected;  // a substring of the one-line message
};

void checkBadInput(const BadInputCase& c) {
  if (c.fileName.ends_with(".safetensors") && !haveSafetensors()) GTEST_SKIP() << "built without nlohmann-json";
  if (c.fileName.ends_with(".npz") && !haveNpz()) GTEST_SKIP() << "built without libzip";
  qs_test::TempDir dir;
  const std::string path = writeFile(dir, c.fileName, c.bytes);
  if (c.sparseSize > 0) fs::resize_file(path, std::uintmax_t(c.sparseSize));
  const std::string msg = openAndReadAllError(path);
  ASSERT_FALSE(msg.empty()) << "no qs::IoError thrown";
  if (showErrors()) std::printf("%s\n", msg.c_str());
  EXPECT_FALSE(contains(msg, "\n") || contains(msg, "\r")) << msg;
  const std::string prefix = path + ": " + (c.tensor.empty() ? std::string() : c.tensor + ": ");
  EXPECT_TRUE(startsWith(msg, prefix)) << msg;
  EXPECT_TRUE(contains(msg, c.expected)) << msg;
}

}  // namespace

TEST(TensorFile, BadInput) {
  std::vector<BadInputCase> cases;
  auto row = [&](const char* name, const std::string& fileName, const std::string& bytes, int64_t sparseSize,
                 const std::string& tensor, const std::string& expected) {
    cases.push_back({name, fileName, bytes, sparseSize, tensor, expected});
  };

  // .safetensors
  const std::string f4x2 = patternBytes(8);
  auto entry = [](const char* name, const char* dtype, const char* shape, const char* offsets) {
    return std::string("\"") + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":" +
           offsets + "}";
  };
  auto one = [&](const char* dtype, const char* shape, const char* offsets, const std::string& data) {
    return safetensorsRaw(std::string("{").append(entry("w", dtype, shape, offsets)).append("}"), data);
  };
  const std::string good = safetensorsImage({{"w", "F32", {2}, f4x2}});
  const std::string st = "m.safetensors";
  row("st empty file", st, "", 0, "", "empty file");
  row("st truncated in the length", st, good.substr(0, 5), 0, "", "truncated: 5 bytes");
  row("st truncated in the header", st, good.substr(0, 20), 0, "", "runs past the end of the file");
  row("st truncated in the data", st, good.substr(0, good.size() - 1), 0, "w",
      "run past the end of the data section (7 bytes)");
  row("st header length beyond the file", st, le64(1000) + "{}", 0, "",
      "header length 1000 runs past the end of the file (10 bytes)");
  row("st header length 2^64-1", st, le64(~0ull) + "{}", 0, "", "above the 100 MB limit");
  row("st header length above 100 MB", st, le64(100'000'001) + "{}", 110'000'000, "",
      "header length 100000001 is above the 100 MB limit");
  row("st wrong magic (no '{')", st, safetensorsRaw("  {}"), 0, "", "header is not a JSON object");
  row("st non-object JSON: array", st, safetensorsRaw("[1, 2]"), 0, "", "header is not a JSON object");
  row("st non-object JSON: string", st, safetensorsRaw("\"w\""), 0, "", "header is not a JSON object");
  row("st invalid JSON", st, safetensorsRaw("{\"w\": {\"dtype\": }"), 0, "", "header is not valid JSON: parse error");
  row("st JSON with trailing garbage", st, safetensorsRaw("{} x"), 0, "", "header is not valid JSON");
  row("st invalid UTF-8 in a name", st, safetensorsRaw("{\"\xff\":1}"), 0, "", "header is not valid JSON");
  row("st JSON nested 100 deep", st, safetensorsRaw("{\"w\":" + std::string(100, '[') + std::string(100, ']') + "}"), 0,
      "", "nests deeper than");
  row("st duplicate tensor name", st,
      safetensorsRaw("{" + entry("w", "F32", "[2]", "[0,8]") + "," + entry("w", "F32", "[2]", "[0,8]") + "}", f4x2), 0,
      "", "the key 'w' twice");
  row("st entry not an object", st, safetensorsRaw("{\"w\": [1, 2]}"), 0, "w", "entry is not an object");
  row("st no dtype", st, safetensorsRaw(R"({"w":{"shape":[2],"data_offsets":[0,8]}})", f4x2), 0, "w", "no 'dtype'");
  row("st no shape", st, safetensorsRaw(R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", f4x2), 0, "w", "no 'shape'");
  row("st no data_offsets", st, safetensorsRaw(R"({"w":{"dtype":"F32","shape":[2]}})", f4x2), 0, "w",
      "no 'data_offsets'");
  // Unknown dtypes are skipped, not errors (SafetensorsSkipsWhatItCannotRead); their ranges still count.
  row("st unknown dtype past the end", st, one("F2_E1M0", "[2]", "[0,9]", f4x2), 0, "w",
      "data_offsets [0, 9) run past the end of the data section (8 bytes)");
  row("st C64 of the wrong size", st, one("C64", "[2]", "[0,8]", f4x2), 0, "w", "hold 8 bytes but shape [2] of C64 needs 16");
  // Packed dtypes: the byte count is ceil(numel * bits / 8).
  row("st F4 bytes do not match the shape", st, one("F4", "[3]", "[0,1]", f4x2), 0, "w",
      "hold 1 bytes but shape [3] of F4 needs 2 (4 bits per element, packed)");
  row("st F4 counted as bytes", st, one("F4", "[2,4]", "[0,8]", f4x2), 0, "w",
      "hold 8 bytes but shape [2, 4] of F4 needs 4 (4 bits per element, packed)");
  row("st F6_E3M2 bytes do not match the shape", st, one("F6_E3M2", "[4]", "[0,4]", f4x2), 0, "w",
      "shape [4] of F6_E3M2 needs 3 (6 bits per element, packed)");
  row("st F6_E2M3 odd count one byte short", st, one("F6_E2M3", "[5]", "[0,3]", f4x2), 0, "w",
      "shape [5] of F6_E2M3 needs 4");
  row("st F8_E8M0 size", st, one("F8_E8M0", "[3]", "[0,2]", f4x2), 0, "w", "hold 2 bytes but shape [3] of F8_E8M0 needs 3");
  row("st F4 shape product overflows bits", st, one("F4", "[4611686018427387904]", "[0,8]", f4x2), 0, "w",
      "too large (byte size overflows)");
  row("st dtype not a string", st, safetensorsRaw(R"({"w":{"dtype":4,"shape":[2],"data_offsets":[0,8]}})", f4x2), 0, "w",
      "'dtype' is not a string");
  row("st negative dim", st, one("F32", "[-2]", "[0,8]", f4x2), 0, "w", "negative dimension -2");
  row("st fractional dim", st, one("F32", "[2.0]", "[0,8]", f4x2), 0, "w", "other than non-negative integers");
  row("st dim beyond uint64", st, one("F32", "[99999999999999999999999]", "[0,8]", f4x2), 0, "w",
      "other than non-negative integers");
  row("st dim beyond int64", st, one("U8", "[9223372036854775808]", "[0,8]", f4x2), 0, "w", "is too large");
  row("st shape product overflows", st, one("F32", "[4294967296,4294967296]", "[0,8]", f4x2), 0, "w", "overflows");
  row("st overflow behind a zero dim", st, one("F32", "[0,4294967296,4294967296]", "[0,0]", f4x2), 0, "w", "overflows");
  row("st byte size overflows", st, one("F64", "[2305843009213693952]", "[0,8]", f4x2), 0, "w", "byte size overflows");
  row("st dtype x shape disagree", st, one("F32", "[3]", "[0,8]", f4x2), 0, "w", "hold 8 bytes but shape [3] of F32 needs 12");
  row("st dtype disagrees (F64)", st, one("F64", "[2]", "[0,8]", f4x2), 0, "w", "needs 16");
  row("st offsets past the end", st, one("F32", "[2]", "[4,12]", f4x2), 0, "w",
      "data_offsets [4, 12) run past the end of the data section (8 bytes)");
  row("st offsets near 2^64", st, one("U8", "[8]", "[18446744073709551608,18446744073709551615]", f4x2), 0, "w",
      "run past the end of the data section");
  row("st offsets reversed", st, one("U8", "[0]", "[8,0]", f4x2), 0, "w", "end before they begin");
  row("st offsets not a pair", st, one("F32", "[2]", "[0,8,8]", f4x2), 0, "w", "not a pair of non-negative integers");
  row("st offsets negative", st, one("F32", "[2]", "[-8,0]", f4x2), 0, "w", "not a pair of non-negative integers");
  row("st overlapping offsets", st,
      safetensorsRaw("{" + entry("a", "F32", "[2]", "[0,8]") + "," + entry("b", "F32", "[1]", "[4,8]") + "}", f4x2), 0,
      "b", "data_offsets [4, 8) overlap tensor 'a' [0, 8)");
  row("st overlap with a tensor two back", st,
      safetensorsRaw("{" + entry("a", "U8", "[8]", "[0,8]") + "," + entry("b", "U8", "[1]", "[2,3]") + "," +
                         entry("c", "U8", "[2]", "[5,7]") + "}",
                     f4x2),
      0, "b", "overlap tensor 'a'");
  row("st control bytes in a name stay on one line", st,
      safetensorsRaw("{" + entry("a\\nb", "F32", "[3]", "[0,8]") + "}", f4x2), 0, "a\\x0ab",
      "hold 8 bytes but shape [3] of F32 needs 12");

  // .npy
  const std::string npy = npyBytes(qs::DType::F32, {2}, f4x2);
  row("npy wrong magic", "x.npy", std::string(npy).replace(1, 5, "NUMPx"), 0, "", "bad magic");
  row("npy truncated header", "x.npy", npy.substr(0, 30), 0, "", "runs past the end");
  row("npy truncated data", "x.npy", npy.substr(0, npy.size() - 3), 0, "", "(truncated)");
  row("npy shape product overflows", "x.npy",
      npyRaw("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", f4x2), 0, "", "overflows");

  // .npz
#ifdef QS_TEST_HAVE_ZIP
  row("npz wrong magic", "x.npz", "PX\x03\x04 not a zip at all", 0, "", "not a .npz file (not a zip archive)");
  // torch.save zips: TorchZipIsNotAnNpz.
  const std::string npz = zipImage({{"a.npy", npy, true}, {"b.npy", npy, false}});
  row("npz truncated", "x.npz", npz.substr(0, npz.size() / 2), 0, "", ".npz");
  row("npz truncated end of central directory", "x.npz", npz.substr(0, npz.size() - 4), 0, "", ".npz");
  row("npz member not a valid .npy", "x.npz", zipImage({{"a.npy", "hello, world", true}}), 0, "a.npy",
      "not a .npy file (bad magic");
  row("npz member empty", "x.npz", zipImage({{"a.npy", "", false}}), 0, "a.npy", "empty file");
  row("npz member with a bad dtype", "x.npz",
      zipImage({{"a.npy", npyRaw("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", f4x2), true}}), 0,
      "a.npy", "unsupported dtype '>f4'");
  row("npz member data truncated", "x.npz", zipImage({{"a.npy", npy.substr(0, npy.size() - 2), true}}), 0, "a.npy",
      "(truncated)");
  row("npz member shape overflows", "x.npz",
      zipImage({{"a.npy", npyRaw("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", f4x2),
                 false}}),
      0, "a.npy", "overflows");
  {
    std::string z = zipImage({{"a.npy", npy + std::string(4000, '\0'), true}});
    const auto [at, size] = firstMemberData(z);
    (void)size;
    z[at] = char(0xff);  // BFINAL=1, BTYPE=11: a reserved block type
    row("npz corrupt deflate stream (first block)", "x.npz", z, 0, "a.npy", "cannot decompress");
  }
  {
    std::string z = zipImage({{"a.npy", npy, true}});
    const auto [at, size] = firstMemberData(z);
    for (std::size_t i = at; i < at + size; ++i) z[i] = char(0x5a ^ z[i]);
    row("npz corrupt deflate stream (all bytes)", "x.npz", z, 0, "a.npy", "cannot decompress");
  }
  {
    std::string z = zipImage({{"a.npy", npy, false}});
    const auto [at, size] = firstMemberData(z);
    z[at + size - 1] = char(z[at + size - 1] ^ 1);  // a data byte of a stored member: only the CRC knows
    row("npz CRC mismatch", "x.npz", z, 0, "a.npy", "CRC error");
  }
  {
    // Local and central names: two members with one name.
    const std::string z = replaceAll(zipImage({{"a.npy", npy, false}, {"b.npy", npy, false}}), "b.npy", "a.npy");
    row("npz duplicate member", "x.npz", z, 0, "", "two members have the same name");
  }
  {
    // The central directory claims a 4 GB uncompressed size for a few deflated bytes.
    std::string z = zipImage({{"a.npy", npy, true}});
    const std::size_t cd = z.rfind(std::string("PK\x01\x02", 4));
    ASSERT_NE(cd, std::string::npos);
    const std::size_t lh = 0;
    for (std::size_t at : {cd + 24, lh + 22}) z.replace(at, 4, std::string("\xf0\xff\xff\xff", 4));
    row("npz size beyond deflate ratio", "x.npz", z, 0, "a.npy", "more than deflate can expand");
  }
  {
    // Method 12 (bzip2) in the local and the central header: numpy never writes it, so refuse it.
    std::string z = zipImage({{"a.npy", npy, false}});
    const std::size_t cd = z.rfind(std::string("PK\x01\x02", 4));
    ASSERT_NE(cd, std::string::npos);
    z[8] = z[cd + 10] = char(12);
    row("npz unsupported compression method", "x.npz", z, 0, "a.npy", "compression method 12 is not supported");
  }
#endif
  for (const BadInputCase& c : cases) {
    SCOPED_TRACE(c.name);
    checkBadInput(c);
  }
}

// torch.save's zip layout (stored members, as torch writes them): the .npz reader names it instead of
// listing nothing. These were BadInput rows through dispatch until dispatch began sending a zip with a
// data.pkl to the PyTorch reader (core/io/torch_file.cpp); the .npz reader's own check is kept here, and
// dispatch is checked to reach the PyTorch reader.
TEST(TensorFile, TorchZipIsNotAnNpz) {
#ifdef QS_TEST_HAVE_ZIP
  const std::vector<ZipMember> torchZip{{"model/data.pkl", std::string("\x80\x02}q\x00.", 6), false},
                                        {"model/byteorder", "little", false},
                                        {"model/data/0", patternBytes(16), false},
                                        {"model/version", "3\n", false}};
  const std::string torchMsg = "a PyTorch checkpoint (torch.save zip), not an .npz; PyTorch files are not read yet";
  struct Case {
    const char* name;
    const char* fileName;
    std::string bytes;
    bool emptyStateDict;  // data.pkl is "{}": dispatch opens an empty PyTorch checkpoint; else its pickle is refused
  };
  const Case cases[] = {
      {"pt zip (torch.save)", "model.pt", zipImage(torchZip), true},
      {"pt zip named .npz", "x.npz", zipImage(torchZip), true},
      {"pt zip, top-level data.pkl", "old.pth", zipImage({{"data.pkl", "x", false}, {"version", "3", false}}), false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    qs_test::TempDir dir;
    const std::string path = writeFile(dir, c.fileName, c.bytes);
    std::string msg;
    try {
      qs::open_npz_file(path);
    } catch (const qs::IoError& e) {
      msg = e.what();
    }
    EXPECT_EQ(msg, path + ": " + torchMsg);
    if (!qs::tensor_reader_available("pytorch")) continue;
    if (c.emptyStateDict) {
      auto f = qs::open_tensor_file(path);
      EXPECT_EQ(f->kind(), "pytorch");
      EXPECT_TRUE(f->tensors().empty());
    } else {
      const std::string dmsg = openAndReadAllError(path);
      EXPECT_TRUE(startsWith(dmsg, path + ": data.pkl: ") && contains(dmsg, "pickle")) << dmsg;
      EXPECT_FALSE(contains(dmsg, "\n")) << dmsg;
    }
  }
#else
  GTEST_SKIP() << "built without libzip";
#endif
}

TEST(TensorFile, ReadIndexOutOfRange) {
  qs_test::TempDir dir;
  const std::string path = writeFile(dir, "x.npy", npyBytes(qs::DType::U8, {3}, "abc"));
  auto f = qs::open_tensor_file(path);
  EXPECT_THROW(f->read(1), qs::IoError);
  if (haveSafetensors()) {
    const std::string p2 = writeFile(dir, "x.safetensors", safetensorsImage({{"w", "U8", {3}, "abc"}}));
    EXPECT_THROW(qs::open_tensor_file(p2)->read(7), qs::IoError);
  }
  const std::string missing = dir.file("missing.safetensors");
  const std::string mmsg = openAndReadAllError(missing);
  EXPECT_TRUE(startsWith(mmsg, missing + ": cannot open: ")) << mmsg;
  // A folder opens as a sharded model (issue 13); one without shards says so.
  ASSERT_TRUE(fs::create_directory(dir.path() / "empty"));
  const std::string empty = dir.file("empty");
  if (haveSafetensors()) {
    EXPECT_EQ(openAndReadAllError(empty), empty + ": is a folder with no .safetensors files and no "
                                                  "*.safetensors.index.json (a folder opens as a sharded safetensors "
                                                  "model)");
  }
}

// F5: a file that shrinks after open (a checkpoint rewritten in place while analysed) gives a one-line
// IoError when the tensor is read; the memory map it replaced raised SIGBUS and killed the process.
namespace {

enum class ReadVia { Read, ReadF32, ReadF32Part };

void checkTruncatedAfterOpen(const std::string& fileName, const std::string& bytes, ReadVia via) {
  if (fileName.ends_with(".safetensors") && !haveSafetensors()) GTEST_SKIP() << "built without nlohmann-json";
  qs_test::TempDir dir;
  const std::string path = writeFile(dir, fileName, bytes);
  auto f = qs::open_tensor_file(path);
  ASSERT_EQ(f->tensors().size(), 1u);
  ASSERT_EQ(::truncate(path.c_str(), off_t(bytes.size() / 2)), 0);
  std::string msg;
  try {
    std::vector<float> x(f->tensors()[0].numel());
    if (via == ReadVia::ReadF32)
      f->read_f32(0, x.data());
    else if (via == ReadVia::ReadF32Part)  // the second half: past the new end
      f->read_f32_part(0, x.size() / 2, x.size() - x.size() / 2, x.data());
    else
      f->read(0);
  } catch (const qs::IoError& e) {
    msg = e.what();
  }
  ASSERT_FALSE(msg.empty()) << "no qs::IoError thrown";
  EXPECT_FALSE(contains(msg, "\n")) << msg;
  EXPECT_TRUE(startsWith(msg, path + ": changed size while reading (" + std::to_string(bytes.size()) +
                                  " bytes when opened, " + std::to_string(bytes.size() / 2) + " now)"))
      << msg;
}

}  // namespace

TEST(TensorFile, TruncatedAfterOpen) {
  struct Case {
    std::string name, fileName, bytes;
    ReadVia via;
  };
  const std::string payload = patternBytes(1 << 20, 31);  // 1 MiB of float32, cut in the middle
  const std::string st = safetensorsImage({{"w", "F32", {1 << 18}, payload}});
  std::vector<Case> cases = {
      {"safetensors read", "w.safetensors", st, ReadVia::Read},
      {"safetensors read_f32", "w.safetensors", st, ReadVia::ReadF32},
      {"safetensors read_f32_part", "w.safetensors", st, ReadVia::ReadF32Part},
      {"npy read", "w.npy", npyBytes(qs::DType::F32, {1 << 18}, payload), ReadVia::Read},
      {"npy read_f32 (float16)", "w.npy", npyBytes(qs::DType::F16, {1 << 19}, payload), ReadVia::ReadF32},
      {"npy read_f32_part (float16)", "w.npy", npyBytes(qs::DType::F16, {1 << 19}, payload), ReadVia::ReadF32Part},
  };
#ifdef QS_TEST_HAVE_ZIP
  const std::string npy = npyBytes(qs::DType::F32, {1 << 18}, payload);
  cases.push_back({"npz stored", "w.npz", zipImage({{"w.npy", npy, false}}), ReadVia::Read});
  cases.push_back({"npz deflated", "w.npz", zipImage({{"w.npy", npy, true}}), ReadVia::Read});
#endif
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    checkTruncatedAfterOpen(c.fileName, c.bytes, c.via);
  }
}

// F12: FIFOs and devices are refused at once with a clear message, by dispatch and by every reader.
// open() on a FIFO used to block until a writer came; a stuck call is freed here by opening the FIFO
// for writing, so that the bug fails the row instead of hanging the test.
namespace {

void checkNonRegularFile(const std::string& reader, const std::string& target, const std::string& expected) {
  if (!reader.empty() && !qs::tensor_reader_available(reader)) GTEST_SKIP() << "reader not built";
  qs_test::TempDir dir;
  std::string path = target;
  if (target == "fifo") {
    path = dir.file("pipe." + (reader.empty() ? std::string("npy") : reader));
    ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  } else if (!fs::exists(target)) {
    GTEST_SKIP() << "device not present";
  }
  std::function<std::unique_ptr<qs::TensorFile>(const std::string&)> open = qs::open_tensor_file;
  if (reader == "npy") open = qs::open_npy_file;
  if (reader == "npz") open = qs::open_npz_file;
  if (reader == "safetensors") open = qs::open_safetensors_file;
  if (reader == "onnx") open = qs::open_onnx_file;
  auto result = std::async(std::launch::async, [open, path]() -> std::string {
    try {
      open(path);
    } catch (const qs::IoError& e) {
      return e.what();
    }
    return {};
  });
  const bool prompt = result.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
  while (result.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
    const int w = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (w >= 0) ::close(w);
  }
  const std::string msg = result.get();
  EXPECT_TRUE(prompt) << "opening a non-regular file blocked";
  EXPECT_EQ(msg, path + ": " + expected + "; tensor files must be regular files");
}

}  // namespace

TEST(TensorFile, NonRegularFile) {
  struct Case {
    std::string name;
    std::string reader;  // "" = open_tensor_file
    std::string target;  // "fifo" = a named pipe in a temp folder, else a device path
    std::string expected;
  };
  const std::string fifo = "is a FIFO (named pipe), not a regular file";
  std::vector<Case> cases = {{"fifo, dispatch", "", "fifo", fifo}};
  for (const char* r : {"npy", "npz", "safetensors", "onnx"})
    cases.push_back({std::string("fifo, ") + r + " reader", r, "fifo", fifo});
  cases.push_back({"/dev/zero, dispatch", "", "/dev/zero", "is a character device, not a regular file"});
  cases.push_back({"/dev/null, npy reader", "npy", "/dev/null", "is a character device, not a regular file"});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    checkNonRegularFile(c.reader, c.target, c.expected);
  }
}

// Issue 13 item 4: an index and three shards read as one model: every tensor, shard by shard in file
// order, bytes and float32 values exact, read in any order (shards are closed and reopened meanwhile).
TEST(TensorFile, ShardedIndexReadsAsOneModel) {
  if (!haveSafetensors()) GTEST_SKIP() << "built without nlohmann-json";
  qs_test::TempDir dir;
  const ShardedFixture m = shardedFixture();
  writeFiles(dir, m.files());
  const std::string index = dir.file("model.safetensors.index.json");
  auto f = qs::open_tensor_file(index);
  EXPECT_EQ(f->kind(), "sharded safetensors");
  EXPECT_EQ(f->path(), index);
  EXPECT_TRUE(f->skipped().empty());
  const std::vector<StTensor> all = m.all();
  ASSERT_EQ(f->tensors().size(), all.size());
  const qs::DType dtypes[] = {qs::DType::F32, qs::DType::F32, qs::DType::BF16, qs::DType::F16, qs::DType::F8E4M3, qs::DType::F32};
  // Read 5, 0, 3, 1, 4, 2, then again 0..5: every shard is closed and reopened at least once.
  const std::size_t order[] = {5, 0, 3, 1, 4, 2, 0, 1, 2, 3, 4, 5};
  for (std::size_t i : order) {
    SCOPED_TRACE("tensor " + std::to_string(i));
    const qs::TensorInfo& t = f->tensors()[i];
    EXPECT_EQ(t.name, all[i].name);
    EXPECT_EQ(t.dtype, dtypes[i]);
    EXPECT_EQ(t.shape, all[i].shape);
    EXPECT_EQ(bytesOf(f->read(i)), all[i].data);
    std::vector<float> want(t.numel()), got(t.numel());
    qs::convert_to_f32(t.dtype, reinterpret_cast<const uint8_t*>(all[i].data.data()), t.numel(), want.data());
    f->read_f32(i, got.data());
    EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * 4), 0);
    // In parts (analyze_file with 2+ threads): through the shard's own part read.
    ASSERT_TRUE(f->reads_f32_in_parts());
    std::vector<float> parts(t.numel(), -7.0f);
    for (std::size_t p = 0; p < parts.size(); p += 8)
      f->read_f32_part(i, p, std::min<std::size_t>(8, parts.size() - p), parts.data() + p);
    EXPECT_EQ(std::memcmp(want.data(), parts.data(), want.size() * 4), 0);
  }
  // The bytes of a read outlive the model and its open shards.
  qs::TensorBytes kept = f->read(2);
  f.reset();
  EXPECT_EQ(bytesOf(kept), all[2].data);
  EXPECT_THROW(qs::open_sharded_model(index)->read(6), qs::IoError);
  EXPECT_THROW(qs::open_sharded_model(index)->read_f32_part(6, 0, 0, nullptr), qs::IoError);
}

// The folder forms: with an index (the index decides; another .safetensors beside it is named as not
// read) and without one (every shard, by file name).
TEST(TensorFile, ShardedFolder) {
  if (!haveSafetensors()) GTEST_SKIP() << "built without nlohmann-json";
  for (bool withIndex : {true, false}) {
    SCOPED_TRACE(withIndex ? "folder with index" : "folder without index");
    qs_test::TempDir dir;
    const ShardedFixture m = shardedFixture();
    Files files = m.files();
    if (!withIndex) files.pop_back();
    writeFiles(dir, files);
    const std::string consolidated = patternBytes(8, 9);
    if (withIndex) writeFile(dir, "consolidated.safetensors", safetensorsImage({{"c", "F32", {2}, consolidated}}));
    writeFile(dir, "config.json", R"({"hidden_size": 4})");  // other files of a model folder are not looked at
    auto f = qs::open_tensor_file(dir.path().string());
    EXPECT_EQ(f->kind(), "sharded safetensors");
    EXPECT_EQ(f->path(), dir.path().string());
    const std::vector<StTensor> all = m.all();
    ASSERT_EQ(f->tensors().size(), all.size());
    for (std::size_t i = 0; i < f->tensors().size(); ++i) {
      EXPECT_EQ(f->tensors()[i].name, all[i].name);
      EXPECT_EQ(bytesOf(f->read(i)), all[i].data);
    }
    if (withIndex) {
      ASSERT_EQ(f->skipped().size(), 1u);
      EXPECT_EQ(f->skipped()[0],
                "consolidated.safetensors: a .safetensors file not named in model.safetensors.index.json, not read");
    } else {
      EXPECT_TRUE(f->skipped().empty());
    }
    // A folder of one file is a model of one shard.
    qs_test::TempDir one;
    writeFile(one, "model.safetensors", safetensorsImage({{"w", "F32", {2}, consolidated}}));
    auto g = qs::open_tensor_file(one.path().string());
    ASSERT_EQ(g->tensors().size(), 1u);
    EXPECT_EQ(bytesOf(g->read(0)), consolidated);
  }
}

// Nothing vanishes: a shard tensor the index does not name, and a shard's own skipped entry (a dtype not
// read), are listed in skipped(); the rest of the model reads.
TEST(TensorFile, ShardedListsWhatItDoesNotRead) {
  if (!haveSafetensors()) GTEST_SKIP() << "built without nlohmann-json";
  qs_test::TempDir dir;
  const std::string w = patternBytes(8, 1), v = patternBytes(4, 2);
  writeFiles(dir, {{"a.safetensors", safetensorsImage({{"w", "F32", {2}, w}, {"extra", "F32", {1}, v}})},
                   {"b.safetensors", safetensorsImage({{"v", "F32", {1}, v}, {"cplx", "C64", {1}, patternBytes(8)}})},
                   {"m.safetensors.index.json",
                    indexJson({{"w", "a.safetensors"}, {"v", "b.safetensors"}, {"cplx", "b.safetensors"}})}});
  auto f = qs::open_tensor_file(dir.file("m.safetensors.index.json"));
  ASSERT_EQ(f->tensors().size(), 2u);
  EXPECT_EQ(bytesOf(f->read(0)), w);
  EXPECT_EQ(bytesOf(f->read(1)), v);
  ASSERT_EQ(f->skipped().size(), 2u);
  EXPECT_EQ(f->skipped()[0], "extra: in a.safetensors but not in the index, not read");
  EXPECT_TRUE(startsWith(f->skipped()[1], "b.safetensors: cplx: dtype C64 is complex")) << f->skipped()[1];
  // Two spellings of one shard ("./a.safetensors", "a.safetensors") are one shard, not two holding 'w'.
  const std::string n = writeFile(dir, "n.safetensors.index.json",
                                  indexJson({{"w", "./a.safetensors"}, {"extra", "a.safetensors"}, {"v", "b.safetensors"}}));
  auto g = qs::open_tensor_file(n);
  ASSERT_EQ(g->tensors().size(), 3u);
  EXPECT_EQ(g->tensors()[1].name, "extra");
  EXPECT_EQ(bytesOf(g->read(1)), v);
  EXPECT_EQ(g->skipped().size(), 1u);
}

// Each bad index or shard set: one IoError line naming the file at fault (the index, or the folder when
// it is the folder's shards that clash) and what is wrong.
namespace {

constexpr const char* kIndexName = "model.safetensors.index.json";

struct ShardedBadCase {
  std::string name;
  Files files;
  std::string expected;
  std::string open;    // what is opened, relative to the folder ("" = the folder)
  std::string prefix;  // the message starts with <folder>/<prefix>: ("" = <folder>: )
};

void checkShardedBad(const ShardedBadCase& c) {
  qs_test::TempDir dir;
  writeFiles(dir, c.files);
  for (const auto& [name, bytes] : c.files)
    if (bytes == "SPARSE") fs::resize_file(dir.path() / name, (64 << 20) + 1);
  const std::string path = c.open.empty() ? dir.path().string() : dir.file(c.open);
  const std::string msg = openAndReadAllError(path);
  ASSERT_FALSE(msg.empty()) << "no qs::IoError thrown";
  if (showErrors()) std::printf("%s\n", msg.c_str());
  EXPECT_FALSE(contains(msg, "\n") || contains(msg, "\r")) << msg;
  const std::string start = (c.prefix.empty() ? dir.path().string() : dir.file(c.prefix)) + ": ";
  EXPECT_TRUE(startsWith(msg, start)) << msg;
  EXPECT_TRUE(contains(msg, c.expected)) << msg;
}

}  // namespace

TEST(TensorFile, ShardedBadInput) {
  if (!haveSafetensors()) GTEST_SKIP() << "built without nlohmann-json";
  const std::string a = safetensorsImage({{"w", "F32", {2}, patternBytes(8)}});
  const std::string b = safetensorsImage({{"v", "F32", {2}, patternBytes(8, 2)}});
  const std::string bw = safetensorsImage({{"v", "F32", {2}, patternBytes(8, 2)}, {"w", "F32", {1}, patternBytes(4)}});
  const std::string idx = kIndexName;
  auto index = [&](const std::string& json) { return Files{{idx, json}}; };
  std::vector<ShardedBadCase> cases;
  auto row = [&](const char* name, const Files& files, const std::string& expected,
                 const std::string& open = kIndexName,
                 const std::string& prefix = kIndexName) { cases.push_back({name, files, expected, open, prefix}); };
  const Files ab = {{"a.safetensors", a}, {"b.safetensors", b}};
  const Files justA = {{"a.safetensors", a}};
  row("missing shard", justA + index(indexJson({{"w", "a.safetensors"}, {"v", "b.safetensors"}})),
      "shard 'b.safetensors' (named for 1 tensor, e.g. 'v') is missing: no file ");
  row("missing shard, folder form", justA + index(indexJson({{"w", "a.safetensors"}, {"v", "b.safetensors"}})),
      "shard 'b.safetensors' (named for 1 tensor, e.g. 'v') is missing", "", idx);
  row("tensor absent from its shard",
      ab + index(indexJson({{"w", "a.safetensors"}, {"x", "a.safetensors"}, {"v", "b.safetensors"}})),
      "x: the index puts it in 'a.safetensors', which does not hold it");
  row("tensor in two shards",
      Files{{"a.safetensors", a}, {"b.safetensors", bw}} + index(indexJson({{"w", "a.safetensors"}, {"v", "b.safetensors"}})),
      "w: in two shards, 'a.safetensors' (as the index says) and 'b.safetensors'");
  row("tensor in two shards, folder without index", Files{{"a.safetensors", a}, {"b.safetensors", bw}},
      "w: in two shards, 'a.safetensors' and 'b.safetensors'", "", "");
  row("tensor named twice in weight_map", ab + index(R"({"weight_map": {"w": "a.safetensors", "w": "b.safetensors"}})"),
      "w: named twice in \"weight_map\"");
  row("top-level key twice", ab + index(R"({"weight_map": {"w": "a.safetensors"}, "weight_map": {}})"),
      "the index has the key 'weight_map' twice");
  row("shard path ../", ab + index(indexJson({{"w", "../a.safetensors"}})),
      "w: shard '../a.safetensors' leaves the index's folder ('..'); shards must lie in it");
  row("shard path sub/../../", ab + index(indexJson({{"w", "sub/../../a.safetensors"}})), "leaves the index's folder");
  row("shard path absolute", ab + index(indexJson({{"w", "/tmp/a.safetensors"}})),
      "w: shard '/tmp/a.safetensors' is an absolute path; shards must lie in the index's folder");
  row("shard name empty", ab + index(indexJson({{"w", ""}})), "w: shard '' is an empty name");
  row("shard name with NUL", ab + index(R"({"weight_map": {"w": "a.safetensors\u0000.txt"}})"),
      "w: shard 'a.safetensors\\x00.txt' holds a NUL byte");
  row("shard not safetensors (pytorch index)",
      ab + Files{{"pytorch_model.bin.index.json", indexJson({{"w", "pytorch_model-00001-of-00002.bin"}})}},
      "w: shard 'pytorch_model-00001-of-00002.bin' is not a .safetensors file (only safetensors shards are read)",
      "pytorch_model.bin.index.json", "pytorch_model.bin.index.json");
  row("malformed JSON", ab + index(R"({"weight_map": {"w": "a.safetensors",)"),
      "not valid JSON: parse error at line 1, column 38: syntax error");
  row("empty index file", ab + index(""), "not valid JSON");
  row("top level not an object", ab + index("[1, 2]"),
      "not a sharded-model index (a JSON object with \"weight_map\")");
  row("no weight_map", ab + index(R"({"metadata": {}})"), "not a sharded-model index: no \"weight_map\" at the top level");
  row("weight_map an array", ab + index(R"({"weight_map": ["a.safetensors"]})"),
      "\"weight_map\" is not an object of tensor name -> shard file");
  row("weight_map value a number", ab + index(R"({"weight_map": {"w": 3}})"), "w: its shard in \"weight_map\" is not a string");
  row("weight_map value an object", ab + index(R"({"weight_map": {"w": {"file": "a.safetensors"}}})"),
      "w: its shard in \"weight_map\" is not a string");
  row("weight_map empty", ab + index(R"({"weight_map": {}})"), "\"weight_map\" is empty: the index names no tensors");
  row("nesting deeper than 32", ab + index("{\"metadata\":" + std::string(40, '[') + std::string(40, ']') + "}"),
      "the index nests deeper than 32 levels");
  row("name with control bytes is escaped", ab + index(R"({"weight_map": {"a\u001b[31mb": "../a.safetensors"}})"),
      "a\\x1b[31mb: shard '../a.safetensors' leaves");
  // A broken shard gives its own reader's line, which names the shard.
  row("truncated shard",
      Files{{"a.safetensors", a.substr(0, 20)}, {"b.safetensors", b}} +
          index(indexJson({{"w", "a.safetensors"}, {"v", "b.safetensors"}})),
      "header length", idx, "a.safetensors");
  row("folder without shards", Files{{"notes.txt", "hello"}}, "is a folder with no .safetensors files", "", "");
  row("folder with two indexes",
      ab + Files{{"x.safetensors.index.json", indexJson({{"w", "a.safetensors"}})},
                 {"y.safetensors.index.json", indexJson({{"v", "b.safetensors"}})}},
      "holds 2 sharded-model indexes ('x.safetensors.index.json', 'y.safetensors.index.json'); open one of them", "",
      "");
  // Sizes: the index is refused from its size before it is read (sparse: no disk used).
  row("index above 64 MiB", ab + index("SPARSE"), "67108865 bytes, above the 64 MiB limit for a sharded-model index");
  for (const ShardedBadCase& c : cases) {
    SCOPED_TRACE(c.name);
    checkShardedBad(c);
  }
}

// A shard rewritten after the model was opened (a download finishing, say) gives one line when its
// tensor is read, never another tensor's bytes; an open shard that shrinks says so as a single file does.
TEST(TensorFile, ShardedShardChangedAfterOpen) {
  if (!haveSafetensors()) GTEST_SKIP() << "built without nlohmann-json";
  qs_test::TempDir dir;
  writeFiles(dir, shardedFixture().files());
  auto f = qs::open_tensor_file(dir.path().string());
  ASSERT_EQ(f->tensors().size(), 6u);
  // Shards 1 and 2 were opened last and stay open; shard 0 is reopened on demand.
  const std::string s0 = dir.file("model-00001-of-00003.safetensors");
  writeFile(dir, "model-00001-of-00003.safetensors", safetensorsImage({{"other", "F32", {2}, patternBytes(8)}}));
  std::string msg;
  try {
    f->read(0);
  } catch (const qs::IoError& e) {
    msg = e.what();
  }
  EXPECT_EQ(msg, s0 + ": model.layers.0.w: the shard changed since the model was opened (the tensor is no longer "
                      "where it was)");
  const std::string s2 = dir.file("model-00003-of-00003.safetensors");
  const auto size = fs::file_size(s2);
  ASSERT_EQ(::truncate(s2.c_str(), off_t(size - 2)), 0);
  msg.clear();
  try {
    std::vector<float> x(f->tensors()[5].numel());
    f->read_f32(5, x.data());
  } catch (const qs::IoError& e) {
    msg = e.what();
  }
  EXPECT_TRUE(startsWith(msg, s2 + ": changed size while reading")) << msg;
}

// Not a check: with QS_FUZZ_CORPUS=DIR set, writes the seed corpora of tests/fuzz/ (DIR/npy, DIR/npz,
// DIR/safetensors, DIR/sharded) from the same writers the tests use.
// `QS_FUZZ_CORPUS=tests/fuzz/corpus build/tests/core/tst_tensorfile --gtest_filter=TensorFile.WriteFuzzCorpus`
TEST(TensorFile, WriteFuzzCorpus) {
  const char* env = std::getenv("QS_FUZZ_CORPUS");
  if (!env || !*env) GTEST_SKIP() << "set QS_FUZZ_CORPUS=DIR to write the fuzz seed corpora";
  const fs::path root = env;
  auto put = [&](const std::string& kind, const std::string& name, const std::string& bytes) {
    qs_test::write_file(root / kind / name, bytes);
  };
  // .npy: every dtype, scalar / empty / 2-d, and a v2 header.
  for (qs::DType t : kNpyDtypes)
    put("npy", std::string(qs::to_string(t)) + "_2x3.npy", npyBytes(t, {2, 3}, patternBytes(6 * qs::dtype_size(t))));
  put("npy", "float32_scalar.npy", npyBytes(qs::DType::F32, {}, patternBytes(4)));
  put("npy", "float64_empty.npy", npyBytes(qs::DType::F64, {0, 3}, {}));
  put("npy", "v2_header.npy", npyRaw("{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }", patternBytes(4), 0, 2));
  put("npy", "v3_header.npy", npyRaw("{'descr': '<u2', 'fortran_order': False, 'shape': (1, 2), }", patternBytes(4), 3, 3));

  // .safetensors: every dtype in one file, metadata, an empty tensor, keys out of offset order.
  std::vector<StTensor> all;
  for (const DtypeCase& c : kStDtypes)
    all.push_back(StTensor{std::string("t.") + c.st, c.st, {2}, patternBytes(qs::dtype_nbytes(c.dtype, 2))});
  put("safetensors", "all_dtypes.safetensors", safetensorsImage(all, R"({"format":"pt"})"));
  put("safetensors", "scalar_and_empty.safetensors",
      safetensorsImage({{"s", "F32", {}, patternBytes(4)}, {"e", "BF16", {0, 4}, {}}, {"m", "F16", {2, 2}, patternBytes(8)}}));
  put("safetensors", "empty.safetensors", safetensorsImage({}));
  // Low-bit dtypes (issue 13): every code once plus an odd tail, packed; a dtype that is skipped.
  std::vector<StTensor> lowbit;
  for (const LowBitCase& c : kLowBit) {
    const std::vector<uint32_t> codes = everyCode(c.bits, 1);
    lowbit.push_back(StTensor{std::string("t.") + c.st, c.st, {int64_t(codes.size())}, packCodes(codes, c.bits)});
  }
  put("safetensors", "lowbit_every_code.safetensors", safetensorsImage(lowbit));
  put("safetensors", "packed_odd.safetensors",
      safetensorsImage({{"f4", "F4", {3}, std::string("\x21\x07", 2)}, {"f6", "F6_E2M3", {5}, patternBytes(4)},
                        {"e3m2", "F6_E3M2", {2, 2}, patternBytes(3)}, {"e8m0", "F8_E8M0", {3}, patternBytes(3)}}));
  put("safetensors", "skipped_dtypes.safetensors",
      safetensorsImage({{"w", "F32", {2}, patternBytes(8)}, {"c", "C64", {1}, patternBytes(8)},
                        {"x", "F2_E1M0", {4}, "a"}}));

  // Sharded-model indexes over the two shards that fuzz_sharded writes beside each input
  // (model-00001-of-00002: a.w, a.b; model-00002-of-00002: b.w, b.c (C64), b.extra).
  const std::string s1 = "model-00001-of-00002.safetensors", s2 = "model-00002-of-00002.safetensors";
  put("sharded", "all.json", indexJson({{"a.b", s1}, {"a.w", s1}, {"b.c", s2}, {"b.extra", s2}, {"b.w", s2}}));
  put("sharded", "subset.json", indexJson({{"a.w", s1}, {"b.w", s2}}));
  put("sharded", "missing_shard.json", indexJson({{"a.w", s1}, {"x", "model-00003-of-00003.safetensors"}}));
  put("sharded", "absent_tensor.json", indexJson({{"a.w", s1}, {"nope", s2}}));
  put("sharded", "wrong_shard.json", indexJson({{"a.w", s2}, {"b.w", s2}}));
  put("sharded", "escape.json", indexJson({{"a.w", "../" + s1}, {"b.w", "/" + s2}}));
  put("sharded", "bad_values.json", R"({"metadata":{"total_size":[1,{"x":null}]},"weight_map":{"a.w":1,"b.w":"x.bin"}})");

#ifdef QS_TEST_HAVE_ZIP
  // .npz: stored (np.savez) and deflated (np.savez_compressed), a non-tensor member, an empty archive.
  const std::string a = npyBytes(qs::DType::F32, {2, 2}, patternBytes(16)), b = npyBytes(qs::DType::I8, {5}, patternBytes(5));
  put("npz", "stored.npz", zipImage({{"arr_0.npy", a, false}, {"arr_1.npy", b, false}}));
  put("npz", "deflated.npz", zipImage({{"w.npy", a, true}, {"b.npy", b, true}}));
  put("npz", "mixed.npz", zipImage({{"notes.txt", "hi", true}, {"x.npy", b, false}, {"y.npy", a, true}}));
  put("npz", "empty.npz", zipImage({}));
#endif
}
