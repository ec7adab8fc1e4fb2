// Tests of ErrorPanel (the Error tab): choosing schemes updates the plots and the table with the numbers
// of qs::compute_error_view; rapid scheme changes never block; the per-scheme cache; NaN/inf tensors;
// Cancel; exports (every file non-empty, a failing folder leaves nothing); a small UI benchmark; and a
// screenshot of the tab at 1200 x 800 (/tmp/qs-errorpanel.png).
// Run: `QT_QPA_PLATFORM=offscreen ./build/tests/tst_errorpanel` (ctest sets the platform itself).
#include <QComboBox>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <qcustomplot.h>

#include <cmath>
#include <limits>
#include <memory>

#include "errorhistogramplot.h"
#include "errormetricstable.h"
#include "errorpanel.h"
#include "test_rng.h"
#include "uibench.h"
#include "valuehistogramplot.h"

namespace {

TensorData makeTensor(const char* tag, int64_t rows, int64_t cols, bool outliers = false) {
  Rng rng = Rng::from_tag(tag);
  auto v = std::make_shared<std::vector<float>>(std::size_t(rows * cols));
  for (float& x : *v) x = float(rng.normal());
  if (outliers)
    for (std::size_t i = 5; i < v->size(); i += 211) (*v)[i] = float(rng.sign() * rng.between(15, 40));
  TensorData t;
  t.source = QStringLiteral("test");
  t.name = QString::fromLatin1(tag);
  t.values = v;
  t.shape = {rows, cols};
  return t;
}

std::vector<qs::Scheme> schemes(std::initializer_list<const char*> texts) {
  std::vector<qs::Scheme> out;
  for (const char* t : texts) out.push_back(qs::parse_scheme(t));
  return out;
}

qs::ErrorView coreView(const TensorData& t, const qs::Scheme& s, int bins = 512) {
  qs::ErrorViewOptions opt;
  opt.value_bins = bins;
  return qs::compute_error_view(s, t.values->data(), t.shape, opt);
}

// Sum over a graph's plotted values (NaN gaps skipped).
double graphSum(const QCPGraph* g) {
  double s = 0;
  for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it)
    if (!std::isnan(it->value)) s += it->value;
  return s;
}

}  // namespace

class TestErrorPanel : public QObject {
  Q_OBJECT

private slots:
  void initialState();
  void schemesUpdatePlots();
  void errorModeSwitches();
  void rapidChangesNeverBlock();
  void cacheComputesOnlyNewSchemes();
  void nanInfTensorCounted();
  void nanOutCountedApartFromNanIn();
  void badSchemeAndEmptyTensor();
  void cancelStops();
  void destroyWhileRunning();
  void exportWritesEveryFile();
  void exportFailureLeavesNothing();
  void uiBenchmarkSmall();
  void longTensorNameKeepsWidth_data();
  void longTensorNameKeepsWidth();
  void screenshot();
};

void TestErrorPanel::initialState() {
  ErrorPanel panel;
  QVERIFY(!panel.isBusy());
  QVERIFY(panel.waitForIdle(0));
  QCOMPARE(panel.metricsTable()->rowCount(), 0);
  QVERIFY(panel.statusText().contains(QStringLiteral("Select a tensor")));
  QCOMPARE(panel.valuePlot()->histogramGraph()->dataCount(), 0);
  QVERIFY(panel.threads() >= 1);
}

