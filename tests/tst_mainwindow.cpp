// Tests of the assembled window: panels and docks present, the demo presets (valid, applied, listed in
// the Demos menu), settings.json round trips and rejects bad values, schemes and data reach the Error
// tab, files that fail to load are reported without breaking the window, and the report writes every
// file (or nothing, into a folder that cannot be written).
#include <QAction>
#include <QComboBox>
#include <QDialog>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QStandardPaths>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>

#include <qcustomplot.h>

#include "conformancedialog.h"
#include "conventionspanel.h"
#include "dataloader.h"
#include "elidedlabel.h"
#include "errorpanel.h"
#include "formatgridplot.h"
#include "formatpicker.h"
#include "formatspanel.h"
#include "io/npy.h"
#include "mainwindow.h"
#include "reportwriter.h"
#include "schemelist.h"
#include "setupdock.h"
#include "theme.h"
#include "plotexport.h"
#include "trainingpanel.h"
#include "trainingrun.h"
#include "sqnrheatmap.h"
#include "valueinspector.h"
#include "viewsettings.h"

// The widgets whose minimum width passes `limit`, each after its parents (a failure message names the culprit).
static QString wideWidgets(const QWidget* w, int limit) {
  QStringList out;
  for (const QWidget* c : w->findChildren<QWidget*>())
    if (c->minimumSizeHint().width() > limit)
      out << QStringLiteral("%1 '%2' %3").arg(QLatin1String(c->metaObject()->className()), c->objectName()).arg(c->minimumSizeHint().width());
  return out.join(QStringLiteral(", "));
}

class TestMainWindow : public QObject {
  Q_OBJECT

private slots:
  void initTestCase();
  void shell();
  void presetsAreValid();
  void presetsApply_data();
  void presetsApply();
  void unknownPreset();
  void settingsRoundTrip();
  void settingsRoundTripExact();
  void settingsRejectBadValues_data();
  void settingsRejectBadValues();
  void applySettingsChecksFirst();
  void schemesReachErrorTab();
  void invalidSchemeRowShowsReason();
  void fileTensorLoads();
  void heatmapStaleAfterSchemesChange();
  void badFileIsReported_data();
  void badFileIsReported();
  void reportWritesEveryFile();
  void reportKeepsUserRuns();
  void quitAsksWhileTraining();
  void guideAndShortcuts();
  void pngExportResolution();
  void darkPaletteReadable();
  void conformanceDialog();
  void prequantizedWeightShowsStoredScheme();
  void reportIntoUnwritableFolder();
  void settingsPersist();
  void reportCancelLeavesNothing();
  void longTextsKeepWindowSize_data();
  void longTextsKeepWindowSize();
  void settingsCapLongTexts();
  void settingsFileNotAnObject_data();
  void settingsFileNotAnObject();
  void loaderLatestWinsAndListsEveryFile();
  void loaderCancel();

private:
  QTemporaryDir m_dir;
};

void TestMainWindow::initTestCase() { QVERIFY(m_dir.isValid()); }

void TestMainWindow::shell() {
  MainWindow w;
  w.setInteractive(false);
  QCOMPARE(w.windowTitle(), QStringLiteral("QuantScope"));
  QStringList tabs;
  for (int i = 0; i < w.tabs()->count(); ++i) tabs << w.tabs()->tabText(i);
  QCOMPARE(tabs, (QStringList{"Formats", "Error", "Model", "Training", "Latency", "Observers", "Block scales", "Conventions"}));
  QVERIFY(w.findChild<QDockWidget*>(QStringLiteral("setupDock")));
  QVERIFY(w.findChild<QDockWidget*>(QStringLiteral("logDock")));
  QVERIFY(w.findChild<QLabel*>(QStringLiteral("simdLabel")));
  QVERIFY(!w.findChild<QLabel*>(QStringLiteral("cudaLabel"))->text().isEmpty());
  QVERIFY(w.waitForIdle(30000));
  QVERIFY(!w.currentTensor().isEmpty());  // the default synthetic tensor
  QCOMPARE(w.currentTensor().size(), std::size_t(1) << 20);
  // Regression: a fresh window had an empty scheme list, so the Error tab showed nothing.
  QCOMPARE(w.setupDock()->schemeList()->rows().size(), 2);
  QCOMPARE(int(w.errorPanel()->schemes().size()), 2);
  QVERIFY(w.errorPanel()->view(0) && w.errorPanel()->view(1));
}

void TestMainWindow::presetsAreValid() {
  const QList<Preset> presets = builtinPresets();
  QVERIFY2(presets.size() >= 5, qPrintable(QString::number(presets.size())));
  QStringList names;
  for (const Preset& p : presets) {
    names << p.name;
    QVERIFY2(!p.settings.title.isEmpty() && p.settings.explanation.size() > 80, qPrintable(p.name));
    std::vector<qs::Scheme> schemes;
    QString why;
    QVERIFY2(p.settings.parseSchemes(&schemes, &why), qPrintable(why));
  }
  for (const char* required : {"e4m3-vs-e5m2", "outliers-int8", "mx-fp4", "stochastic-rounding", "saturate-vs-ieee"})
    QVERIFY2(names.contains(QLatin1String(required)), required);
  MainWindow w;
  auto* demos = w.menuBar()->findChild<QMenu*>(QStringLiteral("demosMenu"));
  QVERIFY(demos);
  QCOMPARE(demos->actions().size(), presets.size());
}

void TestMainWindow::presetsApply_data() {
  QTest::addColumn<QString>("name");
  for (const Preset& p : builtinPresets()) QTest::newRow(qPrintable(p.name)) << p.name;
}

void TestMainWindow::presetsApply() {
  QFETCH(QString, name);
  MainWindow w;
  w.setInteractive(false);
  ViewSettings want;
  QVERIFY(findPreset(name, &want, nullptr));
  QString why;
  QVERIFY2(w.applyPreset(name, &why), qPrintable(why));
  QVERIFY(w.waitForIdle(60000));
  QVERIFY2(w.lastError().isEmpty(), qPrintable(w.lastError()));
  const ViewSettings got = w.currentSettings();
  QCOMPARE(got.tab, want.tab);
  QCOMPARE(w.tabs()->tabText(w.tabs()->currentIndex()), want.tab);
  QCOMPARE(got.schemes.size(), want.schemes.size());
  for (int i = 0; i < want.schemes.size(); ++i) {
    const qs::Scheme a = got.schemes[i].toScheme(got.seed), b = want.schemes[i].toScheme(want.seed);
    QCOMPARE(QString::fromStdString(a.text), QString::fromStdString(b.text));
    QCOMPARE(a.options.rounding, b.options.rounding);
    QCOMPARE(a.options.overflow, b.options.overflow);
  }
  QCOMPARE(qs::parse_format(got.format.toStdString()), qs::parse_format(want.format.toStdString()));
  QCOMPARE(got.compare.size(), want.compare.size());
  QCOMPARE(got.logScale, want.logScale);
  QCOMPARE(got.preset, name);
  QCOMPARE(w.currentTensor().size(), want.synthetic.n);
  QCOMPARE(int(w.errorPanel()->schemes().size()), int(want.schemes.size()));
  QVERIFY(w.findChild<QWidget*>(QStringLiteral("demoBar"))->isVisibleTo(&w));
}

