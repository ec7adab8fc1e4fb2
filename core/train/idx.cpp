// IDX reader/writer: the header is validated before any data is trusted, and gzipped input is inflated
// as a stream that stops as soon as it exceeds what the header announces (no decompression bombs), into
// a buffer that grows with the bytes inflated, not with the header's claim.
#include "train/idx.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "io/atomic_file.h"
#include "io/dtype.h"

#if defined(QS_HAVE_ZLIB)
#include <zlib.h>
#endif

namespace qs {

namespace {

constexpr int kMaxRank = 4;
// Far beyond any IDX data set (Fashion-MNIST train images are 47 MB), small enough to allocate.
constexpr uint64_t kMaxDataBytes = uint64_t(1) << 32;

[[noreturn]] void fail(const std::string& name, const std::string& what) { throw IoError(name + ": " + what); }

bool known_type(uint8_t t) {
  switch (t) {
    case 0x08: case 0x09: case 0x0B: case 0x0C: case 0x0D: case 0x0E: return true;
    default: return false;
  }
}

uint32_t be32(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

std::string hex2(uint8_t b) {
  static const char* h = "0123456789abcdef";
  std::string s = "0x";
  s += h[b >> 4];
  s += h[b & 15];
  return s;
}

struct Header {
  IdxType type;
  std::vector<uint32_t> dims;
  std::size_t header_bytes;
  uint64_t data_bytes;
};

// Needs at least 4 bytes; returns false when more bytes are needed for the dimensions.
bool parse_header(const uint8_t* b, std::size_t n, const std::string& name, Header& h) {
  if (n < 4) fail(name, "too short for an IDX header (" + std::to_string(n) + " bytes)");
  if (b[0] != 0 || b[1] != 0)
    fail(name, "not an IDX file (magic starts " + hex2(b[0]) + " " + hex2(b[1]) + ", expected 0x00 0x00)");
  if (!known_type(b[2]))
    fail(name, "unknown IDX element type " + hex2(b[2]) + " (0x08 ubyte, 0x09 byte, 0x0b short, 0x0c int, 0x0d float, 0x0e double)");
  const int rank = b[3];
  if (rank < 1 || rank > kMaxRank)
    fail(name, "IDX rank " + std::to_string(rank) + " is outside 1.." + std::to_string(kMaxRank));
  h.type = static_cast<IdxType>(b[2]);
  h.header_bytes = 4 + 4 * std::size_t(rank);
  if (n < h.header_bytes) return false;
  h.dims.clear();
  uint64_t numel = 1;
  for (int i = 0; i < rank; ++i) {
    const uint32_t d = be32(b + 4 + 4 * i);
    if (d == 0) fail(name, "dimension " + std::to_string(i) + " is 0");
    h.dims.push_back(d);
    numel *= d;
    if (numel > kMaxDataBytes) fail(name, "dimensions announce more than 4 GiB of data");
  }
  h.data_bytes = numel * idx_type_size(h.type);
  if (h.data_bytes > kMaxDataBytes) fail(name, "dimensions announce more than 4 GiB of data");
  return true;
}

std::string dims_text(const std::vector<uint32_t>& dims) {
  std::string s;
  for (uint32_t d : dims) {
    if (!s.empty()) s += 'x';
    s += std::to_string(d);
  }
  return s;
}

IdxArray from_plain(const uint8_t* b, std::size_t n, const std::string& name) {
  Header h;
  if (!parse_header(b, n, name, h)) fail(name, "truncated IDX header (" + std::to_string(n) + " bytes)");
  const uint64_t have = n - h.header_bytes;
  if (have != h.data_bytes)
    fail(name, std::string(have < h.data_bytes ? "truncated" : "longer than its header says") + ": " +
                   dims_text(h.dims) + " " + to_string(h.type) + " needs " + std::to_string(h.data_bytes) +
                   " data bytes, the file has " + std::to_string(have));
  IdxArray a;
  a.type = h.type;
  a.dims = h.dims;
  a.data.assign(b + h.header_bytes, b + n);
  return a;
}

#if defined(QS_HAVE_ZLIB)
IdxArray from_gzip(const uint8_t* b, std::size_t n, const std::string& name) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) fail(name, "zlib initialisation failed");
  struct Guard {
    z_stream* z;
    ~Guard() { inflateEnd(z); }
  } guard{&zs};
  zs.next_in = const_cast<Bytef*>(b);
  zs.avail_in = static_cast<uInt>(std::min<std::size_t>(n, std::numeric_limits<uInt>::max()));
  std::size_t fed = zs.avail_in;

  // Inflate into `out` until it holds `want` bytes; returns true at the end of the gzip stream.
  std::vector<uint8_t> out;
  bool ended = false;
  auto inflate_to = [&](std::size_t want) {
    while (out.size() < want && !ended) {
      const std::size_t before = out.size();
      // Grow geometrically, not to `want` at once: `want` is the header's claim, and memory must follow
      // the bytes actually inflated (a 106-byte file announcing 4 GiB otherwise zero-fills 4 GiB).
      const std::size_t step = std::max<std::size_t>(std::size_t(1) << 20, before);
      const std::size_t chunk = std::min<std::size_t>({want - before, step, std::numeric_limits<uInt>::max()});
      out.resize(before + chunk);
      zs.next_out = out.data() + before;
      zs.avail_out = static_cast<uInt>(chunk);
      const int rc = inflate(&zs, Z_NO_FLUSH);
      out.resize(before + chunk - zs.avail_out);
      if (zs.avail_in == 0 && fed < n) {
        const std::size_t more = std::min<std::size_t>(n - fed, std::numeric_limits<uInt>::max());
        zs.next_in = const_cast<Bytef*>(b + fed);
        zs.avail_in = static_cast<uInt>(more);
        fed += more;
      }
      if (rc == Z_STREAM_END) {
        ended = true;
      } else if (rc == Z_BUF_ERROR && zs.avail_in == 0) {
        fail(name, "truncated gzip stream (" + std::to_string(out.size()) + " bytes inflated)");
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        fail(name, std::string("corrupt gzip data: ") + (zs.msg ? std::string(zs.msg) : "inflate error " + std::to_string(rc)));
      }
    }
  };