void TestErrorPanel::schemesUpdatePlots() {
  ErrorPanel panel;
  const TensorData t = makeTensor("schemesUpdatePlots", 256, 256);
  QSignalSpy busy(&panel, &ErrorPanel::busyChanged);
  QSignalSpy progress(&panel, &ErrorPanel::progressChanged);
  panel.setTensor(t);
  panel.setSchemes(schemes({"int8/tensor", "e4m3fn/tensor"}));
  QVERIFY(panel.isBusy());
  QVERIFY(panel.waitForIdle(30000));
  QVERIFY(busy.count() >= 2);
  QCOMPARE(busy.last().at(0).toBool(), false);
  QVERIFY(!progress.isEmpty());
  QCOMPARE(progress.last().at(0).toInt(), 1000);

  const qs::ErrorView i8 = coreView(t, qs::parse_scheme("int8/tensor"));
  const qs::ErrorView f8 = coreView(t, qs::parse_scheme("e4m3fn/tensor"));
  // The table holds the core's numbers, and int8 and e4m3fn differ as they should on normal data.
  ErrorMetricsTable* table = panel.metricsTable();
  QCOMPARE(table->rowCount(), 2);
  QCOMPARE(table->number(0, ErrorMetricsTable::Sqnr), i8.metrics.sqnr_db());
  QCOMPARE(table->number(1, ErrorMetricsTable::Sqnr), f8.metrics.sqnr_db());
  QCOMPARE(table->number(0, ErrorMetricsTable::Mse), i8.metrics.mse());
  QCOMPARE(table->number(1, ErrorMetricsTable::MaxAbs), f8.metrics.max_abs_e);
  QVERIFY(i8.metrics.sqnr_db() > f8.metrics.sqnr_db() + 3);  // 8-bit uniform beats E4M3 on a normal
  QVERIFY(table->item(0, ErrorMetricsTable::Sqnr)->text().startsWith(QString::number(i8.metrics.sqnr_db(), 'f', 2)));

  // Sorting by SQNR puts e4m3fn first, ascending.
  table->sortByColumn(ErrorMetricsTable::Sqnr, Qt::AscendingOrder);
  QVERIFY(table->item(0, ErrorMetricsTable::Scheme)->text().startsWith(QStringLiteral("e4m3fn")));
  table->sortByColumn(ErrorMetricsTable::Sqnr, Qt::DescendingOrder);
  QVERIFY(table->item(0, ErrorMetricsTable::Scheme)->text().startsWith(QStringLiteral("int8")));

  // The value histogram: 512 bins whose counts are the core's; one rug per scheme with its grid.
  ValueHistogramPlot* vp = panel.valuePlot();
  QCOMPARE(vp->histogramGraph()->dataCount(), 512);
  QCOMPARE(graphSum(vp->histogramGraph()), double(t.size()));
  QCOMPARE(vp->grids().size(), 2);
  QCOMPARE(vp->gridGraph(0)->dataCount(), int(i8.grid.values.size()));
  QCOMPARE(vp->gridGraph(1)->dataCount(), int(f8.grid.values.size()));
  QCOMPARE(vp->gridGraph(0)->dataCount(), 255);  // int8: -127..127 times the scale
  QCOMPARE(vp->gridGraph(0)->data()->at(0)->key, i8.grid.values.front());
  QVERIFY(vp->gridGraph(0)->pen().color() != vp->gridGraph(1)->pen().color());

  // The error histogram: fractions that add up to the non-exact part; no clipping under amax scaling.
  ErrorHistogramPlot* ep = panel.errorPlot();
  QCOMPARE(ep->mode(), ErrorHistogramPlot::Mode::Absolute);
  QVERIFY(ep->roundingGraph(0) && ep->roundingGraph(1));
  QVERIFY(!ep->clippingGraph(0));
  QCOMPARE(std::lround(graphSum(ep->roundingGraph(0)) * double(i8.finite)), long(i8.finite - i8.abs_error.zeros));
  QCOMPARE(std::lround(graphSum(ep->roundingGraph(1)) * double(f8.finite)), long(f8.finite - f8.abs_error.zeros));
  // e4m3fn's error is relative (floating point): its absolute error spreads over more binades than int8's.
  QVERIFY(ep->roundingGraph(1)->dataCount() > ep->roundingGraph(0)->dataCount());

  // Changing the list changes the plots: MX blocks clip, so a clipping part appears.
  panel.setSchemes(schemes({"e2m1fn/block:32:e8m0fnu"}));
  QVERIFY(panel.waitForIdle(30000));
  const qs::ErrorView mx = coreView(t, qs::parse_scheme("e2m1fn/block:32:e8m0fnu"));
  QCOMPARE(table->rowCount(), 1);
  QCOMPARE(table->number(0, ErrorMetricsTable::Sqnr), mx.metrics.sqnr_db());
  QCOMPARE(table->number(0, ErrorMetricsTable::Clipped), double(mx.clipped));
  QVERIFY(mx.clipped > 0);
  QVERIFY(ep->clippingGraph(0));
  QCOMPARE(std::lround(graphSum(ep->clippingGraph(0)) * double(mx.finite)), long(mx.clipped));
  QCOMPARE(vp->grids().size(), 1);
  QCOMPARE(vp->gridGraph(0)->dataCount(), int(mx.grid.values.size()));
  QVERIFY(vp->grids()[0].note.startsWith(QStringLiteral("block ")));
}

