// TrainingPanel: the "Training" tab — configure a run (data set, epochs, batch, learning rate, optimizer,
// weight/activation schemes, rounding, scaling, seed), Start / Pause / Stop it on a worker thread
// (QtConcurrent + QPromise: the UI never blocks), and watch loss, accuracy, flips per layer, bit-stalls
// and the weights' code usage live; runs stay overlaid for comparison and can be hidden. Comparison presets
// queue several runs. Also writes the headless report's flip-counts files from a short built-in run.
// Exercise: the Training tab of `quantscope`, `QT_QPA_PLATFORM=offscreen ./build/tests/tst_trainingpanel`.
#pragma once

#include <QList>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <memory>
#include <vector>

#include "trainingplots.h"
#include "train/trainer.h"
#include "shared/jobrunner.h"
#include "shared/reportsection.h"

class QCheckBox;
class QComboBox;
class QCustomPlot;
class ElidedLabel;
class QLineEdit;
class QListWidget;
class QListWidgetItem;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QToolButton;
struct TrainingRun;

class TrainingPanel : public QWidget, public ReportSection {
  Q_OBJECT

public:
  // ReportSection: this tab's part of File → Export report (shared/reportsection.h).
  QString reportStage() const override;
  bool writeReportSection(const ReportSection::Context& ctx, QString* error) override;

  using Plot = TrainingPlots::Plot;

  explicit TrainingPanel(QWidget* parent = nullptr);
  ~TrainingPanel() override;  // stops a running training and waits for it

  // What the controls describe. On an invalid field (learning rate text, scheme, hyper-parameter) returns
  // the defaults with *error set to one line naming the problem.
  qs::TrainConfig config(QString* error = nullptr) const;
  bool syntheticSelected() const;
  // Where runs train: the CPU lab, or the GPU (qs::cuda::train_cuda) when this build and machine have one.
  // The GPU entry is disabled otherwise, with the reason in its tooltip.
  bool gpuSelected() const;
  // Sets the controls (schemes as text, empty = fp32).
  void setConfig(const qs::TrainConfig& cfg, bool synthetic);
  static bool fashionMnistAvailable();

  bool isRunning() const { return m_job.isRunning(); }
  bool isPaused() const;
  int runCount() const { return int(m_runs.size()); }
  const TrainingRun& run(int index) const { return *m_runs[std::size_t(index)]; }
  QCustomPlot* plot(Plot which) const { return m_plots->plot(which); }
  TrainingPlots* plots() const { return m_plots; }
  QString statusText() const;

  // One plot to .png/.pdf/.svg/.csv by suffix, atomically; *error says why on failure.
  bool exportPlot(Plot which, const QString& path, QString* error = nullptr) const;
  // The report's training figures: with runs the user trained (at least one step), every plot of the tab
  // from those runs (loss, accuracy, flip-counts, bit-stalls, code-usage: PNG/PDF/SVG + CSV) and true;
  // without, the synthetic flip-counts comparison (writeFlipCountsReport) and false in *usedRuns.
  bool writeReport(const QString& dir, QString* error, bool* usedRuns = nullptr);

  // The headless report's flip-counts: two short seeded runs on the synthetic set (Adam with E4M3FN weights
  // through the STE, and GridOptim on the E4M3FN grid; 256 steps each, about a second), flips per step and
  // layer on a log axis, written as DIR/flip-counts.png/.pdf/.svg/.csv. The training runs on a worker
  // thread while an event loop keeps the GUI alive. Does not touch any panel's runs.
  static bool writeFlipCountsReport(const QString& dir, QString* error = nullptr);

public slots:
  // Start with what the controls say / with this configuration. false (reason in the status line, no run
  // started) when a run is in progress or the configuration is invalid.
  bool start();
  bool startRun(const qs::TrainConfig& cfg, bool synthetic);
  void setPaused(bool paused);  // suspends the worker between steps
  void stop();                  // stops after the current step; runFinished follows
  void clearRuns();             // forgets finished runs and their curves
  void runPreset(int index);    // queues a comparison preset (see presetNames())
  void exportInteractive();     // a menu of the plots, then a file dialog

public:
  static QStringList presetNames();

signals:
  void runStarted(int id);
  void stepsAppended(int id, int totalSteps);
  void runFinished(int id, const QString& status);

private:
  struct Queued {
    qs::TrainConfig config;
    bool synthetic;
  };

  void buildUi();
  void flush();
  void onFinished();
  void setControlsRunning(bool running);
  void showStatus(const QString& text, bool error = false);
  void updateRunItem(const TrainingRun& r);
  TrainingRun* currentHeatmapRun() const;
  void startNextQueued();

  QComboBox* m_dataset = nullptr;
  QSpinBox* m_epochs = nullptr;
  QSpinBox* m_batch = nullptr;
  QLineEdit* m_lr = nullptr;
  QComboBox* m_optimizer = nullptr;
  QComboBox* m_weights = nullptr;
  QComboBox* m_acts = nullptr;
  QComboBox* m_rounding = nullptr;
  QComboBox* m_scaling = nullptr;
  QCheckBox* m_steZero = nullptr;
  QComboBox* m_device = nullptr;
  QCheckBox* m_int8 = nullptr;
  QSpinBox* m_seed = nullptr;
  QPushButton* m_startButton = nullptr;
  QPushButton* m_pauseButton = nullptr;
  QPushButton* m_stopButton = nullptr;
  QToolButton* m_exportButton = nullptr;
  QComboBox* m_presetCombo = nullptr;
  QPushButton* m_presetButton = nullptr;
  QProgressBar* m_progress = nullptr;
  ElidedLabel* m_status = nullptr;
  QListWidget* m_runList = nullptr;
  QPushButton* m_clearButton = nullptr;
  TrainingPlots* m_plots = nullptr;

  std::vector<std::unique_ptr<TrainingRun>> m_runs;
  QList<Queued> m_queue;
  // The run: steps stream in, coalesced into one replot per ~40 ms; Stop also reaches Trainer::run's
  // cancel flag (the step in progress ends between two layers).
  JobRunner<qs::StepMetrics, qs::TrainResult> m_job;
  bool m_stopping = false;
  int m_nextId = 1;
  TrainingRun* m_active = nullptr;
};
