// Tests of LatencyPanel: a tiny live sweep (plots, CSV), Cancel mid-sweep, atomic export failures, and a
// screenshot of the panel after a sweep (/tmp/qs-latency.png).
// Run: `QT_QPA_PLATFORM=offscreen ./build/tst_latencypanel` (ctest sets the platform itself).
#include <QComboBox>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QLineEdit>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardItemModel>
#include <QTemporaryDir>
#include <QtTest>

#include <qcustomplot.h>

#include "gemm/gemm.h"
#include "latencypanel.h"

namespace {

// The fastest int8 kernel this machine offers (what the panel checks by default).
QString bestInt8() {
  const auto& levels = qs::available_gemm_levels();
  return QStringLiteral("int8-") + QString::fromLatin1(qs::gemm_level_name(levels.back()));
}

// 1 where this build has oneDNN: its sgemm is a baseline and runs in every sweep beside fp32-eigen.
std::size_t extraBaselines() {
  for (const std::string& k : qs::bench_gemm_kernels())
    if (k == "fp32-onednn") return 1;
  return 0;
}

QVector<double> keys(const QCPGraph* g) {
  QVector<double> k;
  for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it) k << it->key;
  return k;
}

}  // namespace

class TestLatencyPanel : public QObject {
  Q_OBJECT

private slots:
  void offersKernels();
  void backendSelector();
  void tinySweepPlotsAndCsv();
  void rejectsBadInput();
  void cancelStopsPromptly();
  void destroyWhileRunning();
  void exportFailureLeavesNothing();
  void exportFormats();
  void screenshotAfterSweep();
};

void TestLatencyPanel::offersKernels() {
  LatencyPanel panel;
  const QStringList all = panel.availableKernels();
  QVERIFY(!all.isEmpty());
  QCOMPARE(all.front(), QStringLiteral("fp32-eigen"));
  QVERIFY(all.contains(bestInt8()));
  QVERIFY(all.contains(bestInt8() + QStringLiteral("-dq")));
  QVERIFY(all.contains(bestInt8() + QStringLiteral("-e2e")));
  QVERIFY(panel.selectedKernels().contains(QStringLiteral("fp32-eigen")));
  QCOMPARE(panel.sizes(), (QList<int>{256, 512, 1024}));
  QCOMPARE(panel.threads(), 1);
  QVERIFY(!panel.isRunning());
}

// Without a GPU (CI) the CUDA entries are greyed out and say "no GPU", and choosing them changes nothing;
// with one, the CUDA kernels are listed next to the CPU ones (the GPU sweep itself runs in
// `quantscope-cli bench gemm --backend cuda` on the GPU machine).
void TestLatencyPanel::backendSelector() {
  LatencyPanel panel;
  auto* combo = panel.findChild<QComboBox*>(QStringLiteral("backendCombo"));
  QVERIFY(combo);
  QCOMPARE(combo->count(), 3);
  QCOMPARE(panel.backend(), LatencyPanel::Backend::Cpu);
  QVERIFY(!panel.availableKernels().contains(QStringLiteral("fp32-cublas")));
  if (!LatencyPanel::cudaAvailable()) {
    auto* model = qobject_cast<QStandardItemModel*>(combo->model());
    QVERIFY(model);
    for (int i : {1, 2}) {
      QVERIFY(!model->item(i)->isEnabled());
      QVERIFY(model->item(i)->text().contains(QStringLiteral("no GPU")));
    }
    QVERIFY(LatencyPanel::cudaStatus().startsWith(QStringLiteral("no GPU")));
    QVERIFY(!panel.setBackend(LatencyPanel::Backend::Cuda));
    QVERIFY(!panel.setBackend(LatencyPanel::Backend::Both));
    QCOMPARE(panel.backend(), LatencyPanel::Backend::Cpu);
    QCOMPARE(panel.availableKernels().front(), QStringLiteral("fp32-eigen"));
  } else {
    QVERIFY(panel.setBackend(LatencyPanel::Backend::Both));
    const QStringList both = panel.availableKernels();
    for (const char* k : {"fp32-eigen", "fp32-cublas", "int8-cublaslt", "int8-dp4a"}) QVERIFY2(both.contains(QLatin1String(k)), k);
    QVERIFY(panel.selectedKernels().contains(QStringLiteral("int8-cublaslt")));
    QVERIFY(panel.setBackend(LatencyPanel::Backend::Cuda));
    QVERIFY(!panel.availableKernels().contains(QStringLiteral("fp32-eigen")));
    QCOMPARE(combo->currentIndex(), int(LatencyPanel::Backend::Cuda));
  }
}

