// Tests for core/io/npy.h and core/io/atomic_file.h: round trips of every dtype, numpy-identical header
// bytes, every malformed-file case as a table row, exact float16, atomic writes that leave nothing behind.
// Run: ninja -C build tst_npy && build/tests/core/tst_npy [--gtest_filter=Npy.Half*]
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "io/atomic_file.h"
#include "io/npy.h"
#include "test_files.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define QS_TEST_HAVE_F16C 1
#endif

namespace qs {
inline void PrintTo(DType t, std::ostream* os) { *os << to_string(t); }
}  // namespace qs

namespace {

namespace fs = std::filesystem;
using qs_test::contains;
using Shape = std::vector<int64_t>;

bool startsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// A .npy image with the header text exactly as given (no padding added), so rows can spell any
// header, including ones numpy would never write.
std::string npyImage(const std::string& header, int major = 1, const std::string& data = {}, int minor = 0) {
  std::string out("\x93NUMPY", 6);
  out += char(major);
  out += char(minor);
  const uint32_t len = uint32_t(header.size());
  const int lenBytes = major == 1 ? 2 : 4;
  for (int i = 0; i < lenBytes; ++i) out += char((len >> (8 * i)) & 0xFF);
  return out + header + data;
}

std::string dictText(const char* descr, const char* shape, const char* fortran = "False") {
  return std::string("{'descr': '") + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

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

std::string shapeName(const Shape& s) {
  std::string out = "(";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

std::size_t numelOf(const Shape& s) {
  std::size_t n = 1;
  for (int64_t d : s) n *= std::size_t(d);
  return n;
}

// Every entry under `dir`, recursively, so a test can say "nothing was left behind".
std::vector<std::string> listAll(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) out.push_back(e.path().lexically_relative(dir).string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string bytesOf(const std::vector<uint8_t>& v) { return std::string(reinterpret_cast<const char*>(v.data()), v.size()); }

std::string ioErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const qs::IoError& e) {
    return e.what();
  }
  return {};
}

std::string hex4(unsigned v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%04x", v);
  return buf;
}

// The value of a finite half code computed from its definition, independent of half_to_float.
double halfValueDef(uint16_t h) {
  const int e = (h >> 10) & 0x1F;
  const int m = h & 0x3FF;
  const double mag = e == 0 ? std::ldexp(double(m), -24) : std::ldexp(double(1024 + m), e - 25);
  return (h & 0x8000) ? -mag : mag;
}

#ifdef QS_TEST_HAVE_F16C
// The CPU's IEEE round-to-nearest-even conversion: an oracle written by someone else.
__attribute__((target("f16c"))) uint16_t hardwareFloatToHalf(float f) {
  return uint16_t(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}
#endif

const qs::DType kDtypes[] = {qs::DType::F32, qs::DType::F64, qs::DType::F16, qs::DType::I8,
                             qs::DType::U8,  qs::DType::I32, qs::DType::U16};

}  // namespace

TEST(Npy, DtypeTable) {
  struct Case {
    qs::DType dtype;
    const char* name;
    int size;
    bool isFloat;
  };
  const Case cases[] = {{qs::DType::F32, "float32", 4, true}, {qs::DType::F64, "float64", 8, true},
                        {qs::DType::F16, "float16", 2, true}, {qs::DType::I8, "int8", 1, false},
                        {qs::DType::U8, "uint8", 1, false},   {qs::DType::I32, "int32", 4, false},
                        {qs::DType::U16, "uint16", 2, false}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(std::string(qs::to_string(c.dtype)), c.name);
    EXPECT_EQ(int(qs::dtype_size(c.dtype)), c.size);
    EXPECT_EQ(qs::dtype_is_float(c.dtype), c.isFloat);
  }
}

namespace {

void checkRoundTrip(qs::DType dtype, const Shape& shape) {
  const std::string payload = patternBytes(numelOf(shape) * qs::dtype_size(dtype), unsigned(shape.size()));
  const qs::NpyArray a = qs::make_npy(dtype, shape, payload.data());
  EXPECT_EQ(a.numel(), numelOf(shape));
  ASSERT_EQ(a.data.size(), payload.size());

  const std::vector<uint8_t> img = qs::serialize_npy(a);
  // numpy's layout: data starts on a 64-byte boundary right after a '\n'.
  ASSERT_GT(img.size(), a.data.size());
  const std::size_t dataStart = img.size() - a.data.size();
  EXPECT_EQ(dataStart % 64, 0u);
  EXPECT_EQ(char(img[dataStart - 1]), '\n');

  const qs::NpyArray b = qs::parse_npy(img.data(), img.size(), "mem.npy");
  EXPECT_EQ(b.dtype, dtype);
  EXPECT_EQ(b.shape, shape);
  EXPECT_EQ(bytesOf(b.data), payload);

  qs_test::TempDir dir;
  const std::string path = dir.file("a.npy");
  qs::write_npy(path, a);
  EXPECT_EQ(listAll(dir.path()), std::vector<std::string>{"a.npy"});  // no temp file left
  const qs::NpyArray c = qs::read_npy(path);
  EXPECT_EQ(c.dtype, dtype);
  EXPECT_EQ(c.shape, shape);
  EXPECT_EQ(bytesOf(c.data), payload);
}

}  // namespace

TEST(Npy, RoundTrip) {
  const Shape shapes[] = {{}, {0}, {1}, {7}, {2, 3}, {3, 0, 2}, {2, 1, 3, 4}, {1000}};
  for (qs::DType t : kDtypes)
    for (const Shape& s : shapes) {
      SCOPED_TRACE(std::string(qs::to_string(t)) + " " + shapeName(s));
      checkRoundTrip(t, s);
    }
}

TEST(Npy, HeaderBytes) {
  struct Case {
    const char* name;
    qs::DType dtype;
    Shape shape;
    std::string dict;
  };
  // Every one of these is 118 header bytes ("v\x00") in a numpy >= 1.24 np.save file, data at 128:
  // the dict, 21 - digits(shape[0]) growth spaces, then padding to 64 and '\n'.
  const Case cases[] = {
      {"float32 (2, 3)", qs::DType::F32, {2, 3}, dictText("<f4", "(2, 3)")},
      {"float64 0-d", qs::DType::F64, {}, dictText("<f8", "()")},
      {"uint8 (0,)", qs::DType::U8, {0}, dictText("|u1", "(0,)")},
      {"int8 (5,)", qs::DType::I8, {5}, dictText("|i1", "(5,)")},
      {"float16 (4, 1)", qs::DType::F16, {4, 1}, dictText("<f2", "(4, 1)")},
      {"int32 (3,)", qs::DType::I32, {3}, dictText("<i4", "(3,)")},
      {"uint16 (2, 2, 2)", qs::DType::U16, {2, 2, 2}, dictText("<u2", "(2, 2, 2)")},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string payload = patternBytes(numelOf(c.shape) * qs::dtype_size(c.dtype));
    const std::vector<uint8_t> img = qs::serialize_npy(qs::make_npy(c.dtype, c.shape, payload.data()));
    std::string expected("\x93NUMPY\x01\x00v\x00", 10);
    expected += c.dict;
    expected += std::string(118 - 1 - c.dict.size(), ' ');
    expected += '\n';
    EXPECT_EQ(expected.size(), 128u);
    expected += payload;
    EXPECT_EQ(bytesOf(img), expected);
  }
}

TEST(Npy, ParseVariants) {
  struct Case {
    const char* name;
    std::string header;
    qs::DType dtype;
    Shape shape;
    int major = 1;
  };
  using qs::DType;
  const Case cases[] = {
      {"numpy padded", dictText("<f4", "(2, 3)") + std::string(20, ' ') + '\n', DType::F32, {2, 3}},
      {"keys reordered", "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}\n", DType::F32, {2, 3}},
      {"no spaces", "{'descr':'<f8','fortran_order':False,'shape':(4,)}", DType::F64, {4}},
      {"extra spaces and tabs", "  {  'descr' :\t'<f2' ,  'fortran_order' : False , 'shape' : ( 2 , 3 ) , }  \n",
       DType::F16, {2, 3}},
      {"no trailing comma", "{'descr': '<i4', 'fortran_order': False, 'shape': (5,)}", DType::I32, {5}},
      {"shape trailing comma (2, 3,)", "{'descr': '<u2', 'fortran_order': False, 'shape': (2, 3,)}", DType::U16,
       {2, 3}},
      {"double quotes", "{\"descr\": \"|u1\", \"fortran_order\": False, \"shape\": (3,)}", DType::U8, {3}},
      {"spelling <i1", "{'descr': '<i1', 'fortran_order': False, 'shape': (3,)}", DType::I8, {3}},
      {"spelling =i1", "{'descr': '=i1', 'fortran_order': False, 'shape': (3,)}", DType::I8, {3}},
      {"spelling <u1", "{'descr': '<u1', 'fortran_order': False, 'shape': (3,)}", DType::U8, {3}},
      {"spelling =u1", "{'descr': '=u1', 'fortran_order': False, 'shape': (3,)}", DType::U8, {3}},
      {"0-d scalar", "{'descr': '<f4', 'fortran_order': False, 'shape': ()}", DType::F32, {}},
      {"empty (0,)", "{'descr': '<f4', 'fortran_order': False, 'shape': (0,)}", DType::F32, {0}},
      {"empty (2, 0)", "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 0)}", DType::F64, {2, 0}},
      {"python2 long 3L", "{'descr': '<f4', 'fortran_order': False, 'shape': (3L,)}", DType::F32, {3}},
      {"CRLF", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}\r\n", DType::F32, {1}},
      {"version 2.0", dictText("<f4", "(2, 2)") + "\n", DType::F32, {2, 2}, 2},
      {"version 3.0", dictText("|i1", "(6,)") + "\n", DType::I8, {6}, 3},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string data = patternBytes(numelOf(c.shape) * qs::dtype_size(c.dtype));
    const std::string file = npyImage(c.header, c.major, data);
    const auto* p = reinterpret_cast<const uint8_t*>(file.data());
    const qs::NpyArray a = qs::parse_npy(p, file.size(), "v.npy");
    EXPECT_EQ(a.dtype, c.dtype);
    EXPECT_EQ(a.shape, c.shape);
    EXPECT_EQ(a.data.size(), numelOf(c.shape) * qs::dtype_size(c.dtype));
    EXPECT_EQ(bytesOf(a.data), data);
  }
}

namespace {

void checkMalformed(const std::string& file, const std::string& expected) {
  const auto* p = reinterpret_cast<const uint8_t*>(file.data());
  const std::string msg = ioErrorOf([&] { qs::parse_npy(p, file.size(), "bad.npy"); });
  ASSERT_FALSE(msg.empty()) << "no qs::IoError thrown";
  EXPECT_TRUE(startsWith(msg, "bad.npy: ")) << msg;
  EXPECT_FALSE(contains(msg, "\n")) << msg;
  EXPECT_TRUE(contains(msg, expected)) << msg;

  // Same through the file system: the message names the path the user gave.
  qs_test::TempDir dir;
  const std::string path = dir.file("bad.npy");
  qs_test::write_file(path, file);
  const std::string msg2 = ioErrorOf([&] { qs::read_npy(path); });
  EXPECT_TRUE(startsWith(msg2, path + ": ")) << msg2;
  EXPECT_TRUE(contains(msg2, expected)) << msg2;
}

}  // namespace

TEST(Npy, Malformed) {
  struct Case {
    const char* name;
    std::string file;
    std::string expected;  // a substring of the one-line message
  };
  const std::string f4x3 = patternBytes(12);
  auto hdr = [](const char* shape, const char* descr = "<f4") { return dictText(descr, shape); };
  std::string tooManyDims = "(";
  for (int i = 0; i < 65; ++i) tooManyDims += "1, ";
  tooManyDims += ")";
  const Case cases[] = {
      {"empty file", "", "empty file"},
      {"bad magic", "PK\x03\x04 this is a zip file", "bad magic"},
      {"bad magic, npy-like", npyImage(hdr("(3,)"), 1, f4x3).replace(1, 5, "numpy"), "bad magic"},
      {"magic only", std::string("\x93NUMPY", 6), "truncated header"},
      {"v1 length field cut", std::string("\x93NUMPY\x01\x00\x10", 9), "truncated header"},
      {"v2 length field cut", std::string("\x93NUMPY\x02\x00\x10\x00\x00", 11), "truncated header"},
      {"header length beyond file", npyImage(hdr("(3,)")).substr(0, 40), "runs past the end"},
      // Claims a 4 GiB header.
      {"v2 header length 4 GiB", std::string("\x93NUMPY\x02\x00\xff\xff\xff\xff{}", 14), "runs past the end"},
      {"version 4.0", npyImage(hdr("(3,)"), 4, f4x3), "version 4.0"},
      {"version 1.1", npyImage(hdr("(3,)"), 1, f4x3, 1), "version 1.1"},
      {"version 0.0", npyImage(hdr("(3,)"), 0, f4x3), "version 0.0"},
      {"data too short", npyImage(hdr("(4,)"), 1, f4x3), "needs 16 data bytes but the file has 12 (truncated)"},
      {"data too long", npyImage(hdr("(2,)"), 1, f4x3), "needs 8 data bytes but the file has 12 (trailing data)"},
      {"no data", npyImage(hdr("(3,)")), "(truncated)"},
      {"0-d without data", npyImage(hdr("()")), "needs 4 data bytes"},
      {"empty array with data", npyImage(hdr("(0,)"), 1, f4x3), "(trailing data)"},
      {"negative dim", npyImage(hdr("(-3,)"), 1, f4x3), "negative dimension -3"},
      {"negative dim second", npyImage(hdr("(2, -1)"), 1, f4x3), "negative dimension -1"},
      {"dims product overflows", npyImage(hdr("(4294967296, 4294967296)"), 1, f4x3), "overflows"},
      {"overflow behind a zero dim", npyImage(hdr("(0, 4294967296, 4294967296)")), "overflows"},
      {"byte size overflows", npyImage(hdr("(4611686018427387904,)"), 1, f4x3), "overflows"},
      {"dim beyond int64", npyImage(hdr("(99999999999999999999999,)"), 1, f4x3), "too large"},
      // Fits in 64 bits but is 4 TiB: must be refused by the size check, not by a failed allocation.
      {"huge dim, small file", npyImage(hdr("(1099511627776,)"), 1, f4x3), "(truncated)"},
      {"too many dims", npyImage(hdr(tooManyDims.c_str()), 1, patternBytes(4)), "more than 64 dimensions"},
      {"non-ASCII garbage", npyImage("{'descr': '<f4\xff\xfe', 'shape': (3,)}", 1, f4x3),
       "non-ASCII or control byte 0xff"},
      {"NUL in header", npyImage(std::string("{'descr'\0: '<f4'}", 17), 1, f4x3), "control byte 0x00"},
      {"binary noise", npyImage(patternBytes(50, 7), 1, f4x3), "header"},
      {"empty header", npyImage("", 1, f4x3), "not a Python dict"},
      {"header is a list", npyImage("[1, 2, 3]", 1, f4x3), "not a Python dict"},
      {"unclosed dict", npyImage("{'descr': '<f4', 'fortran_order': False, 'shape': (3,)", 1, f4x3),
       "expected ',' or '}'"},
      {"missing shape", npyImage("{'descr': '<f4', 'fortran_order': False}", 1, f4x3), "no 'shape' key"},
      {"missing descr", npyImage("{'fortran_order': False, 'shape': (3,)}", 1, f4x3), "no 'descr' key"},
      {"missing fortran_order", npyImage("{'descr': '<f4', 'shape': (3,)}", 1, f4x3), "no 'fortran_order' key"},
      {"duplicate key",
       npyImage("{'descr': '<f4', 'descr': '<f8', 'fortran_order': False, 'shape': (3,)}", 1, f4x3),
       "duplicate key 'descr'"},
      {"unknown key", npyImage("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}", 1, f4x3),
       "unexpected key 'x'"},
      {"key closing quote missing", npyImage("{'descr: '<f4', 'shape': (3,)}", 1, f4x3), "expected ':'"},
      {"unterminated at end", npyImage("{'descr': '<f4", 1, f4x3), "unterminated string"},
      {"unquoted key", npyImage("{descr: '<f4'}", 1, f4x3), "expected a key in quotes"},
      {"shape not a tuple", npyImage(hdr("3"), 1, f4x3), "must be a tuple"},
      {"shape (3) is an int", npyImage(hdr("(3)"), 1, f4x3), "is not a tuple; expected (3,)"},
      {"shape list", npyImage(hdr("[3]"), 1, f4x3), "must be a tuple"},
      {"shape float dim", npyImage(hdr("(2.5,)"), 1, f4x3), "expected ',' or ')'"},
      {"shape empty slot", npyImage(hdr("(3,,)"), 1, f4x3), "expected an integer"},
      {"fortran_order not bool", npyImage(dictText("<f4", "(3,)", "0"), 1, f4x3), "True or False"},
      {"fortran_order Truex", npyImage(dictText("<f4", "(3,)", "Truex"), 1, f4x3), "True or False"},
      {"text after dict", npyImage(hdr("(3,)") + " x", 1, f4x3), "unexpected text after"},
      {"escape in string", npyImage(hdr("(3,)", "<f\\x34"), 1, f4x3), "escape sequences"},
      {"big-endian >f4", npyImage(hdr("(3,)", ">f4"), 1, f4x3), "unsupported dtype '>f4' (big-endian"},
      {"big-endian >i4", npyImage(hdr("(3,)", ">i4"), 1, f4x3), "unsupported dtype '>i4' (big-endian"},
      {"object |O", npyImage(hdr("(3,)", "|O"), 1, f4x3), "unsupported dtype '|O' (object arrays"},
      {"bool |b1", npyImage(hdr("(3,)", "|b1"), 1, f4x3), "unsupported dtype '|b1'"},
      {"int64 <i8", npyImage(hdr("(3,)", "<i8"), 1, f4x3), "unsupported dtype '<i8'"},
      {"native =f4", npyImage(hdr("(3,)", "=f4"), 1, f4x3), "unsupported dtype '=f4'"},
      {"unicode <U3", npyImage(hdr("(3,)", "<U3"), 1, f4x3), "unsupported dtype '<U3'"},
      {"empty descr", npyImage(hdr("(3,)", ""), 1, f4x3), "unsupported dtype ''"},
      {"structured dtype", npyImage("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,)}", 1, f4x3),
       "structured dtypes"},
      {"fortran order", npyImage(dictText("<f4", "(3,)", "True"), 1, f4x3), "Fortran-order"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    checkMalformed(c.file, c.expected);
  }
}

TEST(Npy, FortranOrderRefused) {
  const std::string file = npyImage(dictText("<f4", "(2, 3)", "True") + "\n", 1, patternBytes(24));
  const std::string msg =
      ioErrorOf([&] { qs::parse_npy(reinterpret_cast<const uint8_t*>(file.data()), file.size(), "f.npy"); });
  EXPECT_TRUE(contains(msg, "Fortran-order arrays are not supported")) << msg;
  EXPECT_TRUE(contains(msg, "np.ascontiguousarray")) << msg;  // says how to fix it
}

TEST(Npy, BigEndianRefused) {
  for (const std::string descr : {">f4", ">f8", ">f2", ">u2"}) {
    SCOPED_TRACE(descr);
    const std::string file = npyImage(dictText(descr.c_str(), "(1,)"), 1, patternBytes(8).substr(0, descr.back() - '0'));
    const std::string msg =
        ioErrorOf([&] { qs::parse_npy(reinterpret_cast<const uint8_t*>(file.data()), file.size(), "be.npy"); });
    EXPECT_TRUE(startsWith(msg, "be.npy: unsupported dtype '" + descr + "'")) << msg;
    EXPECT_TRUE(contains(msg, "big-endian")) << msg;
  }
}

TEST(Npy, ReadMissingOrDirectory) {
  qs_test::TempDir dir;
  const std::string missing = dir.file("nope.npy");
  std::string msg = ioErrorOf([&] { qs::read_npy(missing); });
  EXPECT_TRUE(startsWith(msg, missing + ": cannot open")) << msg;
  msg = ioErrorOf([&] { qs::read_npy(dir.path().string()); });
  EXPECT_TRUE(contains(msg, "is a directory")) << msg;
}

TEST(Npy, SerializeRejectsSizeMismatch) {
  qs::NpyArray a;
  a.dtype = qs::DType::F32;
  a.shape = {2, 2};
  a.data.resize(12);
  EXPECT_THROW(qs::serialize_npy(a), std::invalid_argument);
  a.shape = {-1};
  EXPECT_THROW(qs::serialize_npy(a), std::invalid_argument);
}

TEST(Npy, MakeNpyCopies) {
  float v[6] = {1, 2, 3, 4, 5, 6};
  const qs::NpyArray a = qs::make_npy(qs::DType::F32, {3, 2}, v);
  v[0] = 99;  // a copy, not a view
  EXPECT_EQ(qs::to_float32(a), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  const qs::NpyArray e = qs::make_npy(qs::DType::F64, {0, 5}, nullptr);  // empty: data never read
  EXPECT_EQ(e.numel(), 0u);
  EXPECT_TRUE(e.data.empty());
}

// ---- float16 ----

TEST(Npy, HalfKnownValues) {
  struct Case {
    const char* name;
    unsigned code;
    float value;
  };
  const Case cases[] = {
      {"zero", 0x0000u, 0.0f},
      {"neg_zero", 0x8000u, -0.0f},
      {"denorm_min", 0x0001u, std::ldexp(1.0f, -24)},
      {"neg_denorm_min", 0x8001u, -std::ldexp(1.0f, -24)},
      {"max_subnormal", 0x03FFu, std::ldexp(1023.0f, -24)},
      {"min_normal", 0x0400u, std::ldexp(1.0f, -14)},
      {"one", 0x3C00u, 1.0f},
      {"one_plus_eps", 0x3C01u, 1.0f + std::ldexp(1.0f, -10)},
      {"minus_two", 0xC000u, -2.0f},
      {"third", 0x3555u, 0.333251953125f},
      {"max", 0x7BFFu, 65504.0f},
      {"lowest", 0xFBFFu, -65504.0f},
      {"inf", 0x7C00u, std::numeric_limits<float>::infinity()},
      {"neg_inf", 0xFC00u, -std::numeric_limits<float>::infinity()},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(std::bit_cast<uint32_t>(qs::half_to_float(uint16_t(c.code))), std::bit_cast<uint32_t>(c.value));
    EXPECT_EQ(unsigned(qs::float_to_half(c.value)), c.code) << hex4(qs::float_to_half(c.value)) << " vs " << hex4(c.code);
  }
}

TEST(Npy, HalfRoundTripAllCodes) {
  int nans = 0;
  for (uint32_t c = 0; c < 0x10000; ++c) {
    const auto h = uint16_t(c);
    const float f = qs::half_to_float(h);
    const bool isNan = (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0;
    if (isNan) {
      ++nans;
      ASSERT_TRUE(std::isnan(f)) << hex4(c);
      ASSERT_EQ(std::signbit(f), bool(h & 0x8000)) << hex4(c);
    } else if ((h & 0x7FFF) == 0x7C00) {
      ASSERT_TRUE(std::isinf(f)) << hex4(c);
    } else {
      const double def = halfValueDef(h);
      if (double(f) != def || std::signbit(f) != std::signbit(def))
        FAIL() << "half " << hex4(c) << " decodes to " << f << ", expected " << def;
    }
    // Every code, NaN payloads included, comes back bit for bit.
    if (qs::float_to_half(f) != h) FAIL() << "half " << hex4(c) << " -> " << f << " -> " << hex4(qs::float_to_half(f));
  }
  EXPECT_EQ(nans, 2 * 1023);
}

TEST(Npy, HalfTies) {
  struct Case {
    const char* name;
    float input;
    unsigned code;
  };
  const float inf = std::numeric_limits<float>::infinity();
  const Case cases[] = {
      {"2^-25 ties to zero", std::ldexp(1.0f, -25), 0x0000u},
      {"-2^-25 ties to -zero", -std::ldexp(1.0f, -25), 0x8000u},
      {"just above 2^-25", std::nextafter(std::ldexp(1.0f, -25), 1.0f), 0x0001u},
      {"3*2^-25 ties to 2", std::ldexp(3.0f, -25), 0x0002u},
      {"5*2^-25 ties to 2", std::ldexp(5.0f, -25), 0x0002u},
      {"below min_normal rounds up", std::ldexp(2047.0f, -25), 0x0400u},
      {"1+2^-11 ties to 1", 1.0f + std::ldexp(1.0f, -11), 0x3C00u},
      {"1+3*2^-11 ties up", 1.0f + std::ldexp(3.0f, -11), 0x3C02u},
      {"2047 ties to 2048", 2047.5f, 0x6800u},  // carry into the exponent
      {"65519.99 to max", std::nextafter(65520.0f, 0.0f), 0x7BFFu},
      {"65520 ties to inf", 65520.0f, 0x7C00u},
      {"-65520 ties to -inf", -65520.0f, 0xFC00u},
      {"1e9 to inf", 1e9f, 0x7C00u},
      {"float max to inf", std::numeric_limits<float>::max(), 0x7C00u},
      {"inf", inf, 0x7C00u},
      {"float denorm_min to zero", std::numeric_limits<float>::denorm_min(), 0x0000u},
      {"qnan", std::numeric_limits<float>::quiet_NaN(), 0x7E00u},
      {"-qnan", -std::numeric_limits<float>::quiet_NaN(), 0xFE00u},
      // A NaN whose payload is only in the bits a half drops must stay NaN, not become inf.
      {"nan low payload", std::bit_cast<float>(0x7F800001u), 0x7E00u},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(hex4(qs::float_to_half(c.input)), hex4(c.code));
  }
}

// Every midpoint between neighbouring finite halves ties to the even code; one float ulp either
// side goes to the nearer neighbour.
TEST(Npy, HalfMidpointSweep) {
  for (uint32_t c = 0; c < 0x7BFF; ++c) {
    for (uint16_t sign : {uint16_t(0), uint16_t(0x8000)}) {
      const auto lo = uint16_t(c | sign), hi = uint16_t((c + 1) | sign);
      const double mid = (halfValueDef(lo) + halfValueDef(hi)) / 2;  // exact: 12 significant bits
      const auto midF = float(mid);
      ASSERT_EQ(double(midF), mid) << hex4(lo);
      const uint16_t even = (lo & 1) ? hi : lo;
      const float away = sign ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
      const uint16_t got = qs::float_to_half(midF);
      const uint16_t below = qs::float_to_half(std::nextafter(midF, 0.0f));
      const uint16_t above = qs::float_to_half(std::nextafter(midF, away));
      if (got != even || below != lo || above != hi)
        FAIL() << "between " << hex4(lo) << " and " << hex4(hi) << ": mid->" << hex4(got) << " below->" << hex4(below)
               << " above->" << hex4(above);
    }
  }
}

// A sample of all 2^32 float bit patterns against the CPU's own conversion (F16C). NaNs are left out:
// the hardware quiets them, we keep the payload so half NaNs round-trip.
TEST(Npy, HalfMatchesHardware) {
#ifdef QS_TEST_HAVE_F16C
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "CPU has no F16C";
  uint64_t checked = 0;
  for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 97) {
    const float f = std::bit_cast<float>(uint32_t(b));
    if (std::isnan(f)) continue;
    const uint16_t want = hardwareFloatToHalf(f), got = qs::float_to_half(f);
    if (want != got) {
      char bits[16];
      std::snprintf(bits, sizeof bits, "0x%08x", unsigned(b));
      FAIL() << "float bits " << bits << ": got " << hex4(got) << ", hardware " << hex4(want);
    }
    ++checked;
  }
  EXPECT_GT(checked, 40'000'000u);
#else
  GTEST_SKIP() << "not an x86 build";
#endif
}

// ---- to_float32 ----

namespace {

template <typename... T>
std::string raw(T... v) {
  std::string b;
  ((b += std::string(reinterpret_cast<const char*>(&v), sizeof v)), ...);
  return b;
}

struct ToF32Case {
  const char* name;
  qs::DType dtype;
  std::string raw;
  std::vector<float> expected;
};

void checkToFloat32(const ToF32Case& c) {
  const qs::DType dtype = c.dtype;
  const int64_t n = int64_t(c.raw.size() / qs::dtype_size(dtype));
  // Through a file, so the conversion sees exactly what a reader produced.
  const qs::NpyArray a0 = qs::make_npy(dtype, {n}, c.raw.data());
  const std::vector<uint8_t> img = qs::serialize_npy(a0);
  const qs::NpyArray a = qs::parse_npy(img.data(), img.size(), "t.npy");
  const std::vector<float> got = qs::to_float32(a);
  const std::vector<double> got64 = qs::to_float64(a);
  ASSERT_EQ(got.size(), c.expected.size());
  ASSERT_EQ(got64.size(), c.expected.size());
  for (std::size_t i = 0; i < c.expected.size(); ++i) {
    SCOPED_TRACE("element " + std::to_string(i));
    if (std::isnan(c.expected[i])) {
      EXPECT_TRUE(std::isnan(got[i]));
      EXPECT_TRUE(std::isnan(got64[i]));
      continue;
    }
    EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(c.expected[i])) << got[i];
    // to_float64 is exact for every dtype; only float64 and large int32 differ from the float32 result.
    if (dtype != qs::DType::F64 && dtype != qs::DType::I32) {
      EXPECT_EQ(got64[i], double(got[i]));
    }
  }
  if (dtype == qs::DType::F64) {
    double first;
    std::memcpy(&first, c.raw.data(), sizeof first);
    EXPECT_EQ(got64[0], first);
  }
  if (dtype == qs::DType::I32) {
    EXPECT_EQ(got64[1], 16777217.0);
  }
}

}  // namespace

TEST(Npy, ToFloat32) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const ToF32Case cases[] = {
      {"float32", qs::DType::F32, raw(1.5f, -0.0f, inf, nan), {1.5f, -0.0f, inf, nan}},
      // float64 -> float32 is the ordinary C++ conversion: nearest, overflow to inf, underflow to (signed) 0.
      {"float64", qs::DType::F64, raw(0.1, 1e300, -1e-50, 16777217.0, double(nan)),
       {0.1f, inf, -0.0f, 16777216.0f, nan}},
      {"float16", qs::DType::F16, raw(uint16_t(0x3C00), uint16_t(0x0001), uint16_t(0xFC00), uint16_t(0x7BFF)),
       {1.0f, std::ldexp(1.0f, -24), -inf, 65504.0f}},
      {"int8", qs::DType::I8, raw(int8_t(-128), int8_t(127), int8_t(0)), {-128, 127, 0}},
      {"uint8", qs::DType::U8, raw(uint8_t(0), uint8_t(255)), {0, 255}},
      {"int32", qs::DType::I32, raw(int32_t(INT32_MIN), int32_t(16777217), int32_t(-7)),
       {-2147483648.0f, 16777216.0f, -7.0f}},
      {"uint16", qs::DType::U16, raw(uint16_t(65535), uint16_t(1)), {65535, 1}},
  };
  for (const ToF32Case& c : cases) {
    SCOPED_TRACE(c.name);
    checkToFloat32(c);
  }
}

// ---- atomic output ----

TEST(Npy, AtomicWriteReplaces) {
  qs_test::TempDir dir;
  const std::string path = dir.file("out.txt");
  qs::write_file_atomic(path, std::string_view("old contents, longer than the new ones"));
  qs::write_file_atomic(path, std::string_view("new"));
  EXPECT_EQ(bytesOf(qs::read_file(path)), "new");
  qs::write_file_atomic(path, std::string_view(""));
  EXPECT_TRUE(qs::read_file(path).empty());
  EXPECT_EQ(listAll(dir.path()), std::vector<std::string>{"out.txt"});
  // A bare file name lands in the current directory.
  const fs::path old = fs::current_path();
  fs::current_path(dir.path());
  std::string msg = ioErrorOf([] { qs::write_file_atomic("bare.txt", std::string_view("x")); });
  fs::current_path(old);
  EXPECT_EQ(msg, "");
  EXPECT_EQ(listAll(dir.path()), (std::vector<std::string>{"bare.txt", "out.txt"}));
}

namespace {

// A folder with an empty subfolder "sub" and a file "file.txt" holding `contents`.
void makeTree(const qs_test::TempDir& dir, const std::string& contents) {
  fs::create_directory(dir.path() / "sub");
  qs_test::write_file(dir.path() / "file.txt", contents);
}

}  // namespace

TEST(Npy, AtomicWriteFailureLeavesNothing) {
  struct Case {
    const char* name;
    const char* relPath;
    const char* expected;
  };
  const Case cases[] = {
      {"missing folder", "nope/out.npy", "folder"},
      {"missing nested folder", "nope/deeper/out.npy", "does not exist"},
      {"target is a folder", "sub", "is a directory"},  // refused before a temp file is made
      {"parent is a file", "file.txt/out.npy", "is not a folder"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    qs_test::TempDir dir;
    makeTree(dir, "");
    const std::vector<std::string> before = listAll(dir.path());
    const std::string path = dir.file(c.relPath);

    const float v[3] = {1, 2, 3};
    const std::string msg = ioErrorOf([&] { qs::write_npy(path, qs::make_npy(qs::DType::F32, {3}, v)); });
    EXPECT_TRUE(startsWith(msg, path + ": ")) << msg;
    EXPECT_TRUE(contains(msg, c.expected)) << msg;
    EXPECT_FALSE(contains(msg, "\n")) << msg;
    EXPECT_EQ(listAll(dir.path()), before);
  }
}

TEST(Npy, AtomicWriteReadOnlyDir) {
  if (::geteuid() == 0)
    GTEST_SKIP() << "running as root: permissions do not stop writes (missing-folder rows cover failure)";
  qs_test::TempDir dir;
  const fs::path ro = dir.path() / "ro";
  ASSERT_TRUE(fs::create_directory(ro));
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec, fs::perm_options::replace);
  const std::string path = (ro / "out.npy").string();
  std::string msg = ioErrorOf([&] { qs::write_file_atomic(path, std::string_view("x")); });
  EXPECT_TRUE(contains(msg, "Permission denied")) << msg;
  msg = ioErrorOf([&] { qs::check_writable(path); });
  EXPECT_TRUE(contains(msg, "cannot create files")) << msg;
  fs::permissions(ro, fs::perms::owner_all, fs::perm_options::replace);
  EXPECT_TRUE(listAll(ro).empty());
}

TEST(Npy, CheckWritable) {
  struct Case {
    const char* name;
    const char* relPath;
    const char* expected;  // empty: must succeed
  };
  const Case cases[] = {
      {"new file", "out.npy", ""},
      {"existing file", "file.txt", ""},
      {"new file in subfolder", "sub/out.npy", ""},
      {"missing folder", "nope/out.npy", "folder '"},
      {"path is a folder", "sub", "is a directory"},
      {"path is a folder, slash", "sub/", "is a directory"},
      {"parent is a file", "file.txt/out.npy", "is not a folder"},
      {"empty path", "<empty>", "no output file name"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    qs_test::TempDir dir;
    makeTree(dir, "keep");
    const std::vector<std::string> before = listAll(dir.path());
    const std::string path = std::string(c.relPath) == "<empty>" ? std::string() : dir.path().string() + "/" + c.relPath;

    const std::string msg = ioErrorOf([&] { qs::check_writable(path); });
    if (*c.expected == '\0') {
      EXPECT_EQ(msg, "");
    } else {
      EXPECT_TRUE(contains(msg, c.expected)) << msg;
      EXPECT_FALSE(contains(msg, "\n")) << msg;
      if (!path.empty()) {
        EXPECT_TRUE(startsWith(msg, path + ": ")) << msg;
      }
    }
    EXPECT_EQ(listAll(dir.path()), before);  // the probe is gone, nothing was created
    EXPECT_EQ(bytesOf(qs::read_file(dir.file("file.txt"))), "keep");
  }
}
