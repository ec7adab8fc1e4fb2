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
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <limits>
#include <string>
#include <vector>

#include "io/npy.h"

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
                         "npz-notes OUT | npz-odd OUT | sharded DIR ok|missing|escape|twice\n");
    return 2;
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "qs_hostile_inputs: %s\n", e.what());
  return 1;
}