void TestLatencyPanel::tinySweepPlotsAndCsv() {
  LatencyPanel panel;
  QSignalSpy finished(&panel, &LatencyPanel::sweepFinished);
  const QStringList kernels{QStringLiteral("fp32-eigen"), bestInt8()};
  QVERIFY(panel.runSweep({64, 32}, kernels, 1));
  QVERIFY(panel.isRunning());
  auto* run = panel.findChild<QPushButton*>(QStringLiteral("runButton"));
  auto* cancel = panel.findChild<QPushButton*>(QStringLiteral("cancelButton"));
  QVERIFY(run && cancel);
  QVERIFY(!run->isEnabled() && cancel->isEnabled());
  QVERIFY(!panel.runSweep({32}, kernels, 1));  // one sweep at a time
  QVERIFY(finished.wait(60000));
  QCOMPARE(finished.count(), 1);
  QVERIFY(!panel.isRunning());
  QVERIFY(run->isEnabled() && !cancel->isEnabled());
  QCOMPARE(panel.findChild<QLineEdit*>(QStringLiteral("sizesEdit"))->text(), QStringLiteral("32,64"));

  QCOMPARE(panel.rows().size(), std::size_t(2) * (2 + extraBaselines()));
  for (LatencyPanel::Plot which : {LatencyPanel::Plot::Time, LatencyPanel::Plot::Gops, LatencyPanel::Plot::Speedup}) {
    QCOMPARE(panel.plot(which)->graphCount(), int(2 + extraBaselines()));
    for (const QString& k : kernels) {
      QCPGraph* g = panel.graph(which, k);
      QVERIFY2(g, qPrintable(k));
      QCOMPARE(g->name(), k);
      QCOMPARE(keys(g), (QVector<double>{32, 64}));
      for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it) QVERIFY(it->value > 0);
    }
  }
  // fp32-eigen is its own baseline.
  for (auto it = panel.graph(LatencyPanel::Plot::Speedup, kernels[0])->data()->constBegin();
       it != panel.graph(LatencyPanel::Plot::Speedup, kernels[0])->data()->constEnd(); ++it)
    QCOMPARE(it->value, 1.0);

  QTemporaryDir dir;
  const QString csv = dir.filePath(QStringLiteral("rows.csv"));
  QString error;
  QVERIFY2(panel.exportCsv(csv, &error), qPrintable(error));
  QFile f(csv);
  QVERIFY(f.open(QIODevice::ReadOnly));
  const QList<QByteArray> lines = f.readAll().trimmed().split('\n');
  QCOMPARE(std::size_t(lines.size()), 1 + 2 * (2 + extraBaselines()));
  QCOMPARE(lines[0], QByteArray("backend,kernel,M,N,K,threads,median_ms,gops,speedup_vs_fp32,max_abs_err_vs_ref"));
  QSet<QByteArray> seen;
  for (int i = 1; i < lines.size(); ++i) {
    const QList<QByteArray> cols = lines[i].split(',');
    QCOMPARE(cols.size(), 10);
    QCOMPARE(cols[0], QByteArray("cpu"));
    QVERIFY(kernels.contains(QString::fromLatin1(cols[1])) || cols[1] == "fp32-onednn");
    QVERIFY(cols[2] == "32" || cols[2] == "64");
    QCOMPARE(cols[3], cols[2]);
    QCOMPARE(cols[4], cols[2]);
    QCOMPARE(cols[5], QByteArray("1"));
    QVERIFY(cols[6].toDouble() > 0);
    QVERIFY(cols[7].toDouble() > 0);
    seen.insert(cols[1] + '@' + cols[2]);
  }
  QCOMPARE(std::size_t(seen.size()), 2 * (2 + extraBaselines()));  // one row per kernel per size
  // Issue 17 item 2: the int8 speedup is against the best fp32 baseline of the same run and size.
  for (int size : {32, 64}) {
    double best = INFINITY, int8ms = 0, speedup = 0;
    for (const auto& r : panel.rows()) {
      if (r.M != size) continue;
      if (r.kernel.rfind("fp32-", 0) == 0) best = std::min(best, r.median_ms);
      if (QString::fromStdString(r.kernel) == kernels[1]) int8ms = r.median_ms, speedup = r.speedup_vs_fp32;
    }
    QVERIFY(int8ms > 0);
    QCOMPARE(speedup, best / int8ms);
  }
}

void TestLatencyPanel::rejectsBadInput() {
  LatencyPanel panel;
  QSignalSpy finished(&panel, &LatencyPanel::sweepFinished);
  QVERIFY(!panel.runSweep({}, {QStringLiteral("fp32-eigen")}, 1));
  QVERIFY(!panel.runSweep({0, -5}, {QStringLiteral("fp32-eigen")}, 1));
  QVERIFY(!panel.runSweep({32}, {QStringLiteral("int8-nonexistent")}, 1));
  QVERIFY(panel.statusText().contains(QStringLiteral("int8-nonexistent")));
  QVERIFY(!panel.isRunning());
  QCOMPARE(finished.count(), 0);
  // A bad sizes field: the Run button explains and starts nothing.
  panel.findChild<QLineEdit*>(QStringLiteral("sizesEdit"))->setText(QStringLiteral("256,abc"));
  QString error;
  QVERIFY(panel.sizes(&error).isEmpty());
  QVERIFY(error.contains(QStringLiteral("abc")));
  panel.run();
  QVERIFY(!panel.isRunning());
}