void TestMainWindow::unknownPreset() {
  MainWindow w;
  QString why;
  QVERIFY(!w.applyPreset(QStringLiteral("no-such-demo"), &why));
  QVERIFY(why.contains(QStringLiteral("outliers-int8")));  // lists what exists
}

// Issue 19 item 5: everything a user set comes back exactly from the settings.json it writes: a demo's
// banner (plain text, not "<b>…</b>"), the inspector's value as typed (not 0.29999999999999999), the
// Error view's options and the Model tab's file, order and colour scale.
void TestMainWindow::settingsRoundTripExact() {
  const QString model = m_dir.filePath(QStringLiteral("roundtrip.npy"));
  std::vector<float> x(16 * 16);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i % 11) * 0.1f - 0.5f;
  qs::write_npy(model.toStdString(), qs::make_npy(qs::DType::F32, {16, 16}, x.data()));
  MainWindow a;
  a.setInteractive(false);
  QString why;
  QVERIFY2(a.applyPreset(QStringLiteral("stochastic-rounding"), &why), qPrintable(why));
  QVERIFY(a.waitForIdle(30000));
  QVERIFY(a.formatsPanel()->inspector()->setValueText(QStringLiteral("0.3")));
  a.errorPanel()->setErrorMode(ErrorPanel::ErrorMode::Relative);
  a.errorPanel()->setLogCounts(true);
  a.errorPanel()->setGridGroup(qs::GridGroup::Median);
  a.errorPanel()->setValueBins(1024);
  QVERIFY(a.analyseFile(model));
  QVERIFY(a.heatmap()->waitForFinished(30000));
  a.heatmap()->setOrder(SqnrHeatmap::Order::WorstSqnr);
  a.heatmap()->setColorRange(SqnrHeatmap::ColorRange::Fixed, 5, 25);
  QVERIFY(a.waitForIdle(30000));
  const ViewSettings sa = a.currentSettings();
  QCOMPARE(sa.inspectorValue, QStringLiteral("0.3"));
  QVERIFY2(!sa.title.contains(u'<'), qPrintable(sa.title));
  ViewSettings want;
  QVERIFY(findPreset(QStringLiteral("stochastic-rounding"), &want, nullptr));
  QCOMPARE(sa.title, want.title);
  QCOMPARE(sa.explanation, want.explanation);

  const QByteArray text = QJsonDocument(sa.toJson()).toJson();
  ViewSettings read;
  QVERIFY2(ViewSettings::fromJsonText(text, &read, &why), qPrintable(why));
  MainWindow b;
  b.setInteractive(false);
  QVERIFY2(b.applySettings(read, &why), qPrintable(why));
  QVERIFY(b.waitForIdle(30000));
  QVERIFY(b.heatmap()->waitForFinished(30000));
  const ViewSettings sb = b.currentSettings();
  QCOMPARE(QJsonDocument(sb.toJson()).toJson(), text);
  QCOMPARE(b.errorPanel()->errorMode(), ErrorPanel::ErrorMode::Relative);
  QCOMPARE(b.errorPanel()->valueBins(), 1024);
  QCOMPARE(b.heatmap()->filePath(), model);
  QCOMPARE(b.heatmap()->colorRange(), (QPair<double, double>(5, 25)));
  // Bad values name their key.
  QVERIFY(!ViewSettings::fromJson(QJsonObject{{"error_view", QJsonObject{{"mode", "sideways"}}}}, &read, &why));
  QVERIFY2(why.contains(QStringLiteral("'mode'")), qPrintable(why));
  QVERIFY(!ViewSettings::fromJson(QJsonObject{{"model", QJsonObject{{"file", model}, {"order", "random"}}}}, &read, &why));
  QVERIFY2(why.contains(QStringLiteral("'order'")), qPrintable(why));
  ViewSettings missing = read;
  missing.modelFile = m_dir.filePath(QStringLiteral("gone.npy"));
  QVERIFY(!b.applySettings(missing, &why));
  QVERIFY2(why.contains(QStringLiteral("no such file")), qPrintable(why));
}

void TestMainWindow::settingsRoundTrip() {
  ViewSettings s;
  s.tab = QStringLiteral("Error");
  s.format = QStringLiteral("e3m3:bias=2:specials=none");
  s.compare = {QStringLiteral("e5m2")};
  s.logScale = true;
  s.synthetic.dist = qs::Distribution::StudentT;
  s.synthetic.n = 1 << 16;
  s.synthetic.seed = 77;
  s.synthetic.dof = 4;
  s.schemes = {SchemeSetting{QStringLiteral("e2m1fn"), QStringLiteral("block:32:e8m0fnu"), QStringLiteral("stochastic"),
                             QStringLiteral("ieee")}};
  s.seed = 5;
  ViewSettings back;
  QString why;
  QVERIFY2(ViewSettings::fromJson(QJsonDocument::fromJson(QJsonDocument(s.toJson()).toJson()).object(), &back, &why),
           qPrintable(why));
  QCOMPARE(back.toJson(), s.toJson());
  QCOMPARE(back.schemes, s.schemes);
  QCOMPARE(back.synthetic.n, s.synthetic.n);
  QCOMPARE(back.synthetic.dist, s.synthetic.dist);

  // And through the window: what it shows is what it writes.
  MainWindow w;
  w.setInteractive(false);
  QVERIFY2(w.applySettings(s, &why), qPrintable(why));
  QVERIFY(w.waitForIdle(30000));
  const ViewSettings shown = w.currentSettings();
  QCOMPARE(shown.format, s.format);
  QCOMPARE(shown.compare, s.compare);
  QCOMPARE(shown.schemes, s.schemes);
  QCOMPARE(shown.seed, s.seed);
  QCOMPARE(shown.synthetic.seed, s.synthetic.seed);
  QCOMPARE(shown.synthetic.dof, 4.0);  // regression: the dock used to drop ν (no control for it)
  QCOMPARE(shown.synthetic.n, s.synthetic.n);
  QVERIFY(w.currentTensor().name.contains(QStringLiteral("ν=4")));
  QCOMPARE(w.formatPlot()->format(), qs::parse_format("e3m3:bias=2:specials=none"));
}

