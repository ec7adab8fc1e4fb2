// SqnrHeatmap: qs::analyze_file on a worker (shared/jobrunner.h: progress and Cancel), cells streamed
// into a QCPColorMap coalesced every ~40 ms, tensor and scheme names as axis labels.
// Exercise: `QT_QPA_PLATFORM=offscreen ./build/tests/tst_sqnrheatmap` (writes /tmp/qs-sqnrheatmap.png).
#include "io/csv.h"
#include "sqnrheatmap.h"
#include "shared/theme.h"

#include "shared/elidedlabel.h"
#include "shared/plotstyle.h"

#include "shared/errortext.h"
#include "shared/jobcontrols.h"
#include "shared/plotexport.h"

#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QEventLoop>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QProgressBar>
#include <QPushButton>
#include <QThread>
#include <QToolButton>
#include <QToolTip>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <map>
#include <numeric>

#include "io/tensor_file.h"
#include "quant/analyze.h"

namespace {

// Red (poor SQNR) through yellow to green (good): the order a reader expects of "quality".
QCPColorGradient sqnrGradient() {
  QCPColorGradient g;
  g.clearColorStops();
  g.setColorStopAt(0.0, QColor(165, 0, 38));
  g.setColorStopAt(0.25, QColor(244, 109, 67));
  g.setColorStopAt(0.5, QColor(254, 224, 139));
  g.setColorStopAt(0.75, QColor(166, 217, 106));
  g.setColorStopAt(1.0, QColor(26, 152, 80));
  g.setNanHandling(QCPColorGradient::nhNanColor);
  g.setNanColor(QColor(228, 228, 228));
  return g;
}

// Exact cells (SQNR ∞: every value representable, e.g. a bias under a per-channel scheme) are not a
// point on the scale: they get a colour of their own, outside the red-green gradient.
const QColor kInfinityColor(69, 117, 180);

constexpr double kAutoCeilingDb = 80;

// The p-th percentile (0..1) of sorted values, linear between neighbours.
double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return std::nan("");
  const double at = p * double(sorted.size() - 1);
  const std::size_t i = std::size_t(at);
  if (i + 1 >= sorted.size()) return sorted.back();
  return sorted[i] + (at - double(i)) * (sorted[i + 1] - sorted[i]);
}

QString schemeLabel(const qs::Scheme& s) {
  QString label = QString::fromStdString(s.text);
  if (s.options.rounding == qs::Rounding::Stochastic) label += QStringLiteral(" · stoch.");
  else if (s.options.rounding != qs::Rounding::Nearest) label += QStringLiteral(" · ") + QLatin1String(qs::to_string(s.options.rounding));
  if (s.options.overflow == qs::Overflow::Ieee) label += QStringLiteral(" · ieee");
  return label;
}

QByteArray csvField(const QString& s) { return QByteArray::fromStdString(qs::csv_field(s.toStdString())); }

}  // namespace

SqnrHeatmap::SqnrHeatmap(QWidget* parent) : QWidget(parent) {
  buildUi();
  connect(&m_job, &JobRunnerBase::rowsReady, this, &SqnrHeatmap::flush);
  connect(&m_job, &JobRunnerBase::progressValueChanged, this, [this](int v) { emit progressChanged(v, m_progress->maximum()); });
  connect(&m_job, &JobRunnerBase::finished, this, &SqnrHeatmap::onFinished);
  rebuildAxes();
}

SqnrHeatmap::~SqnrHeatmap() { m_job.cancelAndWait(); }

