// ReportWriter: File → Export report and `quantscope --report DIR`: every view's plot as PNG, PDF and
// SVG with its data as CSV, plus settings.json that reproduces the view (`quantscope --settings`).
// Files: format-grid, error-histogram (+ value-histogram, metrics.csv), flip-counts (a short built-in
// training run), latency (a short CPU GEMM sweep). All or nothing: the files are written into a
// temporary folder beside DIR and moved in only when every one of them succeeded.
// The files come from the sections it is given (shared/reportsection.h: each tab writes its own, the
// window adds settings.json); the writer knows no panel.
// Exercise: `QT_QPA_PLATFORM=offscreen quantscope --report /tmp/r --preset mx-fp4`, tests/tst_mainwindow.cpp.
#pragma once

#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>

class ReportSection;

class ReportWriter : public QObject {
  Q_OBJECT

public:
  // The sections in report order (MainWindow::reportSections()); they must outlive write().
  explicit ReportWriter(QList<ReportSection*> sections);

  // Writes into `dir` (created when missing; files of the same names are replaced). false with
  // *error naming the path and the reason; nothing is left behind then.
  bool write(const QString& dir, QString* error = nullptr);
  QStringList writtenFiles() const { return m_written; }  // names, after a successful write()

  // The stems every report has.
  static QStringList stems();

public slots:
  // Stops after the stage in progress (the stages run event loops, so a Cancel button stays live);
  // write() then returns false with "cancelled" and leaves nothing behind.
  void cancel() { m_cancelled = true; }

signals:
  void message(const QString& text);
  void progressed(int stage, int stages, const QString& what);

private:
  bool writeInto(const QString& tmp, QString* error);

  QList<ReportSection*> m_sections;
  QStringList m_written;
  bool m_cancelled = false;
};
