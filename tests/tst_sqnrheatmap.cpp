// Tests of SqnrHeatmap: a small .safetensors fixture written here (float tensors, an int tensor and a
// scalar that the analysis skips) gives a tensors × schemes map whose cells are qs::analyze_file's;
// clicking a cell emits tensorActivated; corrupt and missing files emit failed naming the file;
// Cancel; PNG/PDF/SVG/CSV exports; and a screenshot (/tmp/qs-sqnrheatmap.png).
// Run: `QT_QPA_PLATFORM=offscreen ./build/tests/tst_sqnrheatmap` (ctest sets the platform itself).
#include <QDir>
#include <QFile>
#include <QImage>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QToolTip>
#include <QtTest>

#include <qcustomplot.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "io/npy.h"
#include "io/tensor_file.h"
#include "quant/analyze.h"
#include "sqnrheatmap.h"
#include "test_rng.h"

namespace {

struct FixtureTensor {
  QByteArray name, dtype;
  std::vector<int64_t> shape;
  QByteArray bytes;
};

FixtureTensor floats(const char* name, std::vector<int64_t> shape, double sigma, uint64_t seed, bool outliers = false) {
  std::size_t n = 1;
  for (int64_t d : shape) n *= std::size_t(d);
  Rng rng{seed};
  std::vector<float> v(n);
  for (float& x : v) x = float(sigma * rng.normal());
  if (outliers)
    for (std::size_t i = 3; i < n; i += 101) v[i] = float(sigma * 40 * rng.sign());
  return {name, "F32", shape, QByteArray(reinterpret_cast<const char*>(v.data()), qsizetype(n * 4))};
}

// A minimal safetensors writer: 8-byte little-endian header length, the JSON header, the data.
void writeSafetensors(const QString& path, const std::vector<FixtureTensor>& tensors) {
  QByteArray header = "{";
  qsizetype offset = 0;
  QByteArray data;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const FixtureTensor& t = tensors[i];
    QByteArray shape;
    for (std::size_t d = 0; d < t.shape.size(); ++d) shape += (d ? "," : "") + QByteArray::number(qlonglong(t.shape[d]));
    header += (i ? "," : "") + QByteArray("\"") + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[" + shape +
              "],\"data_offsets\":[" + QByteArray::number(offset) + "," + QByteArray::number(offset + t.bytes.size()) + "]}";
    offset += t.bytes.size();
    data += t.bytes;
  }
  header += "}";
  while (header.size() % 8) header += ' ';
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  const uint64_t len = uint64_t(header.size());
  char lenBytes[8];
  for (int b = 0; b < 8; ++b) lenBytes[b] = char((len >> (8 * b)) & 0xff);
  f.write(lenBytes, 8);
  f.write(header);
  f.write(data);
}

std::vector<FixtureTensor> smallModel() {
  std::vector<int8_t> ints(64);
  for (int i = 0; i < 64; ++i) ints[std::size_t(i)] = int8_t(i - 32);
  const float scalar = 3.0f;
  return {floats("layers.0.weight", {16, 32}, 0.05, 1, true),
          floats("layers.0.bias", {32}, 0.01, 2),
          {"layers.0.steps", "I8", {64}, QByteArray(reinterpret_cast<const char*>(ints.data()), 64)},  // skipped: not float
          {"temperature", "F32", {}, QByteArray(reinterpret_cast<const char*>(&scalar), 4)},            // skipped: 1 element
          floats("layers.1.weight", {8, 64}, 0.2, 3),
          floats("head.weight", {4, 48}, 1.0, 4, true)};
}

std::vector<qs::Scheme> schemes() {
  return {qs::parse_scheme("int8/channel:0"), qs::parse_scheme("e4m3fn/tensor"),
          qs::parse_scheme("e2m1fn/block:16:e4m3fn"), qs::parse_scheme("int8/channel:1")};
}

}  // namespace

class TestSqnrHeatmap : public QObject {
  Q_OBJECT

private slots:
  void initTestCase();
  void cellsMatchAnalyzeFile();
  void orderAndColourRange();
  void clickEmitsTensorActivated();
  void corruptFileFails();
  void missingFileFails();
  void npyFile();
  void cancelStops();
  void exports();
  void screenshot();

private:
  QTemporaryDir m_dir;
  QString m_model;
};

