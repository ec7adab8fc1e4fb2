// Tests of io/prequant.h: pre-quantized checkpoints recognised, dequantized and re-quantized. Every fixture is
// written here (safetensors by hand: u64 header length, JSON, data; ONNX with the reader's generated classes),
// and every expected value is derived here from the convention's own definition (DeepSeek-V3's fp8 * scale_inv,
// gpt-oss' ldexp(e2m1, scale - 127) with the low nibble first, compressed-tensors' offset-binary int32 packing
// and NVFP4's scale / global_scale, ONNX's (x - zero_point) * scale), never from the code under test.
// Re-quantization: a fixture made by the matching rule reports no difference; a fixture with perturbed blocks
// reports exactly the perturbed scales and the codes they move.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "format/format.h"
#include "io/prequant.h"
#include "io/tensor_file.h"
#include "quant/requant_check.h"
#include "quant/scheme.h"
#include "test_files.h"
#include "test_rng.h"

#ifdef QS_HAVE_PROTOBUF
#include "onnx_min.pb.h"
#endif

namespace {

using qs_test::contains;

// ---- Fixture writing ------------------------------------------------------------------------------------

struct St {
  std::string name, dtype;
  std::vector<int64_t> shape;
  std::string data;
};

template <class T>
std::string le(const std::vector<T>& v) {
  std::string s(v.size() * sizeof(T), '\0');
  if (!v.empty()) std::memcpy(s.data(), v.data(), s.size());
  return s;
}

// A .safetensors file: 8-byte little-endian header length, the JSON header, the tensors' bytes in order.
std::string safetensors(const std::vector<St>& ts) {
  std::string header = "{", body;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    std::string dims;
    for (std::size_t d = 0; d < ts[i].shape.size(); ++d) dims += (d ? "," : "") + std::to_string(ts[i].shape[d]);
    header += (i ? "," : "") + std::string("\"") + ts[i].name + "\":{\"dtype\":\"" + ts[i].dtype + "\",\"shape\":[" + dims +
              "],\"data_offsets\":[" + std::to_string(body.size()) + "," + std::to_string(body.size() + ts[i].data.size()) + "]}";
    body += ts[i].data;
  }
  header += "}";
  while (header.size() % 8) header += ' ';
  std::string out(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + body;
}

struct Opened {
  std::unique_ptr<qs::TensorFile> file;
  const qs::PrequantizedFile* pq = nullptr;
  std::size_t index(const std::string& name) const {
    for (std::size_t i = 0; i < file->tensors().size(); ++i)
      if (file->tensors()[i].name == name) return i;
    ADD_FAILURE() << "no tensor " << name;
    return 0;
  }
  std::vector<std::string> names() const {
    std::vector<std::string> v;
    for (const auto& t : file->tensors()) v.push_back(t.name);
    return v;
  }
  std::vector<float> read(const std::string& name) const {
    const std::size_t i = index(name);
    std::vector<float> v(file->tensors()[i].numel());
    file->read_f32(i, v.data());
    return v;
  }
};

// Opened through open_tensor_file, as the CLI and the GUI open files.
Opened open_st(const qs_test::TempDir& dir, const std::string& name, const std::vector<St>& ts) {
  const std::string path = dir.file(name);
  qs_test::write_file(path, safetensors(ts));
  Opened o;
  o.file = qs::open_tensor_file(path);
  o.pq = dynamic_cast<const qs::PrequantizedFile*>(o.file.get());
  return o;
}

// ---- The formats by their definitions (independent of io/dtype and the format engine) ---------------------

// OCP FP8 E4M3 (fn): bias 7, no inf, NaN = S.1111.111.
float e4m3(uint8_t c) {
  const int e = (c >> 3) & 15, m = c & 7;
  if (e == 15 && m == 7) return std::numeric_limits<float>::quiet_NaN();
  const double v = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1 + m / 8.0, e - 7);
  return static_cast<float>(c & 0x80 ? -v : v);
}
// FP4 E2M1: {0, 0.5, 1, 1.5, 2, 3, 4, 6}, sign in bit 3 (gpt-oss' FP4_VALUES).
float e2m1(unsigned n) {
  static const float t[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  return n & 8 ? -t[n & 7] : t[n & 7];
}
// The positive e4m3fn code of a value of the grid.
uint8_t e4m3_code(float v) {
  for (unsigned c = 0; c < 0x7F; ++c)
    if (e4m3(uint8_t(c)) == v) return uint8_t(c);
  ADD_FAILURE() << v << " is not an e4m3fn value";
  return 0;
}
// A random non-NaN e4m3fn code with |value| <= limit.
uint8_t e4m3_within(Rng& rng, float limit) {
  for (;;) {
    const uint8_t c = uint8_t(rng.next());
    const float v = e4m3(c);
    if (!std::isnan(v) && std::fabs(v) <= limit) return c;
  }
}
// bf16 by round to nearest even from float32 (finite inputs).
float bf16_rne(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000u;
  float y;
  std::memcpy(&y, &u, 4);
  return y;
}
uint16_t bf16_bits(float x) {  // x already a bf16 value
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return uint16_t(u >> 16);
}
// A scale whose products with 8-bit codes and with 448 / 127 / 7 are exact in float32 (a 4-bit significand).
float short_scale(Rng& rng, int lo_exp, int span) {
  return std::ldexp(1.0f + float(rng.next() % 16) / 16, lo_exp + int(rng.next() % unsigned(span)));
}

bool same_bits(float a, float b) {
  uint32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  return x == y;
}

// Element by element, bit for bit (NaN payloads included: both sides compute the same NaN).
void expect_bits(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(same_bits(got[i], want[i]) || (std::isnan(got[i]) && std::isnan(want[i]))) && bad++ == 0) first = i;
  EXPECT_EQ(bad, 0u) << "first at " << first << ": got " << got[first] << ", want " << want[first];
}

bool have_safetensors() { return qs::tensor_reader_available("safetensors"); }

// ---- FP8 with 128x128 block scales (DeepSeek-V3) ------------------------------------------------------------

struct Fp8Fixture {
  std::vector<uint8_t> codes;
  std::vector<float> scales, want;
  std::size_t perturbed_nonzero = 0, one_ulp_blocks = 0;
};

// R x C e4m3fn codes, one fp32 scale_inv per 128x128 tile. A normal tile has a +-448 code (so its amax is
// 448 * s: the amax / 448 rule gives s back); a perturbed tile tops out at 224 (the rule then gives s / 2).
Fp8Fixture make_fp8(Rng& rng, int64_t R, int64_t C, const std::set<std::size_t>& perturbed, bool short_scales) {
  Fp8Fixture f;
  const int64_t SR = (R + 127) / 128, SC = (C + 127) / 128;
  for (int64_t k = 0; k < SR * SC; ++k) {
    const float s = short_scales ? short_scale(rng, -12, 6) : float(rng.uniform(1e-4, 1e-2));
    f.scales.push_back(s);
    volatile float amax = 448.0f * s;
    volatile float back = amax / 448.0f;
    if (!perturbed.count(std::size_t(k)) && back != s) ++f.one_ulp_blocks;
  }
  f.codes.resize(std::size_t(R * C));
  f.want.resize(f.codes.size());
  std::vector<uint8_t> forced(std::size_t(SR * SC), 0);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) {
      const std::size_t k = std::size_t(r / 128 * SC + c / 128), e = std::size_t(r * C + c);
      const float limit = perturbed.count(k) ? 224.0f : 448.0f;
      uint8_t code = e4m3_within(rng, limit);
      if (!forced[k]) code = uint8_t(e4m3_code(limit) | (rng.next() & 0x80)), forced[k] = 1;
      f.codes[e] = code;
      f.want[e] = e4m3(code) * f.scales[k];
      if (perturbed.count(k) && e4m3(code) != 0) ++f.perturbed_nonzero;
    }
  return f;
}

