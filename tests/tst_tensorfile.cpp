// Tests for core/io/tensor_file.h: .npy, .npz and .safetensors round trips of every dtype (bytes exact),
// dispatch by magic, and every bad-input case of issue 3 as a data row (one-line IoError naming file
// and tensor); files that shrink after open, FIFOs and devices, and a 100,000-tensor header (reliability
// findings F5, F7, F12). Issue 13: every low-bit safetensors dtype (F8_E8M0, the FNUZ float8s, packed F4,
// F6_E2M3, F6_E3M2) decodes to decode_ref of every code; dtypes that are not read are listed in skipped()
// beside the tensors that are; a torch.save zip is named as one. Issue 13 item 4: a sharded model (an
// index + shards, or a folder) reads as one model, and each bad index or shard set gives its one line.
// Fixtures are built here: safetensors by a small writer, .npz with libzip.
// Run: cmake --build build --target tst_tensorfile && QT_QPA_PLATFORM=offscreen build/tests/tst_tensorfile
#include "format/format.h"
#include "io/npy.h"
#include "io/tensor_file.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <future>
#include <limits>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#if __has_include(<zip.h>)
#include <zip.h>
#define QS_TEST_HAVE_ZIP 1
#endif

Q_DECLARE_METATYPE(qs::DType)

namespace {

using Shape = std::vector<int64_t>;

// Deterministic, non-trivial bytes (a failing row name reproduces its input exactly).
QByteArray patternBytes(qsizetype n, unsigned seed = 11) {
  QByteArray b(n, Qt::Uninitialized);
  uint32_t s = seed * 2654435761u + 1;
  for (qsizetype i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    b[i] = char(s >> 24);
  }
  return b;
}

std::size_t numelOf(const Shape& s) {
  std::size_t n = 1;
  for (int64_t d : s) n *= std::size_t(d);
  return n;
}

QString shapeName(const Shape& s) {
  QStringList parts;
  for (int64_t d : s) parts << QString::number(d);
  return "[" + parts.join(",") + "]";
}

QByteArray le64(uint64_t v) {
  QByteArray b(8, '\0');
  for (int i = 0; i < 8; ++i) b[i] = char((v >> (8 * i)) & 0xFF);
  return b;
}

// --- .safetensors writer -------------------------------------------------------------------------

struct StTensor {
  QByteArray name, dtype;
  Shape shape;
  QByteArray data;
};

// A file as the safetensors library writes it: u64 header length, JSON header padded with spaces to
// a multiple of 8, tensors back to back in the given order.
QByteArray safetensorsImage(const QList<StTensor>& ts, const QByteArray& metadata = {}) {
  QByteArray json = "{";
  if (!metadata.isEmpty()) json += "\"__metadata__\":" + metadata;
  QByteArray data;
  for (const StTensor& t : ts) {
    if (json.size() > 1) json += ",";
    QByteArray shape;
    for (int64_t d : t.shape) shape += (shape.isEmpty() ? "" : ",") + QByteArray::number(qlonglong(d));
    json += "\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[" + shape + "],\"data_offsets\":[" +
            QByteArray::number(data.size()) + "," + QByteArray::number(data.size() + t.data.size()) + "]}";
    data += t.data;
  }
  json += "}";
  while ((8 + json.size()) % 8) json += ' ';
  return le64(uint64_t(json.size())) + json + data;
}

// Header text exactly as given (no padding), for rows that spell a broken header.
QByteArray safetensorsRaw(const QByteArray& json, const QByteArray& data = {}) {
  return le64(uint64_t(json.size())) + json + data;
}

struct DtypeCase {
  const char* st;
  qs::DType dtype;
};
const DtypeCase kStDtypes[] = {
    {"F64", qs::DType::F64},  {"F32", qs::DType::F32},        {"F16", qs::DType::F16},
    {"BF16", qs::DType::BF16}, {"I8", qs::DType::I8},         {"U8", qs::DType::U8},
    {"I16", qs::DType::I16},  {"I32", qs::DType::I32},        {"I64", qs::DType::I64},
    {"F8_E4M3", qs::DType::F8E4M3}, {"F8_E5M2", qs::DType::F8E5M2}, {"BOOL", qs::DType::Bool},
    {"U16", qs::DType::U16},  {"U32", qs::DType::U32},        {"U64", qs::DType::U64},
    {"F8_E8M0", qs::DType::F8E8M0}, {"F8_E4M3FNUZ", qs::DType::F8E4M3FNUZ}, {"F8_E5M2FNUZ", qs::DType::F8E5M2FNUZ},
    {"F4", qs::DType::F4E2M1}, {"F6_E2M3", qs::DType::F6E2M3}, {"F6_E3M2", qs::DType::F6E3M2},
};

// The low-bit float dtypes of safetensors with the format-engine name of their element format.
struct LowBitCase {
  const char* st;
  qs::DType dtype;
  const char* format;
  unsigned bits;
};
const LowBitCase kLowBit[] = {
    {"F8_E8M0", qs::DType::F8E8M0, "e8m0fnu", 8},          {"F8_E4M3", qs::DType::F8E4M3, "e4m3fn", 8},
    {"F8_E5M2", qs::DType::F8E5M2, "e5m2", 8},             {"F8_E4M3FNUZ", qs::DType::F8E4M3FNUZ, "e4m3fnuz", 8},
    {"F8_E5M2FNUZ", qs::DType::F8E5M2FNUZ, "e5m2fnuz", 8}, {"F4", qs::DType::F4E2M1, "e2m1fn", 4},
    {"F6_E2M3", qs::DType::F6E2M3, "e2m3fn", 6},           {"F6_E3M2", qs::DType::F6E3M2, "e3m2fn", 6},
};

// Codes packed the way the formats store sub-byte elements, bit by bit: element i at bits
// [i*bits, i*bits + bits) of the little-endian bit stream (the first element in the low bits of byte 0).
QByteArray packCodes(const std::vector<uint32_t>& codes, unsigned bits) {
  QByteArray out(qsizetype((codes.size() * bits + 7) / 8), '\0');
  for (std::size_t i = 0; i < codes.size(); ++i)
    for (unsigned k = 0; k < bits; ++k)
      if ((codes[i] >> k) & 1) {
        const std::size_t bit = i * bits + k;
        out[qsizetype(bit / 8)] = char(uint8_t(out[qsizetype(bit / 8)]) | (1u << (bit % 8)));
      }
  return out;
}

// Every code of a `bits`-wide format once, then `extra` more (so the count is odd where extra is),
// in a scrambled but seeded order.
std::vector<uint32_t> everyCode(unsigned bits, unsigned extra) {
  const uint32_t count = 1u << bits;
  std::vector<uint32_t> codes;
  for (uint32_t c = 0; c < count + extra; ++c) codes.push_back((c * 37u + 11u) % count);
  return codes;
}
const qs::DType kNpyDtypes[] = {qs::DType::F32, qs::DType::F64, qs::DType::F16, qs::DType::I8,
                                qs::DType::U8,  qs::DType::I32, qs::DType::U16};

QByteArray npyBytes(qs::DType t, const Shape& shape, const QByteArray& data) {
  const std::vector<uint8_t> img = qs::serialize_npy(qs::make_npy(t, shape, data.constData()));
  return QByteArray(reinterpret_cast<const char*>(img.data()), qsizetype(img.size()));
}

// A .npy image with the header text exactly as given, then `pad` spaces and '\n' (format version
// `major`; 0 = 1.0 when the header fits, else 2.0).
QByteArray npyRaw(const QByteArray& header, const QByteArray& data, int pad = 0, int major = 0) {
  QByteArray h = header + QByteArray(pad, ' ') + "\n";
  if (major == 0) major = h.size() <= 0xFFFF ? 1 : 2;
  const bool v1 = major == 1;
  QByteArray out("\x93NUMPY", 6);
  out += char(major);
  out += char(0);
  for (int i = 0; i < (v1 ? 2 : 4); ++i) out += char((h.size() >> (8 * i)) & 0xFF);
  return out + h + data;
}

// --- .npz writer (libzip) ------------------------------------------------------------------------

struct ZipMember {
  QByteArray name, bytes;
  bool deflate = true;
};

#ifdef QS_TEST_HAVE_ZIP
QByteArray zipImage(const QList<ZipMember>& members) {
  // libzip writes no file for an empty archive; Python's zipfile writes the bare end record.
  if (members.isEmpty()) return QByteArray("PK\x05\x06", 4) + QByteArray(18, '\0');
  QTemporaryDir dir;
  const QByteArray path = dir.filePath("z.zip").toLocal8Bit();
  int err = 0;
  zip_t* za = zip_open(path.constData(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  if (!za) qFatal("zip_open failed: %d", err);
  for (const ZipMember& m : members) {  // `members` outlives zip_close, so the buffers may be borrowed
    zip_source_t* src = zip_source_buffer(za, m.bytes.constData(), zip_uint64_t(m.bytes.size()), 0);
    const zip_int64_t idx = zip_file_add(za, m.name.constData(), src, ZIP_FL_ENC_UTF_8);
    if (idx < 0) qFatal("zip_file_add: %s", zip_strerror(za));
    zip_set_file_compression(za, zip_uint64_t(idx), m.deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0);
  }
  if (zip_close(za) != 0) qFatal("zip_close: %s", zip_strerror(za));
  QFile f(QString::fromLocal8Bit(path));
  if (!f.open(QIODevice::ReadOnly)) qFatal("cannot read back the zip");
  return f.readAll();
}
#endif

// Offset and size of the first member's (compressed) data, from its local file header.
std::pair<qsizetype, qsizetype> firstMemberData(const QByteArray& zip) {
  auto u16 = [&](qsizetype at) { return qsizetype(uint8_t(zip[at]) | uint8_t(zip[at + 1]) << 8); };
  auto u32 = [&](qsizetype at) { return qsizetype(u16(at) | u16(at + 2) << 16); };
  return {30 + u16(26) + u16(28), u32(18)};
}

// --- helpers -------------------------------------------------------------------------------------

QString writeFile(const QTemporaryDir& dir, const QString& name, const QByteArray& bytes) {
  const QString path = dir.filePath(name);
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) qFatal("cannot write %s", qPrintable(path));
  f.write(bytes);
  return path;
}

QByteArray bytesOf(const qs::TensorBytes& b) { return QByteArray(reinterpret_cast<const char*>(b.data), qsizetype(b.size)); }

// Opens by dispatch and reads every tensor; returns the IoError text, or empty when all went well.
QString openAndReadAllError(const QString& path) {
  try {
    auto f = qs::open_tensor_file(path.toStdString());
    for (std::size_t i = 0; i < f->tensors().size(); ++i) {
      const qs::TensorBytes b = f->read(i);
      if (b.size != f->tensors()[i].nbytes()) return "size mismatch (test failure, not an IoError)";
    }
  } catch (const qs::IoError& e) {
    return QString::fromUtf8(e.what());
  }
  return {};
}

bool haveNpz() { return qs::tensor_reader_available("npz"); }
bool haveSafetensors() { return qs::tensor_reader_available("safetensors"); }

// --- sharded models ------------------------------------------------------------------------------

// A Hugging Face index: {"metadata": {...}, "weight_map": {tensor: shard, ...}}, entries in the given order.
QByteArray indexJson(const QList<QPair<QByteArray, QByteArray>>& weightMap) {
  QByteArray wm;
  for (const auto& [tensor, shard] : weightMap)
    wm += QByteArray(wm.isEmpty() ? "" : ",") + "\n    \"" + tensor + "\": \"" + shard + "\"";
  return "{\n  \"metadata\": {\"total_size\": 1234},\n  \"weight_map\": {" + wm + "\n  }\n}\n";
}

// Files to write into one folder (names may hold a subfolder).
using Files = QList<QPair<QString, QByteArray>>;
void writeFiles(const QTemporaryDir& dir, const Files& files) {
  for (const auto& [name, bytes] : files) {
    QDir().mkpath(QFileInfo(dir.filePath(name)).path());
    writeFile(dir, name, bytes);
  }
}

// Three shards in the layout of `save_pretrained`: the index lists tensors by name (so it interleaves the
// shards), every shard holds what the index gives it, one dtype per shard and a scalar.
struct ShardedFixture {
  QList<StTensor> shard[3];
  Files files() const {
    Files f;
    QList<QPair<QByteArray, QByteArray>> wm;
    for (int k = 0; k < 3; ++k) {
      const QByteArray name = "model-0000" + QByteArray::number(k + 1) + "-of-00003.safetensors";
      f << qMakePair(QString(name), safetensorsImage(shard[k], R"({"format":"pt"})"));
      for (const StTensor& t : shard[k]) wm << qMakePair(t.name, name);
    }
    std::sort(wm.begin(), wm.end());
    f << qMakePair(QString("model.safetensors.index.json"), indexJson(wm));
    return f;
  }
};
ShardedFixture shardedFixture() {
  ShardedFixture m;
  m.shard[0] = {{"model.layers.0.w", "F32", {2, 3}, patternBytes(24, 1)}, {"model.embed", "F32", {4}, patternBytes(16, 2)}};
  m.shard[1] = {{"model.layers.1.w", "BF16", {3, 2}, patternBytes(12, 3)}, {"model.layers.10.w", "F16", {5}, patternBytes(10, 4)}};
  m.shard[2] = {{"lm_head", "F8_E4M3", {2, 4}, patternBytes(8, 5)}, {"scale", "F32", {}, patternBytes(4, 6)}};
  return m;
}

}  // namespace

class tst_TensorFile : public QObject {
  Q_OBJECT

