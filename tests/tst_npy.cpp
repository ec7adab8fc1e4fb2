// Tests for core/io/npy.h and core/io/atomic_file.h: round trips of every dtype, numpy-identical header
// bytes, every malformed-file case as a data row, exact float16, atomic writes that leave nothing behind.
// Run: cmake --build build --target tst_npy && QT_QPA_PLATFORM=offscreen build/tests/tst_npy
#include "io/atomic_file.h"
#include "io/npy.h"

#include <QDir>
#include <QDirIterator>
#include <QTemporaryDir>
#include <QTest>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define QS_TEST_HAVE_F16C 1
#endif

Q_DECLARE_METATYPE(qs::DType)

namespace {

using Shape = std::vector<int64_t>;

// A .npy image with the header text exactly as given (no padding added), so rows can spell any
// header, including ones numpy would never write.
QByteArray npyImage(const QByteArray& header, int major = 1, const QByteArray& data = {}, int minor = 0) {
  QByteArray out("\x93NUMPY", 6);
  out.append(char(major));
  out.append(char(minor));
  const uint32_t len = uint32_t(header.size());
  const int lenBytes = major == 1 ? 2 : 4;
  for (int i = 0; i < lenBytes; ++i) out.append(char((len >> (8 * i)) & 0xFF));
  return out + header + data;
}

QByteArray dictText(const char* descr, const char* shape, const char* fortran = "False") {
  return QByteArray("{'descr': '") + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

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

QString shapeName(const Shape& s) {
  QStringList parts;
  for (int64_t d : s) parts << QString::number(d);
  return "(" + parts.join(", ") + (s.size() == 1 ? ",)" : ")");
}

std::size_t numelOf(const Shape& s) {
  std::size_t n = 1;
  for (int64_t d : s) n *= std::size_t(d);
  return n;
}

// Every entry under `dir`, recursively, so a test can say "nothing was left behind".
QStringList listAll(const QString& dir) {
  QStringList out;
  QDirIterator it(dir, QDir::AllEntries | QDir::Hidden | QDir::System | QDir::NoDotAndDotDot,
                  QDirIterator::Subdirectories);
  while (it.hasNext()) out << QDir(dir).relativeFilePath(it.next());
  out.sort();
  return out;
}

QByteArray bytesOf(const std::vector<uint8_t>& v) {
  return QByteArray(reinterpret_cast<const char*>(v.data()), qsizetype(v.size()));
}

QString ioErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const qs::IoError& e) {
    return QString::fromUtf8(e.what());
  }
  return {};
}

// The value of a finite half code computed from its definition, independent of half_to_float.
double halfValueDef(uint16_t h) {
  const int e = (h >> 10) & 0x1F;
  const int m = h & 0x3FF;
  const double mag = e == 0 ? std::ldexp(double(m), -24) : std::ldexp(double(1024 + m), e - 25);
  return (h & 0x8000) ? -mag : mag;
}

#ifdef QS_TEST_HAVE_F16C
// The CPU's IEEE round-to-nearest-even conversion: an oracle written by someone else.
__attribute__((target("f16c"))) uint16_t hardwareFloatToHalf(float f) {
  return uint16_t(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}
#endif

}  // namespace

class tst_Npy : public QObject {
  Q_OBJECT

 private slots:
  void dtypeTable_data();
  void dtypeTable();

  void roundTrip_data();
  void roundTrip();
  void headerBytes_data();
  void headerBytes();
  void parseVariants_data();
  void parseVariants();
  void malformed_data();
  void malformed();
  void fortranOrderRefused();
  void bigEndianRefused_data();
  void bigEndianRefused();
  void readMissingOrDirectory();
  void serializeRejectsSizeMismatch();
  void makeNpyCopies();

  void halfKnownValues_data();
  void halfKnownValues();
  void halfRoundTripAllCodes();
  void halfTies_data();
  void halfTies();
  void halfMidpointSweep();
  void halfMatchesHardware();

  void toFloat32_data();
  void toFloat32();

  void atomicWriteReplaces();
  void atomicWriteFailureLeavesNothing_data();
  void atomicWriteFailureLeavesNothing();
  void atomicWriteReadOnlyDir();
  void checkWritable_data();
  void checkWritable();
};

void tst_Npy::dtypeTable_data() {
  QTest::addColumn<qs::DType>("dtype");
  QTest::addColumn<QString>("name");
  QTest::addColumn<int>("size");
  QTest::addColumn<bool>("isFloat");
  QTest::newRow("float32") << qs::DType::F32 << "float32" << 4 << true;
  QTest::newRow("float64") << qs::DType::F64 << "float64" << 8 << true;
  QTest::newRow("float16") << qs::DType::F16 << "float16" << 2 << true;
  QTest::newRow("int8") << qs::DType::I8 << "int8" << 1 << false;
  QTest::newRow("uint8") << qs::DType::U8 << "uint8" << 1 << false;
  QTest::newRow("int32") << qs::DType::I32 << "int32" << 4 << false;
  QTest::newRow("uint16") << qs::DType::U16 << "uint16" << 2 << false;
}

void tst_Npy::dtypeTable() {
  QFETCH(qs::DType, dtype);
  QFETCH(QString, name);
  QFETCH(int, size);
  QFETCH(bool, isFloat);
  QCOMPARE(QString(qs::to_string(dtype)), name);
  QCOMPARE(int(qs::dtype_size(dtype)), size);
  QCOMPARE(qs::dtype_is_float(dtype), isFloat);
}