TEST(Prequant, Fp8BlockScalesDequantizeAndCheck) {
  if (!have_safetensors()) GTEST_SKIP() << "this build has no safetensors reader";
  qs_test::TempDir dir;
  Rng rng = Rng::from_tag("Fp8BlockScales");
  const int64_t R = 200, C = 300;  // 2 x 3 tiles, the last ones short
  const Fp8Fixture f = make_fp8(rng, R, C, {}, true);
  const std::vector<float> norm = {1.0f, -2.5f, 3.25f};
  const std::string W = "model.layers.0.mlp.down_proj.weight";
  const Opened o = open_st(dir, "fp8.safetensors",
                           {{"model.norm.weight", "F32", {3}, le(norm)},
                            {W, "F8_E4M3", {R, C}, le(f.codes)},
                            {W + "_scale_inv", "F32", {2, 3}, le(f.scales)},
                            {"lm_head.weight", "BF16", {2}, le(std::vector<uint16_t>{0x3F80, 0xC000})}});
  ASSERT_NE(o.pq, nullptr);
  EXPECT_EQ(o.names(), (std::vector<std::string>{"model.norm.weight", W, "lm_head.weight"}));
  const std::size_t i = o.index(W);
  const qs::TensorInfo& t = o.file->tensors()[i];
  EXPECT_EQ(t.dtype, qs::DType::F32);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{R, C}));
  EXPECT_EQ(t.stored, "FP8 block scales: e4m3fn/block:128x128 (scale_inv fp32)");
  EXPECT_EQ(t.stored_bytes, uint64_t(R * C + 6 * 4));
  const qs::PrequantInfo* p = o.pq->prequant(i);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->scheme, "e4m3fn/block:128x128");
  EXPECT_EQ(qs::parse_scheme(p->scheme).text, p->scheme);
  EXPECT_EQ(p->element_format, "e4m3fn");
  EXPECT_EQ(p->block, (std::vector<int64_t>{128, 128}));
  EXPECT_EQ(p->members, (std::vector<std::string>{W, W + "_scale_inv"}));
  EXPECT_EQ(o.pq->prequant(o.index("model.norm.weight")), nullptr);

  const std::vector<float> w = o.read(W);
  expect_bits(w, f.want);
  const qs::TensorBytes b = o.file->read(i);  // read() hands out the same float32 values
  ASSERT_EQ(b.size, w.size() * 4);
  EXPECT_EQ(std::memcmp(b.data, w.data(), b.size), 0);
  const std::vector<uint32_t> codes = o.pq->codes(i);
  ASSERT_EQ(codes.size(), f.codes.size());
  EXPECT_TRUE(std::equal(codes.begin(), codes.end(), f.codes.begin()));
  ASSERT_EQ(p->code_values.size(), 256u);
  for (unsigned c = 0; c < 256; ++c)
    EXPECT_TRUE(same_bits(p->code_values[c], e4m3(uint8_t(c))) || std::isnan(e4m3(uint8_t(c)))) << c;
  expect_bits(o.read("model.norm.weight"), norm);  // the rest passes through

  const qs::RequantCheck c = qs::requantize_check(*o.pq, i);
  ASSERT_TRUE(c.supported) << c.why_not;
  EXPECT_EQ(c.codes_total, uint64_t(R * C));
  EXPECT_EQ(c.codes_differ, 0u);
  EXPECT_EQ(c.scales_total, 6u);
  EXPECT_EQ(c.scales_differ, 0u);
  EXPECT_EQ(qs::requant_summary(W, *p, c),
            W + ": stored e4m3fn/block:128x128 (FP8 block scales); re-quantized: 0 of 60000 codes and 0 of 6 scales differ");
  // Re-quantizing with the scheme itself gives the stored values back, bit for bit.
  std::vector<float> y(w.size());
  qs::apply_scheme(qs::parse_scheme(p->scheme), w.data(), t.shape, y.data());
  expect_bits(y, w);
}

TEST(Prequant, Fp8CheckReportsPerturbedAndOneUlpScales) {
  if (!have_safetensors()) GTEST_SKIP() << "this build has no safetensors reader";
  struct Case {
    const char* name;
    int64_t R, C;
    std::set<std::size_t> perturbed;
    bool short_scales;
  };
  const Case cases[] = {{"two tiles top out at 224", 256, 384, {1, 4}, true},
                        {"random fp32 scales", 1024, 1280, {}, false},
                        {"random fp32 scales, three tiles at 224", 1024, 1280, {0, 17, 79}, false}};
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    qs_test::TempDir dir;
    Rng rng = Rng::from_tag(k.name);
    const int64_t R = k.R, C = k.C;
    const Fp8Fixture f = make_fp8(rng, R, C, k.perturbed, k.short_scales);
    const Opened o = open_st(dir, "w.safetensors",
                             {{"w", "F8_E4M3", {R, C}, le(f.codes)}, {"w_scale_inv", "F32", {R / 128, C / 128}, le(f.scales)}});
    ASSERT_NE(o.pq, nullptr);
    const qs::RequantCheck c = qs::requantize_check(*o.pq, 0);
    ASSERT_TRUE(c.supported) << c.why_not;
    // A tile that tops out at 224 re-quantizes with s / 2: its scale and every non-zero code move.
    EXPECT_EQ(c.codes_differ, f.perturbed_nonzero);
    EXPECT_EQ(c.scales_differ, k.perturbed.size() + f.one_ulp_blocks);
    EXPECT_EQ(c.scales_one_ulp, f.one_ulp_blocks);
    // Random fp32 scales: about 1 in 10 does not survive fl(fl(448 s) / 448), and only those differ (by one ulp).
    if (!k.short_scales) {
      EXPECT_GT(f.one_ulp_blocks, 0u);
    }
  }
}

// ---- MXFP4 (gpt-oss) ---------------------------------------------------------------------------------------