void TestErrorPanel::errorModeSwitches() {
  ErrorPanel panel;
  const TensorData t = makeTensor("errorModeSwitches", 64, 128);
  panel.setSchemes(schemes({"e5m2/tensor"}));
  panel.setTensor(t);
  QVERIFY(panel.waitForIdle(30000));
  const qs::ErrorView v = coreView(t, qs::parse_scheme("e5m2/tensor"));
  const double absLastKey = panel.errorPlot()->roundingGraph(0)->data()->at(panel.errorPlot()->roundingGraph(0)->dataCount() - 1)->key;
  panel.setErrorMode(ErrorPanel::ErrorMode::Relative);
  QCOMPARE(panel.errorMode(), ErrorPanel::ErrorMode::Relative);
  QCOMPARE(panel.findChild<QComboBox*>(QStringLiteral("errorModeBox"))->currentIndex(), 1);
  QCPGraph* rel = panel.errorPlot()->roundingGraph(0);
  QCOMPARE(std::lround(graphSum(rel) * double(v.finite)), long(v.finite - v.rel_error.zeros - v.rel_error.undefined));
  QVERIFY(rel->data()->at(rel->dataCount() - 1)->key != absLastKey);
  // e5m2 has 2 mantissa bits: relative errors stay below 2^-3.
  QVERIFY(rel->data()->at(rel->dataCount() - 1)->key <= -3 + 1.5);
  panel.setLogCounts(true);
  QCOMPARE(panel.valuePlot()->yAxis->scaleType(), QCPAxis::stLogarithmic);
}

void TestErrorPanel::rapidChangesNeverBlock() {
  ErrorPanel panel;
  const TensorData t = makeTensor("rapidChanges", 1024, 1024);  // 1 M values
  panel.setTensor(t);
  const char* lists[][2] = {{"int8/tensor", "e4m3fn/tensor"}, {"e5m2/tensor", "int4/channel:0"},
                            {"e3m4/tensor", "e2m1fn/block:32:e8m0fnu"}, {"uint8/tensor", "int8/channel:1"}};
  QElapsedTimer clock;
  qint64 slowest = 0;
  for (int round = 0; round < 12; ++round) {
    clock.start();
    const auto& l = lists[round % 4];
    panel.setSchemes(schemes({l[0], l[1]}));
    slowest = std::max(slowest, clock.elapsed());
    QCoreApplication::processEvents();
  }
  QVERIFY2(slowest < 50, qPrintable(QStringLiteral("setSchemes took %1 ms").arg(slowest)));
  QVERIFY(panel.waitForIdle(60000));
  // What is shown is the last list, with the core's numbers.
  QCOMPARE(panel.metricsTable()->rowCount(), 2);
  QVERIFY(panel.metricsTable()->item(0, 0)->text().startsWith(QStringLiteral("uint8/tensor")));
  QCOMPARE(panel.view(1)->metrics.sqnr_db(), coreView(t, qs::parse_scheme("int8/channel:1")).metrics.sqnr_db());
}

void TestErrorPanel::cacheComputesOnlyNewSchemes() {
  ErrorPanel panel;
  QSignalSpy messages(&panel, &ErrorPanel::message);
  panel.setTensor(makeTensor("cache", 128, 128));
  panel.setSchemes(schemes({"int8/tensor", "e4m3fn/tensor"}));
  QVERIFY(panel.waitForIdle(30000));
  QVERIFY(messages.last().at(0).toString().contains(QStringLiteral("2 schemes")));
  const auto first = panel.view(0);
  panel.setSchemes(schemes({"int8/tensor", "e4m3fn/tensor", "e5m2/tensor"}));
  QVERIFY(panel.waitForIdle(30000));
  QVERIFY(messages.last().at(0).toString().contains(QStringLiteral("tab: 1 scheme,")));
  QCOMPARE(panel.view(0).get(), first.get());  // the same result object: not recomputed
  // Back to a cached list: shown at once, no computation.
  panel.setSchemes(schemes({"e5m2/tensor"}));
  QVERIFY(!panel.isBusy());
  QCOMPARE(panel.metricsTable()->rowCount(), 1);
  QCOMPARE(panel.errorPlot()->series().size(), 1);
  // The same format with other options is another scheme.
  qs::EncodeOptions stochastic;
  stochastic.rounding = qs::Rounding::Stochastic;
  stochastic.seed = 7;
  panel.setSchemes({qs::parse_scheme("int8/tensor"), qs::parse_scheme("int8/tensor", stochastic)});
  QVERIFY(panel.waitForIdle(30000));
  QVERIFY(panel.metricsTable()->item(1, 0)->text().contains(QStringLiteral("stochastic")));
  QVERIFY(panel.view(0)->metrics.sqnr_db() != panel.view(1)->metrics.sqnr_db());
  // A new tensor invalidates everything.
  panel.setTensor(makeTensor("cache 2", 64, 64));
  QVERIFY(panel.waitForIdle(30000));
  QCOMPARE(panel.view(0)->n, std::size_t(64 * 64));
}

