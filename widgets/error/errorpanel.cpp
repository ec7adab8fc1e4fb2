// ErrorPanel: controls, the two plots and the table around the tab's JobRunner (computeViews on a worker,
// restarted by every new request), with a per-scheme result cache and the report export. Exercise: `QT_QPA_PLATFORM=offscreen ./build/tests/tst_errorpanel`.
#include "errorpanel.h"

#include <qcustomplot.h>

#include <map>

#include "shared/elidedlabel.h"
#include "errormetricstable.h"
#include "shared/errortext.h"
#include "shared/jobcontrols.h"
#include "shared/plotexport.h"
#include "shared/plotstyle.h"
#include "shared/palette.h"
#include "valuehistogramplot.h"

#include <QCheckBox>
#include <QComboBox>
#include <QCursor>
#include <QDir>
#include <QEventLoop>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QSplitter>
#include <QTemporaryDir>
#include <QThread>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <exception>

namespace {

// The worker's side: one qs::ErrorView per scheme, posted as it is done. The engine's progress hook
// carries the runner's cancel (a superseding request, Cancel, or the panel closing) between chunks, and
// the request's progress in per mille of all its schemes.
template <class Row, class Sink>
void computeViews(const TensorData& tensor, const std::vector<qs::Scheme>& schemes, const qs::ErrorViewOptions& options,
                  std::vector<float>& scratch, Sink& sink) {
  sink.setProgressRange(0, 1000);
  const double perScheme = schemes.empty() ? 0.0 : 1000.0 / double(schemes.size());
  int lastPermille = -1;
  const std::vector<float>* values = tensor.values.get();
  static const float none = 0.0f;
  std::vector<int64_t> shape = tensor.shape;
  std::size_t numel = 1;
  for (int64_t d : shape) numel *= std::size_t(std::max<int64_t>(d, 0));
  if (!values || values->empty()) shape = {0};
  else if (shape.empty() || numel != values->size()) shape = {int64_t(values->size())};  // flat: never read past the end
  for (std::size_t i = 0; i < schemes.size(); ++i) {
    auto progress = [&](std::size_t done, std::size_t total) {
      if (sink.isCanceled()) return false;
      const int permille = int(perScheme * (double(i) + (total ? double(done) / double(total) : 1.0)));
      if (permille != lastPermille) {  // QPromise throttles what reaches the UI to 25 updates a second
        lastPermille = permille;
        sink.setProgressValue(permille);
      }
      return true;
    };
    try {
      qs::ErrorView view = qs::compute_error_view(schemes[i], values && !values->empty() ? values->data() : &none, shape,
                                                  options, progress, &scratch);
      if (view.cancelled) return;
      sink.post(Row{int(i), std::make_shared<const qs::ErrorView>(std::move(view)), {}});
    } catch (const std::exception& e) {
      sink.post(Row{int(i), nullptr, QString::fromUtf8(e.what())});
    }
  }
  sink.setProgressValue(1000);
}

}  // namespace

ErrorPanel::ErrorPanel(QWidget* parent) : QWidget(parent) {
  m_options.value_bins = 512;
  m_options.threads = std::max(1, QThread::idealThreadCount() - 1);  // one core stays with the UI
  buildUi();
  m_refreshTimer.setSingleShot(true);
  m_refreshTimer.setInterval(40);
  connect(&m_refreshTimer, &QTimer::timeout, this, &ErrorPanel::refresh);
  connect(&m_job, &JobRunnerBase::rowsReady, this, &ErrorPanel::onRows);
  connect(&m_job, &JobRunnerBase::progressValueChanged, this, [this](int permille) { emit progressChanged(permille, 1000); });
  connect(&m_job, &JobRunnerBase::finished, this, &ErrorPanel::onJobFinished);
  refresh();
}

ErrorPanel::~ErrorPanel() { m_job.cancelAndWait(); }