TEST(Prequant, MxBlocksDequantizeAndCheck) {
  if (!have_safetensors()) GTEST_SKIP() << "this build has no safetensors reader";
  struct Case {
    const char* name;
    std::string blocks, scales, out;
  };
  const Case cases[] = {{"gpt-oss original names", "block.0.mlp.mlp1_weight.blocks", "block.0.mlp.mlp1_weight.scales", "block.0.mlp.mlp1_weight"},
                        {"transformers names", "model.layers.0.mlp.experts.down_proj_blocks", "model.layers.0.mlp.experts.down_proj_scales",
                         "model.layers.0.mlp.experts.down_proj"}};
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    qs_test::TempDir dir;
    Rng rng = Rng::from_tag(k.name);
    const int64_t E = 2, N = 3, G = 4, nblocks = E * N * G;
    // Block 5 tops out at 3 (the OCP rule then picks half the scale), block 9 is all zeros; the others top
    // out at 4 or 6, which floor(log2 amax) - 2 maps back to their scale.
    const std::size_t perturbed = 5, zero = 9;
    std::vector<uint8_t> scales(nblocks), blocks(std::size_t(nblocks) * 16);
    std::vector<float> want(std::size_t(nblocks) * 32);
    std::size_t moved = 0;
    for (int64_t b = 0; b < nblocks; ++b) {
      scales[b] = uint8_t(100 + rng.next() % 50);
      const unsigned top = b == int64_t(perturbed) ? 5 : 6 + unsigned(rng.next() % 2);  // e2m1 codes of 3, 4, 6
      for (int j = 0; j < 32; ++j) {
        unsigned n = j == 0 ? top : unsigned(rng.next() % (top + 1));
        n |= unsigned(rng.next() & 8);
        if (b == int64_t(zero)) n = 0;
        uint8_t& byte = blocks[std::size_t(b) * 16 + j / 2];
        byte = uint8_t(j % 2 == 0 ? (byte & 0xF0) | n : (byte & 0x0F) | (n << 4));  // element 2i: the low nibble
        want[std::size_t(b) * 32 + j] = float(std::ldexp(double(e2m1(n)), int(scales[b]) - 127));
        if (b == int64_t(perturbed) && e2m1(n) != 0) ++moved;
      }
    }
    const Opened o = open_st(dir, "mx.safetensors",
                             {{k.blocks, "U8", {E, N, G, 16}, le(blocks)}, {k.scales, "U8", {E, N, G}, le(scales)},
                              {"bias", "F32", {1}, le(std::vector<float>{0.5f})}});
    ASSERT_NE(o.pq, nullptr);
    EXPECT_EQ(o.names(), (std::vector<std::string>{k.out, "bias"}));
    const qs::TensorInfo& t = o.file->tensors()[0];
    EXPECT_EQ(t.shape, (std::vector<int64_t>{E, N, G * 32}));
    EXPECT_EQ(t.stored, "MXFP4: e2m1fn/block:32:e8m0fnu (blocks + e8m0 scales)");
    EXPECT_EQ(t.stored_bytes, uint64_t(nblocks * 17));
    expect_bits(o.read(k.out), want);
    const qs::RequantCheck c = qs::requantize_check(*o.pq, 0);
    ASSERT_TRUE(c.supported) << c.why_not;
    EXPECT_EQ(c.codes_total, uint64_t(nblocks * 32));
    EXPECT_EQ(c.codes_differ, moved);
    EXPECT_EQ(c.scales_total, uint64_t(nblocks));
    EXPECT_EQ(c.scales_differ, 2u);  // the perturbed block, and the all-zero one (QuantScope gives it scale 1)
    EXPECT_EQ(c.scales_zero_groups, 1u);
    EXPECT_EQ(c.scales_one_ulp, 0u);
  }
}

TEST(Prequant, MxSpecialScales) {
  if (!have_safetensors()) GTEST_SKIP() << "this build has no safetensors reader";
  qs_test::TempDir dir;
  // Scale 255 is E8M0's NaN; 254 with 6 overflows float32 (ldexp gives inf); 0 is 2^-127 (subnormal results).
  const std::vector<uint8_t> scales = {255, 254, 0};
  std::vector<uint8_t> blocks(3 * 16, 0x71);  // low nibble 1 (0.5), high nibble 7 (6)
  const Opened o = open_st(dir, "mx.safetensors", {{"e_blocks", "U8", {3, 16}, le(blocks)}, {"e_scales", "F8_E8M0", {3}, le(scales)}});
  ASSERT_NE(o.pq, nullptr);
  const std::vector<float> w = o.read("e");
  ASSERT_EQ(w.size(), 96u);
  EXPECT_TRUE(std::isnan(w[0]) && std::isnan(w[1]));
  EXPECT_EQ(w[32], std::ldexp(0.5f, 127));
  EXPECT_TRUE(std::isinf(w[33]));
  EXPECT_EQ(w[64], std::ldexp(1.0f, -128));
  EXPECT_EQ(w[65], std::ldexp(6.0f, -127));
}

// ---- compressed-tensors pack-quantized int4 ------------------------------------------------------------------

struct CtFixture {
  std::vector<int32_t> packed;
  std::vector<uint16_t> scale_bits;
  std::vector<float> scales, want;
  std::vector<int> q;
};

// pack_to_int32: value k of a word at bits [4k, 4k + 4), holding q + 8; rows padded to whole words.
std::vector<int32_t> pack_rows(const std::vector<int>& q, int64_t R, int64_t C) {
  const int64_t W = (C + 7) / 8;
  std::vector<int32_t> out(std::size_t(R * W), 0);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) {
      const uint32_t u = uint32_t(q[std::size_t(r * C + c)] + 8) << (4 * (c % 8));
      out[std::size_t(r * W + c / 8)] = int32_t(uint32_t(out[std::size_t(r * W + c / 8)]) | u);
    }
  return out;
}

// R x C int4 in groups of g along rows, bf16 scales. A normal group's codes are in [-7, 7] with a +-7 (the
// int4/block:g:bf16 rule gives s back); a perturbed one holds a -8 (compressed-tensors' own range).
CtFixture make_ct(Rng& rng, int64_t R, int64_t C, int64_t g, const std::set<std::size_t>& perturbed) {
  CtFixture f;
  const int64_t ng = C / g;
  for (int64_t k = 0; k < R * ng; ++k) {
    const float s = bf16_rne(float(rng.uniform(1e-3, 1e-1)));
    f.scales.push_back(s);
    f.scale_bits.push_back(bf16_bits(s));
  }
  f.q.resize(std::size_t(R * C));
  f.want.resize(f.q.size());
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) {
      const std::size_t k = std::size_t(r * ng + c / g), e = std::size_t(r * C + c);
      int q = int(rng.next() % 15) - 7;
      if (c % g == 0) q = perturbed.count(k) ? -8 : (rng.next() & 1 ? 7 : -7);
      f.q[e] = q;
      f.want[e] = float(q) * f.scales[k];
    }
  f.packed = pack_rows(f.q, R, C);
  return f;
}

