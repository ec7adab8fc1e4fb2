// ObserversPanel: the "Observers" tab (issue "block-scale rules and observer dynamics", item 3). A stream of
// batches — synthetic with drift and spikes, or the rows of the current tensor — goes through several
// observers at once (current amax, MinMax, moving-average MinMax, histogram percentile, MSE search, and
// Transformer Engine's delayed scaling with its amax history), animated batch by batch: the clipping
// magnitude each observer chose, the SQNR of each batch under it and the values it clipped. Pause, step,
// speed. The numbers are qs::ObserveStream's, the same as `quantscope-cli observe` (and the CSV has the
// same columns). Each batch is computed on a worker thread (one at a time, in order: the observers have
// state), so the window stays responsive at any speed and batch size; the UI thread only plots the rows. Exercise: `QT_QPA_PLATFORM=offscreen ./build/tests/tst_observerspanel`.
#pragma once

#include <QElapsedTimer>
#include <QTimer>
#include <QWidget>

#include <memory>
#include <vector>

#include "quant/observe_stream.h"
#include "shared/jobrunner.h"
#include "shared/tensordata.h"
#include "shared/reportsection.h"

class QCheckBox;
class QComboBox;
class QCustomPlot;
class QDoubleSpinBox;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QToolButton;
class QSpinBox;
class ElidedLabel;
class FormatPicker;

class ObserversPanel : public QWidget, public ReportSection {
  Q_OBJECT

public:
  // ReportSection: this tab's part of File → Export report (shared/reportsection.h).
  QString reportStage() const override;
  bool writeReportSection(const ReportSection::Context& ctx, QString* error) override;

  enum class Plot { Scale, Sqnr, Clipped };
  static constexpr int kPlotCount = 3;

  // What is streamed and watched; the text fields use the CLI's spellings (`observe --observers ...`).
  struct Config {
    QString format = QStringLiteral("e4m3fn");
    QString observers = QStringLiteral("current,minmax,movavg:0.01,p99.99,mse,delayed:16:max:0");
    int batches = 120;
    bool fromTensor = false;  // the rows of the current tensor (axis 0 split into `batches` parts)
    qs::SyntheticStream stream;
    bool operator==(const Config&) const;
  };

  explicit ObserversPanel(QWidget* parent = nullptr);

  // Checks everything first (format, observer specs, batches vs the tensor's rows); false with *error and
  // nothing changed when something is wrong. Does not start: start() does.
  bool setConfig(const Config& c, QString* error = nullptr);
  Config config() const;
  // The batch source for `fromTensor`; a running stream of rows restarts on the new tensor.
  void setTensor(const TensorData& tensor);

  bool start(QString* error = nullptr);  // from batch 0 with the controls' configuration
  void setPaused(bool paused);
  void stepOnce();                       // one batch (paused or not started: starts paused)
  bool isRunning() const { return m_stream != nullptr && m_next < m_batches; }
  bool isPaused() const { return m_paused; }
  // Runs the event loop until every batch is done (tests, reports); false on timeout.
  bool runToEnd(int ms);
  // Batches per second, 0 = as fast as the time slices allow.
  void setSpeed(int batchesPerSecond);

  const std::vector<qs::ObserveRow>& rows() const { return m_rows; }
  std::size_t batchesDone() const { return m_next; }
  QStringList observerNames() const;
  QCustomPlot* plot(Plot which) const { return m_plots[int(which)]; }
  QString statusText() const;
  // "batch,observer,batch_amax,clip,scale,sqnr_db,clipped" (quantscope-cli observe's columns).
  QByteArray csv() const;
  QString title(Plot which) const;
  static QString stem(Plot which);  // "observer-scale", "observer-sqnr", "observer-clipped"
  bool exportAll(const QString& dir, QString* error = nullptr);

signals:
  void finished();
  void message(const QString& text);

private:
  void buildUi();
  void syncControls(const Config& c);
  QString observerSpecText() const;  // from the check boxes and their parameters
  struct BatchResult {
    int generation = 0;
    std::vector<qs::ObserveRow> rows;
    QString error;
  };
  static bool batchOf(const Config& c, const TensorData& t, std::size_t batches, std::size_t b, std::vector<float>* out,
                      QString* error);
  void tick();
  void launch();  // the next batch on a worker, unless one is in flight
  void onBatchDone();
  void apply(const std::vector<qs::ObserveRow>& rows);
  void clearPlots();
  void setStatus(const QString& text, bool error = false);

  Config m_config;
  TensorData m_tensor;
  std::shared_ptr<qs::ObserveStream> m_stream;  // shared with the batch in flight
  JobRunner<std::monostate, BatchResult> m_work;  // the batch in flight (one at a time, in order)
  int m_generation = 0;  // a start() makes results of the batch in flight stale
  std::vector<qs::ObserverSpec> m_specs;  // the stream's, for names after it ends
  std::vector<qs::ObserveRow> m_rows;
  std::size_t m_next = 0, m_batches = 0;
  bool m_paused = false;
  int m_speed = 20;
  double m_credit = 0;  // batches owed to the speed setting
  QTimer m_timer;
  QElapsedTimer m_clock;

  FormatPicker* m_format = nullptr;
  QComboBox* m_source = nullptr;
  QComboBox* m_dist = nullptr;
  QSpinBox* m_batchSize = nullptr;
  QSpinBox* m_batchCount = nullptr;
  QDoubleSpinBox* m_drift = nullptr;
  QLineEdit* m_spikes = nullptr;
  QDoubleSpinBox* m_spikeScale = nullptr;
  QSpinBox* m_seed = nullptr;
  QCheckBox* m_useCurrent = nullptr;
  QCheckBox* m_useMinMax = nullptr;
  QCheckBox* m_useMovAvg = nullptr;
  QDoubleSpinBox* m_movAvgC = nullptr;
  QCheckBox* m_usePercentile = nullptr;
  QDoubleSpinBox* m_percentile = nullptr;
  QCheckBox* m_useMse = nullptr;
  QCheckBox* m_useDelayed = nullptr;
  QSpinBox* m_history = nullptr;
  QComboBox* m_historyRule = nullptr;
  QSpinBox* m_margin = nullptr;
  ElidedLabel* m_specLabel = nullptr;
  QComboBox* m_speedBox = nullptr;
  QPushButton* m_startButton = nullptr;
  QPushButton* m_pauseButton = nullptr;
  QPushButton* m_stepButton = nullptr;
  QToolButton* m_exportButton = nullptr;
  QProgressBar* m_progress = nullptr;
  ElidedLabel* m_status = nullptr;
  QCustomPlot* m_plots[kPlotCount] = {};
};