 private slots:
  void availability();

  void safetensorsRoundTrip_data();
  void safetensorsRoundTrip();
  void safetensorsFileOrderAndMetadata();
  void safetensorsValues();
  void safetensorsLowBitDtypes_data();
  void safetensorsLowBitDtypes();
  void safetensorsPackedPinned();
  void safetensorsSkipsWhatItCannotRead();
  void safetensorsReadOwnsItsBytes();
  void safetensorsManyTensors();
  void readF32_data();
  void readF32();

  void npyRoundTrip_data();
  void npyRoundTrip();

  void npzRoundTrip_data();
  void npzRoundTrip();
  void npzWrittenLikeNumpy_data();
  void npzWrittenLikeNumpy();
  void npzLongHeaderAndSkippedMembers();
  void npzConcurrentReads();
  void npzCorruptStreamFailsAtRead();

  void nanInfReadFine_data();
  void nanInfReadFine();

  void dispatch_data();
  void dispatch();
  void badInput_data();
  void badInput();
  void readIndexOutOfRange();
  void truncatedAfterOpen_data();
  void truncatedAfterOpen();
  void nonRegularFile_data();
  void nonRegularFile();

  void shardedIndexReadsAsOneModel();
  void shardedFolder_data();
  void shardedFolder();
  void shardedListsWhatItDoesNotRead();
  void shardedBadInput_data();
  void shardedBadInput();
  void shardedShardChangedAfterOpen();

