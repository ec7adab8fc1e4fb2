// LatencyPanel: backend/kernel/size/thread controls, a sweep over qs::bench_gemm_cpu (and
// qs::cuda::bench_gemm_cuda with a GPU) on a JobRunner whose rows stream into three log-log plots coalesced
// every ~40 ms, and atomic PNG/PDF/SVG/CSV export through plotexport.
// Exercise: the Latency tab of `quantscope`, `QT_QPA_PLATFORM=offscreen ./build/tst_latencypanel`.
#include "latencypanel.h"
#include "shared/palette.h"
#include "shared/theme.h"

#include "shared/elidedlabel.h"
#include "shared/jobcontrols.h"
#include "shared/plotstyle.h"

#include "shared/plotexport.h"

#include <QComboBox>
#include <QDir>
#include <QEventLoop>
#include <QFormLayout>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QThread>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>

#include "cuda/device.h"
#include "gemm/gemm.h"
#include "cuda/bench_gemm_cuda.cuh"

namespace {

const char* const kCsvHeader = qs::bench_gemm_csv_header();

// The same formatting as `quantscope-cli bench gemm`, so files from either compare line by line.
QByteArray csvRow(const qs::BenchGemmRow& r) { return QByteArray::fromStdString(qs::bench_gemm_csv_row(r)); }

double plotValue(LatencyPanel::Plot which, const qs::BenchGemmRow& r) {
  switch (which) {
    case LatencyPanel::Plot::Time: return r.median_ms;
    case LatencyPanel::Plot::Gops: return r.gops;
    case LatencyPanel::Plot::Speedup: return r.speedup_vs_fp32;
  }
  return 0;
}

// A log range around [lo, hi] with a margin, wide enough that a single point sits in the middle.
QCPRange logRange(double lo, double hi, double margin) {
  if (!(lo > 0) || !(hi >= lo)) return QCPRange(0.1, 10);
  return QCPRange(lo / margin, hi * margin);
}

QStringList cudaKernelNames() {
  QStringList out;
  if (LatencyPanel::cudaAvailable())
    for (const std::string& n : qs::cuda::bench_gemm_cuda_kernels()) out << QString::fromStdString(n);
  return out;
}

// Measured in every sweep that uses their backend: the baselines of the speedup plot and of the int8 ratios.
bool alwaysOn(const QString& k) {
  return k == u"fp32-eigen" || k == u"fp32-onednn" || k == u"fp32-cublas" || k == u"int8-cublaslt";
}


}  // namespace

LatencyPanel::LatencyPanel(QWidget* parent) : QWidget(parent) {
  buildUi();
  connect(&m_job, &JobRunnerBase::rowsReady, this, &LatencyPanel::flushRows);
  connect(&m_job, &JobRunnerBase::finished, this, &LatencyPanel::onFinished);
  resetPlots({}, threads());
}

LatencyPanel::~LatencyPanel() { m_job.cancelAndWait(); }

bool LatencyPanel::cudaAvailable() { return qs::cuda::device_info().available; }

QString LatencyPanel::cudaStatus() { return QString::fromStdString(qs::cuda::device_info().message); }

bool LatencyPanel::setBackend(Backend b) {
  if (isRunning() || (b != Backend::Cpu && !cudaAvailable())) return false;
  m_backend = b;
  if (m_backendCombo && m_backendCombo->currentIndex() != int(b)) {
    const QSignalBlocker block(m_backendCombo);
    m_backendCombo->setCurrentIndex(int(b));
  }
  populateKernels();
  // The speedup plot's baseline follows the backend.
  if (auto* title = qobject_cast<QCPTextElement*>(m_plots[int(Plot::Speedup)]->plotLayout()->element(0, 0))) {
    const QString tail = plotstyle::fullText(title).section(QStringLiteral("  ·  "), 1);
    const QString head = b == Backend::Cpu    ? QStringLiteral("Speedup over the best fp32 (eigen, onednn)")
                         : b == Backend::Cuda ? QStringLiteral("Speedup over fp32-cublas")
                                              : QStringLiteral("Speedup over fp32 (eigen on the CPU, cublas on the GPU)");
    plotstyle::setText(title, tail.isEmpty() ? head : head + QStringLiteral("  ·  ") + tail);
    m_plots[int(Plot::Speedup)]->replot(QCustomPlot::rpQueuedReplot);
  }
  return true;
}