void TestErrorPanel::nanInfTensorCounted() {
  ErrorPanel panel;
  TensorData t = makeTensor("nanInf", 100, 100);
  auto v = std::make_shared<std::vector<float>>(*t.values);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (int i = 0; i < 7; ++i) (*v)[std::size_t(i * 31)] = nan;
  for (int i = 0; i < 3; ++i) (*v)[std::size_t(5000 + i)] = inf;
  (*v)[9999] = -inf;
  t.values = v;
  panel.setSchemes(schemes({"e4m3fn/tensor", "int8/channel:0", "e2m1fn/block:32:e8m0fnu"}));
  panel.setTensor(t);
  QVERIFY(panel.waitForIdle(30000));
  for (int i = 0; i < 3; ++i) {
    const auto view = panel.view(i);
    QVERIFY(view);
    QCOMPARE(view->nan, uint64_t(7));
    QCOMPARE(view->pos_inf, uint64_t(3));
    QCOMPARE(view->neg_inf, uint64_t(1));
    QCOMPARE(panel.metricsTable()->number(i, ErrorMetricsTable::Nan), 11.0);  // 7 NaN + 4 inf inputs
    QCOMPARE(panel.metricsTable()->item(i, ErrorMetricsTable::Nan)->text(), QStringLiteral("7 NaN, 4 inf"));
    QVERIFY(std::isfinite(panel.metricsTable()->number(i, ErrorMetricsTable::Sqnr)));
  }
  QVERIFY(panel.statusText().contains(QStringLiteral("7 NaN, 3 +inf, 1 −inf")));
  QCOMPARE(graphSum(panel.valuePlot()->histogramGraph()), double(t.size() - 11));
  QVERIFY(panel.valuePlot()->csv().contains("nan,,,7\n"));
  QVERIFY(panel.valuePlot()->csv().contains("+inf,,,3\n"));
}

// Issue 19 item 4: IEEE overflow in E4M3FN turns finite values into NaN. The table used to show
// "NaN 0" (it counted NaN inputs) beside an MSE of "—" with no reason given.
void TestErrorPanel::nanOutCountedApartFromNanIn() {
  ErrorPanel panel;
  TensorData t = makeTensor("nanOut", 64, 64);
  auto v = std::make_shared<std::vector<float>>(*t.values);
  for (int i = 0; i < 5; ++i) (*v)[std::size_t(100 + i)] = 1000.0f;  // beyond E4M3FN's 448
  (*v)[7] = std::numeric_limits<float>::quiet_NaN();
  t.values = v;
  std::vector<qs::Scheme> s = schemes({"e4m3fn/none", "e4m3fn/none", "e5m2/none"});
  s[1].options.overflow = qs::Overflow::Ieee;
  s[2].options.overflow = qs::Overflow::Ieee;
  panel.setSchemes(s);
  panel.setTensor(t);
  QVERIFY(panel.waitForIdle(30000));
  ErrorMetricsTable* table = panel.metricsTable();
  for (int r = 0; r < 3; ++r) QCOMPARE(table->number(r, ErrorMetricsTable::Nan), 1.0);  // the one NaN input
  QCOMPARE(table->number(0, ErrorMetricsTable::NonFiniteOut), 0.0);                   // saturate: clamped
  QCOMPARE(table->number(1, ErrorMetricsTable::NonFiniteOut), 5.0);                   // ieee: 5 became NaN
  QCOMPARE(table->number(2, ErrorMetricsTable::NonFiniteOut), 0.0);                   // E5M2 reaches 57344
  QVERIFY2(table->item(1, ErrorMetricsTable::NonFiniteOut)->text().endsWith(QStringLiteral("NaN")),
           qPrintable(table->item(1, ErrorMetricsTable::NonFiniteOut)->text()));
  QCOMPARE(table->item(1, ErrorMetricsTable::Mse)->text(), QStringLiteral("undefined"));
  QVERIFY2(table->item(1, ErrorMetricsTable::Mse)->toolTip().contains(QStringLiteral("5 finite values became NaN")),
           qPrintable(table->item(1, ErrorMetricsTable::Mse)->toolTip()));
  QVERIFY(table->item(1, ErrorMetricsTable::MaxAbs)->toolTip().contains(QStringLiteral("stayed finite")));
  QVERIFY(table->item(0, ErrorMetricsTable::Mse)->toolTip().isEmpty());
  QVERIFY(table->csv().split('\n').at(2).endsWith(",5"));
}