void tst_Npy::roundTrip_data() {
  QTest::addColumn<qs::DType>("dtype");
  QTest::addColumn<Shape>("shape");
  const qs::DType dtypes[] = {qs::DType::F32, qs::DType::F64, qs::DType::F16, qs::DType::I8,
                              qs::DType::U8,  qs::DType::I32, qs::DType::U16};
  const Shape shapes[] = {{}, {0}, {1}, {7}, {2, 3}, {3, 0, 2}, {2, 1, 3, 4}, {1000}};
  for (qs::DType t : dtypes)
    for (const Shape& s : shapes) QTest::addRow("%s %s", qs::to_string(t), qPrintable(shapeName(s))) << t << s;
}

void tst_Npy::roundTrip() {
  QFETCH(qs::DType, dtype);
  QFETCH(Shape, shape);
  const QByteArray payload = patternBytes(qsizetype(numelOf(shape) * qs::dtype_size(dtype)), unsigned(shape.size()));
  const qs::NpyArray a = qs::make_npy(dtype, shape, payload.constData());
  QCOMPARE(a.numel(), numelOf(shape));
  QCOMPARE(a.data.size(), std::size_t(payload.size()));

  const std::vector<uint8_t> img = qs::serialize_npy(a);
  // numpy's layout: data starts on a 64-byte boundary right after a '\n'.
  const std::size_t dataStart = img.size() - a.data.size();
  QCOMPARE(dataStart % 64, std::size_t(0));
  QCOMPARE(char(img[dataStart - 1]), '\n');

  const qs::NpyArray b = qs::parse_npy(img.data(), img.size(), "mem.npy");
  QCOMPARE(b.dtype, dtype);
  QCOMPARE(b.shape, shape);
  QCOMPARE(bytesOf(b.data), payload);

  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const std::string path = dir.filePath("a.npy").toStdString();
  qs::write_npy(path, a);
  QCOMPARE(listAll(dir.path()), QStringList{"a.npy"});  // no temp file left
  const qs::NpyArray c = qs::read_npy(path);
  QCOMPARE(c.dtype, dtype);
  QCOMPARE(c.shape, shape);
  QCOMPARE(bytesOf(c.data), payload);
}

void tst_Npy::headerBytes_data() {
  QTest::addColumn<qs::DType>("dtype");
  QTest::addColumn<Shape>("shape");
  QTest::addColumn<QByteArray>("dict");
  // Every one of these is 118 header bytes ("v\x00") in a numpy >= 1.24 np.save file, data at 128:
  // the dict, 21 - digits(shape[0]) growth spaces, then padding to 64 and '\n'.
  QTest::newRow("float32 (2, 3)") << qs::DType::F32 << Shape{2, 3} << dictText("<f4", "(2, 3)");
  QTest::newRow("float64 0-d") << qs::DType::F64 << Shape{} << dictText("<f8", "()");
  QTest::newRow("uint8 (0,)") << qs::DType::U8 << Shape{0} << dictText("|u1", "(0,)");
  QTest::newRow("int8 (5,)") << qs::DType::I8 << Shape{5} << dictText("|i1", "(5,)");
  QTest::newRow("float16 (4, 1)") << qs::DType::F16 << Shape{4, 1} << dictText("<f2", "(4, 1)");
  QTest::newRow("int32 (3,)") << qs::DType::I32 << Shape{3} << dictText("<i4", "(3,)");
  QTest::newRow("uint16 (2, 2, 2)") << qs::DType::U16 << Shape{2, 2, 2} << dictText("<u2", "(2, 2, 2)");
}

void tst_Npy::headerBytes() {
  QFETCH(qs::DType, dtype);
  QFETCH(Shape, shape);
  QFETCH(QByteArray, dict);
  const QByteArray payload = patternBytes(qsizetype(numelOf(shape) * qs::dtype_size(dtype)));
  const std::vector<uint8_t> img = qs::serialize_npy(qs::make_npy(dtype, shape, payload.constData()));

  QByteArray expected("\x93NUMPY\x01\x00v\x00", 10);
  expected += dict;
  expected += QByteArray(118 - 1 - dict.size(), ' ');
  expected += '\n';
  QCOMPARE(expected.size(), 128);
  expected += payload;
  QCOMPARE(bytesOf(img), expected);
}