void SqnrHeatmap::buildUi() {
  m_plot = new QCustomPlot;
  m_plot->setObjectName(QStringLiteral("sqnrPlot"));
  m_plot->setMinimumSize(420, 260);
  m_plot->setMouseTracking(true);  // hover tips
  m_plot->setWhatsThis(QStringLiteral("SQNR = 10·log10(Σx² / Σ(x−q)²) in dB of every floating-point tensor of the file "
                                      "(rows) under every scheme (columns): 6 dB more is half the error. Red is poor, "
                                      "green good, blue exact (∞); grey cells were not computed or do not apply. Hover "
                                      "for the numbers, click to open the tensor in the Error tab."));
  plotstyle::addTitle(m_plot, QStringLiteral("SQNR per tensor and scheme"));
  m_map = new QCPColorMap(m_plot->xAxis, m_plot->yAxis);
  m_map->setInterpolate(false);
  m_map->setTightBoundary(false);
  m_scale = new QCPColorScale(m_plot);
  m_scale->setType(QCPAxis::atRight);
  m_scale->axis()->setLabel(QStringLiteral("SQNR (dB)"));
  m_scale->setBarWidth(14);
  m_plot->plotLayout()->addElement(1, 1, m_scale);
  m_map->setColorScale(m_scale);
  m_scale->setGradient(sqnrGradient());  // after linking: the map takes the scale's gradient
  auto* group = new QCPMarginGroup(m_plot);
  m_plot->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, group);
  m_scale->setMarginGroup(QCP::msBottom | QCP::msTop, group);
  m_plot->yAxis->setRangeReversed(true);  // the file's first tensor on top, as in a table
  m_plot->xAxis->setLabel(QStringLiteral("scheme"));
  m_plot->yAxis->setLabel(QStringLiteral("tensor"));
  for (QCPAxis* a : {m_plot->xAxis, m_plot->yAxis}) {
    a->grid()->setVisible(false);
    a->setTickLabelFont(QFont(font().family(), 8));
    a->setLabelFont(QFont(font().family(), 9));
    a->setSubTicks(false);
  }

  m_controls = new JobControls(&m_job, this);  // the bar stays: it shows how far the last analysis got
  connect(m_controls, &JobControls::cancelled, this, [this] { setStatus(QStringLiteral("Cancelling after the tensor in progress…")); });
  m_controls->cancelButton()->setObjectName(QStringLiteral("cancelButton"));
  m_progress = m_controls->progressBar();
  m_progress->setObjectName(QStringLiteral("heatmapProgress"));
  m_progress->setRange(0, 1);
  m_progress->setFormat(QStringLiteral("%v / %m tensors"));
  m_progress->setMinimumWidth(170);
  m_progress->setMaximumWidth(220);
  QMenu* menu = nullptr;
  m_exportButton = plotexport::makeExportButton(&menu);
  const auto csvWriter = [this] { return csv(); };
  menu->addAction(QStringLiteral("Heatmap image…"), this, [=, this] {
    plotexport::exportInteractive(this, m_plot, QStringLiteral("sqnr-heatmap"), csvWriter, QStringLiteral("QuantScope SQNR heatmap"));
  });
  menu->addAction(QStringLiteral("Cells as CSV…"), this, [=, this] {
    plotexport::exportInteractive(this, m_plot, QStringLiteral("sqnr-heatmap"), csvWriter, QStringLiteral("QuantScope SQNR heatmap"),
                                  true);
  });
  plotexport::installContextMenu(m_plot, QStringLiteral("sqnr-heatmap"), csvWriter, QStringLiteral("QuantScope SQNR heatmap"));

  m_status = new ElidedLabel(QStringLiteral("Open a model file to see the SQNR of every tensor under every scheme."));
  m_status->setObjectName(QStringLiteral("heatmapStatus"));
  m_status->setWordWrap(true);  // names files and tensors: long runs are shortened, never widen the tab
  m_status->setMaximumLines(3);
  m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);

  m_analyseButton = new QPushButton(QStringLiteral("Analyse a file…"));
  m_analyseButton->setObjectName(QStringLiteral("analyseButton"));
  m_analyseButton->setToolTip(QStringLiteral("Choose a model file (.safetensors, sharded index, .gguf, .pt, .onnx, .npz, "
                                             ".npy) and compute every tensor under the schemes of the Setup dock"));
  m_rerunButton = new QPushButton(QStringLiteral("Re-run with current schemes"));
  m_rerunButton->setObjectName(QStringLiteral("rerunButton"));
  m_rerunButton->setVisible(false);
  m_staleLabel = new ElidedLabel;
  m_staleLabel->setObjectName(QStringLiteral("staleLabel"));
  m_staleLabel->setWordWrap(true);
  m_staleLabel->setMaximumLines(2);
  m_staleLabel->setStyleSheet(theme::warningCss(this));
  m_staleLabel->setVisible(false);

  m_orderBox = new QComboBox;
  m_orderBox->setObjectName(QStringLiteral("orderBox"));
  m_orderBox->addItems({QStringLiteral("file order"), QStringLiteral("name"), QStringLiteral("size (largest first)"),
                        QStringLiteral("worst SQNR first")});
  m_rangeBox = new QComboBox;
  m_rangeBox->setObjectName(QStringLiteral("rangeBox"));
  m_rangeBox->addItems({QStringLiteral("auto"), QStringLiteral("full range"), QStringLiteral("fixed")});
  m_rangeBox->setToolTip(QStringLiteral("Colour scale of the finite SQNRs. Auto spans the 2nd to 98th percentile, at most "
                                        "up to 80 dB: a bias at 180 dB would make every other cell the same colour; cells "
                                        "beyond take the end colours. Exact cells (∞ dB) are blue, outside the scale."));
  m_loSpin = new QDoubleSpinBox;
  m_hiSpin = new QDoubleSpinBox;
  for (QDoubleSpinBox* b : {m_loSpin, m_hiSpin}) {
    b->setRange(-100, 400);
    b->setDecimals(1);
    b->setSuffix(QStringLiteral(" dB"));
    b->setEnabled(false);
  }
  m_loSpin->setObjectName(QStringLiteral("rangeLo"));
  m_hiSpin->setObjectName(QStringLiteral("rangeHi"));
  m_hiSpin->setValue(60);
  m_nameWidthSpin = new QSpinBox;
  m_nameWidthSpin->setObjectName(QStringLiteral("nameWidth"));
  m_nameWidthSpin->setRange(60, 900);
  m_nameWidthSpin->setSingleStep(20);
  m_nameWidthSpin->setSuffix(QStringLiteral(" px"));
  m_nameWidthSpin->setValue(m_nameWidth);
  m_nameWidthSpin->setToolTip(QStringLiteral("Width of the tensor names; longer names keep their end"));

  auto* bar = new QHBoxLayout;
  bar->addWidget(m_analyseButton);
  bar->addWidget(m_status, 1);
  bar->addWidget(m_progress);
  bar->addWidget(m_controls->cancelButton());
  bar->addWidget(m_exportButton);
  auto* staleRow = new QHBoxLayout;
  staleRow->addWidget(m_staleLabel, 1);
  staleRow->addWidget(m_rerunButton);
  auto* controls = new QHBoxLayout;
  controls->addWidget(new QLabel(QStringLiteral("Order:")));
  controls->addWidget(m_orderBox);
  controls->addSpacing(12);
  controls->addWidget(new QLabel(QStringLiteral("Names:")));
  controls->addWidget(m_nameWidthSpin);
  controls->addSpacing(12);
  controls->addWidget(new QLabel(QStringLiteral("Colours:")));
  controls->addWidget(m_rangeBox);
  controls->addWidget(m_loSpin);
  controls->addWidget(new QLabel(QStringLiteral("to")));
  controls->addWidget(m_hiSpin);
  controls->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(8, 6, 8, 4);
  layout->addLayout(bar);
  layout->addLayout(staleRow);
  layout->addLayout(controls);
  layout->addWidget(m_plot, 1);

  connect(m_analyseButton, &QPushButton::clicked, this, &SqnrHeatmap::openRequested);
  connect(m_rerunButton, &QPushButton::clicked, this, &SqnrHeatmap::rerunRequested);
  connect(m_orderBox, &QComboBox::currentIndexChanged, this, [this](int i) { setOrder(Order(i)); });
  connect(m_nameWidthSpin, &QSpinBox::valueChanged, this, &SqnrHeatmap::setNameWidth);
  const auto rangeChanged = [this] {
    setColorRange(ColorRange(m_rangeBox->currentIndex()), m_loSpin->value(), m_hiSpin->value());
  };
  connect(m_rangeBox, &QComboBox::currentIndexChanged, this, rangeChanged);
  connect(m_loSpin, &QDoubleSpinBox::valueChanged, this, rangeChanged);
  connect(m_hiSpin, &QDoubleSpinBox::valueChanged, this, rangeChanged);

  connect(m_plot, &QCustomPlot::mouseMove, this, &SqnrHeatmap::showTip);
  connect(m_plot, &QCustomPlot::mousePress, this, [this](QMouseEvent* e) { m_pressPos = e->pos(); });
  connect(m_plot, &QCustomPlot::mouseRelease, this, [this](QMouseEvent* e) {
    if (e->button() != Qt::LeftButton || (e->pos() - m_pressPos).manhattanLength() > 4) return;
    const QPoint c = cellAt(e->pos());
    if (c.x() >= 0) emit tensorActivated(m_path, m_tensors[c.y()], c.x());
  });
}