void LatencyPanel::populateKernels() {
  m_kernelList->clear();
  auto add = [&](const QString& name, bool on, const QString& tip) {
    auto* item = new QListWidgetItem(name, m_kernelList);
    item->setFlags(alwaysOn(name) ? Qt::ItemIsEnabled : Qt::ItemIsEnabled | Qt::ItemIsUserCheckable);
    item->setCheckState(on || alwaysOn(name) ? Qt::Checked : Qt::Unchecked);
    if (!tip.isEmpty()) item->setToolTip(tip);
  };
  if (m_backend != Backend::Cuda) {
    const auto& levels = qs::available_gemm_levels();
    const QString best = levels.empty() ? QString()
                                        : QStringLiteral("int8-") + QString::fromLatin1(qs::gemm_level_name(levels.back()));
    for (const std::string& n : qs::bench_gemm_kernels()) {
      const QString name = QString::fromStdString(n);
      QString tip;
      if (name == u"fp32-eigen") tip = QStringLiteral("The float baseline (Eigen sgemm): always measured");
      if (name == u"fp32-onednn")
        tip = QStringLiteral("oneDNN's sgemm: always measured; the speedups are against the faster of it and Eigen");
      else if (name.contains(u"onednn")) tip = QStringLiteral("Comparison: %1").arg(QString::fromStdString(qs::bench_gemm_comparison()));
      else if (name == u"int8-ref" || name.startsWith(u"int8-generic")) tip = QStringLiteral("Slow scalar kernel: keep the sizes small");
      add(name, name == best || name == best + QStringLiteral("-e2e"), tip);
    }
  }
  if (m_backend != Backend::Cpu) {
    const QStringList names = cudaKernelNames();
    const QString best = names.contains(QStringLiteral("int8-wgmma")) ? QStringLiteral("int8-wgmma") : QStringLiteral("int8-mma");
    for (const QString& name : names) {
      QString tip = QStringLiteral("GPU: %1").arg(cudaStatus());
      if (name == u"fp32-cublas") tip = QStringLiteral("The GPU float baseline (cuBLAS sgemm): always measured");
      else if (name == u"int8-cublaslt") tip = QStringLiteral("NVIDIA's int8 GEMM, the line our int8 kernels are held to: always measured");
      add(name, name == best || name == best + QStringLiteral("-dq"), tip);
    }
  }
}