void TestSqnrHeatmap::initTestCase() {
  QVERIFY(m_dir.isValid());
  if (!qs::tensor_reader_available("safetensors")) QSKIP("this build has no safetensors reader (nlohmann-json)");
  m_model = m_dir.filePath(QStringLiteral("model.safetensors"));
  writeSafetensors(m_model, smallModel());
}

void TestSqnrHeatmap::cellsMatchAnalyzeFile() {
  SqnrHeatmap map;
  QSignalSpy started(&map, &SqnrHeatmap::analysisStarted);
  QSignalSpy finished(&map, &SqnrHeatmap::analysisFinished);
  QSignalSpy progress(&map, &SqnrHeatmap::progressChanged);
  map.analyzeFile(m_model, schemes());
  QVERIFY(map.isRunning());
  QVERIFY(map.waitForFinished(30000));
  QCOMPARE(started.count(), 1);
  QCOMPARE(finished.count(), 1);
  QCOMPARE(finished.first().at(1).toBool(), false);
  QVERIFY(!progress.isEmpty());
  QCOMPARE(map.tensorNames(), (QStringList{"layers.0.weight", "layers.0.bias", "layers.1.weight", "head.weight"}));
  QCOMPARE(map.schemeNames().size(), 4);
  QCOMPARE(map.schemeNames()[2], QStringLiteral("e2m1fn/block:16:e4m3fn"));

  // The same numbers as the engine's analysis of the file.
  const auto file = qs::open_tensor_file(m_model.toStdString());
  const std::vector<qs::Scheme> s = schemes();
  int rows = 0, exact = 0;
  qs::analyze_file(*file, s, {}, [&](const qs::AnalyzeRow& row) {
    const int t = int(map.tensorNames().indexOf(QString::fromStdString(row.tensor->name)));
    const int k = int(row.scheme - s.data());
    const SqnrHeatmap::Cell& c = map.cell(t, k);
    QVERIFY(c.computed);
    QCOMPARE(c.sqnr_db, row.metrics.sqnr_db());
    QCOMPARE(c.mse, row.metrics.mse());
    QCOMPARE(c.clipped, row.metrics.clipped);
    QCOMPARE(c.count, row.metrics.count);
    // Exact cells (∞ dB: one value per channel of the 1-d bias) are not a point on the colour scale:
    // no value in the map, a box of their own colour over it.
    if (std::isinf(row.metrics.sqnr_db())) {
      QVERIFY(std::isnan(map.colorMap()->data()->cell(k, map.displayRow(t))));
      ++exact;
    } else {
      QCOMPARE(map.colorMap()->data()->cell(k, map.displayRow(t)), row.metrics.sqnr_db());
    }
    ++rows;
  }, 1, {}, false);
  QCOMPARE(rows, 15);  // 4 tensors x 4 schemes, less channel:1 of the 1-d bias
  QVERIFY(exact > 0);
  int boxes = 0;
  for (int i = 0; i < map.plot()->itemCount(); ++i) boxes += qobject_cast<QCPItemRect*>(map.plot()->item(i)) != nullptr;
  QCOMPARE(boxes, exact);
  QVERIFY(!map.cell(1, 3).computed);
  QVERIFY(std::isnan(map.colorMap()->data()->cell(3, 1)));
  // Per-channel int8 beats per-tensor e4m3fn... not always; but e2m1fn (4 bits) is always worst here.
  for (int t = 0; t < 4; ++t) QVERIFY(map.cell(t, 2).sqnr_db < map.cell(t, 0).sqnr_db);
  QVERIFY(map.statusText().contains(QStringLiteral("4 tensors × 4 schemes")));
  // The two tensors left out are counted, with their reasons (issue 19: "28 of 341" said nothing of why).
  QCOMPARE(map.skippedCount(), 2);
  QVERIFY2(map.statusText().contains(QStringLiteral("2 of the file's 6 tensors not shown: not floating point (1 int8); "
                                                    "1 with fewer than 2 values")),
           qPrintable(map.statusText()));
}