  void writeFuzzCorpus();
};

void tst_TensorFile::availability() {
  QVERIFY(qs::tensor_reader_available("npy"));
  QVERIFY(!qs::tensor_reader_available("hdf5"));
#ifdef QS_TEST_HAVE_ZIP
  QVERIFY(haveNpz());  // the header is there, so the build found libzip too
#endif
  if (!haveSafetensors()) {
    QTemporaryDir dir;
    const QString path = writeFile(dir, "x.safetensors", safetensorsImage({}));
    const QString msg = openAndReadAllError(path);
    QVERIFY2(msg == path + ": this build has no .safetensors support (install nlohmann-json3-dev and rebuild)",
             qPrintable(msg));
    const QString index = writeFile(dir, "model.safetensors.index.json", indexJson({{"w", "x.safetensors"}}));
    const QString imsg = openAndReadAllError(index);
    QVERIFY2(imsg == index + ": this build has no sharded safetensors support (install nlohmann-json3-dev and rebuild)",
             qPrintable(imsg));
  }
}

// --- .safetensors --------------------------------------------------------------------------------

void tst_TensorFile::safetensorsRoundTrip_data() {
  QTest::addColumn<QByteArray>("stDtype");
  QTest::addColumn<qs::DType>("dtype");
  QTest::addColumn<Shape>("shape");
  const Shape shapes[] = {{}, {0}, {1}, {7}, {2, 3}, {3, 0, 2}, {2, 1, 3, 4}, {1000}};
  for (const DtypeCase& c : kStDtypes)
    for (const Shape& s : shapes)
      QTest::addRow("%s %s", c.st, qPrintable(shapeName(s))) << QByteArray(c.st) << c.dtype << s;
}

void tst_TensorFile::safetensorsRoundTrip() {
  if (!haveSafetensors()) QSKIP("built without nlohmann-json");
  QFETCH(QByteArray, stDtype);
  QFETCH(qs::DType, dtype);
  QFETCH(Shape, shape);
  const qsizetype n = qsizetype(qs::dtype_nbytes(dtype, numelOf(shape)));
  // Two tensors around the one under test, so offsets other than 0 and the file's end are used.
  const QByteArray before = patternBytes(5, 1), payload = patternBytes(n, unsigned(shape.size()) + 3),
                   after = patternBytes(3, 2);
  QTemporaryDir dir;
  const QString path = writeFile(dir, "model.safetensors",
                                 safetensorsImage({{"a.before", "U8", {5}, before},
                                                   {"b.tensor", stDtype, shape, payload},
                                                   {"c.after", "I8", {3}, after}}));
  auto f = qs::open_tensor_file(path.toStdString());
  QCOMPARE(QString::fromStdString(f->kind()), QString("safetensors"));
  QCOMPARE(QString::fromStdString(f->path()), path);
  QCOMPARE(f->tensors().size(), std::size_t(3));
  const qs::TensorInfo& t = f->tensors()[1];
  QCOMPARE(QString::fromStdString(t.name), QString("b.tensor"));
  QCOMPARE(t.dtype, dtype);
  QCOMPARE(t.shape, shape);
  QCOMPARE(t.numel(), numelOf(shape));
  QCOMPARE(t.nbytes(), std::size_t(n));
  QCOMPARE(bytesOf(f->read(1)), payload);
  QCOMPARE(bytesOf(f->read(0)), before);
  QCOMPARE(bytesOf(f->read(2)), after);
}

void tst_TensorFile::safetensorsFileOrderAndMetadata() {
  if (!haveSafetensors()) QSKIP("built without nlohmann-json");
  // Keys out of offset order, a gap between tensors, metadata, UTF-8 names: listed by offset.
  const QByteArray json =
      R"({"z.first":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("__metadata__":{"format":"pt","note":"x"},)"
      R"("a.third":{"dtype":"U8","shape":[3],"data_offsets":[20,23]},)"
      "\"m.\xc3\xa9\xe2\x82\xac\":{\"dtype\":\"I16\",\"shape\":[2,2],\"data_offsets\":[8,16]},"
      R"("empty":{"dtype":"F64","shape":[0,4],"data_offsets":[16,16]}})";
  const QByteArray data = patternBytes(23, 5);
  QTemporaryDir dir;
  const QString path = writeFile(dir, "order.safetensors", safetensorsRaw(json, data));
  auto f = qs::open_tensor_file(path.toStdString());
  QStringList names;
  for (const qs::TensorInfo& t : f->tensors()) names << QString::fromStdString(t.name);
  QCOMPARE(names, QStringList({"z.first", QString::fromUtf8("m.\xc3\xa9\xe2\x82\xac"), "empty", "a.third"}));
  QCOMPARE(bytesOf(f->read(0)), data.mid(0, 8));
  QCOMPARE(bytesOf(f->read(1)), data.mid(8, 8));
  QCOMPARE(f->read(2).size, std::size_t(0));
  QCOMPARE(bytesOf(f->read(3)), data.mid(20, 3));
}

void tst_TensorFile::safetensorsValues() {
  if (!haveSafetensors()) QSKIP("built without nlohmann-json");
  // Known codes decode to known values: the dtype mapping is right, not just the bytes.
  const QByteArray bf16("\x80\x3f\x00\xc0\x80\x7f", 6);          // 1, -2, inf
  const QByteArray e4m3("\x7e\x38\xfe\x01", 4);                  // 448, 1, -448, 2^-9
  const QByteArray e5m2("\x7b\x3c\x7c\x01", 4);                  // 57344, 1, inf, 2^-16
  const QByteArray i64 = le64(uint64_t(-5)) + le64(1ull << 40);  // -5, 2^40
  QTemporaryDir dir;
  const QString path = writeFile(dir, "v.safetensors",
                                 safetensorsImage({{"bf16", "BF16", {3}, bf16},
                                                   {"e4m3", "F8_E4M3", {4}, e4m3},
                                                   {"e5m2", "F8_E5M2", {4}, e5m2},
                                                   {"i64", "I64", {2}, i64},
                                                   {"bool", "BOOL", {2}, QByteArray("\x00\x01", 2)}}));
  auto f = qs::open_tensor_file(path.toStdString());
  auto values = [&](std::size_t i) {
    const qs::TensorBytes b = f->read(i);
    std::vector<double> v(f->tensors()[i].numel());
    qs::convert_to_f64(f->tensors()[i].dtype, b.data, v.size(), v.data());
    return v;
  };
  const double inf = std::numeric_limits<double>::infinity();
  QCOMPARE(values(0), std::vector<double>({1.0, -2.0, inf}));
  QCOMPARE(values(1), std::vector<double>({448.0, 1.0, -448.0, std::ldexp(1.0, -9)}));
  QCOMPARE(values(2), std::vector<double>({57344.0, 1.0, inf, std::ldexp(1.0, -16)}));
  QCOMPARE(values(3), std::vector<double>({-5.0, std::ldexp(1.0, 40)}));
  QCOMPARE(values(4), std::vector<double>({0.0, 1.0}));
}

// Every code of every low-bit float dtype, in tensors of 2^bits + {0, 1, 3} elements (odd counts end
// inside a byte for F4 and F6), reads back as decode_ref of that code: through read_f32 and through
// read() + convert_to_f64, NaN codes as NaN.
void tst_TensorFile::safetensorsLowBitDtypes_data() {
  QTest::addColumn<int>("row");
  QTest::addColumn<unsigned>("extra");
  for (int r = 0; r < int(std::size(kLowBit)); ++r)
    for (unsigned extra : {0u, 1u, 3u})
      QTest::addRow("%s %u codes", kLowBit[r].st, (1u << kLowBit[r].bits) + extra) << r << extra;
}

void tst_TensorFile::safetensorsLowBitDtypes() {
  if (!haveSafetensors()) QSKIP("built without nlohmann-json");
  QFETCH(int, row);
  QFETCH(unsigned, extra);
  const LowBitCase& c = kLowBit[row];
  const qs::Format fmt = qs::parse_format(c.format);
  QCOMPARE(unsigned(fmt.bits), c.bits);
  const std::vector<uint32_t> codes = everyCode(c.bits, extra);
  const QByteArray packed = packCodes(codes, c.bits);
  QTemporaryDir dir;
  // A byte-sized tensor before and after, so that the packed one starts and ends mid-file.
  const QString path = writeFile(dir, "lowbit.safetensors",
                                 safetensorsImage({{"a", "U8", {3}, "abc"},
                                                   {"w", c.st, {int64_t(codes.size())}, packed},
                                                   {"z", "F32", {1}, patternBytes(4)}}));
  auto f = qs::open_tensor_file(path.toStdString());
  QVERIFY(f->skipped().empty());
  QCOMPARE(f->tensors().size(), std::size_t(3));
  const qs::TensorInfo& t = f->tensors()[1];
  QCOMPARE(t.dtype, c.dtype);
  QCOMPARE(t.numel(), codes.size());
  QCOMPARE(t.nbytes(), std::size_t(packed.size()));
  QVERIFY(qs::dtype_is_float(t.dtype));
  QCOMPARE(bytesOf(f->read(1)), packed);
  std::vector<float> got(codes.size() + 1, -7.0f);
  f->read_f32(1, got.data());
  QCOMPARE(got.back(), -7.0f);
  std::vector<double> wide(codes.size());
  const qs::TensorBytes b = f->read(1);
  qs::convert_to_f64(t.dtype, b.data, wide.size(), wide.data());
  for (std::size_t i = 0; i < codes.size(); ++i) {
    const double want = qs::decode_ref(fmt, codes[i]);
    const bool ok = std::isnan(want) ? std::isnan(got[i]) && std::isnan(wide[i])
                                     : double(got[i]) == want && wide[i] == want &&
                                           std::signbit(got[i]) == std::signbit(want);
    if (!ok)
      QFAIL(qPrintable(QString("element %1 (code 0x%2): want %3, read_f32 %4, convert_to_f64 %5")
                           .arg(i).arg(codes[i], 0, 16).arg(want).arg(got[i]).arg(wide[i])));
  }
  QCOMPARE(bytesOf(f->read(2)), patternBytes(4));
}

// The bit order, spelled out by hand: F4 codes 1, 2, 7 are bytes 0x21 0x07 (first element in the low
// nibble, the last byte's high nibble padding); F6_E2M3 codes 0x08, 0x3C are bytes 0x08 0x0F (the second
// element's low two bits in the top of byte 0); F6_E3M2 codes 0x0C x4 are bytes 0x0C 0xC3 0x30.
void tst_TensorFile::safetensorsPackedPinned() {
  if (!haveSafetensors()) QSKIP("built without nlohmann-json");
  QTemporaryDir dir;
  const QString path = writeFile(dir, "pinned.safetensors",
                                 safetensorsImage({{"f4", "F4", {3}, QByteArray("\x21\xf7", 2)},
                                                   {"f6a", "F6_E2M3", {2}, QByteArray("\x08\x0f", 2)},
                                                   {"f6b", "F6_E3M2", {4}, QByteArray("\x0c\xc3\x30", 3)},
                                                   {"e8m0", "F8_E8M0", {4}, QByteArray("\x7f\x00\xfe\xff", 4)}}));
  auto f = qs::open_tensor_file(path.toStdString());
  auto values = [&](std::size_t i) {
    std::vector<double> v(f->tensors()[i].numel());
    const qs::TensorBytes b = f->read(i);
    qs::convert_to_f64(f->tensors()[i].dtype, b.data, v.size(), v.data());
    return v;
  };
  QCOMPARE(values(0), std::vector<double>({0.5, 1.0, 6.0}));  // e2m1: 0001, 0010, 0111
  QCOMPARE(values(1), std::vector<double>({1.0, -6.0}));      // e2m3: 0 01 000, 1 11 100
  QCOMPARE(values(2), std::vector<double>({1.0, 1.0, 1.0, 1.0}));  // e3m2: 0 011 00 = 2^0
  const std::vector<double> e8 = values(3);  // e8m0: 2^(c - 127), 0xFF = NaN
  QCOMPARE(e8[0], 1.0);
  QCOMPARE(e8[1], std::ldexp(1.0, -127));
  QCOMPARE(e8[2], std::ldexp(1.0, 127));
  QVERIFY(std::isnan(e8[3]));
}

// A dtype the reader cannot decode (C64, or a name the format does not have) is listed in skipped() with
// its reason and never fails the file; the tensors beside it stay readable. A file of nothing but such
// entries still opens (the caller decides that nothing to analyse is an error).
void tst_TensorFile::safetensorsSkipsWhatItCannotRead() {
  if (!haveSafetensors()) QSKIP("built without nlohmann-json");
  QTemporaryDir dir;
  const QByteArray f32 = patternBytes(8, 3);
  const QString path = writeFile(dir, "mixed.safetensors",
                                 safetensorsImage({{"w", "F32", {2}, f32},
                                                   {"future", "F2_E1M0", {8}, QByteArray("\x1b\xe4", 2)},
                                                   {"cplx", "C64", {1}, patternBytes(8)},
                                                   {"b", "BF16", {1}, QByteArray("\x80\x3f", 2)}}));
  auto f = qs::open_tensor_file(path.toStdString());
  QCOMPARE(f->tensors().size(), std::size_t(2));
  QCOMPARE(QString::fromStdString(f->tensors()[0].name), QString("w"));
  QCOMPARE(QString::fromStdString(f->tensors()[1].name), QString("b"));
  QCOMPARE(bytesOf(f->read(0)), f32);
  QCOMPARE(bytesOf(f->read(1)), QByteArray("\x80\x3f", 2));
  QCOMPARE(f->skipped().size(), std::size_t(2));
  const QString s0 = QString::fromStdString(f->skipped()[0]), s1 = QString::fromStdString(f->skipped()[1]);
  QVERIFY2(s0.startsWith("future: unsupported dtype 'F2_E1M0', not read (read: F64, F32"), qPrintable(s0));
  QVERIFY2(s0.contains("F8_E8M0") && s0.contains("F4") && s0.contains("F6_E3M2") && !s0.contains('\n'), qPrintable(s0));
  QVERIFY2(s1.startsWith("cplx: dtype C64 is complex"), qPrintable(s1));

  const QString only = writeFile(dir, "only.safetensors", safetensorsImage({{"x", "F2_E1M0", {4}, "a"}}));
  auto g = qs::open_tensor_file(only.toStdString());
  QVERIFY(g->tensors().empty());
  QCOMPARE(g->skipped().size(), std::size_t(1));

  // A skipped entry's data range is still checked: overlapping another tensor is a corrupt file.
  const QByteArray json = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                          R"("x":{"dtype":"F2_E1M0","shape":[4],"data_offsets":[4,9]}})";
  const QString bad = writeFile(dir, "overlap.safetensors", safetensorsRaw(json, patternBytes(9)));
  const QString msg = openAndReadAllError(bad);
  QVERIFY2(msg == bad + ": x: data_offsets [4, 9) overlap tensor 'w' [0, 8)", qPrintable(msg));
}

void tst_TensorFile::safetensorsReadOwnsItsBytes() {
  if (!haveSafetensors()) QSKIP("built without nlohmann-json");
  QTemporaryDir dir;
  const QByteArray payload = patternBytes(4096, 9);
  const QString path = writeFile(dir, "own.safetensors", safetensorsImage({{"w", "F32", {1024}, payload}}));
  auto f = qs::open_tensor_file(path.toStdString());
  {
    const qs::TensorBytes a = f->read(0), b = f->read(0);
    QVERIFY(a.data != b.data);  // pread into a buffer per live read, never a shared map (F5)
    QCOMPARE(bytesOf(a), payload);
    QCOMPARE(bytesOf(b), payload);
  }
  const qs::TensorBytes c = f->read(0);  // reuses a released buffer
  QVERIFY(c.owner);
  f.reset();  // the bytes stay valid while `owner` lives
  QCOMPARE(bytesOf(c), payload);
}

// F7: the header of a file listing 100,000 tensors parses in linear time (nlohmann's callback parser
// took about two minutes); the depth and duplicate-key checks still hold at that size.
void tst_TensorFile::safetensorsManyTensors() {
  if (!haveSafetensors()) QSKIP("built without nlohmann-json");
  constexpr int kCount = 100'000;
  QByteArray json = "{\"__metadata__\":{\"format\":\"pt\"}";
  json.reserve(8'000'000);
  // Listed in reverse, so that the reader's offset order is checked too.
  for (int i = kCount - 1; i >= 0; --i)
    json += ",\"t" + QByteArray::number(i) + "\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[" +
            QByteArray::number(8 * i) + "," + QByteArray::number(8 * i + 8) + "]}";
  const QByteArray data = patternBytes(8 * kCount, 17);
  QTemporaryDir dir;
  const QString path = writeFile(dir, "many.safetensors", safetensorsRaw(json + "}", data));
  auto f = qs::open_tensor_file(path.toStdString());
  QCOMPARE(f->tensors().size(), std::size_t(kCount));
  for (int i : {0, 1, 54321, kCount - 1}) {
    const qs::TensorInfo& t = f->tensors()[std::size_t(i)];
    QCOMPARE(QString::fromStdString(t.name), QString("t%1").arg(i));
    QCOMPARE(t.dtype, qs::DType::F32);
    QCOMPARE(t.shape, Shape({2}));
    QCOMPARE(bytesOf(f->read(std::size_t(i))), data.mid(8 * i, 8));
  }

  const QByteArray again = R"(,"t77777":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}})";
  const QString dup = writeFile(dir, "dup.safetensors", safetensorsRaw(json + again, data));
  const QString msg = openAndReadAllError(dup);
  QVERIFY2(msg == dup + ": header has the key 't77777' twice", qPrintable(msg));
}

// read_f32 gives what convert_to_f32 gives on read(), across the reader's staging pieces.
void tst_TensorFile::readF32_data() {
  QTest::addColumn<QString>("kind");
  QTest::addColumn<qs::DType>("dtype");
  QTest::addColumn<qint64>("numel");
  for (const DtypeCase& c : kStDtypes)
    for (qint64 n : {0ll, 1ll, 300'001ll})
      QTest::addRow("safetensors %s %lld", c.st, n) << "safetensors" << c.dtype << n;
  // Packed dtypes over several staging pieces, ending inside a byte.
  for (const DtypeCase& c : kStDtypes)
    if (qs::dtype_is_packed(c.dtype)) QTest::addRow("safetensors %s 1048583", c.st) << "safetensors" << c.dtype << 1'048'583ll;
  for (qs::DType t : kNpyDtypes) QTest::addRow("npy %s 300001", qs::to_string(t)) << "npy" << t << 300'001ll;
#ifdef QS_TEST_HAVE_ZIP
  QTest::addRow("npz (default: read + convert) float16") << "npz" << qs::DType::F16 << 1000ll;
#endif
}

void tst_TensorFile::readF32() {
  QFETCH(QString, kind);
  QFETCH(qs::DType, dtype);
  QFETCH(qint64, numel);
  if (kind == "safetensors" && !haveSafetensors()) QSKIP("built without nlohmann-json");
  const QByteArray payload = patternBytes(qsizetype(qs::dtype_nbytes(dtype, std::size_t(numel))), 21);
  const Shape shape{numel};
  QTemporaryDir dir;
  QString path;
  if (kind == "safetensors") {
    const char* st = nullptr;
    for (const DtypeCase& c : kStDtypes)
      if (c.dtype == dtype) st = c.st;
    path = writeFile(dir, "w.safetensors", safetensorsImage({{"pad", "U8", {3}, "abc"}, {"w", st, shape, payload}}));
  } else if (kind == "npy") {
    path = writeFile(dir, "w.npy", npyBytes(dtype, shape, payload));
  } else {
#ifdef QS_TEST_HAVE_ZIP
    path = writeFile(dir, "w.npz", zipImage({{"w.npy", npyBytes(dtype, shape, payload), true}}));
#endif
  }
  auto f = qs::open_tensor_file(path.toStdString());
  const std::size_t i = f->tensors().size() - 1;
  std::vector<float> want(std::size_t(numel) + 1, -7.0f), got(std::size_t(numel) + 1, -7.0f);
  const qs::TensorBytes b = f->read(i);
  qs::convert_to_f32(dtype, b.data, std::size_t(numel), want.data());
  f->read_f32(i, got.data());
  QCOMPARE(got.back(), -7.0f);  // nothing written past numel
  for (std::size_t k = 0; k < want.size(); ++k)  // bit patterns: NaNs compare too
    if (std::bit_cast<uint32_t>(got[k]) != std::bit_cast<uint32_t>(want[k]))
      QFAIL(qPrintable(QString("element %1 differs").arg(k)));
  QVERIFY_THROWS_EXCEPTION(qs::IoError, f->read_f32(i + 1, got.data()));
}

// --- .npy ----------------------------------------------------------------------------------------

void tst_TensorFile::npyRoundTrip_data() {
  QTest::addColumn<qs::DType>("dtype");
  QTest::addColumn<Shape>("shape");
  const Shape shapes[] = {{}, {0}, {7}, {2, 3}, {3, 0, 2}, {1000}};
  for (qs::DType t : kNpyDtypes)
    for (const Shape& s : shapes) QTest::addRow("%s %s", qs::to_string(t), qPrintable(shapeName(s))) << t << s;
}

void tst_TensorFile::npyRoundTrip() {
  QFETCH(qs::DType, dtype);
  QFETCH(Shape, shape);
  const QByteArray payload = patternBytes(qsizetype(numelOf(shape) * qs::dtype_size(dtype)), 4);
  QTemporaryDir dir;
  const QString path = writeFile(dir, "weights.v2.npy", npyBytes(dtype, shape, payload));
  auto f = qs::open_tensor_file(path.toStdString());
  QCOMPARE(QString::fromStdString(f->kind()), QString("npy"));
  QCOMPARE(f->tensors().size(), std::size_t(1));
  QCOMPARE(QString::fromStdString(f->tensors()[0].name), QString("weights.v2"));  // the stem
  QCOMPARE(f->tensors()[0].dtype, dtype);
  QCOMPARE(f->tensors()[0].shape, shape);
  QCOMPARE(bytesOf(f->read(0)), payload);
}

// --- .npz ----------------------------------------------------------------------------------------

void tst_TensorFile::npzRoundTrip_data() {
  QTest::addColumn<qs::DType>("dtype");
  QTest::addColumn<Shape>("shape");
  QTest::addColumn<bool>("deflate");
  const Shape shapes[] = {{}, {0}, {7}, {2, 3}, {300, 400}};
  for (bool deflate : {false, true})
    for (qs::DType t : kNpyDtypes)
      for (const Shape& s : shapes)
        QTest::addRow("%s %s %s", deflate ? "deflated" : "stored", qs::to_string(t), qPrintable(shapeName(s)))
            << t << s << deflate;
}

void tst_TensorFile::npzRoundTrip() {
#ifdef QS_TEST_HAVE_ZIP
  QFETCH(qs::DType, dtype);
  QFETCH(Shape, shape);
  QFETCH(bool, deflate);
  const qsizetype n = qsizetype(numelOf(shape) * qs::dtype_size(dtype));
  // Half pattern, half zeros: deflate has something to do and the data is still checked exactly.
  QByteArray payload = patternBytes(n, 6);
  for (qsizetype i = n / 2; i < n; ++i) payload[i] = 0;
  const QByteArray other = patternBytes(12, 8);
  QTemporaryDir dir;
  const QString path = writeFile(dir, "arrays.npz",
                                 zipImage({{"arr_0.npy", npyBytes(qs::DType::F32, {3}, other), deflate},
                                           {"layer/w.npy", npyBytes(dtype, shape, payload), deflate}}));
  auto f = qs::open_tensor_file(path.toStdString());
  QCOMPARE(QString::fromStdString(f->kind()), QString("npz"));
  QCOMPARE(f->tensors().size(), std::size_t(2));
  QCOMPARE(QString::fromStdString(f->tensors()[0].name), QString("arr_0"));
  QCOMPARE(QString::fromStdString(f->tensors()[1].name), QString("layer/w"));
  QCOMPARE(f->tensors()[1].dtype, dtype);
  QCOMPARE(f->tensors()[1].shape, shape);
  QCOMPARE(bytesOf(f->read(1)), payload);
  qs::TensorBytes first = f->read(0);
  f.reset();  // an owned buffer outlives the file object
  QCOMPARE(bytesOf(first), other);
#else
  QSKIP("built without libzip");
#endif
}

// Archives written the way np.savez / np.savez_compressed write them (Python's zipfile with
// force_zip64=True: zip64 extra fields in every header), holding a = float32 [1.5, -2, nan] and
// b = uint8 [[0, 1], [254, 255]]. Also tests/fuzz/corpus/npz/numpy_savez*.npz.
void tst_TensorFile::npzWrittenLikeNumpy_data() {
  QTest::addColumn<QByteArray>("base64");
  QTest::newRow("np.savez (stored, zip64)") << QByteArray(
      "UEsDBC0AAAAAAAAAIQAzpPlz//////////8FABQAYS5ucHkBABAAjAAAAAAAAACMAAAAAAAAAJNOVU1QWQEAdgB7J2Rlc2Ny"
      "JzogJzxmNCcsICdmb3J0cmFuX29yZGVyJzogRmFsc2UsICdzaGFwZSc6ICgzLCksIH0gICAgICAgICAgICAgICAgICAgICAg"
      "ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAKAADAPwAAAMAAAMB/UEsDBC0AAAAAAAAAIQDaMt/a////"
      "//////8FABQAYi5ucHkBABAAhAAAAAAAAACEAAAAAAAAAJNOVU1QWQEAdgB7J2Rlc2NyJzogJ3x1MScsICdmb3J0cmFuX29y"
      "ZGVyJzogRmFsc2UsICdzaGFwZSc6ICgyLCAyKSwgfSAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAg"
      "ICAgICAgICAgICAgICAgICAKAAH+/1BLAQItAy0AAAAAAAAAIQAzpPlzjAAAAIwAAAAFAAAAAAAAAAAAAACAAQAAAABhLm5w"
      "eVBLAQItAy0AAAAAAAAAIQDaMt/ahAAAAIQAAAAFAAAAAAAAAAAAAACAAcMAAABiLm5weVBLBQYAAAAAAgACAGYAAAB+AQAA"
      "AAA=");
  QTest::newRow("np.savez_compressed (deflated, zip64)") << QByteArray(
      "UEsDBC0AAAAIAAAAIQAzpPlz//////////8FABQAYS5ucHkBABAAjAAAAAAAAABNAAAAAAAAAJvsF+obEMnIUMZQrZ6SWpxc"
      "pG6loG6TZqKuo6Cell9UUpSYF59flJIKEndLzClOBYoXZyQWpAL5GsY6mjoKtQoUAC4GhgP2DEACiOoBUEsDBC0AAAAIAAAA"
      "IQDaMt/a//////////8FABQAYi5ucHkBABAAhAAAAAAAAABKAAAAAAAAAJvsF+obEMnIUMZQrZ6SWpxcpG6loF5Taqiuo6Ce"
      "ll9UUpSYF59flJIKEndLzClOBYoXZyQWpAL5GkY6CkaaOgq1CmQDLgbGf/8BUEsBAi0DLQAAAAgAAAAhADOk+XNNAAAAjAAA"
      "AAUAAAAAAAAAAAAAAIABAAAAAGEubnB5UEsBAi0DLQAAAAgAAAAhANoy39pKAAAAhAAAAAUAAAAAAAAAAAAAAIABhAAAAGIu"
      "bnB5UEsFBgAAAAACAAIAZgAAAAUBAAAAAA==");
}

void tst_TensorFile::npzWrittenLikeNumpy() {
  if (!haveNpz()) QSKIP("built without libzip");
  QFETCH(QByteArray, base64);
  QTemporaryDir dir;
  const QString path = writeFile(dir, "np.npz", QByteArray::fromBase64(base64));
  auto f = qs::open_tensor_file(path.toStdString());
  QCOMPARE(f->tensors().size(), std::size_t(2));
  QCOMPARE(QString::fromStdString(f->tensors()[0].name), QString("a"));
  QCOMPARE(f->tensors()[0].dtype, qs::DType::F32);
  QCOMPARE(f->tensors()[1].shape, Shape({2, 2}));
  QCOMPARE(bytesOf(f->read(0)), QByteArray("\x00\x00\xc0\x3f\x00\x00\x00\xc0\x00\x00\xc0\x7f", 12));
  QCOMPARE(bytesOf(f->read(1)), QByteArray("\x00\x01\xfe\xff", 4));
}

void tst_TensorFile::npzLongHeaderAndSkippedMembers() {
#ifdef QS_TEST_HAVE_ZIP
  // A 20 KB header (longer than the first read of a member) and members that are not tensors.
  const QByteArray data = patternBytes(24, 3);
  const QByteArray longHeader =
      npyRaw("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", data, 20000);
  QTemporaryDir dir;
  const QString path = writeFile(dir, "long.npz",
                                 zipImage({{"README.txt", "not a tensor", true},
                                           {"long.npy", longHeader, true},
                                           {"dir/", {}, false},
                                           {"raw.npy", longHeader, false}}));
  auto f = qs::open_tensor_file(path.toStdString());
  QCOMPARE(f->tensors().size(), std::size_t(2));
  QCOMPARE(QString::fromStdString(f->tensors()[0].name), QString("long"));
  QCOMPARE(f->tensors()[0].shape, Shape({2, 3}));
  QCOMPARE(bytesOf(f->read(0)), data);
  QCOMPARE(bytesOf(f->read(1)), data);
#else
  QSKIP("built without libzip");
#endif
}

void tst_TensorFile::npzConcurrentReads() {
#ifdef QS_TEST_HAVE_ZIP
  // analyze --threads reads several tensors of one file at once; each read must get its own bytes.
  QList<ZipMember> members;
  QList<QByteArray> payloads;
  for (int i = 0; i < 8; ++i) {
    payloads << patternBytes(40000 + i * 4, unsigned(i));
    members << ZipMember{"t" + QByteArray::number(i) + ".npy",
                         npyBytes(qs::DType::I8, {40000 + i * 4}, payloads.back()), i % 2 == 0};
  }
  QTemporaryDir dir;
  const QString path = writeFile(dir, "many.npz", zipImage(members));
  auto f = qs::open_tensor_file(path.toStdString());
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 5; ++round)
        for (int i = 0; i < 8; ++i) {
          const int k = (i + t) % 8;
          if (bytesOf(f->read(std::size_t(k))) != payloads[k]) ++bad;
        }
    });
  for (auto& th : threads) th.join();
  QCOMPARE(bad.load(), 0);
#else
  QSKIP("built without libzip");
#endif
}