void LatencyPanel::buildUi() {
  m_backendCombo = new QComboBox;
  m_backendCombo->setObjectName(QStringLiteral("backendCombo"));
  m_backendCombo->addItems({QStringLiteral("CPU"), QStringLiteral("CUDA"), QStringLiteral("CPU + CUDA")});
  if (!cudaAvailable()) {
    // Greyed out, saying why: no CUDA build, no driver or no device.
    auto* model = qobject_cast<QStandardItemModel*>(m_backendCombo->model());
    for (int i : {1, 2}) {
      QStandardItem* item = model->item(i);
      item->setText(item->text() + QStringLiteral(" (no GPU)"));
      item->setEnabled(false);
      item->setToolTip(cudaStatus());
    }
    m_backendCombo->setToolTip(cudaStatus());
  } else {
    m_backendCombo->setToolTip(QStringLiteral("GPU: %1").arg(cudaStatus()));
  }
  connect(m_backendCombo, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (!setBackend(Backend(i))) {
      const QSignalBlocker block(m_backendCombo);
      m_backendCombo->setCurrentIndex(int(m_backend));
    }
  });
  m_kernelList = new QListWidget;
  m_kernelList->setObjectName(QStringLiteral("kernelList"));
  m_kernelList->setToolTip(QStringLiteral("Kernels to time. fp32-eigen / fp32-cublas are the baselines and are always "
                                          "measured; -dq adds the fused dequantization, -e2e also quantizes the activations"));
  populateKernels();
  m_kernelList->setMinimumHeight(120);

  m_sizesEdit = new QLineEdit(QStringLiteral("256,512,1024"));
  m_sizesEdit->setObjectName(QStringLiteral("sizesEdit"));
  m_sizesEdit->setToolTip(QStringLiteral("Square sizes M = K = N, comma separated"));
  m_threadsSpin = new QSpinBox;
  m_threadsSpin->setObjectName(QStringLiteral("threadsSpin"));
  m_threadsSpin->setRange(1, std::max(1, QThread::idealThreadCount()));
  m_threadsSpin->setValue(1);
  m_threadsSpin->setToolTip(QStringLiteral("Threads for every kernel of the sweep"));

  m_runButton = new QPushButton(QStringLiteral("Run"));
  m_runButton->setObjectName(QStringLiteral("runButton"));
  m_controls = new JobControls(&m_job, this);  // the bar stays: it shows how far the last sweep got
  connect(m_controls, &JobControls::cancelled, this,
          [this] { showStatus(QStringLiteral("Cancelling after the kernel being timed…")); });
  m_controls->cancelButton()->setObjectName(QStringLiteral("cancelButton"));
  m_progress = m_controls->progressBar();
  m_progress->setObjectName(QStringLiteral("sweepProgress"));
  m_progress->setRange(0, 1);
  m_progress->setValue(0);
  m_progress->setFormat(QStringLiteral("%v / %m kernel runs"));
  m_status = new ElidedLabel(QStringLiteral("Each kernel is checked against a reference, then timed."));
  m_status->setObjectName(QStringLiteral("sweepStatus"));
  m_status->setWordWrap(true);  // errors quote the sizes and kernels typed: never widen the tab
  m_status->setMaximumLines(3);
  m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);

  QMenu* menu = nullptr;
  m_exportButton = plotexport::makeExportButton(&menu);
  menu->addAction(QStringLiteral("Time plot…"), this, [this] { exportInteractive(Plot::Time); });
  menu->addAction(QStringLiteral("GOP/s plot…"), this, [this] { exportInteractive(Plot::Gops); });
  menu->addAction(QStringLiteral("Speedup plot…"), this, [this] { exportInteractive(Plot::Speedup); });
  menu->addSeparator();
  menu->addAction(QStringLiteral("Rows as CSV…"), this, &LatencyPanel::exportCsvInteractive);

  auto* form = new QFormLayout;
  form->addRow(QStringLiteral("Backend:"), m_backendCombo);
  form->addRow(QStringLiteral("Sizes:"), m_sizesEdit);
  form->addRow(QStringLiteral("Threads:"), m_threadsSpin);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(m_runButton);
  buttons->addWidget(m_controls->cancelButton());
  buttons->addWidget(m_exportButton);

  auto* controls = new QVBoxLayout;
  controls->addWidget(new QLabel(QStringLiteral("Kernels:")));
  controls->addWidget(m_kernelList, 1);
  controls->addLayout(form);
  controls->addLayout(buttons);
  controls->addWidget(m_progress);
  controls->addWidget(m_status);
  auto* side = new QWidget;
  side->setLayout(controls);
  side->setFixedWidth(250);
  controls->setContentsMargins(0, 0, 0, 0);

  m_plots[int(Plot::Time)] = makePlot(QStringLiteral("Median time per GEMM"), QStringLiteral("median time (ms)"));
  m_plots[int(Plot::Gops)] = makePlot(QStringLiteral("Throughput"), QStringLiteral("GOP/s (2·M·N·K / time)"));
  m_plots[int(Plot::Speedup)] = makePlot(QStringLiteral("Speedup over the best fp32 (eigen, onednn)"), QStringLiteral("speedup (×)"));
  m_plots[int(Plot::Time)]->setObjectName(QStringLiteral("timePlot"));
  m_plots[int(Plot::Gops)]->setObjectName(QStringLiteral("gopsPlot"));
  m_plots[int(Plot::Speedup)]->setObjectName(QStringLiteral("speedupPlot"));
  // Speedups read best at powers of two (0.5×, 1×, 2×, 4×).
  qSharedPointerCast<QCPAxisTickerLog>(m_plots[int(Plot::Speedup)]->yAxis->ticker())->setLogBase(2);
  qSharedPointerCast<QCPAxisTickerLog>(m_plots[int(Plot::Speedup)]->yAxis->ticker())->setSubTickCount(1);

  auto* plots = new QGridLayout;
  plots->addWidget(m_plots[int(Plot::Time)], 0, 0);
  plots->addWidget(m_plots[int(Plot::Gops)], 0, 1);
  plots->addWidget(m_plots[int(Plot::Speedup)], 1, 0, 1, 2);
  plots->setSpacing(4);

  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(10, 8, 10, 4);
  layout->addWidget(side);
  layout->addLayout(plots, 1);

  connect(m_runButton, &QPushButton::clicked, this, &LatencyPanel::run);
}

