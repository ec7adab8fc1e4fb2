// SqnrHeatmap: qs::analyze_file on a QtConcurrent worker (QPromise for progress and Cancel), cells
// streamed into a QCPColorMap through a ~40 ms coalescing timer, tensor and scheme names as axis labels.
// Exercise: `QT_QPA_PLATFORM=offscreen ./build/tests/tst_sqnrheatmap` (writes /tmp/qs-sqnrheatmap.png).
#include "io/csv.h"
#include "sqnrheatmap.h"

#include "elidedlabel.h"
#include "plotstyle.h"

#include "errortext.h"
#include "plotexport.h"

#include <QDir>
#include <QEventLoop>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QPointer>
#include <QProgressBar>
#include <QPromise>
#include <QPushButton>
#include <QThread>
#include <QToolButton>
#include <QToolTip>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>
#include <exception>

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

QString schemeLabel(const qs::Scheme& s) {
  QString label = QString::fromStdString(s.text);
  if (s.options.rounding == qs::Rounding::Stochastic) label += QStringLiteral(" · stoch.");
  if (s.options.overflow == qs::Overflow::Ieee) label += QStringLiteral(" · ieee");
  return label;
}

QByteArray csvField(const QString& s) { return QByteArray::fromStdString(qs::csv_field(s.toStdString())); }

}  // namespace

SqnrHeatmap::SqnrHeatmap(QWidget* parent) : QWidget(parent), m_shared(std::make_shared<Shared>()) {
  buildUi();
  m_coalesce.setSingleShot(true);
  m_coalesce.setInterval(40);
  connect(&m_coalesce, &QTimer::timeout, this, &SqnrHeatmap::flush);
  connect(&m_watcher, &QFutureWatcher<void>::progressRangeChanged, m_progress, &QProgressBar::setRange);
  connect(&m_watcher, &QFutureWatcher<void>::progressValueChanged, this, [this](int v) {
    m_progress->setValue(v);
    emit progressChanged(v, m_progress->maximum());
  });
  connect(&m_watcher, &QFutureWatcher<void>::finished, this, &SqnrHeatmap::onFinished);
  rebuildAxes();
}

SqnrHeatmap::~SqnrHeatmap() {
  if (m_running) {
    m_watcher.disconnect(this);
    m_watcher.cancel();
    m_watcher.waitForFinished();
  }
}

void SqnrHeatmap::buildUi() {
  m_plot = new QCustomPlot;
  m_plot->setObjectName(QStringLiteral("sqnrPlot"));
  m_plot->setMinimumSize(420, 260);
  m_plot->setMouseTracking(true);  // hover tips
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

  m_progress = new QProgressBar;
  m_progress->setObjectName(QStringLiteral("heatmapProgress"));
  m_progress->setRange(0, 1);
  m_progress->setFormat(QStringLiteral("%v / %m tensors"));
  m_progress->setMinimumWidth(170);
  m_progress->setMaximumWidth(220);
  m_cancelButton = new QPushButton(QStringLiteral("Cancel"));
  m_cancelButton->setObjectName(QStringLiteral("cancelButton"));
  m_cancelButton->setEnabled(false);
  m_exportButton = new QToolButton;
  m_exportButton->setObjectName(QStringLiteral("exportButton"));
  m_exportButton->setText(QStringLiteral("Export…"));
  m_exportButton->setPopupMode(QToolButton::InstantPopup);
  auto* menu = new QMenu(m_exportButton);
  const auto csvWriter = [this] { return csv(); };
  menu->addAction(QStringLiteral("Heatmap image…"), this, [=, this] {
    plotexport::exportInteractive(this, m_plot, QStringLiteral("sqnr-heatmap"), csvWriter, QStringLiteral("QuantScope SQNR heatmap"));
  });
  menu->addAction(QStringLiteral("Cells as CSV…"), this, [=, this] {
    plotexport::exportInteractive(this, m_plot, QStringLiteral("sqnr-heatmap"), csvWriter, QStringLiteral("QuantScope SQNR heatmap"),
                                  true);
  });
  m_exportButton->setMenu(menu);
  plotexport::installContextMenu(m_plot, QStringLiteral("sqnr-heatmap"), csvWriter, QStringLiteral("QuantScope SQNR heatmap"));

  m_status = new ElidedLabel(QStringLiteral("Open a model file to see the SQNR of every tensor under every scheme."));
  m_status->setObjectName(QStringLiteral("heatmapStatus"));
  m_status->setWordWrap(true);  // names files and tensors: long runs are shortened, never widen the tab
  m_status->setMaximumLines(3);
  m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* bar = new QHBoxLayout;
  bar->addWidget(m_status, 1);
  bar->addWidget(m_progress);
  bar->addWidget(m_cancelButton);
  bar->addWidget(m_exportButton);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(8, 6, 8, 4);
  layout->addLayout(bar);
  layout->addWidget(m_plot, 1);

  connect(m_cancelButton, &QPushButton::clicked, this, &SqnrHeatmap::cancel);
  connect(m_plot, &QCustomPlot::mouseMove, this, &SqnrHeatmap::showTip);
  connect(m_plot, &QCustomPlot::mousePress, this, [this](QMouseEvent* e) { m_pressPos = e->pos(); });
  connect(m_plot, &QCustomPlot::mouseRelease, this, [this](QMouseEvent* e) {
    if (e->button() != Qt::LeftButton || (e->pos() - m_pressPos).manhattanLength() > 4) return;
    const QPoint c = cellAt(e->pos());
    if (c.x() >= 0) emit tensorActivated(m_path, m_tensors[c.y()], c.x());
  });
}