void tst_TensorFile::npzCorruptStreamFailsAtRead() {
#ifdef QS_TEST_HAVE_ZIP
  // The header decompresses fine at open; the damage near the end of the stream shows at read().
  QByteArray payload(400000, '\0');
  for (qsizetype i = 0; i < payload.size(); ++i) payload[i] = char((i * i) >> 7);
  QByteArray zip = zipImage({{"w.npy", npyBytes(qs::DType::U8, {400000}, payload), true}});
  const auto [at, size] = firstMemberData(zip);
  QVERIFY(size > 1000);
  for (qsizetype i = at + size - 600; i < at + size - 500; ++i) zip[i] = char(~zip[i]);
  QTemporaryDir dir;
  const QString path = writeFile(dir, "late.npz", zip);
  auto f = qs::open_tensor_file(path.toStdString());
  QCOMPARE(f->tensors().size(), std::size_t(1));
  QString msg;
  try {
    f->read(0);
  } catch (const qs::IoError& e) {
    msg = QString::fromUtf8(e.what());
  }
  QVERIFY2(msg.startsWith(path + ": w.npy: "), qPrintable(msg));
  QVERIFY2(!msg.contains('\n'), qPrintable(msg));
#else
  QSKIP("built without libzip");
#endif
}

// --- all formats ---------------------------------------------------------------------------------

void tst_TensorFile::nanInfReadFine_data() {
  QTest::addColumn<QString>("kind");
  QTest::addColumn<qs::DType>("dtype");
  for (const char* kind : {"npy", "npz", "safetensors"})
    for (qs::DType t : {qs::DType::F32, qs::DType::F64, qs::DType::F16})
      QTest::addRow("%s %s", kind, qs::to_string(t)) << QString(kind) << t;
  QTest::addRow("safetensors bfloat16") << "safetensors" << qs::DType::BF16;
  QTest::addRow("safetensors float8_e4m3fn") << "safetensors" << qs::DType::F8E4M3;
  QTest::addRow("safetensors float8_e5m2") << "safetensors" << qs::DType::F8E5M2;
}

void tst_TensorFile::nanInfReadFine() {
  QFETCH(QString, kind);
  QFETCH(qs::DType, dtype);
  if (kind == "safetensors" && !haveSafetensors()) QSKIP("built without nlohmann-json");
  if (kind == "npz" && !haveNpz()) QSKIP("built without libzip");
  // NaN, +inf, -inf, -0 in each dtype's own encoding (float8 e4m3fn has no inf: NaN, max, -max, -0).
  QByteArray data;
  switch (dtype) {
    case qs::DType::F32: data = QByteArray("\x00\x00\xc0\x7f\x00\x00\x80\x7f\x00\x00\x80\xff\x00\x00\x00\x80", 16); break;
    case qs::DType::F64:
      data = le64(0x7ff8000000000000ull) + le64(0x7ff0000000000000ull) + le64(0xfff0000000000000ull) +
             le64(0x8000000000000000ull);
      break;
    case qs::DType::F16: data = QByteArray("\x00\x7e\x00\x7c\x00\xfc\x00\x80", 8); break;
    case qs::DType::BF16: data = QByteArray("\xc0\x7f\x80\x7f\x80\xff\x00\x80", 8); break;
    case qs::DType::F8E4M3: data = QByteArray("\x7f\x7e\xfe\x80", 4); break;
    case qs::DType::F8E5M2: data = QByteArray("\x7f\x7c\xfc\x80", 4); break;
    default: QFAIL("no row for this dtype");
  }
  QTemporaryDir dir;
  QString path;
  if (kind == "npy") {
    path = writeFile(dir, "x.npy", npyBytes(dtype, {4}, data));
  } else if (kind == "npz") {
#ifdef QS_TEST_HAVE_ZIP
    path = writeFile(dir, "x.npz", zipImage({{"x.npy", npyBytes(dtype, {4}, data), true}}));
#endif
  } else {
    const char* st = nullptr;
    for (const DtypeCase& c : kStDtypes)
      if (c.dtype == dtype) st = c.st;
    path = writeFile(dir, "x.safetensors", safetensorsImage({{"x", st, {4}, data}}));
  }
  auto f = qs::open_tensor_file(path.toStdString());
  const qs::TensorBytes b = f->read(0);
  QCOMPARE(bytesOf(b), data);
  float v[4];
  qs::convert_to_f32(dtype, b.data, 4, v);
  QVERIFY(std::isnan(v[0]));
  if (dtype == qs::DType::F8E4M3) {
    QCOMPARE(v[1], 448.0f);
    QCOMPARE(v[2], -448.0f);
  } else {
    QCOMPARE(v[1], std::numeric_limits<float>::infinity());
    QCOMPARE(v[2], -std::numeric_limits<float>::infinity());
  }
  QCOMPARE(std::bit_cast<uint32_t>(v[3]), 0x80000000u);
}