QCustomPlot* LatencyPanel::makePlot(const QString& title, const QString& yLabel) {
  auto* p = new QCustomPlot;
  p->setMinimumSize(300, 180);
  p->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  plotstyle::addTitle(p, title);
  for (QCPAxis* a : {p->xAxis, p->yAxis}) {
    a->setScaleType(QCPAxis::stLogarithmic);
    auto ticker = QSharedPointer<QCPAxisTickerLog>::create();
    ticker->setLogBase(a == p->xAxis ? 2 : 10);
    ticker->setSubTickCount(a == p->xAxis ? 0 : 8);
    a->setTicker(ticker);
    a->grid()->setPen(QPen(QColor(220, 220, 220), 0, Qt::DotLine));
    a->grid()->setSubGridVisible(a == p->yAxis);
    a->grid()->setSubGridPen(QPen(QColor(238, 238, 238), 0, Qt::DotLine));
    a->setLabelFont(QFont(font().family(), 9));
  }
  p->xAxis->setNumberFormat(QStringLiteral("f"));
  p->xAxis->setNumberPrecision(0);
  p->yAxis->setNumberFormat(QStringLiteral("gb"));
  p->xAxis->setLabel(QStringLiteral("size M = K = N"));
  p->yAxis->setLabel(yLabel);
  plotstyle::styleLegend(p);
  // Every curve rises with the size, and rescale() leaves headroom above them: the top left stays free.
  p->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);
  connect(p, &QCustomPlot::mouseDoubleClick, this, &LatencyPanel::rescale);
  return p;
}

QStringList LatencyPanel::availableKernels() const {
  QStringList out;
  for (int i = 0; i < m_kernelList->count(); ++i) out << m_kernelList->item(i)->text();
  return out;
}

QStringList LatencyPanel::selectedKernels() const {
  QStringList out;
  for (int i = 0; i < m_kernelList->count(); ++i)
    if (m_kernelList->item(i)->checkState() == Qt::Checked) out << m_kernelList->item(i)->text();
  return out;
}