void ErrorPanel::buildUi() {
  m_modeBox = new QComboBox;
  m_modeBox->setObjectName(QStringLiteral("errorModeBox"));
  m_modeBox->addItems({QStringLiteral("Absolute error"), QStringLiteral("Relative error")});
  m_modeBox->setToolTip(QStringLiteral("|x − q|, or |x − q| / |x| (zeros of x have no relative error)"));
  m_logBox = new QCheckBox(QStringLiteral("Log counts"));
  m_logBox->setObjectName(QStringLiteral("logCountsBox"));
  m_logBox->setToolTip(QStringLiteral("Log count axis for the value histogram: shows tails and outliers"));
  m_gridBox = new QComboBox;
  m_gridBox->setObjectName(QStringLiteral("gridGroupBox"));
  m_gridBox->addItems({QStringLiteral("Grid of the largest group"), QStringLiteral("Grid of the median group")});
  m_gridBox->setToolTip(QStringLiteral("Per-channel and per-block schemes have one grid per group: draw the one "
                                       "holding the tensor's amax, or a typical one (median scale)"));
  m_binsBox = new QComboBox;
  m_binsBox->setObjectName(QStringLiteral("binsBox"));
  for (int b : {128, 256, 512, 1024, 2048}) m_binsBox->addItem(QStringLiteral("%1 bins").arg(b), b);
  m_binsBox->setCurrentIndex(2);

  // Busy is the panel's request (a request that needs nothing computed is not busy), so the controls
  // follow setBusy rather than the runner.
  m_controls = new JobControls(&m_job, this, JobControls::HideBarWhenIdle);
  m_controls->setFollowsJob(false);
  m_controls->progressBar()->setObjectName(QStringLiteral("errorProgress"));
  m_controls->progressBar()->setRange(0, 1000);
  m_controls->progressBar()->setTextVisible(false);
  m_controls->progressBar()->setMaximumWidth(160);
  m_controls->cancelButton()->setObjectName(QStringLiteral("cancelButton"));
  m_recomputeButton = new QPushButton(QStringLiteral("Recompute"));
  m_recomputeButton->setObjectName(QStringLiteral("recomputeButton"));
  m_recomputeButton->setToolTip(QStringLiteral("Compute the schemes that Cancel left out"));
  m_recomputeButton->setVisible(false);
  QMenu* menu = nullptr;
  m_exportButton = plotexport::makeExportButton(&menu);

  m_valuePlot = new ValueHistogramPlot;
  m_valuePlot->setObjectName(QStringLiteral("valueHistogram"));
  m_errorPlot = new ErrorHistogramPlot;
  m_errorPlot->setObjectName(QStringLiteral("errorHistogram"));
  m_valuePlot->setWhatsThis(QStringLiteral("The tensor's values (finite ones; NaN and inf are counted above) with "
                                           "the grid of every scheme as ticks underneath: where the representable "
                                           "values fall relative to the data. Channel and block schemes draw the grid "
                                           "of one group (the largest or the median, chosen above)."));
  m_errorPlot->setWhatsThis(QStringLiteral("Histogram of |x − q| (or |x − q| / |x|) on log₂ bins, per scheme: filled "
                                           "parts are rounding error inside the format's range, hatched parts clipping "
                                           "error beyond it. Exact values and values that became inf/NaN are counted "
                                           "in the legend."));
  m_table = new ErrorMetricsTable;
  m_table->setObjectName(QStringLiteral("metricsTable"));

  const QString valueTitle = QStringLiteral("QuantScope value histogram");
  const QString errorTitle = QStringLiteral("QuantScope error histogram");
  plotexport::installContextMenu(m_valuePlot, QStringLiteral("value-histogram"), [this] { return m_valuePlot->csv(); },
                                 valueTitle);
  plotexport::installContextMenu(m_errorPlot, QStringLiteral("error-histogram"), [this] { return m_errorPlot->csv(); },
                                 errorTitle);
  menu->addAction(QStringLiteral("Value histogram…"), this, [=, this] {
    plotexport::exportInteractive(this, m_valuePlot, QStringLiteral("value-histogram"), [this] { return m_valuePlot->csv(); },
                                  valueTitle);
  });
  menu->addAction(QStringLiteral("Error histogram…"), this, [=, this] {
    plotexport::exportInteractive(this, m_errorPlot, QStringLiteral("error-histogram"), [this] { return m_errorPlot->csv(); },
                                  errorTitle);
  });
  menu->addAction(QStringLiteral("Metrics as CSV…"), this, [this] {
    const QString path = plotexport::askSavePath(this, QStringLiteral("Export metrics"), QStringLiteral("metrics"),
                                                 {QStringLiteral("csv")});
    if (path.isEmpty()) return;
    QString error;
    if (!plotexport::writeFileAtomic(path, m_table->csv(), &error)) QMessageBox::warning(this, QStringLiteral("Export failed"), error);
  });
  menu->addSeparator();
  menu->addAction(QStringLiteral("All into a folder…"), this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, QStringLiteral("Export the Error tab into"), QDir::homePath());
    if (dir.isEmpty()) return;
    QString error;
    if (!exportReport(dir, &error)) QMessageBox::warning(this, QStringLiteral("Export failed"), error);
  });

  // The line names the tensor: a name from a file can be any length, so the label elides it rather
  // than growing the window (F2: a 20,000-character name made a 153,179 px window).
  m_status = new ElidedLabel;
  m_status->setObjectName(QStringLiteral("errorStatus"));
  m_status->setWordWrap(true);
  m_status->setMaximumLines(3);
  m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* bar = new QHBoxLayout;
  bar->addWidget(m_modeBox);
  bar->addWidget(m_logBox);
  bar->addWidget(m_gridBox);
  bar->addWidget(m_binsBox);
  bar->addStretch(1);
  bar->addWidget(m_controls->progressBar());
  bar->addWidget(m_recomputeButton);
  bar->addWidget(m_controls->cancelButton());
  bar->addWidget(m_exportButton);

  m_codesPlot = new QCustomPlot;
  m_codesPlot->setObjectName(QStringLiteral("storedCodesPlot"));
  m_codesPlot->setMinimumSize(170, 220);
  plotstyle::addTitle(m_codesPlot, QStringLiteral("Stored codes"));
  m_codesPlot->xAxis->setLabel(QStringLiteral("code, in value order"));
  m_codesPlot->yAxis->setLabel(QStringLiteral("elements"));
  m_codesPlot->yAxis->setScaleType(QCPAxis::stLogarithmic);
  m_codesPlot->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
  for (QCPAxis* a : {m_codesPlot->xAxis, m_codesPlot->yAxis}) plotstyle::styleGrid(a);
  m_codesPlot->setWhatsThis(QStringLiteral("A weight read from a pre-quantized checkpoint: how many of its elements hold "
                                           "each stored code, by the code's value on the element grid (unused codes: "
                                           "no bar). Shown only for such a weight."));
  plotexport::installContextMenu(m_codesPlot, QStringLiteral("stored-codes"), [this] {
    QByteArray out("code_value,elements\n");
    for (qsizetype i = 0; i < m_tensor.storedCodeValues.size(); ++i)
      out += plotexport::number(m_tensor.storedCodeValues[i]) + ',' +
             QByteArray::number(qlonglong(m_tensor.storedCodeCounts.value(i))) + '\n';
    return out;
  }, QStringLiteral("Stored codes"));
  m_codesPlot->setVisible(false);
  auto* plots = new QSplitter(Qt::Horizontal);
  plots->addWidget(m_valuePlot);
  plots->addWidget(m_errorPlot);
  plots->addWidget(m_codesPlot);
  plots->setChildrenCollapsible(false);
  plots->setStretchFactor(0, 1);
  plots->setStretchFactor(1, 1);
  plots->setSizes({1000, 1000});  // half and half to begin with
  auto* vertical = new QSplitter(Qt::Vertical);
  vertical->addWidget(plots);
  vertical->addWidget(m_table);
  vertical->setStretchFactor(0, 5);
  vertical->setStretchFactor(1, 1);
  vertical->setSizes({650, 150});  // the table shows a handful of schemes; drag for more
  vertical->setChildrenCollapsible(false);
  m_table->setMinimumHeight(110);

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(8, 6, 8, 4);
  layout->addLayout(bar);
  layout->addWidget(m_status);
  layout->addWidget(vertical, 1);

  connect(m_modeBox, &QComboBox::currentIndexChanged, this,
          [this](int i) { m_errorPlot->setMode(i == 1 ? ErrorMode::Relative : ErrorMode::Absolute); });
  connect(m_logBox, &QCheckBox::toggled, m_valuePlot, &ValueHistogramPlot::setLogCounts);
  connect(m_gridBox, &QComboBox::currentIndexChanged, this,
          [this](int i) { setGridGroup(i == 1 ? qs::GridGroup::Median : qs::GridGroup::Largest); });
  connect(m_binsBox, &QComboBox::currentIndexChanged, this, [this](int i) { setValueBins(m_binsBox->itemData(i).toInt()); });
  connect(m_recomputeButton, &QPushButton::clicked, this, &ErrorPanel::recompute);
}

