// qs_hostile_inputs: writes the hostile and edge-case inputs of tests/cli/cli_hostile.cmake, so the
// catalogue needs no Python and no binary files in the repository.
//   qs_hostile_inputs st-name OUT.safetensors LEN        one float32 [2,4] tensor named 'L' x LEN
//   qs_hostile_inputs st-ctrl OUT.safetensors            a tensor name holding ESC [31m, a comma, a quote, a line break
//   qs_hostile_inputs npy OUT.npy nan|inf|big64|ramp     float32 all-NaN / all-inf, float64 up to 1e300, float32 ramp
//   qs_hostile_inputs npz-notes OUT.npz                  an .npz of members that are not .npy files
//   qs_hostile_inputs npz-odd OUT.npz                    an .npz (stored zip): a tensor named a,"b<LF>c and notes.txt
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

void write_safetensors(const std::string& path, const std::string& name) {
  const std::string header = "{\"" + json_escape(name) + "\":{\"dtype\":\"F32\",\"shape\":[2,4],\"data_offsets\":[0,32]}}";
  std::ofstream out(path, std::ios::binary);
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out.put(char((n >> (8 * i)) & 0xff));
  out << header;
  for (int i = 0; i < 8; ++i) {
    const float v = 0.25f * float(i + 1) * (i % 2 ? -1.0f : 1.0f);
    out.write(reinterpret_cast<const char*>(&v), 4);
  }
  if (!out) throw std::runtime_error("cannot write " + path);
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
    std::fprintf(stderr, "usage: qs_hostile_inputs st-name OUT LEN | st-ctrl OUT | npy OUT nan|inf|big64|ramp\n");
    return 2;
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "qs_hostile_inputs: %s\n", e.what());
  return 1;
}