TEST(Prequant, CompressedTensorsInt4) {
  if (!have_safetensors()) GTEST_SKIP() << "this build has no safetensors reader";
  qs_test::TempDir dir;
  Rng rng = Rng::from_tag("CompressedTensorsInt4");
  const int64_t R = 5, C = 64, g = 32;
  const std::set<std::size_t> perturbed = {3, 6};
  const CtFixture f = make_ct(rng, R, C, g, perturbed);
  const std::string P = "model.layers.0.self_attn.q_proj";
  const Opened o = open_st(dir, "ct.safetensors",
                           {{P + ".weight_packed", "I32", {R, 8}, le(f.packed)},
                            {P + ".weight_scale", "BF16", {R, 2}, le(f.scale_bits)},
                            {P + ".weight_shape", "I64", {2}, le(std::vector<int64_t>{R, C})},
                            {P + ".bias", "F32", {1}, le(std::vector<float>{1})}});
  ASSERT_NE(o.pq, nullptr);
  EXPECT_EQ(o.names(), (std::vector<std::string>{P + ".weight", P + ".bias"}));
  const qs::TensorInfo& t = o.file->tensors()[0];
  EXPECT_EQ(t.shape, (std::vector<int64_t>{R, C}));
  EXPECT_EQ(t.stored, "compressed-tensors int4: int4/block:32:bf16 (weight_scale bf16)");
  expect_bits(o.read(P + ".weight"), f.want);
  const std::vector<uint32_t> codes = o.pq->codes(0);  // as stored: offset binary
  for (std::size_t e = 0; e < codes.size(); ++e) ASSERT_EQ(int(codes[e]), f.q[e] + 8) << e;
  const qs::PrequantInfo* p = o.pq->prequant(0);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->code_values.front(), -8.0f);
  EXPECT_EQ(p->code_values.back(), 7.0f);

  // Oracle of the perturbed groups under int4/block:32:bf16: s' = bf16(float(8 s) / 7), codes rint(x / s')
  // clamped to int4's narrow range [-7, 7].
  std::size_t moved = 0;
  for (std::size_t k : perturbed) {
    const float s = f.scales[k];
    const float s2 = bf16_rne((8.0f * s) / 7.0f);
    ASSERT_NE(s2, s);
    const std::size_t r = k / 2, c0 = (k % 2) * 32;
    for (std::size_t c = c0; c < c0 + 32; ++c) {
      const int q = f.q[r * C + c];
      const volatile float x = float(q) * s;
      const float y = std::nearbyint(x / s2);
      if (int(std::fmax(-7.0f, std::fmin(7.0f, y))) != q) ++moved;
    }
  }
  const qs::RequantCheck c = qs::requantize_check(*o.pq, 0);
  ASSERT_TRUE(c.supported) << c.why_not;
  EXPECT_EQ(c.scheme, "int4/block:32:bf16");
  EXPECT_EQ(c.scales_total, uint64_t(R * 2));
  EXPECT_EQ(c.scales_differ, perturbed.size());
  EXPECT_EQ(c.codes_differ, moved);
  EXPECT_GT(moved, 0u);
}

TEST(Prequant, CompressedTensorsAsymmetricAndActivationOrder) {
  if (!have_safetensors()) GTEST_SKIP() << "this build has no safetensors reader";
  qs_test::TempDir dir;
  Rng rng = Rng::from_tag("CompressedTensorsAsymmetric");
  const int64_t R = 10, C = 32, g = 8, ng = 4;
  const CtFixture f = make_ct(rng, R, C, g, {});
  // Zero points in [-8, 7], packed along rows: pack_to_int32(zp, 4, packed_dim=0) -> [ceil(10 / 8), 4].
  std::vector<int> z(std::size_t(R * ng));
  for (int& v : z) v = int(rng.next() % 16) - 8;
  std::vector<int32_t> zpk(std::size_t(2 * ng), 0);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t j = 0; j < ng; ++j)
      zpk[std::size_t(r / 8 * ng + j)] = int32_t(uint32_t(zpk[std::size_t(r / 8 * ng + j)]) | (uint32_t(z[r * ng + j] + 8) << (4 * (r % 8))));
  // Activation order: column c belongs to group gi[c] (not c / 8); group 3 holds no column, as happens.
  std::vector<int32_t> gi(C);
  for (int64_t c = 0; c < C; ++c) gi[c] = int32_t((c * 5 + 1) % 3);
  struct Case {
    const char* name;
    bool zp, gidx;
    const char* why;
  };
  const Case cases[] = {{"asymmetric", true, false, "asymmetric"}, {"activation order", false, true, "activation order"}};
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    std::vector<St> ts = {{"l.weight_packed", "I32", {R, 4}, le(f.packed)},
                          {"l.weight_scale", "BF16", {R, ng}, le(f.scale_bits)},
                          {"l.weight_shape", "I32", {2}, le(std::vector<int32_t>{int32_t(R), int32_t(C)})}};
    if (k.zp) ts.push_back({"l.weight_zero_point", "I32", {2, ng}, le(zpk)});
    if (k.gidx) ts.push_back({"l.weight_g_idx", "I32", {C}, le(gi)});
    const Opened o = open_st(dir, std::string(k.name) + ".safetensors", ts);
    ASSERT_NE(o.pq, nullptr);
    ASSERT_EQ(o.names(), std::vector<std::string>{"l.weight"});
    std::vector<float> want(f.q.size());
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c) {
        const int64_t j = k.gidx ? gi[c] : c / g;
        const float zp = k.zp ? float(z[r * ng + j]) : 0.0f;
        want[r * C + c] = (float(f.q[r * C + c]) - zp) * f.scales[r * ng + j];
      }
    expect_bits(o.read("l.weight"), want);
    const qs::RequantCheck c = qs::requantize_check(*o.pq, 0);
    EXPECT_FALSE(c.supported);
    EXPECT_TRUE(contains(c.why_not, k.why)) << c.why_not;
    EXPECT_TRUE(contains(qs::requant_summary("l.weight", *o.pq->prequant(0), c), "not re-quantized: "));
  }
}

// ---- NVFP4 (compressed-tensors) ------------------------------------------------------------------------------