void ErrorPanel::setErrorMode(ErrorMode mode) { m_modeBox->setCurrentIndex(mode == ErrorMode::Relative ? 1 : 0); }
ErrorPanel::ErrorMode ErrorPanel::errorMode() const { return m_errorPlot->mode(); }
void ErrorPanel::setLogCounts(bool on) { m_logBox->setChecked(on); }
bool ErrorPanel::logCounts() const { return m_valuePlot->logCounts(); }

void ErrorPanel::setValueBins(int bins) {
  bins = std::clamp(bins, 16, 4096);
  const int i = m_binsBox->findData(bins);
  if (i >= 0 && i != m_binsBox->currentIndex()) m_binsBox->setCurrentIndex(i);  // comes back here
  if (bins == m_options.value_bins) return;
  m_options.value_bins = bins;
  clearCache();
  recompute();
}

void ErrorPanel::setGridGroup(qs::GridGroup group) {
  m_gridBox->setCurrentIndex(group == qs::GridGroup::Median ? 1 : 0);
  if (group == m_options.grid_group) return;
  m_options.grid_group = group;
  clearCache();
  recompute();
}

void ErrorPanel::setThreads(int threads) { m_options.threads = std::max(1, threads); }

void ErrorPanel::showStoredCodes() {
  const auto& vals = m_tensor.storedCodeValues;
  const auto& counts = m_tensor.storedCodeCounts;
  m_codesPlot->setVisible(!vals.isEmpty() && vals.size() == counts.size());
  if (!m_codesPlot->isVisibleTo(this)) return;
  m_codesPlot->clearPlottables();
  // One bar per distinct code value (NaN codes left out; +0 and -0 share a bar), width the grid's spacing.
  std::map<double, double> byValue;
  qsizetype used = 0;
  double total = 0;
  for (qsizetype i = 0; i < vals.size(); ++i) {
    if (std::isnan(vals[i])) continue;
    byValue[vals[i] == 0 ? 0.0 : vals[i]] += counts[i];
    used += counts[i] > 0;
    total += counts[i];
  }
  // Codes in value order, evenly spaced (a float grid crowds its codes near zero on a value axis); a few
  // ticks name the values.
  auto* bars = new QCPBars(m_codesPlot->xAxis, m_codesPlot->yAxis);
  bars->setPen(Qt::NoPen);
  bars->setBrush(QColor(44, 160, 44));
  bars->setWidth(0.8);
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  const int n = int(byValue.size());
  int rank = 0;
  double top = 1;
  for (const auto& [v, c] : byValue) {
    if (c > 0) bars->addData(rank, c);
    top = std::max(top, c);
    if (rank == 0 || rank == n / 2 || rank == n - 1)  // the ends and the middle: room for three labels
      ticker->addTick(rank, QString::number(v, 'g', 3).replace(u'-', u'−'));
    ++rank;
  }
  m_codesPlot->xAxis->setTicker(ticker);
  m_codesPlot->xAxis->setRange(-1, std::max(n, 1));
  m_codesPlot->yAxis->setRange(0.8, top * 2);
  plotstyle::setText(qobject_cast<QCPTextElement*>(m_codesPlot->plotLayout()->element(0, 0)),
                     QStringLiteral("Stored codes · %1 of %2 used · %3 elements")
                         .arg(used)
                         .arg(vals.size())
                         .arg(errortext::count(uint64_t(total))));
  m_codesPlot->replot(QCustomPlot::rpQueuedReplot);
}

