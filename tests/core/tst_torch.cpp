// The PyTorch checkpoint reader (io/torch_file.cpp) and its restricted unpickler (io/pickle_min.cpp) on archives
// written here in torch.save's layout (`archive/data.pkl`, `archive/data/<key>`, `archive/byteorder`, stored
// members) with data.pkl emitted opcode by opcode as torch's protocol-2 pickler writes a state dict: several
// dtypes (float8 through _rebuild_tensor_v3 and an UntypedStorage), two views of one storage, a transpose, a
// storage offset, a 0-d and an empty tensor, nested dicts, an nn.Parameter; and hostile pickles refused by name
// with nothing imported or called. tests/gpu/torch_save_oracle.py checks files written by real torch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <zip.h>

#include "format/float16.h"
#include "io/pickle_min.h"
#include "io/tensor_file.h"
#include "test_files.h"

namespace {

// data.pkl, opcode by opcode (protocol 2, as torch.save writes it).
struct Pickle {
  std::string b = "\x80\x02";
  Pickle& op(const std::string& s) { b += s; return *this; }
  Pickle& global(const std::string& m, const std::string& n) { b += "c" + m + "\n" + n + "\n"; return *this; }
  Pickle& str(const std::string& s) {
    b += 'X';
    const uint32_t n = uint32_t(s.size());
    b.append(reinterpret_cast<const char*>(&n), 4);
    b += s;
    return *this;
  }
  Pickle& integer(int64_t v) {
    if (v >= 0 && v < 256) b += "K" + std::string(1, char(v));
    else {
      b += "J";
      const int32_t x = int32_t(v);
      b.append(reinterpret_cast<const char*>(&x), 4);
    }
    return *this;
  }
  Pickle& ints(const std::vector<int64_t>& v) {
    if (v.empty()) return op(")");
    op("(");
    for (int64_t x : v) integer(x);
    return op("t");
  }
  Pickle& ordered_dict() { return global("collections", "OrderedDict").op(")R"); }
  // A tensor: _rebuild_tensor_v2 over a typed storage, or _rebuild_tensor_v3 over an UntypedStorage + dtype.
  Pickle& tensor(const std::string& storage_cls, const std::string& key, int64_t numel, int64_t offset,
                 const std::vector<int64_t>& size, const std::vector<int64_t>& stride, const std::string& v3_dtype = "") {
    global("torch._utils", v3_dtype.empty() ? "_rebuild_tensor_v2" : "_rebuild_tensor_v3");
    op("(");
    // torch >= 2 pickles the untyped class from its defining module (torch.storage); typed ones from torch.
    op("(").str("storage").global(storage_cls == "UntypedStorage" ? "torch.storage" : "torch", storage_cls).str(key).str("cpu").integer(numel).op("t").op("Q");
    integer(offset).ints(size).ints(stride).op("\x89").ordered_dict();
    if (!v3_dtype.empty()) global("torch", v3_dtype);
    return op("tR");
  }
};

// A zip in torch.save's layout; members stored (uncompressed), as torch writes them.
std::string writeArchive(const qs_test::TempDir& dir, const std::string& pkl, const std::map<std::string, std::string>& storages,
                         const std::string& byteorder = "little", const std::string& name = "m.pt") {
  const std::string path = dir.file(name);
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  EXPECT_NE(z, nullptr);
  std::vector<std::string> keep;  // zip_source_buffer reads at zip_close
  keep.reserve(storages.size() + 2);
  auto add = [&](const std::string& member, const std::string& bytes) {
    keep.push_back(bytes);
    zip_source_t* s = zip_source_buffer(z, keep.back().data(), keep.back().size(), 0);
    const zip_int64_t i = zip_file_add(z, member.c_str(), s, ZIP_FL_OVERWRITE);
    EXPECT_GE(i, 0);
    zip_set_file_compression(z, zip_uint64_t(i), ZIP_CM_STORE, 0);
  };
  add("archive/data.pkl", pkl);
  if (!byteorder.empty()) add("archive/byteorder", byteorder);
  for (const auto& [k, v] : storages) add("archive/data/" + k, v);
  EXPECT_EQ(zip_close(z), 0);
  return path;
}

template <class T> std::string raw(const std::vector<T>& v) { return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T)); }