void SqnrHeatmap::setStale(bool stale) {
  m_stale = stale && !m_path.isEmpty();
  m_staleLabel->setText(m_stale ? QStringLiteral("These are the schemes of this map's run (%1); the Setup dock now lists "
                                                 "others. A click opens the tensor under the map's schemes.")
                                      .arg(m_schemeNames.join(QStringLiteral(", ")))
                                : QString());
  m_staleLabel->setVisible(m_stale);
  m_rerunButton->setVisible(m_stale);
}

int SqnrHeatmap::displayRow(int tensor) const { return m_rowOf.value(tensor, tensor); }

void SqnrHeatmap::setOrder(Order order) {
  m_orderBy = order;
  if (m_orderBox->currentIndex() != int(order)) {
    const QSignalBlocker block(m_orderBox);
    m_orderBox->setCurrentIndex(int(order));
  }
  applyOrder();
  updateTickStride();
  updateLabels();
}

void SqnrHeatmap::applyOrder() {
  const int ny = int(m_tensors.size()), nx = int(m_schemeNames.size());
  m_order.resize(ny);
  std::iota(m_order.begin(), m_order.end(), 0);
  const auto worst = [&](int t) {
    double w = INFINITY;
    for (int s = 0; s < nx && std::size_t(t * nx + s) < m_cells.size(); ++s)
      if (const Cell& c = m_cells[std::size_t(t * nx + s)]; c.computed && !std::isnan(c.sqnr_db)) w = std::min(w, c.sqnr_db);
    return w;
  };
  switch (m_orderBy) {
    case Order::File: break;
    case Order::Name:
      std::stable_sort(m_order.begin(), m_order.end(), [&](int a, int b) { return m_tensors[a] < m_tensors[b]; });
      break;
    case Order::Size:
      std::stable_sort(m_order.begin(), m_order.end(), [&](int a, int b) { return m_numel.value(a) > m_numel.value(b); });
      break;
    case Order::WorstSqnr:
      std::stable_sort(m_order.begin(), m_order.end(), [&](int a, int b) { return worst(a) < worst(b); });
      break;
  }
  m_rowOf.resize(ny);
  for (int r = 0; r < ny; ++r) m_rowOf[m_order[r]] = r;
}