void ErrorPanel::setTensor(const TensorData& tensor) {
  m_tensor = tensor;
  showStoredCodes();
  clearCache();
  m_valuePlot->clearHistogram(tensor.isEmpty() ? QStringLiteral("no tensor selected") : QStringLiteral("computing…"));
  recompute();
}

void ErrorPanel::setSchemes(const std::vector<qs::Scheme>& schemes) {
  m_schemes = schemes;
  if (m_cache.size() > 64) {  // forget schemes no longer listed once the cache grows
    QSet<QString> keep;
    for (const qs::Scheme& s : m_schemes) keep.insert(keyOf(s));
    for (auto it = m_cache.begin(); it != m_cache.end();) it = keep.contains(it.key()) ? std::next(it) : m_cache.erase(it);
  }
  recompute();
}

void ErrorPanel::clearCache() {
  m_cache.clear();
  m_errors.clear();
}

QString ErrorPanel::keyOf(const qs::Scheme& s) const {
  const bool stochastic = s.options.rounding == qs::Rounding::Stochastic;
  return QStringLiteral("%1|%2|%3|%4")
      .arg(QString::fromStdString(s.text), QString::fromLatin1(qs::to_string(s.options.rounding)),
           QString::fromLatin1(qs::to_string(s.options.overflow)), stochastic ? QString::number(s.options.seed) : QString());
}