void SqnrHeatmap::setStatus(const QString& text, bool error) {
  m_status->setStyleSheet(error ? QStringLiteral("color: #c62828;") : QString());
  m_status->setText(text);
}

QString SqnrHeatmap::statusText() const { return m_status->text(); }

const SqnrHeatmap::Cell& SqnrHeatmap::cell(int tensor, int scheme) const {
  static const Cell none;
  const int ns = int(m_schemeNames.size());
  if (tensor < 0 || tensor >= m_tensors.size() || scheme < 0 || scheme >= ns) return none;
  return m_cells[std::size_t(tensor * ns + scheme)];
}

void SqnrHeatmap::analyzeFile(const QString& path, const std::vector<qs::Scheme>& schemes) {
  if (m_running) {  // the new request waits for the old one to stop (at most one tensor's work)
    m_pendingPath = path;
    m_pendingSchemes = schemes;
    m_hasPending = true;
    cancel();
    return;
  }
  start(path, schemes);
}

void SqnrHeatmap::start(const QString& path, const std::vector<qs::Scheme>& schemes) {
  m_path = path;
  m_schemeNames.clear();
  for (const qs::Scheme& s : schemes) m_schemeNames << schemeLabel(s);
  m_tensors.clear();
  m_shapes.clear();
  m_cells.clear();
  m_cancelled = false;
  rebuildAxes();
  m_shared = std::make_shared<Shared>();
  m_progress->setRange(0, 1);
  m_progress->setValue(0);
  m_cancelButton->setEnabled(true);
  setStatus(QStringLiteral("Analysing %1 …").arg(QFileInfo(path).fileName()));

  std::shared_ptr<Shared> shared = m_shared;
  QPointer<SqnrHeatmap> self(this);
  const int threads = std::max(1, QThread::idealThreadCount() - 1);
  auto job = [path, schemes, shared, self, threads](QPromise<void>& promise) {
    auto poke = [&] {  // the widget waits for this job in its destructor, so it outlives the call
      QMetaObject::invokeMethod(self.data(), [self] {
        if (self && !self->m_coalesce.isActive()) self->m_coalesce.start();
      }, Qt::QueuedConnection);
    };
    try {
      const auto file = qs::open_tensor_file(path.toStdString());
      const auto& ts = file->tensors();
      std::vector<int> rowOf(ts.size(), -1);
      QStringList names, shapes;
      for (std::size_t i = 0; i < ts.size(); ++i) {
        if (!qs::dtype_is_float(ts[i].dtype) || ts[i].numel() < 2) continue;  // what analyze_file skips
        rowOf[i] = int(names.size());
        names << QString::fromStdString(ts[i].name);
        shapes << QString::fromStdString(qs::shape_string(ts[i].shape));
      }
      {
        QMutexLocker lock(&shared->mutex);
        shared->opened = true;
        shared->tensors = names;
        shared->shapes = shapes;
      }
      poke();
      promise.setProgressRange(0, int(ts.size()));
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
        {
          QMutexLocker lock(&shared->mutex);
          shared->pending.emplace_back(t * ns + s, c);
        }
        poke();
      };
      auto progress = [&](std::size_t done, std::size_t) {
        promise.setProgressValue(int(done));
        return !promise.isCanceled();
      };
      qs::analyze_file(*file, schemes, {}, onRow, threads, progress, /*histograms=*/false);
    } catch (const std::exception& e) {
      QMutexLocker lock(&shared->mutex);
      shared->error = QString::fromUtf8(e.what());
    }
  };
  m_running = true;
  m_watcher.setFuture(QtConcurrent::run(job));
  emit analysisStarted(path);
}