QList<int> LatencyPanel::sizes(QString* error) const {
  QList<int> out;
  const QStringList parts = m_sizesEdit->text().split(QRegularExpression(QStringLiteral("[,;\\s]+")), Qt::SkipEmptyParts);
  for (const QString& s : parts) {
    bool ok = false;
    const int v = s.toInt(&ok);
    if (!ok || v <= 0 || v > 16384) {
      if (error) *error = QStringLiteral("size '%1' is not an integer in 1..16384").arg(s);
      return {};
    }
    out << v;
  }
  if (out.isEmpty() && error) *error = QStringLiteral("no sizes given (e.g. 256,512,1024)");
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int LatencyPanel::threads() const { return m_threadsSpin->value(); }

QString LatencyPanel::statusText() const { return m_status->text(); }

QCustomPlot* LatencyPanel::plot(Plot which) const { return m_plots[int(which)]; }

QCPGraph* LatencyPanel::graph(Plot which, const QString& kernel) const {
  const qsizetype i = m_plotted.indexOf(kernel);
  return i < 0 ? nullptr : m_plots[int(which)]->graph(int(i));
}

void LatencyPanel::showStatus(const QString& text, bool error) {
  m_status->setStyleSheet(error ? theme::errorCss(this) : QString());
  m_status->setText(text);
}

void LatencyPanel::run() {
  QString error;
  const QList<int> s = sizes(&error);
  if (s.isEmpty()) {
    showStatus(error, true);
    return;
  }
  runSweep(s, selectedKernels(), threads());
}

bool LatencyPanel::runSweep(const QList<int>& sizeList, const QStringList& kernelList, int threadCount) {
  if (isRunning()) {
    showStatus(QStringLiteral("A sweep is already running"), true);
    return false;
  }
  QList<int> s;
  for (int v : sizeList)
    if (v > 0 && !s.contains(v)) s << v;
  std::sort(s.begin(), s.end());
  const QStringList offered = availableKernels();
  QStringList kernels;  // the baselines first, then benchmark order, so legends read the same every time
  for (const QString& k : offered)
    if (alwaysOn(k)) kernels << k;
  for (const QString& k : offered)
    if (!alwaysOn(k) && kernelList.contains(k)) kernels << k;
  QStringList unknown;
  for (const QString& k : kernelList)
    if (!offered.contains(k)) unknown << k;
  if (s.isEmpty() || !unknown.isEmpty()) {
    showStatus(s.isEmpty() ? QStringLiteral("No valid sizes to run")
                           : QStringLiteral("Not available here: %1").arg(unknown.join(QStringLiteral(", "))),
               true);
    return false;
  }
  threadCount = std::clamp(threadCount, 1, m_threadsSpin->maximum());

  // The controls show what runs, so a later Run repeats it.
  QStringList sizeText;
  for (int v : s) sizeText << QString::number(v);
  m_sizesEdit->setText(sizeText.join(u','));
  m_threadsSpin->setValue(threadCount);
  for (int i = 0; i < m_kernelList->count(); ++i) {
    QListWidgetItem* item = m_kernelList->item(i);
    item->setCheckState(kernels.contains(item->text()) ? Qt::Checked : Qt::Unchecked);
  }

  qs::BenchGemmConfig cfg;
  for (int v : s) cfg.shapes.push_back({.M = v, .K = v, .N = v});
  cfg.threads = threadCount;
  qs::BenchGemmConfig gpu = cfg;  // the CUDA kernels of the same sweep
  const QStringList onGpu = cudaKernelNames();
  for (const QString& k : kernels) (onGpu.contains(k) ? gpu : cfg).kernels.push_back(k.toStdString());
  const bool runCpu = !cfg.kernels.empty(), runGpu = !gpu.kernels.empty();

  m_rows.clear();
  m_sweepThreads = threadCount;
  resetPlots(kernels, threadCount);
  m_progress->setRange(0, int(s.size() * kernels.size()));
  m_progress->setValue(0);
  setControlsRunning(true);
  showStatus(QStringLiteral("Running %1 kernels × %2 sizes on %3 thread(s)…")
                 .arg(kernels.size())
                 .arg(s.size())
                 .arg(threadCount));

  m_job.start([cfg, gpu, runCpu, runGpu](JobRunner<qs::BenchGemmRow>::Sink& sink) {
    auto onRow = [&](const qs::BenchGemmRow& row) { sink.post(row); };
    // The CPU part first, then the GPU part; progress counts kernel runs of both.
    const std::size_t cpuRuns = runCpu ? cfg.shapes.size() * cfg.kernels.size() : 0;
    const std::size_t gpuRuns = runGpu ? gpu.shapes.size() * gpu.kernels.size() : 0;
    std::size_t offset = 0;
    auto progress = [&](std::size_t done, std::size_t) {
      sink.setProgressRange(0, int(cpuRuns + gpuRuns));
      sink.setProgressValue(int(offset + done));
      return !sink.isCanceled();
    };
    if (runCpu) qs::bench_gemm_cpu(cfg, onRow, progress);
    offset = cpuRuns;
    if (runGpu && !sink.isCanceled()) qs::cuda::bench_gemm_cuda(gpu, onRow, {}, progress);
  });
  emit sweepStarted();
  return true;
}

void LatencyPanel::cancel() {
  if (!isRunning() || m_job.isCancelled()) return;
  m_controls->cancel();  // the status line follows (JobControls::cancelled)
}

void LatencyPanel::resetPlots(const QStringList& kernels, int threadCount) {
  m_plotted = kernels;
  for (int p = 0; p < 3; ++p) {
    QCustomPlot* plot = m_plots[p];
    plot->clearGraphs();
    for (int i = 0; i < kernels.size(); ++i) {
      QCPGraph* g = plot->addGraph();
      g->setName(kernels[i]);
      const QColor c = palette::color(i);
      QPen pen(c, kernels[i] == u"fp32-eigen" || kernels[i] == u"fp32-cublas" ? 2.4 : 1.8);
      if (kernels[i].endsWith(u"-e2e")) pen.setStyle(Qt::DashLine);
      if (kernels[i].endsWith(u"-dq")) pen.setStyle(Qt::DashDotLine);
      g->setPen(pen);
      g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, c, 6));
    }
    plot->legend->setVisible(!kernels.isEmpty());
    if (auto* title = qobject_cast<QCPTextElement*>(plot->plotLayout()->element(0, 0))) {
      QString text = plotstyle::fullText(title).section(QStringLiteral("  ·  "), 0, 0);
      if (!kernels.isEmpty()) text += QStringLiteral("  ·  %1 thread%2").arg(threadCount).arg(threadCount == 1 ? "" : "s");
      plotstyle::setText(title, text);
    }
  }
  rescale();
}

