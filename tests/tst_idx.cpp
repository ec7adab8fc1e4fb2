// IDX reader and the Fashion-MNIST loader (core/train/idx.h, core/train/dataset.h): good files plain and
// gzipped round-trip; corrupt ones (magic, type, rank, zero dimension, truncated, over-long, broken gzip,
// wrong shapes, labels >= 10, missing files) fail with one line naming the problem, and a gzip whose
// header claims 4 GiB costs only what it inflates (finding F6); the synthetic set is seeded.
// Fixtures are written by the test. Run: build/tests/tst_idx
#include "io/dtype.h"
#include "train/dataset.h"
#include "train/idx.h"

#include "test_rng.h"

#include <QTemporaryDir>
#include <QTest>

#include <sys/resource.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace {

std::vector<uint8_t> idx_bytes(uint8_t type, const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> b{0, 0, type, uint8_t(dims.size())};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) b.push_back(uint8_t(d >> s));
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

std::string error_of(const std::vector<uint8_t>& b) {
  try {
    qs::parse_idx(b.data(), b.size(), "fixture");
  } catch (const qs::IoError& e) {
    return e.what();
  }
  return {};
}

// A small valid Fashion-MNIST-shaped pair: n images of 28 x 28 with pixel (i + j) % 256, labels i % 10.
void write_fmnist(const std::string& dir, const std::string& prefix, uint32_t n, bool gzip, int bad_label_at = -1) {
  std::vector<uint8_t> px(std::size_t(n) * 784), lb(n);
  for (std::size_t i = 0; i < px.size(); ++i) px[i] = uint8_t(i % 256);
  for (uint32_t i = 0; i < n; ++i) lb[i] = uint8_t(int(i) == bad_label_at ? 10 : i % 10);
  const std::string ext = gzip ? ".gz" : "";
  qs::write_idx(dir + "/" + prefix + "-images-idx3-ubyte" + ext, qs::IdxType::U8, {n, 28, 28}, px, gzip);
  qs::write_idx(dir + "/" + prefix + "-labels-idx1-ubyte" + ext, qs::IdxType::U8, {n}, lb, gzip);
}

}  // namespace

class tst_Idx : public QObject {
  Q_OBJECT

 private slots:
  void roundTrip_data();
  void roundTrip();
  void corrupt_data();
  void corrupt();
  void corruptGzip_data();
  void corruptGzip();
  void gzipHeaderClaimsFourGiB();
  void fashionMnistFolder();
  void fashionMnistBad_data();
  void fashionMnistBad();
  void fashionMnistMissing();
  void installedFashionMnist();
  void synthetic();
};

void tst_Idx::roundTrip_data() {
  QTest::addColumn<int>("type");
  QTest::addColumn<QList<int>>("dims");
  QTest::addColumn<bool>("gzip");
  for (bool gz : {false, true}) {
    const char* z = gz ? "/gz" : "/plain";
    QTest::newRow((std::string("ubyte_1d") + z).c_str()) << 0x08 << QList<int>{7} << gz;
    QTest::newRow((std::string("ubyte_3d") + z).c_str()) << 0x08 << QList<int>{3, 28, 28} << gz;
    QTest::newRow((std::string("float_2d") + z).c_str()) << 0x0D << QList<int>{5, 3} << gz;
    QTest::newRow((std::string("short_4d") + z).c_str()) << 0x0B << QList<int>{2, 1, 3, 2} << gz;
    QTest::newRow((std::string("double_big") + z).c_str()) << 0x0E << QList<int>{1000, 40} << gz;
  }
}