void TestErrorPanel::badSchemeAndEmptyTensor() {
  ErrorPanel panel;
  QSignalSpy messages(&panel, &ErrorPanel::message);
  panel.setTensor(makeTensor("bad", 16, 16));
  panel.setSchemes(schemes({"int8/channel:5", "int8/tensor"}));  // axis 5 of a 2-d tensor
  QVERIFY(panel.waitForIdle(30000));
  QVERIFY(!panel.view(0));
  QVERIFY(panel.errorText(0).contains(QStringLiteral("axis")));
  QVERIFY(panel.view(1));
  QCOMPARE(panel.metricsTable()->item(0, ErrorMetricsTable::Sqnr)->text(), QStringLiteral("error"));
  bool named = false;
  for (const auto& m : messages) named |= m.at(0).toString().contains(QStringLiteral("int8/channel:5"));
  QVERIFY(named);

  TensorData empty;
  empty.name = QStringLiteral("empty");
  empty.values = std::make_shared<std::vector<float>>();
  panel.setTensor(empty);
  QVERIFY(panel.waitForIdle(5000));
  QVERIFY(!panel.isBusy());
  QVERIFY(!panel.view(1));
  // A shape that does not match the values is read flat, never past the end.
  TensorData odd = makeTensor("odd", 10, 10);
  odd.shape = {1000, 1000};
  panel.setTensor(odd);
  QVERIFY(panel.waitForIdle(10000));
  QCOMPARE(panel.view(1)->n, std::size_t(100));
}

void TestErrorPanel::cancelStops() {
  ErrorPanel panel;
  panel.setThreads(1);
  panel.setTensor(makeTensor("cancel", 2048, 2048));  // 4 M values
  panel.setSchemes(schemes({"e4m3fn/tensor", "int8/channel:0", "e2m1fn/block:16:e4m3fn", "uint8/tensor", "e5m2/tensor"}));
  QSignalSpy progress(&panel, &ErrorPanel::progressChanged);
  QVERIFY(progress.wait(20000));
  QElapsedTimer clock;
  clock.start();
  panel.cancel();
  QVERIFY(panel.waitForIdle(10000));
  QVERIFY2(clock.elapsed() < 3000, qPrintable(QString::number(clock.elapsed())));
  QVERIFY(panel.statusText().contains(QStringLiteral("cancelled")));
  QVERIFY(!panel.view(4));  // the last scheme never ran
  QVERIFY(!panel.findChild<QPushButton*>(QStringLiteral("cancelButton"))->isEnabled());
  // Issue 19: no "computing…" is left behind: the missing rows say cancelled, and Recompute fills them.
  const int rows = panel.metricsTable()->rowCount();
  for (int r = 0; r < rows; ++r) {
    const QString sqnr = panel.metricsTable()->item(r, ErrorMetricsTable::Sqnr)->text();
    QVERIFY2(sqnr != QStringLiteral("computing…"), qPrintable(sqnr));
  }
  QCOMPARE(panel.metricsTable()->item(4, ErrorMetricsTable::Sqnr)->text(), QStringLiteral("cancelled"));
  QVERIFY(!panel.statusText().contains(QStringLiteral("computing")));
  auto* recompute = panel.findChild<QPushButton*>(QStringLiteral("recomputeButton"));
  QVERIFY(recompute && recompute->isVisibleTo(&panel));
  recompute->click();
  QVERIFY(panel.waitForIdle(60000));
  for (int i = 0; i < 5; ++i) QVERIFY(panel.view(i));
  QVERIFY(!recompute->isVisibleTo(&panel));
  QVERIFY(!panel.statusText().contains(QStringLiteral("cancelled")));
  // A later change computes again.
  panel.setSchemes(schemes({"e5m2/tensor"}));
  QVERIFY(panel.waitForIdle(30000));
  QVERIFY(panel.view(0));
}