QString ErrorPanel::labelOf(const qs::Scheme& s) const {
  QString label = QString::fromStdString(s.text);
  if (s.options.rounding != qs::Rounding::Nearest) label += QStringLiteral(" · ") + QLatin1String(qs::to_string(s.options.rounding));
  if (s.options.overflow == qs::Overflow::Ieee) label += QStringLiteral(" · ieee overflow");
  return label;
}

QString ErrorPanel::tensorLabel() const {
  if (m_tensor.name.isEmpty()) return m_tensor.source;
  return m_tensor.name;
}

void ErrorPanel::recompute() {
  QStringList keys;
  std::vector<qs::Scheme> missing;
  if (!m_tensor.isEmpty())
    for (const qs::Scheme& s : m_schemes) {
      const QString key = keyOf(s);
      if (m_cache.contains(key) || m_errors.contains(key) || keys.contains(key)) continue;
      keys << key;
      missing.push_back(s);
    }
  m_pendingKeys = keys;
  m_cancelled = false;
  m_recomputeButton->setVisible(false);
  // Whatever is in flight is superseded (an empty request just stops it; with nothing in flight it needs
  // no job at all).
  if (!missing.empty() || m_job.isRunning())
    m_job.restart([tensor = m_tensor, missing, options = m_options, scratch = m_scratch](JobRunner<Row>::Sink& sink) {
      computeViews<Row>(tensor, missing, options, *scratch, sink);
    });
  m_clock.start();
  setBusy(!missing.empty());
  m_controls->progressBar()->setValue(0);
  if (missing.empty()) {  // all cached: show it now, so waitForIdle() + export see this list
    m_refreshTimer.stop();
    refresh();
  } else {
    scheduleRefresh();
  }
}

void ErrorPanel::cancel() {
  if (m_busy) m_controls->cancel();
}

void ErrorPanel::exportInteractive() { m_exportButton->menu()->exec(QCursor::pos()); }

void ErrorPanel::setBusy(bool busy) {
  m_controls->setActive(busy);
  if (busy == m_busy) return;
  m_busy = busy;
  emit busyChanged(busy);
}

bool ErrorPanel::waitForIdle(int ms) {
  if (!m_busy) {
    if (m_refreshTimer.isActive()) {  // results that arrived but are not drawn yet
      m_refreshTimer.stop();
      refresh();
    }
    return true;
  }
  QEventLoop loop;
  QTimer timeout;
  timeout.setSingleShot(true);
  connect(this, &ErrorPanel::busyChanged, &loop, [&loop](bool busy) {
    if (!busy) loop.quit();
  });
  connect(&timeout, &QTimer::timeout, &loop, &QEventLoop::quit);
  if (ms >= 0) timeout.start(ms);
  loop.exec();
  return !m_busy;
}

// JobRunner hands over only the rows of the request in flight (a superseded job's are dropped), already
// coalesced (~40 ms), so they are drawn at once.
void ErrorPanel::onRows() {
  const std::vector<Row> rows = m_job.takeRows();
  if (rows.empty()) return;
  for (const Row& r : rows) {
    if (r.index < 0 || r.index >= m_pendingKeys.size()) continue;
    const QString& key = m_pendingKeys[r.index];
    if (r.view) {
      m_cache.insert(key, r.view);
    } else {
      m_errors.insert(key, r.error);
      emit message(QStringLiteral("Error tab: %1: %2").arg(key.section(u'|', 0, 0), r.error));
    }
  }
  // At the next turn of the event loop: when these are the job's last rows, finished() follows at once and
  // draws them (one replot, not two).
  if (!m_refreshTimer.isActive() || m_refreshTimer.remainingTime() > 0) m_refreshTimer.start(0);
}

