// ConventionsPanel: the "Conventions" tab (issue 15 item 2). Pick a format and two or more library conventions
// (format/convention.h): the plot shows what each makes of every input (|x| on a log axis for floats, a ramp for
// integer conventions) with the ranges where they disagree shaded; the table lists the disagreeing inputs with
// each convention's code and value; a line counts the values of the current tensor that differ and gives each
// convention's SQNR there (computed off the UI thread).
#pragma once

#include <QWidget>

#include <memory>

#include "format/convention.h"
#include "shared/jobrunner.h"
#include "shared/tensordata.h"

class QComboBox;
class QCustomPlot;
class QLabel;
class ElidedLabel;
class QListWidget;
class QTableWidget;
class QCPTextElement;

class ConventionsPanel : public QWidget {
  Q_OBJECT

public:
  explicit ConventionsPanel(QWidget* parent = nullptr);
  ~ConventionsPanel() override;

  // Selects a format and the conventions to compare (names as convention.h spells them); false with a reason
  // when the format or a name is unknown, or fewer than two fit the format.
  bool setComparison(const QString& format, const QStringList& conventions, QString* error = nullptr);
  QString format() const;
  QStringList checkedConventions() const;
  void setTensor(const TensorData& tensor);
  // The probe comparison as CSV (input, differ, each convention's code and value), as compare-conventions --csv.
  QByteArray csv() const;
  void exportInteractive();

  const qs::ConventionComparison* probeResult() const { return m_probe.get(); }
  const qs::ConventionComparison* tensorResult() const { return m_tensorResult.get(); }
  bool waitForIdle(int ms);
  QTableWidget* table() const { return m_table; }
  QCustomPlot* plot() const { return m_plot; }
  // The current tensor's line (it quotes the tensor's name: elided, never widens the window).
  ElidedLabel* tensorLine() const { return m_tensorLine; }

signals:
  void message(const QString& text);

private:
  void fillConventionList();
  void recompute();
  void drawPlot();
  void fillTable();
  void startTensor();

  QComboBox* m_format = nullptr;
  QListWidget* m_list = nullptr;
  QLabel* m_summary = nullptr;
  ElidedLabel* m_tensorLine = nullptr;
  QCustomPlot* m_plot = nullptr;
  QCPTextElement* m_title = nullptr;
  QCPTextElement* m_subtitle = nullptr;
  QTableWidget* m_table = nullptr;
  TensorData m_tensor;
  std::unique_ptr<qs::ConventionComparison> m_probe, m_tensorResult;
  // The current tensor's comparison on a worker (one result, null when the conventions do not fit it).
  JobRunner<std::monostate, std::shared_ptr<qs::ConventionComparison>> m_job;
  int m_generation = 0;     // bumped by every request
  int m_jobGeneration = 0;  // the request the job in flight answers
};