void tst_TensorFile::dispatch_data() {
  QTest::addColumn<QString>("fileName");
  QTest::addColumn<QByteArray>("bytes");
  QTest::addColumn<QString>("kind");  // the reader chosen; "" = an error is expected
  QTest::addColumn<QString>("error"); // a substring of that error
  const QByteArray npy = npyBytes(qs::DType::F32, {2}, patternBytes(8));
  const QByteArray st = safetensorsImage({{"w", "F32", {2}, patternBytes(8)}});
  QTest::newRow("npy magic, odd extension") << "a.bin" << npy << "npy" << "";
  QTest::newRow("safetensors magic, no extension") << "model" << st << "safetensors" << "";
  QTest::newRow("safetensors magic, .npy extension") << "wrong.npy" << st << "safetensors" << "";
#ifdef QS_TEST_HAVE_ZIP
  const QByteArray npz = zipImage({{"w.npy", npy, true}});
  QTest::newRow("zip magic, .dat extension") << "a.dat" << npz << "npz" << "";
  QTest::newRow("empty zip (PK\\5\\6)") << "empty.npz" << zipImage({}) << "npz" << "";
  QTest::newRow("empty .npz (0 bytes)") << "empty.npz" << QByteArray() << "" << "empty file, not a .npz file";
#endif
  QTest::newRow("unknown bytes, unknown extension") << "notes.txt" << QByteArray("hello world, no tensors")
                                                    << "" << "not a recognised tensor file (supported: .npy, .npz";
  QTest::newRow("empty file, unknown extension") << "empty.bin" << QByteArray() << "" << "empty file";
  QTest::newRow("empty .npy") << "empty.npy" << QByteArray() << "" << "empty file, not a .npy file";
  QTest::newRow("short .safetensors") << "short.safetensors" << QByteArray("\x10\x00\x00", 3) << ""
                                      << "too short for the 8-byte header length";
  QTest::newRow("garbage .onnx goes to the onnx reader") << "m.onnx" << QByteArray("\x01\x02garbage") << "" << "";
  QTest::newRow(".json that is not an index") << "config.json" << QByteArray(R"({"hidden_size": 4})") << ""
                                              << "not a sharded-model index: no \"weight_map\"";
  QTest::newRow(".json whose 9th byte is '{' is not taken for .safetensors")
      << "m.JSON" << QByteArray(R"({"meta":{"a":1}})") << "" << "not a sharded-model index";
}

void tst_TensorFile::dispatch() {
  QFETCH(QString, fileName);
  QFETCH(QByteArray, bytes);
  QFETCH(QString, kind);
  QFETCH(QString, error);
  QTemporaryDir dir;
  const QString path = writeFile(dir, fileName, bytes);
  if ((kind == "safetensors" && !haveSafetensors()) || (kind == "npz" && !haveNpz()) ||
      (error.contains("sharded-model") && !haveSafetensors()))
    QSKIP("reader not built");
  if (!kind.isEmpty()) {
    auto f = qs::open_tensor_file(path.toStdString());
    QCOMPARE(QString::fromStdString(f->kind()), kind);
    return;
  }
  const QString msg = openAndReadAllError(path);
  QVERIFY2(msg.startsWith(path + ": "), qPrintable(msg));
  QVERIFY2(!msg.contains('\n'), qPrintable(msg));
  QVERIFY2(msg.contains(error), qPrintable(msg));
}

