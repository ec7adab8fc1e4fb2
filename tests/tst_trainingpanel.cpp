// TrainingPanel (widgets/training/trainingpanel.h), offscreen: a tiny synthetic run streams into the curves, pause
// holds the step count, stop ends the run, runs overlay and hide, the heatmap gets code-usage samples,
// every plot exports to non-empty PNG/PDF/SVG/CSV, an invalid scheme or learning rate shows a message and
// starts nothing, and the report's flip-counts files are written. Set QS_TRAINING_SCREENSHOT=dir/x.png to
// save a picture of the panel (and the report's flip-counts files in dir). Each slot starts from a fresh panel
// (init) and trains the runs it looks at, so any slot runs alone: `tst_trainingpanel overlayAndHide`.
// Run: QT_QPA_PLATFORM=offscreen build/tests/tst_trainingpanel
#include "codeusagemap.h"
#include "trainingpanel.h"
#include "trainingrun.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QListWidget>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardItemModel>
#include <QTemporaryDir>
#include <QTest>

#include <qcustomplot.h>

#include <cmath>

#include "cuda/device.h"

namespace {

qs::TrainConfig tiny(int epochs) {
  qs::TrainConfig c;
  c.epochs = epochs;
  c.batch = 64;
  c.seed = 2;
  return c;
}

// Waits for runFinished (the run ends on its own or after stop()).
bool waitFinished(QSignalSpy& spy, int ms = 60000) { return !spy.isEmpty() || spy.wait(ms); }

// Trains `c` on the synthetic set to its end; false when it did not start or finish in time.
bool train(TrainingPanel* panel, const qs::TrainConfig& c) {
  QSignalSpy finished(panel, &TrainingPanel::runFinished);
  return panel->startRun(c, true) && waitFinished(finished);
}

qs::TrainConfig e4m3fnBoth(int epochs) {
  qs::TrainConfig c = tiny(epochs);
  c.weights = "e4m3fn";
  c.acts = "e4m3fn";
  return c;
}

}  // namespace

class tst_TrainingPanel : public QObject {
  Q_OBJECT

 private slots:
  void init();
  void cleanup();
  void runStreamsIntoCurves();
  void pauseAndStop();
  void overlayAndHide();
  void exportsEveryPlot();
  void invalidInputShowsAMessage();
  void divergingRunKeepsItsSteps();
  void fashionMnistRun();
  void stopEndsTheStepInProgress();
  void flipCountsReport();
  void gpuDeviceChoice();
  void screenshot();

 private:
  TrainingPanel* m_panel = nullptr;
  std::unique_ptr<TrainingPanel> m_owner;
};

void tst_TrainingPanel::init() {
  m_owner = std::make_unique<TrainingPanel>();
  m_panel = m_owner.get();
  m_panel->resize(1500, 900);
  m_panel->show();
}

void tst_TrainingPanel::cleanup() {
  m_panel = nullptr;
  m_owner.reset();  // stops a run still going and waits for it
}