void TestMainWindow::settingsRejectBadValues_data() {
  QTest::addColumn<QByteArray>("json");
  QTest::addColumn<QString>("mentions");
  QTest::newRow("tab") << QByteArray(R"({"tab": "Nope"})") << "tab";
  QTest::newRow("log_scale type") << QByteArray(R"({"log_scale": "yes"})") << "log_scale";
  QTest::newRow("distribution") << QByteArray(R"({"data": {"distribution": "gauss"}})") << "gauss";
  QTest::newRow("size") << QByteArray(R"({"data": {"size": -5}})") << "size";
  QTest::newRow("ragged") << QByteArray(R"({"data": {"size": 1000, "cols": 3}})") << "cols";
  QTest::newRow("file without tensor") << QByteArray(R"({"data": {"source": "file", "file": "/x.npy"}})") << "tensor";
  QTest::newRow("scheme format") << QByteArray(R"({"schemes": [{"format": "e9m9"}]})") << "e9m9";
  QTest::newRow("scheme granularity") << QByteArray(R"({"schemes": [{"format": "int8", "granularity": "rows"}]})") << "rows";
  QTest::newRow("rounding") << QByteArray(R"({"schemes": [{"rounding": "up"}]})") << "up";
}

void TestMainWindow::settingsRejectBadValues() {
  QFETCH(QByteArray, json);
  QFETCH(QString, mentions);
  ViewSettings s;
  QString why;
  QVERIFY(!ViewSettings::fromJson(QJsonDocument::fromJson(json).object(), &s, &why));
  QVERIFY2(why.contains(mentions), qPrintable(why));
  QVERIFY(!why.contains(u'\n'));
}

void TestMainWindow::applySettingsChecksFirst() {
  MainWindow w;
  w.setInteractive(false);
  QVERIFY(w.selectFormat(QStringLiteral("e5m2")));
  ViewSettings s;
  s.format = QStringLiteral("e2m1fn");
  s.source = QStringLiteral("file");
  s.file = m_dir.filePath(QStringLiteral("missing.npy"));
  s.tensor = QStringLiteral("x");
  QString why;
  QVERIFY(!w.applySettings(s, &why));
  QVERIFY(why.contains(QStringLiteral("missing.npy")));
  QCOMPARE(w.formatPlot()->format().name, std::string("e5m2"));  // nothing changed
}

void TestMainWindow::schemesReachErrorTab() {
  MainWindow w;
  w.setInteractive(false);
  SchemeList* list = w.setupDock()->schemeList();
  list->setSettings({SchemeSetting{QStringLiteral("int8"), QStringLiteral("tensor")},
                     SchemeSetting{QStringLiteral("int8"), QStringLiteral("channel:0")},
                     SchemeSetting{QStringLiteral("e4m3fn"), QStringLiteral("block:32")}});
  QVERIFY(w.waitForIdle(30000));
  QCOMPARE(int(w.errorPanel()->schemes().size()), 3);
  QCOMPARE(QString::fromStdString(w.errorPanel()->schemes()[1].text), QStringLiteral("int8/channel:0"));
  list->rows().at(2)->picker()->setSpec(QStringLiteral("e2m1fn"));
  QVERIFY(w.waitForIdle(30000));
  QCOMPARE(QString::fromStdString(w.errorPanel()->schemes()[2].text), QStringLiteral("e2m1fn/block:32"));
}

void TestMainWindow::invalidSchemeRowShowsReason() {
  MainWindow w;
  w.setInteractive(false);
  SchemeList* list = w.setupDock()->schemeList();
  QVERIFY(w.waitForIdle(30000));
  const auto before = w.errorPanel()->schemes().size();
  SchemeRow* row = list->addScheme(SchemeSetting{QStringLiteral("e4m3fn"), QStringLiteral("block:0")});
  QVERIFY(row->problem().contains(QStringLiteral("block size")));
  QCOMPARE(w.errorPanel()->schemes().size(), before);  // the valid list stays in effect
  row->granularityCombo()->setCurrentText(QStringLiteral("block:16"));
  QVERIFY(row->problem().isEmpty());
  QCOMPARE(w.errorPanel()->schemes().size(), before + 1);
  row->picker()->customEdit()->setText(QStringLiteral("e3m3:specials=banana"));
  QVERIFY(row->problem().contains(QStringLiteral("banana")));
}

void TestMainWindow::fileTensorLoads() {
  const QString path = m_dir.filePath(QStringLiteral("w.npy"));
  std::vector<float> x(64 * 32);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i % 17) - 8.0f;
  qs::write_npy(path.toStdString(), qs::make_npy(qs::DType::F32, {64, 32}, x.data()));
  MainWindow w;
  w.setInteractive(false);
  QVERIFY(w.waitForIdle(30000));
  w.openFile(path);
  QVERIFY(w.waitForIdle(30000));
  QCOMPARE(w.setupDock()->files(), QStringList{path});
  QSignalSpy loaded(&w, &MainWindow::tensorLoaded);
  QTreeWidget* tree = w.setupDock()->tree();
  QTreeWidgetItem* item = tree->topLevelItem(0)->child(0);
  emit tree->itemClicked(item, 0);
  QVERIFY(w.waitForIdle(30000));
  QCOMPARE(loaded.count(), 1);
  QCOMPARE(w.currentTensor().source, path);
  QCOMPARE(w.currentTensor().shape, (std::vector<int64_t>{64, 32}));
  QVERIFY(*w.currentTensor().values == x);
  QCOMPARE(w.currentSettings().source, QStringLiteral("file"));
  QVERIFY(w.recentFiles().contains(QFileInfo(path).absoluteFilePath()));
}

// Issue 19 items 2 and 3: the Model tab says when its map no longer matches the Setup dock's schemes,
// offers Re-run, and a click on a stale cell opens the tensor under the map's own schemes.
void TestMainWindow::heatmapStaleAfterSchemesChange() {
  const QString path = m_dir.filePath(QStringLiteral("stale.npy"));
  std::vector<float> x(32 * 16);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i % 13) * 0.25f - 1.5f;
  qs::write_npy(path.toStdString(), qs::make_npy(qs::DType::F32, {32, 16}, x.data()));
  MainWindow w;
  w.setInteractive(false);
  QVERIFY(w.waitForIdle(30000));
  const QList<SchemeSetting> original = w.setupDock()->schemeList()->settings();
  QVERIFY(w.analyseFile(path));
  QVERIFY(w.heatmap()->waitForFinished(30000));
  QVERIFY(!w.heatmap()->isStale());
  auto* rerun = w.heatmap()->findChild<QPushButton*>(QStringLiteral("rerunButton"));
  QVERIFY(rerun && !rerun->isVisibleTo(w.heatmap()));

  QList<SchemeSetting> changed = original;
  changed.front().format = QStringLiteral("e5m2");
  w.setupDock()->schemeList()->setSettings(changed);
  QVERIFY(w.heatmap()->isStale());
  QVERIFY(rerun->isVisibleTo(w.heatmap()));
  // A click opens the tensor under the map's schemes: the Setup dock's rows go back to them.
  emit w.heatmap()->tensorActivated(path, w.heatmap()->tensorNames().front(), 0);
  QVERIFY(w.waitForIdle(30000));
  QCOMPARE(w.setupDock()->schemeList()->settings(), original);
  QVERIFY(!w.heatmap()->isStale());

  // Re-run computes the map under the schemes listed now.
  w.setupDock()->schemeList()->setSettings(changed);
  QVERIFY(w.heatmap()->isStale());
  rerun->click();
  QVERIFY(w.heatmap()->waitForFinished(30000));
  QVERIFY(!w.heatmap()->isStale());
  QVERIFY2(w.heatmap()->schemeNames().front().startsWith(QStringLiteral("e5m2")), qPrintable(w.heatmap()->schemeNames().front()));
  // The tab has its own way in: the Analyse button asks the window for a file.
  QVERIFY(w.heatmap()->findChild<QPushButton*>(QStringLiteral("analyseButton")));
}