void LatencyPanel::flushRows() {
  const std::vector<qs::BenchGemmRow> fresh = m_job.takeRows();
  if (fresh.empty()) return;
  for (const qs::BenchGemmRow& r : fresh) {
    m_rows.push_back(r);
    const QString kernel = QString::fromStdString(r.kernel);
    const qsizetype gi = m_plotted.indexOf(kernel);
    if (gi < 0) continue;
    for (Plot which : {Plot::Time, Plot::Gops, Plot::Speedup}) {
      const double v = plotValue(which, r);
      if (v > 0 && std::isfinite(v)) m_plots[int(which)]->graph(int(gi))->addData(r.M, v);
    }
  }
  rescale();
  const qs::BenchGemmRow& last = fresh.back();
  showStatus(QStringLiteral("%1 at %2: %3 ms, %4 GOP/s, %5× fp32")
                 .arg(QString::fromStdString(last.kernel), QString::number(last.M) + QStringLiteral("³"))
                 .arg(last.median_ms, 0, 'g', 4)
                 .arg(last.gops, 0, 'f', 1)
                 .arg(last.speedup_vs_fp32, 0, 'f', 2));
  for (const qs::BenchGemmRow& r : fresh) emit rowMeasured(QString::fromStdString(r.kernel), r.M);
}

void LatencyPanel::rescale() {
  for (QCustomPlot* plot : m_plots) {
    double xlo = 0, xhi = 0, ylo = 0, yhi = 0;
    bool any = false;
    for (int i = 0; i < plot->graphCount(); ++i)
      for (auto it = plot->graph(i)->data()->constBegin(); it != plot->graph(i)->data()->constEnd(); ++it) {
        if (!any) {
          xlo = xhi = it->key;
          ylo = yhi = it->value;
          any = true;
        }
        xlo = std::min(xlo, it->key);
        xhi = std::max(xhi, it->key);
        ylo = std::min(ylo, it->value);
        yhi = std::max(yhi, it->value);
      }
    if (!any) {
      plot->xAxis->setRange(128, 2048);
      plot->yAxis->setRange(plot == m_plots[int(Plot::Speedup)] ? QCPRange(0.5, 8) : QCPRange(0.1, 100));
    } else {
      plot->xAxis->setRange(logRange(xlo, xhi, 1.25));
      if (plot == m_plots[int(Plot::Speedup)]) {  // keep 1× (fp32) and a little headroom in view
        ylo = std::min(ylo, 1.0);
        yhi = std::max(yhi, 1.0);
      }
      // Room at the top for the legend.
      const QCPRange r = logRange(ylo, yhi, 1.3);
      plot->yAxis->setRange(r.lower, r.upper * std::pow(r.upper / r.lower, 0.35));
    }
    plot->replot(QCustomPlot::rpQueuedReplot);
  }
}