void ErrorPanel::onJobFinished() {
  if (const QString e = m_job.error(); !e.isEmpty()) emit message(QStringLiteral("Error tab: %1").arg(e));
  // A Cancel that came after the last scheme was done cancelled nothing.
  bool missing = false;
  for (const QString& key : std::as_const(m_pendingKeys)) missing = missing || (!m_cache.contains(key) && !m_errors.contains(key));
  if (m_job.isCancelled() && missing) onCancelled();
  else onFinished();
}

void ErrorPanel::onFinished() {
  m_refreshTimer.stop();
  // Count and time first: the status bar cuts a long tensor label (a synthetic one names its size too) at 1280 px.
  if (!m_pendingKeys.isEmpty())
    emit message(QStringLiteral("Error tab: %1 scheme%2, %3 values, in %4 ms: %5")
                     .arg(m_pendingKeys.size())
                     .arg(m_pendingKeys.size() == 1 ? "" : "s")
                     .arg(errortext::count(m_tensor.size()))
                     .arg(m_clock.elapsed())
                     .arg(tensorLabel()));
  m_pendingKeys.clear();
  refresh();
  setBusy(false);
}

void ErrorPanel::onCancelled() {
  m_refreshTimer.stop();
  m_pendingKeys.clear();
  m_cancelled = true;
  refresh();
  m_recomputeButton->setVisible(true);
  emit message(QStringLiteral("Error tab: cancelled"));
  setBusy(false);
}

void ErrorPanel::scheduleRefresh() {
  if (!m_refreshTimer.isActive()) m_refreshTimer.start(40);
}

std::shared_ptr<const qs::ErrorView> ErrorPanel::view(int index) const {
  if (index < 0 || index >= int(m_schemes.size())) return nullptr;
  return m_cache.value(keyOf(m_schemes[std::size_t(index)]));
}

QString ErrorPanel::errorText(int index) const {
  if (index < 0 || index >= int(m_schemes.size())) return {};
  return m_errors.value(keyOf(m_schemes[std::size_t(index)]));
}

QString ErrorPanel::statusText() const { return m_status->text(); }

void ErrorPanel::refresh() {
  QVector<ValueHistogramPlot::Grid> grids;
  QVector<ErrorHistogramPlot::Series> series;
  QVector<ErrorMetricsTable::Row> rows;
  std::shared_ptr<const qs::ErrorView> any;
  for (int i = 0; i < int(m_schemes.size()); ++i) {
    const qs::Scheme& s = m_schemes[std::size_t(i)];
    const QString label = labelOf(s);
    const QColor color = palette::color(i);
    const auto v = view(i);
    rows.push_back({label, color, v, errorText(i), m_cancelled && !v});
    if (!v) continue;
    any = any ? any : v;
    grids.push_back({label, color, QVector<double>(v->grid.values.begin(), v->grid.values.end()),
                     QString::fromStdString(v->grid.note)});
    series.push_back({label, color, v->abs_error, v->rel_error, v->finite});
  }
  if (any) m_valuePlot->setHistogram(any->values, tensorLabel());
  else if (m_cancelled) m_valuePlot->clearHistogram(QStringLiteral("cancelled before any scheme was done: press Recompute"));
  m_valuePlot->setGrids(grids);
  m_errorPlot->setSeries(series);
  m_table->setRows(rows);

  QString status;
  if (m_tensor.isEmpty()) {
    status = QStringLiteral("Select a tensor (synthetic or from a file) in the setup dock.");
  } else {
    QStringList dims;
    for (int64_t d : m_tensor.shape) dims << QString::number(d);
    status = QStringLiteral("<b>%1</b> — %2 values%3").arg(tensorLabel().toHtmlEscaped(), errortext::count(m_tensor.size()),
                                                           dims.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(dims.join(u'×')));
    if (any && (any->nan || any->pos_inf || any->neg_inf))
      status += QStringLiteral(" · <span style='color:#b71c1c'>%1 NaN, %2 +inf, %3 −inf: counted, not quantized into "
                               "the error histograms</span>")
                    .arg(errortext::count(any->nan), errortext::count(any->pos_inf), errortext::count(any->neg_inf));
    if (!m_tensor.storedSummary.isEmpty()) status += QStringLiteral(" · ") + m_tensor.storedSummary.toHtmlEscaped();
    if (m_schemes.empty()) status += QStringLiteral(" · add schemes to compare in the setup dock");
    else if (m_busy && !m_pendingKeys.isEmpty())
      status += QStringLiteral(" · computing %1 scheme%2…").arg(m_pendingKeys.size()).arg(m_pendingKeys.size() == 1 ? "" : "s");
    if (m_cancelled) {
      int missing = 0;
      for (int i = 0; i < int(m_schemes.size()); ++i) missing += !view(i) && errorText(i).isEmpty();
      if (missing)
        status += QStringLiteral(" · cancelled: %1 of %2 schemes not computed (Recompute computes them)")
                      .arg(missing)
                      .arg(m_schemes.size());
    }
  }
  m_status->setText(status);
  emit viewsUpdated();
}

