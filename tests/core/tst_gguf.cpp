// The GGUF reader (io/gguf_file.cpp) on files written here from the format's definition (ggml's docs/gguf.md):
// every metadata value type, dims reversed into C order, the alignment, plain and block-quantized tensors
// with expected values computed here from the block definitions (independently of format/ggml_blocks.cpp),
// undecoded and unknown types listed as skipped, and every kind of bad header refused with one line.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "format/float16.h"
#include "io/tensor_file.h"
#include "test_files.h"

namespace {

// A GGUF file assembled field by field.
struct Gguf {
  std::string head, infos, data;
  uint64_t n_kv = 0, n_tensors = 0;
  uint32_t version = 3, alignment = 32;

  static void put(std::string& s, const void* p, std::size_t n) { s.append(static_cast<const char*>(p), n); }
  template <class T> static void put(std::string& s, T v) { put(s, &v, sizeof v); }
  static void str(std::string& s, const std::string& v) {
    put<uint64_t>(s, v.size());
    s += v;
  }
  template <class T> void kv(const std::string& key, uint32_t type, T v) {
    str(head, key);
    put<uint32_t>(head, type);
    put<T>(head, v);
    ++n_kv;
  }
  void kv_str(const std::string& key, const std::string& v) {
    str(head, key);
    put<uint32_t>(head, 8);
    str(head, v);
    ++n_kv;
  }
  void kv_raw(const std::string& key, uint32_t type, const std::string& payload) {
    str(head, key);
    put<uint32_t>(head, type);
    head += payload;
    ++n_kv;
  }
  // A tensor: dims innermost first (ne[0] = row length), its bytes appended to the data at an aligned offset.
  void tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type, const std::string& bytes,
              int64_t offset_override = -1) {
    while (data.size() % alignment) data += '\0';
    str(infos, name);
    put<uint32_t>(infos, uint32_t(ne.size()));
    for (uint64_t d : ne) put<uint64_t>(infos, d);
    put<uint32_t>(infos, type);
    put<uint64_t>(infos, offset_override >= 0 ? uint64_t(offset_override) : data.size());
    data += bytes;
    ++n_tensors;
  }
  std::string bytes() const {
    std::string s = "GGUF";
    put<uint32_t>(s, version);
    put<uint64_t>(s, n_tensors);
    put<uint64_t>(s, n_kv);
    s += head;
    s += infos;
    while (s.size() % alignment) s += '\0';
    return s + data;
  }
};

std::string f32bytes(const std::vector<float>& v) { return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4); }
std::string half(float f) {
  const uint16_t h = qs::float_to_half(f);
  return std::string(reinterpret_cast<const char*>(&h), 2);
}

// One Q8_0 block: fp16 d, 32 int8 codes; value = code * d.
std::string q8_0(float d, const std::vector<int8_t>& q) { return half(d) + std::string(reinterpret_cast<const char*>(q.data()), 32); }

// One Q4_K block from chosen fields: d, dmin, eight 6-bit scales and mins packed as ggml packs them, and 256
// 4-bit codes; the value of element 32 j + l is d * sc[j] * q - dmin * m[j] (ggml-common.h's definition).
struct Q4K {
  float d = 0.5f, dmin = 0.25f;
  uint8_t sc[8] = {1, 7, 13, 31, 32, 45, 62, 63}, m[8] = {0, 3, 9, 17, 33, 40, 51, 63};
  uint8_t q[256];
  std::string bytes() const {
    uint8_t s[12] = {};
    for (int j = 0; j < 8; ++j) {
      if (j < 4) {
        s[j] = uint8_t(sc[j] & 63);
        s[j + 4] = uint8_t(m[j] & 63);
      } else {
        s[j + 4] = uint8_t((sc[j] & 0xF) | ((m[j] & 0xF) << 4));
        s[j - 4] |= uint8_t((sc[j] >> 4) << 6);
        s[j] |= uint8_t((m[j] >> 4) << 6);
      }
    }
    std::string out = half(d) + half(dmin) + std::string(reinterpret_cast<const char*>(s), 12);
    // Codes: each 64-element chunk as 32 bytes, element l in the low nibble, element l + 32 in the high one.
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l) out += char(q[64 * c + l] | (q[64 * c + l + 32] << 4));
    return out;
  }
  float value(int i) const {
    const int j = i / 32;
    const float dd = qs::half_to_float(qs::float_to_half(d)), mm = qs::half_to_float(qs::float_to_half(dmin));
    return dd * float(sc[j]) * float(q[i]) - mm * float(m[j]);
  }
};