  inflate_to(4);
  Header h;
  if (out.size() < 4) fail(name, "too short for an IDX header (" + std::to_string(out.size()) + " bytes inflated)");
  if (!parse_header(out.data(), out.size(), name, h)) {
    inflate_to(4 + 4 * std::size_t(out[3]));
    if (!parse_header(out.data(), out.size(), name, h)) fail(name, "truncated IDX header");
  }
  const std::size_t total = h.header_bytes + static_cast<std::size_t>(h.data_bytes);
  inflate_to(total + 1);  // one byte more than announced tells an over-long file apart
  if (out.size() != total)
    fail(name, std::string(out.size() < total ? "truncated" : "longer than its header says") + ": " +
                   dims_text(h.dims) + " " + to_string(h.type) + " needs " + std::to_string(h.data_bytes) +
                   " data bytes" + (out.size() < total ? ", the stream has " + std::to_string(out.size() - h.header_bytes) : ""));
  if (!ended) {  // the stream must end here (a checksum error shows only at the end)
    uint8_t extra;
    zs.next_out = &extra;
    zs.avail_out = 1;
    const int rc = inflate(&zs, Z_FINISH);
    if (rc != Z_STREAM_END) {
      if (zs.avail_out == 0) fail(name, "longer than its header says");
      fail(name, std::string("corrupt gzip data: ") + (zs.msg ? zs.msg : "stream does not end"));
    }
  }
  IdxArray a;
  a.type = h.type;
  a.dims = h.dims;
  a.data.assign(out.begin() + std::ptrdiff_t(h.header_bytes), out.end());
  return a;
}
#endif

}  // namespace

const char* to_string(IdxType t) {
  switch (t) {
    case IdxType::U8: return "ubyte";
    case IdxType::I8: return "byte";
    case IdxType::I16: return "short";
    case IdxType::I32: return "int";
    case IdxType::F32: return "float";
    case IdxType::F64: return "double";
  }
  return "?";
}

std::size_t idx_type_size(IdxType t) {
  switch (t) {
    case IdxType::U8: case IdxType::I8: return 1;
    case IdxType::I16: return 2;
    case IdxType::I32: case IdxType::F32: return 4;
    case IdxType::F64: return 8;
  }
  return 1;
}

std::size_t IdxArray::numel() const {
  std::size_t n = 1;
  for (uint32_t d : dims) n *= d;
  return dims.empty() ? 0 : n;
}

bool idx_gzip_available() {
#if defined(QS_HAVE_ZLIB)
  return true;
#else
  return false;
#endif
}

IdxArray parse_idx(const uint8_t* bytes, std::size_t size, const std::string& name) {
  if (size >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) {
#if defined(QS_HAVE_ZLIB)
    return from_gzip(bytes, size, name);
#else
    fail(name, "gzipped IDX needs zlib: install zlib1g-dev and rebuild, or gunzip the file");
#endif
  }
  return from_plain(bytes, size, name);
}

IdxArray read_idx(const std::string& path) {
  // No valid IDX file, plain or gzipped, is much larger than its 4 GiB data limit; the cap also stops
  // a FIFO or /dev/zero from being read without end.
  constexpr std::size_t kMaxFileBytes = std::size_t(kMaxDataBytes + kMaxDataBytes / 64 + (1 << 20));
  const std::vector<uint8_t> bytes = read_file(path, kMaxFileBytes);
  return parse_idx(bytes.data(), bytes.size(), path);
}

void write_idx(const std::string& path, IdxType type, const std::vector<uint32_t>& dims,
               const std::vector<uint8_t>& data, bool gzip) {
  if (dims.empty() || dims.size() > kMaxRank) fail(path, "IDX rank must be 1.." + std::to_string(kMaxRank));
  uint64_t numel = 1;
  for (uint32_t d : dims) numel *= d;
  if (numel * idx_type_size(type) != data.size())
    fail(path, "IDX data is " + std::to_string(data.size()) + " bytes, dimensions need " +
                   std::to_string(numel * idx_type_size(type)));
  std::vector<uint8_t> raw{0, 0, static_cast<uint8_t>(type), static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) raw.push_back(static_cast<uint8_t>(d >> s));
  raw.insert(raw.end(), data.begin(), data.end());
  if (!gzip) return write_file_atomic(path, raw);
  write_file_atomic(path, gzip_compress(raw.data(), raw.size()));
}

std::vector<uint8_t> gzip_compress(const uint8_t* bytes, std::size_t size) {
#if defined(QS_HAVE_ZLIB)
  if (size > std::numeric_limits<uInt>::max()) throw IoError("gzip: input over 4 GiB");
  z_stream zs{};
  if (deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) throw IoError("gzip: zlib initialisation failed");
  std::vector<uint8_t> out(deflateBound(&zs, static_cast<uLong>(size)) + 64);
  zs.next_in = const_cast<Bytef*>(bytes);
  zs.avail_in = static_cast<uInt>(size);
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  const std::size_t produced = out.size() - zs.avail_out;
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw IoError("gzip: compression failed");
  out.resize(produced);
  return out;
#else
  (void)bytes;
  (void)size;
  throw IoError("gzip needs zlib: install zlib1g-dev and rebuild");
#endif
}

}  // namespace qs
