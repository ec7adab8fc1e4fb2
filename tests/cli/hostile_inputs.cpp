// qs_hostile_inputs: writes the hostile and edge-case inputs of tests/cli/cli_hostile.cmake, so the
// catalogue needs no Python and no binary files in the repository.
//   qs_hostile_inputs st-name OUT.safetensors LEN        one float32 [2,4] tensor named 'L' x LEN
//   qs_hostile_inputs st-ctrl OUT.safetensors            a tensor name holding ESC [31m, a comma, a quote, a line break
//   qs_hostile_inputs npy OUT.npy nan|inf|big64|ramp     float32 all-NaN / all-inf, float64 up to 1e300, float32 ramp
//   qs_hostile_inputs npz-notes OUT.npz                  an .npz of members that are not .npy files
//   qs_hostile_inputs npz-odd OUT.npz                    an .npz (stored zip): a tensor named a,"b<LF>c and notes.txt
//   qs_hostile_inputs sharded DIR ok|missing|escape|twice   a sharded model: model.safetensors.index.json and two
//                                                          shards (ok: shard 2 also holds 'extra', not in the index;
//                                                          missing: the index names a third shard; escape: a shard
//                                                          '../x.safetensors'; twice: 'w1' in both shards)
//   qs_hostile_inputs prequant DIR     the pre-quantized fixtures of tests/cli/cli_prequant.cmake: per convention
//                                      <conv>.safetensors (made by QuantScope's matching rule) and
//                                      <conv>_perturbed.safetensors (one block re-derives another scale), plus
//                                      qdq.onnx / qdq_perturbed.onnx (with protobuf) and modelopt_bad.safetensors
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <limits>
#include <string>
#include <vector>

#include "io/npy.h"

#ifdef QS_HAVE_PROTOBUF
#include "onnx_min.pb.h"
#endif

namespace {

std::string json_escape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out;
}

// One float32 [2,4] tensor per name (values 0.25 * (i+1) * +-1, then scaled by the tensor's position).
void write_safetensors(const std::string& path, const std::vector<std::string>& names) {
  std::string header = "{";
  for (std::size_t t = 0; t < names.size(); ++t)
    header += std::string(t ? "," : "") + "\"" + json_escape(names[t]) + "\":{\"dtype\":\"F32\",\"shape\":[2,4],"
              "\"data_offsets\":[" + std::to_string(32 * t) + "," + std::to_string(32 * (t + 1)) + "]}";
  header += "}";
  std::ofstream out(path, std::ios::binary);
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.put(char((n >> (8 * i)) & 0xff));
  out << header;
  for (std::size_t t = 0; t < names.size(); ++t)
    for (int i = 0; i < 8; ++i) {
      const float v = 0.25f * float(i + 1) * (i % 2 ? -1.0f : 1.0f) * float(t + 1);
      out.write(reinterpret_cast<const char*>(&v), 4);
    }
  if (!out) throw std::runtime_error("cannot write " + path);
}
void write_safetensors(const std::string& path, const std::string& name) {
  write_safetensors(path, std::vector<std::string>{name});
}

// Any tensors: 8-byte little-endian header length, the JSON header, the tensors' bytes in order.
struct StEntry {
  std::string name, dtype;
  std::vector<int64_t> shape;
  std::string data;
};
void write_safetensors(const std::string& path, const std::vector<StEntry>& ts) {
  std::string header = "{", body;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    std::string dims;
    for (std::size_t d = 0; d < ts[i].shape.size(); ++d) dims += (d ? "," : "") + std::to_string(ts[i].shape[d]);
    header += std::string(i ? "," : "") + "\"" + json_escape(ts[i].name) + "\":{\"dtype\":\"" + ts[i].dtype + "\",\"shape\":[" +
              dims + "],\"data_offsets\":[" + std::to_string(body.size()) + "," + std::to_string(body.size() + ts[i].data.size()) + "]}";
    body += ts[i].data;
  }
  header += "}";
  std::ofstream out(path, std::ios::binary);
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.put(char((n >> (8 * i)) & 0xff));
  out << header << body;
  if (!out) throw std::runtime_error("cannot write " + path);
}