void tst_Idx::roundTrip() {
  QFETCH(int, type);
  QFETCH(QList<int>, dims);
  QFETCH(bool, gzip);
  if (gzip && !qs::idx_gzip_available()) QSKIP("this build has no zlib");
  Rng rng = Rng::from_tag(QTest::currentDataTag());
  std::vector<uint32_t> d(dims.begin(), dims.end());
  std::size_t numel = 1;
  for (uint32_t v : d) numel *= v;
  std::vector<uint8_t> data(numel * qs::idx_type_size(qs::IdxType(type)));
  for (auto& b : data) b = uint8_t(rng.next());
  QTemporaryDir dir;
  const std::string path = dir.filePath("a.idx").toStdString();
  qs::write_idx(path, qs::IdxType(type), d, data, gzip);
  std::ifstream f(path, std::ios::binary);
  unsigned char m[2] = {0, 0};
  f.read(reinterpret_cast<char*>(m), 2);
  QCOMPARE(m[0] == 0x1f && m[1] == 0x8b, gzip);  // really gzipped (or really not)
  const qs::IdxArray a = qs::read_idx(path);
  QCOMPARE(int(a.type), type);
  QCOMPARE(a.dims, d);
  QCOMPARE(a.numel(), numel);
  QVERIFY(a.data == data);
}

void tst_Idx::corrupt_data() {
  QTest::addColumn<QByteArray>("bytes");
  QTest::addColumn<QString>("needle");
  auto row = [](const char* name, const std::vector<uint8_t>& b, const char* needle) {
    QTest::newRow(name) << QByteArray(reinterpret_cast<const char*>(b.data()), qsizetype(b.size())) << QString(needle);
  };
  const std::vector<uint8_t> good = idx_bytes(0x08, {2, 3}, {1, 2, 3, 4, 5, 6});
  row("empty", {}, "too short");
  row("three_bytes", {0, 0, 8}, "too short");
  auto bad_magic = good;
  bad_magic[0] = 0x12;
  row("bad_magic", bad_magic, "not an IDX file");
  auto bad_magic2 = good;
  bad_magic2[1] = 0x01;
  row("bad_magic_second_byte", bad_magic2, "not an IDX file");
  auto bad_type = good;
  bad_type[2] = 0x07;
  row("unknown_type", bad_type, "unknown IDX element type 0x07");
  auto rank0 = good;
  rank0[3] = 0;
  row("rank_0", rank0, "rank 0");
  auto rank9 = good;
  rank9[3] = 9;
  row("rank_9", rank9, "rank 9");
  row("zero_dimension", idx_bytes(0x08, {2, 0}, {}), "dimension 1 is 0");
  row("truncated_header", {0, 0, 8, 2, 0, 0, 0, 2, 0, 0}, "truncated IDX header");
  row("truncated_data", idx_bytes(0x08, {2, 3}, {1, 2, 3, 4, 5}), "truncated");
  row("overlong_data", idx_bytes(0x08, {2, 3}, {1, 2, 3, 4, 5, 6, 7}), "longer than its header says");
  row("float_truncated", idx_bytes(0x0D, {2}, {0, 0, 0, 0, 0, 0, 0}), "needs 8 data bytes");
  row("huge_dims", idx_bytes(0x0E, {0xffffffffu, 0xffffffffu}, {}), "more than 4 GiB");
}

void tst_Idx::corrupt() {
  QFETCH(QByteArray, bytes);
  QFETCH(QString, needle);
  const std::vector<uint8_t> b(bytes.begin(), bytes.end());
  const std::string err = error_of(b);
  QVERIFY2(!err.empty(), "corrupt IDX was accepted");
  QVERIFY2(err.find(needle.toStdString()) != std::string::npos, err.c_str());
  QVERIFY2(err.rfind("fixture: ", 0) == 0, err.c_str());  // names the file
  QVERIFY(err.find('\n') == std::string::npos);
}

void tst_Idx::corruptGzip_data() {
  QTest::addColumn<QString>("kind");
  QTest::addColumn<QString>("needle");
  QTest::newRow("truncated_stream") << "cut" << "truncated";
  QTest::newRow("flipped_payload_byte") << "flip" << "corrupt gzip data";
  QTest::newRow("overlong_payload") << "long" << "longer than its header says";
  QTest::newRow("short_payload") << "short" << "truncated";
  QTest::newRow("gzip_of_garbage") << "garbage" << "not an IDX file";
}

