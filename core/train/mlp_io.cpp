// Safetensors output written by hand (the JSON header is small and fixed in shape), input through the
// project's reader (core/io/tensor_file.h), so what we write is checked by the same code that analyzes it.
#include "train/mlp_io.h"

#include <cstdio>
#include <cstring>

#include "io/atomic_file.h"
#include "io/dtype.h"
#include "io/tensor_file.h"

namespace qs {

namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
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
  return out + "\"";
}

void put_le64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(uint8_t(v >> (8 * i)));
}

}  // namespace

void save_mlp_safetensors(const std::string& path, const Mlp& net, const std::map<std::string, std::string>& metadata) {
  std::map<std::string, std::string> meta = metadata;
  std::string sizes;
  for (int s : net.sizes()) {
    if (!sizes.empty()) sizes += ',';
    sizes += std::to_string(s);
  }
  meta["sizes"] = sizes;
  meta.emplace("format", "pt");

  std::string header = "{\"__metadata__\":{";
  bool first = true;
  for (const auto& [k, v] : meta) {
    if (!first) header += ',';
    header += json_string(k);
    header += ':';
    header += json_string(v);
    first = false;
  }
  header += "}";
  std::size_t offset = 0;
  // One tensor entry: ,"name":{"dtype":"F32","shape":[...],"data_offsets":[begin,end]}
  auto entry = [&](const std::string& name, const std::string& shape, std::size_t bytes) {
    header += ',';
    header += json_string(name);
    header += ":{\"dtype\":\"F32\",\"shape\":[";
    header += shape;
    header += "],\"data_offsets\":[";
    header += std::to_string(offset);
    header += ',';
    header += std::to_string(offset + bytes);
    header += "]}";
    offset += bytes;
  };
  for (int l = 0; l < net.layer_count(); ++l) {
    const MlpLayer& L = net.layer(l);
    const std::string k = "fc" + std::to_string(l + 1);
    entry(k + ".weight", std::to_string(L.out) + "," + std::to_string(L.in), L.W.size() * 4);
    entry(k + ".bias", std::to_string(L.out), L.b.size() * 4);
  }
  header += "}";
  while (header.size() % 8) header += ' ';  // data starts 8-byte aligned, as the reference writer does

  std::vector<uint8_t> out;
  out.reserve(8 + header.size() + offset);
  put_le64(out, header.size());
  out.insert(out.end(), header.begin(), header.end());
  auto put_floats = [&](const std::vector<float>& v) {  // little-endian float32 (the engine's hosts are LE)
    const auto* p = reinterpret_cast<const uint8_t*>(v.data());
    out.insert(out.end(), p, p + v.size() * 4);
  };
  for (int l = 0; l < net.layer_count(); ++l) {
    put_floats(net.layer(l).W);
    put_floats(net.layer(l).b);
  }
  write_file_atomic(path, out);
}

Mlp load_mlp_safetensors(const std::string& path, int threads) {
  const std::unique_ptr<TensorFile> file = open_tensor_file(path);
  const auto& ts = file->tensors();
  auto find = [&](const std::string& name) -> long {
    for (std::size_t i = 0; i < ts.size(); ++i)
      if (ts[i].name == name) return long(i);
    return -1;
  };
  std::vector<int> sizes;
  std::vector<std::pair<long, long>> idx;
  for (int k = 1;; ++k) {
    const long w = find("fc" + std::to_string(k) + ".weight"), b = find("fc" + std::to_string(k) + ".bias");
    if (w < 0) break;
    if (b < 0) throw IoError(path + ": fc" + std::to_string(k) + ".weight has no fc" + std::to_string(k) + ".bias");
    const TensorInfo& wi = ts[std::size_t(w)];
    const TensorInfo& bi = ts[std::size_t(b)];
    if (wi.shape.size() != 2 || bi.shape.size() != 1 || bi.shape[0] != wi.shape[0])
      throw IoError(path + ": fc" + std::to_string(k) + " must be weight [out, in] and bias [out]");
    if (!dtype_is_float(wi.dtype) || !dtype_is_float(bi.dtype))
      throw IoError(path + ": fc" + std::to_string(k) + " is " + to_string(wi.dtype) + ", expected a float type");
    if (wi.shape[0] < 1 || wi.shape[1] < 1 || wi.shape[0] > 65536 || wi.shape[1] > 65536)
      throw IoError(path + ": fc" + std::to_string(k) + ".weight has sizes outside 1..65536");
    if (sizes.empty()) sizes.push_back(int(wi.shape[1]));
    else if (sizes.back() != int(wi.shape[1]))
      throw IoError(path + ": fc" + std::to_string(k) + ".weight takes " + std::to_string(wi.shape[1]) +
                    " inputs, the layer before gives " + std::to_string(sizes.back()));
    sizes.push_back(int(wi.shape[0]));
    idx.emplace_back(w, b);
  }
  if (idx.empty()) throw IoError(path + ": no fc1.weight / fc1.bias tensors (not an MLP saved by quantscope train)");
  Mlp net(sizes, 0, threads);
  for (std::size_t l = 0; l < idx.size(); ++l) {
    MlpLayer& L = net.layer(int(l));
    const TensorBytes wb = file->read(std::size_t(idx[l].first));
    const TensorBytes bb = file->read(std::size_t(idx[l].second));
    convert_to_f32(ts[std::size_t(idx[l].first)].dtype, wb.data, L.W.size(), L.W.data());
    convert_to_f32(ts[std::size_t(idx[l].second)].dtype, bb.data, L.b.size(), L.b.data());
  }
  return net;
}

}  // namespace qs