void tst_TrainingPanel::runStreamsIntoCurves() {
  QSignalSpy finished(m_panel, &TrainingPanel::runFinished);
  QSignalSpy appended(m_panel, &TrainingPanel::stepsAppended);
  QVERIFY(m_panel->startRun(e4m3fnBoth(2), true));
  QVERIFY(m_panel->isRunning());
  QVERIFY(!m_panel->findChild<QPushButton*>(QStringLiteral("startButton"))->isEnabled());
  QVERIFY(waitFinished(finished));
  QVERIFY(!m_panel->isRunning());
  QCOMPARE(finished.front().at(1).toString(), QStringLiteral("completed"));
  QVERIFY(appended.count() >= 1);
  QCOMPARE(m_panel->runCount(), 1);
  const TrainingRun& r = m_panel->run(0);
  QCOMPARE(r.steps.size(), std::size_t(2 * 94));  // 6000 images / 64 = 94 steps per epoch
  QCOMPARE(r.testAcc.size(), std::size_t(2));
  QVERIFY(r.finalTestAcc > 0.3);
  const QVector<QCPGraph*> loss = m_panel->plots()->graphs(TrainingPanel::Plot::Loss, r.id);
  QCOMPARE(loss.size(), 1);
  QCOMPARE(loss[0]->dataCount(), int(r.steps.size()));
  const QVector<QCPGraph*> flips = m_panel->plots()->graphs(TrainingPanel::Plot::Flips, r.id);
  QCOMPARE(flips.size(), 3);
  for (QCPGraph* g : flips) QCOMPARE(g->dataCount(), int(r.steps.size()));
  QCOMPARE(m_panel->plots()->graphs(TrainingPanel::Plot::Accuracy, r.id)[1]->dataCount(), 2);  // test points
  // The heatmap shows this run's code usage: e4m3fn codes over the sampled steps.
  CodeUsageMap* map = m_panel->plots()->codeUsage();
  QCOMPARE(map->run(), &r);
  QVERIFY(map->sampleCount() > 10);
  QCOMPARE(map->colorMap()->data()->keySize(), map->sampleCount());
  QCOMPARE(map->colorMap()->data()->valueSize(), 254);  // 256 codes less the two NaNs
  // Issue 19 item 7: an unused code (no weight: no value in the map) is drawn in a colour of its own,
  // apart from both ends of the scale (it was transparent: white, the hot end of the old thermal scale).
  QCPColorGradient g = map->colorMap()->gradient();  // colorize() is not const
  QCOMPARE(g.nanHandling(), QCPColorGradient::nhNanColor);
  const QColor unused = g.nanColor();
  QVector<QRgb> ends(2);
  const double at[2] = {0.0, 1.0};
  g.colorize(at, QCPRange(0, 1), ends.data(), 2);
  for (QRgb c : ends) {
    const int distance = std::abs(qRed(c) - unused.red()) + std::abs(qGreen(c) - unused.green()) + std::abs(qBlue(c) - unused.blue());
    QVERIFY2(distance > 100, qPrintable(QString::number(distance)));
  }
  int unusedRows = 0;  // some codes of e4m3fn are never used by these small weights: they are NaN cells
  for (int j = 0; j < map->colorMap()->data()->valueSize(); ++j)
    unusedRows += std::isnan(map->colorMap()->data()->cell(map->sampleCount() - 1, j));
  QVERIFY(unusedRows > 0);
  QVERIFY(m_panel->statusText().contains(QStringLiteral("finished")));
  QVERIFY(m_panel->findChild<QPushButton*>(QStringLiteral("startButton"))->isEnabled());
}

void tst_TrainingPanel::pauseAndStop() {
  QSignalSpy finished(m_panel, &TrainingPanel::runFinished);
  QSignalSpy appended(m_panel, &TrainingPanel::stepsAppended);
  QVERIFY(m_panel->startRun(tiny(200), true));
  QVERIFY(appended.wait(30000));
  m_panel->setPaused(true);
  QVERIFY(m_panel->isPaused());
  QTest::qWait(300);  // the step in flight lands
  const std::size_t held = m_panel->run(m_panel->runCount() - 1).steps.size();
  QTest::qWait(400);
  QCOMPARE(m_panel->run(m_panel->runCount() - 1).steps.size(), held);
  QVERIFY(m_panel->statusText().contains(QStringLiteral("paused")));
  m_panel->setPaused(false);
  QTRY_VERIFY_WITH_TIMEOUT(m_panel->run(m_panel->runCount() - 1).steps.size() > held, 10000);
  // Stop while paused: the worker wakes and ends.
  m_panel->setPaused(true);
  m_panel->stop();
  QVERIFY(waitFinished(finished, 30000));
  QCOMPARE(finished.front().at(1).toString(), QStringLiteral("stopped"));
  const TrainingRun& r = m_panel->run(m_panel->runCount() - 1);
  QVERIFY(r.steps.size() < std::size_t(200 * 94));
  QVERIFY(r.finalTestAcc >= 0);
  QVERIFY(!m_panel->isRunning());
  QVERIFY(m_panel->statusText().contains(QStringLiteral("stopped")));
}