TEST(Prequant, Nvfp4GlobalScaleDivides) {
  if (!have_safetensors()) GTEST_SKIP() << "this build has no safetensors reader";
  qs_test::TempDir dir;
  Rng rng = Rng::from_tag("Nvfp4");
  const int64_t R = 4, C = 64, ng = 4;
  const float gs = 4096.0f;  // a power of two: 1 / gs and QuantScope's amax / 2688 agree exactly
  // Block scales: block 0 holds e4m3fn's max 448 (it sets the tensor scale); block 6 tops out at 3.
  const std::size_t perturbed = 6;
  std::vector<uint8_t> sb(std::size_t(R * ng)), packed(std::size_t(R * C / 2), 0);
  for (std::size_t k = 0; k < sb.size(); ++k) sb[k] = k == 0 ? 0x7E : uint8_t(0x30 + rng.next() % 0x4E);
  std::vector<float> want(std::size_t(R * C));
  std::size_t moved = 0;
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) {
      const std::size_t k = std::size_t(r * ng + c / 16), e = std::size_t(r * C + c);
      const unsigned top = k == perturbed ? 5 : 7;
      unsigned n = c % 16 == 0 ? top : unsigned(rng.next() % (top + 1));
      n |= unsigned(rng.next() & 8);
      packed[e / 2] = uint8_t(e % 2 == 0 ? (packed[e / 2] & 0xF0) | n : (packed[e / 2] & 0x0F) | (n << 4));
      const volatile float eff = e4m3(sb[k]) / gs;  // scale.to(fp32) / global_scale, then the product
      want[e] = e2m1(n) * eff;
      if (k == perturbed && e2m1(n) != 0) ++moved;
    }
  const Opened o = open_st(dir, "nvfp4.safetensors",
                           {{"m.weight_packed", "U8", {R, C / 2}, le(packed)},
                            {"m.weight_scale", "F8_E4M3", {R, ng}, le(sb)},
                            {"m.weight_global_scale", "F32", {1}, le(std::vector<float>{gs})},
                            {"m.input_global_scale", "F32", {1}, le(std::vector<float>{1})}});
  ASSERT_NE(o.pq, nullptr);
  EXPECT_EQ(o.names(), (std::vector<std::string>{"m.weight", "m.input_global_scale"}));
  EXPECT_EQ(o.file->tensors()[0].stored, "NVFP4 (compressed-tensors): e2m1fn/block:16:e4m3fn (weight_scale e4m3fn / weight_global_scale fp32)");
  expect_bits(o.read("m.weight"), want);
  const qs::RequantCheck c = qs::requantize_check(*o.pq, 0);
  ASSERT_TRUE(c.supported) << c.why_not;
  EXPECT_EQ(c.scales_total, uint64_t(R * ng));
  EXPECT_EQ(c.scales_differ, 1u);  // the perturbed block's e4m3 scale halves
  EXPECT_EQ(c.codes_differ, moved);
  EXPECT_TRUE(contains(c.note, "tensor scale")) << c.note;
}

// ---- NVFP4 (TensorRT Model Optimizer) -------------------------------------------------------------------------

// ModelOpt's e2m1_values table (nvfp4_tensor.py): the e2m1 values, but code 8 (-0) reads +0.
float modelopt_e2m1(unsigned n) { return n == 8 ? 0.0f : e2m1(n); }

struct MoFixture {
  std::vector<uint8_t> packed, sb;
  std::vector<float> want;
  std::size_t moved = 0;  // non-zero codes of the perturbed block
};

// rows x C e2m1 codes (element 2i the low nibble of byte i), one e4m3fn scale per 16 of a row. Block 0's scale
// is e4m3fn's max 448 and every block but `perturbed` holds a +-6 code, so that amax / (6 * 448) and
// amax / (6 * scale_2) give scale_2 and each block's scale back; the perturbed block tops out at 3 (its scale
// then re-derives as half). Element 1 is code 8 (-0 in e2m1, +0 in ModelOpt's table).
MoFixture make_modelopt(Rng& rng, int64_t rows, int64_t C, float scale2, std::size_t perturbed) {
  MoFixture f;
  const int64_t ng = C / 16;
  f.sb.resize(std::size_t(rows * ng));
  for (std::size_t k = 0; k < f.sb.size(); ++k) f.sb[k] = k == 0 ? 0x7E : uint8_t(0x30 + rng.next() % 0x4E);
  f.packed.assign(std::size_t(rows * C / 2), 0);
  f.want.resize(std::size_t(rows * C));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < C; ++c) {
      const std::size_t k = std::size_t(r * ng + c / 16), e = std::size_t(r * C + c);
      const unsigned top = k == perturbed ? 5 : 7;
      unsigned n = c % 16 == 0 ? top : unsigned(rng.next() % (top + 1));
      n |= unsigned(rng.next() & 8);
      if (e == 1) n = 8;
      f.packed[e / 2] = uint8_t(e % 2 == 0 ? (f.packed[e / 2] & 0xF0) | n : (f.packed[e / 2] & 0x0F) | (n << 4));
      const volatile float per_block = e4m3(f.sb[k]) * scale2;  // scale.to(float32) * weight_scale_2
      f.want[e] = modelopt_e2m1(n) * per_block;
      if (k == perturbed && e2m1(n) != 0) ++f.moved;
    }
  return f;
}

TEST(Prequant, Nvfp4ModelOptScale2Multiplies) {
  if (!have_safetensors()) GTEST_SKIP() << "this build has no safetensors reader";
  qs_test::TempDir dir;
  Rng rng = Rng::from_tag("Nvfp4ModelOpt");
  const int64_t R = 4, C = 64, ng = 4;
  const float scale2 = 1.7e-4f;  // not a power of two: the float32 product scale * scale_2 rounds
  const MoFixture f = make_modelopt(rng, R, C, scale2, 99);
  const std::string W = "model.layers.0.mlp.down_proj.weight";
  const Opened o = open_st(dir, "modelopt.safetensors",
                           {{W, "U8", {R, C / 2}, le(f.packed)},
                            {W + "_scale", "F8_E4M3", {R, ng}, le(f.sb)},
                            {W + "_scale_2", "F32", {}, le(std::vector<float>{scale2})},
                            {"model.layers.0.mlp.down_proj.input_scale", "F32", {}, le(std::vector<float>{0.25f})},
                            {"model.norm.weight", "F32", {2}, le(std::vector<float>{1, 2})}});
  ASSERT_NE(o.pq, nullptr);
  EXPECT_TRUE(o.file->skipped().empty());
  EXPECT_EQ(o.names(), (std::vector<std::string>{W, "model.norm.weight"}));
  const qs::TensorInfo& t = o.file->tensors()[0];
  EXPECT_EQ(t.shape, (std::vector<int64_t>{R, C}));
  EXPECT_EQ(t.stored, "NVFP4 (ModelOpt): e2m1fn/block:16:e4m3fn (weight_scale e4m3fn * weight_scale_2 fp32, input_scale)");
  EXPECT_EQ(t.stored_bytes, uint64_t(R * C / 2 + R * ng + 4 + 4));
  const qs::PrequantInfo* p = o.pq->prequant(0);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->convention, "NVFP4 (ModelOpt)");
  EXPECT_EQ(p->scheme, "e2m1fn/block:16:e4m3fn");
  EXPECT_EQ(p->block, (std::vector<int64_t>{1, 16}));
  EXPECT_EQ(p->members, (std::vector<std::string>{W, W + "_scale", W + "_scale_2", "model.layers.0.mlp.down_proj.input_scale"}));
  ASSERT_EQ(p->code_values.size(), 16u);
  for (unsigned n = 0; n < 16; ++n) EXPECT_TRUE(same_bits(p->code_values[n], modelopt_e2m1(n))) << n;
  const std::vector<float> w = o.read(W);
  expect_bits(w, f.want);
  EXPECT_FALSE(std::signbit(w[1]));  // code 8: +0, as ModelOpt's table has it
  const std::vector<uint32_t> codes = o.pq->codes(0);
  ASSERT_EQ(codes.size(), std::size_t(R * C));
  EXPECT_EQ(codes[1], 8u);
  EXPECT_EQ(codes[0], f.packed[0] & 15u);
  EXPECT_EQ(codes[3], f.packed[1] >> 4u);
  expect_bits(o.read("model.norm.weight"), {1, 2});
}

