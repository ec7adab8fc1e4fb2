// TrainingPlots: the Training tab's plots — loss, accuracy (batch and test), flips per step per layer (log y),
// bit-stall fraction, and the code-usage heatmap — with one set of graphs per run so runs overlay and can be
// hidden, plus each plot's CSV. Exercise: the Training tab, tests/tst_trainingpanel.cpp.
#pragma once

#include <QByteArray>
#include <QHash>
#include <QString>
#include <QVector>
#include <QWidget>

#include <memory>
#include <vector>

class QCustomPlot;
class QCPGraph;
class QComboBox;
class CodeUsageMap;
struct TrainingRun;

class TrainingPlots : public QWidget {
  Q_OBJECT

public:
  enum class Plot { Loss, Accuracy, Flips, BitStalls, CodeUsage };
  static constexpr int kPlotCount = 5;

  // `runs` is the panel's list (read on the GUI thread only).
  explicit TrainingPlots(const std::vector<std::unique_ptr<TrainingRun>>* runs, QWidget* parent = nullptr);

  QCustomPlot* plot(Plot which) const;
  CodeUsageMap* codeUsage() const { return m_codes; }
  static QString stem(Plot which);   // file stem: "loss", "accuracy", "flip-counts", "bit-stalls", "code-usage"
  QString title(Plot which) const;
  QByteArray csv(Plot which) const;  // every run (CodeUsage: the run and layer shown)

  // Graphs for a new run (call before appending); its data from index `from` on; visibility; all cleared.
  void addRun(const TrainingRun& run);
  void appendData(const TrainingRun& run, std::size_t from);
  void setRunVisible(const TrainingRun& run, bool visible);
  void clear();
  // The heatmap follows this run (null: none); the layer comes from the combo box.
  void setCodeUsageRun(const TrainingRun* run);
  void refreshCodeUsage();
  void rescale();
  void replotAll();

  // Graphs of a run on a plot (Loss: EMA; Accuracy: batch, test; Flips: one per layer; BitStalls: one).
  QVector<QCPGraph*> graphs(Plot which, int runId) const;

private:
  QCustomPlot* makePlot(const QString& title, const QString& yLabel, bool logY);
  void addLayerKey();

  const std::vector<std::unique_ptr<TrainingRun>>* m_runs;
  QCustomPlot* m_plots[4] = {nullptr, nullptr, nullptr, nullptr};
  CodeUsageMap* m_codes = nullptr;
  QComboBox* m_layerCombo = nullptr;
  struct RunGraphs {
    QCPGraph* loss = nullptr;
    QCPGraph* trainAcc = nullptr;
    QCPGraph* testAcc = nullptr;
    QVector<QCPGraph*> flips;
    QCPGraph* stalls = nullptr;
  };
  QHash<int, RunGraphs> m_graphs;
};
