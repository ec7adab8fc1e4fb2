// .npz reader (numpy's np.savez / np.savez_compressed): a zip archive read with libzip, whose members
// ending in ".npy" are the tensors (named without ".npy", listed in archive order). Opening reads only
// each member's .npy header (its first few KB); read() decompresses one member into its own buffer.
// libzip reads the file through a pread source (never a memory map), so a file that shrinks while open
// gives an IoError ("changed size while reading"), not SIGBUS. A zip in torch.save's layout
// (`<name>/data.pkl` and no .npy member) is refused as "a PyTorch checkpoint", not listed as empty.
// Exercise: tests/tst_tensorfile.cpp, tests/fuzz/fuzz_npz.cpp.
#include "util/printable.h"
#include "io/npy.h"
#include "io/tensor_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <string_view>

#include "io/zip_reader.h"

namespace qs {

namespace {

constexpr std::size_t kHeadBytes = 4096;          // enough for any header numpy writes by default
constexpr std::size_t kMaxNpyHeader = 1u << 20;   // numpy itself refuses headers above 10,000 bytes
// Deflate cannot expand more than ~1032:1, so a larger claimed size is a lie about the member and
// must not size an allocation.
constexpr uint64_t kMaxDeflateRatio = 1032;


using zipio::ZipFilePtr;
using zipio::ZipPtr;

struct Member {
  zip_uint64_t index = 0;
  std::string label;         // "<file>: <member>", the prefix of this member's errors
  uint64_t size = 0;         // uncompressed
  std::size_t data_offset = 0;
};

class NpzFile final : public TensorFile {
 public:
  explicit NpzFile(std::shared_ptr<const RandomAccessFile> file) : file_(std::move(file)) {
    path_ = file_->path();
    kind_ = "npz";
    try {
      ZipPtr za = open_archive();
      list(za.get());
      release(std::move(za));
    } catch (const IoError&) {
      file_->check_unchanged();  // a read error because the file shrank says so
      throw;
    }
  }

  TensorBytes read(std::size_t index) const override {
    if (index >= members_.size())
      throw IoError(path_ + ": no tensor #" + std::to_string(index) + " (the file has " +
                    std::to_string(members_.size()) + ")");
    try {
      return read_member(index);
    } catch (const IoError&) {
      file_->check_unchanged();
      throw;
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw IoError(path_ + ": " + what); }

  TensorBytes read_member(std::size_t index) const {
    const Member& m = members_[index];
    const std::size_t nbytes = tensors_[index].nbytes();  // == m.size - m.data_offset, checked at open
    ZipPtr za = acquire();
    // Not zero-filled: a member that claims more than it holds touches only the pages it fills.
    std::shared_ptr<uint8_t[]> buf(new uint8_t[std::max<std::size_t>(nbytes, 1)]);
    {
      ZipFilePtr f = open_member(za.get(), m);
      // Skip the header, then read the data, then make libzip reach the end of the stream: only
      // there does it compare the CRC and the size with the directory's.
      uint8_t scratch[4096];
      std::size_t skip = m.data_offset;
      while (skip > 0) {
        const std::size_t got = read_some(f.get(), m, scratch, std::min(skip, sizeof scratch));
        if (got == 0) throw IoError(m.label + ": member ends inside its .npy header");
        skip -= got;
      }
      std::size_t have = 0;
      while (have < nbytes) {
        const std::size_t got = read_some(f.get(), m, buf.get() + have, nbytes - have);
        if (got == 0)
          throw IoError(m.label + ": member ends after " + std::to_string(m.data_offset + have) + " of " +
                        std::to_string(m.size) + " bytes (truncated or corrupt)");
        have += got;
      }
      if (read_some(f.get(), m, scratch, 1) != 0)
        throw IoError(m.label + ": member holds more than the " + std::to_string(m.size) + " bytes its directory entry says");
    }
    release(std::move(za));
    TensorBytes b;
    b.data = buf.get();
    b.size = nbytes;
    b.owner = std::shared_ptr<const void>(buf, buf.get());
    return b;
  }

  // Every archive handle reads the same file through its own source; handles are pooled so that reads
  // from several threads each decompress with their own (a zip_t is not thread-safe).
  ZipPtr open_archive() const { return zipio::open_archive(file_, ".npz"); }

  ZipPtr acquire() const {
    {
      std::lock_guard lock(pool_mutex_);
      if (!pool_.empty()) {
        ZipPtr za = std::move(pool_.back());
        pool_.pop_back();
        return za;
      }
    }
    return open_archive();
  }

  void release(ZipPtr za) const {
    std::lock_guard lock(pool_mutex_);
    pool_.push_back(std::move(za));
  }

  ZipFilePtr open_member(zip_t* za, const Member& m) const {
    zip_file_t* f = zip_fopen_index(za, m.index, 0);
    if (!f) throw IoError(m.label + ": cannot open member: " + printable(zip_strerror(za)));
    return ZipFilePtr(f);
  }

  static std::size_t read_some(zip_file_t* f, const Member& m, uint8_t* dst, std::size_t n) {
    const zip_int64_t got = zip_fread(f, dst, n);
    if (got < 0) throw IoError(m.label + ": cannot decompress: " + printable(zip_file_strerror(f)));
    return static_cast<std::size_t>(got);
  }

  void list(zip_t* za) {
    const zip_int64_t count = zip_get_num_entries(za, 0);
    std::set<std::string> names;
    bool torch_pickle = false;  // a `<name>/data.pkl` member: torch.save's zip layout
    for (zip_int64_t i = 0; i < count; ++i) {
      zip_stat_t st;
      zip_stat_init(&st);
      if (zip_stat_index(za, static_cast<zip_uint64_t>(i), 0, &st) != 0)
        fail("cannot read zip entry #" + std::to_string(i) + ": " + printable(zip_strerror(za)));
      if (!(st.valid & ZIP_STAT_NAME) || !st.name) continue;
      const std::string_view member = st.name;
      if (member == "data.pkl" ||
          (member.ends_with("/data.pkl") && member.find('/') == member.size() - std::string_view("/data.pkl").size()))
        torch_pickle = true;
      if (member.size() <= 4 || !member.ends_with(".npy")) {  // numpy only writes .npy members
        if (!member.ends_with("/"))  // folders are not entries of their own
          skipped_.push_back(printable(member) + ": not an .npy member");
        continue;
      }
      Member m;
      m.index = static_cast<zip_uint64_t>(i);
      m.label = path_ + ": " + printable(member);
      check_entry(st, m.label);
      m.size = st.size;

      TensorInfo info;
      info.name = std::string(member.substr(0, member.size() - 4));
      if (!names.insert(info.name).second) throw IoError(m.label + ": the archive holds this member twice");
      const NpyHeader h = read_header(za, m);
      info.dtype = h.dtype;
      info.shape = h.shape;
      m.data_offset = h.data_offset;
      members_.push_back(std::move(m));
      tensors_.push_back(std::move(info));
    }
    // torch.save writes a zip of `<name>/data.pkl`, `<name>/data/0`, ..., `<name>/byteorder`,
    // `<name>/version`; as an .npz it would list nothing. Say what it is instead.
    if (torch_pickle && members_.empty())
      fail("a PyTorch checkpoint (torch.save zip), not an .npz; PyTorch files are not read yet");
  }

  void check_entry(const zip_stat_t& st, const std::string& label) const {
    auto mfail = [&](const std::string& what) { throw IoError(label + ": " + what); };
    const unsigned need = ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD;
    if ((st.valid & need) != need) mfail("zip entry lacks its sizes or compression method");
    if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) && st.encryption_method != ZIP_EM_NONE)
      mfail("member is encrypted (not supported)");
    if (st.comp_size > file_->size())
      mfail("compressed size " + std::to_string(st.comp_size) + " is larger than the file (" +
            std::to_string(file_->size()) + " bytes)");
    if (st.comp_method == ZIP_CM_STORE) {
      if (st.size != st.comp_size)
        mfail("stored member claims " + std::to_string(st.size) + " bytes but holds " + std::to_string(st.comp_size));
    } else if (st.comp_method == ZIP_CM_DEFLATE) {
      if (st.size / kMaxDeflateRatio > st.comp_size + 1)
        mfail("claims " + std::to_string(st.size) + " bytes from " + std::to_string(st.comp_size) +
              " deflated bytes, more than deflate can expand");
    } else {
      mfail("compression method " + std::to_string(st.comp_method) +
            " is not supported (numpy writes stored or deflated members)");
    }
  }

