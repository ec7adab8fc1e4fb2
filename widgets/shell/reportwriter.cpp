// ReportWriter: all views into one folder, atomically as a whole (temporary folder, then renames).
#include "reportwriter.h"

#include <QDir>
#include <QFileInfo>
#include <QTemporaryDir>

#include "shared/reportsection.h"

ReportWriter::ReportWriter(QList<ReportSection*> sections) : m_sections(std::move(sections)) {}

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
  int stages = 0;
  for (const ReportSection* s : m_sections) stages += !s->reportStage().isEmpty();
  const ReportSection::Context context{tmp, QSize(1200, 700), [this](const QString& text) { emit message(text); }};
  int k = 0;
  for (ReportSection* section : m_sections) {
    const QString what = section->reportStage();
    if (!what.isEmpty()) {
      emit progressed(k++, stages, what);
      if (m_cancelled) {
        if (error) *error = QStringLiteral("report cancelled; nothing was written");
        return false;
      }
    }
    if (!section->writeReportSection(context, error)) return false;
  }
  return true;
}