void TestMainWindow::badFileIsReported_data() {
  QTest::addColumn<QByteArray>("bytes");
  QTest::addColumn<QString>("suffix");
  QTest::newRow("truncated npy") << QByteArray("\x93NUMPY\x01\x00\x46\x00{'descr': '<f4', 'fortr", 30) << "npy";
  QTest::newRow("garbage safetensors") << QByteArray("\xff\xff\xff\xff\xff\xff\xff\x7fnot json") << "safetensors";
  QTest::newRow("empty file") << QByteArray() << "onnx";
}

void TestMainWindow::badFileIsReported() {
  QFETCH(QByteArray, bytes);
  QFETCH(QString, suffix);
  const QString path = m_dir.filePath(QStringLiteral("bad.") + suffix);
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.write(bytes);
  f.close();
  MainWindow w;
  w.setInteractive(false);
  QVERIFY(w.waitForIdle(30000));
  w.openFile(path);
  QVERIFY(w.waitForIdle(30000));
  QVERIFY2(w.lastError().contains(QStringLiteral("bad.") + suffix), qPrintable(w.lastError()));
  QVERIFY(w.setupDock()->files().isEmpty());
  QVERIFY(w.findChild<QPlainTextEdit*>(QStringLiteral("logView"))->toPlainText().contains(QStringLiteral("bad.") + suffix));
  // Still usable: a preset applies.
  QVERIFY(w.applyPreset(QStringLiteral("mx-fp4")));
  QVERIFY(w.waitForIdle(60000));
}

void TestMainWindow::reportWritesEveryFile() {
  MainWindow w;
  w.setInteractive(false);
  QVERIFY(w.applyPreset(QStringLiteral("outliers-int8")));
  QVERIFY(w.waitForIdle(60000));
  const QString dir = m_dir.filePath(QStringLiteral("report"));
  QString why;
  QVERIFY2(w.exportReport(dir, &why), qPrintable(why));
  QStringList suffixes = {QStringLiteral("png"), QStringLiteral("pdf"), QStringLiteral("csv")};
#ifdef QS_HAVE_QTSVG
  suffixes << QStringLiteral("svg");
#endif
  for (const QString& stem : ReportWriter::stems())
    for (const QString& suffix : suffixes) {
      const QFileInfo fi(QDir(dir).filePath(stem + u'.' + suffix));
      QVERIFY2(fi.exists() && fi.size() > 100, qPrintable(fi.filePath()));
    }
  QFile settings(QDir(dir).filePath(QStringLiteral("settings.json")));
  QVERIFY(settings.open(QIODevice::ReadOnly));
  ViewSettings s;
  QVERIFY2(ViewSettings::fromJson(QJsonDocument::fromJson(settings.readAll()).object(), &s, &why), qPrintable(why));
  QCOMPARE(s.preset, QStringLiteral("outliers-int8"));
  QCOMPARE(s.schemes.size(), 2);
  // No staging folder left behind.
  QVERIFY(QDir(dir).entryList({QStringLiteral(".quantscope-report-*")}, QDir::Dirs | QDir::Hidden).isEmpty());
  // Writing again into the same folder replaces the files.
  QVERIFY2(w.exportReport(dir, &why), qPrintable(why));
}

// Issue 19 item 5: the report holds the user's own work: the runs trained in the Training tab (every plot
// of it, from those runs; the synthetic flip-counts run only when there are none) and the Model heatmap.
void TestMainWindow::reportKeepsUserRuns() {
  const QString model = m_dir.filePath(QStringLiteral("report-model.npy"));
  std::vector<float> x(32 * 8);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float(i % 7) * 0.3f - 1.0f;
  qs::write_npy(model.toStdString(), qs::make_npy(qs::DType::F32, {32, 8}, x.data()));
  MainWindow w;
  w.setInteractive(false);
  QVERIFY(w.waitForIdle(30000));
  qs::TrainConfig cfg;
  cfg.epochs = 1;
  cfg.batch = 256;
  cfg.seed = 42;
  QVERIFY(w.trainingPanel()->startRun(cfg, true));
  QTRY_VERIFY_WITH_TIMEOUT(!w.trainingPanel()->isRunning(), 120000);
  QCOMPARE(w.trainingPanel()->runCount(), 1);
  const std::size_t steps = w.trainingPanel()->run(0).steps.size();
  QVERIFY(steps > 0);
  QVERIFY(w.analyseFile(model));
  QVERIFY(w.heatmap()->waitForFinished(30000));
  const QString dir = m_dir.filePath(QStringLiteral("report-runs"));
  QString why;
  QVERIFY2(w.exportReport(dir, &why), qPrintable(why));
  for (const char* stem : {"loss", "accuracy", "flip-counts", "bit-stalls", "code-usage", "sqnr-heatmap"})
    for (const char* suffix : {"png", "csv"}) {
      const QFileInfo fi(QDir(dir).filePath(QStringLiteral("%1.%2").arg(QLatin1String(stem), QLatin1String(suffix))));
      QVERIFY2(fi.exists() && fi.size() > 20, qPrintable(fi.filePath()));
    }
  // The loss CSV is the user's run: as many step rows as it trained (the synthetic fallback has 2 x 256).
  QFile loss(QDir(dir).filePath(QStringLiteral("loss.csv")));
  QVERIFY(loss.open(QIODevice::ReadOnly));
  const QList<QByteArray> lines = loss.readAll().trimmed().split('\n');
  QCOMPARE(std::size_t(lines.size() - 1), steps);
  QFile cells(QDir(dir).filePath(QStringLiteral("sqnr-heatmap.csv")));
  QVERIFY(cells.open(QIODevice::ReadOnly));
  QVERIFY(cells.readAll().contains("report-model.npy"));
}

