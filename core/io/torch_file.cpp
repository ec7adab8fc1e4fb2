// PyTorch checkpoints written by torch.save (the zip layout of PyTorch >= 1.6): `<archive>/data.pkl` (the
// pickled object), `<archive>/data/<key>` (one member per storage, raw little-endian bytes), `<archive>/byteorder`.
// data.pkl runs through the restricted unpickler (io/pickle_min.h: nothing is imported or called); a state
// dict (nested dicts flatten to dotted names, nn.Parameters are their data) lists one tensor per entry, the
// rest (numbers, strings, optimizer state that is not a tensor) in skipped(). A tensor is a view: storage
// offset, size and stride are honoured (two views of one storage read their own elements; a transpose is
// gathered), and the view must lie inside its storage. Storages are read with libzip through the pread
// source (io/zip_reader.h), stored members by seeking to the view's first byte. A legacy (pre-1.6,
// non-zip) torch.save file is named as such with what to do. Exercise: tests/core/tst_torch.cpp,
// tests/fuzz/fuzz_torch.cpp, `quantscope-cli info model.pt`.
#include "io/pickle_min.h"
#include "io/tensor_file.h"
#include "io/zip_reader.h"
#include "util/printable.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <mutex>

namespace qs {

namespace {

using zipio::ZipFilePtr;
using zipio::ZipPtr;

constexpr uint64_t kMaxPickle = uint64_t(1) << 30;

struct Entry {
  zip_uint64_t member = 0;        // the storage's zip entry
  bool stored = true;             // uncompressed (torch.save writes stored members): seekable
  uint64_t member_size = 0;
  std::size_t item = 1;           // bytes per element
  uint64_t offset = 0;            // storage offset, elements
  std::vector<int64_t> size, stride;
  bool contiguous = true;
  uint64_t span = 0;              // elements from offset to the last one the view touches, + 1 (0 if empty)
};

class TorchFile final : public TensorFile {
 public:
  explicit TorchFile(std::shared_ptr<const RandomAccessFile> file) : file_(std::move(file)) {
    path_ = file_->path();
    kind_ = "pytorch";
    try {
      ZipPtr za = zipio::open_archive(file_, "PyTorch checkpoint");
      parse(za.get());
      release(std::move(za));
    } catch (const IoError&) {
      file_->check_unchanged();
      throw;
    }
  }

