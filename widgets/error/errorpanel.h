// ErrorPanel: the Error tab. For the selected tensor and every scheme: the value histogram with each
// format's grid under it, the round-trip error histogram (absolute or relative; rounding and clipping
// apart) and a sortable metrics table. Results come from the tab's JobRunner in its latest-wins mode
// (restart(): a new request supersedes the one in flight mid-scheme) and are cached per scheme, so editing
// the scheme list recomputes only what is new and never blocks the UI.
// Exercise: the Error tab of `quantscope`, `QT_QPA_PLATFORM=offscreen ./build/tests/tst_errorpanel`.
//
//   panel->setTensor(data);                       // TensorData from the setup dock
//   panel->setSchemes({qs::parse_scheme("int8/channel:0"), qs::parse_scheme("e4m3fn/tensor")});
//   panel->waitForIdle(10000);                    // scripts and tests only
//   panel->exportReport(dir, &error);             // error-histogram.*, value-histogram.*, metrics.csv
#pragma once

#include <QElapsedTimer>
#include <QHash>
#include <QStringList>
#include <QTimer>
#include <QWidget>

#include <memory>
#include <vector>

#include "errorhistogramplot.h"
#include "quant/error_view.h"
#include "shared/jobrunner.h"
#include "shared/tensordata.h"
#include "shared/reportsection.h"

class ErrorMetricsTable;
class JobControls;
class QCheckBox;
class QComboBox;
class ElidedLabel;
class QPushButton;
class QTableWidget;
class QToolButton;
class ValueHistogramPlot;

class QCustomPlot;

class ErrorPanel : public QWidget, public ReportSection {
  Q_OBJECT

public:
  // ReportSection: this tab's part of File → Export report (shared/reportsection.h).
  QString reportStage() const override;
  bool writeReportSection(const ReportSection::Context& ctx, QString* error) override;

  using ErrorMode = ErrorHistogramPlot::Mode;

  explicit ErrorPanel(QWidget* parent = nullptr);
  ~ErrorPanel() override;  // cancels the computation and waits for the worker to leave it

  void setTensor(const TensorData& tensor);
  const TensorData& tensor() const { return m_tensor; }
  // Each scheme carries its EncodeOptions (rounding, overflow, seed); results are cached per
  // (scheme text, rounding, overflow, seed) for the current tensor.
  void setSchemes(const std::vector<qs::Scheme>& schemes);
  const std::vector<qs::Scheme>& schemes() const { return m_schemes; }

  void setErrorMode(ErrorMode mode);
  ErrorMode errorMode() const;
  void setLogCounts(bool on);
  bool logCounts() const;
  void setValueBins(int bins);  // 16..4096; recomputes
  int valueBins() const { return m_options.value_bins; }
  void setGridGroup(qs::GridGroup group);  // which group's grid channel/block schemes draw; recomputes
  qs::GridGroup gridGroup() const { return m_options.grid_group; }
  void setThreads(int threads);  // worker threads per computation (default: all cores but one)
  int threads() const { return m_options.threads; }

  bool isBusy() const { return m_busy; }
  // Runs the event loop until the computation in flight has reached the plots (ms < 0: no limit).
  // Returns false on timeout.
  bool waitForIdle(int ms);

  // The result for schemes()[index], or null while pending / after an error (then errorText says why).
  std::shared_ptr<const qs::ErrorView> view(int index) const;
  QString errorText(int index) const;
  QString statusText() const;

  ValueHistogramPlot* valuePlot() const { return m_valuePlot; }
  ErrorHistogramPlot* errorPlot() const { return m_errorPlot; }
  // A weight of a pre-quantized checkpoint: how many elements hold each stored code (shown beside the
  // histograms only for such a tensor). Codes on the x axis in value order.
  QCustomPlot* storedCodesPlot() const { return m_codesPlot; }
  ErrorMetricsTable* metricsTable() const { return m_table; }

  // Writes into `dir` (which must exist): error-histogram.{png,pdf,svg,csv} (absolute error),
  // relative-error-histogram.*, value-histogram.* and metrics.csv, after waiting for any running
  // computation. All files are written to a temporary folder in `dir` first and moved into place only
  // when every one succeeded, so a failure leaves nothing behind; *error says why.
  bool exportReport(const QString& dir, QString* error = nullptr);
  static QStringList reportFiles();  // the names exportReport writes

public slots:
  void cancel();     // stops the computation; the schemes done so far stay shown
  void exportInteractive();  // the Export menu at the cursor: either plot, the metrics, or everything
  void recompute();  // computes what the cache lacks (setTensor/setSchemes call it)

signals:
  void busyChanged(bool busy);
  void progressChanged(int done, int total);  // per mille of the current computation: (0..1000, 1000)
  void message(const QString& text);          // one line for the log dock
  void viewsUpdated();                        // the plots and table show the latest results

private:
  void buildUi();
  void setBusy(bool busy);
  void scheduleRefresh();
  void refresh();
  void onRows();
  void onJobFinished();
  void onFinished();
  void onCancelled();
  void clearCache();
  QString keyOf(const qs::Scheme& s) const;
  QString labelOf(const qs::Scheme& s) const;
  QString tensorLabel() const;

  // What the worker streams: the view of the request's scheme `index`, or why it failed (e.g. a channel
  // axis out of range). Shared, so a large view is not copied on its way to the cache.
  struct Row {
    int index = 0;
    std::shared_ptr<const qs::ErrorView> view;
    QString error;
  };
  JobRunner<Row> m_job;
  std::shared_ptr<std::vector<float>> m_scratch = std::make_shared<std::vector<float>>();  // one job at a time uses it
  TensorData m_tensor;
  std::vector<qs::Scheme> m_schemes;
  qs::ErrorViewOptions m_options;
  QHash<QString, std::shared_ptr<const qs::ErrorView>> m_cache;
  QHash<QString, QString> m_errors;
  QStringList m_pendingKeys;  // the keys of the request in flight, by its index
  bool m_busy = false;
  bool m_cancelled = false;  // the last computation was cancelled: missing views are not pending
  QElapsedTimer m_clock;
  QTimer m_refreshTimer;  // ~40 ms: requests made close together (a slider dragged) become one replot

  ValueHistogramPlot* m_valuePlot = nullptr;
  ErrorHistogramPlot* m_errorPlot = nullptr;
  QCustomPlot* m_codesPlot = nullptr;
  void showStoredCodes();
  ErrorMetricsTable* m_table = nullptr;
  QComboBox* m_modeBox = nullptr;
  QComboBox* m_gridBox = nullptr;
  QComboBox* m_binsBox = nullptr;
  QCheckBox* m_logBox = nullptr;
  JobControls* m_controls = nullptr;  // progress and Cancel (shared/jobcontrols.h)
  QPushButton* m_recomputeButton = nullptr;  // shown after Cancel while schemes are missing
  QToolButton* m_exportButton = nullptr;
  ElidedLabel* m_status = nullptr;
};