void TestErrorPanel::destroyWhileRunning() {
  auto panel = std::make_unique<ErrorPanel>();
  panel->setTensor(makeTensor("destroy", 2048, 2048));
  panel->setSchemes(schemes({"e4m3fn/tensor", "int8/channel:0"}));
  QVERIFY(panel->isBusy());
  QElapsedTimer clock;
  clock.start();
  panel.reset();  // aborts between chunks and joins
  QVERIFY(clock.elapsed() < 3000);
}

void TestErrorPanel::exportWritesEveryFile() {
  ErrorPanel panel;
  panel.setTensor(makeTensor("export", 128, 256, true));
  panel.setSchemes(schemes({"int8/channel:0", "e2m1fn/block:32:e8m0fnu"}));
  QTemporaryDir dir;
  QString error;
  QVERIFY2(panel.exportReport(dir.path(), &error), qPrintable(error));  // waits for the computation itself
  for (const QString& name : ErrorPanel::reportFiles()) {
    QFile f(QDir(dir.path()).filePath(name));
    QVERIFY2(f.open(QIODevice::ReadOnly), qPrintable(name));
    const QByteArray head = f.read(64);
    QVERIFY2(f.size() > 100, qPrintable(name));
    if (name.endsWith(u".pdf")) QVERIFY(head.startsWith("%PDF"));
    if (name.endsWith(u".svg")) QVERIFY(head.contains("<?xml") || head.contains("<svg"));
    if (name.endsWith(u".png")) QVERIFY(!QImage(f.fileName()).isNull());
  }
  QCOMPARE(QDir(dir.path()).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot).size(),
           ErrorPanel::reportFiles().size());  // no staging folder left behind
  QFile metrics(QDir(dir.path()).filePath(QStringLiteral("metrics.csv")));
  QVERIFY(metrics.open(QIODevice::ReadOnly));
  const QList<QByteArray> lines = metrics.readAll().split('\n');
  QVERIFY(lines[0].startsWith("scheme,sqnr_db,mse"));
  QVERIFY(lines[1].startsWith("int8/channel:0,"));
  QVERIFY(lines[2].startsWith("e2m1fn/block:32:e8m0fnu,"));
  QFile hist(QDir(dir.path()).filePath(QStringLiteral("error-histogram.csv")));
  QVERIFY(hist.open(QIODevice::ReadOnly));
  const QByteArray h = hist.readAll();
  QVERIFY(h.startsWith("scheme,kind,part,bin_lo,bin_hi,count\n"));
  QVERIFY(h.contains("e2m1fn/block:32:e8m0fnu,abs_error,clipping,"));
  QVERIFY(h.contains("int8/channel:0,rel_error,rounding,"));
  // The view the user chose is left as it was.
  QCOMPARE(panel.errorMode(), ErrorPanel::ErrorMode::Absolute);
}

void TestErrorPanel::exportFailureLeavesNothing() {
  ErrorPanel panel;
  panel.setTensor(makeTensor("exportFail", 64, 64));
  panel.setSchemes(schemes({"int8/tensor"}));
  QVERIFY(panel.waitForIdle(30000));
  QSignalSpy messages(&panel, &ErrorPanel::message);
  QString error;
  // A folder that does not exist.
  QTemporaryDir dir;
  const QString missing = QDir(dir.path()).filePath(QStringLiteral("no/such/folder"));
  QVERIFY(!panel.exportReport(missing, &error));
  QVERIFY2(error.contains(missing), qPrintable(error));
  QVERIFY(!messages.isEmpty() && messages.last().at(0).toString().contains(QStringLiteral("failed")));
  // A folder nobody can write into (even root): nothing appears.
  error.clear();
  QVERIFY(!panel.exportReport(QStringLiteral("/proc"), &error));
  QVERIFY2(error.startsWith(QStringLiteral("cannot write /proc")), qPrintable(error));
  // Something in the way of the last file: the export stops before moving anything into place.
  QVERIFY(QDir(dir.path()).mkdir(QStringLiteral("metrics.csv")));
  error.clear();
  QVERIFY(!panel.exportReport(dir.path(), &error));
  QVERIFY2(error.contains(QStringLiteral("metrics.csv")), qPrintable(error));
  QCOMPARE(QDir(dir.path()).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot),
           QStringList{QStringLiteral("metrics.csv")});
}