TEST(Prequant, Nvfp4ModelOptCheckAndExperts) {
  if (!have_safetensors()) GTEST_SKIP() << "this build has no safetensors reader";
  struct Case {
    const char* name;
    std::size_t perturbed;
    bool experts;  // a 3-D weight attribute "gate_up_proj" with X_weight_scale / X_weight_scale_2
  };
  for (const Case& k : {Case{"consistent", 99, false}, Case{"block 6 tops out at 3", 6, false}, Case{"experts", 5, true}}) {
    SCOPED_TRACE(k.name);
    qs_test::TempDir dir;
    Rng rng = Rng::from_tag(k.name);
    const int64_t E = k.experts ? 2 : 1, R = 4, C = 64, ng = 4;
    const float scale2 = std::ldexp(1.0f, -12);  // a power of two: amax / 2688 gives it back exactly
    const MoFixture f = make_modelopt(rng, E * R, C, scale2, k.perturbed);
    const std::string W = k.experts ? "model.layers.3.mlp.experts.gate_up_proj" : "m.weight";
    const std::string S = k.experts ? W + "_weight_scale" : W + "_scale";
    const std::vector<int64_t> wshape = k.experts ? std::vector<int64_t>{E, R, C / 2} : std::vector<int64_t>{R, C / 2};
    const std::vector<int64_t> sshape = k.experts ? std::vector<int64_t>{E, R, ng} : std::vector<int64_t>{R, ng};
    const Opened o = open_st(dir, "modelopt.safetensors",
                             {{W, "U8", wshape, le(f.packed)}, {S, "F8_E4M3", sshape, le(f.sb)},
                              {S + "_2", "F32", {1}, le(std::vector<float>{scale2})}});
    ASSERT_NE(o.pq, nullptr);
    ASSERT_EQ(o.names(), std::vector<std::string>{W});
    EXPECT_EQ(o.file->tensors()[0].shape, k.experts ? (std::vector<int64_t>{E, R, C}) : (std::vector<int64_t>{R, C}));
    expect_bits(o.read(W), f.want);
    const qs::RequantCheck c = qs::requantize_check(*o.pq, 0);
    ASSERT_TRUE(c.supported) << c.why_not;
    EXPECT_EQ(c.codes_total, uint64_t(E * R * C));
    EXPECT_EQ(c.scales_total, uint64_t(E * R * ng));
    const bool perturbed = k.perturbed < std::size_t(E * R * ng);
    EXPECT_EQ(c.scales_differ, perturbed ? 1u : 0u);  // the perturbed block's e4m3 scale halves
    EXPECT_EQ(c.codes_differ, f.moved);
    if (perturbed) {
      EXPECT_GT(f.moved, 0u);
    }
    // weight_scale_2 = 2^-12 and QuantScope's amax / 2688 = 6 * 448 * 2^-12 / 2688 = 2^-12.
    EXPECT_TRUE(contains(c.note, "stored weight_scale_2 = 0.000244140625, QuantScope's amax / 2688 = 0.000244140625")) << c.note;
  }
}

// ---- MXFP4 (compressed-tensors mxfp4-pack-quantized) -------------------------------------------------------------

TEST(Prequant, CompressedTensorsMxfp4) {
  if (!have_safetensors()) GTEST_SKIP() << "this build has no safetensors reader";
  qs_test::TempDir dir;
  Rng rng = Rng::from_tag("CtMxfp4");
  const int64_t R = 3, C = 64, ng = 2;
  // Every block holds a +-6 (e2m1 code 7), so floor(log2 amax) - 2 gives its exponent back, except block 3,
  // which tops out at 3 (the rule then gives half the scale).
  const std::size_t perturbed = 3;
  std::vector<uint8_t> packed(std::size_t(R * C / 2), 0), sc(std::size_t(R * ng));
  for (auto& v : sc) v = uint8_t(100 + rng.next() % 50);
  std::vector<float> want(std::size_t(R * C));
  std::size_t moved = 0;
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) {
      const std::size_t k = std::size_t(r * ng + c / 32), e = std::size_t(r * C + c);
      const unsigned top = k == perturbed ? 5 : 7;
      unsigned n = c % 32 == 5 ? top : unsigned(rng.next() % (top + 1));
      n |= unsigned(rng.next() & 8);
      packed[e / 2] = uint8_t(e % 2 == 0 ? (packed[e / 2] & 0xF0) | n : (packed[e / 2] & 0x0F) | (n << 4));
      want[e] = float(std::ldexp(double(e2m1(n)), int(sc[k]) - 127));  // e2m1 * 2^(scale - 127)
      if (k == perturbed && e2m1(n) != 0) ++moved;
    }
  const Opened o = open_st(dir, "ctmx.safetensors",
                           {{"l.weight_packed", "U8", {R, C / 2}, le(packed)}, {"l.weight_scale", "U8", {R, ng}, le(sc)},
                            {"l.bias", "F32", {2}, le(std::vector<float>{1, 2})}});
  ASSERT_NE(o.pq, nullptr);
  EXPECT_EQ(o.names(), (std::vector<std::string>{"l.weight", "l.bias"}));
  const qs::TensorInfo& t = o.file->tensors()[0];
  EXPECT_EQ(t.shape, (std::vector<int64_t>{R, C}));
  EXPECT_EQ(t.stored, "MXFP4 (compressed-tensors): e2m1fn/block:32:e8m0fnu (weight_scale e8m0fnu)");
  EXPECT_EQ(t.stored_bytes, uint64_t(R * C / 2 + R * ng));
  ASSERT_NE(o.pq->prequant(0), nullptr);
  EXPECT_EQ(o.pq->prequant(0)->scheme, "e2m1fn/block:32:e8m0fnu");
  expect_bits(o.read("l.weight"), want);
  const qs::RequantCheck c = qs::requantize_check(*o.pq, 0);
  ASSERT_TRUE(c.supported) << c.why_not;
  EXPECT_EQ(c.codes_total, uint64_t(R * C));
  EXPECT_EQ(c.scales_total, uint64_t(R * ng));
  EXPECT_EQ(c.scales_differ, 1u);
  EXPECT_EQ(c.codes_differ, moved);

  // decompress_mx_scale is 2^(scale - 127) in bfloat16: 255 gives 2^128 = inf (not E8M0's NaN), 0 gives 2^-127.
  const Opened s = open_st(dir, "ctmx_special.safetensors",
                           {{"x.weight_packed", "U8", {2, 16}, std::string(32, '\x71')},  // low 0.5, high 6
                            {"x.weight_scale", "F8_E8M0", {2, 1}, le(std::vector<uint8_t>{255, 0})}});
  ASSERT_NE(s.pq, nullptr);
  const std::vector<float> w = s.read("x.weight");
  ASSERT_EQ(w.size(), 64u);
  EXPECT_TRUE(std::isinf(w[0]) && w[0] > 0);
  EXPECT_TRUE(std::isinf(w[1]) && w[1] > 0);
  EXPECT_EQ(w[32], std::ldexp(1.0f, -128));
  EXPECT_EQ(w[33], std::ldexp(6.0f, -127));
}

// ---- Bad input: the members stay raw, one skipped line, the rest readable --------------------------------------

