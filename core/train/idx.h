// IDX files (the MNIST / Fashion-MNIST container), plain or gzipped: a 4-byte magic (0, 0, type, rank),
// rank big-endian uint32 dimensions, then the elements big-endian in C order. Exercise: tests/tst_idx.cpp.
//
//   qs::IdxArray a = qs::read_idx("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz");
//   // a.type == qs::IdxType::U8, a.dims == {10000}, a.data.size() == 10000
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace qs {

// The element types the format defines (the magic's third byte).
enum class IdxType : uint8_t { U8 = 0x08, I8 = 0x09, I16 = 0x0B, I32 = 0x0C, F32 = 0x0D, F64 = 0x0E };
const char* to_string(IdxType t);   // "ubyte", "byte", "short", "int", "float", "double"
std::size_t idx_type_size(IdxType t);

struct IdxArray {
  IdxType type = IdxType::U8;
  std::vector<uint32_t> dims;   // rank 1..4, each > 0
  std::vector<uint8_t> data;    // the elements as stored (big-endian for multi-byte types)
  std::size_t numel() const;
};

// Parses IDX bytes (gzip is detected by its magic 1f 8b). Checks: the two zero magic bytes, a known
// type, rank 1..4, non-zero dimensions, and that the data is exactly numel * element size long (a
// truncated or over-long file is refused). Throws qs::IoError "<name>: <what is wrong>".
// Gzipped input needs zlib in the build (QS_HAVE_ZLIB); without it the error says what to install.
IdxArray parse_idx(const uint8_t* bytes, std::size_t size, const std::string& name = "idx");
IdxArray read_idx(const std::string& path);

// Writes an IDX file atomically, gzipped when `gzip` (needs zlib). `data` holds numel * element size
// bytes in the IDX (big-endian) byte order. Throws IoError.
void write_idx(const std::string& path, IdxType type, const std::vector<uint32_t>& dims,
               const std::vector<uint8_t>& data, bool gzip);

// Whether this build can read and write gzipped IDX files.
bool idx_gzip_available();
// A gzip stream of the bytes (for fixtures and exports); throws IoError without zlib.
std::vector<uint8_t> gzip_compress(const uint8_t* bytes, std::size_t size);

}  // namespace qs
