// Tests of FormatGridPlot (data, ranges, export) and of MainWindow's format picker.
// Run: `QT_QPA_PLATFORM=offscreen ./build/tst_formatgridplot` (ctest sets the platform itself).
#include <QCheckBox>
#include <QComboBox>
#include <QElapsedTimer>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QStatusBar>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

#include "format/encode_simd.h"
#include "format/format.h"
#include "formatgridplot.h"
#include "mainwindow.h"

namespace {

QVector<double> keys(const QCPGraph* g) {
  QVector<double> k;
  for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it) k << it->key;
  return k;
}

int finiteCount(const qs::Format& f) {
  int n = 0;
  for (double v : qs::distinct_values(f)) n += std::isfinite(v) ? 1 : 0;
  return n;
}

}  // namespace

class TestFormatGridPlot : public QObject {
  Q_OBJECT

private slots:
  void dataCountMatchesEngine_data();
  void dataCountMatchesEngine();
  void e2m1fnHasItsFifteenValues();
  void logScaleShowsPositiveValuesOnly();
  void sixteenBitFormatsAreQuick_data();
  void sixteenBitFormatsAreQuick();
  void exportWritesFiles_data();
  void exportWritesFiles();
  void exportCsvRows();
  void exportToUnwritablePathFails_data();
  void exportToUnwritablePathFails();
  void mainWindowComboUpdatesPlot();
  void mainWindowInvalidSpecKeepsPlot();
  void mainWindowValidCustomSpec();
  void mainWindowShell();
};

void TestFormatGridPlot::dataCountMatchesEngine_data() {
  QTest::addColumn<QString>("spec");
  for (const qs::Format& f : qs::named_formats())
    QTest::newRow(f.name.c_str()) << QString::fromStdString(f.name);
  for (const std::string& s : qs::sweep_8bit_specs())
    QTest::newRow(("sweep " + s).c_str()) << QString::fromStdString(s);
}

void TestFormatGridPlot::dataCountMatchesEngine() {
  QFETCH(QString, spec);
  const qs::Format f = qs::parse_format(spec.toStdString());
  FormatGridPlot plot;
  plot.setFormat(f);
  const int n = finiteCount(f);
  QCOMPARE(plot.valueGraph()->dataCount(), n);
  QCOMPARE(plot.plottedValues().size(), n);
  // The x range covers the whole finite range of the format.
  const QCPRange x = plot.xAxis->range();
  QVERIFY2(x.lower <= plot.plottedValues().front() && x.upper >= f.max_finite,
           qPrintable(QStringLiteral("x range [%1, %2]").arg(x.lower).arg(x.upper)));
  if (f.is_signed) QVERIFY(x.lower <= -f.max_finite);
  QVERIFY(!std::isfinite(plot.plottedSpacings().back()));  // the largest value has no next
  QVERIFY(plot.plottedSpacings().front() > 0);
}

void TestFormatGridPlot::e2m1fnHasItsFifteenValues() {
  // Independent of the engine: the MX FP4 element values from the OCP MX spec.
  FormatGridPlot plot;
  plot.setFormat(qs::parse_format("e2m1fn"));
  const QVector<double> expected = {-6, -4, -3, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 3, 4, 6};
  QCOMPARE(keys(plot.valueGraph()), expected);
  QCOMPARE(plot.valueGraph()->dataCount(), 15);
  QVERIFY(plot.xAxis->range().lower <= -6 && plot.xAxis->range().upper >= 6);
  // Spacing from 4 to 6 is 2; from 0 to 0.5 (subnormal) is 0.5.
  QCOMPARE(plot.plottedSpacings().at(expected.indexOf(4)), 2.0);
  QCOMPARE(plot.plottedSpacings().at(expected.indexOf(0)), 0.5);
}

void TestFormatGridPlot::logScaleShowsPositiveValuesOnly() {
  FormatGridPlot plot;
  QSignalSpy spy(&plot, &FormatGridPlot::logScaleChanged);
  plot.setFormat(qs::parse_format("e4m3fn"));
  plot.setLogScale(true);
  QCOMPARE(spy.count(), 1);
  QCOMPARE(plot.xAxis->scaleType(), QCPAxis::stLogarithmic);
  // e4m3fn: 126 positive finite values (codes 0x01..0x7E).
  QCOMPARE(plot.valueGraph()->dataCount(), 126);
  QCOMPARE(plot.plottedValues().front(), std::ldexp(1.0, -9));
  QCOMPARE(plot.plottedValues().back(), 448.0);
  QVERIFY(plot.xAxis->range().lower > 0 && plot.xAxis->range().lower <= std::ldexp(1.0, -9));
  QVERIFY(plot.xAxis->range().upper >= 448);
  plot.setLogScale(false);
  QCOMPARE(plot.xAxis->scaleType(), QCPAxis::stLinear);
  QCOMPARE(plot.valueGraph()->dataCount(), 253);  // docs/DESIGN.md (Named formats): e4m3fn has 253 distinct values
}

void TestFormatGridPlot::sixteenBitFormatsAreQuick_data() {
  QTest::addColumn<QString>("spec");
  QTest::newRow("fp16") << "fp16";
  QTest::newRow("bf16") << "bf16";
}

