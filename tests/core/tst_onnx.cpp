// Tests for the .onnx reader (core/io/onnx_file.cpp): fixtures built with the reader's own schema
// (onnx_min.pb.h) for raw_data and typed fields of every dtype, Constant nodes, If/Loop subgraph naming,
// external data inside and outside the model's folder, and malformed files as table rows. Issue 13: every
// low-bit type (INT4/UINT4/FLOAT4E2M1 two per byte, INT2/UINT2 four per byte, FLOAT8E8M0 and the four
// float8s) decodes to the format definition's value of every code, from raw_data and from int32_data;
// STRING, complex and unknown types are listed in skipped().
// Run: ninja -C build tst_onnx && build/tests/core/tst_onnx
// Real models (optional): QS_ONNX_MODELS=/path/to/folder/with/onnx/files build/tests/core/tst_onnx --gtest_filter=Onnx.RealModels
// Fuzz seeds: QS_ONNX_FUZZ_CORPUS=tests/fuzz/corpus/onnx build/tests/core/tst_onnx --gtest_filter=Onnx.WriteFuzzCorpus
// QS_HAVE_PROTOBUF (and the generated header's folder) come from tests/core/CMakeLists.txt when the build has
// the reader; without it every test skips.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <ostream>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "format/format.h"
#include "io/tensor_file.h"
#include "test_files.h"

#ifdef QS_HAVE_PROTOBUF
#include "onnx_min.pb.h"
#endif

namespace qs {
inline void PrintTo(DType t, std::ostream* os) { *os << to_string(t); }
}  // namespace qs

namespace {

namespace fs = std::filesystem;
using qs_test::contains;
using Names = std::vector<std::string>;

Names names(const qs::TensorFile& f) {
  Names out;
  for (const auto& t : f.tensors()) out.push_back(t.name);
  return out;
}

std::string bytesOf(const qs::TensorFile& f, std::size_t i) {
  const qs::TensorBytes b = f.read(i);
  return std::string(reinterpret_cast<const char*>(b.data), b.size);
}

// Deterministic, non-trivial bytes (a failing row name reproduces its input exactly).
[[maybe_unused]] std::string patternBytes(std::size_t n, unsigned seed = 7) {
  std::string b(n, '\0');
  uint32_t s = seed * 2654435761u + 1;
  for (std::size_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    b[i] = char(s >> 24);
  }
  return b;
}

template <typename T>
std::string le(std::initializer_list<T> values) {
  std::string out;
  for (T v : values) out.append(reinterpret_cast<const char*>(&v), sizeof v);
  return out;
}

#ifdef QS_HAVE_PROTOBUF
using qs_onnx::TensorProto;

// ONNX data_type numbers, spelled out (they are file-format facts, not the schema's business).
int onnxType(qs::DType t) {
  switch (t) {
    case qs::DType::F32: return 1;
    case qs::DType::U8: return 2;
    case qs::DType::I8: return 3;
    case qs::DType::U16: return 4;
    case qs::DType::I16: return 5;
    case qs::DType::I32: return 6;
    case qs::DType::I64: return 7;
    case qs::DType::Bool: return 9;
    case qs::DType::F16: return 10;
    case qs::DType::F64: return 11;
    case qs::DType::U32: return 12;
    case qs::DType::U64: return 13;
    case qs::DType::BF16: return 16;
    case qs::DType::F8E4M3: return 17;
    case qs::DType::F8E5M2: return 19;
    case qs::DType::F8E4M3FNUZ: return 18;
    case qs::DType::F8E5M2FNUZ: return 20;
    case qs::DType::U4: return 21;
    case qs::DType::I4: return 22;
    case qs::DType::F4E2M1: return 23;
    case qs::DType::F8E8M0: return 24;
    case qs::DType::U2: return 25;
    case qs::DType::I2: return 26;
    case qs::DType::F6E2M3: case qs::DType::F6E3M2: return 0;  // no ONNX type
  }
  return 0;
}

void setTensor(TensorProto* t, const std::string& name, int dataType, std::vector<int64_t> dims) {
  t->set_name(name);
  t->set_data_type(dataType);
  for (int64_t d : dims) t->add_dims(d);
}

TensorProto* addRaw(qs_onnx::GraphProto* g, const std::string& name, qs::DType dt, std::vector<int64_t> dims,
                    const std::string& raw) {
  TensorProto* t = g->add_initializer();
  setTensor(t, name, onnxType(dt), std::move(dims));
  t->set_raw_data(raw);
  return t;
}

qs_onnx::NodeProto* addConstant(qs_onnx::GraphProto* g, const std::string& nodeName, const std::string& output,
                                const std::string& tensorName, const std::string& f32raw) {
  auto* n = g->add_node();
  n->set_op_type("Constant");
  n->set_name(nodeName);
  n->add_output(output);
  auto* a = n->add_attribute();
  a->set_name("value");
  a->set_type(qs_onnx::AttributeProto::TENSOR);
  setTensor(a->mutable_t(), tensorName, 1, {int64_t(f32raw.size() / 4)});
  a->mutable_t()->set_raw_data(f32raw);
  return n;
}

qs_onnx::GraphProto* addSubgraph(qs_onnx::NodeProto* n, const std::string& attr) {
  auto* a = n->add_attribute();
  a->set_name(attr);
  a->set_type(qs_onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name(attr);
  return a->mutable_g();
}

std::string writeModel(const std::string& path, const qs_onnx::ModelProto& m) {
  std::string s;
  if (!m.SerializeToString(&s)) throw std::runtime_error("serialize failed");
  qs_test::write_file(path, s);
  return path;
}

qs_onnx::ModelProto newModel() {
  qs_onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("tst_onnx");
  m.mutable_graph()->set_name("main");
  return m;
}

void addExternal(TensorProto* t, const std::string& location, std::optional<uint64_t> offset = {},
                 std::optional<uint64_t> length = {}) {
  t->clear_raw_data();
  t->set_data_location(TensorProto::EXTERNAL);
  auto add = [&](const char* k, const std::string& v) {
    auto* e = t->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  add("location", location);
  if (offset) add("offset", std::to_string(*offset));
  if (length) add("length", std::to_string(*length));
}
#endif

// The error must be one line naming the file (and the tensor where there is one).
[[maybe_unused]] void checkError(const std::function<void()>& fn, const std::string& path,
                                 const std::vector<std::string>& mustContain) {
  try {
    fn();
    std::string all;
    for (const std::string& part : mustContain) all += (all.empty() ? "" : " ... ") + part;
    ADD_FAILURE() << "no error; expected one containing: " << all;
  } catch (const qs::IoError& e) {
    const std::string msg = e.what();
    EXPECT_FALSE(contains(msg, "\n")) << msg;
    EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << msg;
    for (const std::string& part : mustContain) EXPECT_TRUE(contains(msg, part)) << msg << "  (expected: " << part << ")";
  }
}

}  // namespace

// Each test gets a fresh folder for its models; without the reader, every test skips.
class Onnx : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef QS_HAVE_PROTOBUF
    GTEST_SKIP() << "this build has no .onnx reader (libprotobuf-dev / protobuf-compiler not found)";
#endif
  }
  std::string file(const std::string& name) const { return dir_.file(name); }

