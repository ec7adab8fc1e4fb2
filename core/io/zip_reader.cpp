// Zip archives through a pread source, see zip_reader.h.
#include "io/zip_reader.h"

#include <algorithm>
#include <cerrno>

#include "util/printable.h"

namespace qs::zipio {

namespace {

// A libzip source that reads a RandomAccessFile with pread: each archive handle keeps its own position,
// so pooled handles read concurrently. Errors are reported the libzip way (no exception may cross it).
struct PreadSource {
  std::shared_ptr<const RandomAccessFile> file;
  uint64_t pos = 0;
  zip_error_t error;
};

zip_int64_t pread_source(void* state, void* data, zip_uint64_t len, zip_source_cmd_t cmd) {
  auto* s = static_cast<PreadSource*>(state);
  const uint64_t size = s->file->size();
  switch (cmd) {
    case ZIP_SOURCE_OPEN: s->pos = 0; return 0;
    case ZIP_SOURCE_READ: {
      const std::size_t n = static_cast<std::size_t>(std::min<uint64_t>(len, size - std::min(s->pos, size)));
      std::size_t done = 0;
      while (done < n) {
        const long got = s->file->pread_some(s->pos + done, static_cast<uint8_t*>(data) + done, n - done);
        if (got <= 0) {  // 0: the file is shorter than at open; the reader's catch says so
          zip_error_set(&s->error, ZIP_ER_READ, got < 0 ? errno : EIO);
          return -1;
        }
        done += static_cast<std::size_t>(got);
      }
      s->pos += done;
      return static_cast<zip_int64_t>(done);
    }
    case ZIP_SOURCE_CLOSE: return 0;
    case ZIP_SOURCE_STAT: {  // what libzip's own buffer source reports, less the mtime
      if (len < sizeof(zip_stat_t)) {
        zip_error_set(&s->error, ZIP_ER_INVAL, 0);
        return -1;
      }
      auto* st = static_cast<zip_stat_t*>(data);
      zip_stat_init(st);
      st->size = st->comp_size = size;
      st->comp_method = ZIP_CM_STORE;
      st->encryption_method = ZIP_EM_NONE;
      st->valid = ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD | ZIP_STAT_ENCRYPTION_METHOD;
      return sizeof(zip_stat_t);
    }
    case ZIP_SOURCE_ERROR: return zip_error_to_data(&s->error, data, len);
    case ZIP_SOURCE_FREE:
      zip_error_fini(&s->error);
      delete s;
      return 0;
    case ZIP_SOURCE_SEEK: {
      const zip_int64_t at = zip_source_seek_compute_offset(s->pos, size, data, len, &s->error);
      if (at < 0) return -1;
      s->pos = static_cast<uint64_t>(at);
      return 0;
    }
    case ZIP_SOURCE_TELL: return static_cast<zip_int64_t>(s->pos);
    case ZIP_SOURCE_ACCEPT_EMPTY: return 0;  // an empty file is not an (empty) .npz
    case ZIP_SOURCE_SUPPORTS:
      return zip_source_make_command_bitmap(ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE, ZIP_SOURCE_STAT,
                                            ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE, ZIP_SOURCE_SEEK, ZIP_SOURCE_TELL,
                                            ZIP_SOURCE_SUPPORTS, ZIP_SOURCE_ACCEPT_EMPTY, -1);
    default: zip_error_set(&s->error, ZIP_ER_OPNOTSUPP, 0); return -1;
  }
}


}  // namespace

ZipPtr open_archive(const std::shared_ptr<const RandomAccessFile>& file, const std::string& kind) {
  const std::string& path = file->path();
  zip_error_t err;
  zip_error_init(&err);
  auto* state = new PreadSource{file, 0, {}};
  zip_error_init(&state->error);
  zip_source_t* src = zip_source_function_create(pread_source, state, &err);
  if (!src) {
    zip_error_fini(&state->error);
    delete state;
    const std::string msg = zip_error_strerror(&err);
    zip_error_fini(&err);
    throw IoError(path + ": cannot read the zip archive: " + msg);
  }
  zip_t* za = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &err);
  if (!za) {
    zip_source_free(src);
    const int code = zip_error_code_zip(&err);
    const std::string msg = printable(zip_error_strerror(&err));
    zip_error_fini(&err);
    if (code == ZIP_ER_NOZIP)
      throw IoError(path + ": " + (file->size() == 0 ? "empty file, not a " + kind + " file" : "not a " + kind + " file (not a zip archive)"));
    if (code == ZIP_ER_EXISTS) throw IoError(path + ": not a valid " + kind + " (zip) file: two members have the same name");
    throw IoError(path + ": not a valid " + kind + " (zip) file: " + msg);
  }
  zip_error_fini(&err);
  return ZipPtr(za);
}

}  // namespace qs::zipio