// Rows on screen follow the chosen order while cell and tensor indices stay in file order; clicks hit the
// tensor drawn there. The automatic colour range leaves out the extremes; a fixed one is used as given.
void TestSqnrHeatmap::orderAndColourRange() {
  SqnrHeatmap map;
  map.resize(900, 600);
  map.show();
  QVERIFY(QTest::qWaitForWindowExposed(&map));
  map.analyzeFile(m_model, schemes());
  QVERIFY(map.waitForFinished(30000));
  const QStringList names = map.tensorNames();
  map.setOrder(SqnrHeatmap::Order::Name);
  QStringList shown(names.size());
  for (int t = 0; t < names.size(); ++t) shown[map.displayRow(t)] = names[t];
  QStringList sorted = names;
  sorted.sort();
  QCOMPARE(shown, sorted);
  map.plot()->replot();
  for (int t = 0; t < names.size(); ++t) QCOMPARE(map.cellAt(map.cellCenter(t, 1)), QPoint(1, t));
  map.setOrder(SqnrHeatmap::Order::Size);  // head 192, layers.0.weight 512, layers.1.weight 512, bias 32
  QCOMPARE(map.displayRow(int(names.indexOf(QStringLiteral("layers.0.bias")))), 3);
  map.setOrder(SqnrHeatmap::Order::WorstSqnr);
  double previous = -INFINITY;
  for (int r = 0; r < names.size(); ++r) {
    int t = 0;
    while (map.displayRow(t) != r) ++t;
    double worst = INFINITY;
    for (int k = 0; k < 4; ++k)
      if (map.cell(t, k).computed) worst = std::min(worst, map.cell(t, k).sqnr_db);
    QVERIFY(worst >= previous);
    previous = worst;
  }
  // Colour range: full = min..max of the finite cells; fixed as given, and the cells keep their values.
  map.setColorRange(SqnrHeatmap::ColorRange::Full);
  double lo = INFINITY, hi = -INFINITY;
  for (int t = 0; t < names.size(); ++t)
    for (int k = 0; k < 4; ++k)
      if (map.cell(t, k).computed && std::isfinite(map.cell(t, k).sqnr_db))
        lo = std::min(lo, map.cell(t, k).sqnr_db), hi = std::max(hi, map.cell(t, k).sqnr_db);
  QCOMPARE(map.colorRange().first, lo);
  QCOMPARE(map.colorRange().second, hi);
  map.setColorRange(SqnrHeatmap::ColorRange::Auto);
  QVERIFY(map.colorRange().first >= lo && map.colorRange().second <= hi);
  QVERIFY(map.colorRange().first > lo || map.colorRange().second < hi);  // 2nd..98th percentile of 13 values
  map.setColorRange(SqnrHeatmap::ColorRange::Fixed, 10, 30);
  QCOMPARE(map.colorMap()->dataRange().lower, 10.0);
  QCOMPARE(map.colorMap()->dataRange().upper, 30.0);
}

void TestSqnrHeatmap::clickEmitsTensorActivated() {
  SqnrHeatmap map;
  map.resize(900, 600);
  map.show();
  map.analyzeFile(m_model, schemes());
  QVERIFY(map.waitForFinished(30000));
  map.plot()->replot();  // lay out at the shown size
  QSignalSpy activated(&map, &SqnrHeatmap::tensorActivated);
  for (const auto& [t, k] : {std::pair{2, 1}, std::pair{0, 3}, std::pair{3, 0}}) {
    const QPoint p = map.cellCenter(t, k);
    QCOMPARE(map.cellAt(p), QPoint(k, t));
    QTest::mouseClick(map.plot(), Qt::LeftButton, {}, p);
    QCOMPARE(activated.count(), 1);
    const QList<QVariant> args = activated.takeFirst();
    QCOMPARE(args.at(0).toString(), m_model);
    QCOMPARE(args.at(1).toString(), map.tensorNames()[t]);
    QCOMPARE(args.at(2).toInt(), k);
  }
  // Hovering a cell shows its exact numbers.
  QTest::mouseMove(map.plot(), map.cellCenter(2, 1));
  QTRY_VERIFY(QToolTip::isVisible());
  QVERIFY2(QToolTip::text().contains(map.tensorNames()[2]), qPrintable(QToolTip::text()));
  QVERIFY(QToolTip::text().contains(QString::number(map.cell(2, 1).sqnr_db, 'f', 2) + QStringLiteral(" dB")));
  // Outside the cells: nothing.
  QTest::mouseClick(map.plot(), Qt::LeftButton, {}, QPoint(3, 3));
  QCOMPARE(activated.count(), 0);
  QCOMPARE(map.cellAt(QPoint(3, 3)), QPoint(-1, -1));
}