  // Reads the first bytes of the member, enough for its .npy header, and validates that header
  // against the member's uncompressed size.
  NpyHeader read_header(zip_t* za, const Member& m) const {
    std::vector<uint8_t> head(static_cast<std::size_t>(std::min<uint64_t>(m.size, kHeadBytes)));
    ZipFilePtr f = open_member(za, m);
    std::size_t got = 0;
    auto fill = [&](std::size_t want) {
      while (got < want) {
        const std::size_t n = read_some(f.get(), m, head.data() + got, want - got);
        if (n == 0)
          throw IoError(m.label + ": member ends after " + std::to_string(got) + " of " + std::to_string(m.size) +
                        " bytes (truncated or corrupt)");
        got += n;
      }
    };
    fill(head.size());
    // A header longer than the first read (numpy's v2/v3 allow up to 4 GB) is read on, up to a cap.
    if (got >= 12 && std::memcmp(head.data(), "\x93NUMPY", 6) == 0) {
      const std::size_t len_bytes = head[6] == 1 ? 2 : 4;
      std::size_t header_len = 0;
      for (std::size_t i = len_bytes; i-- > 0;) header_len = (header_len << 8) | head[8 + i];
      const std::size_t needed = 8 + len_bytes + header_len;
      if (needed > got && needed <= m.size) {
        if (needed > kMaxNpyHeader)
          throw IoError(m.label + ": .npy header of " + std::to_string(header_len) + " bytes is above the " +
                        std::to_string(kMaxNpyHeader) + "-byte limit");
        head.resize(needed);
        fill(needed);
      }
    }
    return parse_npy_header(head.data(), got, m.size, m.label);
  }

  std::shared_ptr<const RandomAccessFile> file_;
  std::vector<Member> members_;
  mutable std::mutex pool_mutex_;
  mutable std::vector<ZipPtr> pool_;
};

}  // namespace

std::unique_ptr<TensorFile> open_npz_file(const std::string& path) {
  return std::make_unique<NpzFile>(RandomAccessFile::open(path));
}

}  // namespace qs