void tst_Npy::parseVariants_data() {
  QTest::addColumn<QByteArray>("file");
  QTest::addColumn<qs::DType>("dtype");
  QTest::addColumn<Shape>("shape");
  auto row = [](const char* name, const QByteArray& header, qs::DType t, const Shape& s, int major = 1) {
    const QByteArray data = patternBytes(qsizetype(numelOf(s) * qs::dtype_size(t)));
    QTest::newRow(name) << npyImage(header, major, data) << t << s;
  };
  using qs::DType;
  row("numpy padded", dictText("<f4", "(2, 3)") + QByteArray(20, ' ') + '\n', DType::F32, {2, 3});
  row("keys reordered", "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}\n", DType::F32, {2, 3});
  row("no spaces", "{'descr':'<f8','fortran_order':False,'shape':(4,)}", DType::F64, {4});
  row("extra spaces and tabs", "  {  'descr' :\t'<f2' ,  'fortran_order' : False , 'shape' : ( 2 , 3 ) , }  \n",
      DType::F16, {2, 3});
  row("no trailing comma", "{'descr': '<i4', 'fortran_order': False, 'shape': (5,)}", DType::I32, {5});
  row("shape trailing comma (2, 3,)", "{'descr': '<u2', 'fortran_order': False, 'shape': (2, 3,)}", DType::U16, {2, 3});
  row("double quotes", "{\"descr\": \"|u1\", \"fortran_order\": False, \"shape\": (3,)}", DType::U8, {3});
  row("spelling <i1", "{'descr': '<i1', 'fortran_order': False, 'shape': (3,)}", DType::I8, {3});
  row("spelling =i1", "{'descr': '=i1', 'fortran_order': False, 'shape': (3,)}", DType::I8, {3});
  row("spelling <u1", "{'descr': '<u1', 'fortran_order': False, 'shape': (3,)}", DType::U8, {3});
  row("spelling =u1", "{'descr': '=u1', 'fortran_order': False, 'shape': (3,)}", DType::U8, {3});
  row("0-d scalar", "{'descr': '<f4', 'fortran_order': False, 'shape': ()}", DType::F32, {});
  row("empty (0,)", "{'descr': '<f4', 'fortran_order': False, 'shape': (0,)}", DType::F32, {0});
  row("empty (2, 0)", "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 0)}", DType::F64, {2, 0});
  row("python2 long 3L", "{'descr': '<f4', 'fortran_order': False, 'shape': (3L,)}", DType::F32, {3});
  row("CRLF", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}\r\n", DType::F32, {1});
  row("version 2.0", dictText("<f4", "(2, 2)") + "\n", DType::F32, {2, 2}, 2);
  row("version 3.0", dictText("|i1", "(6,)") + "\n", DType::I8, {6}, 3);
}

void tst_Npy::parseVariants() {
  QFETCH(QByteArray, file);
  QFETCH(qs::DType, dtype);
  QFETCH(Shape, shape);
  const auto* p = reinterpret_cast<const uint8_t*>(file.constData());
  const qs::NpyArray a = qs::parse_npy(p, std::size_t(file.size()), "v.npy");
  QCOMPARE(a.dtype, dtype);
  QCOMPARE(a.shape, shape);
  QCOMPARE(a.data.size(), numelOf(shape) * qs::dtype_size(dtype));
  QCOMPARE(bytesOf(a.data), file.right(qsizetype(a.data.size())));
}

