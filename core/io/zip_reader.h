// Zip archives read with libzip through a pread source over a RandomAccessFile (never a memory map, so a
// file that shrinks while open gives an IoError, not SIGBUS): shared by the .npz reader and the PyTorch
// checkpoint reader. Each archive handle keeps its own position; readers pool handles for threads.
//   qs::zipio::ZipPtr za = qs::zipio::open_archive(file, ".npz");   // throws IoError naming the file
#pragma once

#include <memory>
#include <string>

#include <zip.h>

#include "io/tensor_file.h"

namespace qs::zipio {

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
using ZipPtr = std::unique_ptr<zip_t, ZipCloser>;

struct ZipFileCloser {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};
using ZipFilePtr = std::unique_ptr<zip_file_t, ZipFileCloser>;

// Opens `file` as a zip archive (consistency-checked: ZIP_CHECKCONS). `kind` names what the file should
// be in the messages: "<path>: not a <kind> file (not a zip archive)", "... two members have the same name".
ZipPtr open_archive(const std::shared_ptr<const RandomAccessFile>& file, const std::string& kind);

}  // namespace qs::zipio