void tst_TrainingPanel::overlayAndHide() {
  QVERIFY(train(m_panel, e4m3fnBoth(1)));
  QVERIFY(train(m_panel, tiny(1)));
  QSignalSpy finished(m_panel, &TrainingPanel::runFinished);
  qs::TrainConfig c = tiny(1);
  c.optimizer = qs::OptimizerKind::Grid;
  QVERIFY(m_panel->startRun(c, true));
  QVERIFY(waitFinished(finished));
  const int n = m_panel->runCount();
  QCOMPARE(n, 3);
  QCustomPlot* lossPlot = m_panel->plot(TrainingPanel::Plot::Loss);
  QCOMPARE(lossPlot->graphCount(), 3);  // one loss curve per run, overlaid
  // Untick the first run in the list: its curves disappear.
  auto* list = m_panel->findChild<QListWidget*>(QStringLiteral("runList"));
  QCOMPARE(list->count(), 3);
  list->item(0)->setCheckState(Qt::Unchecked);
  const int firstId = m_panel->run(0).id;
  QVERIFY(!m_panel->run(0).visible);
  for (QCPGraph* g : m_panel->plots()->graphs(TrainingPanel::Plot::Flips, firstId)) QVERIFY(!g->visible());
  list->item(0)->setCheckState(Qt::Checked);
  QVERIFY(m_panel->plots()->graphs(TrainingPanel::Plot::Loss, firstId)[0]->visible());
  // The grid run flips few weights: most updates stall.
  const TrainingRun& g = m_panel->run(2);
  QVERIFY(g.stallFraction.back() > 0.5);
}

void tst_TrainingPanel::exportsEveryPlot() {
  QVERIFY(train(m_panel, e4m3fnBoth(1)));  // run #1, named in the flip counts below
  QTemporaryDir dir;
  for (int p = 0; p < TrainingPlots::kPlotCount; ++p) {
    const auto which = TrainingPanel::Plot(p);
    for (const char* suffix : {"png", "pdf", "svg", "csv"}) {
#ifndef QS_HAVE_QTSVG
      if (QByteArray(suffix) == "svg") continue;
#endif
      const QString path = dir.filePath(TrainingPlots::stem(which) + u'.' + QString::fromLatin1(suffix));
      QString error;
      QVERIFY2(m_panel->exportPlot(which, path, &error), qPrintable(error));
      QVERIFY2(QFileInfo(path).size() > 100, qPrintable(path));
    }
  }
  QFile csv(dir.filePath(QStringLiteral("loss.csv")));
  QVERIFY(csv.open(QIODevice::ReadOnly));
  QCOMPARE(csv.readLine(), QByteArray("run,step,epoch,loss,train_acc,test_acc,flips,updates,bit_stalls,overflow,underflow\n"));
  QFile flips(dir.filePath(QStringLiteral("flip-counts.csv")));
  QVERIFY(flips.open(QIODevice::ReadOnly));
  QCOMPARE(flips.readLine(), QByteArray("run,step,layer,flips\n"));
  QVERIFY(flips.readLine().startsWith("#1 adam e4m3fn / acts e4m3fn,1,fc1,"));
  QString error;
  QVERIFY(!m_panel->exportPlot(TrainingPanel::Plot::Loss, dir.filePath(QStringLiteral("x.bmp")), &error));
  QVERIFY(error.contains(QStringLiteral("unsupported")));
}

void tst_TrainingPanel::invalidInputShowsAMessage() {
  const int runs = m_panel->runCount();
  auto* weights = m_panel->findChild<QComboBox*>(QStringLiteral("weightsCombo"));
  auto* start = m_panel->findChild<QPushButton*>(QStringLiteral("startButton"));
  weights->setEditText(QStringLiteral("e9m9"));
  QVERIFY(!m_panel->start());
  QVERIFY2(m_panel->statusText().contains(QStringLiteral("e9m9")), qPrintable(m_panel->statusText()));
  start->click();  // the button path too
  QCOMPARE(m_panel->runCount(), runs);
  QVERIFY(!m_panel->isRunning());
  weights->setEditText(QStringLiteral("e4m3fn/diagonal"));
  QVERIFY(!m_panel->start());
  QVERIFY(m_panel->statusText().contains(QStringLiteral("diagonal")));
  weights->setEditText(QString());
  m_panel->findChild<QLineEdit*>(QStringLiteral("lrEdit"))->setText(QStringLiteral("fast"));
  QVERIFY(!m_panel->start());
  QVERIFY(m_panel->statusText().contains(QStringLiteral("learning rate")));
  m_panel->findChild<QLineEdit*>(QStringLiteral("lrEdit"))->clear();
  qs::TrainConfig bad = tiny(1);
  bad.optimizer = qs::OptimizerKind::Grid;
  bad.weights = "int8/channel:0";
  QVERIFY(!m_panel->startRun(bad, true));
  QVERIFY(m_panel->statusText().contains(QStringLiteral("grid optimizer")));
  QCOMPARE(m_panel->runCount(), runs);
  // Still usable afterwards: the valid configuration reads back without an error (the error string starts
  // non-empty, so a config() that forgot to clear it, or failed, is caught), and a run starts.
  QString err = QStringLiteral("unset");
  m_panel->setConfig(tiny(1), true);
  const qs::TrainConfig back = m_panel->config(&err);
  QVERIFY2(err.isEmpty(), qPrintable(err));
  QCOMPARE(back.epochs, 1);
  QVERIFY(m_panel->startRun(tiny(1), true));
  QTRY_VERIFY_WITH_TIMEOUT(!m_panel->isRunning(), 60000);
  QCOMPARE(m_panel->runCount(), runs + 1);
}