void tst_Npy::malformed_data() {
  QTest::addColumn<QByteArray>("file");
  QTest::addColumn<QString>("expected");  // a substring of the one-line message
  const QByteArray f4x3 = patternBytes(12);
  auto hdr = [](const char* shape, const char* descr = "<f4") { return dictText(descr, shape); };

  QTest::newRow("empty file") << QByteArray() << "empty file";
  QTest::newRow("bad magic") << QByteArray("PK\x03\x04 this is a zip file") << "bad magic";
  QTest::newRow("bad magic, npy-like") << npyImage(hdr("(3,)"), 1, f4x3).replace(1, 5, "numpy") << "bad magic";
  QTest::newRow("magic only") << QByteArray("\x93NUMPY", 6) << "truncated header";
  QTest::newRow("v1 length field cut") << QByteArray("\x93NUMPY\x01\x00\x10", 9) << "truncated header";
  QTest::newRow("v2 length field cut") << QByteArray("\x93NUMPY\x02\x00\x10\x00\x00", 11) << "truncated header";
  QTest::newRow("header length beyond file") << npyImage(hdr("(3,)")).left(40) << "runs past the end";
  {
    QByteArray f("\x93NUMPY\x02\x00\xff\xff\xff\xff{}", 14);  // claims a 4 GiB header
    QTest::newRow("v2 header length 4 GiB") << f << "runs past the end";
  }
  QTest::newRow("version 4.0") << npyImage(hdr("(3,)"), 4, f4x3) << "version 4.0";
  QTest::newRow("version 1.1") << npyImage(hdr("(3,)"), 1, f4x3, 1) << "version 1.1";
  QTest::newRow("version 0.0") << npyImage(hdr("(3,)"), 0, f4x3) << "version 0.0";
  QTest::newRow("data too short") << npyImage(hdr("(4,)"), 1, f4x3)
                                  << "needs 16 data bytes but the file has 12 (truncated)";
  QTest::newRow("data too long") << npyImage(hdr("(2,)"), 1, f4x3)
                                 << "needs 8 data bytes but the file has 12 (trailing data)";
  QTest::newRow("no data") << npyImage(hdr("(3,)")) << "(truncated)";
  QTest::newRow("0-d without data") << npyImage(hdr("()")) << "needs 4 data bytes";
  QTest::newRow("empty array with data") << npyImage(hdr("(0,)"), 1, f4x3) << "(trailing data)";
  QTest::newRow("negative dim") << npyImage(hdr("(-3,)"), 1, f4x3) << "negative dimension -3";
  QTest::newRow("negative dim second") << npyImage(hdr("(2, -1)"), 1, f4x3) << "negative dimension -1";
  QTest::newRow("dims product overflows") << npyImage(hdr("(4294967296, 4294967296)"), 1, f4x3) << "overflows";
  QTest::newRow("overflow behind a zero dim") << npyImage(hdr("(0, 4294967296, 4294967296)")) << "overflows";
  QTest::newRow("byte size overflows") << npyImage(hdr("(4611686018427387904,)"), 1, f4x3) << "overflows";
  QTest::newRow("dim beyond int64") << npyImage(hdr("(99999999999999999999999,)"), 1, f4x3) << "too large";
  // Fits in 64 bits but is 4 TiB: must be refused by the size check, not by a failed allocation.
  QTest::newRow("huge dim, small file") << npyImage(hdr("(1099511627776,)"), 1, f4x3) << "(truncated)";
  QTest::newRow("too many dims") << npyImage(hdr(QByteArray("(" + QByteArray("1, ").repeated(65) + ")").constData()), 1,
                                             patternBytes(4))
                                 << "more than 64 dimensions";
  QTest::newRow("non-ASCII garbage") << npyImage(QByteArray("{'descr': '<f4\xff\xfe', 'shape': (3,)}"), 1, f4x3)
                                     << "non-ASCII or control byte 0xff";
  QTest::newRow("NUL in header") << npyImage(QByteArray("{'descr'\0: '<f4'}", 17), 1, f4x3) << "control byte 0x00";
  QTest::newRow("binary noise") << npyImage(patternBytes(50, 7), 1, f4x3) << "header";
  QTest::newRow("empty header") << npyImage(QByteArray(), 1, f4x3) << "not a Python dict";
  QTest::newRow("header is a list") << npyImage("[1, 2, 3]", 1, f4x3) << "not a Python dict";
  QTest::newRow("unclosed dict") << npyImage("{'descr': '<f4', 'fortran_order': False, 'shape': (3,)", 1, f4x3)
                                 << "expected ',' or '}'";
  QTest::newRow("missing shape") << npyImage("{'descr': '<f4', 'fortran_order': False}", 1, f4x3) << "no 'shape' key";
  QTest::newRow("missing descr") << npyImage("{'fortran_order': False, 'shape': (3,)}", 1, f4x3) << "no 'descr' key";
  QTest::newRow("missing fortran_order") << npyImage("{'descr': '<f4', 'shape': (3,)}", 1, f4x3)
                                         << "no 'fortran_order' key";
  QTest::newRow("duplicate key") << npyImage("{'descr': '<f4', 'descr': '<f8', 'fortran_order': False, 'shape': (3,)}",
                                             1, f4x3)
                                 << "duplicate key 'descr'";
  QTest::newRow("unknown key") << npyImage("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}", 1, f4x3)
                               << "unexpected key 'x'";
  QTest::newRow("key closing quote missing") << npyImage("{'descr: '<f4', 'shape': (3,)}", 1, f4x3) << "expected ':'";
  QTest::newRow("unterminated at end") << npyImage("{'descr': '<f4", 1, f4x3) << "unterminated string";
  QTest::newRow("unquoted key") << npyImage("{descr: '<f4'}", 1, f4x3) << "expected a key in quotes";
  QTest::newRow("shape not a tuple") << npyImage(hdr("3"), 1, f4x3) << "must be a tuple";
  QTest::newRow("shape (3) is an int") << npyImage(hdr("(3)"), 1, f4x3) << "is not a tuple; expected (3,)";
  QTest::newRow("shape list") << npyImage(hdr("[3]"), 1, f4x3) << "must be a tuple";
  QTest::newRow("shape float dim") << npyImage(hdr("(2.5,)"), 1, f4x3) << "expected ',' or ')'";
  QTest::newRow("shape empty slot") << npyImage(hdr("(3,,)"), 1, f4x3) << "expected an integer";
  QTest::newRow("fortran_order not bool") << npyImage(dictText("<f4", "(3,)", "0"), 1, f4x3) << "True or False";
  QTest::newRow("fortran_order Truex") << npyImage(dictText("<f4", "(3,)", "Truex"), 1, f4x3) << "True or False";
  QTest::newRow("text after dict") << npyImage(hdr("(3,)") + " x", 1, f4x3) << "unexpected text after";
  QTest::newRow("escape in string") << npyImage(hdr("(3,)", "<f\\x34"), 1, f4x3) << "escape sequences";
  QTest::newRow("big-endian >f4") << npyImage(hdr("(3,)", ">f4"), 1, f4x3) << "unsupported dtype '>f4' (big-endian";
  QTest::newRow("big-endian >i4") << npyImage(hdr("(3,)", ">i4"), 1, f4x3) << "unsupported dtype '>i4' (big-endian";
  QTest::newRow("object |O") << npyImage(hdr("(3,)", "|O"), 1, f4x3) << "unsupported dtype '|O' (object arrays";
  QTest::newRow("bool |b1") << npyImage(hdr("(3,)", "|b1"), 1, f4x3) << "unsupported dtype '|b1'";
  QTest::newRow("int64 <i8") << npyImage(hdr("(3,)", "<i8"), 1, f4x3) << "unsupported dtype '<i8'";
  QTest::newRow("native =f4") << npyImage(hdr("(3,)", "=f4"), 1, f4x3) << "unsupported dtype '=f4'";
  QTest::newRow("unicode <U3") << npyImage(hdr("(3,)", "<U3"), 1, f4x3) << "unsupported dtype '<U3'";
  QTest::newRow("empty descr") << npyImage(hdr("(3,)", ""), 1, f4x3) << "unsupported dtype ''";
  QTest::newRow("structured dtype") << npyImage("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,)}", 1,
                                                f4x3)
                                    << "structured dtypes";
  QTest::newRow("fortran order") << npyImage(dictText("<f4", "(3,)", "True"), 1, f4x3) << "Fortran-order";
}