void TestLatencyPanel::cancelStopsPromptly() {
  LatencyPanel panel;
  panel.show();
  QVERIFY(QTest::qWaitForWindowExposed(&panel));
  QSignalSpy finished(&panel, &LatencyPanel::sweepFinished);
  QSignalSpy rows(&panel, &LatencyPanel::rowMeasured);
  const QStringList kernels{QStringLiteral("fp32-eigen"), bestInt8(), bestInt8() + QStringLiteral("-e2e")};
  QVERIFY(panel.runSweep({512, 1024, 1536, 2048}, kernels, 1));
  QVERIFY(rows.wait(30000));  // the first row is on the plots
  QElapsedTimer t;
  t.start();
  panel.findChild<QPushButton*>(QStringLiteral("cancelButton"))->click();
  QVERIFY(finished.count() == 1 || finished.wait(20000));
  qInfo("cancel took %lld ms, %zu rows measured", t.elapsed(), panel.rows().size());
  QVERIFY(!panel.isRunning());
  QVERIFY(panel.rows().size() < std::size_t(12));
  QVERIFY(panel.statusText().startsWith(QStringLiteral("Cancelled")));
  QVERIFY(panel.findChild<QPushButton*>(QStringLiteral("runButton"))->isEnabled());
  QVERIFY(panel.findChild<QListWidget*>(QStringLiteral("kernelList"))->isEnabled());

  // Usable afterwards: a fresh sweep runs to the end.
  QVERIFY(panel.runSweep({32}, {QStringLiteral("fp32-eigen")}, 1));
  QVERIFY(finished.wait(30000));
  QCOMPARE(panel.rows().size(), 1 + extraBaselines());
  QVERIFY(panel.statusText().startsWith(QStringLiteral("Done")));
}

void TestLatencyPanel::destroyWhileRunning() {
  QElapsedTimer t;
  t.start();
  {
    LatencyPanel panel;
    QVERIFY(panel.runSweep({1024, 2048}, {QStringLiteral("fp32-eigen"), bestInt8()}, 1));
    QTest::qWait(50);
  }  // the destructor cancels and waits for the worker: no crash, no stray rows afterwards
  QTest::qWait(100);
  QVERIFY(t.elapsed() < 20000);
}

void TestLatencyPanel::exportFailureLeavesNothing() {
  LatencyPanel panel;
  QTemporaryDir dir;
  const QString missing = dir.filePath(QStringLiteral("no-such-dir"));
  for (const QString& name : {QStringLiteral("rows.csv"), QStringLiteral("time.png"), QStringLiteral("time.pdf")}) {
    const QString path = missing + u'/' + name;
    QString error;
    const bool ok = name.endsWith(u".csv") ? panel.exportCsv(path, &error)
                                           : panel.exportPlot(LatencyPanel::Plot::Time, path, &error);
    QVERIFY(!ok);
    QVERIFY2(error.startsWith(QStringLiteral("cannot write")), qPrintable(error));
    QVERIFY(!QFile::exists(path));
  }
  QVERIFY(!QFileInfo::exists(missing));
  QString error;
  QVERIFY(!panel.exportPlot(LatencyPanel::Plot::Gops, dir.filePath(QStringLiteral("x.bmp")), &error));
  QVERIFY(error.contains(QStringLiteral("unsupported")));
  QVERIFY(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden).isEmpty());
}

void TestLatencyPanel::exportFormats() {
  LatencyPanel panel;
  QSignalSpy finished(&panel, &LatencyPanel::sweepFinished);
  QVERIFY(panel.runSweep({32}, {QStringLiteral("fp32-eigen"), bestInt8()}, 1));
  QVERIFY(finished.wait(30000));
  QTemporaryDir dir;
  for (const QString& suffix : LatencyPanel::plotSuffixes()) {
    const QString path = dir.filePath(QStringLiteral("speedup.") + suffix);
    QString error;
    QVERIFY2(panel.exportPlot(LatencyPanel::Plot::Speedup, path, &error), qPrintable(error));
    QVERIFY(QFileInfo(path).size() > 500);
  }
  QImage png(dir.filePath(QStringLiteral("speedup.png")));
  QVERIFY(!png.isNull() && png.width() >= 300);
}

void TestLatencyPanel::screenshotAfterSweep() {
  LatencyPanel panel;
  panel.resize(1280, 760);
  panel.show();
  QVERIFY(QTest::qWaitForWindowExposed(&panel));
  QSignalSpy finished(&panel, &LatencyPanel::sweepFinished);
  QVERIFY(panel.runSweep({64, 128, 256}, {QStringLiteral("fp32-eigen"), bestInt8(), bestInt8() + QStringLiteral("-dq"),
                                            bestInt8() + QStringLiteral("-e2e")},
                         1));
  QVERIFY(finished.wait(60000));
  QCOMPARE(panel.rows().size(), std::size_t(3) * (4 + extraBaselines()));
  QCOMPARE(panel.findChild<QProgressBar*>(QStringLiteral("sweepProgress"))->value(), int(3 * (4 + extraBaselines())));
  QTest::qWait(100);  // the queued replots
  const QImage shot = panel.grab().toImage();
  QVERIFY(shot.save(QStringLiteral("/tmp/qs-latency.png")));
}

QTEST_MAIN(TestLatencyPanel)
#include "tst_latencypanel.moc"