// Quitting while something runs asks first; No keeps the window and the run (Ctrl+Q used to lose it).
void TestMainWindow::quitAsksWhileTraining() {
  MainWindow w;
  w.setInteractive(false);
  QVERIFY(w.waitForIdle(30000));
  QStringList asked;
  bool answer = false;
  w.setCloseConfirmation([&](const QString& q) {
    asked << q;
    return answer;
  });
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  QVERIFY(w.close());  // nothing runs: no question
  QVERIFY(asked.isEmpty());
  w.show();
  qs::TrainConfig cfg;
  cfg.epochs = 200;
  cfg.batch = 64;
  QVERIFY(w.trainingPanel()->startRun(cfg, true));
  QVERIFY(w.trainingPanel()->isRunning());
  QVERIFY(!w.close());
  QVERIFY(w.isVisible());
  QVERIFY(w.trainingPanel()->isRunning());
  QCOMPARE(asked.size(), 1);
  QVERIFY2(asked.front().startsWith(QStringLiteral("A training run is in progress")), qPrintable(asked.front()));
  answer = true;
  QVERIFY(w.close());
  w.trainingPanel()->stop();
  QTRY_VERIFY_WITH_TIMEOUT(!w.trainingPanel()->isRunning(), 60000);
}

// Issue 19 item 6: Help -> Guide explains every tab and the terms the app uses, and every key it lists
// is a real shortcut of the window (the list cannot drift from the menus).
void TestMainWindow::guideAndShortcuts() {
  const QString html = MainWindow::guideHtml();
  QVERIFY(html.size() > 2000);
  for (const char* term : {"Formats", "Error", "Model", "Training", "Latency", "Observers", "Block scales", "Conventions", "E, M, bias", "Subnormal", "fn, fnuz",
                           "Saturate vs IEEE", "SQNR", "MX (microscaling)", "NVFP4", "STE", "GridOptim", "Flips", "Bit-stalls"})
    QVERIFY2(html.contains(QLatin1String(term)), term);
  MainWindow w;
  w.setInteractive(false);
  QSet<QString> shortcuts;
  for (QAction* a : w.findChildren<QAction*>())
    for (const QKeySequence& k : a->shortcuts()) shortcuts.insert(k.toString(QKeySequence::PortableText));
  static const QRegularExpression key(QStringLiteral("<td>((?:Ctrl|Shift|F\\d)[^<]*)</td>"));
  int listed = 0;
  for (auto it = key.globalMatch(html); it.hasNext();) {
    const QString cell = it.next().captured(1);
    QStringList keys;
    if (cell.contains(QStringLiteral(" … "))) keys << QStringLiteral("Ctrl+1") << QStringLiteral("Ctrl+8");
    else for (const QString& k : cell.split(QStringLiteral(" / "))) keys << k.trimmed();
    for (const QString& k : keys) {
      ++listed;
      QVERIFY2(shortcuts.contains(k), qPrintable(k + QStringLiteral(" is listed in the guide but no action has it")));
    }
  }
  QVERIFY(listed >= 10);
  // Ctrl+3 shows the Model tab; F1 opens the guide, which fits the screen.
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  for (QAction* a : w.findChildren<QAction*>())
    if (a->shortcut() == QKeySequence(Qt::CTRL | Qt::Key_3)) a->trigger();
  QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(w.heatmap()));
  w.showGuide();
  auto* guide = w.findChild<QDialog*>(QStringLiteral("guideDialog"));
  QVERIFY(guide && guide->isVisible());
  QVERIFY(guide->width() <= 720 && guide->height() <= 640);
  w.showGuide();  // once, raised again
  QCOMPARE(w.findChildren<QDialog*>(QStringLiteral("guideDialog")).size(), 1);
}

// Issue 19 item 7: PNG exports at a chosen resolution (the same figure, more pixels).
void TestMainWindow::pngExportResolution() {
  QCustomPlot plot;
  plot.addGraph()->setData({0, 1, 2}, {1, 3, 2});
  plot.rescaleAxes();
  const QString path = m_dir.filePath(QStringLiteral("scaled.png"));
  QString why;
  QCOMPARE(plotexport::pngScale(), 1.0);
  QVERIFY2(plotexport::exportPlot(&plot, path, {}, QStringLiteral("t"), &why, QSize(300, 200)), qPrintable(why));
  QCOMPARE(QImage(path).size(), QSize(300, 200));
  MainWindow w;  // File -> Image resolution sets it for every export
  QAction* twice = nullptr;
  for (QAction* a : w.findChild<QMenu*>(QStringLiteral("resolutionMenu"))->actions())
    if (a->data().toDouble() == 2.0) twice = a;
  QVERIFY(twice);
  twice->trigger();
  QCOMPARE(plotexport::pngScale(), 2.0);
  QVERIFY2(plotexport::exportPlot(&plot, path, {}, QStringLiteral("t"), &why, QSize(300, 200)), qPrintable(why));
  QCOMPARE(QImage(path).size(), QSize(600, 400));
  plotexport::setPngScale(1);
}

// Issue 19 item 7: in a dark desktop palette the demo banner and the error texts stay readable (the
// banner's text took the palette's white on its pale yellow band).
void TestMainWindow::darkPaletteReadable() {
  const QPalette before = QApplication::palette();
  QPalette dark;
  dark.setColor(QPalette::Window, QColor(32, 32, 32));
  dark.setColor(QPalette::WindowText, QColor(235, 235, 235));
  dark.setColor(QPalette::Base, QColor(24, 24, 24));
  dark.setColor(QPalette::Text, QColor(235, 235, 235));
  dark.setColor(QPalette::Button, QColor(45, 45, 45));
  dark.setColor(QPalette::ButtonText, QColor(235, 235, 235));
  QApplication::setPalette(dark);
  {
    MainWindow w;
    w.setInteractive(false);
    QVERIFY(w.applyPreset(QStringLiteral("mx-fp4")));
    w.resize(1280, 720);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    auto* title = w.findChild<QWidget*>(QStringLiteral("demoTitle"));
    QVERIFY(title && title->isVisible());
    const QImage img = w.findChild<QWidget*>(QStringLiteral("demoBar"))->grab().toImage();
    const QRect r = title->geometry();
    const QColor background = img.pixelColor(r.right() - 2, r.center().y());  // past the text: the band
    double best = 1;
    for (int y = r.top(); y <= r.bottom(); ++y)
      for (int x = r.left(); x < std::min(r.right(), r.left() + 200); ++x)
        best = std::max(best, theme::contrast(img.pixelColor(x, y), background));
    QVERIFY2(best >= 7, qPrintable(QString::number(best)));  // bold text: its core pixels are the text colour
    QVERIFY(theme::isDark(&w));
    QVERIFY(theme::contrast(theme::errorColor(&w), dark.color(QPalette::Window)) >= 4.5);
    QVERIFY(theme::contrast(theme::hintColor(&w), dark.color(QPalette::Window)) >= 4.5);
    QVERIFY(theme::contrast(theme::warningColor(&w), dark.color(QPalette::Window)) >= 4.5);
  }
  QApplication::setPalette(before);
  QWidget light;
  QVERIFY(theme::contrast(theme::errorColor(&light), light.palette().color(QPalette::Window)) >= 4.5);
}