void tst_TensorFile::badInput_data() {
  QTest::addColumn<QString>("fileName");
  QTest::addColumn<QByteArray>("bytes");
  QTest::addColumn<qint64>("sparseSize");  // > 0: extend the file (sparsely) to this size
  QTest::addColumn<QString>("tensor");      // named in the message as "<file>: <tensor>: " ("" = none)
  QTest::addColumn<QString>("expected");    // a substring of the one-line message

  // .safetensors
  const QByteArray f4x2 = patternBytes(8);
  auto entry = [](const char* name, const char* dtype, const char* shape, const char* offsets) {
    return QByteArray("\"") + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":" +
           offsets + "}";
  };
  auto one = [&](const char* dtype, const char* shape, const char* offsets, const QByteArray& data) {
    return safetensorsRaw("{" + entry("w", dtype, shape, offsets) + "}", data);
  };
  const QByteArray good = safetensorsImage({{"w", "F32", {2}, f4x2}});
  auto row = [](const char* name) -> QTestData& { return QTest::newRow(name); };
  row("st empty file") << "m.safetensors" << QByteArray() << 0ll << "" << "empty file";
  row("st truncated in the length") << "m.safetensors" << good.left(5) << 0ll << "" << "truncated: 5 bytes";
  row("st truncated in the header") << "m.safetensors" << good.left(20) << 0ll << "" << "runs past the end of the file";
  row("st truncated in the data") << "m.safetensors" << good.left(good.size() - 1) << 0ll << "w"
                                  << "run past the end of the data section (7 bytes)";
  row("st header length beyond the file") << "m.safetensors" << le64(1000) + "{}" << 0ll << ""
                                          << "header length 1000 runs past the end of the file (10 bytes)";
  row("st header length 2^64-1") << "m.safetensors" << le64(~0ull) + "{}" << 0ll << "" << "above the 100 MB limit";
  row("st header length above 100 MB") << "m.safetensors" << le64(100'000'001) + "{}" << 110'000'000ll << ""
                                       << "header length 100000001 is above the 100 MB limit";
  row("st wrong magic (no '{')") << "m.safetensors" << safetensorsRaw("  {}") << 0ll << ""
                                 << "header is not a JSON object";
  row("st non-object JSON: array") << "m.safetensors" << safetensorsRaw("[1, 2]") << 0ll << ""
                                   << "header is not a JSON object";
  row("st non-object JSON: string") << "m.safetensors" << safetensorsRaw("\"w\"") << 0ll << ""
                                    << "header is not a JSON object";
  row("st invalid JSON") << "m.safetensors" << safetensorsRaw("{\"w\": {\"dtype\": }") << 0ll << ""
                         << "header is not valid JSON: parse error";
  row("st JSON with trailing garbage") << "m.safetensors" << safetensorsRaw("{} x") << 0ll << ""
                                       << "header is not valid JSON";
  row("st invalid UTF-8 in a name") << "m.safetensors" << safetensorsRaw("{\"\xff\":1}") << 0ll << ""
                                    << "header is not valid JSON";
  row("st JSON nested 100 deep") << "m.safetensors"
                                 << safetensorsRaw("{\"w\":" + QByteArray(100, '[') + QByteArray(100, ']') + "}")
                                 << 0ll << "" << "nests deeper than";
  row("st duplicate tensor name") << "m.safetensors"
                                  << safetensorsRaw("{" + entry("w", "F32", "[2]", "[0,8]") + "," +
                                                    entry("w", "F32", "[2]", "[0,8]") + "}",
                                                    f4x2)
                                  << 0ll << "" << "the key 'w' twice";
  row("st entry not an object") << "m.safetensors" << safetensorsRaw("{\"w\": [1, 2]}") << 0ll << "w"
                                << "entry is not an object";
  row("st no dtype") << "m.safetensors" << safetensorsRaw(R"({"w":{"shape":[2],"data_offsets":[0,8]}})", f4x2)
                     << 0ll << "w" << "no 'dtype'";
  row("st no shape") << "m.safetensors" << safetensorsRaw(R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", f4x2)
                     << 0ll << "w" << "no 'shape'";
  row("st no data_offsets") << "m.safetensors" << safetensorsRaw(R"({"w":{"dtype":"F32","shape":[2]}})", f4x2) << 0ll
                            << "w" << "no 'data_offsets'";
  // Unknown dtypes are skipped, not errors (safetensorsSkipsWhatItCannotRead); their ranges still count.
  row("st unknown dtype past the end") << "m.safetensors" << one("F2_E1M0", "[2]", "[0,9]", f4x2) << 0ll << "w"
                                       << "data_offsets [0, 9) run past the end of the data section (8 bytes)";
  row("st C64 of the wrong size") << "m.safetensors" << one("C64", "[2]", "[0,8]", f4x2) << 0ll << "w"
                                  << "hold 8 bytes but shape [2] of C64 needs 16";
  // Packed dtypes: the byte count is ceil(numel * bits / 8).
  row("st F4 bytes do not match the shape") << "m.safetensors" << one("F4", "[3]", "[0,1]", f4x2) << 0ll << "w"
                                            << "hold 1 bytes but shape [3] of F4 needs 2 (4 bits per element, packed)";
  row("st F4 counted as bytes") << "m.safetensors" << one("F4", "[2,4]", "[0,8]", f4x2) << 0ll << "w"
                                << "hold 8 bytes but shape [2, 4] of F4 needs 4 (4 bits per element, packed)";
  row("st F6_E3M2 bytes do not match the shape") << "m.safetensors" << one("F6_E3M2", "[4]", "[0,4]", f4x2) << 0ll
                                                 << "w" << "shape [4] of F6_E3M2 needs 3 (6 bits per element, packed)";
  row("st F6_E2M3 odd count one byte short") << "m.safetensors" << one("F6_E2M3", "[5]", "[0,3]", f4x2) << 0ll
                                             << "w" << "shape [5] of F6_E2M3 needs 4";
  row("st F8_E8M0 size") << "m.safetensors" << one("F8_E8M0", "[3]", "[0,2]", f4x2) << 0ll << "w"
                         << "hold 2 bytes but shape [3] of F8_E8M0 needs 3";
  row("st F4 shape product overflows bits") << "m.safetensors" << one("F4", "[4611686018427387904]", "[0,8]", f4x2)
                                            << 0ll << "w" << "too large (byte size overflows)";
  row("st dtype not a string") << "m.safetensors"
                               << safetensorsRaw(R"({"w":{"dtype":4,"shape":[2],"data_offsets":[0,8]}})", f4x2) << 0ll
                               << "w" << "'dtype' is not a string";
  row("st negative dim") << "m.safetensors" << one("F32", "[-2]", "[0,8]", f4x2) << 0ll << "w"
                         << "negative dimension -2";
  row("st fractional dim") << "m.safetensors" << one("F32", "[2.0]", "[0,8]", f4x2) << 0ll << "w"
                           << "other than non-negative integers";
  row("st dim beyond uint64") << "m.safetensors" << one("F32", "[99999999999999999999999]", "[0,8]", f4x2) << 0ll
                              << "w" << "other than non-negative integers";
  row("st dim beyond int64") << "m.safetensors" << one("U8", "[9223372036854775808]", "[0,8]", f4x2) << 0ll << "w"
                             << "is too large";
  row("st shape product overflows") << "m.safetensors" << one("F32", "[4294967296,4294967296]", "[0,8]", f4x2)
                                    << 0ll << "w" << "overflows";
  row("st overflow behind a zero dim") << "m.safetensors"
                                       << one("F32", "[0,4294967296,4294967296]", "[0,0]", f4x2) << 0ll << "w"
                                       << "overflows";
  row("st byte size overflows") << "m.safetensors" << one("F64", "[2305843009213693952]", "[0,8]", f4x2) << 0ll
                                << "w" << "byte size overflows";
  row("st dtype x shape disagree") << "m.safetensors" << one("F32", "[3]", "[0,8]", f4x2) << 0ll << "w"
                                   << "hold 8 bytes but shape [3] of F32 needs 12";
  row("st dtype disagrees (F64)") << "m.safetensors" << one("F64", "[2]", "[0,8]", f4x2) << 0ll << "w"
                                  << "needs 16";
  row("st offsets past the end") << "m.safetensors" << one("F32", "[2]", "[4,12]", f4x2) << 0ll << "w"
                                 << "data_offsets [4, 12) run past the end of the data section (8 bytes)";
  row("st offsets near 2^64") << "m.safetensors"
                              << one("U8", "[8]", "[18446744073709551608,18446744073709551615]", f4x2) << 0ll << "w"
                              << "run past the end of the data section";
  row("st offsets reversed") << "m.safetensors" << one("U8", "[0]", "[8,0]", f4x2) << 0ll << "w"
                             << "end before they begin";
  row("st offsets not a pair") << "m.safetensors" << one("F32", "[2]", "[0,8,8]", f4x2) << 0ll << "w"
                               << "not a pair of non-negative integers";
  row("st offsets negative") << "m.safetensors" << one("F32", "[2]", "[-8,0]", f4x2) << 0ll << "w"
                             << "not a pair of non-negative integers";
  row("st overlapping offsets") << "m.safetensors"
                                << safetensorsRaw("{" + entry("a", "F32", "[2]", "[0,8]") + "," +
                                                  entry("b", "F32", "[1]", "[4,8]") + "}",
                                                  f4x2)
                                << 0ll << "b" << "data_offsets [4, 8) overlap tensor 'a' [0, 8)";
  row("st overlap with a tensor two back") << "m.safetensors"
                                           << safetensorsRaw("{" + entry("a", "U8", "[8]", "[0,8]") + "," +
                                                             entry("b", "U8", "[1]", "[2,3]") + "," +
                                                             entry("c", "U8", "[2]", "[5,7]") + "}",
                                                             f4x2)
                                           << 0ll << "b" << "overlap tensor 'a'";
  row("st control bytes in a name stay on one line") << "m.safetensors"
                                                     << safetensorsRaw("{" + entry("a\\nb", "F32", "[3]", "[0,8]") + "}", f4x2)
                                                     << 0ll << "a\\x0ab" << "hold 8 bytes but shape [3] of F32 needs 12";

  // .npy
  const QByteArray npy = npyBytes(qs::DType::F32, {2}, f4x2);
  row("npy wrong magic") << "x.npy" << QByteArray(npy).replace(1, 5, "NUMPx") << 0ll << "" << "bad magic";
  row("npy truncated header") << "x.npy" << npy.left(30) << 0ll << "" << "runs past the end";
  row("npy truncated data") << "x.npy" << npy.left(npy.size() - 3) << 0ll << "" << "(truncated)";
  row("npy shape product overflows") << "x.npy"
                                     << npyRaw("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", f4x2)
                                     << 0ll << "" << "overflows";

  // .npz
#ifdef QS_TEST_HAVE_ZIP
  row("npz wrong magic") << "x.npz" << QByteArray("PX\x03\x04 not a zip at all") << 0ll << ""
                         << "not a .npz file (not a zip archive)";
  // torch.save's zip layout (stored members, as torch writes them): named, not read as an empty .npz.
  const QList<ZipMember> torchZip{{"model/data.pkl", QByteArray("\x80\x02}q\x00.", 6), false},
                                  {"model/byteorder", "little", false},
                                  {"model/data/0", patternBytes(16), false},
                                  {"model/version", "3\n", false}};
  const char* torchMsg = "a PyTorch checkpoint (torch.save zip), not an .npz; PyTorch files are not read yet";
  row("pt zip (torch.save)") << "model.pt" << zipImage(torchZip) << 0ll << "" << torchMsg;
  row("pt zip named .npz") << "x.npz" << zipImage(torchZip) << 0ll << "" << torchMsg;
  row("pt zip, top-level data.pkl") << "old.pth" << zipImage({{"data.pkl", "x", false}, {"version", "3", false}})
                                    << 0ll << "" << torchMsg;
  const QByteArray npz = zipImage({{"a.npy", npy, true}, {"b.npy", npy, false}});
  row("npz truncated") << "x.npz" << npz.left(npz.size() / 2) << 0ll << "" << ".npz";
  row("npz truncated end of central directory") << "x.npz" << npz.left(npz.size() - 4) << 0ll << "" << ".npz";
  row("npz member not a valid .npy") << "x.npz" << zipImage({{"a.npy", "hello, world", true}}) << 0ll << "a.npy"
                                     << "not a .npy file (bad magic";
  row("npz member empty") << "x.npz" << zipImage({{"a.npy", "", false}}) << 0ll << "a.npy" << "empty file";
  row("npz member with a bad dtype") << "x.npz"
                                     << zipImage({{"a.npy", npyRaw("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", f4x2), true}})
                                     << 0ll << "a.npy" << "unsupported dtype '>f4'";
  row("npz member data truncated") << "x.npz" << zipImage({{"a.npy", npy.left(npy.size() - 2), true}}) << 0ll
                                   << "a.npy" << "(truncated)";
  row("npz member shape overflows") << "x.npz"
                                    << zipImage({{"a.npy", npyRaw("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", f4x2), false}})
                                    << 0ll << "a.npy" << "overflows";
  {
    QByteArray z = zipImage({{"a.npy", npy + QByteArray(4000, '\0'), true}});
    const auto [at, size] = firstMemberData(z);
    z[at] = char(0xff);  // BFINAL=1, BTYPE=11: a reserved block type
    Q_UNUSED(size);
    row("npz corrupt deflate stream (first block)") << "x.npz" << z << 0ll << "a.npy" << "cannot decompress";
  }
  {
    QByteArray z = zipImage({{"a.npy", npy, true}});
    const auto [at, size] = firstMemberData(z);
    for (qsizetype i = at; i < at + size; ++i) z[i] = char(0x5a ^ z[i]);
    row("npz corrupt deflate stream (all bytes)") << "x.npz" << z << 0ll << "a.npy" << "cannot decompress";
  }
  {
    QByteArray z = zipImage({{"a.npy", npy, false}});
    const auto [at, size] = firstMemberData(z);
    z[at + size - 1] = char(z[at + size - 1] ^ 1);  // a data byte of a stored member: only the CRC knows
    row("npz CRC mismatch") << "x.npz" << z << 0ll << "a.npy" << "CRC error";
  }
  {
    QByteArray z = zipImage({{"a.npy", npy, false}, {"b.npy", npy, false}});
    z.replace("b.npy", "a.npy");  // local and central names: two members with one name
    row("npz duplicate member") << "x.npz" << z << 0ll << "" << "two members have the same name";
  }
  {
    // The central directory claims a 4 GB uncompressed size for a few deflated bytes.
    QByteArray z = zipImage({{"a.npy", npy, true}});
    const qsizetype cd = z.lastIndexOf(QByteArray("PK\x01\x02", 4));
    const qsizetype lh = 0;
    for (qsizetype at : {cd + 24, lh + 22}) z.replace(at, 4, QByteArray("\xf0\xff\xff\xff", 4));
    row("npz size beyond deflate ratio") << "x.npz" << z << 0ll << "a.npy" << "more than deflate can expand";
  }
  {
    // Method 12 (bzip2) in the local and the central header: numpy never writes it, so refuse it.
    QByteArray z = zipImage({{"a.npy", npy, false}});
    const qsizetype cd = z.lastIndexOf(QByteArray("PK\x01\x02", 4));
    z[8] = z[cd + 10] = char(12);
    row("npz unsupported compression method") << "x.npz" << z << 0ll << "a.npy"
                                              << "compression method 12 is not supported";
  }
#endif
}

void tst_TensorFile::badInput() {
  QFETCH(QString, fileName);
  QFETCH(QByteArray, bytes);
  QFETCH(qint64, sparseSize);
  QFETCH(QString, tensor);
  QFETCH(QString, expected);
  if (fileName.endsWith(".safetensors") && !haveSafetensors()) QSKIP("built without nlohmann-json");
  if (fileName.endsWith(".npz") && !haveNpz()) QSKIP("built without libzip");
  QTemporaryDir dir;
  const QString path = writeFile(dir, fileName, bytes);
  if (sparseSize > 0) QVERIFY(QFile::resize(path, sparseSize));
  const QString msg = openAndReadAllError(path);
  QVERIFY2(!msg.isEmpty(), "no qs::IoError thrown");
  if (qEnvironmentVariableIsSet("QS_SHOW_ERRORS")) qInfo("%s", qPrintable(msg));
  QVERIFY2(!msg.contains('\n') && !msg.contains('\r'), qPrintable(msg));
  const QString prefix = path + ": " + (tensor.isEmpty() ? QString() : tensor + ": ");
  QVERIFY2(msg.startsWith(prefix), qPrintable(msg));
  QVERIFY2(msg.contains(expected), qPrintable(msg));
}

void tst_TensorFile::readIndexOutOfRange() {
  QTemporaryDir dir;
  const QString path = writeFile(dir, "x.npy", npyBytes(qs::DType::U8, {3}, "abc"));
  auto f = qs::open_tensor_file(path.toStdString());
  QVERIFY_THROWS_EXCEPTION(qs::IoError, f->read(1));
  if (haveSafetensors()) {
    const QString p2 = writeFile(dir, "x.safetensors", safetensorsImage({{"w", "U8", {3}, "abc"}}));
    QVERIFY_THROWS_EXCEPTION(qs::IoError, qs::open_tensor_file(p2.toStdString())->read(7));
  }
  const QString missing = dir.filePath("missing.safetensors");
  QVERIFY(openAndReadAllError(missing).startsWith(missing + ": cannot open: "));
  // A folder opens as a sharded model (issue 13); one without shards says so.
  QVERIFY(QDir(dir.path()).mkdir("empty"));
  const QString empty = dir.filePath("empty");
  if (haveSafetensors()) {
    const QString msg = openAndReadAllError(empty);
    QVERIFY2(msg == empty + ": is a folder with no .safetensors files and no *.safetensors.index.json (a folder opens "
                            "as a sharded safetensors model)",
             qPrintable(msg));
  }
}

// F5: a file that shrinks after open (a checkpoint rewritten in place while analysed) gives a one-line
// IoError when the tensor is read; the memory map it replaced raised SIGBUS and killed the process.
void tst_TensorFile::truncatedAfterOpen_data() {
  QTest::addColumn<QString>("fileName");
  QTest::addColumn<QByteArray>("bytes");
  QTest::addColumn<bool>("viaReadF32");
  const QByteArray payload = patternBytes(1 << 20, 31);  // 1 MiB of float32, cut in the middle
  const QByteArray st = safetensorsImage({{"w", "F32", {1 << 18}, payload}});
  QTest::newRow("safetensors read") << "w.safetensors" << st << false;
  QTest::newRow("safetensors read_f32") << "w.safetensors" << st << true;
  QTest::newRow("npy read") << "w.npy" << npyBytes(qs::DType::F32, {1 << 18}, payload) << false;
  QTest::newRow("npy read_f32 (float16)") << "w.npy" << npyBytes(qs::DType::F16, {1 << 19}, payload) << true;
#ifdef QS_TEST_HAVE_ZIP
  const QByteArray npy = npyBytes(qs::DType::F32, {1 << 18}, payload);
  QTest::newRow("npz stored") << "w.npz" << zipImage({{"w.npy", npy, false}}) << false;
  QTest::newRow("npz deflated") << "w.npz" << zipImage({{"w.npy", npy, true}}) << false;
#endif
}

void tst_TensorFile::truncatedAfterOpen() {
  QFETCH(QString, fileName);
  QFETCH(QByteArray, bytes);
  QFETCH(bool, viaReadF32);
  if (fileName.endsWith(".safetensors") && !haveSafetensors()) QSKIP("built without nlohmann-json");
  QTemporaryDir dir;
  const QString path = writeFile(dir, fileName, bytes);
  auto f = qs::open_tensor_file(path.toStdString());
  QCOMPARE(f->tensors().size(), std::size_t(1));
  QCOMPARE(::truncate(QFile::encodeName(path).constData(), off_t(bytes.size() / 2)), 0);
  QString msg;
  try {
    std::vector<float> x(f->tensors()[0].numel());
    if (viaReadF32)
      f->read_f32(0, x.data());
    else
      f->read(0);
  } catch (const qs::IoError& e) {
    msg = QString::fromUtf8(e.what());
  }
  QVERIFY2(!msg.isEmpty(), "no qs::IoError thrown");
  QVERIFY2(!msg.contains('\n'), qPrintable(msg));
  QVERIFY2(msg.startsWith(path + ": changed size while reading (" + QString::number(bytes.size()) +
                          " bytes when opened, " + QString::number(bytes.size() / 2) + " now)"),
           qPrintable(msg));
}

// F12: FIFOs and devices are refused at once with a clear message, by dispatch and by every reader.
// open() on a FIFO used to block until a writer came; a stuck call is freed here by opening the FIFO
// for writing, so that the bug fails the row instead of hanging the test.
void tst_TensorFile::nonRegularFile_data() {
  QTest::addColumn<QString>("reader");  // "" = open_tensor_file
  QTest::addColumn<QString>("target");  // "fifo" = a named pipe in a temp folder, else a device path
  QTest::addColumn<QString>("expected");
  const QString fifo = "is a FIFO (named pipe), not a regular file";
  QTest::newRow("fifo, dispatch") << "" << "fifo" << fifo;
  for (const char* r : {"npy", "npz", "safetensors", "onnx"})
    QTest::addRow("fifo, %s reader", r) << QString(r) << "fifo" << fifo;
  QTest::newRow("/dev/zero, dispatch") << "" << "/dev/zero" << "is a character device, not a regular file";
  QTest::newRow("/dev/null, npy reader") << "npy" << "/dev/null" << "is a character device, not a regular file";
}

void tst_TensorFile::nonRegularFile() {
  QFETCH(QString, reader);
  QFETCH(QString, target);
  QFETCH(QString, expected);
  if (!reader.isEmpty() && !qs::tensor_reader_available(reader.toStdString())) QSKIP("reader not built");
  QTemporaryDir dir;
  QString path = target;
  if (target == "fifo") {
    path = dir.filePath("pipe." + (reader.isEmpty() ? QString("npy") : reader));
    QCOMPARE(::mkfifo(QFile::encodeName(path).constData(), 0600), 0);
  } else if (!QFile::exists(target)) {
    QSKIP("device not present");
  }
  const std::string p = path.toStdString();
  std::function<std::unique_ptr<qs::TensorFile>(const std::string&)> open = qs::open_tensor_file;
  if (reader == "npy") open = qs::open_npy_file;
  if (reader == "npz") open = qs::open_npz_file;
  if (reader == "safetensors") open = qs::open_safetensors_file;
  if (reader == "onnx") open = qs::open_onnx_file;
  auto result = std::async(std::launch::async, [open, p]() -> QString {
    try {
      open(p);
    } catch (const qs::IoError& e) {
      return QString::fromUtf8(e.what());
    }
    return {};
  });
  const bool prompt = result.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
  while (result.wait_for(std::chrono::milliseconds(50)) != std::future_status::ready) {
    const int w = ::open(QFile::encodeName(path).constData(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (w >= 0) ::close(w);
  }
  const QString msg = result.get();
  QVERIFY2(prompt, "opening a non-regular file blocked");
  QVERIFY2(msg == path + ": " + expected + "; tensor files must be regular files", qPrintable(msg));
}

// Issue 13 item 4: an index and three shards read as one model: every tensor, shard by shard in file
// order, bytes and float32 values exact, read in any order (shards are closed and reopened meanwhile).
void tst_TensorFile::shardedIndexReadsAsOneModel() {
  if (!haveSafetensors()) QSKIP("built without nlohmann-json");
  QTemporaryDir dir;
  const ShardedFixture m = shardedFixture();
  writeFiles(dir, m.files());
  const QString index = dir.filePath("model.safetensors.index.json");
  auto f = qs::open_tensor_file(index.toStdString());
  QCOMPARE(QString::fromStdString(f->kind()), QString("sharded safetensors"));
  QCOMPARE(QString::fromStdString(f->path()), index);
  QVERIFY(f->skipped().empty());
  QList<StTensor> all;
  for (const auto& shard : m.shard) all += shard;
  QCOMPARE(f->tensors().size(), std::size_t(all.size()));
  const qs::DType dtypes[] = {qs::DType::F32, qs::DType::F32, qs::DType::BF16, qs::DType::F16, qs::DType::F8E4M3, qs::DType::F32};
  // Read 5, 0, 3, 1, 4, 2, then again 0..5: every shard is closed and reopened at least once.
  const std::size_t order[] = {5, 0, 3, 1, 4, 2, 0, 1, 2, 3, 4, 5};
  for (std::size_t i : order) {
    const qs::TensorInfo& t = f->tensors()[i];
    QCOMPARE(QByteArray::fromStdString(t.name), all[qsizetype(i)].name);
    QCOMPARE(t.dtype, dtypes[i]);
    QCOMPARE(t.shape, all[qsizetype(i)].shape);
    QCOMPARE(bytesOf(f->read(i)), all[qsizetype(i)].data);
    std::vector<float> want(t.numel()), got(t.numel());
    qs::convert_to_f32(t.dtype, reinterpret_cast<const uint8_t*>(all[qsizetype(i)].data.constData()), t.numel(), want.data());
    f->read_f32(i, got.data());
    QVERIFY(std::memcmp(want.data(), got.data(), want.size() * 4) == 0);
  }
  // The bytes of a read outlive the model and its open shards.
  qs::TensorBytes kept = f->read(2);
  f.reset();
  QCOMPARE(bytesOf(kept), all[2].data);
  QVERIFY_THROWS_EXCEPTION(qs::IoError, qs::open_sharded_model(index.toStdString())->read(6));
}

// The folder forms: with an index (the index decides; another .safetensors beside it is named as not
// read) and without one (every shard, by file name).
void tst_TensorFile::shardedFolder_data() {
  QTest::addColumn<bool>("withIndex");
  QTest::newRow("folder with index") << true;
  QTest::newRow("folder without index") << false;
}

void tst_TensorFile::shardedFolder() {
  QFETCH(bool, withIndex);
  if (!haveSafetensors()) QSKIP("built without nlohmann-json");
  QTemporaryDir dir;
  const ShardedFixture m = shardedFixture();
  Files files = m.files();
  if (!withIndex) files.removeLast();
  writeFiles(dir, files);
  const QByteArray consolidated = patternBytes(8, 9);
  if (withIndex) writeFile(dir, "consolidated.safetensors", safetensorsImage({{"c", "F32", {2}, consolidated}}));
  writeFile(dir, "config.json", R"({"hidden_size": 4})");  // other files of a model folder are not looked at
  auto f = qs::open_tensor_file(dir.path().toStdString());
  QCOMPARE(QString::fromStdString(f->kind()), QString("sharded safetensors"));
  QCOMPARE(QString::fromStdString(f->path()), dir.path());
  QList<StTensor> all;
  for (const auto& shard : m.shard) all += shard;
  QCOMPARE(f->tensors().size(), std::size_t(all.size()));
  for (std::size_t i = 0; i < f->tensors().size(); ++i) {
    QCOMPARE(QByteArray::fromStdString(f->tensors()[i].name), all[qsizetype(i)].name);
    QCOMPARE(bytesOf(f->read(i)), all[qsizetype(i)].data);
  }
  if (withIndex) {
    QCOMPARE(f->skipped().size(), std::size_t(1));
    QCOMPARE(QString::fromStdString(f->skipped()[0]),
             QString("consolidated.safetensors: a .safetensors file not named in model.safetensors.index.json, not read"));
  } else {
    QVERIFY(f->skipped().empty());
  }
  // A folder of one file is a model of one shard.
  QTemporaryDir one;
  writeFile(one, "model.safetensors", safetensorsImage({{"w", "F32", {2}, consolidated}}));
  auto g = qs::open_tensor_file(one.path().toStdString());
  QCOMPARE(g->tensors().size(), std::size_t(1));
  QCOMPARE(bytesOf(g->read(0)), consolidated);
}

// Nothing vanishes: a shard tensor the index does not name, and a shard's own skipped entry (a dtype not
// read), are listed in skipped(); the rest of the model reads.
void tst_TensorFile::shardedListsWhatItDoesNotRead() {
  if (!haveSafetensors()) QSKIP("built without nlohmann-json");
  QTemporaryDir dir;
  const QByteArray w = patternBytes(8, 1), v = patternBytes(4, 2);
  writeFiles(dir, {{"a.safetensors", safetensorsImage({{"w", "F32", {2}, w}, {"extra", "F32", {1}, v}})},
                   {"b.safetensors", safetensorsImage({{"v", "F32", {1}, v}, {"cplx", "C64", {1}, patternBytes(8)}})},
                   {"m.safetensors.index.json", indexJson({{"w", "a.safetensors"}, {"v", "b.safetensors"},
                                                           {"cplx", "b.safetensors"}})}});
  auto f = qs::open_tensor_file(dir.filePath("m.safetensors.index.json").toStdString());
  QCOMPARE(f->tensors().size(), std::size_t(2));
  QCOMPARE(bytesOf(f->read(0)), w);
  QCOMPARE(bytesOf(f->read(1)), v);
  QCOMPARE(f->skipped().size(), std::size_t(2));
  QCOMPARE(QString::fromStdString(f->skipped()[0]), QString("extra: in a.safetensors but not in the index, not read"));
  QVERIFY2(QString::fromStdString(f->skipped()[1]).startsWith("b.safetensors: cplx: dtype C64 is complex"),
           f->skipped()[1].c_str());
  // Two spellings of one shard ("./a.safetensors", "a.safetensors") are one shard, not two holding 'w'.
  const QString n = writeFile(dir, "n.safetensors.index.json",
                              indexJson({{"w", "./a.safetensors"}, {"extra", "a.safetensors"}, {"v", "b.safetensors"}}));
  auto g = qs::open_tensor_file(n.toStdString());
  QCOMPARE(g->tensors().size(), std::size_t(3));
  QCOMPARE(QString::fromStdString(g->tensors()[1].name), QString("extra"));
  QCOMPARE(bytesOf(g->read(1)), v);
  QCOMPARE(g->skipped().size(), std::size_t(1));
}

// Each bad index or shard set: one IoError line naming the file at fault (the index, or the folder when
// it is the folder's shards that clash) and what is wrong.
void tst_TensorFile::shardedBadInput_data() {
  QTest::addColumn<Files>("files");
  QTest::addColumn<QString>("open");    // what is opened, relative to the folder ("" = the folder)
  QTest::addColumn<QString>("prefix");  // the message starts with <folder>/<prefix>: ("" = <folder>: )
  QTest::addColumn<QString>("expected");
  const QByteArray a = safetensorsImage({{"w", "F32", {2}, patternBytes(8)}});
  const QByteArray b = safetensorsImage({{"v", "F32", {2}, patternBytes(8, 2)}});
  const QByteArray bw = safetensorsImage({{"v", "F32", {2}, patternBytes(8, 2)}, {"w", "F32", {1}, patternBytes(4)}});
  const QString idx = "model.safetensors.index.json";
  auto index = [&](const QByteArray& json) { return qMakePair(idx, json); };
  auto row = [&](const char* name, const Files& files, const QString& expected, const QString& open = "model.safetensors.index.json",
                 const QString& prefix = "model.safetensors.index.json") {
    QTest::newRow(name) << files << open << prefix << expected;
  };
  const Files ab = {{"a.safetensors", a}, {"b.safetensors", b}};
  row("missing shard", Files{{"a.safetensors", a}} << index(indexJson({{"w", "a.safetensors"}, {"v", "b.safetensors"}})),
      "shard 'b.safetensors' (named for 1 tensor, e.g. 'v') is missing: no file ");
  row("missing shard, folder form", Files{{"a.safetensors", a}} << index(indexJson({{"w", "a.safetensors"}, {"v", "b.safetensors"}})),
      "shard 'b.safetensors' (named for 1 tensor, e.g. 'v') is missing", "", idx);
  row("tensor absent from its shard", Files(ab) << index(indexJson({{"w", "a.safetensors"}, {"x", "a.safetensors"}, {"v", "b.safetensors"}})),
      "x: the index puts it in 'a.safetensors', which does not hold it");
  row("tensor in two shards", Files{{"a.safetensors", a}, {"b.safetensors", bw}} << index(indexJson({{"w", "a.safetensors"}, {"v", "b.safetensors"}})),
      "w: in two shards, 'a.safetensors' (as the index says) and 'b.safetensors'");
  row("tensor in two shards, folder without index", Files{{"a.safetensors", a}, {"b.safetensors", bw}},
      "w: in two shards, 'a.safetensors' and 'b.safetensors'", "", "");
  row("tensor named twice in weight_map", Files(ab) << index(R"({"weight_map": {"w": "a.safetensors", "w": "b.safetensors"}})"),
      "w: named twice in \"weight_map\"");
  row("top-level key twice", Files(ab) << index(R"({"weight_map": {"w": "a.safetensors"}, "weight_map": {}})"),
      "the index has the key 'weight_map' twice");
  row("shard path ../", Files(ab) << index(indexJson({{"w", "../a.safetensors"}})),
      "w: shard '../a.safetensors' leaves the index's folder ('..'); shards must lie in it");
  row("shard path sub/../../", Files(ab) << index(indexJson({{"w", "sub/../../a.safetensors"}})), "leaves the index's folder");
  row("shard path absolute", Files(ab) << index(indexJson({{"w", "/tmp/a.safetensors"}})),
      "w: shard '/tmp/a.safetensors' is an absolute path; shards must lie in the index's folder");
  row("shard name empty", Files(ab) << index(indexJson({{"w", ""}})), "w: shard '' is an empty name");
  row("shard name with NUL", Files(ab) << index(R"({"weight_map": {"w": "a.safetensors\u0000.txt"}})"),
      "w: shard 'a.safetensors\\x00.txt' holds a NUL byte");
  row("shard not safetensors (pytorch index)", Files(ab) << qMakePair(QString("pytorch_model.bin.index.json"), indexJson({{"w", "pytorch_model-00001-of-00002.bin"}})),
      "w: shard 'pytorch_model-00001-of-00002.bin' is not a .safetensors file (only safetensors shards are read)",
      "pytorch_model.bin.index.json", "pytorch_model.bin.index.json");
  row("malformed JSON", Files(ab) << index(R"({"weight_map": {"w": "a.safetensors",)"), "not valid JSON: parse error at line 1, column 38: syntax error");
  row("empty index file", Files(ab) << index(""), "not valid JSON");
  row("top level not an object", Files(ab) << index("[1, 2]"), "not a sharded-model index (a JSON object with \"weight_map\")");
  row("no weight_map", Files(ab) << index(R"({"metadata": {}})"), "not a sharded-model index: no \"weight_map\" at the top level");
  row("weight_map an array", Files(ab) << index(R"({"weight_map": ["a.safetensors"]})"),
      "\"weight_map\" is not an object of tensor name -> shard file");
  row("weight_map value a number", Files(ab) << index(R"({"weight_map": {"w": 3}})"),
      "w: its shard in \"weight_map\" is not a string");
  row("weight_map value an object", Files(ab) << index(R"({"weight_map": {"w": {"file": "a.safetensors"}}})"),
      "w: its shard in \"weight_map\" is not a string");
  row("weight_map empty", Files(ab) << index(R"({"weight_map": {}})"), "\"weight_map\" is empty: the index names no tensors");
  row("nesting deeper than 32", Files(ab) << index("{\"metadata\":" + QByteArray(40, '[') + QByteArray(40, ']') + "}"),
      "the index nests deeper than 32 levels");
  row("name with control bytes is escaped", Files(ab) << index(R"({"weight_map": {"a\u001b[31mb": "../a.safetensors"}})"),
      "a\\x1b[31mb: shard '../a.safetensors' leaves");
  // A broken shard gives its own reader's line, which names the shard.
  row("truncated shard", Files{{"a.safetensors", a.left(20)}, {"b.safetensors", b}} << index(indexJson({{"w", "a.safetensors"}, {"v", "b.safetensors"}})),
      "header length", idx, "a.safetensors");
  row("folder without shards", Files{{"notes.txt", "hello"}}, "is a folder with no .safetensors files", "", "");
  row("folder with two indexes", Files(ab) << qMakePair(QString("x.safetensors.index.json"), indexJson({{"w", "a.safetensors"}}))
                                          << qMakePair(QString("y.safetensors.index.json"), indexJson({{"v", "b.safetensors"}})),
      "holds 2 sharded-model indexes ('x.safetensors.index.json', 'y.safetensors.index.json'); open one of them", "", "");
  // Sizes: the index is refused from its size before it is read (sparse: no disk used).
  row("index above 64 MiB", Files(ab) << index(QByteArray("SPARSE")), "67108865 bytes, above the 64 MiB limit for a sharded-model index");
}

void tst_TensorFile::shardedBadInput() {
  QFETCH(Files, files);
  QFETCH(QString, open);
  QFETCH(QString, prefix);
  QFETCH(QString, expected);
  if (!haveSafetensors()) QSKIP("built without nlohmann-json");
  QTemporaryDir dir;
  writeFiles(dir, files);
  for (const auto& [name, bytes] : files)
    if (bytes == "SPARSE") QVERIFY(QFile::resize(dir.filePath(name), (64 << 20) + 1));
  const QString path = open.isEmpty() ? dir.path() : dir.filePath(open);
  const QString msg = openAndReadAllError(path);
  QVERIFY2(!msg.isEmpty(), "no qs::IoError thrown");
  if (qEnvironmentVariableIsSet("QS_SHOW_ERRORS")) qInfo("%s", qPrintable(msg));
  QVERIFY2(!msg.contains('\n') && !msg.contains('\r'), qPrintable(msg));
  const QString start = (prefix.isEmpty() ? dir.path() : dir.filePath(prefix)) + ": ";
  QVERIFY2(msg.startsWith(start), qPrintable(msg));
  QVERIFY2(msg.contains(expected), qPrintable(msg));
}

// A shard rewritten after the model was opened (a download finishing, say) gives one line when its
// tensor is read, never another tensor's bytes; an open shard that shrinks says so as a single file does.
void tst_TensorFile::shardedShardChangedAfterOpen() {
  if (!haveSafetensors()) QSKIP("built without nlohmann-json");
  QTemporaryDir dir;
  writeFiles(dir, shardedFixture().files());
  auto f = qs::open_tensor_file(dir.path().toStdString());
  // Shards 1 and 2 were opened last and stay open; shard 0 is reopened on demand.
  const QString s0 = dir.filePath("model-00001-of-00003.safetensors");
  writeFile(dir, "model-00001-of-00003.safetensors", safetensorsImage({{"other", "F32", {2}, patternBytes(8)}}));
  QString msg;
  try {
    f->read(0);
  } catch (const qs::IoError& e) {
    msg = QString::fromUtf8(e.what());
  }
  QVERIFY2(msg == s0 + ": model.layers.0.w: the shard changed since the model was opened (the tensor is no longer "
                       "where it was)",
           qPrintable(msg));
  const QString s2 = dir.filePath("model-00003-of-00003.safetensors");
  const qint64 size = QFileInfo(s2).size();
  QCOMPARE(::truncate(QFile::encodeName(s2).constData(), off_t(size - 2)), 0);
  msg.clear();
  try {
    std::vector<float> x(f->tensors()[5].numel());
    f->read_f32(5, x.data());
  } catch (const qs::IoError& e) {
    msg = QString::fromUtf8(e.what());
  }
  QVERIFY2(msg.startsWith(s2 + ": changed size while reading"), qPrintable(msg));
}

// Not a check: with QS_FUZZ_CORPUS=DIR set, writes the seed corpora of tests/fuzz/ (DIR/npy, DIR/npz,
// DIR/safetensors, DIR/sharded) from the same writers the tests use. `QS_FUZZ_CORPUS=tests/fuzz/corpus
// build/tests/tst_tensorfile writeFuzzCorpus`
void tst_TensorFile::writeFuzzCorpus() {
  const QString root = qEnvironmentVariable("QS_FUZZ_CORPUS");
  if (root.isEmpty()) QSKIP("set QS_FUZZ_CORPUS=DIR to write the fuzz seed corpora");
  auto put = [&](const QString& kind, const QString& name, const QByteArray& bytes) {
    QVERIFY(QDir().mkpath(root + "/" + kind));
    QFile f(root + "/" + kind + "/" + name);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write(bytes);
  };
  // .npy: every dtype, scalar / empty / 2-d, and a v2 header.
  for (qs::DType t : kNpyDtypes)
    put("npy", QString("%1_2x3.npy").arg(qs::to_string(t)), npyBytes(t, {2, 3}, patternBytes(qsizetype(6 * qs::dtype_size(t)))));
  put("npy", "float32_scalar.npy", npyBytes(qs::DType::F32, {}, patternBytes(4)));
  put("npy", "float64_empty.npy", npyBytes(qs::DType::F64, {0, 3}, {}));
  put("npy", "v2_header.npy", npyRaw("{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }", patternBytes(4), 0, 2));
  put("npy", "v3_header.npy", npyRaw("{'descr': '<u2', 'fortran_order': False, 'shape': (1, 2), }", patternBytes(4), 3, 3));

  // .safetensors: every dtype in one file, metadata, an empty tensor, keys out of offset order.
  QList<StTensor> all;
  for (const DtypeCase& c : kStDtypes)
    all << StTensor{QByteArray("t.") + c.st, c.st, {2}, patternBytes(qsizetype(qs::dtype_nbytes(c.dtype, 2)))};
  put("safetensors", "all_dtypes.safetensors", safetensorsImage(all, R"({"format":"pt"})"));
  put("safetensors", "scalar_and_empty.safetensors",
      safetensorsImage({{"s", "F32", {}, patternBytes(4)}, {"e", "BF16", {0, 4}, {}}, {"m", "F16", {2, 2}, patternBytes(8)}}));
  put("safetensors", "empty.safetensors", safetensorsImage({}));
  // Low-bit dtypes (issue 13): every code once plus an odd tail, packed; a dtype that is skipped.
  QList<StTensor> lowbit;
  for (const LowBitCase& c : kLowBit) {
    const std::vector<uint32_t> codes = everyCode(c.bits, 1);
    lowbit << StTensor{QByteArray("t.") + c.st, c.st, {int64_t(codes.size())}, packCodes(codes, c.bits)};
  }
  put("safetensors", "lowbit_every_code.safetensors", safetensorsImage(lowbit));
  put("safetensors", "packed_odd.safetensors",
      safetensorsImage({{"f4", "F4", {3}, QByteArray("\x21\x07", 2)}, {"f6", "F6_E2M3", {5}, patternBytes(4)},
                        {"e3m2", "F6_E3M2", {2, 2}, patternBytes(3)}, {"e8m0", "F8_E8M0", {3}, patternBytes(3)}}));
  put("safetensors", "skipped_dtypes.safetensors",
      safetensorsImage({{"w", "F32", {2}, patternBytes(8)}, {"c", "C64", {1}, patternBytes(8)},
                        {"x", "F2_E1M0", {4}, "a"}}));

  // Sharded-model indexes over the two shards that fuzz_sharded writes beside each input
  // (model-00001-of-00002: a.w, a.b; model-00002-of-00002: b.w, b.c (C64), b.extra).
  const QByteArray s1 = "model-00001-of-00002.safetensors", s2 = "model-00002-of-00002.safetensors";
  put("sharded", "all.json", indexJson({{"a.b", s1}, {"a.w", s1}, {"b.c", s2}, {"b.extra", s2}, {"b.w", s2}}));
  put("sharded", "subset.json", indexJson({{"a.w", s1}, {"b.w", s2}}));
  put("sharded", "missing_shard.json", indexJson({{"a.w", s1}, {"x", "model-00003-of-00003.safetensors"}}));
  put("sharded", "absent_tensor.json", indexJson({{"a.w", s1}, {"nope", s2}}));
  put("sharded", "wrong_shard.json", indexJson({{"a.w", s2}, {"b.w", s2}}));
  put("sharded", "escape.json", indexJson({{"a.w", "../" + s1}, {"b.w", "/" + s2}}));
  put("sharded", "bad_values.json", R"({"metadata":{"total_size":[1,{"x":null}]},"weight_map":{"a.w":1,"b.w":"x.bin"}})");

#ifdef QS_TEST_HAVE_ZIP
  // .npz: stored (np.savez) and deflated (np.savez_compressed), a non-tensor member, an empty archive.
  const QByteArray a = npyBytes(qs::DType::F32, {2, 2}, patternBytes(16)), b = npyBytes(qs::DType::I8, {5}, patternBytes(5));
  put("npz", "stored.npz", zipImage({{"arr_0.npy", a, false}, {"arr_1.npy", b, false}}));
  put("npz", "deflated.npz", zipImage({{"w.npy", a, true}, {"b.npy", b, true}}));
  put("npz", "mixed.npz", zipImage({{"notes.txt", "hi", true}, {"x.npy", b, false}, {"y.npy", a, true}}));
  put("npz", "empty.npz", zipImage({}));
#endif
}

QTEST_APPLESS_MAIN(tst_TensorFile)
#include "tst_tensorfile.moc"