void tst_TrainingPanel::divergingRunKeepsItsSteps() {
  QSignalSpy finished(m_panel, &TrainingPanel::runFinished);
  qs::TrainConfig c = tiny(1);
  c.optimizer = qs::OptimizerKind::Sgd;
  c.lr = 1e8;
  QVERIFY(m_panel->startRun(c, true));
  QVERIFY(waitFinished(finished));
  QCOMPARE(finished.front().at(1).toString(), QStringLiteral("diverged"));
  QVERIFY2(m_panel->statusText().contains(QStringLiteral("diverged")), qPrintable(m_panel->statusText()));
  const TrainingRun& r = m_panel->run(m_panel->runCount() - 1);
  QVERIFY(!r.steps.empty());
  QVERIFY(std::isnan(r.loss.back()));
  QVERIFY(m_panel->findChild<QPushButton*>(QStringLiteral("startButton"))->isEnabled());  // usable again
}

void tst_TrainingPanel::fashionMnistRun() {
  if (!TrainingPanel::fashionMnistAvailable()) QSKIP("dataset-fashion-mnist is not installed");
  QSignalSpy finished(m_panel, &TrainingPanel::runFinished);
  QSignalSpy appended(m_panel, &TrainingPanel::stepsAppended);
  QVERIFY(m_panel->startRun(tiny(1), false));
  QVERIFY(appended.wait(60000));  // loads the 60 000 images on the worker, then streams
  m_panel->stop();
  QVERIFY(waitFinished(finished, 30000));
  const TrainingRun& r = m_panel->run(m_panel->runCount() - 1);
  QCOMPARE(r.dataset, QStringLiteral("fashion-mnist"));
  QVERIFY(!r.steps.empty());
  QVERIFY(r.steps.size() < std::size_t(938));  // 60 000 / 64 steps in the epoch: stopped early
}

// Stop ends the step in progress (the trainer's cancel flag, checked between layers), not only the run
// between steps: a run whose one step per epoch is the whole training set (seconds on Fashion-MNIST),
// stopped right after it starts, delivers no step at all (stopping only between steps delivered one), whether
// the stop lands inside that step or before the job has started (then QtConcurrent never runs it; that
// once read "failed: no result"). tst_trainer's cancelFlagStopsWithinAStep pins the mid-step case exactly.
void tst_TrainingPanel::stopEndsTheStepInProgress() {
  const bool fashion = TrainingPanel::fashionMnistAvailable();
  QSignalSpy finished(m_panel, &TrainingPanel::runFinished);
  qs::TrainConfig c = tiny(3);
  c.batch = 65536;
  QVERIFY(m_panel->startRun(c, !fashion));
  m_panel->stop();
  QVERIFY(waitFinished(finished, 60000));
  QCOMPARE(finished.front().at(1).toString(), QStringLiteral("stopped"));
  const TrainingRun& r = m_panel->run(m_panel->runCount() - 1);
  QCOMPARE(r.steps.size(), std::size_t(0));
  QVERIFY(m_panel->statusText().contains(QStringLiteral("stopped")));
}

void tst_TrainingPanel::flipCountsReport() {
  QTemporaryDir dir;
  QString error;
  QElapsedTimer t;
  t.start();
  QVERIFY2(TrainingPanel::writeFlipCountsReport(dir.path(), &error), qPrintable(error));
  qInfo("flip-counts report in %lld ms", t.elapsed());
  for (const char* suffix : {"png", "pdf", "csv"})
    QVERIFY2(QFileInfo(dir.filePath(QStringLiteral("flip-counts.") + QString::fromLatin1(suffix))).size() > 100, suffix);
  QFile csv(dir.filePath(QStringLiteral("flip-counts.csv")));
  QVERIFY(csv.open(QIODevice::ReadOnly));
  const QList<QByteArray> lines = csv.readAll().split('\n');
  QCOMPARE(lines.front(), QByteArray("run,step,layer,flips"));
  QCOMPARE(lines.size(), 1 + 2 * 256 * 3 + 1);  // header, 2 runs x 256 steps x 3 layers, final newline
  QVERIFY(!TrainingPanel::writeFlipCountsReport(dir.filePath(QStringLiteral("missing/dir")), &error));
  QVERIFY(error.contains(QStringLiteral("cannot write")));
}