  qs_test::TempDir dir_;
};

TEST_F(Onnx, RawDataEveryDtype) {
#ifdef QS_HAVE_PROTOBUF
  using D = qs::DType;
  for (D dtype : {D::F32, D::F64, D::F16, D::BF16, D::I8, D::U8, D::I16, D::U16, D::I32, D::U32, D::I64, D::U64,
                  D::F8E4M3, D::F8E5M2, D::Bool}) {
    SCOPED_TRACE(qs::to_string(dtype));
    const std::vector<int64_t> dims{2, 3, 5};
    std::string raw = patternBytes(30 * qs::dtype_size(dtype), unsigned(dtype) + 1);
    if (dtype == qs::DType::Bool)
      for (char& c : raw) c = char(uint8_t(c) & 1);
    const std::string scalar = raw.substr(0, qs::dtype_size(dtype));
    auto m = newModel();
    addRaw(m.mutable_graph(), "w", dtype, dims, raw);
    addRaw(m.mutable_graph(), "scalar", dtype, {}, scalar);
    addRaw(m.mutable_graph(), "empty", dtype, {4, 0, 3}, {});
    const std::string path = writeModel(file("raw.onnx"), m);

    auto f = qs::open_onnx_file(path);
    EXPECT_EQ(f->kind(), std::string("onnx"));
    ASSERT_EQ(names(*f), (Names{"w", "scalar", "empty"}));
    EXPECT_EQ(f->tensors()[0].dtype, dtype);
    EXPECT_EQ(f->tensors()[0].shape, dims);
    EXPECT_EQ(f->tensors()[1].shape, std::vector<int64_t>{});
    EXPECT_EQ(f->tensors()[1].numel(), 1u);
    EXPECT_EQ(f->tensors()[2].numel(), 0u);
    EXPECT_EQ(bytesOf(*f, 0), raw);
    EXPECT_EQ(bytesOf(*f, 1), scalar);
    EXPECT_EQ(f->read(2).size, 0u);
    // The bytes outlive the file object (the owner keeps the parsed model alive).
    const qs::TensorBytes b = f->read(0);
    f.reset();
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(b.data), b.size), raw);
  }
#endif
}