QStringList ErrorPanel::reportFiles() {
  QStringList out;
  for (const char* stem : {"error-histogram", "relative-error-histogram", "value-histogram"})
    for (const QString& suffix : plotexport::allSuffixes()) out << QString::fromLatin1(stem) + u'.' + suffix;
  out << QStringLiteral("metrics.csv");
  return out;
}

bool ErrorPanel::exportReport(const QString& dir, QString* error) {
  auto fail = [&](const QString& why) {
    if (error) *error = why;
    emit message(QStringLiteral("Error tab export failed: %1").arg(why));
    return false;
  };
  if (m_busy) waitForIdle(-1);
  const QFileInfo info(dir);
  if (!info.isDir()) return fail(QStringLiteral("cannot write %1: no such folder").arg(dir));
  QTemporaryDir staging(QDir(dir).filePath(QStringLiteral(".quantscope-export-XXXXXX")));
  if (!staging.isValid()) return fail(QStringLiteral("cannot write %1: %2").arg(dir, staging.errorString()));

  QString why;
  const ErrorMode mode = m_errorPlot->mode();
  bool ok = true;
  m_errorPlot->setMode(ErrorMode::Absolute);
  ok = ok && plotexport::exportAll(m_errorPlot, staging.path(), QStringLiteral("error-histogram"),
                                   [this] { return m_errorPlot->csv(); }, QStringLiteral("QuantScope error histogram"), &why);
  m_errorPlot->setMode(ErrorMode::Relative);
  ok = ok && plotexport::exportAll(m_errorPlot, staging.path(), QStringLiteral("relative-error-histogram"),
                                   [this] { return m_errorPlot->csv(); }, QStringLiteral("QuantScope relative error histogram"),
                                   &why);
  m_errorPlot->setMode(mode);
  ok = ok && plotexport::exportAll(m_valuePlot, staging.path(), QStringLiteral("value-histogram"),
                                   [this] { return m_valuePlot->csv(); }, QStringLiteral("QuantScope value histogram"), &why);
  ok = ok && plotexport::writeFileAtomic(QDir(staging.path()).filePath(QStringLiteral("metrics.csv")), m_table->csv(), &why);
  if (!ok) return fail(why.replace(staging.path(), dir));  // name the folder the user chose

  // Everything is written: move it into place, after checking that nothing in the way would stop
  // the moves half-way (a folder of the same name).
  for (const QString& name : reportFiles()) {
    const QFileInfo target(QDir(dir).filePath(name));
    if (target.exists() && !target.isFile())
      return fail(QStringLiteral("cannot write %1: something that is not a file is in the way").arg(target.filePath()));
  }
  for (const QString& name : reportFiles()) {
    const QString target = QDir(dir).filePath(name);
    if (QFileInfo::exists(target) && !QFile::remove(target))
      return fail(QStringLiteral("cannot write %1: the existing file cannot be replaced").arg(target));
    if (!QFile::rename(QDir(staging.path()).filePath(name), target))
      return fail(QStringLiteral("cannot write %1: moving it into place failed").arg(target));
  }
  emit message(QStringLiteral("Error tab: exported %1 files to %2").arg(reportFiles().size()).arg(QDir::toNativeSeparators(dir)));
  return true;
}

QString ErrorPanel::reportStage() const { return QStringLiteral("error histograms"); }

bool ErrorPanel::writeReportSection(const ReportSection::Context& ctx, QString* error) {
  if (!exportReport(ctx.dir, error)) return false;
  ctx.message(QStringLiteral("report: error-histogram written"));
  return true;
}