void TestFormatGridPlot::sixteenBitFormatsAreQuick() {
  QFETCH(QString, spec);
  FormatGridPlot plot;
  plot.resize(1100, 600);
  const qs::Format f = qs::parse_format(spec.toStdString());
  QElapsedTimer timer;
  timer.start();
  plot.setFormat(f);
  plot.replot();
  const qint64 ms = timer.elapsed();
  QCOMPARE(plot.valueGraph()->dataCount(), finiteCount(f));
  QVERIFY(plot.valueGraph()->dataCount() > 60000);
  // Generous bound (debug builds, loaded CI): per-item drawing would take seconds.
  QVERIFY2(ms < 1500, qPrintable(QStringLiteral("setFormat + replot took %1 ms").arg(ms)));
}

void TestFormatGridPlot::exportWritesFiles_data() {
  QTest::addColumn<QString>("suffix");
  QTest::addColumn<QByteArray>("magic");
  const QHash<QString, QByteArray> magic = {{"png", "\x89PNG"}, {"pdf", "%PDF"}, {"svg", "<?xml"},
                                             {"csv", "value,spacing"}};
  QVERIFY(FormatGridPlot::exportSuffixes().contains("png"));
  QVERIFY(FormatGridPlot::exportSuffixes().contains("pdf"));
  QVERIFY(FormatGridPlot::exportSuffixes().contains("csv"));
  for (const QString& suffix : FormatGridPlot::exportSuffixes()) {
    QVERIFY2(magic.contains(suffix), qPrintable(suffix));
    QTest::newRow(qPrintable(suffix)) << suffix << magic.value(suffix);
  }
  QTest::newRow("PNG upper-case suffix") << "PNG" << QByteArray("\x89PNG");
}

void TestFormatGridPlot::exportWritesFiles() {
  QFETCH(QString, suffix);
  QFETCH(QByteArray, magic);
  QTemporaryDir dir;
  QVERIFY(dir.isValid());
  FormatGridPlot plot;
  plot.resize(900, 500);
  plot.setFormat(qs::parse_format("e5m2"));
  const QString path = dir.filePath(QStringLiteral("grid.") + suffix);
  QString error;
  QVERIFY2(plot.exportTo(path, &error), qPrintable(error));
  QFile file(path);
  QVERIFY(file.open(QIODevice::ReadOnly));
  QVERIFY(file.size() > 100);
  QVERIFY(file.read(magic.size()) == magic);
  if (suffix.toLower() == u"png") {
    const QImage image(path);
    QCOMPARE(image.size(), QSize(900, 500));
  }
  QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden).size(), 1);  // no temp file left
}

void TestFormatGridPlot::exportCsvRows() {
  QTemporaryDir dir;
  FormatGridPlot plot;
  const qs::Format f = qs::parse_format("e4m3fn");
  plot.setFormat(f);
  const QString path = dir.filePath(QStringLiteral("e4m3fn.csv"));
  QVERIFY(plot.exportTo(path));
  QFile file(path);
  QVERIFY(file.open(QIODevice::ReadOnly | QIODevice::Text));
  const QList<QByteArray> lines = file.readAll().split('\n');
  QCOMPARE(lines.front(), QByteArray("value,spacing"));
  QCOMPARE(lines.back(), QByteArray());  // ends with a newline
  QCOMPARE(lines.size() - 2, finiteCount(f));
  QCOMPARE(lines.at(1), QByteArray("-448,32"));  // 448 - 416: the top binade's spacing
  QCOMPARE(lines.at(lines.size() - 2), QByteArray("448,"));
  // Values round-trip exactly: 2^-9 is written in full.
  QVERIFY(lines.contains(QByteArray("0.001953125,0.001953125")));
}

void TestFormatGridPlot::exportToUnwritablePathFails_data() {
  QTest::addColumn<QString>("path");
  QTest::newRow("png in missing dir") << "/nonexistent-dir/x.png";
  QTest::newRow("pdf in missing dir") << "/nonexistent-dir/x.pdf";
  QTest::newRow("csv in missing dir") << "/nonexistent-dir/x.csv";
  QTest::newRow("unknown suffix") << QDir::temp().filePath(QStringLiteral("qs-tst-formatgridplot.txt"));
  QTest::newRow("no suffix") << QDir::temp().filePath(QStringLiteral("qs-tst-formatgridplot"));
}

void TestFormatGridPlot::exportToUnwritablePathFails() {
  QFETCH(QString, path);
  FormatGridPlot plot;
  QString error;
  QVERIFY(!plot.exportTo(path, &error));
  QVERIFY(!error.isEmpty());
  QVERIFY(!error.contains(u'\n'));
  QVERIFY(!QFileInfo::exists(path));
}

