// ConformanceDialog: Help -> Conformance. Runs the engine's conformance suite (core/format/conformance.h, the
// same code as `quantscope-cli selftest --report DIR`) on a worker thread and shows each family's checks and
// failures, with the offending formats, codes and inputs; exports the Markdown report (build, CPU level, GPU).
// Exercise: tests/tst_mainwindow.cpp (conformanceDialog).
#pragma once

#include <QDialog>

#include "format/conformance.h"
#include "shared/jobrunner.h"

class JobControls;
class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QTableWidget;

class ConformanceDialog : public QDialog {
  Q_OBJECT

public:
  explicit ConformanceDialog(QWidget* parent = nullptr);
  ~ConformanceDialog() override;

  // Runs the suite (the encoder under test is a parameter for tests; empty: the engine's).
  void run(const qs::EncodeFn& encode = {});
  void cancel();
  bool isRunning() const { return m_job.isRunning(); }
  bool waitForFinished(int ms);
  const qs::ConformanceReport& report() const { return m_report; }
  QString markdown() const;
  QTableWidget* table() const { return m_table; }
  QString summaryText() const;
  bool exportTo(const QString& path, QString* error = nullptr) const;

signals:
  void finished();

private:
  void onFinished();

  JobRunner<std::monostate, qs::ConformanceReport> m_job;  // the suite on a worker: progress and Cancel
  qs::ConformanceReport m_report;
  QLabel* m_summary = nullptr;
  QTableWidget* m_table = nullptr;
  QPlainTextEdit* m_details = nullptr;
  QProgressBar* m_progress = nullptr;
  QPushButton* m_runButton = nullptr;
  JobControls* m_controls = nullptr;  // Cancel and m_progress (shared/jobcontrols.h)
  QPushButton* m_exportButton = nullptr;
};
