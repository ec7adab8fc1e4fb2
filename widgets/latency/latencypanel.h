// LatencyPanel: the "Latency" tab — a live fp32-vs-int8 GEMM sweep (qs::bench_gemm_cpu, and with a GPU
// qs::cuda::bench_gemm_cuda) plotted as median time, GOP/s and speedup over the fp32 baseline (fp32-eigen
// on the CPU, fp32-cublas on the GPU) against the square size M = K = N, one graph per kernel. A backend
// selector offers the CPU kernels, the CUDA kernels or both; without a GPU its CUDA entries are greyed
// out with "no GPU".
// Exercise: the Latency tab of `quantscope`, or `QT_QPA_PLATFORM=offscreen ./build/tst_latencypanel`.
#pragma once

#include <QList>
#include <QStringList>
#include <QVector>
#include <QWidget>

#include <memory>

#include "bench/gemm_bench.h"
#include "shared/jobrunner.h"
#include "shared/reportsection.h"

class QCustomPlot;
class QCPGraph;
class QComboBox;
class ElidedLabel;
class QLineEdit;
class QListWidget;
class JobControls;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QToolButton;

class LatencyPanel : public QWidget, public ReportSection {
  Q_OBJECT

public:
  // ReportSection: this tab's part of File → Export report (shared/reportsection.h).
  QString reportStage() const override;
  bool writeReportSection(const ReportSection::Context& ctx, QString* error) override;

  enum class Plot { Time, Gops, Speedup };
  enum class Backend { Cpu, Cuda, Both };

  // Whether the CUDA backend can run here (a CUDA build and a device), and the one-line reason if not.
  static bool cudaAvailable();
  static QString cudaStatus();  // the device, e.g. "NVIDIA H100 80GB HBM3 (sm_90, 81079 MiB)", or "no GPU: ..."
  Backend backend() const { return m_backend; }
  // Lists the kernels of `b` (the checked ones reset to the defaults). Returns false, changing nothing,
  // for Cuda / Both without a device or while a sweep runs.
  bool setBackend(Backend b);

  explicit LatencyPanel(QWidget* parent = nullptr);
  ~LatencyPanel() override;  // cancels a running sweep and waits for it

  // What the benchmark offers for the current backend (fp32-eigen first on the CPU; fp32-cublas and
  // int8-cublaslt, the baselines, first on the GPU), and the ones checked.
  QStringList availableKernels() const;
  QStringList selectedKernels() const;
  // The sizes field parsed: ascending, distinct, positive; empty with *error set when it does not parse.
  QList<int> sizes(QString* error = nullptr) const;
  int threads() const;

  bool isRunning() const { return m_job.isRunning(); }
  // Rows measured by the last sweep (also while it runs, up to the last coalesced update).
  const std::vector<qs::BenchGemmRow>& rows() const { return m_rows; }
  QString statusText() const;

  QCustomPlot* plot(Plot which) const;
  QCPGraph* graph(Plot which, const QString& kernel) const;  // nullptr if the kernel is not plotted

  // Atomic exports (QSaveFile): a plot to .png/.pdf/.svg by suffix, or .csv for the rows with the
  // columns of `quantscope-cli bench gemm`. On failure nothing is left at `path`; *error says why.
  bool exportPlot(Plot which, const QString& path, QString* error = nullptr, QSize size = {});
  bool exportCsv(const QString& path, QString* error = nullptr) const;
  QByteArray csv() const;  // the rows, as `bench gemm` prints them
  static QStringList plotSuffixes();  // "png", "pdf", and "svg" when built with Qt SVG
  void exportInteractive(Plot which);  // file dialog, then exportPlot

public slots:
  // Starts a sweep of square shapes on a worker thread (QtConcurrent + QPromise); the controls are
  // set to match. fp32-eigen (the baseline) is always measured. Returns false, with the reason in the
  // status line, when a sweep is already running or the input is empty/invalid (no sweepFinished then).
  bool runSweep(const QList<int>& sizes, const QStringList& kernels, int threads);
  void run();     // runSweep() with what the controls say (the Run button)
  void cancel();  // stops after the kernel being timed; sweepFinished follows

signals:
  void sweepStarted();
  void rowMeasured(const QString& kernel, int size);  // after the row reaches the plots
  void sweepFinished();

private:
  void buildUi();
  QCustomPlot* makePlot(const QString& title, const QString& yLabel);
  void resetPlots(const QStringList& kernels, int threads);
  void flushRows();  // pending rows -> graphs, then one queued replot
  void rescale();
  void onFinished();
  void setControlsRunning(bool running);
  void exportCsvInteractive();
  static QString plotTitle(Plot which);  // the title written into PDF and SVG files
  void showStatus(const QString& text, bool error = false);

  void populateKernels();

  QComboBox* m_backendCombo = nullptr;
  Backend m_backend = Backend::Cpu;
  QListWidget* m_kernelList = nullptr;
  QLineEdit* m_sizesEdit = nullptr;
  QSpinBox* m_threadsSpin = nullptr;
  QPushButton* m_runButton = nullptr;
  JobControls* m_controls = nullptr;  // Cancel and the progress bar (shared/jobcontrols.h)
  QToolButton* m_exportButton = nullptr;
  QProgressBar* m_progress = nullptr;
  ElidedLabel* m_status = nullptr;
  QCustomPlot* m_plots[3] = {nullptr, nullptr, nullptr};

  JobRunner<qs::BenchGemmRow> m_job;  // the sweep: rows stream in, coalesced into one replot per ~40 ms
  std::vector<qs::BenchGemmRow> m_rows;
  QStringList m_plotted;  // kernels with graphs, in graph order
  int m_sweepThreads = 1;
};