std::vector<float> readF32(const qs::TensorFile& f, std::size_t i) {
  std::vector<float> v(f.tensors()[i].numel());
  f.read_f32(i, v.data());
  return v;
}

std::size_t indexOf(const qs::TensorFile& f, const std::string& name) {
  for (std::size_t i = 0; i < f.tensors().size(); ++i)
    if (f.tensors()[i].name == name) return i;
  ADD_FAILURE() << "no tensor " << name;
  return 0;
}

}  // namespace

TEST(Torch, StateDictOfManyDtypes) {
  std::vector<float> f32 = {1.5f, -2.0f, 3.25f, 0.0f, 1e-3f, -7.0f};
  std::vector<uint16_t> f16 = {qs::float_to_half(0.5f), qs::float_to_half(-65504.0f), qs::float_to_half(0.1f)};
  std::vector<uint16_t> bf16 = {0x3f80, 0xc040, 0x0001};                       // 1, -3, the smallest subnormal
  std::vector<int64_t> i64 = {-5, 1ll << 40, 7};
  std::vector<int8_t> i8 = {-128, 0, 127};
  std::vector<uint8_t> b = {1, 0, 1, 1};
  std::vector<uint8_t> f8 = {0x38, 0xb8, 0x7e, 0x01};                           // e4m3fn: 1, -1, 448, 2^-9
  Pickle p;
  p.ordered_dict().op(std::string("q\x00(", 3));
  p.str("w").tensor("FloatStorage", "0", 6, 0, {2, 3}, {3, 1});
  p.str("h").tensor("HalfStorage", "1", 3, 0, {3}, {1});
  p.str("bf").tensor("BFloat16Storage", "2", 3, 0, {3}, {1});
  p.str("step").tensor("LongStorage", "3", 3, 0, {3}, {1});
  p.str("q").tensor("CharStorage", "4", 3, 0, {3}, {1});
  p.str("mask").tensor("BoolStorage", "5", 4, 0, {2, 2}, {2, 1});
  p.str("f8").tensor("UntypedStorage", "6", 4, 0, {4}, {1}, "float8_e4m3fn");
  p.op("u.");
  qs_test::TempDir dir;
  const std::string path = writeArchive(dir, p.b, {{"0", raw(f32)}, {"1", raw(f16)}, {"2", raw(bf16)}, {"3", raw(i64)},
                                                   {"4", raw(i8)}, {"5", raw(b)}, {"6", raw(f8)}});
  const auto f = qs::open_tensor_file(path);
  EXPECT_EQ(f->kind(), "pytorch");
  ASSERT_EQ(f->tensors().size(), 7u);
  EXPECT_TRUE(f->skipped().empty());
  const auto& t = f->tensors();
  EXPECT_EQ(t[0].name, "w");
  EXPECT_EQ(t[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(readF32(*f, 0), f32);
  EXPECT_EQ(t[1].dtype, qs::DType::F16);
  EXPECT_EQ(readF32(*f, 1), (std::vector<float>{0.5f, -65504.0f, qs::half_to_float(qs::float_to_half(0.1f))}));
  EXPECT_EQ(t[2].dtype, qs::DType::BF16);
  EXPECT_EQ(readF32(*f, 2), (std::vector<float>{1.0f, -3.0f, 0x1p-133f}));
  EXPECT_EQ(t[3].dtype, qs::DType::I64);
  const qs::TensorBytes lb = f->read(3);
  ASSERT_EQ(lb.size, 24u);
  EXPECT_EQ(std::memcmp(lb.data, i64.data(), 24), 0);
  EXPECT_EQ(readF32(*f, 4), (std::vector<float>{-128, 0, 127}));
  EXPECT_EQ(t[5].dtype, qs::DType::Bool);
  EXPECT_EQ(t[6].dtype, qs::DType::F8E4M3);
  EXPECT_EQ(readF32(*f, 6), (std::vector<float>{1.0f, -1.0f, 448.0f, 0x1p-9f}));
}

// Two views of one storage, a transpose, an offset, a 0-d and an empty tensor; nested dicts and a Parameter.
TEST(Torch, ViewsAndNesting) {
  std::vector<float> s(12);
  for (int i = 0; i < 12; ++i) s[std::size_t(i)] = float(i);
  Pickle p;
  p.ordered_dict().op("(");
  p.str("model").op("}(");
  p.str("a").tensor("FloatStorage", "0", 12, 0, {2, 3}, {3, 1});
  p.str("b").tensor("FloatStorage", "0", 12, 6, {3, 2}, {2, 1});
  p.str("t").tensor("FloatStorage", "0", 12, 0, {3, 2}, {1, 3});   // a.T-style view
  p.str("scalar").tensor("FloatStorage", "0", 12, 5, {}, {});
  p.str("empty").tensor("FloatStorage", "0", 12, 0, {0, 4}, {4, 1});
  p.str("inner").op("}(").str("weight");
  p.global("torch._utils", "_rebuild_parameter").op("(");
  p.tensor("FloatStorage", "0", 12, 10, {2}, {1});
  p.op("\x88").ordered_dict().op("tR");
  p.op("u");  // inner
  p.op("u");  // model
  p.str("epoch").integer(3).str("note").str("hello");
  p.op("u.");
  qs_test::TempDir dir;
  const auto f = qs::open_tensor_file(writeArchive(dir, p.b, {{"0", raw(s)}}));
  ASSERT_EQ(f->tensors().size(), 6u);
  EXPECT_EQ(readF32(*f, indexOf(*f, "model.a")), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(readF32(*f, indexOf(*f, "model.b")), (std::vector<float>{6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(readF32(*f, indexOf(*f, "model.t")), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  const std::size_t sc = indexOf(*f, "model.scalar");
  EXPECT_TRUE(f->tensors()[sc].shape.empty());
  EXPECT_EQ(readF32(*f, sc), (std::vector<float>{5}));
  const std::size_t em = indexOf(*f, "model.empty");
  EXPECT_EQ(f->tensors()[em].shape, (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(f->read(em).size, 0u);
  EXPECT_EQ(readF32(*f, indexOf(*f, "model.inner.weight")), (std::vector<float>{10, 11}));
  ASSERT_EQ(f->skipped().size(), 2u);
  EXPECT_EQ(f->skipped()[0], "epoch: a int, not a tensor");
  EXPECT_EQ(f->skipped()[1], "note: a str, not a tensor");
}

TEST(Torch, HostileArchivesRefused) {
  std::vector<float> s(4, 1.0f);
  struct Case {
    const char* name;
    std::string pkl;
    std::map<std::string, std::string> storages;
    std::string byteorder;
    const char* needle;
  };
  std::vector<Case> cases;
  {
    Pickle p;
    p.global("os", "system").str("echo pwned").op("\x85R.");
    cases.push_back({"os.system", p.b, {}, "little", "refers to os.system, which a state dict does not need"});
  }
  {
    Pickle p;
    p.str("builtins").str("eval").op("\x93").str("1").op("\x85R.");
    cases.push_back({"STACK_GLOBAL eval", p.b, {}, "little", "refers to builtins.eval"});
  }
  {
    Pickle p;
    p.ordered_dict().str("w").tensor("FloatStorage", "0", 4, 2, {3}, {1}).op("s.");
    cases.push_back({"view past the end", p.b, {{"0", raw(s)}}, "little", "runs past its storage"});
  }
  {
    Pickle p;
    p.ordered_dict().str("w").tensor("FloatStorage", "9", 4, 0, {4}, {1}).op("s.");
    cases.push_back({"missing storage", p.b, {{"0", raw(s)}}, "little", "storage member 'archive/data/9' is missing"});
  }
  {
    Pickle p;
    p.ordered_dict().str("w").tensor("FloatStorage", "0", 100, 0, {4}, {1}).op("s.");
    cases.push_back({"storage larger than its member", p.b, {{"0", raw(s)}}, "little", "claims 100 elements"});
  }
  {
    Pickle p;
    for (int i = 0; i < 1000; ++i) p.op("]");
    for (int i = 0; i < 999; ++i) p.op("a");
    p.op(".");
    cases.push_back({"recursion bomb", p.b, {}, "little", "deeper than 256"});
  }
  {
    Pickle p;
    p.op("h\x07.");
    cases.push_back({"memo out of range", p.b, {}, "little", "memo entry 7 was never stored"});
  }
  {
    Pickle p;
    p.ordered_dict().op("(").str("w");
    cases.push_back({"truncated", p.b, {}, "little", "truncated pickle"});
  }
  {
    Pickle p;
    p.op("X\xff\xff\xff\xff");
    cases.push_back({"huge string", p.b, {}, "little", "an operand of 4294967295 bytes"});
  }
  {
    Pickle p;
    p.ordered_dict().op(".");
    cases.push_back({"big-endian", p.b, {}, "big", "big-endian checkpoint"});
  }
  {
    Pickle p;
    p.op(std::string("]q\x00h\x00" "a.", 7));  // a list appended to itself
    cases.push_back({"self-containing list", p.b, {}, "little", "a container inside itself"});
  }
  {
    Pickle p;
    p.str("x").op(".");
    cases.push_back({"not a state dict", p.b, {}, "little", "holds a str, not a state dict"});
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    qs_test::TempDir dir;
    const std::string path = writeArchive(dir, c.pkl, c.storages, c.byteorder);
    try {
      const auto f = qs::open_tensor_file(path);
      for (std::size_t i = 0; i < f->tensors().size(); ++i) f->read(i);
      ADD_FAILURE() << "no IoError";
    } catch (const qs::IoError& e) {
      EXPECT_TRUE(qs_test::contains(e.what(), c.needle)) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  }
}

TEST(Torch, LegacyAndBarePicklesNamed) {
  qs_test::TempDir dir;
  const std::string legacy = dir.file("old.pt");
  qs_test::write_file(legacy, std::string("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.", 15));
  try {
    qs::open_tensor_file(legacy);
    ADD_FAILURE() << "legacy file opened";
  } catch (const qs::IoError& e) {
    EXPECT_TRUE(qs_test::contains(e.what(), "legacy (pre-1.6, non-zip) PyTorch file")) << e.what();
  }
  const std::string bare = dir.file("model.bin");
  qs_test::write_file(bare, std::string("\x80\x04}.", 4));
  try {
    qs::open_tensor_file(bare);
    ADD_FAILURE() << "bare pickle opened";
  } catch (const qs::IoError& e) {
    EXPECT_TRUE(qs_test::contains(e.what(), "not a torch.save zip archive")) << e.what();
  }
}

// Files written by real torch (2.11, by tests/gpu/torch_save_oracle.py on the GPU machine; kept in
// tests/data/torch-oracle) with a raw sidecar of the values torch computed: every tensor bit for bit.
// QS_TORCH_ORACLE_DIR points the test at a freshly written set instead.
TEST(Torch, RealTorchFiles) {
  const char* env = std::getenv("QS_TORCH_ORACLE_DIR");
  const std::string dir_s = env && *env ? env : QS_TEST_DATA_DIR "/torch-oracle";
  const char* dir = dir_s.c_str();
  const std::string manifest = qs_test::read_file(std::string(dir) + "/manifest.txt");
  std::size_t checked = 0, pos = 0;
  while (pos < manifest.size()) {
    const std::size_t end = manifest.find('\n', pos);
    const std::string line = manifest.substr(pos, end - pos);
    pos = end == std::string::npos ? manifest.size() : end + 1;
    if (line.empty()) continue;
    // "<file.pt>\t<tensor name>\t<sidecar .f32 file of the values as float32>"
    const std::size_t t1 = line.find('\t'), t2 = line.find('\t', t1 + 1);
    const std::string file = line.substr(0, t1), name = line.substr(t1 + 1, t2 - t1 - 1), side = line.substr(t2 + 1);
    SCOPED_TRACE(file + ": " + name);
    const auto f = qs::open_tensor_file(std::string(dir) + "/" + file);
    const std::string want = qs_test::read_file(std::string(dir) + "/" + side);
    const std::vector<float> got = readF32(*f, indexOf(*f, name));
    ASSERT_EQ(got.size() * 4, want.size());
    if (!want.empty()) {  // an empty view has no data
      EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size()), 0);
    }
    ++checked;
  }
  EXPECT_GT(checked, 0u);
  std::printf("checked %zu tensors written by torch\n", checked);
}