void SqnrHeatmap::setColorRange(ColorRange mode, double lo, double hi) {
  m_rangeMode = mode;
  if (mode == ColorRange::Fixed) m_fixedLo = lo, m_fixedHi = hi;
  if (m_rangeBox->currentIndex() != int(mode)) {
    const QSignalBlocker block(m_rangeBox);
    m_rangeBox->setCurrentIndex(int(mode));
  }
  m_loSpin->setEnabled(mode == ColorRange::Fixed);
  m_hiSpin->setEnabled(mode == ColorRange::Fixed);
  updateLabels();
}

QPair<double, double> SqnrHeatmap::colorRange() const { return {m_lo, m_hi}; }

void SqnrHeatmap::setNameWidth(int px) {
  m_nameWidth = std::clamp(px, 60, 900);
  if (m_nameWidthSpin->value() != m_nameWidth) {
    const QSignalBlocker block(m_nameWidthSpin);
    m_nameWidthSpin->setValue(m_nameWidth);
  }
  updateTickStride();
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void SqnrHeatmap::setStatus(const QString& text, bool error) {
  m_status->setStyleSheet(error ? theme::errorCss(this) : QString());
  m_status->setText(text);
}

QString SqnrHeatmap::statusText() const { return m_status->text(); }

const SqnrHeatmap::Cell& SqnrHeatmap::cell(int tensor, int scheme) const {
  static const Cell none;
  const int ns = int(m_schemeNames.size());
  if (tensor < 0 || tensor >= m_tensors.size() || scheme < 0 || scheme >= ns) return none;
  return m_cells[std::size_t(tensor * ns + scheme)];
}

void SqnrHeatmap::analyzeFile(const QString& path, const std::vector<qs::Scheme>& schemes) { start(path, schemes); }

void SqnrHeatmap::start(const QString& path, const std::vector<qs::Scheme>& schemes) {
  m_path = path;
  m_schemeNames.clear();
  for (const qs::Scheme& s : schemes) m_schemeNames << schemeLabel(s);
  m_tensors.clear();
  m_shapes.clear();
  m_numel.clear();
  m_order.clear();
  m_rowOf.clear();
  m_cells.clear();
  m_skipped = 0;
  m_skippedText.clear();
  m_opened = false;
  setStale(false);
  rebuildAxes();
  m_progress->setRange(0, 1);
  m_progress->setValue(0);
  setStatus(QStringLiteral("Analysing %1 …").arg(QFileInfo(path).fileName()));

  const int threads = std::max(1, QThread::idealThreadCount() - 1);
  // An analysis in flight stops after the tensor in progress and this one starts when it has; the old one's
  // late cells and its finished() are dropped (JobRunner::restart), so nothing below mixes the two.
  m_job.restart([path, schemes, threads](JobRunner<Update>::Sink& sink) {
    {
      const auto file = qs::open_tensor_file(path.toStdString());
      const auto& ts = file->tensors();
      std::vector<int> rowOf(ts.size(), -1);
      QStringList names, shapes;
      QVector<qint64> numel;
      std::map<std::string, int> notFloat;  // what analyze_file skips, by reason
      int tiny = 0;
      for (std::size_t i = 0; i < ts.size(); ++i) {
        if (!qs::dtype_is_float(ts[i].dtype)) {
          ++notFloat[qs::to_string(ts[i].dtype)];
          continue;
        }
        if (ts[i].numel() < 2) {
          ++tiny;
          continue;
        }
        rowOf[i] = int(names.size());
        names << QString::fromStdString(ts[i].name);
        shapes << QString::fromStdString(qs::shape_string(ts[i].shape));
        numel << qint64(ts[i].numel());
      }
      int skipped = tiny;
      QStringList reasons, types;
      for (const auto& [type, n] : notFloat) skipped += n, types << QStringLiteral("%1 %2").arg(n).arg(QString::fromLatin1(type));
      if (!types.isEmpty()) reasons << QStringLiteral("not floating point (%1)").arg(types.join(QStringLiteral(", ")));
      if (tiny) reasons << QStringLiteral("%1 with fewer than 2 values").arg(tiny);
      auto listing = std::make_shared<Listing>();
      listing->tensors = names;
      listing->shapes = shapes;
      listing->numel = numel;
      listing->skipped = skipped;
      listing->skippedText = reasons.join(QStringLiteral("; "));
      sink.post(Update{.listing = std::move(listing)});
      sink.setProgressRange(0, int(ts.size()));
      const int ns = int(schemes.size());
      auto onRow = [&](const qs::AnalyzeRow& row) {
        const int t = rowOf[std::size_t(row.tensor - ts.data())];
        const int s = int(row.scheme - schemes.data());
        if (t < 0 || s < 0 || s >= ns) return;
        Cell c;
        c.computed = true;
        c.sqnr_db = row.metrics.sqnr_db();
        c.mse = row.metrics.mse();
        c.max_abs_error = row.metrics.max_abs_e;
        c.count = row.metrics.count;
        c.clipped = row.metrics.clipped;
        c.overflow = row.out.stats.overflow;
        c.underflow = row.out.stats.underflow;
        sink.post(Update{.index = t * ns + s, .cell = c});
      };
      auto progress = [&](std::size_t done, std::size_t) {
        sink.setProgressValue(int(done));
        return !sink.isCanceled();
      };
      qs::analyze_file(*file, schemes, {}, onRow, threads, progress, /*histograms=*/false);
    }
  });
  emit analysisStarted(path);
}

void SqnrHeatmap::cancel() {
  if (!isRunning() || m_job.isCancelled()) return;
  m_controls->cancel();  // the status line follows (JobControls::cancelled)
}

bool SqnrHeatmap::waitForFinished(int ms) {
  if (!isRunning()) return true;
  QEventLoop loop;
  QTimer timeout;
  timeout.setSingleShot(true);
  connect(this, &SqnrHeatmap::analysisFinished, &loop, &QEventLoop::quit);
  connect(this, &SqnrHeatmap::failed, &loop, &QEventLoop::quit);
  connect(&timeout, &QTimer::timeout, &loop, &QEventLoop::quit);
  if (ms >= 0) timeout.start(ms);
  loop.exec();
  return !isRunning();
}

void SqnrHeatmap::flush() {
  const std::vector<Update> fresh = m_job.takeRows();
  bool cells = false;
  for (const Update& u : fresh) {
    if (!u.listing) continue;
    m_opened = true;
    if (m_tensors.isEmpty() && !u.listing->tensors.isEmpty()) {
      m_tensors = u.listing->tensors;
      m_shapes = u.listing->shapes;
      m_numel = u.listing->numel;
    }
    m_skipped = u.listing->skipped;
    m_skippedText = u.listing->skippedText;
  }
  if (m_opened && m_cells.size() != std::size_t(m_tensors.size() * m_schemeNames.size())) {
    m_cells.assign(std::size_t(m_tensors.size() * m_schemeNames.size()), Cell{});
    applyOrder();
    rebuildAxes();
  }
  for (const Update& u : fresh) {
    if (u.listing) continue;
    cells = true;
    if (u.index >= 0 && std::size_t(u.index) < m_cells.size()) m_cells[std::size_t(u.index)] = u.cell;
  }
  if (cells) updateLabels();
}

void SqnrHeatmap::onFinished() {  // the last cells are drawn already (JobRunner's final rowsReady)
  const QString error = m_job.error();
  std::size_t done = 0;
  for (const Cell& c : m_cells) done += c.computed;
  const QString name = QFileInfo(m_path).fileName();
  if (!error.isEmpty()) {
    // Reader errors start with the path already ("FILE: reason"); say it once.
    QString reason = error;
    if (reason.startsWith(m_path + QStringLiteral(": "))) reason = reason.mid(m_path.size() + 2);
    const QString message = QStringLiteral("cannot analyse %1: %2").arg(m_path, reason);
    setStatus(message, true);
    emit failed(message);
  } else {
    const QString skipped = m_skipped ? QStringLiteral(" %1 of the file's %2 tensors not shown: %3.")
                                            .arg(m_skipped)
                                            .arg(m_skipped + m_tensors.size())
                                            .arg(m_skippedText)
                                      : QString();
    setStatus(m_job.isCancelled() ? QStringLiteral("%1: cancelled after %2 of %3 cells.%4").arg(name).arg(done).arg(m_cells.size()).arg(skipped)
                          : QStringLiteral("%1: %2 tensors × %3 schemes%4.%5 Click a cell to open the tensor.")
                                .arg(name)
                                .arg(m_tensors.size())
                                .arg(m_schemeNames.size())
                                .arg(done < m_cells.size() ? QStringLiteral(" (%1 cells not applicable)").arg(m_cells.size() - done)
                                                           : QString())
                                .arg(skipped));
    if (m_orderBy == Order::WorstSqnr) setOrder(m_orderBy);  // rows settle once every SQNR is known
    emit analysisFinished(m_path, m_job.isCancelled());
  }
}

void SqnrHeatmap::rebuildAxes() {
  const int nx = int(m_schemeNames.size()), ny = int(m_tensors.size());
  // A colour map needs two cells per dimension to define its cell size: a single row/column gets a
  // twin just outside the view.
  m_map->data()->setSize(std::max(nx, 2), std::max(ny, 2));
  m_map->data()->setRange(QCPRange(0, std::max(nx, 2) - 1), QCPRange(0, std::max(ny, 2) - 1));
  m_map->data()->fill(std::nan(""));
  m_plot->xAxis->setRange(-0.5, std::max(nx, 1) - 0.5);
  m_plot->yAxis->setRange(-0.5, std::max(ny, 1) - 0.5);
  auto xt = QSharedPointer<QCPAxisTickerText>::create();
  for (int i = 0; i < nx; ++i) xt->addTick(i, m_schemeNames[i]);
  m_plot->xAxis->setTicker(xt);
  m_plot->xAxis->setTickLabelRotation(nx > 3 ? -20 : 0);
  updateTickStride();
  updateLabels();
}

// Tensor names on the left, thinned to every k-th when they would overlap; long names keep their end
// (the part that tells "model.layers.17.self_attn.q_proj.weight" from its neighbours).
void SqnrHeatmap::updateTickStride() {
  const int ny = int(m_tensors.size());
  auto yt = QSharedPointer<QCPAxisTickerText>::create();
  const QFontMetrics fm(m_plot->yAxis->tickLabelFont());
  const int height = std::max(50, m_plot->axisRect()->height() > 0 ? m_plot->axisRect()->height() : m_plot->height() - 120);
  const int stride = std::max(1, int(std::ceil(double(ny) * (fm.height() + 1) / double(height))));
  for (int r = 0; r < ny; r += stride) {
    const int t = m_order.value(r, r);
    yt->addTick(r, fm.elidedText(m_tensors[t], Qt::ElideLeft, m_nameWidth));
  }
  m_plot->yAxis->setTicker(yt);
  m_plot->yAxis->setLabel(stride > 1 ? QStringLiteral("tensor (every %1th named)").arg(stride) : QStringLiteral("tensor"));
}

void SqnrHeatmap::updateLabels() {
  const int nx = int(m_schemeNames.size()), ny = int(m_tensors.size());
  std::vector<double> finite;
  for (const Cell& c : m_cells)
    if (c.computed && std::isfinite(c.sqnr_db)) finite.push_back(c.sqnr_db);
  std::sort(finite.begin(), finite.end());
  double lo = 0, hi = 60;
  if (m_rangeMode == ColorRange::Fixed) {
    lo = m_fixedLo, hi = m_fixedHi;
  } else if (!finite.empty()) {
    const bool robust = m_rangeMode == ColorRange::Auto && finite.size() >= 10;
    lo = robust ? percentile(finite, 0.02) : finite.front();
    hi = robust ? percentile(finite, 0.98) : finite.back();
    // Near-exact cells (a bias with one value per channel: 150-180 dB) say nothing about a scheme's
    // quality and would squeeze every useful cell into one colour: auto stops at 80 dB, above what any
    // 8-bit scheme reaches on real weights (the cells beyond take the top colour).
    if (m_rangeMode == ColorRange::Auto && hi > kAutoCeilingDb && lo < kAutoCeilingDb - 10) hi = kAutoCeilingDb;
  }
  if (!(hi >= lo)) std::swap(lo, hi);
  if (hi - lo < 1) lo -= 0.5, hi += 0.5;
  m_lo = lo, m_hi = hi;
  if (m_rangeMode != ColorRange::Fixed) {  // the spin boxes show the range in use, ready to be fixed
    const QSignalBlocker b1(m_loSpin), b2(m_hiSpin);
    m_loSpin->setValue(lo);
    m_hiSpin->setValue(hi);
  }
  m_plot->clearItems();
  // Numbers in the cells while they fit (a handful of schemes, a few dozen tensors).
  const bool numbers = nx * ny > 0 && nx * ny <= 600 && m_plot->axisRect()->height() / std::max(ny, 1) >= 13;
  for (int r = 0; r < ny; ++r)
    for (int s = 0; s < nx; ++s) {
      const int t = m_order.value(r, r);
      const Cell& c = m_cells.empty() ? Cell{} : m_cells[std::size_t(t * nx + s)];
      const bool exact = c.computed && std::isinf(c.sqnr_db) && c.sqnr_db > 0;
      // Cells without a result stay NaN (grey); exact cells are drawn over in their own colour.
      const double v = !c.computed || exact ? std::nan("") : c.sqnr_db;
      m_map->data()->setCell(s, r, v);
      if (nx == 1) m_map->data()->setCell(1, r, v);
      if (ny == 1) m_map->data()->setCell(s, 1, v);
      if (exact) {
        auto* box = new QCPItemRect(m_plot);
        box->setClipToAxisRect(true);
        box->topLeft->setCoords(s - 0.5, r - 0.5);
        box->bottomRight->setCoords(s + 0.5, r + 0.5);
        box->setPen(Qt::NoPen);
        box->setBrush(kInfinityColor);
      }
      if (!numbers || !c.computed) continue;
      auto* text = new QCPItemText(m_plot);
      text->setClipToAxisRect(true);
      text->position->setType(QCPItemPosition::ptPlotCoords);
      text->position->setCoords(s, r);
      text->setText(exact ? QStringLiteral("∞") : QString::number(c.sqnr_db, 'f', 1));
      text->setFont(QFont(font().family(), 8));
      const double f = std::clamp((c.sqnr_db - lo) / (hi - lo), 0.0, 1.0);
      text->setColor(exact || f < 0.18 || f > 0.9 ? Qt::white : QColor(30, 30, 30));
    }
  m_map->setDataRange(QCPRange(lo, hi));
  const bool clipped = !finite.empty() && (finite.front() < lo || finite.back() > hi);
  m_scale->axis()->setLabel(clipped ? QStringLiteral("SQNR (dB), ends clipped · blue: exact (∞)")
                                    : QStringLiteral("SQNR (dB) · blue: exact (∞)"));
  m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void SqnrHeatmap::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  if (!m_tensors.isEmpty()) {
    m_plot->replot();  // lays the axis rect out at the new size first
    updateTickStride();
    updateLabels();
  }
}

QPoint SqnrHeatmap::cellAt(const QPoint& pixel) const {
  if (!m_plot->axisRect()->rect().contains(pixel)) return {-1, -1};
  const int s = int(std::lround(m_plot->xAxis->pixelToCoord(pixel.x())));
  const int r = int(std::lround(m_plot->yAxis->pixelToCoord(pixel.y())));
  if (s < 0 || s >= m_schemeNames.size() || r < 0 || r >= m_tensors.size()) return {-1, -1};
  return {s, m_order.value(r, r)};
}

QPoint SqnrHeatmap::cellCenter(int tensor, int scheme) const {
  return QPoint(int(std::lround(m_plot->xAxis->coordToPixel(scheme))),
                int(std::lround(m_plot->yAxis->coordToPixel(displayRow(tensor)))));
}

void SqnrHeatmap::showTip(QMouseEvent* event) {
  const QPoint c = cellAt(event->pos());
  if (c.x() < 0) return;
  const Cell& cl = cell(c.y(), c.x());
  QString text = QStringLiteral("<b>%1</b> (%2)<br>%3<br>")
                     .arg(elide::runs(m_tensors[c.y()]).toHtmlEscaped(), m_shapes.value(c.y()), m_schemeNames[c.x()].toHtmlEscaped());
  if (!cl.computed) {
    text += isRunning() ? QStringLiteral("not computed yet") : QStringLiteral("not applicable (channel axis beyond the tensor's rank)");
  } else {
    text += QStringLiteral("SQNR %1 dB<br>MSE %2, max |err| %3<br>clipped %4, overflow %5, underflow %6 of %7<br>"
                           "<i>click to open this tensor</i>")
                .arg(errortext::decibel(cl.sqnr_db), errortext::value(cl.mse), errortext::value(cl.max_abs_error),
                     errortext::count(cl.clipped), errortext::count(cl.overflow), errortext::count(cl.underflow),
                     errortext::count(cl.count));
  }
  QToolTip::showText(event->globalPosition().toPoint(), text, m_plot);
}

QByteArray SqnrHeatmap::csv() const {
  QByteArray out("file,tensor,shape,scheme,sqnr_db,mse,max_abs_error,clipped,overflow,underflow,count\n");
  const int nx = int(m_schemeNames.size());
  for (int t = 0; t < m_tensors.size(); ++t)
    for (int s = 0; s < nx; ++s) {
      const Cell& c = m_cells[std::size_t(t * nx + s)];
      if (!c.computed) continue;
      out += csvField(m_path) + ',' + csvField(m_tensors[t]) + ',' + m_shapes.value(t).toUtf8() + ',' +
             csvField(m_schemeNames[s]) + ',' + plotexport::number(c.sqnr_db) + ',' + plotexport::number(c.mse) + ',' +
             plotexport::number(c.max_abs_error) + ',' + QByteArray::number(qulonglong(c.clipped)) + ',' +
             QByteArray::number(qulonglong(c.overflow)) + ',' + QByteArray::number(qulonglong(c.underflow)) + ',' +
             QByteArray::number(qulonglong(c.count)) + '\n';
    }
  return out;
}

void SqnrHeatmap::exportInteractive() {
  plotexport::exportInteractive(this, m_plot, QStringLiteral("sqnr-heatmap"), [this] { return csv(); },
                                QStringLiteral("QuantScope SQNR heatmap"));
}

bool SqnrHeatmap::exportTo(const QString& path, QString* error) {
  return plotexport::exportPlot(m_plot, path, [this] { return csv(); }, QStringLiteral("QuantScope SQNR heatmap"), error);
}

bool SqnrHeatmap::exportAll(const QString& dir, const QString& stem, QString* error) {
  return plotexport::exportAll(m_plot, dir, stem, [this] { return csv(); }, QStringLiteral("QuantScope SQNR heatmap"), error);
}

QString SqnrHeatmap::reportStage() const { return QString(); }

bool SqnrHeatmap::writeReportSection(const ReportSection::Context& ctx, QString* error) {
  // The map, when one was computed (finished: a running one is waited for).
  if (filePath().isEmpty()) return true;
  waitForFinished(-1);
  if (tensorNames().isEmpty()) return true;
  if (!exportAll(ctx.dir, QStringLiteral("sqnr-heatmap"), error)) return false;
  ctx.message(QStringLiteral("report: sqnr-heatmap written"));
  return true;
}
