// A sharded Hugging Face safetensors checkpoint (`model.safetensors.index.json` beside
// `model-0000k-of-0000n.safetensors`, or a folder of shards) read as one TensorFile: every shard's header
// is parsed and checked against the index at open; read() opens the tensor's shard lazily (at most
// kOpenShards stay open), so memory follows the largest tensor, as with one file.
// Exercise: tests/tst_tensorfile.cpp (sharded*), tests/fuzz/fuzz_sharded.cpp,
// `quantscope-cli analyze --in model.safetensors.index.json --scheme e4m3fn/tensor` (or `--in FOLDER`).
#include "io/json_checked.h"
#include "util/printable.h"
#include "io/tensor_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include <sys/stat.h>

#include <nlohmann/json.hpp>

namespace qs {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr uint64_t kMaxIndexBytes = 64ull << 20;  // real indexes are a few MB (DeepSeek-V3's ~9 MB)
constexpr int kMaxJsonDepth = 32;                 // an index needs 2
constexpr std::size_t kOpenShards = 2;            // shards kept open between reads

class ShardedModel final : public TensorFile {
 public:
  // `path` is the index file or the folder; `index` is the index file to use ("" = none: every
  // *.safetensors file of `folder`).
  ShardedModel(const std::string& path, const std::string& folder, const std::string& index, bool list_unindexed)
      : folder_(folder) {
    path_ = path;
    kind_ = "sharded safetensors";
    if (!index.empty())
      open_indexed(index, list_unindexed);
    else
      open_folder();
  }

  TensorBytes read(std::size_t index) const override {
    const Where w = where(index);
    const std::shared_ptr<const TensorFile> shard = shard_file(w.shard, index);
    TensorBytes b = shard->read(w.local);
    // The bytes keep their shard alive, whatever the cache closes meanwhile.
    auto both = std::make_shared<std::pair<std::shared_ptr<const TensorFile>, std::shared_ptr<const void>>>(
        shard, std::move(b.owner));
    b.owner = std::shared_ptr<const void>(both, both.get());
    return b;
  }

  void read_f32(std::size_t index, float* out) const override {
    const Where w = where(index);
    shard_file(w.shard, index)->read_f32(w.local, out);
  }

  // Every shard is a .safetensors file, which reads in parts.
  bool reads_f32_in_parts() const override { return true; }
  void read_f32_part(std::size_t index, std::size_t begin, std::size_t count, float* out) const override {
    const Where w = where(index);
    shard_file(w.shard, index)->read_f32_part(w.local, begin, count, out);
  }

  std::vector<std::string> source_files() const override {
    std::vector<std::string> out{path_};
    for (const Shard& s : shards_) out.push_back(s.path);
    return out;
  }

 private:
  struct Where {
    std::size_t shard = 0, local = 0;  // the shard and the tensor's index within it
  };
  struct Shard {
    std::string name;  // as in the index (relative to the folder)
    std::string path;  // folder/name
  };

  [[noreturn]] void fail(const std::string& what) const { throw IoError(path_ + ": " + what); }

  Where where(std::size_t index) const {
    if (index >= where_.size())
      throw IoError(path_ + ": no tensor #" + std::to_string(index) + " (the model has " +
                    std::to_string(where_.size()) + ")");
    return where_[index];
  }

  std::string shard_path(const std::string& name) const {
    return folder_.empty() ? name : (fs::path(folder_) / name).string();
  }

