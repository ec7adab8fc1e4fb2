// ReportWriter: all views into one folder, atomically as a whole (temporary folder, then renames).
#include "reportwriter.h"

#include <QDir>
#include <QEventLoop>
#include <QFileInfo>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QTimer>

#include "error/errorpanel.h"
#include "formats/formatgridplot.h"
#include "formats/formatspanel.h"
#include "latency/latencypanel.h"
#include "mainwindow.h"
#include "blockscales/blockscalespanel.h"
#include "observers/observerspanel.h"
#include "shared/plotexport.h"
#include "model/sqnrheatmap.h"
#include "training/trainingpanel.h"

ReportWriter::ReportWriter(MainWindow* window) : m_window(window) {}

QStringList ReportWriter::stems() {
  return {QStringLiteral("format-grid"), QStringLiteral("error-histogram"), QStringLiteral("flip-counts"),
          QStringLiteral("latency")};
}

bool ReportWriter::write(const QString& dir, QString* error) {
  auto fail = [&](const QString& why) {
    if (error) *error = why;
    return false;
  };
  m_written.clear();
  const QFileInfo target(dir);
  if (target.exists() && !target.isDir()) return fail(QStringLiteral("cannot write %1: it is a file, not a folder").arg(dir));
  QDir parent = target.absoluteDir();
  if (!parent.exists() && !QDir().mkpath(parent.absolutePath()))
    return fail(QStringLiteral("cannot write %1: cannot create %2").arg(dir, parent.absolutePath()));
  // The staging folder lives inside the target folder when it exists (same filesystem: renames are
  // atomic), else beside it, becoming the target with one rename.
  const QString stageBase = target.exists() ? target.absoluteFilePath() : parent.absolutePath();
  QTemporaryDir stage(QDir(stageBase).filePath(QStringLiteral(".quantscope-report-XXXXXX")));
  if (!stage.isValid())
    return fail(QStringLiteral("cannot write %1: %2").arg(dir, stage.errorString().isEmpty() ? QStringLiteral("folder not writable") : stage.errorString()));
  if (!writeInto(stage.path(), error)) return false;  // QTemporaryDir removes what was written

  const QStringList files = QDir(stage.path()).entryList(QDir::Files, QDir::Name);
  if (!target.exists()) {
    if (!QDir().rename(stage.path(), target.absoluteFilePath()))
      return fail(QStringLiteral("cannot write %1: cannot move the report into place").arg(dir));
    stage.setAutoRemove(false);
    // QTemporaryDir makes its folder private (0700); a report is an ordinary folder.
    QFile::setPermissions(target.absoluteFilePath(), QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner |
                                                         QFileDevice::ReadGroup | QFileDevice::ExeGroup |
                                                         QFileDevice::ReadOther | QFileDevice::ExeOther);
  } else {
    QDir out(target.absoluteFilePath());
    for (const QString& f : files) {
      out.remove(f);
      if (!QFile::rename(QDir(stage.path()).filePath(f), out.filePath(f))) {
        return fail(QStringLiteral("cannot write %1: cannot move %2 into place").arg(dir, f));
      }
    }
  }
  m_written = files;
  return true;
}

bool ReportWriter::writeInto(const QString& tmp, QString* error) {
  const QSize size(1200, 700);
  auto stage = [&](int k, const QString& what) {
    emit progressed(k, 5, what);
    if (!m_cancelled) return true;
    if (error) *error = QStringLiteral("report cancelled; nothing was written");
    return false;
  };
  if (!stage(0, QStringLiteral("format grid"))) return false;
  FormatsPanel* formats = m_window->formatsPanel();
  FormatGridPlot* grid = formats->plot();
  if (!plotexport::exportAll(grid, tmp, QStringLiteral("format-grid"), [grid] { return grid->csv(); },
                             QStringLiteral("Representable values of %1").arg(formats->spec()), error, size))
    return false;
  emit message(QStringLiteral("report: format-grid written"));
  if (!stage(1, QStringLiteral("error histograms"))) return false;

  if (!m_window->errorPanel()->exportReport(tmp, error)) return false;
  emit message(QStringLiteral("report: error-histogram written"));
  // The Model tab's heatmap, when one was computed (finished: a running one is waited for).
  SqnrHeatmap* heatmap = m_window->heatmap();
  if (!heatmap->filePath().isEmpty()) {
    heatmap->waitForFinished(-1);
    if (!heatmap->tensorNames().isEmpty()) {
      if (!heatmap->exportAll(tmp, QStringLiteral("sqnr-heatmap"), error)) return false;
      emit message(QStringLiteral("report: sqnr-heatmap written"));
    }
  }
  // The Block scales tab's comparison, when one was computed.
  if (!m_window->blockScalesPanel()->exportAll(tmp, error)) return false;
  // The Observers tab's stream, when one ran.
  if (m_window->observersPanel()->batchesDone() > 0) {
    if (!m_window->observersPanel()->exportAll(tmp, error)) return false;
    emit message(QStringLiteral("report: observer trajectories written"));
  }
  if (!stage(2, QStringLiteral("training figures"))) return false;

  // The runs the user trained; a short synthetic run only when there are none.
  bool usedRuns = false;
  if (!m_window->trainingPanel()->writeReport(tmp, error, &usedRuns)) return false;
  emit message(usedRuns ? QStringLiteral("report: the training tab's runs written")
                        : QStringLiteral("report: flip-counts written (a short synthetic run: no run was trained)"));
  if (!stage(3, QStringLiteral("latency (a short GEMM sweep)"))) return false;

  // Latency: the rows already measured in the tab, or a short sweep (int8 vs fp32 at small sizes).
  LatencyPanel* latency = m_window->latencyPanel();
  if (latency->rows().empty()) {
    QEventLoop loop;
    QObject::connect(latency, &LatencyPanel::sweepFinished, &loop, &QEventLoop::quit);
    // The lines worth a figure: the fp32 baselines, our int8 kernel for this CPU, oneDNN's where built.
    QStringList kernels;
    for (const QString& k : latency->availableKernels())
      if (QStringList{"fp32-eigen", "fp32-onednn", "int8-onednn", "int8-vnni", "int8-avx2", "int8-vnni-e2e", "int8-avx2-e2e"}.contains(k))
        kernels << k;
    if (latency->runSweep({64, 128, 256, 512}, kernels, 1)) {
      QTimer::singleShot(120000, &loop, &QEventLoop::quit);
      loop.exec();
    }
  }
  for (const QString& suffix : plotexport::imageSuffixes())
    if (!latency->exportPlot(LatencyPanel::Plot::Time, QDir(tmp).filePath(QStringLiteral("latency.") + suffix), error, size))
      return false;
  if (!latency->exportCsv(QDir(tmp).filePath(QStringLiteral("latency.csv")), error)) return false;
  emit message(QStringLiteral("report: latency written"));
  if (!stage(4, QStringLiteral("settings.json"))) return false;

  const QByteArray json = QJsonDocument(m_window->currentSettings().toJson()).toJson();
  return plotexport::writeFileAtomic(QDir(tmp).filePath(QStringLiteral("settings.json")), json, error);
}