void TestErrorPanel::uiBenchmarkSmall() {
  QString text;
  QTextStream out(&text);
  const int rc = runUiBenchmark(out, std::size_t(1) << 20);
  QVERIFY2(rc == 0 || rc == 1, qPrintable(text));  // measured (over budget on a busy machine is not a failure here)
  const QStringList lines = text.split(u'\n', Qt::SkipEmptyParts);
  QCOMPARE(lines.size(), 2);
  QCOMPARE(lines[0], QStringLiteral("values,schemes,compute_ms,max_gap_ms,budget_ms,ratio"));
  const QStringList f = lines[1].split(u',');
  QCOMPARE(f.size(), 6);
  QCOMPARE(f[0], QStringLiteral("1048576"));
  QCOMPARE(f[1], QStringLiteral("3"));
  QVERIFY(f[2].toDouble() > 0);
  QVERIFY(f[3].toDouble() >= 9);  // at least one 10 ms tick interval
  qInfo("%s", qPrintable(lines[1]));
}

// F2: the status line and the value plot's title name the tensor; a name from a file can be any
// length, and its natural width used to become the window's minimum (153,179 px for 20,000 characters).
void TestErrorPanel::longTensorNameKeepsWidth_data() {
  QTest::addColumn<QString>("name");
  QTest::newRow("20000-char name, no break") << QString(20000, u'L');
  QTest::newRow("20000-char name, dotted") << QStringLiteral("layer.").repeated(3333);
  QTest::newRow("1000 words") << QStringLiteral("word ").repeated(1000).trimmed();
  QTest::newRow("20000-char html-like name") << QStringLiteral("<b>&amp;").repeated(2500);
}

void TestErrorPanel::longTensorNameKeepsWidth() {
  QFETCH(QString, name);
  ErrorPanel panel;
  panel.resize(1000, 700);
  panel.show();
  QVERIFY(QTest::qWaitForWindowExposed(&panel));
  TensorData t = makeTensor("longTensorNameKeepsWidth", 64, 64);
  t.name = name;
  panel.setTensor(t);
  panel.setSchemes(schemes({"int8/tensor"}));
  QVERIFY(panel.waitForIdle(30000));
  QCoreApplication::processEvents();
  QVERIFY2(panel.minimumSizeHint().width() <= 900, qPrintable(QString::number(panel.minimumSizeHint().width())));
  QVERIFY2(panel.width() <= 1000, qPrintable(QString::number(panel.width())));
  const QWidget* plot = panel.valuePlot();  // its title names the tensor
  QVERIFY2(plot->minimumSizeHint().width() <= 700, qPrintable(QString::number(plot->minimumSizeHint().width())));
  // The status line keeps the whole name (its tooltip and statusText() have it), and stays a few lines tall.
  QVERIFY(panel.statusText().contains(name.toHtmlEscaped()));
  auto* status = panel.findChild<QLabel*>(QStringLiteral("errorStatus"));
  QVERIFY(status);
  QVERIFY2(status->height() <= 4 * status->fontMetrics().lineSpacing(), qPrintable(QString::number(status->height())));
}

void TestErrorPanel::screenshot() {
  ErrorPanel panel;
  panel.resize(1200, 800);
  panel.show();
  TensorData t = makeTensor("screenshot", 512, 1024, true);
  t.name = QStringLiteral("normal(σ=1) + outliers, 512 x 1024");
  auto v = std::make_shared<std::vector<float>>(*t.values);
  (*v)[10] = std::numeric_limits<float>::quiet_NaN();
  t.values = v;
  panel.setSchemes(schemes({"int8/tensor", "int8/channel:0", "e4m3fn/tensor", "e2m1fn/block:32:e8m0fnu"}));
  panel.setTensor(t);
  QVERIFY(panel.waitForIdle(30000));
  QTest::qWait(100);
  const QImage img = panel.grab().toImage();
  QVERIFY(img.save(QStringLiteral("/tmp/qs-errorpanel.png")));
  panel.setErrorMode(ErrorPanel::ErrorMode::Relative);
  panel.setLogCounts(true);
  QTest::qWait(100);
  QVERIFY(panel.grab().toImage().save(QStringLiteral("/tmp/qs-errorpanel-relative.png")));
}

QTEST_MAIN(TestErrorPanel)
#include "tst_errorpanel.moc"