void tst_Idx::corruptGzip() {
  QFETCH(QString, kind);
  QFETCH(QString, needle);
  if (!qs::idx_gzip_available()) QSKIP("this build has no zlib");
  QTemporaryDir dir;
  const std::string path = dir.filePath("a.gz").toStdString();
  std::vector<uint8_t> data(4000);
  Rng rng = Rng::from_tag(QTest::currentDataTag());
  for (auto& b : data) b = uint8_t(rng.next() % 7);  // compressible, so the stream is short
  if (kind == "long" || kind == "short" || kind == "garbage") {
    // A valid gzip stream around IDX bytes that do not match their header (or are no IDX at all).
    std::vector<uint8_t> inner = kind == "garbage" ? std::vector<uint8_t>(64, 0x55) : idx_bytes(0x08, {40, 100}, data);
    if (kind == "long") inner.push_back(9);
    if (kind == "short") inner.resize(inner.size() - 10);
    const std::vector<uint8_t> gz = qs::gzip_compress(inner.data(), inner.size());
    QVERIFY(gz.size() > 2 && gz[0] == 0x1f && gz[1] == 0x8b);
    const std::string err = error_of(gz);
    QVERIFY2(err.find(needle.toStdString()) != std::string::npos, err.c_str());
    return;
  }
  qs::write_idx(path, qs::IdxType::U8, {40, 100}, data, true);
  std::ifstream f(path, std::ios::binary);
  std::vector<uint8_t> gz((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  QVERIFY(gz.size() > 30);
  if (kind == "cut") gz.resize(gz.size() / 2);
  if (kind == "flip") gz[gz.size() / 2] ^= 0xff;
  const std::string err = error_of(gz);
  QVERIFY2(!err.empty(), "corrupt gzip was accepted");
  QVERIFY2(err.find(needle.toStdString()) != std::string::npos || (kind == "flip" && err.find("truncated") != std::string::npos),
           err.c_str());
}

// F6: 106 gzipped bytes whose IDX header announces 65536 x 256 x 256 (4 GiB) but whose stream holds
// 64 KiB. The reader used to size its buffer by the claim (4 GiB zero-filled, 11 s) before inflating;
// memory must follow the bytes inflated, and the file is still refused as truncated.
void tst_Idx::gzipHeaderClaimsFourGiB() {
  if (!qs::idx_gzip_available()) QSKIP("this build has no zlib");
  const std::vector<uint8_t> inner = idx_bytes(0x08, {65536, 256, 256}, std::vector<uint8_t>(65536));
  const std::vector<uint8_t> gz = qs::gzip_compress(inner.data(), inner.size());
  QVERIFY2(gz.size() < 200, qPrintable(QString::number(gz.size())));
  rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  const std::string err = error_of(gz);
  getrusage(RUSAGE_SELF, &after);
  QCOMPARE(QString::fromStdString(err),
           QString("fixture: truncated: 65536x256x256 ubyte needs 4294967296 data bytes, the stream has 65536"));
  const long grown_mb = (after.ru_maxrss - before.ru_maxrss) / 1024;  // ru_maxrss is in KiB
  QVERIFY2(grown_mb < 256, qPrintable(QString("peak memory grew by %1 MB").arg(grown_mb)));
}

void tst_Idx::fashionMnistFolder() {
  for (bool gz : {false, true}) {
    if (gz && !qs::idx_gzip_available()) continue;
    QTemporaryDir dir;
    const std::string d = dir.path().toStdString();
    write_fmnist(d, "train", 30, gz);
    write_fmnist(d, "t10k", 12, gz);
    QVERIFY(qs::fashion_mnist_present(d));
    const qs::DataSplit s = qs::load_fashion_mnist(d);
    QCOMPARE(s.train->size(), std::size_t(30));
    QCOMPARE(s.test->size(), std::size_t(12));
    QCOMPARE(s.train->features(), 784);
    QVERIFY(!s.synthetic);
    QCOMPARE(int(s.test->labels[11]), 1);
    std::vector<float> x(2 * 784);
    std::vector<int> y(2);
    const uint32_t idx[2] = {29, 3};
    s.train->gather(idx, 2, x.data(), y.data());
    QCOMPARE(y[0], 9);
    QCOMPARE(y[1], 3);
    QCOMPARE(x[5], float((29 * 784 + 5) % 256) / 255.0f);
    QCOMPARE(x[784], float((3 * 784) % 256) / 255.0f);
  }
}

void tst_Idx::fashionMnistBad_data() {
  QTest::addColumn<QString>("kind");
  QTest::addColumn<QString>("needle");
  QTest::newRow("count_mismatch") << "count" << "labels for";
  QTest::newRow("label_10") << "label" << "label 10 at index 4";
  QTest::newRow("images_not_28x28") << "shape" << "28x28";
  QTest::newRow("labels_rank_2") << "rank" << "expected labels n of ubyte";
}

void tst_Idx::fashionMnistBad() {
  QFETCH(QString, kind);
  QFETCH(QString, needle);
  QTemporaryDir dir;
  const std::string d = dir.path().toStdString();
  write_fmnist(d, "t10k", 12, false);
  if (kind == "count") {
    write_fmnist(d, "train", 30, false);
    qs::write_idx(d + "/train-labels-idx1-ubyte", qs::IdxType::U8, {29}, std::vector<uint8_t>(29, 1), false);
  } else if (kind == "label") {
    write_fmnist(d, "train", 30, false, 4);
  } else if (kind == "shape") {
    write_fmnist(d, "train", 30, false);
    qs::write_idx(d + "/train-images-idx3-ubyte", qs::IdxType::U8, {30, 27, 29}, std::vector<uint8_t>(30 * 27 * 29), false);
  } else {
    write_fmnist(d, "train", 30, false);
    qs::write_idx(d + "/train-labels-idx1-ubyte", qs::IdxType::U8, {30, 1}, std::vector<uint8_t>(30), false);
  }
  std::string err;
  try {
    qs::load_fashion_mnist(d);
  } catch (const qs::IoError& e) {
    err = e.what();
  }
  QVERIFY2(err.find(needle.toStdString()) != std::string::npos, err.c_str());
  QVERIFY2(err.find("train-") != std::string::npos, err.c_str());  // names the file
}

void tst_Idx::fashionMnistMissing() {
  QTemporaryDir dir;
  const std::string d = dir.path().toStdString();
  write_fmnist(d, "train", 3, false);  // the test files are missing
  std::string missing;
  QVERIFY(!qs::fashion_mnist_present(d, &missing));
  QVERIFY2(missing.find("t10k-images-idx3-ubyte") != std::string::npos, missing.c_str());
  std::string err;
  try {
    qs::load_fashion_mnist(d);
  } catch (const qs::IoError& e) {
    err = e.what();
  }
  QVERIFY2(err.find("apt-get install dataset-fashion-mnist") != std::string::npos, err.c_str());
  QVERIFY2(err.find("--dataset synthetic") != std::string::npos, err.c_str());
  QVERIFY(err.find('\n') == std::string::npos);
}

void tst_Idx::installedFashionMnist() {
  if (!qs::fashion_mnist_present(qs::default_fashion_mnist_dir()))
    QSKIP("dataset-fashion-mnist is not installed");
  const qs::DataSplit s = qs::load_fashion_mnist();
  QCOMPARE(s.train->size(), std::size_t(60000));
  QCOMPARE(s.test->size(), std::size_t(10000));
  std::vector<int> per_class(10, 0);
  for (uint8_t l : s.test->labels) per_class[l]++;
  for (int c : per_class) QCOMPARE(c, 1000);  // Fashion-MNIST's test set is balanced
}

void tst_Idx::synthetic() {
  const qs::DataSplit a = qs::make_synthetic(200, 50, 7), b = qs::make_synthetic(200, 50, 7), c = qs::make_synthetic(200, 50, 8);
  QVERIFY(a.synthetic);
  QCOMPARE(a.train->size(), std::size_t(200));
  QCOMPARE(a.test->size(), std::size_t(50));
  QVERIFY(a.train->pixels == b.train->pixels && a.test->labels == b.test->labels);
  QVERIFY(a.train->pixels != c.train->pixels);
  std::vector<int> per_class(10, 0);
  for (uint8_t l : a.train->labels) {
    QVERIFY(l < 10);
    per_class[l]++;
  }
  for (int n : per_class) QVERIFY2(n > 5, "a class is (almost) missing");
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument, qs::make_synthetic(0, 10, 1));
}

QTEST_APPLESS_MAIN(tst_Idx)
#include "tst_idx.moc"