void SqnrHeatmap::cancel() {
  if (!m_running || m_cancelled) return;
  m_cancelled = true;
  m_cancelButton->setEnabled(false);
  setStatus(QStringLiteral("Cancelling after the tensor in progress…"));
  m_watcher.cancel();
}

bool SqnrHeatmap::waitForFinished(int ms) {
  if (!m_running && !m_hasPending) return true;
  QEventLoop loop;
  QTimer timeout;
  timeout.setSingleShot(true);
  connect(this, &SqnrHeatmap::analysisFinished, &loop, [&] { if (!m_hasPending) loop.quit(); });
  connect(this, &SqnrHeatmap::failed, &loop, [&] { if (!m_hasPending) loop.quit(); });
  connect(&timeout, &QTimer::timeout, &loop, &QEventLoop::quit);
  if (ms >= 0) timeout.start(ms);
  loop.exec();
  return !m_running && !m_hasPending;
}

void SqnrHeatmap::flush() {
  std::vector<std::pair<int, Cell>> fresh;
  bool opened = false;
  {
    QMutexLocker lock(&m_shared->mutex);
    fresh.swap(m_shared->pending);
    opened = m_shared->opened;
    if (opened && m_tensors.isEmpty() && !m_shared->tensors.isEmpty()) {
      m_tensors = m_shared->tensors;
      m_shapes = m_shared->shapes;
    }
  }
  if (opened && m_cells.size() != std::size_t(m_tensors.size() * m_schemeNames.size())) {
    m_cells.assign(std::size_t(m_tensors.size() * m_schemeNames.size()), Cell{});
    rebuildAxes();
  }
  for (const auto& [index, c] : fresh)
    if (index >= 0 && std::size_t(index) < m_cells.size()) m_cells[std::size_t(index)] = c;
  if (!fresh.empty()) updateLabels();
}