void TestSqnrHeatmap::corruptFileFails() {
  const QString path = m_dir.filePath(QStringLiteral("corrupt.safetensors"));
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(QByteArray("\x10\x00\x00\x00\x00\x00\x00\x00{\"a\": [1, 2", 19));  // header cut short
  f.close();
  SqnrHeatmap map;
  QSignalSpy failed(&map, &SqnrHeatmap::failed);
  QSignalSpy finished(&map, &SqnrHeatmap::analysisFinished);
  map.analyzeFile(path, schemes());
  QVERIFY(map.waitForFinished(30000));
  QCOMPARE(failed.count(), 1);
  QCOMPARE(finished.count(), 0);
  const QString message = failed.first().at(0).toString();
  QVERIFY2(message.startsWith(QStringLiteral("cannot analyse ") + path + QStringLiteral(": ")), qPrintable(message));
  QVERIFY(message.size() > path.size() + 20);  // a reason follows
  QVERIFY(!message.contains(path + QStringLiteral(": ") + path));  // the file is named once
  QVERIFY(map.tensorNames().isEmpty());
  // Still usable.
  map.analyzeFile(m_model, schemes());
  QVERIFY(map.waitForFinished(30000));
  QCOMPARE(map.tensorNames().size(), 4);
}

void TestSqnrHeatmap::missingFileFails() {
  SqnrHeatmap map;
  QSignalSpy failed(&map, &SqnrHeatmap::failed);
  const QString path = m_dir.filePath(QStringLiteral("nope.npz"));
  map.analyzeFile(path, schemes());
  QVERIFY(map.waitForFinished(30000));
  QCOMPARE(failed.count(), 1);
  QVERIFY(failed.first().at(0).toString().contains(path));
  QVERIFY(map.statusText().contains(path));
}

void TestSqnrHeatmap::npyFile() {
  const QString path = m_dir.filePath(QStringLiteral("w.npy"));
  std::vector<float> v(40 * 30);
  Rng rng{9};
  for (float& x : v) x = float(rng.normal());
  qs::write_npy(path.toStdString(), qs::make_npy(qs::DType::F32, {40, 30}, v.data()));
  SqnrHeatmap map;
  map.analyzeFile(path, {qs::parse_scheme("int8/tensor")});
  QVERIFY(map.waitForFinished(30000));
  QCOMPARE(map.tensorNames().size(), 1);  // one row and one column: still drawn
  QVERIFY(map.cell(0, 0).computed);
  QCOMPARE(map.colorMap()->data()->cell(0, 0), map.cell(0, 0).sqnr_db);
}