// Issue 15 item 4: Help -> Conformance runs the suite in the app (green here), and a deliberately broken
// encoder shows its failing codes; the Markdown report names the build and the CPU level.
void TestMainWindow::conformanceDialog() {
  MainWindow w;
  w.setInteractive(false);
  w.showConformance();
  auto* dialog = w.findChild<ConformanceDialog*>();
  QVERIFY(dialog);
  QVERIFY(dialog->waitForFinished(300000));
  QVERIFY2(dialog->report().passed(), qPrintable(dialog->summaryText()));
  QCOMPARE(dialog->table()->rowCount(), 7);
  QVERIFY(dialog->summaryText().startsWith(QStringLiteral("All 7 families passed")));
  const QString path = m_dir.filePath(QStringLiteral("conformance.md"));
  QString why;
  QVERIFY2(dialog->exportTo(path, &why), qPrintable(why));
  QFile f(path);
  QVERIFY(f.open(QIODevice::ReadOnly));
  const QByteArray md = f.readAll();
  QVERIFY(md.contains("QuantScope " QS_VERSION) && md.contains("all families passed"));
  // Truncation instead of rounding: the round-trip and ties families fail, with the codes.
  dialog->run([](const qs::Format& fmt, double x, qs::Rounding r, qs::Overflow o, uint32_t random) {
    const uint32_t c = qs::encode_ref(fmt, x, r, o, random);
    const uint32_t toward = qs::encode_ref(fmt, std::nextafter(x, 0.0), r, o, random);
    return std::isfinite(x) && std::fabs(qs::decode_ref(fmt, toward)) < std::fabs(qs::decode_ref(fmt, c)) ? toward : c;
  });
  QVERIFY(dialog->waitForFinished(300000));
  QVERIFY(!dialog->report().passed());
  QVERIFY2(dialog->summaryText().contains(QStringLiteral("FAILED")), qPrintable(dialog->summaryText()));
  QVERIFY(dialog->findChild<QPlainTextEdit*>(QStringLiteral("conformanceDetails"))->toPlainText().contains(QStringLiteral("code 0x")));
  // Cancel right after Run: the suite stops (or never starts), the dialog says so and offers no export.
  dialog->run();
  QVERIFY(dialog->isRunning());
  dialog->cancel();
  QVERIFY(dialog->waitForFinished(300000));
  QVERIFY(dialog->report().cancelled);
  QVERIFY2(dialog->summaryText().startsWith(QStringLiteral("Cancelled")), qPrintable(dialog->summaryText()));
  QVERIFY(!dialog->findChild<QPushButton*>(QStringLiteral("conformanceExport"))->isEnabled());
}

// Issue 13 item 3 in the GUI: a weight of a pre-quantized checkpoint (FP8 codes + one fp32 scale_inv per
// 128x128 tile, DeepSeek-V3's layout) shows in the Error tab with its stored scheme as a row of its own
// ("stored:e4m3fn/block:128x128", exact: SQNR infinite) and the re-quantization check in the status line.
void TestMainWindow::prequantizedWeightShowsStoredScheme() {
  const QString path = m_dir.filePath(QStringLiteral("fp8.safetensors"));
  const int R = 128, C = 256;
  QByteArray codes(R * C, '\0');
  for (int i = 0; i < R * C; ++i) {
    uint8_t c = uint8_t((i * 37 + i / 7) & 0xFF);
    if ((c & 0x7F) == 0x7F) c = 0x7E;  // no NaN codes
    codes[i] = char(c);
  }
  codes[5] = char(0x7E);  // every tile holds +448: the stored scale is exactly its amax / 448
  codes[200] = char(0x7E);
  const float scales[2] = {0.5f, 0.001f};
  QByteArray scaleBytes(reinterpret_cast<const char*>(scales), 8);
  QByteArray header = "{\"w\":{\"dtype\":\"F8_E4M3\",\"shape\":[128,256],\"data_offsets\":[0,32768]},"
                      "\"w_scale_inv\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[32768,32776]}}";
  while (header.size() % 8) header += ' ';
  QFile f(path);
  QVERIFY(f.open(QIODevice::WriteOnly));
  const quint64 n = quint64(header.size());
  for (int i = 0; i < 8; ++i) f.putChar(char((n >> (8 * i)) & 0xff));
  f.write(header);
  f.write(codes);
  f.write(scaleBytes);
  f.close();

  MainWindow w;
  w.setInteractive(false);
  QVERIFY(w.waitForIdle(30000));
  w.openFiles({path});
  QVERIFY(w.waitForIdle(30000));
  QTRY_VERIFY_WITH_TIMEOUT(w.currentTensor().source == path, 10000);
  QVERIFY(w.waitForIdle(30000));
  QCOMPARE(w.currentTensor().storedScheme, QStringLiteral("e4m3fn/block:128x128"));
  const auto& schemes = w.errorPanel()->schemes();
  QVERIFY(!schemes.empty());
  QCOMPARE(QString::fromStdString(schemes.back().text), QStringLiteral("stored:e4m3fn/block:128x128"));
  const auto view = w.errorPanel()->view(int(schemes.size()) - 1);
  QVERIFY(view);
  QVERIFY2(std::isinf(view->metrics.sqnr_db()), qPrintable(QString::number(view->metrics.sqnr_db())));  // exact
  QVERIFY2(w.errorPanel()->statusText().contains(QStringLiteral("re-quantized")), qPrintable(w.errorPanel()->statusText()));
  // The stored codes' usage: one count per e4m3fn code, adding up to the weight's elements; every code the
  // file holds is counted under its own value.
  const TensorData& t = w.currentTensor();
  QCOMPARE(t.storedCodeValues.size(), qsizetype(256));
  double total = 0;
  for (double c : t.storedCodeCounts) total += c;
  QCOMPARE(total, double(R * C));
  std::vector<int> expect(256, 0);
  for (int i = 0; i < R * C; ++i) ++expect[uint8_t(codes[i])];
  for (int c = 0; c < 256; ++c) QCOMPARE(t.storedCodeCounts[c], double(expect[std::size_t(c)]));
  QCOMPARE(t.storedCodeValues[0x7E], 448.0);
  QVERIFY(w.errorPanel()->storedCodesPlot()->isVisibleTo(w.errorPanel()));
  // The third plot keeps the window inside a 1280 x 720 screen (it first widened it to 1434 px).
  QVERIFY2(w.minimumSizeHint().width() <= 1280, qPrintable(QString::number(w.minimumSizeHint().width())));
  // A plain tensor afterwards: the stored row goes away.
  w.applyPreset(QStringLiteral("outliers-int8"));
  QVERIFY(w.waitForIdle(30000));
  for (const auto& sch : w.errorPanel()->schemes()) QVERIFY(sch.text.rfind("stored:", 0) != 0);
  QVERIFY(!w.errorPanel()->storedCodesPlot()->isVisibleTo(w.errorPanel()));
}