TEST(Prequant, MalformedGroupsStayRaw) {
  if (!have_safetensors()) GTEST_SKIP() << "this build has no safetensors reader";
  struct Case {
    const char* name;
    std::vector<St> group;
    const char* skipped;  // what the skipped line says
  };
  const std::string fp8(200 * 300, '\x38'), u8_15(2 * 15, '\x11'), u8_16(2 * 16, '\x11');
  const Case cases[] = {
      {"fp8 scale_inv not tiling the weight",
       {{"w", "F8_E4M3", {200, 300}, fp8}, {"w_scale_inv", "F32", {3, 3}, std::string(36, '\0')}},
       "w: looks like FP8 block scales but w_scale_inv has shape [3, 3], which does not tile a weight of shape [200, 300]"},
      {"fp8 scale of an integer type",
       {{"w", "F8_E4M3", {200, 300}, fp8}, {"w_scale", "I32", {1}, std::string(4, '\0')}},
       "w_scale is int32, not a float scale"},
      {"mx blocks of 15 bytes",
       {{"x_blocks", "U8", {2, 15}, u8_15}, {"x_scales", "U8", {2}, "\x7f\x7f"}},
       "x_blocks: looks like MXFP4 but its shape [2, 15] is not [..., blocks, 16]"},
      {"mx scales of another shape",
       {{"x_blocks", "U8", {2, 16}, u8_16}, {"x_scales", "U8", {3}, "\x7f\x7f\x7f"}},
       "x_scales has shape [3], not the blocks' [2]"},
      {"packed int4 narrower than weight_shape",
       {{"l.weight_packed", "I32", {4, 5}, std::string(80, '\0')},
        {"l.weight_scale", "F32", {4, 1}, std::string(16, '\0')},
        {"l.weight_shape", "I32", {2}, le(std::vector<int32_t>{4, 64})}},
       "l.weight_packed: looks like compressed-tensors pack-quantized but it holds 5 int32 per row, but 64 columns need 8 (4-bit) or 16 (8-bit)"},
      {"g_idx beyond the groups",
       {{"l.weight_packed", "I32", {1, 1}, std::string(4, '\0')},
        {"l.weight_scale", "F32", {1, 2}, std::string(8, '\0')},
        {"l.weight_shape", "I32", {2}, le(std::vector<int32_t>{1, 8})},
        {"l.weight_g_idx", "I32", {8}, le(std::vector<int32_t>{0, 1, 0, 1, 0, 1, 0, 9})}},
       "puts column 7 in group 9 of 2"},
      {"nvfp4 scales not per 16",
       {{"m.weight_packed", "U8", {4, 32}, std::string(128, '\0')},
        {"m.weight_scale", "F8_E4M3", {4, 5}, std::string(20, '\x38')},
        {"m.weight_global_scale", "F32", {1}, le(std::vector<float>{1})}},
       "m.weight_scale has shape [4, 5], not [4, groups dividing 64 columns]"},
      {"modelopt weight_scale of the wrong shape",
       {{"w", "U8", {4, 32}, std::string(128, '\0')},
        {"w_scale", "F8_E4M3", {3, 4}, std::string(12, '\x38')},
        {"w_scale_2", "F32", {}, le(std::vector<float>{1})}},
       "w: looks like NVFP4 (ModelOpt) but w_scale has shape [3, 4], not [4, blocks] for a weight of shape [4, 32]"},
      {"modelopt weight_scale_2 not a scalar",
       {{"w", "U8", {4, 32}, std::string(128, '\0')},
        {"w_scale", "F8_E4M3", {4, 4}, std::string(16, '\x38')},
        {"w_scale_2", "F32", {2}, le(std::vector<float>{1, 2})}},
       "w: looks like NVFP4 (ModelOpt) but w_scale_2 has shape [2], not a scalar"},
      {"modelopt packed size not matching the scales",
       {{"w", "U8", {4, 30}, std::string(120, '\0')},
        {"w_scale", "F8_E4M3", {4, 7}, std::string(28, '\x38')},
        {"w_scale_2", "F32", {}, le(std::vector<float>{1})}},
       "w: looks like NVFP4 (ModelOpt) but its 30 bytes per row hold 60 e2m1 values, which w_scale's 7 scales per row do not divide"},
      {"modelopt weight_scale_2 missing",
       {{"w", "U8", {4, 32}, std::string(128, '\0')}, {"w_scale", "F8_E4M3", {4, 4}, std::string(16, '\x38')}},
       "w: looks like NVFP4 (ModelOpt) but w_scale_2 (the tensor scale) is missing"},
      {"modelopt weight_scale not e4m3",
       {{"w", "U8", {4, 32}, std::string(128, '\0')},
        {"w_scale", "F32", {4, 4}, std::string(64, '\0')},
        {"w_scale_2", "F32", {}, le(std::vector<float>{1})}},
       "w_scale is float32, not float8_e4m3fn"},
      {"ct mxfp4 packed size not matching the scales",
       {{"l.weight_packed", "U8", {4, 32}, std::string(128, '\0')}, {"l.weight_scale", "U8", {4, 3}, std::string(12, '\x7f')}},
       "l.weight_packed: looks like MXFP4 (compressed-tensors) but its 32 bytes per row hold 64 e2m1 values, but l.weight_scale holds 3 scales per row"},
      {"ct mxfp4 scales of other rows",
       {{"l.weight_packed", "U8", {4, 32}, std::string(128, '\0')}, {"l.weight_scale", "U8", {5, 2}, std::string(10, '\x7f')}},
       "l.weight_scale has shape [5, 2], not [4, columns / 32]"},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    qs_test::TempDir dir;
    std::vector<St> ts = k.group;
    ts.push_back({"other", "F32", {2}, le(std::vector<float>{1.5f, -2})});
    const Opened o = open_st(dir, "bad.safetensors", ts);
    std::vector<std::string> raw_names;
    for (const St& s : ts) raw_names.push_back(s.name);
    EXPECT_EQ(o.names(), raw_names);
    ASSERT_EQ(o.file->skipped().size(), 1u);
    EXPECT_TRUE(contains(o.file->skipped()[0], k.skipped)) << o.file->skipped()[0];
    EXPECT_TRUE(contains(o.file->skipped()[0], "listed as stored")) << o.file->skipped()[0];
    expect_bits(o.read("other"), {1.5f, -2});
    for (std::size_t i = 0; i < o.file->tensors().size(); ++i) {
      EXPECT_EQ(o.pq->prequant(i), nullptr);
      EXPECT_NO_THROW(o.file->read(i));
    }
  }
}

TEST(Prequant, PlainFilesPassThrough) {
  if (!have_safetensors()) GTEST_SKIP() << "this build has no safetensors reader";
  qs_test::TempDir dir;
  // An fp8 weight without scales, a lone *_blocks tensor, a U8 weight_packed without a global scale: no
  // convention, nothing to say; the file comes back as the reader made it.
  const Opened o = open_st(dir, "plain.safetensors",
                           {{"a", "F8_E4M3", {4}, "\x38\x38\x38\x38"},
                            {"b_blocks", "U8", {1, 16}, std::string(16, '\0')},
                            {"c.weight_packed", "U8", {1, 2}, "\x11\x22"},
                            {"c.weight_scale", "F8_E4M3", {1, 1}, "\x38"}});
  EXPECT_EQ(o.pq, nullptr);
  EXPECT_EQ(o.names(), (std::vector<std::string>{"a", "b_blocks", "c.weight_packed", "c.weight_scale"}));
  EXPECT_TRUE(o.file->skipped().empty());
}

