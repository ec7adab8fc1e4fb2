// libFuzzer entry point for the sharded-model reader (core/io/sharded_model.cpp): each input is written
// as model.safetensors.index.json beside two fixed tiny shards (model-00001-of-00002: a.w F32 [2,2],
// a.b BF16 [2]; model-00002-of-00002: b.w F16 [3], b.c C64 [1], b.extra F32 [1]), opened as a model and
// every tensor read; a qs::IoError is the expected answer to bad input, anything else is a finding.
// Build and run: tests/fuzz/README.md. Seeds: tests/fuzz/corpus/sharded/ (tst_tensorfile writeFuzzCorpus).
#include "fuzz_reader.h"

#include <string>
#include <vector>

namespace {

struct Entry {
  const char* name;
  const char* dtype;
  const char* shape;
  std::size_t bytes;
};

void write_shard(const std::string& path, const std::vector<Entry>& entries) {
  std::string header = "{", data;
  for (const Entry& e : entries) {
    if (header.size() > 1) header += ",";
    header += std::string("\"") + e.name + "\":{\"dtype\":\"" + e.dtype + "\",\"shape\":" + e.shape +
              ",\"data_offsets\":[" + std::to_string(data.size()) + "," + std::to_string(data.size() + e.bytes) + "]}";
    for (std::size_t i = 0; i < e.bytes; ++i) data += char(0x3c + 7 * (data.size() % 5));
  }
  header += "}";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) std::fputc(int((n >> (8 * i)) & 0xff), f);
  std::fwrite(header.data(), 1, header.size(), f);
  std::fwrite(data.data(), 1, data.size(), f);
  std::fclose(f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool shards = [] {
    const std::string dir = std::filesystem::path(qs_fuzz::input_path("model.safetensors.index.json")).parent_path();
    write_shard(dir + "/model-00001-of-00002.safetensors", {{"a.w", "F32", "[2,2]", 16}, {"a.b", "BF16", "[2]", 4}});
    write_shard(dir + "/model-00002-of-00002.safetensors",
                {{"b.w", "F16", "[3]", 6}, {"b.c", "C64", "[1]", 8}, {"b.extra", "F32", "[1]", 4}});
    return true;
  }();
  (void)shards;
  return qs_fuzz::run(data, size, "model.safetensors.index.json",
                      [](const std::string& p) { return qs::open_sharded_model(p); });
}