TEST_F(Onnx, TypedFieldsEveryDtype) {
#ifdef QS_HAVE_PROTOBUF
  // Each row fills the typed field that onnx.proto assigns to the dtype and gives the little-endian
  // bytes the reader must produce, and the exact values those bytes decode to.
  struct Case {
    const char* name;
    qs::DType dtype;
    std::string expected;
    std::vector<double> values;
  };
  using D = qs::DType;
  const double inf = std::numeric_limits<double>::infinity();
  const Case cases[] = {
      {"float32/float_data", D::F32, le<float>({1.5f, -2.0f, 3.0e38f, float(inf), 1e-45f}),
       {1.5, -2.0, double(3.0e38f), inf, double(1e-45f)}},
      {"float64/double_data", D::F64, le<double>({0.1, -1e308, 5e-324}), {0.1, -1e308, 5e-324}},
      {"int64/int64_data", D::I64, le<int64_t>({-1, 1ll << 40, -(1ll << 52)}), {-1, double(1ll << 40), -double(1ll << 52)}},
      {"uint64/uint64_data", D::U64, le<uint64_t>({0, 1ull << 63, 12345}), {0, double(1ull << 63), 12345}},
      {"uint32/uint64_data", D::U32, le<uint32_t>({4294967295u, 7}), {4294967295.0, 7}},
      {"int32/int32_data", D::I32, le<int32_t>({-7, std::numeric_limits<int32_t>::min(), 99}), {-7, -2147483648.0, 99}},
      {"int16/int32_data", D::I16, le<int16_t>({-2, 32767, -32768}), {-2, 32767, -32768}},
      {"uint16/int32_data", D::U16, le<uint16_t>({65535, 0, 1}), {65535, 0, 1}},
      {"int8/int32_data", D::I8, le<int8_t>({-128, 127, -1}), {-128, 127, -1}},
      {"uint8/int32_data", D::U8, le<uint8_t>({255, 0, 17}), {255, 0, 17}},
      {"bool/int32_data", D::Bool, le<uint8_t>({0, 1, 1}), {0, 1, 1}},
      // float16 bits: 1.0, -2.0, 65504 (max), 2^-24 (min subnormal)
      {"float16/int32_data", D::F16, le<uint16_t>({0x3C00, 0xC000, 0x7BFF, 0x0001}), {1.0, -2.0, 65504.0, std::ldexp(1.0, -24)}},
      // bfloat16 bits: 1.0, -3.0, max finite
      {"bfloat16/int32_data", D::BF16, le<uint16_t>({0x3F80, 0xC040, 0x7F7F}),
       {1.0, -3.0, double(std::bit_cast<float>(0x7F7F0000u))}},
      // e4m3fn: 448 (max), -2^-9 (min subnormal), 1.0
      {"float8_e4m3fn/int32_data", D::F8E4M3, le<uint8_t>({0x7E, 0x81, 0x38}), {448.0, -std::ldexp(1.0, -9), 1.0}},
      // e5m2: 57344 (max), -inf, 2^-16 (min subnormal)
      {"float8_e5m2/int32_data", D::F8E5M2, le<uint8_t>({0x7B, 0xFC, 0x01}), {57344.0, -inf, std::ldexp(1.0, -16)}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const qs::DType dtype = c.dtype;
    const std::size_t n = c.values.size();
    auto m = newModel();
    TensorProto* t = m.mutable_graph()->add_initializer();
    setTensor(t, "typed", onnxType(dtype), {int64_t(n)});
    const char* p = c.expected.data();
    bool filled = true;
    for (std::size_t i = 0; i < n; ++i) {
      auto at = [&](auto tag) {
        decltype(tag) v;
        std::memcpy(&v, p + i * sizeof v, sizeof v);
        return v;
      };
      switch (dtype) {
        case qs::DType::F32: t->add_float_data(at(float{})); break;
        case qs::DType::F64: t->add_double_data(at(double{})); break;
        case qs::DType::I64: t->add_int64_data(at(int64_t{})); break;
        case qs::DType::U64: t->add_uint64_data(at(uint64_t{})); break;
        case qs::DType::U32: t->add_uint64_data(at(uint32_t{})); break;
        case qs::DType::I32: t->add_int32_data(at(int32_t{})); break;
        // Integers go in as values (sign-extended), bit patterns as unsigned, as onnx.helper writes them.
        case qs::DType::I16: t->add_int32_data(at(int16_t{})); break;
        case qs::DType::I8: t->add_int32_data(at(int8_t{})); break;
        case qs::DType::U16: case qs::DType::F16: case qs::DType::BF16: t->add_int32_data(at(uint16_t{})); break;
        case qs::DType::U8: case qs::DType::F8E4M3: case qs::DType::F8E5M2: t->add_int32_data(at(uint8_t{})); break;
        case qs::DType::Bool: t->add_int32_data(i == 2 ? 5 : at(uint8_t{})); break;  // any non-zero is true
        default: filled = false;
      }
    }
    ASSERT_TRUE(filled) << "no typed field for this dtype in the test";
    const std::string path = writeModel(file("typed.onnx"), m);
    auto f = qs::open_onnx_file(path);
    ASSERT_EQ(f->tensors().size(), 1u);
    EXPECT_EQ(f->tensors()[0].dtype, dtype);
    EXPECT_EQ(bytesOf(*f, 0), c.expected);
    const qs::TensorBytes b = f->read(0);
    ASSERT_EQ(b.size, qs::dtype_nbytes(dtype, n));
    std::vector<double> got(n);
    qs::convert_to_f64(dtype, b.data, n, got.data());
    for (std::size_t i = 0; i < n; ++i)
      EXPECT_TRUE(got[i] == c.values[i] || (std::isnan(got[i]) && std::isnan(c.values[i])))
          << "element " << i << ": " << got[i] << " != " << c.values[i];
  }
#endif
}

TEST_F(Onnx, ConstantNodes) {
#ifdef QS_HAVE_PROTOBUF
  auto m = newModel();
  auto* g = m.mutable_graph();
  addRaw(g, "init", qs::DType::F32, {1}, le<float>({0.5f}));
  addConstant(g, "const_a", "out_a", "named_tensor", le<float>({1, 2}));
  addConstant(g, "const_b", "out_b", "", le<float>({3, 4, 5}));      // named by its output
  addConstant(g, "", "out_c", "", le<float>({6}));                    // no node name either
  // Not Constant: a tensor attribute of another op is not a model constant.
  auto* other = g->add_node();
  other->set_op_type("ConstantOfShape");
  other->add_output("zeros");
  auto* a = other->add_attribute();
  a->set_name("value");
  setTensor(a->mutable_t(), "fill", 1, {1});
  a->mutable_t()->add_float_data(0);
  // A Constant with a scalar attribute instead of a tensor is not listed either.
  auto* scalar = g->add_node();
  scalar->set_op_type("Constant");
  scalar->add_output("s");
  auto* sa = scalar->add_attribute();
  sa->set_name("value_float");
  sa->set_f(2.5f);
  const std::string path = writeModel(file("const.onnx"), m);

  auto f = qs::open_onnx_file(path);
  ASSERT_EQ(names(*f), (Names{"init", "named_tensor", "out_b", "out_c"}));
  EXPECT_EQ(bytesOf(*f, 1), le<float>({1, 2}));
  EXPECT_EQ(bytesOf(*f, 2), le<float>({3, 4, 5}));
  EXPECT_EQ(f->tensors()[2].shape, std::vector<int64_t>{3});
  EXPECT_EQ(bytesOf(*f, 3), le<float>({6}));
#endif
}

TEST_F(Onnx, SubgraphNamesAreUnique) {
#ifdef QS_HAVE_PROTOBUF
  // main: initializer "w"; If "cond" whose then and else branches both hold "w" and a Constant "k";
  // the then branch holds a Loop "loop" whose body holds "w" again and an If "inner" nested once more.
  auto m = newModel();
  auto* g = m.mutable_graph();
  addRaw(g, "w", qs::DType::F32, {1}, le<float>({0}));
  auto* ifNode = g->add_node();
  ifNode->set_op_type("If");
  ifNode->set_name("cond");
  ifNode->add_input("c");
  ifNode->add_output("y");
  auto* thenG = addSubgraph(ifNode, "then_branch");
  auto* elseG = addSubgraph(ifNode, "else_branch");
  addRaw(thenG, "w", qs::DType::F32, {1}, le<float>({1}));
  addConstant(thenG, "kc", "k_out", "k", le<float>({11}));
  addRaw(elseG, "w", qs::DType::F32, {1}, le<float>({2}));
  addConstant(elseG, "kc", "k_out", "k", le<float>({12}));
  auto* loop = thenG->add_node();
  loop->set_op_type("Loop");
  loop->set_name("loop");
  auto* body = addSubgraph(loop, "body");
  addRaw(body, "w", qs::DType::F32, {1}, le<float>({3}));
  auto* inner = body->add_node();
  inner->set_op_type("If");
  inner->add_output("inner_y");  // no node name: labelled by its first output
  addRaw(addSubgraph(inner, "then_branch"), "w", qs::DType::F32, {1}, le<float>({4}));
  // GRAPHS (a list of graphs) gets an index per graph.
  auto* multi = g->add_node();
  multi->set_op_type("Custom");
  multi->set_name("multi");
  auto* ga = multi->add_attribute();
  ga->set_name("graphs");
  ga->set_type(qs_onnx::AttributeProto::GRAPHS);
  addRaw(ga->add_graphs(), "w", qs::DType::F32, {1}, le<float>({5}));
  addRaw(ga->add_graphs(), "w", qs::DType::F32, {1}, le<float>({6}));
  // 30 nested Ifs (90 message levels) are within protobuf's limit and keep the whole path.
  qs_onnx::GraphProto* level = g;
  std::string deepName;
  for (int i = 0; i < 30; ++i) {
    auto* n = level->add_node();
    n->set_op_type("If");
    std::string node = "d";
    node += std::to_string(i);
    n->set_name(node);
    level = addSubgraph(n, "then_branch");
    deepName += node + "/then_branch/";
  }
  addRaw(level, "w", qs::DType::F32, {1}, le<float>({7}));
  const std::string path = writeModel(file("if.onnx"), m);

  auto f = qs::open_onnx_file(path);
  const Names expected{"w",
                       "cond/then_branch/w",
                       "cond/then_branch/k",
                       "cond/then_branch/loop/body/w",
                       "cond/then_branch/loop/body/inner_y/then_branch/w",
                       "cond/else_branch/w",
                       "cond/else_branch/k",
                       "multi/graphs[0]/w",
                       "multi/graphs[1]/w",
                       deepName + "w"};
  ASSERT_EQ(names(*f), expected);
  const float values[] = {0, 1, 11, 3, 4, 2, 12, 5, 6, 7};
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(bytesOf(*f, i), le<float>({values[i]})) << expected[i];
#endif
}

// Every code of every low-bit ONNX type, in tensors whose element count ends inside a byte where the
// type is packed, decodes to the type's definition: decode_ref of the format for the floats, the
// two's-complement or unsigned value for the packed integers. Once from raw_data and once from
// int32_data (one value per byte for packed types, per element otherwise).
namespace {

struct OnnxLowBit {
  const char* name;
  qs::DType dtype;
  int onnx;
  unsigned bits;
  const char* format;  // nullptr: an integer type
  bool is_signed;
};
const OnnxLowBit kOnnxLowBit[] = {
    {"INT4", qs::DType::I4, 22, 4, nullptr, true},
    {"UINT4", qs::DType::U4, 21, 4, nullptr, false},
    {"FLOAT4E2M1", qs::DType::F4E2M1, 23, 4, "e2m1fn", true},
    {"INT2", qs::DType::I2, 26, 2, nullptr, true},
    {"UINT2", qs::DType::U2, 25, 2, nullptr, false},
    {"FLOAT8E8M0", qs::DType::F8E8M0, 24, 8, "e8m0fnu", false},
    {"FLOAT8E4M3FN", qs::DType::F8E4M3, 17, 8, "e4m3fn", true},
    {"FLOAT8E4M3FNUZ", qs::DType::F8E4M3FNUZ, 18, 8, "e4m3fnuz", true},
    {"FLOAT8E5M2", qs::DType::F8E5M2, 19, 8, "e5m2", true},
    {"FLOAT8E5M2FNUZ", qs::DType::F8E5M2FNUZ, 20, 8, "e5m2fnuz", true},
};

#ifdef QS_HAVE_PROTOBUF
void checkLowBit(const std::string& modelPath, const OnnxLowBit& c, unsigned extra, bool typed) {
  const uint32_t count = 1u << c.bits;
  std::vector<uint32_t> codes;
  for (uint32_t i = 0; i < count + extra; ++i) codes.push_back((i * 37u + 5u) % count);
  // Packed as onnx.proto says: the first element in the least significant bits, bit by bit here.
  std::string packed((codes.size() * c.bits + 7) / 8, '\0');
  for (std::size_t i = 0; i < codes.size(); ++i)
    for (unsigned k = 0; k < c.bits; ++k)
      if ((codes[i] >> k) & 1) {
        const std::size_t bit = i * c.bits + k;
        packed[bit / 8] = char(uint8_t(packed[bit / 8]) | (1u << (bit % 8)));
      }
  auto m = newModel();
  TensorProto* t = m.mutable_graph()->add_initializer();
  setTensor(t, "w", c.onnx, {int64_t(codes.size())});
  if (typed)
    for (char byte : packed) t->add_int32_data(int32_t(uint8_t(byte)));
  else
    t->set_raw_data(packed);
  addRaw(m.mutable_graph(), "after", qs::DType::F32, {1}, le<float>({2.5f}));
  auto f = qs::open_onnx_file(writeModel(modelPath, m));
  EXPECT_TRUE(f->skipped().empty());
  ASSERT_EQ(names(*f), (Names{"w", "after"}));
  const qs::TensorInfo& info = f->tensors()[0];
  ASSERT_EQ(info.dtype, c.dtype);
  ASSERT_EQ(info.numel(), codes.size());
  ASSERT_EQ(info.nbytes(), packed.size());
  EXPECT_EQ(qs::dtype_is_float(info.dtype), c.format != nullptr);
  EXPECT_EQ(bytesOf(*f, 0), packed);
  std::vector<float> got(codes.size() + 1, -7.0f);
  f->read_f32(0, got.data());
  EXPECT_EQ(got.back(), -7.0f);
  std::vector<double> wide(codes.size());
  const qs::TensorBytes b = f->read(0);
  qs::convert_to_f64(info.dtype, b.data, wide.size(), wide.data());
  const std::optional<qs::Format> fmt = c.format ? std::optional(qs::parse_format(c.format)) : std::nullopt;
  for (std::size_t i = 0; i < codes.size(); ++i) {
    const double want = fmt ? qs::decode_ref(*fmt, codes[i])
                            : double(c.is_signed && codes[i] >= count / 2 ? int(codes[i]) - int(count) : int(codes[i]));
    const bool ok = std::isnan(want) ? std::isnan(got[i]) && std::isnan(wide[i])
                                     : double(got[i]) == want && wide[i] == want &&
                                           std::signbit(got[i]) == std::signbit(want);
    if (!ok)
      FAIL() << "element " << i << " (code 0x" << std::hex << codes[i] << std::dec << "): want " << want
             << ", read_f32 " << got[i] << ", convert_to_f64 " << wide[i];
  }
  EXPECT_EQ(bytesOf(*f, 1), le<float>({2.5f}));
}
#endif

}  // namespace

TEST_F(Onnx, LowBitTypes) {
#ifdef QS_HAVE_PROTOBUF
  for (const OnnxLowBit& c : kOnnxLowBit)
    for (unsigned extra : {0u, 1u, 3u})
      for (bool typed : {false, true}) {
        SCOPED_TRACE(std::string(c.name) + " " + std::to_string((1u << c.bits) + extra) + " codes " +
                     (typed ? "int32_data" : "raw_data"));
        checkLowBit(file("lowbit.onnx"), c, extra, typed);
      }
#endif
}

TEST_F(Onnx, SkippedTypesAreListed) {
#ifdef QS_HAVE_PROTOBUF
  auto m = newModel();
  auto* g = m.mutable_graph();
  TensorProto* s = g->add_initializer();
  setTensor(s, "labels", 8 /* STRING */, {2});
  s->add_string_data("cat");
  s->add_string_data("dog");
  TensorProto* c = g->add_initializer();
  setTensor(c, "complex", 14 /* COMPLEX64 */, {1});
  c->add_float_data(1);
  c->add_float_data(2);
  TensorProto* q = g->add_initializer();
  setTensor(q, "int4", 22 /* INT4 */, {2});
  q->set_raw_data(std::string(1, '\x21'));
  TensorProto* u = g->add_initializer();
  setTensor(u, "future", 99, {2});
  u->set_raw_data("ab");
  TensorProto* z = g->add_initializer();
  setTensor(z, "undefined", 0, {1});
  addRaw(g, "kept", qs::DType::F16, {1}, le<uint16_t>({0x3C00}));
  const std::string path = writeModel(file("skip.onnx"), m);
  auto f = qs::open_onnx_file(path);
  EXPECT_EQ(names(*f), (Names{"int4", "kept"}));  // INT4 is read now (issue 13)
  EXPECT_EQ(f->skipped(), (Names{"labels: ONNX data_type STRING (text), not read",
                                 "complex: ONNX data_type COMPLEX64 (complex), not read",
                                 "future: unknown ONNX data_type 99 (not in onnx.proto as of IR version 12), not read",
                                 "undefined: ONNX data_type UNDEFINED (0), not read"}));
  // A model of nothing but such tensors still opens, with its skipped list.
  auto m2 = newModel();
  setTensor(m2.mutable_graph()->add_initializer(), "only", 99, {1});
  auto f2 = qs::open_onnx_file(writeModel(file("only-skipped.onnx"), m2));
  EXPECT_TRUE(f2->tensors().empty());
  EXPECT_EQ(f2->skipped().size(), 1u);
#endif
}

TEST_F(Onnx, DuplicateNamesStayReachable) {
#ifdef QS_HAVE_PROTOBUF
  // The ONNX checker refuses repeated initializer names; the reader keeps both, renamed apart.
  auto m = newModel();
  auto* g = m.mutable_graph();
  addRaw(g, "w", qs::DType::F32, {1}, le<float>({1}));
  addRaw(g, "w", qs::DType::F32, {1}, le<float>({2}));
  addRaw(g, "w#2", qs::DType::F32, {1}, le<float>({3}));
  const std::string path = writeModel(file("dup.onnx"), m);
  auto f = qs::open_onnx_file(path);
  const Names n = names(*f);
  ASSERT_EQ(n.size(), 3u);
  EXPECT_EQ(std::set<std::string>(n.begin(), n.end()).size(), 3u);
  EXPECT_EQ(n[0], "w");
  EXPECT_EQ(bytesOf(*f, 1), le<float>({2}));
#endif
}

TEST_F(Onnx, ManyDuplicateNamesStayFast) {
#ifdef QS_HAVE_PROTOBUF
  // 20000 initializers all named "w" (a crafted file): suffixes are handed out in order, not searched
  // from #2 each time, so opening stays linear.
  auto m = newModel();
  for (int i = 0; i < 20000; ++i) addRaw(m.mutable_graph(), "w", qs::DType::U8, {1}, std::string(1, char(i)));
  const std::string path = writeModel(file("dups.onnx"), m);
  const auto start = std::chrono::steady_clock::now();
  auto f = qs::open_onnx_file(path);
  ASSERT_EQ(f->tensors().size(), 20000u);
  EXPECT_EQ(f->tensors()[19999].name, std::string("w#20000"));
  EXPECT_EQ(bytesOf(*f, 19999), std::string(1, char(19999)));
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(ms, 5000) << "took " << ms << " ms";
#endif
}

TEST_F(Onnx, ExternalData) {
#ifdef QS_HAVE_PROTOBUF
  const std::string folder = file("ext");
  fs::create_directories(folder + "/sub");
  // weights.bin: tensor a at 0 (6 floats), tensor b at 4096 (4 halfs), as onnx aligns to pages.
  const std::string a = le<float>({1, -2, 3.5f, 4, 5, 6});
  const std::string b = le<uint16_t>({0x3C00, 0x4000, 0xC200, 0x0000});
  std::string blob = a;
  blob.append(std::string(4096 - a.size(), '\0'));
  blob.append(b);
  qs_test::write_file(folder + "/weights.bin", blob);
  qs_test::write_file(folder + "/sub/c.bin", le<int8_t>({-1, 2, -3}));
  // An in-folder symlink to an in-folder file is fine.
  fs::create_symlink(folder + "/sub/c.bin", folder + "/c_link.bin");

  auto m = newModel();
  auto* g = m.mutable_graph();
  addExternal(addRaw(g, "a", qs::DType::F32, {2, 3}, {}), "weights.bin", 0, a.size());
  addExternal(addRaw(g, "b", qs::DType::F16, {4}, {}), "weights.bin", 4096, b.size());
  addExternal(addRaw(g, "c", qs::DType::I8, {3}, {}), "sub/c.bin");              // no offset, no length
  addExternal(addRaw(g, "d", qs::DType::I8, {3}, {}), "./c_link.bin", 0);
  // External data inside a subgraph is resolved against the same folder.
  auto* ifNode = g->add_node();
  ifNode->set_op_type("If");
  ifNode->set_name("cond");
  addExternal(addRaw(addSubgraph(ifNode, "then_branch"), "a", qs::DType::F32, {6}, {}), "weights.bin", {}, a.size());
  const std::string path = writeModel(folder + "/model.onnx", m);

  auto f = qs::open_onnx_file(path);
  ASSERT_EQ(names(*f), (Names{"a", "b", "c", "d", "cond/then_branch/a"}));
  EXPECT_EQ(bytesOf(*f, 0), a);
  EXPECT_EQ(bytesOf(*f, 1), b);
  EXPECT_EQ(bytesOf(*f, 2), le<int8_t>({-1, 2, -3}));
  EXPECT_EQ(bytesOf(*f, 3), le<int8_t>({-1, 2, -3}));
  EXPECT_EQ(bytesOf(*f, 4), a);

  // A relative model path resolves against the model's folder, not the working directory.
  const fs::path cwd = fs::current_path();
  fs::current_path(folder + "/sub");
  std::unique_ptr<qs::TensorFile> rel;
  std::string relError;
  try {
    rel = qs::open_onnx_file("../model.onnx");
  } catch (const qs::IoError& e) {
    relError = e.what();
  }
  fs::current_path(cwd);
  ASSERT_TRUE(rel) << relError;
  EXPECT_EQ(bytesOf(*rel, 2), le<int8_t>({-1, 2, -3}));

  // The data file shrinking after open gives an error, not a short buffer.
  fs::resize_file(folder + "/weights.bin", 100);
  checkError([&] { f->read(1); }, path, {": b: ", "shorter than expected"});
#endif
}

TEST_F(Onnx, ExternalDataRefused) {
#ifdef QS_HAVE_PROTOBUF
  // <tmp>/outside.bin (16 bytes, would satisfy the tensor), <tmp>/model/{model.onnx, links}
  const std::string root = file("refuse");
  const std::string folder = root + "/model";
  fs::create_directories(folder + "/sub");
  qs_test::write_file(root + "/outside.bin", std::string(16, '\x01'));
  fs::create_symlink(root + "/outside.bin", folder + "/escape.bin");
  fs::create_directory_symlink(root, folder + "/outdir");
  fs::create_symlink("/etc/passwd", folder + "/passwd");
  struct Case {
    const char* name;
    const char* location;
    const char* message;
  };
  const Case cases[] = {
      {"parent", "../outside.bin", "leaves the model's folder"},
      {"parent-inside-path", "sub/../../outside.bin", "leaves the model's folder"},
      {"dotdot-staying-inside", "sub/../w.bin", "leaves the model's folder"},
      {"absolute-etc-passwd", "/etc/passwd", "is absolute"},
      {"absolute-dev-zero", "/dev/zero", "is absolute"},
      {"symlink-to-outside-file", "escape.bin", "resolves outside the model's folder"},
      {"symlinked-folder-outside", "outdir/outside.bin", "resolves outside the model's folder"},
      {"symlink-to-etc-passwd", "passwd", "resolves outside the model's folder"},
      {"folder-itself", ".", "resolves outside the model's folder"},
      {"missing", "nope.bin", "not found"},
      {"directory", "sub", "not a regular file"},
      {"empty", "", "without a location"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto m = newModel();
    addExternal(addRaw(m.mutable_graph(), "secret", qs::DType::U8, {16}, {}), c.location, 0, 16);
    const std::string path = writeModel(folder + "/model.onnx", m);
    checkError([&] { qs::open_onnx_file(path); }, path, {": secret: ", c.message});
  }
#endif
}

#ifdef QS_HAVE_PROTOBUF
namespace {

// The model of one bad-input row: a valid graph with one float32 initializer "w" of 2 x 3, broken as
// `kind` says; "" when the row writes no file.
std::string badModelBytes(const std::string& kind) {
  auto m = newModel();
  auto* g = m.mutable_graph();
  const std::string six = le<float>({1, 2, 3, 4, 5, 6});
  TensorProto* t = addRaw(g, "w", qs::DType::F32, {2, 3}, six);
  auto typed = [&](int count) {
    t->clear_raw_data();
    for (int i = 0; i < count; ++i) t->add_float_data(float(i));
  };
  if (kind == "raw-short") t->set_raw_data(six.substr(0, 20));
  if (kind == "raw-long") t->set_raw_data(six + "abcd");
  if (kind == "negative") t->set_dims(0, -3);
  if (kind == "overflow") {
    t->clear_dims();
    for (int64_t d : {int64_t(1) << 32, int64_t(1) << 32}) t->add_dims(d);
  }
  if (kind == "overflow-zero") {
    t->clear_dims();
    for (int64_t d : {int64_t(1) << 40, int64_t(0), int64_t(1) << 40}) t->add_dims(d);
    t->clear_raw_data();
    t->set_raw_data("");
  }
  if (kind == "nbytes-overflow") {
    t->clear_dims();
    t->add_dims(int64_t(1) << 62);
  }
  if (kind == "typed-count") typed(5);
  if (kind == "typed-wrong") {
    t->clear_raw_data();
    t->set_data_type(10);  // float16 wants int32_data; only float_data is there
    for (int i = 0; i < 6; ++i) t->add_float_data(1);
  }
  if (kind == "no-data") typed(0);
  if (kind == "int4-raw") {  // 6 elements are 3 bytes
    t->set_data_type(22);
    t->set_raw_data("abcd");
  }
  if (kind == "f4-odd-raw") {  // 5 elements are 3 bytes, the last half padding
    t->set_data_type(23);
    t->clear_dims();
    t->add_dims(5);
    t->set_raw_data("ab");
  }
  if (kind == "int2-raw") {  // 6 elements are 2 bytes
    t->set_data_type(26);
    t->set_raw_data("a");
  }
  if (kind == "uint4-typed") {  // one int32_data value per packed byte, not per element
    t->clear_raw_data();
    t->set_data_type(21);
    for (int i = 0; i < 6; ++i) t->add_int32_data(i);
  }
  if (kind == "unknown-location") t->set_data_location(7);
  if (kind == "segment") t->mutable_segment()->set_begin(0);
  if (kind == "ext-length") addExternal(t, "w.bin", 0, 20);
  if (kind == "ext-past-end") addExternal(t, "w.bin", 20, 24);
  if (kind == "ext-offset") addExternal(t, "w.bin", 4096, 24);
  if (kind == "ext-bad-offset") {
    addExternal(t, "w.bin");
    auto* e = t->add_external_data();
    e->set_key("offset");
    e->set_value("-4");
  }
  if (kind == "subgraph") {
    auto* n = g->add_node();
    n->set_op_type("If");
    n->set_name("cond");
    addRaw(addSubgraph(n, "then_branch"), "w", qs::DType::F32, {-1}, {});
  }
  if (kind == "deep") {
    qs_onnx::GraphProto* level = g;
    for (int i = 0; i < 40; ++i) {
      auto* n = level->add_node();
      n->set_op_type("If");
      n->set_name("if" + std::to_string(i));
      level = addSubgraph(n, "then_branch");
    }
    addRaw(level, "deepest", qs::DType::F32, {1}, le<float>({1}));
  }
  std::string bytes;
  if (!m.SerializeToString(&bytes)) throw std::runtime_error("serialize failed");
  if (kind == "truncated") bytes = bytes.substr(0, bytes.size() / 2);
  if (kind == "garbage") bytes = patternBytes(1000, 3);
  if (kind == "npy") bytes = std::string("\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 64);
  if (kind == "empty") bytes.clear();
  return bytes;
}

}  // namespace
#endif

TEST_F(Onnx, BadInput) {
#ifdef QS_HAVE_PROTOBUF
  struct Case {
    const char* name;
    const char* kind;
    const char* message;
  };
  const Case cases[] = {
      {"truncated", "truncated", "not an ONNX model (protobuf parse failed)"},
      {"garbage", "garbage", "not an ONNX model (protobuf parse failed)"},
      {"npy-magic", "npy", "not an ONNX model"},
      {"empty-file", "empty", "not an ONNX model (no graph)"},
      {"raw-size-short", "raw-short", "w: raw_data holds 20 bytes, but dims × float32 need 24"},
      {"raw-size-long", "raw-long", "w: raw_data holds 28 bytes, but dims × float32 need 24"},
      {"negative-dim", "negative", "w: negative dimension -3"},
      {"dims-overflow", "overflow", "w: shape product overflows"},
      {"dims-overflow-with-zero", "overflow-zero", "w: shape product overflows"},
      {"nbytes-overflow", "nbytes-overflow", "w: shape × dtype size overflows"},
      {"typed-count", "typed-count", "w: float_data holds 5 values, but dims need 6"},
      {"typed-wrong-field", "typed-wrong", "w: int32_data holds 0 values, but dims need 6"},
      {"no-data", "no-data", "w: float_data holds 0 values, but dims need 6"},
      {"int4-raw-size", "int4-raw", "w: raw_data holds 4 bytes, but dims × int4 need 3 (two int4 per byte)"},
      {"float4-odd-raw-size", "f4-odd-raw",
       "w: raw_data holds 2 bytes, but dims × float4_e2m1fn need 3 (two float4_e2m1fn per byte)"},
      {"int2-raw-size", "int2-raw", "w: raw_data holds 1 bytes, but dims × int2 need 2 (four int2 per byte)"},
      {"uint4-typed-count", "uint4-typed", "w: int32_data holds 6 values, but dims need 3 (two uint4 per byte)"},
      {"unknown-location", "unknown-location", "w: unknown data_location 7"},
      {"segment", "segment", "w: segmented tensors"},
      {"ext-length", "ext-length", "w: external data holds 20 bytes, but dims × float32 need 24"},
      {"ext-past-end", "ext-past-end", "w: external data runs past the end"},
      {"ext-offset-past-end", "ext-offset", "w: external data offset 4096 is past the end"},
      {"ext-bad-offset", "ext-bad-offset", "w: external data offset '-4' is not a non-negative integer"},
      {"subgraph-tensor", "subgraph", "cond/then_branch/w: negative dimension -1"},
      {"missing-file", "missing", "cannot open"},
      // 40 nested Ifs are 120 message levels; protobuf's limit of 100 bounds the reader's recursion.
      {"nesting-too-deep", "deep", "not an ONNX model (protobuf parse failed)"},
  };
  const std::string folder = file("bad");
  qs_test::write_file(folder + "/w.bin", std::string(40, '\0'));
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string kind = c.kind;
    const std::string path = folder + "/" + kind + ".onnx";
    if (kind != "missing") qs_test::write_file(path, badModelBytes(kind));
    checkError([&] { qs::open_onnx_file(path); }, path, {c.message});
  }
#endif
}

TEST_F(Onnx, Over2GiB) {
#ifdef QS_HAVE_PROTOBUF
  // A sparse file just over INT_MAX bytes: refused by size before protobuf would be asked to parse it.
  const std::string path = file("huge.onnx");
  qs_test::write_file(path, "");
  std::error_code ec;
  fs::resize_file(path, std::uintmax_t(INT_MAX) + 1, ec);
  if (ec) GTEST_SKIP() << "cannot create a sparse 2 GiB file here: " << ec.message();
  checkError([&] { qs::open_onnx_file(path); }, path, {"larger than 2 GiB", "external data"});
  fs::remove(path);
#endif
}

TEST_F(Onnx, RealModels) {
  // The Silero VAD models from the npm package @ricky0123/vad-web use If subgraphs; they are not
  // committed. `cd /tmp && npm pack @ricky0123/vad-web && tar xzf ricky0123-vad-web-*.tgz`, then
  // QS_ONNX_MODELS=/tmp/package/dist.
  const char* env = std::getenv("QS_ONNX_MODELS");
  if (!env || !*env) GTEST_SKIP() << "set QS_ONNX_MODELS to a folder of .onnx files to open real models";
  const fs::path folder = env;
  std::vector<fs::path> files;  // *.onnx, any case, as the Qt suite's name filter matched
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(folder, ec)) {
    std::string ext = e.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
    if (ext == ".onnx" && fs::is_regular_file(e.path())) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) GTEST_SKIP() << "no .onnx files in " << folder.string();
  for (const fs::path& p : files) {
    SCOPED_TRACE(p.string());
    auto f = qs::open_onnx_file(p.string());
    std::size_t floats = 0, subgraph = 0, elements = 0, nonFinite = 0;
    for (std::size_t i = 0; i < f->tensors().size(); ++i) {
      const auto& info = f->tensors()[i];
      const qs::TensorBytes b = f->read(i);
      EXPECT_EQ(b.size, info.nbytes()) << info.name;
      elements += info.numel();
      if (info.name.find('/') != std::string::npos) ++subgraph;
      if (!qs::dtype_is_float(info.dtype)) continue;
      ++floats;
      std::vector<double> x(info.numel());
      qs::convert_to_f64(info.dtype, b.data, x.size(), x.data());
      for (double v : x) nonFinite += !std::isfinite(v);
    }
    const Names n = names(*f);
    EXPECT_EQ(std::set<std::string>(n.begin(), n.end()).size(), n.size());
    std::string first;
    for (std::size_t i = 0; i < n.size() && i < 3; ++i) first += (i ? ", " : "") + n[i];
    std::printf("%s: %zu tensors (%zu float, %zu in subgraphs), %zu elements, %zu non-finite; first: %s\n",
                p.filename().c_str(), f->tensors().size(), floats, subgraph, elements, nonFinite, first.c_str());
    EXPECT_FALSE(f->tensors().empty());
  }
}

TEST_F(Onnx, WriteFuzzCorpus) {
#ifdef QS_HAVE_PROTOBUF
  // Small valid models that reach every branch of the reader; the fuzzer writes each input to
  // <its folder>/model.onnx, so "model.onnx" as an external location reads the input's own bytes.
  const char* env = std::getenv("QS_ONNX_FUZZ_CORPUS");
  if (!env || !*env) GTEST_SKIP() << "set QS_ONNX_FUZZ_CORPUS to a folder to (re)write the fuzz seed corpus";
  const std::string out = env;
  fs::create_directories(out);
  using D = qs::DType;
  const std::initializer_list<D> all{D::F32, D::F64, D::F16, D::BF16, D::I8,  D::U8,     D::I16,    D::U16,
                                     D::I32, D::U32, D::I64, D::U64,  D::F8E4M3, D::F8E5M2, D::Bool};
  {
    auto m = newModel();
    for (D d : all) {
      std::string raw = patternBytes(4 * qs::dtype_size(d), unsigned(d));
      if (d == D::Bool)
        for (char& c : raw) c = char(uint8_t(c) & 1);
      addRaw(m.mutable_graph(), qs::to_string(d), d, {2, 2}, raw);
    }
    addRaw(m.mutable_graph(), "scalar", D::F32, {}, le<float>({1.5f}));
    addRaw(m.mutable_graph(), "empty", D::F32, {3, 0}, {});
    writeModel(out + "/raw_dtypes.onnx", m);
  }
  {
    auto m = newModel();
    for (D d : all) {
      TensorProto* t = m.mutable_graph()->add_initializer();
      setTensor(t, qs::to_string(d), onnxType(d), {3});
      for (int i = 0; i < 3; ++i) {
        if (d == D::F32) t->add_float_data(float(i) - 1.25f);
        else if (d == D::F64) t->add_double_data(double(i) * 0.1);
        else if (d == D::I64) t->add_int64_data(-i);
        else if (d == D::U32 || d == D::U64) t->add_uint64_data(uint64_t(i) * 1000);
        else t->add_int32_data(i == 2 ? -1 : i);
      }
    }
    writeModel(out + "/typed_fields.onnx", m);
  }
  {
    auto m = newModel();
    auto* g = m.mutable_graph();
    addRaw(g, "w", D::F32, {2}, le<float>({1, 2}));
    addConstant(g, "c0", "c0_out", "", le<float>({3}));
    auto* ifNode = g->add_node();
    ifNode->set_op_type("If");
    ifNode->set_name("cond");
    auto* thenG = addSubgraph(ifNode, "then_branch");
    addRaw(thenG, "w", D::F16, {1}, le<uint16_t>({0x3C00}));
    addRaw(addSubgraph(ifNode, "else_branch"), "w", D::BF16, {1}, le<uint16_t>({0x3F80}));
    auto* loop = thenG->add_node();
    loop->set_op_type("Loop");
    auto* body = addSubgraph(loop, "body");
    addConstant(body, "k", "k_out", "k", le<float>({4, 5}));
    writeModel(out + "/subgraphs.onnx", m);
  }
  {
    auto m = newModel();
    addExternal(addRaw(m.mutable_graph(), "self", D::U8, {16}, {}), "model.onnx", 0, 16);
    addExternal(addRaw(m.mutable_graph(), "self_at_4", D::F16, {2}, {}), "model.onnx", 4, 4);
    writeModel(out + "/external_self.onnx", m);
  }
  {
    auto m = newModel();
    TensorProto* s = m.mutable_graph()->add_initializer();
    setTensor(s, "labels", 8, {1});
    s->add_string_data("x");
    addRaw(m.mutable_graph(), "i4", D::U8, {2}, std::string(1, '\x21'))->set_data_type(22);
    addRaw(m.mutable_graph(), "kept", D::I64, {1}, le<int64_t>({-5}));
    writeModel(out + "/skipped_types.onnx", m);
  }
#endif
}