void tst_Npy::malformed() {
  QFETCH(QByteArray, file);
  QFETCH(QString, expected);
  const auto* p = reinterpret_cast<const uint8_t*>(file.constData());
  const QString msg = ioErrorOf([&] { qs::parse_npy(p, std::size_t(file.size()), "bad.npy"); });
  QVERIFY2(!msg.isEmpty(), "no qs::IoError thrown");
  QVERIFY2(msg.startsWith("bad.npy: "), qPrintable(msg));
  QVERIFY2(!msg.contains('\n'), qPrintable(msg));
  QVERIFY2(msg.contains(expected), qPrintable(msg));

  // Same through the file system: the message names the path the user gave.
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const QString path = dir.filePath("bad.npy");
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(file);
  f.close();
  const QString msg2 = ioErrorOf([&] { qs::read_npy(path.toStdString()); });
  QVERIFY2(msg2.startsWith(path + ": "), qPrintable(msg2));
  QVERIFY2(msg2.contains(expected), qPrintable(msg2));
}

void tst_Npy::fortranOrderRefused() {
  const QByteArray file = npyImage(dictText("<f4", "(2, 3)", "True") + "\n", 1, patternBytes(24));
  const QString msg = ioErrorOf(
      [&] { qs::parse_npy(reinterpret_cast<const uint8_t*>(file.constData()), std::size_t(file.size()), "f.npy"); });
  QVERIFY2(msg.contains("Fortran-order arrays are not supported"), qPrintable(msg));
  QVERIFY2(msg.contains("np.ascontiguousarray"), qPrintable(msg));  // says how to fix it
}

void tst_Npy::bigEndianRefused_data() {
  QTest::addColumn<QString>("descr");
  QTest::newRow(">f4") << ">f4";
  QTest::newRow(">f8") << ">f8";
  QTest::newRow(">f2") << ">f2";
  QTest::newRow(">u2") << ">u2";
}

void tst_Npy::bigEndianRefused() {
  QFETCH(QString, descr);
  const QByteArray file =
      npyImage(dictText(qPrintable(descr), "(1,)"), 1, patternBytes(8).left(descr.back().digitValue()));
  const QString msg = ioErrorOf(
      [&] { qs::parse_npy(reinterpret_cast<const uint8_t*>(file.constData()), std::size_t(file.size()), "be.npy"); });
  QVERIFY2(msg.startsWith("be.npy: unsupported dtype '" + descr + "'"), qPrintable(msg));
  QVERIFY2(msg.contains("big-endian"), qPrintable(msg));
}

void tst_Npy::readMissingOrDirectory() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const std::string missing = dir.filePath("nope.npy").toStdString();
  QString msg = ioErrorOf([&] { qs::read_npy(missing); });
  QVERIFY2(msg.startsWith(QString::fromStdString(missing) + ": cannot open"), qPrintable(msg));
  msg = ioErrorOf([&] { qs::read_npy(dir.path().toStdString()); });
  QVERIFY2(msg.contains("is a directory"), qPrintable(msg));
}

void tst_Npy::serializeRejectsSizeMismatch() {
  qs::NpyArray a;
  a.dtype = qs::DType::F32;
  a.shape = {2, 2};
  a.data.resize(12);
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, qs::serialize_npy(a));
  a.shape = {-1};
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, qs::serialize_npy(a));
}