void TestMainWindow::reportIntoUnwritableFolder() {
  MainWindow w;
  w.setInteractive(false);
  QVERIFY(w.waitForIdle(30000));
  // A folder under a regular file can be created by nobody, root included.
  const QString blocker = m_dir.filePath(QStringLiteral("blocker"));
  QFile f(blocker);
  QVERIFY(f.open(QIODevice::WriteOnly));
  f.close();
  QString why;
  QVERIFY(!w.exportReport(QDir(blocker).filePath(QStringLiteral("sub/report")), &why));
  QVERIFY2(why.contains(QStringLiteral("blocker")), qPrintable(why));
  QVERIFY(!why.contains(u'\n'));
  QCOMPARE(QFileInfo(blocker).size(), 0);
  // A target that is a file: refused, the file untouched.
  QVERIFY(!w.exportReport(blocker, &why));
  QVERIFY(why.contains(QStringLiteral("not a folder")));
  QVERIFY(QFileInfo(blocker).isFile());
}

// QSettings: recent files, schemes and the view come back in the next session (test-mode paths and
// their own organization name, so the user's settings are never touched).
void TestMainWindow::settingsPersist() {
  QStandardPaths::setTestModeEnabled(true);
  QCoreApplication::setOrganizationName(QStringLiteral("QuantScopeTest"));
  // One settings file per process: two test runs at once (two build folders) must not share it.
  QCoreApplication::setApplicationName(QStringLiteral("tst_mainwindow-%1").arg(QCoreApplication::applicationPid()));
  QSettings().clear();
  const QString path = m_dir.filePath(QStringLiteral("persist.npy"));
  std::vector<float> x(256, 1.5f);
  qs::write_npy(path.toStdString(), qs::make_npy(qs::DType::F32, {16, 16}, x.data()));
  const QList<SchemeSetting> schemes = {SchemeSetting{QStringLiteral("e3m2fn"), QStringLiteral("block:32")},
                                        SchemeSetting{QStringLiteral("uint8"), QStringLiteral("tensor")}};
  {
    MainWindow w(nullptr, true);
    w.setInteractive(false);
    QVERIFY(w.waitForIdle(30000));
    w.openFile(path);
    QVERIFY(w.waitForIdle(30000));
    w.setupDock()->schemeList()->setSettings(schemes);
    QVERIFY(w.selectFormat(QStringLiteral("e2m3fn")));
    w.close();  // saves
  }
  MainWindow again(nullptr, true);
  again.setInteractive(false);
  QVERIFY(again.waitForIdle(30000));
  QCOMPARE(again.recentFiles().value(0), QFileInfo(path).absoluteFilePath());
  QCOMPARE(again.setupDock()->schemeList()->settings(), schemes);
  QCOMPARE(again.formatPlot()->format().name, std::string("e2m3fn"));
  MainWindow fresh;  // not persistent: the defaults
  QCOMPARE(fresh.formatPlot()->format().name, std::string("e4m3fn"));
  const QString file = QSettings().fileName();
  QSettings().clear();
  QFile::remove(file);
}

void TestMainWindow::reportCancelLeavesNothing() {
  MainWindow w;
  w.setInteractive(false);
  QVERIFY(w.waitForIdle(30000));
  const QString dir = m_dir.filePath(QStringLiteral("cancelled"));
  ReportWriter writer(w.reportSections());
  // Cancel while the training stage runs (its event loop delivers the call).
  connect(&writer, &ReportWriter::progressed, &writer, [&writer](int stage, int, const QString&) {
    if (stage == 2) QTimer::singleShot(0, &writer, &ReportWriter::cancel);
  });
  QString why;
  QVERIFY(!writer.write(dir, &why));
  QVERIFY2(why.contains(QStringLiteral("cancelled")), qPrintable(why));
  QVERIFY(!QFileInfo::exists(dir));
  QVERIFY(QDir(m_dir.path()).entryList({QStringLiteral(".quantscope-report-*")}, QDir::Dirs | QDir::Hidden).isEmpty());
}

// F2: tensor names, demo titles and explanations come from files, and their natural width used to
// become the window's minimum width (a 20,000-character tensor name: a 153,179 px window, 1.65 GB).
// Each row shows the window with one such text and checks that it still fits a 1280 x 720 screen.
void TestMainWindow::longTextsKeepWindowSize_data() {
  QTest::addColumn<QString>("what");
  QTest::addColumn<QString>("text");
  QTest::newRow("tensor name 20000 L") << "tensor" << QString(20000, u'L');
  QTest::newRow("tensor name 20000 dotted") << "tensor" << QStringLiteral("blk.0.").repeated(3333);
  QTest::newRow("demo title 20000 L") << "title" << QString(20000, u'T');
  QTest::newRow("demo title 10000 words") << "title" << QStringLiteral("word ").repeated(10000);
  QTest::newRow("demo explanation 20000 L") << "explanation" << QString(20000, u'E');
  QTest::newRow("demo explanation 10000 words") << "explanation" << QStringLiteral("word ").repeated(10000);
}

void TestMainWindow::longTextsKeepWindowSize() {
  QFETCH(QString, what);
  QFETCH(QString, text);
  MainWindow w;
  w.setInteractive(false);
  QVERIFY(w.waitForIdle(30000));
  if (what == u"tensor") {
    // A .safetensors file whose one tensor has this name, written byte by byte.
    const QByteArray header = QJsonDocument(QJsonObject{{text, QJsonObject{{"dtype", "F32"},
                                                                            {"shape", QJsonArray{4, 8}},
                                                                            {"data_offsets", QJsonArray{0, 128}}}}})
                                  .toJson(QJsonDocument::Compact);
    const QString path = m_dir.filePath(QStringLiteral("long-name.safetensors"));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    const quint64 n = quint64(header.size());
    for (int i = 0; i < 8; ++i) f.putChar(char((n >> (8 * i)) & 0xff));
    f.write(header);
    f.write(QByteArray(128, '\0'));
    f.close();
    w.openFiles({path});
    QVERIFY(w.waitForIdle(30000));
    QVERIFY2(w.lastError().isEmpty(), qPrintable(w.lastError().left(200)));
    QCOMPARE(w.currentTensor().name, text);
    // The Conventions tab's line quotes the name once its comparison is done (it failed only when the
    // comparison of the previous tensor had finished first: one core, or a busy CI machine).
    QVERIFY(w.conventionsPanel()->waitForIdle(30000));
    QVERIFY(w.conventionsPanel()->tensorLine()->text().contains(text));
  } else {
    ViewSettings s;
    s.preset = QStringLiteral("long");
    s.title = what == u"title" ? text : QStringLiteral("A demo");
    s.explanation = what == u"explanation" ? text : QStringLiteral("Its explanation.");
    QString why;
    QVERIFY2(w.applySettings(s, &why), qPrintable(why));
    QVERIFY(w.waitForIdle(30000));
    QVERIFY(w.findChild<QWidget*>(QStringLiteral("demoBar"))->isVisibleTo(&w));
    // Shown elided, kept whole: the view written back is the view read.
    QCOMPARE(w.currentSettings().title, s.title);
    QCOMPARE(w.currentSettings().explanation, s.explanation);
  }
  w.show();
  QVERIFY(QTest::qWaitForWindowExposed(&w));
  QVERIFY(w.waitForIdle(30000));
  QCoreApplication::processEvents();
  QVERIFY2(w.width() <= 1400, qPrintable(QString::number(w.width()) + u' ' + wideWidgets(&w, 1280)));
  QVERIFY2(w.minimumSizeHint().width() <= 1280, qPrintable(QString::number(w.minimumSizeHint().width()) + u' ' + wideWidgets(&w, 1280)));
  QVERIFY2(w.minimumSizeHint().height() <= 720, qPrintable(QString::number(w.minimumSizeHint().height())));
  // And it can be made that small.
  w.resize(1280, 720);
  QCoreApplication::processEvents();
  QCOMPARE(w.size(), QSize(1280, 720));
}