  // The index: {"metadata": {...}, "weight_map": {"tensor": "shard.safetensors", ...}}.
  void open_indexed(const std::string& index_path, bool list_unindexed) {
    const auto file = RandomAccessFile::open(index_path);
    if (file->size() > kMaxIndexBytes)
      throw IoError(index_path + ": " + std::to_string(file->size()) + " bytes, above the " +
                    std::to_string(kMaxIndexBytes >> 20) + " MiB limit for a sharded-model index");
    std::string text(static_cast<std::size_t>(file->size()), '\0');
    file->read_exact(0, text.data(), text.size());
    json doc;
    try {
      // Depth and duplicate keys: a tensor named twice in weight_map must not be resolved to the last one.
      doc = parse_checked_json(
          text, kMaxJsonDepth,
          {.too_deep = [&] {
             throw IoError(index_path + ": the index nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
           },
           .duplicate = [&](const std::string& k, std::size_t depth, const std::string& top_key) {
             throw IoError(index_path + ": " + (depth == 2 && top_key == "weight_map"
                                                    ? printable(k) + ": named twice in \"weight_map\""
                                                    : "the index has the key '" + printable(k) + "' twice"));
           }});
    } catch (const json::exception& e) {
      throw IoError(index_path + ": not valid JSON: " + json_error_text(e));
    }
    text.clear();
    text.shrink_to_fit();
    auto ifail = [&](const std::string& what) { throw IoError(index_path + ": " + what); };
    if (!doc.is_object()) ifail("not a sharded-model index (a JSON object with \"weight_map\")");
    const auto wm = doc.find("weight_map");
    if (wm == doc.end())
      ifail("not a sharded-model index: no \"weight_map\" at the top level (tensor files: .npy, .npz, .safetensors, "
            ".onnx, or a *.safetensors.index.json)");
    if (!wm->is_object()) ifail("\"weight_map\" is not an object of tensor name -> shard file");
    if (wm->empty()) ifail("\"weight_map\" is empty: the index names no tensors");

    // The shards in name order (model-00001-of-00003 first); per shard, the tensors the index gives it.
    std::map<std::string, std::vector<std::string>> by_shard;
    for (const auto& [name, value] : wm->items()) {
      if (!value.is_string())
        ifail(printable(name) + ": its shard in \"weight_map\" is not a string (weight_map must map tensor names to "
                                "shard file names)");
      const std::string& shard = value.get_ref<const std::string&>();
      check_shard_name(index_path, name, shard);
      by_shard[fs::path(shard).lexically_normal().string()].push_back(name);  // "./a" is "a"
    }

    // Which shard the index gives each tensor, to tell "in two shards" from "not in the index".
    std::unordered_map<std::string_view, std::string_view> home;
    home.reserve(wm->size());
    for (const auto& [shard, names] : by_shard)
      for (const std::string& n : names) home.emplace(n, shard);

    std::unordered_set<std::string> named;
    for (const auto& [shard_name, names] : by_shard) {
      const std::size_t s = shards_.size();
      shards_.push_back({shard_name, shard_path(shard_name)});
      named.insert(shard_name);
      const std::string& sp = shards_.back().path;
      struct stat st {};
      if (::stat(sp.c_str(), &st) != 0 && (errno == ENOENT || errno == ENOTDIR))
        ifail("shard '" + printable(shard_name) + "' (named for " + std::to_string(names.size()) + " tensor" +
              (names.size() == 1 ? "" : "s") + ", e.g. '" + printable(names.front()) + "') is missing: no file " + sp);
      const std::shared_ptr<const TensorFile> f = open_shard(s);
      std::unordered_map<std::string_view, std::size_t> local;
      local.reserve(f->tensors().size());
      for (std::size_t j = 0; j < f->tensors().size(); ++j) local.emplace(f->tensors()[j].name, j);
      // The shard's own skipped entries ("<name>: <why>"): a tensor the index names there is not missing.
      auto skipped_there = [&](const std::string& n) {
        const std::string prefix = printable(n) + ": ";
        return std::any_of(f->skipped().begin(), f->skipped().end(),
                           [&](const std::string& e) { return e.starts_with(prefix); });
      };
      std::vector<std::size_t> order;  // the shard's tensors that the index gives it, in file order
      for (const std::string& n : names) {
        const auto it = local.find(n);
        if (it != local.end())
          order.push_back(it->second);
        else if (!skipped_there(n))
          ifail(printable(n) + ": the index puts it in '" + printable(shard_name) + "', which does not hold it");
      }
      std::sort(order.begin(), order.end());
      for (const std::string& e : f->skipped()) skipped_.push_back(printable(shard_name) + ": " + e);
      for (std::size_t j = 0; j < f->tensors().size(); ++j) {
        const std::string& n = f->tensors()[j].name;
        const auto h = home.find(n);
        if (h == home.end())
          skipped_.push_back(printable(n) + ": in " + printable(shard_name) + " but not in the index, not read");
        else if (h->second != shard_name)
          ifail(printable(n) + ": in two shards, '" + printable(h->second) + "' (as the index says) and '" +
                printable(shard_name) + "'");
      }
      for (std::size_t j : order) {
        tensors_.push_back(f->tensors()[j]);
        where_.push_back({s, j});
      }
    }

    // A folder opened as a model: its other .safetensors files (a consolidated copy, say) are named too.
    if (list_unindexed)
      for (const std::string& name : folder_shards())
        if (!named.count(name))
          skipped_.push_back(printable(name) + ": a .safetensors file not named in " +
                             printable(fs::path(index_path).filename().string()) + ", not read");
  }

  // Shard names come from the file: only names inside the folder are opened.
  static void check_shard_name(const std::string& index_path, const std::string& tensor, const std::string& shard) {
    auto bad = [&](const std::string& why) {
      throw IoError(index_path + ": " + printable(tensor) + ": shard '" + printable(shard) + "' " + why);
    };
    if (shard.empty()) bad("is an empty name");
    if (shard.find('\0') != std::string::npos) bad("holds a NUL byte");
    const fs::path p(shard);
    if (p.is_absolute() || p.has_root_path()) bad("is an absolute path; shards must lie in the index's folder");
    for (const fs::path& part : p)
      if (part == "..") bad("leaves the index's folder ('..'); shards must lie in it");
    if (!shard.ends_with(".safetensors")) bad("is not a .safetensors file (only safetensors shards are read)");
  }

  // The *.safetensors files of the folder, by name.
  std::vector<std::string> folder_shards() const {
    std::vector<std::string> names;
    std::error_code ec;
    for (fs::directory_iterator it(folder_.empty() ? "." : folder_, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (!name.ends_with(".safetensors")) continue;
      std::error_code dir_ec;
      if (it->is_directory(dir_ec)) continue;
      names.push_back(name);
    }
    if (ec) fail("cannot list the folder: " + ec.message());
    std::sort(names.begin(), names.end());
    return names;
  }

  // No index: every *.safetensors file of the folder, in name order; a name in two of them is an error.
  void open_folder() {
    const std::vector<std::string> names = folder_shards();
    if (names.empty())
      fail("is a folder with no .safetensors files and no *.safetensors.index.json (a folder opens as a sharded "
           "safetensors model)");
    std::unordered_map<std::string, std::size_t> first;  // tensor name -> shard
    for (const std::string& name : names) {
      const std::size_t s = shards_.size();
      shards_.push_back({name, shard_path(name)});
      const std::shared_ptr<const TensorFile> f = open_shard(s);
      for (const std::string& e : f->skipped()) skipped_.push_back(printable(name) + ": " + e);
      for (std::size_t j = 0; j < f->tensors().size(); ++j) {
        const std::string& n = f->tensors()[j].name;
        const auto [it, fresh] = first.emplace(n, s);
        if (!fresh)
          fail(printable(n) + ": in two shards, '" + printable(shards_[it->second].name) + "' and '" +
               printable(name) + "'");
        tensors_.push_back(f->tensors()[j]);
        where_.push_back({s, j});
      }
    }
  }

  // Opens shard `s` and keeps it among the open ones.
  std::shared_ptr<const TensorFile> open_shard(std::size_t s) const {
    std::shared_ptr<const TensorFile> f = open_safetensors_file(shards_[s].path);
    std::lock_guard lock(mutex_);
    for (const auto& [i, g] : open_)
      if (i == s) return g;  // another thread was first
    open_.insert(open_.begin(), {s, f});
    if (open_.size() > kOpenShards) open_.pop_back();
    return f;
  }

  // Shard `s`, open, for tensor `index`: reopened if it was closed, and then checked to hold the same
  // tensor as at open (a shard rewritten since gives an IoError, not another tensor's values).
  std::shared_ptr<const TensorFile> shard_file(std::size_t s, std::size_t index) const {
    {
      std::lock_guard lock(mutex_);
      for (std::size_t k = 0; k < open_.size(); ++k)
        if (open_[k].first == s) {
          std::rotate(open_.begin(), open_.begin() + k, open_.begin() + k + 1);  // most recent first
          return open_.front().second;
        }
    }
    std::shared_ptr<const TensorFile> f = open_shard(s);
    const TensorInfo& want = tensors_[index];
    const std::size_t j = where_[index].local;
    if (j >= f->tensors().size() || f->tensors()[j].name != want.name || f->tensors()[j].dtype != want.dtype ||
        f->tensors()[j].shape != want.shape)
      throw IoError(shards_[s].path + ": " + printable(want.name) +
                    ": the shard changed since the model was opened (the tensor is no longer where it was)");
    return f;
  }

  std::string folder_;
  std::vector<Shard> shards_;
  std::vector<Where> where_;  // per tensor
  mutable std::mutex mutex_;
  mutable std::vector<std::pair<std::size_t, std::shared_ptr<const TensorFile>>> open_;  // most recent first
};

bool is_directory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

std::unique_ptr<TensorFile> open_sharded_model(const std::string& path) {
  if (!is_directory(path)) {
    std::string folder = fs::path(path).parent_path().string();
    return std::make_unique<ShardedModel>(path, folder, path, false);
  }
  // A folder: its index if it has one (model.safetensors.index.json first), else its shards.
  std::vector<std::string> indexes;
  std::error_code ec;
  for (fs::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.ends_with(".safetensors.index.json")) indexes.push_back(name);
  }
  if (ec) throw IoError(path + ": cannot list the folder: " + ec.message());
  std::sort(indexes.begin(), indexes.end());
  std::string index;
  if (std::find(indexes.begin(), indexes.end(), "model.safetensors.index.json") != indexes.end())
    index = "model.safetensors.index.json";
  else if (indexes.size() == 1)
    index = indexes.front();
  else if (indexes.size() > 1)
    throw IoError(path + ": holds " + std::to_string(indexes.size()) + " sharded-model indexes ('" +
                  printable(indexes[0]) + "', '" + printable(indexes[1]) + "'" + (indexes.size() > 2 ? ", ..." : "") +
                  "); open one of them");
  return std::make_unique<ShardedModel>(path, path, index.empty() ? "" : (fs::path(path) / index).string(), true);
}

}  // namespace qs