void TestSqnrHeatmap::cancelStops() {
  // 64 tensors of 256 K values: long enough to cancel in the middle.
  std::vector<FixtureTensor> big;
  for (int i = 0; i < 64; ++i) {
    const QByteArray name = "t" + QByteArray::number(i);
    big.push_back(floats(name.constData(), {512, 512}, 1.0, uint64_t(100 + i)));
  }
  const QString path = m_dir.filePath(QStringLiteral("big.safetensors"));
  writeSafetensors(path, big);
  big.clear();
  SqnrHeatmap map;
  QSignalSpy finished(&map, &SqnrHeatmap::analysisFinished);
  QSignalSpy progress(&map, &SqnrHeatmap::progressChanged);
  map.analyzeFile(path, {qs::parse_scheme("e4m3fn/tensor"), qs::parse_scheme("int8/channel:0"),
                         qs::parse_scheme("e2m1fn/block:32:e8m0fnu")});
  QVERIFY(progress.wait(20000));
  map.cancel();
  QVERIFY(map.waitForFinished(20000));
  QCOMPARE(finished.count(), 1);
  QCOMPARE(finished.first().at(1).toBool(), true);
  int computed = 0;
  for (int t = 0; t < map.tensorNames().size(); ++t) computed += map.cell(t, 0).computed;
  QVERIFY2(computed < 64, qPrintable(QString::number(computed)));
  QVERIFY(map.statusText().contains(QStringLiteral("cancelled")));
  // A new request while one runs replaces it (JobRunner::restart): the replaced analysis reports nothing
  // more, the new one finishes, not cancelled, with every cell of its own file.
  map.analyzeFile(path, {qs::parse_scheme("e4m3fn/tensor")});
  map.analyzeFile(m_model, {qs::parse_scheme("e4m3fn/tensor")});
  QVERIFY(map.waitForFinished(60000));
  QCOMPARE(map.filePath(), m_model);
  QCOMPARE(map.tensorNames().size(), 4);
  QCOMPARE(finished.count(), 2);
  QCOMPARE(finished.last().at(0).toString(), m_model);
  QCOMPARE(finished.last().at(1).toBool(), false);
  for (int t = 0; t < 4; ++t) QVERIFY(map.cell(t, 0).computed);
}

void TestSqnrHeatmap::exports() {
  SqnrHeatmap map;
  map.analyzeFile(m_model, schemes());
  QVERIFY(map.waitForFinished(30000));
  QString error;
  QVERIFY2(map.exportAll(m_dir.path(), QStringLiteral("sqnr-heatmap"), &error), qPrintable(error));
  for (const QString& suffix : {QStringLiteral("png"), QStringLiteral("pdf"), QStringLiteral("csv")}) {
    QFileInfo fi(m_dir.filePath(QStringLiteral("sqnr-heatmap.") + suffix));
    QVERIFY2(fi.size() > 100, qPrintable(suffix));
  }
  QVERIFY(!QImage(m_dir.filePath(QStringLiteral("sqnr-heatmap.png"))).isNull());
  QFile csv(m_dir.filePath(QStringLiteral("sqnr-heatmap.csv")));
  QVERIFY(csv.open(QIODevice::ReadOnly));
  const QList<QByteArray> lines = csv.readAll().trimmed().split('\n');
  QCOMPARE(lines.size(), 16);  // header + 15 cells
  QVERIFY(lines[0].startsWith("file,tensor,shape,scheme,sqnr_db"));
  QVERIFY(lines[1].contains(",layers.0.weight,16x32,int8/channel:0,"));
  QVERIFY(!map.exportTo(QStringLiteral("/proc/x.png"), &error));
  QVERIFY(error.contains(QStringLiteral("/proc/x.png")));
}

void TestSqnrHeatmap::screenshot() {
  // A model-like file: 24 tensors with outliers in a few, so the map has structure.
  std::vector<FixtureTensor> layers;
  int k = 0;
  for (int l = 0; l < 6; ++l)
    for (const char* part : {"attn.q", "attn.k", "mlp.up", "mlp.down"}) {
      const QByteArray name = "model.layers." + QByteArray::number(l) + "." + part + ".weight";
      layers.push_back(floats(name.constData(), {64, 128}, 0.02 * (1 + l), uint64_t(1000 + k), k % 5 == 2));
      ++k;
    }
  const QString path = m_dir.filePath(QStringLiteral("llm.safetensors"));
  writeSafetensors(path, layers);
  SqnrHeatmap map;
  map.resize(1200, 800);
  map.show();
  map.analyzeFile(path, {qs::parse_scheme("int8/tensor"), qs::parse_scheme("int8/channel:0"), qs::parse_scheme("e4m3fn/tensor"),
                         qs::parse_scheme("e5m2/tensor"), qs::parse_scheme("e2m1fn/block:32:e8m0fnu"),
                         qs::parse_scheme("e2m1fn/block:16:e4m3fn")});
  QVERIFY(map.waitForFinished(30000));
  QTest::qWait(100);
  QVERIFY(map.grab().toImage().save(QStringLiteral("/tmp/qs-sqnrheatmap.png")));
}

QTEST_MAIN(TestSqnrHeatmap)
#include "tst_sqnrheatmap.moc"