// The Device choice (issue 18): the GPU entry is enabled exactly when a device is usable; int8 layers only with
// the GPU. Without a device (CI), choosing the GPU anyway fails in one status line naming why and starts nothing,
// and the panel trains on the CPU afterwards; with one, a short GPU run streams steps like a CPU run. A fresh panel.
void tst_TrainingPanel::gpuDeviceChoice() {
  TrainingPanel p;
  p.resize(1280, 720);
  auto* device = p.findChild<QComboBox*>(QStringLiteral("deviceCombo"));
  auto* int8 = p.findChild<QCheckBox*>(QStringLiteral("int8Check"));
  QVERIFY(device && int8);
  QCOMPARE(device->count(), 2);
  QVERIFY(!p.gpuSelected());
  QVERIFY(!int8->isEnabled());
  const qs::cuda::DeviceInfo& d = qs::cuda::device_info();
  auto* model = qobject_cast<QStandardItemModel*>(device->model());
  QVERIFY(model);
  QCOMPARE(model->item(1)->isEnabled(), d.available);
  device->setCurrentIndex(1);
  QVERIFY(p.gpuSelected());
  QVERIFY(int8->isEnabled());
  int8->setChecked(true);
  QString err = QStringLiteral("unset");
  const qs::TrainConfig c = p.config(&err);
  QVERIFY2(err.isEmpty(), qPrintable(err));
  QVERIFY(c.int8);
  QSignalSpy finished(&p, &TrainingPanel::runFinished);
  if (!d.available) {
    QVERIFY(!p.startRun(c, true));
    QVERIFY2(p.statusText().startsWith(QStringLiteral("GPU training: ")), qPrintable(p.statusText()));
    QVERIFY2(p.statusText().contains(QString::fromStdString(d.message)), qPrintable(p.statusText()));
    QCOMPARE(p.runCount(), 0);
    QVERIFY(!p.isRunning());
    device->setCurrentIndex(0);  // back on the CPU: int8 is not taken, a run completes
    QVERIFY(!int8->isEnabled());
    QVERIFY(!p.config(&err).int8);
    qs::TrainConfig on_cpu = tiny(1);
    on_cpu.int8 = true;
    QVERIFY(!p.startRun(on_cpu, true));
    QVERIFY2(p.statusText().contains(QStringLiteral("GPU")), qPrintable(p.statusText()));
    QVERIFY(p.startRun(tiny(1), true));
    QVERIFY(waitFinished(finished));
    QCOMPARE(p.runCount(), 1);
    QVERIFY(!p.run(0).name.contains(QStringLiteral("GPU")));
  } else {
    QVERIFY(p.startRun(c, true));
    QVERIFY(waitFinished(finished));
    QCOMPARE(finished.front().at(1).toString(), QStringLiteral("completed"));
    QVERIFY2(p.run(0).name.contains(QStringLiteral("(GPU)")), qPrintable(p.run(0).name));
    QVERIFY(!p.run(0).steps.empty());
  }
}

void tst_TrainingPanel::screenshot() {
  const QByteArray path = qgetenv("QS_TRAINING_SCREENSHOT");
  if (path.isEmpty()) QSKIP("set QS_TRAINING_SCREENSHOT=file.png to save a picture of the panel");
  QVERIFY(train(m_panel, e4m3fnBoth(2)));
  qs::TrainConfig grid = tiny(1);
  grid.optimizer = qs::OptimizerKind::Grid;
  QVERIFY(train(m_panel, grid));
  m_panel->plots()->replotAll();
  QTest::qWait(100);
  QVERIFY(m_panel->grab().save(QString::fromLocal8Bit(path)));
  QString error;  // and the report's flip-counts files beside it
  QVERIFY2(TrainingPanel::writeFlipCountsReport(QFileInfo(QString::fromLocal8Bit(path)).absolutePath(), &error), qPrintable(error));
}

QTEST_MAIN(tst_TrainingPanel)
#include "tst_trainingpanel.moc"