void TestFormatGridPlot::mainWindowComboUpdatesPlot() {
  MainWindow window;
  auto* combo = window.findChild<QComboBox*>(QStringLiteral("formatCombo"));
  QVERIFY(combo);
  FormatGridPlot* plot = window.formatPlot();
  QCOMPARE(plot->format().name, std::string("e4m3fn"));
  QCOMPARE(combo->currentData().toString(), QStringLiteral("e4m3fn"));

  // Every named format and every sweep spec is listed.
  for (const qs::Format& f : qs::named_formats())
    QVERIFY2(combo->findData(QString::fromStdString(f.name)) >= 0, f.name.c_str());
  for (const std::string& s : qs::sweep_8bit_specs())
    QVERIFY2(combo->findData(QString::fromStdString(qs::parse_format(s).name)) >= 0, s.c_str());

  QSignalSpy spy(plot, &FormatGridPlot::formatChanged);
  combo->setCurrentIndex(combo->findData(QStringLiteral("e2m1fn")));
  QCOMPARE(spy.count(), 1);
  QCOMPARE(plot->format().name, std::string("e2m1fn"));
  QCOMPARE(plot->valueGraph()->dataCount(), 15);

  combo->setCurrentIndex(combo->findData(QStringLiteral("int8")));
  QCOMPARE(plot->valueGraph()->dataCount(), 255);  // narrow range [-127, 127]

  auto* log = window.findChild<QCheckBox*>(QStringLiteral("logScaleCheck"));
  QVERIFY(log);
  log->setChecked(true);
  QVERIFY(plot->logScale());
  QCOMPARE(plot->valueGraph()->dataCount(), 127);
}

void TestFormatGridPlot::mainWindowInvalidSpecKeepsPlot() {
  MainWindow window;
  auto* edit = window.findChild<QLineEdit*>(QStringLiteral("customSpecEdit"));
  auto* message = window.findChild<QLabel*>(QStringLiteral("specMessageLabel"));
  QVERIFY(edit && message);
  FormatGridPlot* plot = window.formatPlot();
  const qs::Format before = plot->format();
  const int count = plot->valueGraph()->dataCount();

  for (const char* bad : {"e9m9", "e3m3:bias=", "e3m3:specials=banana", "x", "e1m6:specials=ieee"}) {
    std::string expected;
    try {
      qs::parse_format(bad);
      QFAIL(bad);  // each of these must be rejected by the engine
    } catch (const qs::FormatError& e) {
      expected = e.what();
    }
    edit->setText(QString::fromLatin1(bad));  // textChanged fires as for typing
    QCOMPARE(message->text(), QString::fromStdString(expected));
    QVERIFY(plot->format() == before);
    QCOMPARE(plot->valueGraph()->dataCount(), count);
  }
  edit->clear();  // an empty field is not an error
  QVERIFY(!message->text().contains(QStringLiteral("e1m6")));
}

void TestFormatGridPlot::mainWindowValidCustomSpec() {
  MainWindow window;
  auto* edit = window.findChild<QLineEdit*>(QStringLiteral("customSpecEdit"));
  auto* combo = window.findChild<QComboBox*>(QStringLiteral("formatCombo"));
  auto* message = window.findChild<QLabel*>(QStringLiteral("specMessageLabel"));
  FormatGridPlot* plot = window.formatPlot();
  edit->setText(QStringLiteral("e3m3:bias=2:specials=none"));
  const qs::Format f = qs::parse_format("e3m3:bias=2:specials=none");
  QVERIFY(plot->format() == f);
  QCOMPARE(plot->valueGraph()->dataCount(), finiteCount(f));
  QCOMPARE(combo->currentIndex(), -1);  // "(custom)"
  QVERIFY(!message->text().contains(QStringLiteral("e3m3")));

  // Typing a table name selects its combo entry; picking an entry clears the custom field.
  edit->setText(QStringLiteral("fp16"));
  QCOMPARE(combo->currentData().toString(), QStringLiteral("fp16"));
  combo->setCurrentIndex(combo->findData(QStringLiteral("e5m2")));
  QVERIFY(edit->text().isEmpty());
  QCOMPARE(plot->format().name, std::string("e5m2"));

  QString error;
  QVERIFY(!window.selectFormat(QStringLiteral("e9m9"), &error));
  QVERIFY(error.startsWith(QStringLiteral("e9m9")));  // the parser names the spec it rejects
  QCOMPARE(plot->format().name, std::string("e5m2"));
  QVERIFY(window.selectFormat(QStringLiteral("e2m3fn")));
  QCOMPARE(plot->format().name, std::string("e2m3fn"));
}

void TestFormatGridPlot::mainWindowShell() {
  MainWindow window;
  QCOMPARE(window.windowTitle(), QStringLiteral("QuantScope"));
  QCOMPARE(window.tabs()->tabText(0), QStringLiteral("Formats"));
  auto* simd = window.findChild<QLabel*>(QStringLiteral("simdLabel"));
  auto* cuda = window.findChild<QLabel*>(QStringLiteral("cudaLabel"));
  QVERIFY(simd && cuda);
  QVERIFY(simd->text().contains(QString::fromLatin1(qs::to_string(qs::best_simd_level()))));
  QVERIFY(!cuda->text().isEmpty());
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  const QImage shot = window.grab().toImage();
  QVERIFY(shot.width() >= 800 && shot.height() >= 500);
}

QTEST_MAIN(TestFormatGridPlot)
#include "tst_formatgridplot.moc"