void write_text(const std::string& path, const std::string& text);

template <class T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// ---- Pre-quantized fixtures (cli_prequant.cmake) ----------------------------------------------------------------
// Each file holds one weight of R x C elements in blocks that share a scale. Every block's first element is
// the format's top code (so the matching rule, amax / max, gives the stored scale back) and every other
// element a non-zero code below it; in the perturbed file one block tops out at half (or 3/7, 63/127) of the
// top instead, so re-quantizing gives that block another scale and moves every one of its codes. The counts
// cli_prequant.cmake expects follow from these sizes alone.
unsigned fill(unsigned top, std::size_t i, std::size_t block) {  // a magnitude code in [1, top]
  return i == 0 ? top : 1 + unsigned((i * 5 + block * 3) % top);
}

// Two e2m1 codes per byte, element 2i in the low nibble. e2m1 magnitude codes: 7 = 6, 5 = 3.
std::string pack_e2m1(std::size_t rows, std::size_t cols, std::size_t block, std::size_t perturbed) {
  std::string out(rows * cols / 2, '\0');
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) {
      const std::size_t k = r * (cols / block) + c / block, e = r * cols + c;
      const unsigned n = fill(k == perturbed ? 5 : 7, c % block, k) | (e % 2 ? 8u : 0u);
      out[e / 2] = char(uint8_t(out[e / 2]) | (n << (4 * (e % 2))));
    }
  return out;
}