// ---- ONNX QDQ ---------------------------------------------------------------------------------------------

#ifdef QS_HAVE_PROTOBUF
using qs_onnx::TensorProto;

void add_init(qs_onnx::GraphProto* g, const std::string& name, int type, std::vector<int64_t> dims, const std::string& raw) {
  TensorProto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(raw);
}
void add_dq(qs_onnx::GraphProto* g, const std::string& out, const std::string& x, const std::string& s, const std::string& z,
            std::optional<int64_t> axis, std::optional<int64_t> block) {
  auto* n = g->add_node();
  n->set_op_type("DequantizeLinear");
  n->add_input(x);
  n->add_input(s);
  if (!z.empty()) n->add_input(z);
  n->add_output(out);
  auto attr = [&](const char* name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(qs_onnx::AttributeProto::INT);
    a->set_i(v);
  };
  if (axis) attr("axis", *axis);
  if (block) attr("block_size", *block);
}
#endif

TEST(Prequant, OnnxQdq) {
#ifndef QS_HAVE_PROTOBUF
  GTEST_SKIP() << "this build has no ONNX reader";
#else
  qs_test::TempDir dir;
  Rng rng = Rng::from_tag("OnnxQdq");
  qs_onnx::ModelProto m;
  m.set_ir_version(10);
  auto* g = m.mutable_graph();
  g->set_name("qdq");
  // w1: int8 [6, 8] per axis 0, zero points 0; each row has a +-127 (amax / 127 gives its scale back).
  std::vector<int8_t> x1(48);
  std::vector<float> s1(6), want1(48);
  for (int r = 0; r < 6; ++r) {
    s1[r] = short_scale(rng, -10, 4);
    for (int c = 0; c < 8; ++c) {
      x1[r * 8 + c] = int8_t(c == 0 ? (rng.next() & 1 ? 127 : -127) : int(rng.next() % 255) - 127);
      want1[r * 8 + c] = float(x1[r * 8 + c]) * s1[r];
    }
  }
  add_init(g, "w1_quantized", TensorProto::INT8, {6, 8}, le(x1));
  add_init(g, "w1_scale", TensorProto::FLOAT, {6}, le(s1));
  add_init(g, "w1_zero_point", TensorProto::INT8, {6}, std::string(6, '\0'));
  add_dq(g, "w1", "w1_quantized", "w1_scale", "w1_zero_point", 0, std::nullopt);
  // w2: uint8 [5, 7] per tensor with zero point 100; codes 0 and 255 present (PyTorch's MinMax affine rule
  // gives the scale and zero point back).
  const float s2 = short_scale(rng, -8, 2);
  std::vector<uint8_t> x2(35);
  std::vector<float> want2(35);
  for (int i = 0; i < 35; ++i) {
    x2[i] = uint8_t(i == 0 ? 0 : i == 1 ? 255 : rng.next() % 256);
    want2[i] = (float(x2[i]) - 100.0f) * s2;
  }
  add_init(g, "w2_q", TensorProto::UINT8, {5, 7}, le(x2));
  add_init(g, "w2_s", TensorProto::FLOAT, {}, le(std::vector<float>{s2}));
  add_init(g, "w2_z", TensorProto::UINT8, {}, std::string(1, char(100)));
  add_dq(g, "w2", "w2_q", "w2_s", "w2_z", std::nullopt, std::nullopt);
  // w3: int4 [4, 8] blocked along axis 1, block_size 3 (blocks 3, 3, 2), scales [4, 3]; packed two per byte,
  // the first element in the low nibble; each block has a +-7.
  std::vector<int> x3(32);
  std::vector<float> s3(12), want3(32);
  for (float& s : s3) s = short_scale(rng, -6, 3);
  std::string x3raw(16, '\0');
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 8; ++c) {
      const int e = r * 8 + c;
      x3[e] = c % 3 == 0 ? (rng.next() & 1 ? 7 : -7) : int(rng.next() % 15) - 7;
      x3raw[e / 2] = char(uint8_t(x3raw[e / 2]) | ((uint8_t(x3[e]) & 15) << (4 * (e % 2))));
      want3[e] = float(x3[e]) * s3[r * 3 + c / 3];
    }
  add_init(g, "w3_q", TensorProto::INT4, {4, 8}, x3raw);
  add_init(g, "w3_s", TensorProto::FLOAT, {4, 3}, le(s3));
  add_dq(g, "w3", "w3_q", "w3_s", "", 1, 3);
  // bad: a per-axis scale of the wrong length.
  add_init(g, "bad_q", TensorProto::INT8, {4, 4}, std::string(16, '\x01'));
  add_init(g, "bad_s", TensorProto::FLOAT, {3}, le(std::vector<float>{1, 2, 3}));
  add_dq(g, "bad", "bad_q", "bad_s", "", 0, std::nullopt);
  std::string bytes;
  ASSERT_TRUE(m.SerializeToString(&bytes));
  const std::string path = dir.file("qdq.onnx");
  qs_test::write_file(path, bytes);
  Opened o;
  o.file = qs::open_tensor_file(path);
  o.pq = dynamic_cast<const qs::PrequantizedFile*>(o.file.get());
  ASSERT_NE(o.pq, nullptr);
  EXPECT_EQ(o.names(), (std::vector<std::string>{"w1", "w2", "w3", "bad_q", "bad_s"}));
  ASSERT_EQ(o.file->skipped().size(), 1u);
  EXPECT_TRUE(contains(o.file->skipped()[0], "bad_q: looks like ONNX QDQ but bad_s has shape [3], which fits neither per tensor, per axis 0"))
      << o.file->skipped()[0];
  expect_bits(o.read("w1"), want1);
  expect_bits(o.read("w2"), want2);
  expect_bits(o.read("w3"), want3);
  struct Want {
    const char* name;
    const char* scheme;
    uint64_t scales;
  };
  for (const Want& w : {Want{"w1", "int8/channel:0", 6}, Want{"w2", "uint8/tensor", 1}, Want{"w3", "int4/block:3", 12}}) {
    SCOPED_TRACE(w.name);
    const std::size_t i = o.index(w.name);
    ASSERT_NE(o.pq->prequant(i), nullptr);
    EXPECT_EQ(o.pq->prequant(i)->scheme, w.scheme);
    EXPECT_EQ(o.pq->prequant(i)->convention, "ONNX QDQ");
    const qs::RequantCheck c = qs::requantize_check(*o.pq, i);
    ASSERT_TRUE(c.supported) << c.why_not;
    EXPECT_EQ(c.scales_total, w.scales);
    EXPECT_EQ(c.scales_differ, 0u);
    EXPECT_EQ(c.codes_differ, 0u);
  }
#endif
}

}  // namespace