  TensorBytes read(std::size_t index) const override {
    if (index >= entries_.size())
      throw IoError(path_ + ": no tensor #" + std::to_string(index) + " (the file has " + std::to_string(entries_.size()) + ")");
    try {
      return read_view(index);
    } catch (const IoError&) {
      file_->check_unchanged();
      throw;
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw IoError(path_ + ": " + what); }

  ZipPtr acquire() const {
    {
      std::lock_guard lock(pool_mutex_);
      if (!pool_.empty()) {
        ZipPtr za = std::move(pool_.back());
        pool_.pop_back();
        return za;
      }
    }
    return zipio::open_archive(file_, "PyTorch checkpoint");
  }
  void release(ZipPtr za) const {
    std::lock_guard lock(pool_mutex_);
    pool_.push_back(std::move(za));
  }

  // `n` bytes of a member from byte `from` into dst.
  void read_member(zip_t* za, zip_uint64_t index, bool stored, uint64_t from, uint8_t* dst, std::size_t n,
                   const std::string& label) const {
    zip_file_t* raw = zip_fopen_index(za, index, 0);
    if (!raw) throw IoError(label + ": cannot open the member: " + printable(zip_strerror(za)));
    ZipFilePtr f(raw);
    auto read_some = [&](uint8_t* p, std::size_t k) {
      const zip_int64_t got = zip_fread(f.get(), p, k);
      if (got < 0) throw IoError(label + ": cannot read the member: " + printable(zip_file_strerror(f.get())));
      if (got == 0) throw IoError(label + ": the member ends early (truncated or corrupt)");
      return std::size_t(got);
    };
    if (from > 0) {
      if (stored && zip_fseek(f.get(), zip_int64_t(from), SEEK_SET) == 0) {
      } else {
        uint8_t scratch[4096];
        uint64_t left = from;
        while (left > 0) left -= read_some(scratch, std::size_t(std::min<uint64_t>(left, sizeof scratch)));
      }
    }
    std::size_t have = 0;
    while (have < n) have += read_some(dst + have, n - have);
  }

  TensorBytes read_view(std::size_t index) const {
    const Entry& e = entries_[index];
    const TensorInfo& t = tensors_[index];
    const std::size_t n = t.numel(), nbytes = n * e.item;
    std::shared_ptr<uint8_t[]> buf(new uint8_t[std::max<std::size_t>(nbytes, 1)]);
    const std::string label = path_ + ": " + printable(t.name);
    if (n > 0) {
      ZipPtr za = acquire();
      if (e.contiguous) {
        read_member(za.get(), e.member, e.stored, e.offset * e.item, buf.get(), nbytes, label);
      } else {
        // The span the view touches, then a gather in C order.
        std::vector<uint8_t> span(std::size_t(e.span) * e.item);
        read_member(za.get(), e.member, e.stored, e.offset * e.item, span.data(), span.size(), label);
        const std::size_t rank = e.size.size();
        std::vector<int64_t> idx(rank, 0);
        for (std::size_t k = 0; k < n; ++k) {
          uint64_t at = 0;
          for (std::size_t d = 0; d < rank; ++d) at += uint64_t(idx[d]) * uint64_t(e.stride[d]);
          std::memcpy(buf.get() + k * e.item, span.data() + at * e.item, e.item);
          for (std::size_t d = rank; d-- > 0;) {
            if (++idx[d] < e.size[d]) break;
            idx[d] = 0;
          }
        }
      }
      release(std::move(za));
    }
    TensorBytes b;
    b.data = buf.get();
    b.size = nbytes;
    b.owner = std::shared_ptr<const void>(buf, buf.get());
    return b;
  }

  void parse(zip_t* za) {
    const zip_int64_t count = zip_get_num_entries(za, 0);
    std::string prefix;
    zip_uint64_t pkl = 0;
    int pkls = 0;
    std::vector<std::pair<std::string, zip_stat_t>> members;
    for (zip_int64_t i = 0; i < count; ++i) {
      zip_stat_t st;
      zip_stat_init(&st);
      if (zip_stat_index(za, zip_uint64_t(i), 0, &st) != 0 || !(st.valid & ZIP_STAT_NAME) || !st.name)
        fail("cannot read zip entry #" + std::to_string(i) + ": " + printable(zip_strerror(za)));
      const std::string name = st.name;
      const bool top = name == "data.pkl";
      const std::size_t slash = name.find('/');
      if (top || (slash != std::string::npos && name.substr(slash) == "/data.pkl")) {
        prefix = top ? "" : name.substr(0, slash + 1);
        pkl = zip_uint64_t(i);
        ++pkls;
      }
      members.emplace_back(name, st);
    }
    if (pkls == 0) fail("a zip without a data.pkl member: not a torch.save checkpoint");
    if (pkls > 1) fail("a zip with " + std::to_string(pkls) + " data.pkl members: not one torch.save checkpoint");
    auto find = [&](const std::string& name) -> const std::pair<std::string, zip_stat_t>* {
      for (const auto& m : members)
        if (m.first == name) return &m;
      return nullptr;
    };
    if (const auto* bo = find(prefix + "byteorder")) {
      if (bo->second.size > 16) fail("byteorder member of " + std::to_string(bo->second.size) + " bytes");
      std::string order(std::size_t(bo->second.size), '\0');
      read_member(za, zip_uint64_t(&*bo - &members[0]), bo->second.comp_method == ZIP_CM_STORE, 0,
                  reinterpret_cast<uint8_t*>(order.data()), order.size(), path_ + ": byteorder");
      if (order == "big") fail("a big-endian checkpoint (byteorder 'big'); QuantScope reads little-endian ones");
      if (order != "little") fail("byteorder '" + printable(order) + "' is neither little nor big");
    }
    const zip_stat_t& ps = members[std::size_t(pkl)].second;
    if (!(ps.valid & ZIP_STAT_SIZE) || ps.size > kMaxPickle || ps.size > file_->size() * 1032 + 1024)
      fail("data.pkl claims " + std::to_string(ps.size) + " bytes, more than the file can hold");
    std::vector<uint8_t> pickle(std::size_t(ps.size));
    read_member(za, pkl, ps.comp_method == ZIP_CM_STORE, 0, pickle.data(), pickle.size(), path_ + ": data.pkl");
    const pickle::Ref root = pickle::load(pickle.data(), pickle.size(), path_ + ": data.pkl");

    std::vector<std::pair<std::string, pickle::Ref>> tensors;
    walk(root, "", tensors, 0);
    for (const auto& [name, t] : tensors) add_tensor(name, t, prefix, members, find);
  }

  void walk(const pickle::Ref& v, const std::string& name, std::vector<std::pair<std::string, pickle::Ref>>& out, int depth) {
    using pickle::Kind;
    if (v->kind == Kind::Tensor) {
      out.emplace_back(name.empty() ? "tensor" : name, v);
      return;
    }
    if (v->kind == Kind::Dict && depth < 64) {
      for (const auto& [k, val] : v->dict) {
        std::string key;
        if (k->kind == Kind::Str) key = k->s;
        else if (k->kind == Kind::Int) key = std::to_string(k->i);
        else {
          skipped_.push_back(printable(name) + "[" + pickle::to_string(k->kind) + " key]: not a tensor name, not read");
          continue;
        }
        walk(val, name.empty() ? key : name + "." + key, out, depth + 1);
      }
      return;
    }
    if (name.empty()) fail("data.pkl holds a " + std::string(pickle::to_string(v->kind)) + ", not a state dict of tensors");
    skipped_.push_back(printable(name) + ": a " + pickle::to_string(v->kind) + ", not a tensor");
  }

  template <class Find>
  void add_tensor(const std::string& name, const pickle::Ref& t, const std::string& prefix,
                  const std::vector<std::pair<std::string, zip_stat_t>>& members, const Find& find) {
    const std::string shown = printable(name);
    if (!t->unsupported.empty()) {
      skipped_.push_back(shown + ": dtype " + t->unsupported + " is not analysed, not read");
      return;
    }
    for (const auto& [n, _] : entries_names_)
      if (n == name) fail("the tensor name '" + shown + "' appears twice");
    const pickle::Object& s = *t->storage;
    const auto* m = find(prefix + "data/" + s.s);
    if (!m) fail(shown + ": its storage member '" + printable(prefix + "data/" + s.s) + "' is missing");
    Entry e;
    e.member = zip_uint64_t(m - &members[0]);
    e.stored = m->second.comp_method == ZIP_CM_STORE;
    e.member_size = m->second.size;
    e.item = dtype_size(t->dtype);
    e.offset = uint64_t(t->offset);
    e.size = t->size;
    e.stride = t->stride;
    // Storage elements: typed storages count elements of their own type (which must be the tensor's),
    // untyped ones bytes.
    uint64_t elems = 0;
    if (s.untyped) {
      elems = s.numel / e.item;
    } else {
      if (s.dtype != t->dtype) fail(shown + ": a " + to_string(t->dtype) + " tensor on a " + to_string(s.dtype) + " storage");
      elems = s.numel;
    }
    if (elems > std::numeric_limits<uint64_t>::max() / e.item || elems * e.item > e.member_size)
      fail(shown + ": its storage claims " + std::to_string(s.numel) + (s.untyped ? " bytes" : " elements") +
           " but its member holds " + std::to_string(e.member_size) + " bytes");
    TensorInfo info;
    info.name = name;
    info.dtype = t->dtype;
    uint64_t numel = 1, last = 0;
    int64_t expect = 1;
    for (std::size_t d = e.size.size(); d-- > 0;) {
      const uint64_t sz = uint64_t(e.size[d]);
      if (sz && numel > std::numeric_limits<uint64_t>::max() / sz) fail(shown + ": its size overflows 64 bits");
      numel *= sz;
      if (sz > 1 && e.stride[d] != expect) e.contiguous = false;
      expect *= e.size[d] ? e.size[d] : 1;
      if (sz) {
        const uint64_t reach = (sz - 1) * uint64_t(e.stride[d]);
        if (e.stride[d] && reach / uint64_t(e.stride[d]) != sz - 1) fail(shown + ": its strides overflow 64 bits");
        last += reach;
      }
    }
    e.span = numel ? last + 1 : 0;
    if (numel && (e.offset > elems || e.span > elems - e.offset))
      fail(shown + ": the view (offset " + std::to_string(e.offset) + ", " + std::to_string(e.span) +
           " elements) runs past its storage of " + std::to_string(elems) + " elements");
    if (e.contiguous) e.span = numel;
    for (int64_t d : e.size) info.shape.push_back(d);
    entries_names_.emplace_back(name, 0);
    entries_.push_back(std::move(e));
    tensors_.push_back(std::move(info));
  }

  std::shared_ptr<const RandomAccessFile> file_;
  std::vector<Entry> entries_;
  std::vector<std::pair<std::string, int>> entries_names_;
  mutable std::mutex pool_mutex_;
  mutable std::vector<ZipPtr> pool_;
};

}  // namespace

std::unique_ptr<TensorFile> open_torch_file(const std::string& path) {
  return std::make_unique<TorchFile>(RandomAccessFile::open(path));
}

// A zip is a torch.save checkpoint when it has a data.pkl member (at the top or one folder down), else an .npz.
std::unique_ptr<TensorFile> open_zip_tensor_file(const std::string& path) {
  const auto file = RandomAccessFile::open(path);
  bool torch = false;
  {
    ZipPtr za = zipio::open_archive(file, ".npz or PyTorch");
    const zip_int64_t count = zip_get_num_entries(za.get(), 0);
    for (zip_int64_t i = 0; i < count && !torch; ++i) {
      const char* name = zip_get_name(za.get(), zip_uint64_t(i), 0);
      if (!name) continue;
      const std::string n = name;
      const std::size_t slash = n.find('/');
      torch = n == "data.pkl" || (slash != std::string::npos && n.substr(slash) == "/data.pkl");
    }
  }
  return torch ? open_torch_file(path) : open_npz_file(path);
}

}  // namespace qs