// F2, the file side: texts read from settings files are bounded. Display texts are cut (with an
// ellipsis), names are refused, because a cut name would name another tensor.
void TestMainWindow::settingsCapLongTexts() {
  const int cap = ViewSettings::kMaxTextChars;
  ViewSettings s;
  QString why;
  QVERIFY2(ViewSettings::fromJson(QJsonObject{{"title", QString(20000, u'T')}, {"explanation", QStringLiteral("word ").repeated(10000)}},
                                  &s, &why),
           qPrintable(why));
  QCOMPARE(s.title.size(), cap);
  QVERIFY(s.title.endsWith(QChar(0x2026)));
  QCOMPARE(s.explanation.size(), cap);
  QVERIFY(ViewSettings::fromJson(QJsonObject{{"title", QString(cap, u'T')}}, &s, &why));
  QCOMPARE(s.title, QString(cap, u'T'));  // up to the cap nothing changes

  const QJsonObject longTensor{
      {"data", QJsonObject{{"source", "file"}, {"file", "/x.safetensors"}, {"tensor", QString(20000, u'L')}}}};
  QVERIFY(!ViewSettings::fromJson(longTensor, &s, &why));
  QVERIFY2(why.contains(QStringLiteral("'tensor'")) && why.contains(QString::number(cap)), qPrintable(why));
  QVERIFY(!ViewSettings::fromJson(QJsonObject{{"compare", QJsonArray{QString(cap + 1, u'e')}}}, &s, &why));
  QVERIFY2(why.contains(QStringLiteral("'compare'")), qPrintable(why));
}

// F16: '[1]' is valid JSON but not a settings object; the message said "no error occurred".
void TestMainWindow::settingsFileNotAnObject_data() {
  QTest::addColumn<QByteArray>("text");
  QTest::addColumn<QString>("mentions");
  QTest::newRow("array") << QByteArray("[1]\n") << "not a JSON object";
  QTest::newRow("empty array") << QByteArray("[]") << "an array";
  QTest::newRow("truncated") << QByteArray("{\"tab\": ") << "not valid JSON";
  QTest::newRow("empty file") << QByteArray() << "not valid JSON";
}

void TestMainWindow::settingsFileNotAnObject() {
  QFETCH(QByteArray, text);
  QFETCH(QString, mentions);
  ViewSettings s;
  QString why;
  QVERIFY(!ViewSettings::fromJsonText(text, &s, &why));
  QVERIFY2(why.contains(mentions), qPrintable(why));
  QVERIFY2(!why.contains(QStringLiteral("no error occurred")), qPrintable(why));
  QVERIFY(ViewSettings::fromJsonText(R"({"tab": "Error"})", &s, &why));
  QCOMPARE(s.tab, QStringLiteral("Error"));
}

// DataLoader on JobRunner: of two tensors asked for in a row, only the second is delivered (the first, a
// 16 M-value synthetic tensor, is superseded); busy goes up once and down once. Listings are never
// superseded: every file asked for is listed, in order, a missing one as a failure.
void TestMainWindow::loaderLatestWinsAndListsEveryFile() {
  DataLoader loader;
  QSignalSpy loaded(&loader, &DataLoader::loaded);
  QSignalSpy failed(&loader, &DataLoader::failed);
  QSignalSpy listed(&loader, &DataLoader::fileListed);
  QSignalSpy busy(&loader, &DataLoader::busyChanged);
  qs::SyntheticSpec big;
  big.n = std::size_t(1) << 24;
  big.cols = 4096;
  big.seed = 5;
  qs::SyntheticSpec small;
  small.n = 4096;
  small.cols = 64;
  small.seed = 6;
  loader.loadSynthetic(big);
  loader.loadSynthetic(small);
  const QString npy = m_dir.filePath(QStringLiteral("loader.npy"));
  std::vector<float> x(8 * 4, 0.25f);
  qs::write_npy(npy.toStdString(), qs::make_npy(qs::DType::F32, {8, 4}, x.data()));
  const QString missing = m_dir.filePath(QStringLiteral("loader-missing.npy"));
  loader.listFile(npy);
  loader.listFile(missing);
  loader.listFile(npy);
  QVERIFY(loader.isBusy());
  QVERIFY(loader.waitForIdle(60000));
  QCOMPARE(loaded.count(), 1);
  const TensorData d = loaded.first().at(0).value<TensorData>();
  QCOMPARE(d.name, QString::fromStdString(qs::describe(small)));
  QCOMPARE(d.size(), std::size_t(4096));
  QCOMPARE(listed.count(), 2);
  QCOMPARE(listed.at(0).at(0).toString(), npy);
  QCOMPARE(listed.at(1).at(0).toString(), npy);
  QCOMPARE(failed.count(), 1);
  QVERIFY2(failed.first().at(0).toString().contains(QStringLiteral("loader-missing.npy")), qPrintable(failed.first().at(0).toString()));
  QCOMPARE(busy.count(), 2);
  QCOMPARE(busy.at(0).at(0).toBool(), true);
  QCOMPARE(busy.at(1).at(0).toBool(), false);
}

// Cancel (the status bar's button) stops a tensor being made: nothing is delivered and the loader is idle.
void TestMainWindow::loaderCancel() {
  DataLoader loader;
  QSignalSpy loaded(&loader, &DataLoader::loaded);
  QSignalSpy failed(&loader, &DataLoader::failed);
  qs::SyntheticSpec big;
  big.n = std::size_t(1) << 26;
  big.cols = 4096;
  loader.loadSynthetic(big);
  QVERIFY(loader.isBusy());
  loader.cancel();
  QVERIFY(loader.waitForIdle(30000));
  QCOMPARE(loaded.count(), 0);
  QCOMPARE(failed.count(), 0);
  // Usable afterwards.
  qs::SyntheticSpec small;
  small.n = 1024;
  small.cols = 32;
  loader.loadSynthetic(small);
  QVERIFY(loader.waitForIdle(30000));
  QCOMPARE(loaded.count(), 1);
}

QTEST_MAIN(TestMainWindow)
#include "tst_mainwindow.moc"