void tst_Npy::makeNpyCopies() {
  float v[6] = {1, 2, 3, 4, 5, 6};
  const qs::NpyArray a = qs::make_npy(qs::DType::F32, {3, 2}, v);
  v[0] = 99;  // a copy, not a view
  QCOMPARE(qs::to_float32(a), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  const qs::NpyArray e = qs::make_npy(qs::DType::F64, {0, 5}, nullptr);  // empty: data never read
  QCOMPARE(e.numel(), std::size_t(0));
  QVERIFY(e.data.empty());
}

// ---- float16 ----

void tst_Npy::halfKnownValues_data() {
  QTest::addColumn<uint>("code");
  QTest::addColumn<float>("value");
  QTest::newRow("zero") << 0x0000u << 0.0f;
  QTest::newRow("neg_zero") << 0x8000u << -0.0f;
  QTest::newRow("denorm_min") << 0x0001u << std::ldexp(1.0f, -24);
  QTest::newRow("neg_denorm_min") << 0x8001u << -std::ldexp(1.0f, -24);
  QTest::newRow("max_subnormal") << 0x03FFu << std::ldexp(1023.0f, -24);
  QTest::newRow("min_normal") << 0x0400u << std::ldexp(1.0f, -14);
  QTest::newRow("one") << 0x3C00u << 1.0f;
  QTest::newRow("one_plus_eps") << 0x3C01u << 1.0f + std::ldexp(1.0f, -10);
  QTest::newRow("minus_two") << 0xC000u << -2.0f;
  QTest::newRow("third") << 0x3555u << 0.333251953125f;
  QTest::newRow("max") << 0x7BFFu << 65504.0f;
  QTest::newRow("lowest") << 0xFBFFu << -65504.0f;
  QTest::newRow("inf") << 0x7C00u << std::numeric_limits<float>::infinity();
  QTest::newRow("neg_inf") << 0xFC00u << -std::numeric_limits<float>::infinity();
}

void tst_Npy::halfKnownValues() {
  QFETCH(uint, code);
  QFETCH(float, value);
  QCOMPARE(std::bit_cast<uint32_t>(qs::half_to_float(uint16_t(code))), std::bit_cast<uint32_t>(value));
  QCOMPARE(uint(qs::float_to_half(value)), code);
}

void tst_Npy::halfRoundTripAllCodes() {
  int nans = 0;
  for (uint32_t c = 0; c < 0x10000; ++c) {
    const auto h = uint16_t(c);
    const float f = qs::half_to_float(h);
    const bool isNan = (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0;
    if (isNan) {
      ++nans;
      QVERIFY2(std::isnan(f), qPrintable(QString::number(c, 16)));
      QCOMPARE(std::signbit(f), bool(h & 0x8000));
    } else if ((h & 0x7FFF) == 0x7C00) {
      QVERIFY(std::isinf(f));
    } else {
      const double def = halfValueDef(h);
      if (double(f) != def || std::signbit(f) != std::signbit(def))
        QFAIL(qPrintable(QString("half 0x%1 decodes to %2, expected %3").arg(c, 4, 16, QChar('0')).arg(f).arg(def)));
    }
    // Every code, NaN payloads included, comes back bit for bit.
    if (qs::float_to_half(f) != h)
      QFAIL(qPrintable(QString("half 0x%1 -> %2 -> 0x%3")
                           .arg(c, 4, 16, QChar('0'))
                           .arg(f)
                           .arg(qs::float_to_half(f), 4, 16, QChar('0'))));
  }
  QCOMPARE(nans, 2 * 1023);
}

void tst_Npy::halfTies_data() {
  QTest::addColumn<float>("input");
  QTest::addColumn<uint>("code");
  const float inf = std::numeric_limits<float>::infinity();
  QTest::newRow("2^-25 ties to zero") << std::ldexp(1.0f, -25) << 0x0000u;
  QTest::newRow("-2^-25 ties to -zero") << -std::ldexp(1.0f, -25) << 0x8000u;
  QTest::newRow("just above 2^-25") << std::nextafter(std::ldexp(1.0f, -25), 1.0f) << 0x0001u;
  QTest::newRow("3*2^-25 ties to 2") << std::ldexp(3.0f, -25) << 0x0002u;
  QTest::newRow("5*2^-25 ties to 2") << std::ldexp(5.0f, -25) << 0x0002u;
  QTest::newRow("below min_normal rounds up") << std::ldexp(2047.0f, -25) << 0x0400u;
  QTest::newRow("1+2^-11 ties to 1") << 1.0f + std::ldexp(1.0f, -11) << 0x3C00u;
  QTest::newRow("1+3*2^-11 ties up") << 1.0f + std::ldexp(3.0f, -11) << 0x3C02u;
  QTest::newRow("2047 ties to 2048") << 2047.5f << 0x6800u;  // carry into the exponent
  QTest::newRow("65519.99 to max") << std::nextafter(65520.0f, 0.0f) << 0x7BFFu;
  QTest::newRow("65520 ties to inf") << 65520.0f << 0x7C00u;
  QTest::newRow("-65520 ties to -inf") << -65520.0f << 0xFC00u;
  QTest::newRow("1e9 to inf") << 1e9f << 0x7C00u;
  QTest::newRow("float max to inf") << std::numeric_limits<float>::max() << 0x7C00u;
  QTest::newRow("inf") << inf << 0x7C00u;
  QTest::newRow("float denorm_min to zero") << std::numeric_limits<float>::denorm_min() << 0x0000u;
  QTest::newRow("qnan") << std::numeric_limits<float>::quiet_NaN() << 0x7E00u;
  QTest::newRow("-qnan") << -std::numeric_limits<float>::quiet_NaN() << 0xFE00u;
  // A NaN whose payload is only in the bits a half drops must stay NaN, not become inf.
  QTest::newRow("nan low payload") << std::bit_cast<float>(0x7F800001u) << 0x7E00u;
}

void tst_Npy::halfTies() {
  QFETCH(float, input);
  QFETCH(uint, code);
  QCOMPARE(QString::number(qs::float_to_half(input), 16), QString::number(code, 16));
}

// Every midpoint between neighbouring finite halves ties to the even code; one float ulp either
// side goes to the nearer neighbour.
void tst_Npy::halfMidpointSweep() {
  for (uint32_t c = 0; c < 0x7BFF; ++c) {
    for (uint16_t sign : {uint16_t(0), uint16_t(0x8000)}) {
      const auto lo = uint16_t(c | sign), hi = uint16_t((c + 1) | sign);
      const double mid = (halfValueDef(lo) + halfValueDef(hi)) / 2;  // exact: 12 significant bits
      const auto midF = float(mid);
      QVERIFY(double(midF) == mid);
      const uint16_t even = (lo & 1) ? hi : lo;
      const float away = sign ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
      const uint16_t got = qs::float_to_half(midF);
      const uint16_t below = qs::float_to_half(std::nextafter(midF, 0.0f));
      const uint16_t above = qs::float_to_half(std::nextafter(midF, away));
      if (got != even || below != lo || above != hi)
        QFAIL(qPrintable(QString("between 0x%1 and 0x%2: mid->0x%3 below->0x%4 above->0x%5")
                             .arg(lo, 4, 16, QChar('0'))
                             .arg(hi, 4, 16, QChar('0'))
                             .arg(got, 4, 16, QChar('0'))
                             .arg(below, 4, 16, QChar('0'))
                             .arg(above, 4, 16, QChar('0'))));
    }
  }
}

// A sample of all 2^32 float bit patterns against the CPU's own conversion (F16C). NaNs are left out:
// the hardware quiets them, we keep the payload so half NaNs round-trip.
void tst_Npy::halfMatchesHardware() {
#ifdef QS_TEST_HAVE_F16C
  if (!__builtin_cpu_supports("f16c")) QSKIP("CPU has no F16C");
  uint64_t checked = 0;
  for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 97) {
    const float f = std::bit_cast<float>(uint32_t(b));
    if (std::isnan(f)) continue;
    const uint16_t want = hardwareFloatToHalf(f), got = qs::float_to_half(f);
    if (want != got)
      QFAIL(qPrintable(QString("float bits 0x%1: got 0x%2, hardware 0x%3")
                           .arg(uint32_t(b), 8, 16, QChar('0'))
                           .arg(got, 4, 16, QChar('0'))
                           .arg(want, 4, 16, QChar('0'))));
    ++checked;
  }
  QVERIFY(checked > 40'000'000);
#else
  QSKIP("not an x86 build");
#endif
}

// ---- to_float32 ----

void tst_Npy::toFloat32_data() {
  QTest::addColumn<qs::DType>("dtype");
  QTest::addColumn<QByteArray>("raw");
  QTest::addColumn<QList<float>>("expected");
  auto raw = [](auto... v) {
    QByteArray b;
    ((b += QByteArray(reinterpret_cast<const char*>(&v), sizeof v)), ...);
    return b;
  };
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  QTest::newRow("float32") << qs::DType::F32 << raw(1.5f, -0.0f, inf, nan) << QList<float>{1.5f, -0.0f, inf, nan};
  // float64 -> float32 is the ordinary C++ conversion: nearest, overflow to inf, underflow to (signed) 0.
  QTest::newRow("float64") << qs::DType::F64 << raw(0.1, 1e300, -1e-50, 16777217.0, double(nan))
                           << QList<float>{0.1f, inf, -0.0f, 16777216.0f, nan};
  QTest::newRow("float16") << qs::DType::F16
                           << raw(uint16_t(0x3C00), uint16_t(0x0001), uint16_t(0xFC00), uint16_t(0x7BFF))
                           << QList<float>{1.0f, std::ldexp(1.0f, -24), -inf, 65504.0f};
  QTest::newRow("int8") << qs::DType::I8 << raw(int8_t(-128), int8_t(127), int8_t(0)) << QList<float>{-128, 127, 0};
  QTest::newRow("uint8") << qs::DType::U8 << raw(uint8_t(0), uint8_t(255)) << QList<float>{0, 255};
  QTest::newRow("int32") << qs::DType::I32 << raw(int32_t(INT32_MIN), int32_t(16777217), int32_t(-7))
                         << QList<float>{-2147483648.0f, 16777216.0f, -7.0f};
  QTest::newRow("uint16") << qs::DType::U16 << raw(uint16_t(65535), uint16_t(1)) << QList<float>{65535, 1};
}

void tst_Npy::toFloat32() {
  QFETCH(qs::DType, dtype);
  QFETCH(QByteArray, raw);
  QFETCH(QList<float>, expected);
  const int64_t n = int64_t(raw.size() / qsizetype(qs::dtype_size(dtype)));
  // Through a file, so the conversion sees exactly what a reader produced.
  const qs::NpyArray a0 = qs::make_npy(dtype, {n}, raw.constData());
  const std::vector<uint8_t> img = qs::serialize_npy(a0);
  const qs::NpyArray a = qs::parse_npy(img.data(), img.size(), "t.npy");
  const std::vector<float> got = qs::to_float32(a);
  const std::vector<double> got64 = qs::to_float64(a);
  QCOMPARE(qsizetype(got.size()), expected.size());
  for (qsizetype i = 0; i < expected.size(); ++i) {
    if (std::isnan(expected[i])) {
      QVERIFY(std::isnan(got[i]));
      QVERIFY(std::isnan(got64[i]));
      continue;
    }
    QCOMPARE(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(expected[i]));
    // to_float64 is exact for every dtype; only float64 and large int32 differ from the float32 result.
    if (dtype != qs::DType::F64 && dtype != qs::DType::I32) QCOMPARE(got64[i], double(got[i]));
  }
  if (dtype == qs::DType::F64) {
    double first;
    std::memcpy(&first, raw.constData(), sizeof first);
    QCOMPARE(got64[0], first);
  }
  if (dtype == qs::DType::I32) QCOMPARE(got64[1], 16777217.0);
}

// ---- atomic output ----

void tst_Npy::atomicWriteReplaces() {
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  const std::string path = dir.filePath("out.txt").toStdString();
  qs::write_file_atomic(path, std::string_view("old contents, longer than the new ones"));
  qs::write_file_atomic(path, std::string_view("new"));
  QCOMPARE(bytesOf(qs::read_file(path)), QByteArray("new"));
  qs::write_file_atomic(path, std::string_view(""));
  QVERIFY(qs::read_file(path).empty());
  QCOMPARE(listAll(dir.path()), QStringList{"out.txt"});
  // A bare file name lands in the current directory.
  const QString old = QDir::currentPath();
  QVERIFY(QDir::setCurrent(dir.path()));
  qs::write_file_atomic("bare.txt", std::string_view("x"));
  QVERIFY(QDir::setCurrent(old));
  QCOMPARE(listAll(dir.path()), (QStringList{"bare.txt", "out.txt"}));
}

void tst_Npy::atomicWriteFailureLeavesNothing_data() {
  QTest::addColumn<QString>("relPath");
  QTest::addColumn<QString>("expected");
  QTest::newRow("missing folder") << "nope/out.npy"
                                  << "folder";
  QTest::newRow("missing nested folder") << "nope/deeper/out.npy"
                                         << "does not exist";
  QTest::newRow("target is a folder") << "sub"
                                      << "is a directory";  // refused before a temp file is made
  QTest::newRow("parent is a file") << "file.txt/out.npy"
                                    << "is not a folder";
}

void tst_Npy::atomicWriteFailureLeavesNothing() {
  QFETCH(QString, relPath);
  QFETCH(QString, expected);
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  QVERIFY(QDir(dir.path()).mkdir("sub"));
  QFile f(dir.filePath("file.txt"));
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.close();
  const QStringList before = listAll(dir.path());
  const std::string path = dir.filePath(relPath).toStdString();

  const float v[3] = {1, 2, 3};
  const QString msg = ioErrorOf([&] { qs::write_npy(path, qs::make_npy(qs::DType::F32, {3}, v)); });
  QVERIFY2(msg.startsWith(QString::fromStdString(path) + ": "), qPrintable(msg));
  QVERIFY2(msg.contains(expected), qPrintable(msg));
  QVERIFY2(!msg.contains('\n'), qPrintable(msg));
  QCOMPARE(listAll(dir.path()), before);
}

void tst_Npy::atomicWriteReadOnlyDir() {
  if (::geteuid() == 0) QSKIP("running as root: permissions do not stop writes (missing-folder rows cover failure)");
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  QVERIFY(QDir(dir.path()).mkdir("ro"));
  const QString ro = dir.filePath("ro");
  QVERIFY(QFile::setPermissions(ro, QFileDevice::ReadOwner | QFileDevice::ExeOwner));
  const std::string path = (ro + "/out.npy").toStdString();
  QString msg = ioErrorOf([&] { qs::write_file_atomic(path, std::string_view("x")); });
  QVERIFY2(msg.contains("Permission denied"), qPrintable(msg));
  msg = ioErrorOf([&] { qs::check_writable(path); });
  QVERIFY2(msg.contains("cannot create files"), qPrintable(msg));
  QVERIFY(QFile::setPermissions(ro, QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner));
  QVERIFY(listAll(ro).isEmpty());
}

void tst_Npy::checkWritable_data() {
  QTest::addColumn<QString>("relPath");
  QTest::addColumn<QString>("expected");  // empty: must succeed
  QTest::newRow("new file") << "out.npy"
                            << "";
  QTest::newRow("existing file") << "file.txt"
                                 << "";
  QTest::newRow("new file in subfolder") << "sub/out.npy"
                                         << "";
  QTest::newRow("missing folder") << "nope/out.npy"
                                  << "folder '";
  QTest::newRow("path is a folder") << "sub"
                                    << "is a directory";
  QTest::newRow("path is a folder, slash") << "sub/"
                                           << "is a directory";
  QTest::newRow("parent is a file") << "file.txt/out.npy"
                                    << "is not a folder";
  QTest::newRow("empty path") << "<empty>"
                              << "no output file name";
}

void tst_Npy::checkWritable() {
  QFETCH(QString, relPath);
  QFETCH(QString, expected);
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  QVERIFY(QDir(dir.path()).mkdir("sub"));
  QFile f(dir.filePath("file.txt"));
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write("keep");
  f.close();
  const QStringList before = listAll(dir.path());
  const std::string path = relPath == "<empty>" ? std::string() : (dir.path() + "/" + relPath).toStdString();

  const QString msg = ioErrorOf([&] { qs::check_writable(path); });
  if (expected.isEmpty()) {
    QVERIFY2(msg.isEmpty(), qPrintable(msg));
  } else {
    QVERIFY2(msg.contains(expected), qPrintable(msg));
    QVERIFY2(!msg.contains('\n'), qPrintable(msg));
    if (!path.empty()) QVERIFY2(msg.startsWith(QString::fromStdString(path) + ": "), qPrintable(msg));
  }
  QCOMPARE(listAll(dir.path()), before);  // the probe is gone, nothing was created
  QCOMPARE(bytesOf(qs::read_file(dir.filePath("file.txt").toStdString())), QByteArray("keep"));
}

QTEST_APPLESS_MAIN(tst_Npy)
#include "tst_npy.moc"