void write_prequant(const std::string& dir) {
  const std::size_t none = ~std::size_t(0);
  for (const bool bad : {false, true}) {
    const std::string sfx = bad ? "_perturbed" : "";
    {  // DeepSeek-V3 FP8: W [256, 256] e4m3fn, W_scale_inv [2, 2] (128 x 128 tiles). Tile 1 perturbed: top 224.
      std::vector<uint8_t> w(256 * 256);
      for (std::size_t r = 0; r < 256; ++r)
        for (std::size_t c = 0; c < 256; ++c) {
          const bool p = bad && r < 128 && c >= 128;
          const std::size_t i = (r % 128) * 128 + c % 128;
          // 0x7E = 448, 0x76 = 224; others 0x08 .. 0x75 (at most 208), never 0 or NaN.
          const unsigned mag = i == 0 ? (p ? 0x76u : 0x7Eu) : 0x08u + unsigned((r * 7 + c * 3) % 0x6E);
          w[r * 256 + c] = uint8_t(mag | ((r + c) % 2 ? 0x80u : 0u));
        }
      const std::vector<float> s = {std::ldexp(1.0f, -9), std::ldexp(1.5f, -10), std::ldexp(1.25f, -10), std::ldexp(1.75f, -11)};
      write_safetensors(dir + "/fp8_block" + sfx + ".safetensors",
                        {{"model.layers.0.mlp.down_proj.weight", "F8_E4M3", {256, 256}, bytes_of(w)},
                         {"model.layers.0.mlp.down_proj.weight_scale_inv", "F32", {2, 2}, bytes_of(s)}});
    }
    {  // gpt-oss MXFP4: X_blocks [4, 2, 16], X_scales [4, 2] -> X [4, 64]; block 3 perturbed.
      std::vector<uint8_t> sc(8);
      for (std::size_t k = 0; k < 8; ++k) sc[k] = uint8_t(120 + k % 7);
      write_safetensors(dir + "/mxfp4" + sfx + ".safetensors",
                        {{"model.layers.0.mlp.experts.down_proj_blocks", "U8", {4, 2, 16}, pack_e2m1(4, 64, 32, bad ? 3 : none)},
                         {"model.layers.0.mlp.experts.down_proj_scales", "U8", {4, 2}, bytes_of(sc)}});
    }
    {  // compressed-tensors int4 pack-quantized: [4, 64] in int32 words, weight_scale [4, 2] (groups of 32);
       // group 5 perturbed (top 3 instead of 7).
      std::vector<int32_t> packed(4 * 8, 0);
      std::vector<float> s(8);
      for (std::size_t k = 0; k < 8; ++k) s[k] = std::ldexp(1.0f + float(k % 4) / 4, -7);
      for (std::size_t r = 0; r < 4; ++r)
        for (std::size_t c = 0; c < 64; ++c) {
          const std::size_t k = r * 2 + c / 32;
          const int q = int(fill(bad && k == 5 ? 3 : 7, c % 32, k)) * ((r * 64 + c) % 2 ? -1 : 1);
          packed[r * 8 + c / 8] |= int32_t(uint32_t(q + 8) << (4 * (c % 8)));
        }
      write_safetensors(dir + "/ct_int4" + sfx + ".safetensors",
                        {{"model.layers.0.self_attn.q_proj.weight_packed", "I32", {4, 8}, bytes_of(packed)},
                         {"model.layers.0.self_attn.q_proj.weight_scale", "F32", {4, 2}, bytes_of(s)},
                         {"model.layers.0.self_attn.q_proj.weight_shape", "I32", {2}, bytes_of(std::vector<int32_t>{4, 64})}});
    }
    // NVFP4 block scales [4, 4] (16 per block): block 0 is e4m3fn's 448 (0x7E), the others 0x30 .. 0x6F
    // (normal, so half of each is an e4m3fn value too); block 6 perturbed (top 3 instead of 6).
    std::vector<uint8_t> sb(16);
    for (std::size_t k = 0; k < 16; ++k) sb[k] = k == 0 ? 0x7E : uint8_t(0x30 + (k * 9) % 0x40);
    const std::string nv = pack_e2m1(4, 64, 16, bad ? 6 : none);
    // compressed-tensors NVFP4: weight_global_scale 4096 divides (1 / 4096 = 2^-12 = 6 * 448 * 2^-12 / 2688).
    write_safetensors(dir + "/nvfp4_ct" + sfx + ".safetensors",
                      {{"model.layers.0.mlp.gate_proj.weight_packed", "U8", {4, 32}, nv},
                       {"model.layers.0.mlp.gate_proj.weight_scale", "F8_E4M3", {4, 4}, bytes_of(sb)},
                       {"model.layers.0.mlp.gate_proj.weight_global_scale", "F32", {1}, bytes_of(std::vector<float>{4096})}});
    // ModelOpt NVFP4: weight_scale_2 = 2^-12 (a scalar) multiplies; input_scale beside it.
    write_safetensors(dir + "/nvfp4_modelopt" + sfx + ".safetensors",
                      {{"model.layers.0.mlp.up_proj.weight", "U8", {4, 32}, nv},
                       {"model.layers.0.mlp.up_proj.weight_scale", "F8_E4M3", {4, 4}, bytes_of(sb)},
                       {"model.layers.0.mlp.up_proj.weight_scale_2", "F32", {}, bytes_of(std::vector<float>{std::ldexp(1.0f, -12)})},
                       {"model.layers.0.mlp.up_proj.input_scale", "F32", {}, bytes_of(std::vector<float>{0.5f})}});
    {  // compressed-tensors MXFP4: weight_packed [4, 32] -> [4, 64], weight_scale [4, 2] exponents; block 3 perturbed.
      std::vector<uint8_t> sc(8);
      for (std::size_t k = 0; k < 8; ++k) sc[k] = uint8_t(110 + k * 3);
      write_safetensors(dir + "/ct_mxfp4" + sfx + ".safetensors",
                        {{"model.layers.0.mlp.down_proj.weight_packed", "U8", {4, 32}, pack_e2m1(4, 64, 32, bad ? 3 : none)},
                         {"model.layers.0.mlp.down_proj.weight_scale", "U8", {4, 2}, bytes_of(sc)}});
    }
#ifdef QS_HAVE_PROTOBUF
    {  // ONNX QDQ: DequantizeLinear(w_quantized int8 [4, 16], w_scale float [4], axis 0) -> w; row 1 perturbed
       // (top 63 instead of 127).
      std::vector<int8_t> x(64);
      std::vector<float> s(4);
      for (std::size_t r = 0; r < 4; ++r) {
        s[r] = std::ldexp(1.0f + float(r) / 4, -8);
        for (std::size_t c = 0; c < 16; ++c)
          x[r * 16 + c] = int8_t(int(fill(bad && r == 1 ? 63 : 127, c, r)) * ((r + c) % 2 ? -1 : 1));
      }
      qs_onnx::ModelProto m;
      m.set_ir_version(10);
      auto* g = m.mutable_graph();
      g->set_name("qdq");
      auto init = [&](const std::string& name, int type, std::vector<int64_t> dims, const std::string& raw) {
        auto* t = g->add_initializer();
        t->set_name(name);
        t->set_data_type(type);
        for (int64_t d : dims) t->add_dims(d);
        t->set_raw_data(raw);
      };
      init("w_quantized", qs_onnx::TensorProto::INT8, {4, 16}, bytes_of(x));
      init("w_scale", qs_onnx::TensorProto::FLOAT, {4}, bytes_of(s));
      auto* n = g->add_node();
      n->set_op_type("DequantizeLinear");
      n->add_input("w_quantized");
      n->add_input("w_scale");
      n->add_output("w");
      auto* a = n->add_attribute();
      a->set_name("axis");
      a->set_type(qs_onnx::AttributeProto::INT);
      a->set_i(0);
      std::string out;
      if (!m.SerializeToString(&out)) throw std::runtime_error("cannot serialize the ONNX fixture");
      write_text(dir + "/qdq" + sfx + ".onnx", out);
    }
#endif
  }
  // Bad input: a ModelOpt NVFP4 weight whose weight_scale has 3 rows for 4; another tensor beside it.
  std::vector<float> other(8);
  for (std::size_t i = 0; i < 8; ++i) other[i] = 0.25f * float(i) - 1.0f;
  write_safetensors(dir + "/modelopt_bad.safetensors",
                    {{"w", "U8", {4, 32}, std::string(128, '\x21')},
                     {"w_scale", "F8_E4M3", {3, 4}, std::string(12, '\x38')},
                     {"w_scale_2", "F32", {}, bytes_of(std::vector<float>{1})},
                     {"other", "F32", {2, 4}, bytes_of(other)}});
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

// A sharded Hugging Face model in `dir` (which must exist): the index and two shards.
void write_sharded(const std::string& dir, const std::string& variant) {
  const std::string s1 = "model-00001-of-00002.safetensors", s2 = "model-00002-of-00002.safetensors";
  write_safetensors(dir + "/" + s1, std::vector<std::string>{"w0", "w1"});
  write_safetensors(dir + "/" + s2, variant == "twice" ? std::vector<std::string>{"w2", "w1"}
                                                       : std::vector<std::string>{"w2", "extra"});
  std::string third = "\"w2\": \"" + s2 + "\"";
  if (variant == "missing") third += ", \"w3\": \"model-00003-of-00003.safetensors\"";
  if (variant == "escape") third = "\"w2\": \"../" + s2 + "\"";
  if (variant != "ok" && variant != "missing" && variant != "escape" && variant != "twice")
    throw std::runtime_error("sharded: unknown variant '" + variant + "'");
  write_text(dir + "/model.safetensors.index.json",
             "{\"metadata\": {\"total_size\": 96},\n \"weight_map\": {\"w0\": \"" + s1 + "\", \"w1\": \"" + s1 + "\", " +
                 third + "}}\n");
}

uint32_t crc32(const std::vector<uint8_t>& d) {
  uint32_t c = 0xffffffffu;
  for (uint8_t b : d) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return ~c;
}

// A zip of stored (uncompressed) members, as numpy's np.savez writes them.
using Members = std::vector<std::pair<std::string, std::vector<uint8_t>>>;
void write_stored_zip(const std::string& path, const Members& members) {
  std::vector<uint8_t> out, dir;
  auto u16 = [](std::vector<uint8_t>& o, uint32_t v) { o.push_back(uint8_t(v)); o.push_back(uint8_t(v >> 8)); };
  auto u32 = [&](std::vector<uint8_t>& o, uint32_t v) { u16(o, v & 0xffff); u16(o, v >> 16); };
  for (const auto& [member, data] : members) {
    const uint32_t crc = crc32(data), size = uint32_t(data.size()), name_len = uint32_t(member.size());
    const uint32_t offset = uint32_t(out.size());
    u32(out, 0x04034b50); u16(out, 20); u16(out, 0); u16(out, 0); u16(out, 0); u16(out, 0x21); u32(out, crc);
    u32(out, size); u32(out, size); u16(out, name_len); u16(out, 0);
    out.insert(out.end(), member.begin(), member.end());
    out.insert(out.end(), data.begin(), data.end());
    u32(dir, 0x02014b50); u16(dir, 20); u16(dir, 20); u16(dir, 0); u16(dir, 0); u16(dir, 0); u16(dir, 0x21);
    u32(dir, crc); u32(dir, size); u32(dir, size); u16(dir, name_len); u16(dir, 0); u16(dir, 0); u16(dir, 0);
    u16(dir, 0); u32(dir, 0); u32(dir, offset);
    dir.insert(dir.end(), member.begin(), member.end());
  }
  const uint32_t cd = uint32_t(out.size()), cd_size = uint32_t(dir.size()), n = uint32_t(members.size());
  out.insert(out.end(), dir.begin(), dir.end());
  u32(out, 0x06054b50); u16(out, 0); u16(out, 0); u16(out, n); u16(out, n); u32(out, cd_size); u32(out, cd); u16(out, 0);
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(out.data()), std::streamsize(out.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

}  // namespace

int main(int argc, char** argv) try {
  const std::vector<std::string> a(argv + 1, argv + argc);
  if (a.size() == 3 && a[0] == "st-name") {
    write_safetensors(a[1], std::string(std::stoul(a[2]), 'L'));
  } else if (a.size() == 2 && a[0] == "st-ctrl") {
    write_safetensors(a[1], "bad\x1b[31m\nname,\"with\" comma");
  } else if (a.size() == 2 && a[0] == "prequant") {
    write_prequant(a[1]);
  } else if (a.size() == 3 && a[0] == "sharded") {
    write_sharded(a[1], a[2]);
  } else if (a.size() == 2 && a[0] == "npz-odd") {
    std::vector<float> x(16);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i) - 7.5f;
    const std::string note = "made by qs_hostile_inputs\n";
    write_stored_zip(a[1], {{"a,\"b\nc.npy", qs::serialize_npy(qs::make_npy(qs::DType::F32, {4, 4}, x.data()))},
                            {"notes.txt", std::vector<uint8_t>(note.begin(), note.end())}});
  } else if (a.size() == 2 && a[0] == "npz-notes") {  // no .npy member at all: a zip of notes
    const std::string t = "not a tensor\n";
    write_stored_zip(a[1], {{"README.txt", std::vector<uint8_t>(t.begin(), t.end())},
                            {"notes/", {}},
                            {"w.bin", std::vector<uint8_t>(16, 1)}});
  } else if (a.size() == 3 && a[0] == "npy") {
    if (a[2] == "big64") {
      std::vector<double> x{1e300, -1e300, 1.0, 0.5, 3e38, -2.5, 1e39, 0.0};
      qs::write_npy(a[1], qs::make_npy(qs::DType::F64, {8}, x.data()));
    } else {
      std::vector<float> x(64);
      for (std::size_t i = 0; i < x.size(); ++i)
        x[i] = a[2] == "nan"   ? std::numeric_limits<float>::quiet_NaN()
               : a[2] == "inf" ? (i % 2 ? -1.0f : 1.0f) * std::numeric_limits<float>::infinity()
                               : float(i) / 8.0f - 4.0f;
      qs::write_npy(a[1], qs::make_npy(qs::DType::F32, {8, 8}, x.data()));
    }
  } else {
    std::fprintf(stderr, "usage: qs_hostile_inputs st-name OUT LEN | st-ctrl OUT | npy OUT nan|inf|big64|ramp | "
                         "npz-notes OUT | npz-odd OUT | sharded DIR ok|missing|escape|twice | prequant DIR\n");
    return 2;
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "qs_hostile_inputs: %s\n", e.what());
  return 1;
}