void LatencyPanel::onFinished() {  // the last rows are plotted already (JobRunner's final rowsReady)
  setControlsRunning(false);
  const QString error = m_job.error();
  if (!error.isEmpty()) {
    showStatus(QStringLiteral("Stopped: %1").arg(error), true);
  } else if (m_job.isCancelled()) {
    showStatus(QStringLiteral("Cancelled after %1 row%2").arg(m_rows.size()).arg(m_rows.size() == 1 ? "" : "s"));
  } else {
    m_progress->setValue(m_progress->maximum());
    showStatus(QStringLiteral("Done: %1 rows, every kernel checked before it was timed").arg(m_rows.size()));
  }
  emit sweepFinished();
}

void LatencyPanel::setControlsRunning(bool running) {
  m_runButton->setEnabled(!running);
  m_kernelList->setEnabled(!running);
  m_backendCombo->setEnabled(!running);
  m_sizesEdit->setEnabled(!running);
  m_threadsSpin->setEnabled(!running);
}

QStringList LatencyPanel::plotSuffixes() { return plotexport::imageSuffixes(); }

QByteArray LatencyPanel::csv() const {
  QByteArray buf(kCsvHeader);
  for (const qs::BenchGemmRow& r : m_rows) buf += csvRow(r);
  return buf;
}

QString LatencyPanel::plotTitle(Plot which) {
  static const char* const titles[] = {"GEMM time", "GEMM throughput", "GEMM speedup"};
  return QStringLiteral("QuantScope %1").arg(QString::fromLatin1(titles[int(which)]));
}

bool LatencyPanel::exportPlot(Plot which, const QString& path, QString* error, QSize size) {
  return plotexport::exportPlot(m_plots[int(which)], path, [this] { return csv(); }, plotTitle(which), error, size);
}

bool LatencyPanel::exportCsv(const QString& path, QString* error) const {
  return plotexport::writeFileAtomic(path, csv(), error);
}

void LatencyPanel::exportInteractive(Plot which) {
  static const char* const stems[] = {"gemm-latency-time", "gemm-latency-gops", "gemm-latency-speedup"};
  const QString path = plotexport::exportInteractive(this, m_plots[int(which)], QString::fromLatin1(stems[int(which)]),
                                                     [this] { return csv(); }, plotTitle(which));
  if (!path.isEmpty()) showStatus(QStringLiteral("Exported %1").arg(QDir::toNativeSeparators(path)));
}

void LatencyPanel::exportCsvInteractive() {
  const QString path = plotexport::askSavePath(this, QStringLiteral("Export rows"), QStringLiteral("gemm-latency"), {QStringLiteral("csv")});
  if (path.isEmpty()) return;
  QString error;
  if (!exportCsv(path, &error)) QMessageBox::warning(this, QStringLiteral("Export failed"), error);
  else showStatus(QStringLiteral("Exported %1 rows to %2").arg(m_rows.size()).arg(QDir::toNativeSeparators(path)));
}

QString LatencyPanel::reportStage() const { return QStringLiteral("latency (a short GEMM sweep)"); }

bool LatencyPanel::writeReportSection(const ReportSection::Context& ctx, QString* error) {
  // The rows already measured in the tab, or a short sweep (int8 vs fp32 at small sizes).
  if (rows().empty()) {
    QEventLoop loop;
    QObject::connect(this, &LatencyPanel::sweepFinished, &loop, &QEventLoop::quit);
    // The lines worth a figure: the fp32 baselines, our int8 kernel for this CPU, oneDNN's where built.
    QStringList kernels;
    for (const QString& k : availableKernels())
      if (QStringList{"fp32-eigen", "fp32-onednn", "int8-onednn", "int8-vnni", "int8-avx2", "int8-vnni-e2e", "int8-avx2-e2e"}.contains(k))
        kernels << k;
    if (runSweep({64, 128, 256, 512}, kernels, 1)) {
      QTimer::singleShot(120000, &loop, &QEventLoop::quit);
      loop.exec();
    }
  }
  for (const QString& suffix : plotexport::imageSuffixes())
    if (!exportPlot(Plot::Time, QDir(ctx.dir).filePath(QStringLiteral("latency.") + suffix), error, ctx.size)) return false;
  if (!exportCsv(QDir(ctx.dir).filePath(QStringLiteral("latency.csv")), error)) return false;
  ctx.message(QStringLiteral("report: latency written"));
  return true;
}