void SqnrHeatmap::onFinished() {
  m_coalesce.stop();
  flush();
  m_running = false;
  m_cancelButton->setEnabled(false);
  QString error;
  {
    QMutexLocker lock(&m_shared->mutex);
    error = m_shared->error;
  }
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
    setStatus(m_cancelled ? QStringLiteral("%1: cancelled after %2 of %3 cells").arg(name).arg(done).arg(m_cells.size())
                          : QStringLiteral("%1: %2 tensors × %3 schemes%4. Click a cell to open the tensor.")
                                .arg(name)
                                .arg(m_tensors.size())
                                .arg(m_schemeNames.size())
                                .arg(done < m_cells.size() ? QStringLiteral(" (%1 cells not applicable)").arg(m_cells.size() - done)
                                                           : QString()));
    emit analysisFinished(m_path, m_cancelled);
  }
  if (m_hasPending) {
    m_hasPending = false;
    start(m_pendingPath, m_pendingSchemes);
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

// Tensor names on the left, thinned to every k-th when they would overlap; long names elided.
void SqnrHeatmap::updateTickStride() {
  const int ny = int(m_tensors.size());
  auto yt = QSharedPointer<QCPAxisTickerText>::create();
  const QFontMetrics fm(m_plot->yAxis->tickLabelFont());
  const int height = std::max(50, m_plot->axisRect()->height() > 0 ? m_plot->axisRect()->height() : m_plot->height() - 120);
  const int stride = std::max(1, int(std::ceil(double(ny) * (fm.height() + 1) / double(height))));
  for (int i = 0; i < ny; i += stride) yt->addTick(i, fm.elidedText(m_tensors[i], Qt::ElideMiddle, 240));
  m_plot->yAxis->setTicker(yt);
  m_plot->yAxis->setLabel(stride > 1 ? QStringLiteral("tensor (every %1th named)").arg(stride) : QStringLiteral("tensor"));
}

void SqnrHeatmap::updateLabels() {
  const int nx = int(m_schemeNames.size()), ny = int(m_tensors.size());
  double lo = INFINITY, hi = -INFINITY;
  for (const Cell& c : m_cells)
    if (c.computed && std::isfinite(c.sqnr_db)) lo = std::min(lo, c.sqnr_db), hi = std::max(hi, c.sqnr_db);
  if (!(hi >= lo)) lo = 0, hi = 60;
  if (hi - lo < 1) lo -= 0.5, hi += 0.5;
  m_plot->clearItems();
  // Numbers in the cells while they fit (a handful of schemes, a few dozen tensors).
  const bool numbers = nx * ny > 0 && nx * ny <= 600 && m_plot->axisRect()->height() / std::max(ny, 1) >= 13;
  for (int t = 0; t < ny; ++t)
    for (int s = 0; s < nx; ++s) {
      const Cell& c = m_cells.empty() ? Cell{} : m_cells[std::size_t(t * nx + s)];
      // Exact (∞ dB) cells take the top colour; cells without a result stay NaN (grey).
      const double v = !c.computed ? std::nan("") : std::isinf(c.sqnr_db) ? hi : c.sqnr_db;
      m_map->data()->setCell(s, t, v);
      if (nx == 1) m_map->data()->setCell(1, t, v);
      if (ny == 1) m_map->data()->setCell(s, 1, v);
      if (!numbers || !c.computed) continue;
      auto* text = new QCPItemText(m_plot);
      text->setClipToAxisRect(true);
      text->position->setType(QCPItemPosition::ptPlotCoords);
      text->position->setCoords(s, t);
      text->setText(std::isinf(c.sqnr_db) ? QStringLiteral("∞") : QString::number(c.sqnr_db, 'f', 1));
      text->setFont(QFont(font().family(), 8));
      const double f = std::clamp((v - lo) / (hi - lo), 0.0, 1.0);
      text->setColor(f < 0.18 || f > 0.9 ? Qt::white : QColor(30, 30, 30));
    }
  m_map->setDataRange(QCPRange(lo, hi));
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
  const int t = int(std::lround(m_plot->yAxis->pixelToCoord(pixel.y())));
  if (s < 0 || s >= m_schemeNames.size() || t < 0 || t >= m_tensors.size()) return {-1, -1};
  return {s, t};
}

QPoint SqnrHeatmap::cellCenter(int tensor, int scheme) const {
  return QPoint(int(std::lround(m_plot->xAxis->coordToPixel(scheme))), int(std::lround(m_plot->yAxis->coordToPixel(tensor))));
}

void SqnrHeatmap::showTip(QMouseEvent* event) {
  const QPoint c = cellAt(event->pos());
  if (c.x() < 0) return;
  const Cell& cl = cell(c.y(), c.x());
  QString text = QStringLiteral("<b>%1</b> (%2)<br>%3<br>")
                     .arg(elide::runs(m_tensors[c.y()]).toHtmlEscaped(), m_shapes.value(c.y()), m_schemeNames[c.x()].toHtmlEscaped());
  if (!cl.computed) {
    text += m_running ? QStringLiteral("not computed yet") : QStringLiteral("not applicable (channel axis beyond the tensor's rank)");
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