std::string expectIoError(const std::string& bytes) {
  qs_test::TempDir dir;
  const std::string p = dir.file("bad.gguf");
  qs_test::write_file(p, bytes);
  try {
    qs::open_tensor_file(p);
  } catch (const qs::IoError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no IoError";
  return {};
}

}  // namespace

TEST(Gguf, MixedFile) {
  Gguf g;
  g.alignment = 64;
  g.kv<uint32_t>("general.alignment", 4, 64);
  g.kv_str("general.architecture", "llama");
  g.kv<uint8_t>("t.u8", 0, 200);
  g.kv<int8_t>("t.i8", 1, -5);
  g.kv<uint16_t>("t.u16", 2, 60000);
  g.kv<int16_t>("t.i16", 3, -300);
  g.kv<int32_t>("t.i32", 5, -70000);
  g.kv<float>("t.f32", 6, 0.5f);
  g.kv<uint8_t>("t.bool", 7, 1);
  g.kv<uint64_t>("t.u64", 10, 1ull << 40);
  g.kv<int64_t>("t.i64", 11, -(1ll << 40));
  g.kv<double>("t.f64", 12, 0.125);
  {
    std::string a;
    Gguf::put<uint32_t>(a, 5);  // int32 elements
    Gguf::put<uint64_t>(a, 3);
    for (int32_t v : {1, 2, 3}) Gguf::put<int32_t>(a, v);
    g.kv_raw("t.small", 9, a);
    std::string b;
    Gguf::put<uint32_t>(b, 8);  // 100 strings: summarised
    Gguf::put<uint64_t>(b, 100);
    for (int i = 0; i < 100; ++i) Gguf::str(b, "tok" + std::to_string(i));
    g.kv_raw("tokenizer.ggml.tokens", 9, b);
    std::string c;  // an array of two arrays of one uint8 each
    Gguf::put<uint32_t>(c, 9);
    Gguf::put<uint64_t>(c, 2);
    for (int i = 0; i < 2; ++i) {
      Gguf::put<uint32_t>(c, 0);
      Gguf::put<uint64_t>(c, 1);
      Gguf::put<uint8_t>(c, uint8_t(7 + i));
    }
    g.kv_raw("t.nested", 9, c);
  }
  std::vector<float> w(15);
  for (int i = 0; i < 15; ++i) w[std::size_t(i)] = float(i) - 7.5f;
  g.tensor("w", {5, 3}, 0, f32bytes(w));  // ne = {5, 3}: 3 rows of 5
  g.tensor("h", {4}, 1, half(1.0f) + half(-2.0f) + half(0.099975586f) + half(65504.0f));
  std::vector<int8_t> qa(32), qb(32);
  for (int i = 0; i < 32; ++i) qa[std::size_t(i)] = int8_t(i - 16), qb[std::size_t(i)] = int8_t(127 - 8 * i);
  g.tensor("q8", {32, 2}, 8, q8_0(0.5f, qa) + q8_0(0.0625f, qb));
  Q4K k;
  for (int i = 0; i < 256; ++i) k.q[i] = uint8_t((i * 7 + i / 32) % 16);
  g.tensor("blk.0.ffn.weight", {256, 1}, 12, k.bytes());
  g.tensor("iq", {256}, 16, std::string(66, '\0'));        // IQ2_XXS: skipped
  g.tensor("future", {32}, 99, std::string(32, '\0'));     // an unknown type id: skipped
  qs_test::TempDir dir;
  qs_test::write_file(dir.file("m.gguf"), g.bytes());
  const auto f = qs::open_tensor_file(dir.file("m.gguf"));
  EXPECT_EQ(f->kind(), "gguf");
  ASSERT_EQ(f->tensors().size(), 4u);
  ASSERT_EQ(f->skipped().size(), 2u);
  EXPECT_TRUE(qs_test::contains(f->skipped()[0], "iq: ggml type IQ2_XXS is not decoded")) << f->skipped()[0];
  EXPECT_TRUE(qs_test::contains(f->skipped()[1], "future: unknown ggml type 99")) << f->skipped()[1];
  // Metadata, each value type as text.
  std::map<std::string, std::string> meta(f->metadata().begin(), f->metadata().end());
  EXPECT_EQ(meta["GGUF.version"], "3");
  EXPECT_EQ(meta["general.alignment"], "64");
  EXPECT_EQ(meta["general.architecture"], "llama");
  EXPECT_EQ(meta["t.u8"], "200");
  EXPECT_EQ(meta["t.i8"], "-5");
  EXPECT_EQ(meta["t.u16"], "60000");
  EXPECT_EQ(meta["t.i16"], "-300");
  EXPECT_EQ(meta["t.i32"], "-70000");
  EXPECT_EQ(meta["t.f32"], "0.5");
  EXPECT_EQ(meta["t.bool"], "true");
  EXPECT_EQ(meta["t.u64"], "1099511627776");
  EXPECT_EQ(meta["t.i64"], "-1099511627776");
  EXPECT_EQ(meta["t.f64"], "0.125");
  EXPECT_EQ(meta["t.small"], "[1, 2, 3]");
  EXPECT_EQ(meta["tokenizer.ggml.tokens"], "[100 strings]");
  EXPECT_EQ(meta["t.nested"], "[[7], [8]]");
  // Plain tensors: C-order shapes, values as stored.
  const auto& t = f->tensors();
  EXPECT_EQ(t[0].name, "w");
  EXPECT_EQ(t[0].shape, (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(t[0].dtype, qs::DType::F32);
  std::vector<float> got(15);
  f->read_f32(0, got.data());
  EXPECT_EQ(got, w);
  EXPECT_EQ(t[1].dtype, qs::DType::F16);
  std::vector<float> h(4);
  f->read_f32(1, h.data());
  EXPECT_EQ(h, (std::vector<float>{1.0f, -2.0f, qs::half_to_float(qs::float_to_half(0.099975586f)), 65504.0f}));
  // Q8_0: code * d.
  EXPECT_EQ(t[2].stored, "Q8_0");
  EXPECT_EQ(t[2].stored_bytes, 68u);
  EXPECT_EQ(t[2].shape, (std::vector<int64_t>{2, 32}));
  std::vector<float> q8(64);
  f->read_f32(2, q8.data());
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(q8[std::size_t(i)], float(i - 16) * 0.5f);
    EXPECT_EQ(q8[std::size_t(32 + i)], float(127 - 8 * i) * 0.0625f);
  }
  // Q4_K: every field matters (scales and mins with high bits, both nibbles).
  EXPECT_EQ(t[3].stored, "Q4_K");
  EXPECT_EQ(t[3].stored_bytes, 144u);
  std::vector<float> q4(256);
  f->read_f32(3, q4.data());
  for (int i = 0; i < 256; ++i) ASSERT_EQ(q4[std::size_t(i)], k.value(i)) << i;
  // read() gives the same dequantized values as bytes.
  const qs::TensorBytes b = f->read(3);
  ASSERT_EQ(b.size, 256u * 4);
  EXPECT_EQ(std::memcmp(b.data, q4.data(), b.size), 0);
}

TEST(Gguf, Version2AndDefaultAlignment) {
  Gguf g;
  g.version = 2;
  g.tensor("a", {3}, 0, f32bytes({1, 2, 3}));
  g.tensor("b", {2}, 0, f32bytes({4, 5}));  // at data offset 32 (the default alignment)
  qs_test::TempDir dir;
  qs_test::write_file(dir.file("v2.gguf"), g.bytes());
  const auto f = qs::open_tensor_file(dir.file("v2.gguf"));
  ASSERT_EQ(f->tensors().size(), 2u);
  std::vector<float> v(2);
  f->read_f32(1, v.data());
  EXPECT_EQ(v, (std::vector<float>{4, 5}));
}

TEST(Gguf, BadHeadersRefused) {
  struct Case {
    const char* name;
    std::string bytes;
    const char* needle;
  };
  std::vector<Case> cases;
  auto good = [] {
    Gguf g;
    g.kv_str("general.name", "x");
    g.tensor("a", {4}, 0, f32bytes({1, 2, 3, 4}));
    return g;
  };
  const std::string whole = good().bytes();
  for (std::size_t cut : {std::size_t(3), std::size_t(6), std::size_t(12), std::size_t(30), std::size_t(50)})
    cases.push_back({"truncated", whole.substr(0, cut), cut < 24 ? "truncated" : "bad.gguf: "});
  {
    Gguf g = good();
    g.version = 1;
    cases.push_back({"version 1", g.bytes(), "version 1"});
    g.version = 7;
    cases.push_back({"version 7", g.bytes(), "unknown GGUF version 7"});
    g.version = 0x03000000;
    cases.push_back({"big-endian", g.bytes(), "big-endian"});
  }
  {
    std::string s = "GGUF";
    Gguf::put<uint32_t>(s, 3);
    Gguf::put<uint64_t>(s, uint64_t(1) << 60);  // tensors
    Gguf::put<uint64_t>(s, 0);
    cases.push_back({"absurd tensor count", s, "claims 1152921504606846976 tensors"});
    std::string t = "GGUF";
    Gguf::put<uint32_t>(t, 3);
    Gguf::put<uint64_t>(t, 0);
    Gguf::put<uint64_t>(t, uint64_t(1) << 62);  // key/values
    cases.push_back({"absurd kv count", t, "metadata entries"});
  }
  {
    Gguf g;
    std::string key = "k";
    Gguf::put<uint64_t>(g.head, uint64_t(1) << 50);  // a key length far past the file
    g.head += std::string(24, 'k');
    g.n_kv = 1;
    cases.push_back({"absurd string", g.bytes(), "claims 1125899906842624 bytes"});
  }
  {
    Gguf g;
    std::string a;
    Gguf::put<uint32_t>(a, 4);
    Gguf::put<uint64_t>(a, uint64_t(1) << 40);  // a uint32 array the file cannot hold
    g.kv_raw("big", 9, a);
    cases.push_back({"absurd array", g.bytes(), "claims an array of 1099511627776 uint32"});
  }
  {
    Gguf g;
    g.tensor("a", {1, 1, 1, 1, 1}, 0, f32bytes({1}));
    cases.push_back({"5 dims", g.bytes(), "5 dimensions"});
  }
  {
    Gguf g;
    g.tensor("a", {4}, 0, f32bytes({1, 2, 3, 4}), 4);  // not a multiple of 32
    cases.push_back({"misaligned", g.bytes(), "not a multiple of the alignment"});
  }
  {
    Gguf g;
    g.tensor("a", {4}, 0, f32bytes({1, 2, 3, 4}), 1024);
    cases.push_back({"past the end", g.bytes(), "run past the end"});
  }
  {
    Gguf g;
    g.tensor("a", {16}, 0, std::string(64, '\0'));
    g.tensor("b", {4}, 0, f32bytes({1, 2, 3, 4}), 32);  // inside a's 64 bytes
    cases.push_back({"overlap", g.bytes(), "overlap"});
  }
  {
    Gguf g;
    g.tensor("a", {4}, 0, f32bytes({1, 2, 3, 4}));
    g.tensor("a", {4}, 0, f32bytes({1, 2, 3, 4}));
    cases.push_back({"duplicate name", g.bytes(), "appears twice"});
  }
  {
    Gguf g;
    g.tensor("q", {48}, 8, std::string(51, '\0'));  // Q8_0 rows of 48: not whole blocks of 32
    cases.push_back({"partial block", g.bytes(), "not whole blocks of 32"});
  }
  {
    Gguf g;
    g.kv<uint16_t>("general.alignment", 2, 64);
    cases.push_back({"alignment type", g.bytes(), "general.alignment is a uint16"});
    Gguf h;
    h.kv<uint32_t>("general.alignment", 4, 48);
    cases.push_back({"alignment not a power of two", h.bytes(), "not a power of two"});
  }
  {
    Gguf g;
    g.kv<uint32_t>("x", 13, 0);
    cases.push_back({"unknown value type", g.bytes(), "unknown value type 13"});
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string msg = expectIoError(c.bytes);
    EXPECT_TRUE(qs_test::contains(msg, c.needle)) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

// The decoded block types other than Q8_0 and Q4_K, through the reader: Q4_0 (code - 8) * d and MXFP4
// (ggml's doubled e2m1 values times 2^(e - 128)).
TEST(Gguf, Q4_0AndMxfp4Blocks) {
  Gguf g;
  std::string q4 = half(0.25f);
  for (int j = 0; j < 16; ++j) q4 += char(j | ((15 - j) << 4));
  g.tensor("q4", {32}, 2, q4);
  std::string mx(1, char(130));  // e = 130: 2^(130 - 128) = 4
  for (int j = 0; j < 16; ++j) mx += char(j | ((15 - j) << 4));
  g.tensor("mx", {32}, 39, mx);
  qs_test::TempDir dir;
  qs_test::write_file(dir.file("b.gguf"), g.bytes());
  const auto f = qs::open_tensor_file(dir.file("b.gguf"));
  ASSERT_EQ(f->tensors().size(), 2u);
  std::vector<float> a(32), m(32);
  f->read_f32(0, a.data());
  f->read_f32(1, m.data());
  const float e2m1x2[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(a[std::size_t(j)], float(j - 8) * 0.25f);
    EXPECT_EQ(a[std::size_t(j + 16)], float(15 - j - 8) * 0.25f);
    EXPECT_EQ(m[std::size_t(j)], e2m1x2[j] * 4.0f);
    EXPECT_EQ(m[std::size_t(j + 16)], e2m1x2[15 - j] * 4.0f);
  }
  EXPECT_EQ(f->tensors()[1].stored, "MXFP4");
}
