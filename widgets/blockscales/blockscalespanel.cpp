// BlockScalesPanel: block-scale rules side by side, see blockscalespanel.h.
#include "blockscalespanel.h"

#include "shared/elidedlabel.h"
#include "shared/errortext.h"
#include "shared/jobcontrols.h"
#include "shared/plotexport.h"
#include "shared/plotstyle.h"
#include "shared/palette.h"
#include "shared/theme.h"

#include <QComboBox>
#include <QEventLoop>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QToolButton>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QThread>
#include <QTimer>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include <algorithm>
#include <optional>
#include <charconv>
#include <climits>
#include <cmath>
#include <map>

#include "io/csv.h"
#include "format/scale_rule.h"

namespace {

constexpr std::size_t kMaxValues = std::size_t(1) << 24;  // 16 M: q is kept per rule for the inspector

QString shortNumber(double v) { return QString::number(v, 'g', 6).replace(u'-', u'−'); }

// A float32 in the fewest digits that read back to it exactly (the inspector's values are exact).
QString floatText(float v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? QString::fromLatin1(buf, int(end - buf)).replace(u'-', u'−') : shortNumber(v);
}

QString scaleText(float s) {
  if (!(s > 0)) return QStringLiteral("0");
  const double e = std::log2(double(s));
  if (e == std::floor(e)) return QStringLiteral("2^%1").arg(int(e));
  return shortNumber(s);
}

}  // namespace

std::vector<std::pair<QString, QString>> BlockScalesPanel::ruleSchemes(Family f, const QString& element, int block) {
  if (f == Family::Nvfp4) {
    const QString base = QStringLiteral("%1/block:%2:e4m3fn").arg(element).arg(block);
    return {{QStringLiteral("amax/6"), base}, {QStringLiteral("mse"), base + QStringLiteral(":mse")}};
  }
  const QString base = QStringLiteral("%1/block:%2:e8m0fnu").arg(element).arg(block);
  return {{QStringLiteral("floor"), base},
          {QStringLiteral("ceil"), base + QStringLiteral(":ceil")},
          {QStringLiteral("even"), base + QStringLiteral(":even")},
          {QStringLiteral("rceil"), base + QStringLiteral(":rceil")}};
}

BlockScalesPanel::Result BlockScalesPanel::run(const TensorData& t, Family f, const QString& element, int block,
                                               const std::atomic<bool>& cancelled,
                                               const std::function<void(int, int)>& progress) {
  Result r;
  r.family = f;
  r.element = element;
  r.block = block;
  r.sweepBlocks = {16, 32, 64, 128};
  if (t.isEmpty()) {
    r.error = QStringLiteral("no tensor: choose one in the Setup dock");
    return r;
  }
  if (t.size() > kMaxValues) {
    r.error = QStringLiteral("%1 values: the block view takes at most %2 (choose a smaller tensor)")
                  .arg(errortext::count(t.size()), errortext::count(kMaxValues));
    return r;
  }
  const float* x = t.values->data();
  const std::size_t n = t.size();
  std::vector<int64_t> shape = t.shape;
  std::size_t prod = 1;
  for (int64_t d : shape) prod *= std::size_t(std::max<int64_t>(d, 0));
  if (shape.empty() || prod != n) shape = {int64_t(n)};
  r.cols = std::size_t(shape.back());
  r.rows = n / r.cols;
  r.blocksPerRow = (r.cols + std::size_t(block) - 1) / std::size_t(block);
  const auto specs = ruleSchemes(f, element, block);
  const int total = int(specs.size() * (1 + r.sweepBlocks.size()));
  int done = 0;
  qs::ErrorViewOptions opt;
  opt.threads = std::max(1, QThread::idealThreadCount() - 1);
  const qs::ProgressFn keepGoing = [&](std::size_t, std::size_t) { return !cancelled.load(); };
  double tensorAmax = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (std::isfinite(x[i])) tensorAmax = std::max(tensorAmax, double(std::abs(x[i])));
  try {
    for (const auto& [name, text] : specs) {
      Rule rule;
      rule.name = name;
      rule.scheme = qs::parse_scheme(text.toStdString());
      rule.view = qs::compute_error_view(rule.scheme, x, shape, opt, keepGoing, &rule.q);
      if (cancelled.load() || rule.view.cancelled) return r.cancelled = true, r;
      // Each block's scale by the engine's rule, and what it did to the block.
      const qs::ScaleRuleParams params = qs::scale_rule_params(rule.scheme);
      const float ts = params.rule == qs::ScaleRule::TwoLevel ? qs::two_level_tensor_scale(params, tensorAmax) : 1.0f;
      const std::vector<double> candidates = rule.scheme.mse ? qs::search_candidates(rule.scheme) : std::vector<double>{};
      std::optional<qs::BlockScaleSearch> search;  // prepared once per tensor
      if (rule.scheme.mse) search.emplace(rule.scheme, candidates, ts);
      const std::size_t blocks = r.rows * r.blocksPerRow;
      rule.scale.assign(blocks, 0.0f);
      rule.clipped.assign(blocks, 0);
      rule.flushed.assign(blocks, 0);
      const std::size_t wholeBlocks = r.cols / std::size_t(block);
      std::vector<float> searched(r.blocksPerRow);
      for (std::size_t row = 0; row < r.rows; ++row) {
        if (cancelled.load()) return r.cancelled = true, r;
        if (search) {  // the row's whole blocks in one batched call (several blocks a vector pass), a short one alone
          const float* xr = x + row * r.cols;
          search->scales(xr, std::size_t(block), wholeBlocks, searched.data());
          if (wholeBlocks < r.blocksPerRow)
            searched[wholeBlocks] = (*search)(xr + wholeBlocks * std::size_t(block), r.cols - wholeBlocks * std::size_t(block));
        }
        for (std::size_t j = 0; j < r.blocksPerRow; ++j) {
          const std::size_t off = row * r.cols + j * std::size_t(block);
          const std::size_t len = std::min<std::size_t>(std::size_t(block), r.cols - j * std::size_t(block));
          double amax = 0;
          for (std::size_t k = 0; k < len; ++k)
            if (std::isfinite(x[off + k])) amax = std::max(amax, double(std::abs(x[off + k])));
          const float s = search ? searched[j]
                                          : qs::group_scale(params, {amax}, ts, qs::scale_format_round(rule.scheme)).scale;
          const std::size_t b = row * r.blocksPerRow + j;
          rule.scale[b] = s;
          const double bound = qs::clip_bound(rule.scheme.format, s);
          for (std::size_t k = 0; k < len; ++k) {
            const float v = x[off + k];
            if (!std::isfinite(v)) continue;
            if (qs::scale_is_usable(s) && std::abs(double(v)) > bound) ++rule.clipped[b];
            if (v != 0 && rule.q[off + k] == 0) ++rule.flushed[b];
          }
        }
      }
      r.rules.push_back(std::move(rule));
      if (progress) progress(++done, total);
    }
    // SQNR against the block size, per rule.
    r.sweepSqnr.assign(specs.size(), std::vector<double>(r.sweepBlocks.size(), std::nan("")));
    for (std::size_t i = 0; i < specs.size(); ++i)
      for (std::size_t k = 0; k < r.sweepBlocks.size(); ++k) {
        if (cancelled.load()) return r.cancelled = true, r;
        const int b = r.sweepBlocks[k];
        if (b == block) {
          r.sweepSqnr[i][k] = r.rules[i].view.metrics.sqnr_db();
        } else {
          const qs::Scheme s = qs::parse_scheme(ruleSchemes(f, element, b)[i].second.toStdString());
          qs::ErrorViewOptions small = opt;
          small.value_bins = 16;
          const qs::ErrorView v = qs::compute_error_view(s, x, shape, small, keepGoing);
          if (v.cancelled) return r.cancelled = true, r;
          r.sweepSqnr[i][k] = v.metrics.sqnr_db();
        }
        if (progress) progress(++done, total);
      }
  } catch (const std::exception& e) {
    r.error = QString::fromUtf8(e.what());
  }
  return r;
}

BlockScalesPanel::BlockScalesPanel(QWidget* parent) : QWidget(parent) {
  buildUi();
  connect(&m_job, &JobRunnerBase::finished, this, &BlockScalesPanel::onFinished);
  setStatus(QStringLiteral("The scale rules of one block-scheme family, side by side on the current tensor."));
}

BlockScalesPanel::~BlockScalesPanel() { m_job.cancelAndWait(); }

void BlockScalesPanel::buildUi() {
  m_familyBox = new QComboBox;
  m_familyBox->setObjectName(QStringLiteral("blockFamily"));
  m_familyBox->addItems({QStringLiteral("MX: E8M0 block scales"), QStringLiteral("NVFP4: E4M3 block scales")});
  m_elementBox = new QComboBox;
  m_elementBox->setObjectName(QStringLiteral("blockElement"));
  m_elementBox->addItems({QStringLiteral("e2m1fn"), QStringLiteral("e2m3fn"), QStringLiteral("e3m2fn"), QStringLiteral("e4m3fn"),
                          QStringLiteral("e5m2"), QStringLiteral("int8")});
  m_blockBox = new QComboBox;
  m_blockBox->setObjectName(QStringLiteral("blockSize"));
  for (int b : {16, 32, 64, 128}) m_blockBox->addItem(QStringLiteral("block %1").arg(b), b);
  m_blockBox->setCurrentIndex(1);
  m_computeButton = new QPushButton(QStringLiteral("Compute"));
  m_computeButton->setObjectName(QStringLiteral("blockCompute"));
  m_exportButton = plotexport::makeExportButton(&m_exportMenu);
  m_exportButton->setObjectName(QStringLiteral("blockScalesExport"));
  m_controls = new JobControls(&m_job, this, JobControls::HideBarWhenIdle);
  m_controls->cancelButton()->setObjectName(QStringLiteral("blockCancel"));
  m_controls->progressBar()->setMaximumWidth(160);
  m_status = new ElidedLabel;
  m_status->setObjectName(QStringLiteral("blockStatus"));
  m_status->setWordWrap(true);
  m_status->setMaximumLines(2);

  m_table = new QTableWidget(0, 7);
  m_table->setObjectName(QStringLiteral("blockRuleTable"));
  m_table->setHorizontalHeaderLabels({QStringLiteral("rule"), QStringLiteral("SQNR\n(dB)"), QStringLiteral("bits/\nvalue"),
                                      QStringLiteral("clipped"), QStringLiteral("flushed\nto 0"), QStringLiteral("blocks\nthat clip"),
                                      QStringLiteral("scale\nexponents")});
  const char* tips[] = {"The rule that picks each block's scale",
                        "10·log10(Σx² / Σ(x−q)²) over the finite values",
                        "Storage per value with the scales (element bits + scale bits per block)",
                        "Values beyond their block's clip bound (scale × the format's overflow threshold)",
                        "Non-zero values that became zero",
                        "Blocks with at least one clipped value",
                        "The range of log2 of the chosen block scales"};
  for (int c = 0; c < 7; ++c) {
    m_table->horizontalHeaderItem(c)->setToolTip(QString::fromUtf8(tips[c]));
    m_table->horizontalHeaderItem(c)->setWhatsThis(QString::fromUtf8(tips[c]));
  }
  m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_table->horizontalHeader()->setStretchLastSection(true);
  m_table->verticalHeader()->setVisible(false);
  m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
  m_table->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);

  m_sweep = new QCustomPlot;
  m_sweep->setObjectName(QStringLiteral("blockSweepPlot"));
  m_exponents = new QCustomPlot;
  m_exponents->setObjectName(QStringLiteral("blockExponentPlot"));
  m_mapPlot = new QCustomPlot;
  m_mapPlot->setObjectName(QStringLiteral("blockMapPlot"));
  for (QCustomPlot* p : {m_sweep, m_exponents, m_mapPlot}) {
    p->setMinimumSize(220, 110);
    for (QCPAxis* a : {p->xAxis, p->yAxis}) plotstyle::styleGrid(a);
  }
  plotstyle::addTitle(m_sweep, QStringLiteral("SQNR against the block size (colours as in the table)"));
  m_sweep->xAxis->setLabel(QStringLiteral("block size"));
  m_sweep->yAxis->setLabel(QStringLiteral("SQNR (dB)"));
  m_sweep->xAxis->setScaleType(QCPAxis::stLogarithmic);
  {
    auto t = QSharedPointer<QCPAxisTickerText>::create();
    for (int b : {16, 32, 64, 128}) t->addTick(b, QString::number(b));
    m_sweep->xAxis->setTicker(t);
    m_sweep->xAxis->setRange(12, 170);
  }
  m_sweep->legend->setVisible(false);  // the rules' colours are the table's (its rule column is coloured)
  plotstyle::addTitle(m_exponents, QStringLiteral("Chosen block scales"));
  m_exponents->xAxis->setLabel(QStringLiteral("floor(log2 scale)"));
  m_exponents->yAxis->setLabel(QStringLiteral("blocks"));
  {
    auto t = QSharedPointer<QCPAxisTickerFixed>::create();  // exponents are whole numbers
    t->setTickStep(1);
    t->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    m_exponents->xAxis->setTicker(t);
  }
  m_exponents->legend->setVisible(false);
  plotstyle::addTitle(m_mapPlot, QStringLiteral("Every block"));
  m_mapPlot->xAxis->setLabel(QStringLiteral("block along the row"));
  m_mapPlot->yAxis->setLabel(QStringLiteral("row"));
  m_mapPlot->yAxis->setRangeReversed(true);
  m_map = new QCPColorMap(m_mapPlot->xAxis, m_mapPlot->yAxis);
  m_map->setInterpolate(false);
  QCPColorGradient g(QCPColorGradient::gpCold);
  g.setNanHandling(QCPColorGradient::nhNanColor);
  g.setNanColor(QColor(228, 228, 228));
  m_map->setGradient(g);
  auto* scale = new QCPColorScale(m_mapPlot);
  scale->setBarWidth(10);
  m_mapPlot->plotLayout()->addElement(1, 1, scale);
  m_map->setColorScale(scale);
  scale->setGradient(g);
  m_mapPlot->setWhatsThis(QStringLiteral("One cell per block (rows of the tensor down, blocks along each row across): "
                                         "the chosen quantity under the chosen rule. Click a block to see its values "
                                         "under every rule."));
  m_sweep->setWhatsThis(QStringLiteral("SQNR of the whole tensor for block sizes 16 to 128, one line per rule: "
                                       "smaller blocks follow the data closer but store more scales."));
  m_exponents->setWhatsThis(QStringLiteral("How many blocks got each power-of-two scale (floor of log2 for "
                                           "NVFP4's non-power-of-two scales), per rule."));
  m_mapRuleBox = new QComboBox;
  m_mapRuleBox->setObjectName(QStringLiteral("blockMapRule"));
  m_mapQuantityBox = new QComboBox;
  m_mapQuantityBox->setObjectName(QStringLiteral("blockMapQuantity"));
  m_mapQuantityBox->addItems({QStringLiteral("clipped"), QStringLiteral("flushed to 0"), QStringLiteral("log2 scale")});
  m_inspector = new QTableWidget;
  m_inspector->setObjectName(QStringLiteral("blockInspector"));
  m_inspector->verticalHeader()->setVisible(false);
  m_inspector->setEditTriggers(QAbstractItemView::NoEditTriggers);
  m_inspector->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  m_inspector->verticalHeader()->setDefaultSectionSize(m_inspector->fontMetrics().height() + 4);

  auto* bar = new QHBoxLayout;
  bar->addWidget(m_familyBox);
  bar->addWidget(m_elementBox);
  bar->addWidget(m_blockBox);
  bar->addWidget(m_computeButton);
  bar->addStretch(1);
  bar->addWidget(m_controls->progressBar());
  bar->addWidget(m_controls->cancelButton());
  bar->addWidget(m_exportButton);
  auto* mapBar = new QHBoxLayout;
  mapBar->addWidget(new QLabel(QStringLiteral("Map:")));
  mapBar->addWidget(m_mapQuantityBox);
  mapBar->addWidget(new QLabel(QStringLiteral("under")));
  mapBar->addWidget(m_mapRuleBox);
  mapBar->addStretch(1);
  auto* mapSide = new QWidget;
  auto* mapLayout = new QVBoxLayout(mapSide);
  mapLayout->setContentsMargins(0, 0, 0, 0);
  mapLayout->addLayout(mapBar);
  mapLayout->addWidget(m_mapPlot, 1);
  auto* inspectorSide = new QWidget;
  auto* inspectorLayout = new QVBoxLayout(inspectorSide);
  inspectorLayout->setContentsMargins(0, 0, 0, 0);
  auto* inspectorTitle = new QLabel(QStringLiteral("<b>Block inspector</b>: click a block in the map"));
  inspectorTitle->setWordWrap(true);
  inspectorLayout->addWidget(inspectorTitle);
  inspectorLayout->addWidget(m_inspector, 1);

  // Below the table, one view at a time with the whole height: a laptop screen leaves no room for four.
  auto* scalesPage = new QSplitter(Qt::Horizontal);
  scalesPage->addWidget(m_sweep);
  scalesPage->addWidget(m_exponents);
  auto* blocksPage = new QSplitter(Qt::Horizontal);
  blocksPage->addWidget(mapSide);
  blocksPage->addWidget(inspectorSide);
  blocksPage->setStretchFactor(0, 3);
  blocksPage->setStretchFactor(1, 2);
  auto* plots = new QTabWidget;
  plots->setObjectName(QStringLiteral("blockViews"));
  plots->setDocumentMode(true);
  plots->addTab(blocksPage, QStringLiteral("Every block and the inspector"));
  plots->addTab(scalesPage, QStringLiteral("Block size sweep and chosen scales"));
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(10, 8, 10, 4);
  layout->addLayout(bar);
  layout->addWidget(m_status);
  layout->addWidget(m_table);
  layout->addWidget(plots, 1);

  QMenu* menu = m_exportMenu;
  menu->addAction(QStringLiteral("Rules as CSV…"), this, [this] {
    plotexport::exportInteractive(this, m_sweep, QStringLiteral("block-rules"), [this] { return csv(); },
                                  QStringLiteral("Block-scale rules"), true);
  });
  for (QCustomPlot* p : {m_sweep, m_exponents, m_mapPlot})
    menu->addAction(plotstyle::fullText(qobject_cast<QCPTextElement*>(p->plotLayout()->element(0, 0))) + QStringLiteral("…"), this,
                    [this, p] {
                      plotexport::exportInteractive(this, p, p->objectName(), [this] { return csv(); },
                                                    QStringLiteral("Block-scale rules"));
                    });
  for (QCustomPlot* p : {m_sweep, m_exponents, m_mapPlot})
    plotexport::installContextMenu(p, p->objectName(), [this] { return csv(); }, QStringLiteral("Block-scale rules"));

  connect(m_computeButton, &QPushButton::clicked, this, &BlockScalesPanel::compute);
  connect(m_familyBox, &QComboBox::currentIndexChanged, this, [this](int i) {
    // NVFP4 is E2M1 in blocks of 16 by definition; other choices stay open for comparison.
    if (i == int(Family::Nvfp4)) {
      m_elementBox->setCurrentText(QStringLiteral("e2m1fn"));
      m_blockBox->setCurrentIndex(0);
    }
    compute();
  });
  connect(m_elementBox, &QComboBox::currentIndexChanged, this, &BlockScalesPanel::compute);
  connect(m_blockBox, &QComboBox::currentIndexChanged, this, &BlockScalesPanel::compute);
  connect(m_mapRuleBox, &QComboBox::currentIndexChanged, this, [this](int i) { showMap(i, m_mapQuantityBox->currentIndex()); });
  connect(m_mapQuantityBox, &QComboBox::currentIndexChanged, this, [this](int q) { showMap(m_mapRuleBox->currentIndex(), q); });
  connect(m_mapPlot, &QCustomPlot::mouseRelease, this, [this](QMouseEvent* e) {
    if (!m_result || m_result->rules.empty() || !m_mapPlot->axisRect()->rect().contains(e->pos())) return;
    const long j = std::lround(m_mapPlot->xAxis->pixelToCoord(e->pos().x()));
    const long row = std::lround(m_mapPlot->yAxis->pixelToCoord(e->pos().y()));
    if (j < 0 || row < 0 || std::size_t(j) >= m_result->blocksPerRow || std::size_t(row) >= m_result->rows) return;
    selectBlock(std::size_t(row) * m_result->blocksPerRow + std::size_t(j));
  });
}

void BlockScalesPanel::setStatus(const QString& text, bool error) {
  m_status->setStyleSheet(error ? theme::errorCss(this) : QString());
  m_status->setText(text);
}

QString BlockScalesPanel::statusText() const { return m_status->text(); }

void BlockScalesPanel::setTensor(const TensorData& tensor) {
  m_tensor = tensor;
  m_stale = true;
  if (isVisible()) compute();
}

void BlockScalesPanel::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  if (m_stale && !isBusy()) compute();
}

bool BlockScalesPanel::setFamily(Family f, const QString& element, int block, QString* error) {
  const int bi = m_blockBox->findData(block);
  if (m_elementBox->findText(element) < 0 || bi < 0) {
    if (error) *error = QStringLiteral("element %1 / block %2 is not offered").arg(element).arg(block);
    return false;
  }
  const QSignalBlocker b1(m_familyBox), b2(m_elementBox), b3(m_blockBox);
  m_familyBox->setCurrentIndex(int(f));
  m_elementBox->setCurrentText(element);
  m_blockBox->setCurrentIndex(bi);
  compute();
  return true;
}

BlockScalesPanel::Family BlockScalesPanel::family() const { return Family(m_familyBox->currentIndex()); }
QString BlockScalesPanel::element() const { return m_elementBox->currentText(); }
int BlockScalesPanel::blockSize() const { return m_blockBox->currentData().toInt(); }

void BlockScalesPanel::compute() {
  m_stale = false;
  const TensorData t = m_tensor;
  const Family f = Family(m_familyBox->currentIndex());
  const QString element = m_elementBox->currentText();
  const int block = m_blockBox->currentData().toInt();
  if (!isBusy()) emit busyChanged(true);
  m_controls->progressBar()->setRange(0, 0);
  setStatus(QStringLiteral("Computing %1 rules on %2 …").arg(f == Family::Mx ? 4 : 2).arg(t.name.isEmpty() ? QStringLiteral("no tensor") : elide::middle(t.name, 80)));
  // A computation in flight stops (within one block row) and this one starts when it has; its result and
  // its finished() are dropped (JobRunner::restart).
  m_job.restart([t, f, element, block](JobRunner<std::monostate, Result>::Sink& sink) {
    sink.setResult(run(t, f, element, block, *sink.cancelFlag(), [&sink](int done, int total) {
      sink.setProgressRange(0, total);
      sink.setProgressValue(done);
    }));
  });
}

void BlockScalesPanel::cancel() { m_controls->cancel(); }

bool BlockScalesPanel::waitForIdle(int ms) {
  if (!isBusy()) return true;
  QEventLoop loop;
  QTimer timeout;
  timeout.setSingleShot(true);
  connect(this, &BlockScalesPanel::busyChanged, &loop, [&loop](bool busy) {
    if (!busy) loop.quit();
  });
  connect(&timeout, &QTimer::timeout, &loop, &QEventLoop::quit);
  timeout.start(ms);
  loop.exec();
  return !isBusy();
}

void BlockScalesPanel::onFinished() {
  std::optional<Result> got = m_job.takeResult();
  Result r = got ? std::move(*got) : Result{};
  if (!got) {  // the job threw, or was cancelled before its worker started
    r.error = m_job.error();
    r.cancelled = r.error.isEmpty();
  }
  if (!r.error.isEmpty()) {
    setStatus(r.error, true);
  } else if (r.cancelled) {
    setStatus(QStringLiteral("Cancelled: the table and plots show the last complete result. Compute starts again."));
  } else {
    m_result = std::make_unique<Result>(std::move(r));
    const Rule* best = nullptr;
    for (const Rule& rule : m_result->rules)
      if (!best || rule.view.metrics.sqnr_db() > best->view.metrics.sqnr_db()) best = &rule;
    QStringList parts;
    for (const Rule& rule : m_result->rules)
      parts << QStringLiteral("%1 %2 dB").arg(rule.name, errortext::decibel(rule.view.metrics.sqnr_db()));
    setStatus(QStringLiteral("%1 (%2 × %3, blocks of %4): %5. Best: %6.")
                  .arg(elide::middle(m_tensor.name, 80))
                  .arg(m_result->rows)
                  .arg(m_result->cols)
                  .arg(m_result->block)
                  .arg(parts.join(QStringLiteral(", ")), best ? best->name : QString()));
    emit message(QStringLiteral("Block scales: ") + parts.join(QStringLiteral(", ")));
    fillTable();
    fillSweep();
    fillExponents();
    {
      const QSignalBlocker block(m_mapRuleBox);
      m_mapRuleBox->clear();
      for (const Rule& rule : m_result->rules) m_mapRuleBox->addItem(rule.name);
    }
    showMap(std::min(m_mapRule, int(m_result->rules.size()) - 1), m_mapQuantity);
    selectBlock(0);
  }
  emit busyChanged(false);
}

void BlockScalesPanel::fillTable() {
  const auto& rules = m_result->rules;
  m_table->setRowCount(int(rules.size()));
  // As tall as its rows (2 or 4): no scrolling for four lines of numbers.
  m_table->setFixedHeight(m_table->horizontalHeader()->sizeHint().height() +
                          int(rules.size()) * m_table->verticalHeader()->defaultSectionSize() + 2 * m_table->frameWidth() + 2);
  for (int i = 0; i < int(rules.size()); ++i) {
    const Rule& r = rules[std::size_t(i)];
    std::size_t clipBlocks = 0;
    for (uint32_t c : r.clipped) clipBlocks += c > 0;
    uint64_t flushed = 0;
    for (uint32_t f : r.flushed) flushed += f;
    int lo = INT_MAX, hi = INT_MIN;
    for (float s : r.scale)
      if (s > 0) lo = std::min(lo, int(std::floor(std::log2(double(s))))), hi = std::max(hi, int(std::floor(std::log2(double(s)))));
    const QString cells[] = {r.name,
                             errortext::decibel(r.view.metrics.sqnr_db()),
                             QString::number(r.view.bits_per_value, 'g', 4),
                             errortext::count(r.view.clipped),
                             errortext::count(flushed),
                             QStringLiteral("%1 of %2").arg(errortext::count(clipBlocks), errortext::count(r.clipped.size())),
                             lo <= hi ? QStringLiteral("%1 … %2").arg(lo).arg(hi) : QStringLiteral("—")};
    for (int c = 0; c < 7; ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      if (c == 0) {
        item->setForeground(palette::color(i));
        item->setToolTip(QString::fromStdString(r.scheme.text));
      } else {
        item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      }
      m_table->setItem(i, c, item);
    }
  }
}

void BlockScalesPanel::fillSweep() {
  m_sweep->clearGraphs();
  double lo = INFINITY, hi = -INFINITY;
  for (std::size_t i = 0; i < m_result->rules.size(); ++i) {
    QCPGraph* g = m_sweep->addGraph();
    g->setName(m_result->rules[i].name);
    g->setPen(QPen(palette::color(int(i)), 1.6));
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, palette::color(int(i)), 5));
    for (std::size_t k = 0; k < m_result->sweepBlocks.size(); ++k) {
      const double v = m_result->sweepSqnr[i][k];
      g->addData(m_result->sweepBlocks[k], v);
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    }
  }
  if (hi >= lo) m_sweep->yAxis->setRange(lo - 1, hi + 1);
  m_sweep->replot(QCustomPlot::rpQueuedReplot);
}

void BlockScalesPanel::fillExponents() {
  m_exponents->clearPlottables();
  auto* group = new QCPBarsGroup(m_exponents);
  const double n = double(m_result->rules.size());
  int lo = INT_MAX, hi = INT_MIN;
  double top = 1;
  for (std::size_t i = 0; i < m_result->rules.size(); ++i) {
    std::map<int, double> counts;
    for (float s : m_result->rules[i].scale)
      if (s > 0) counts[int(std::floor(std::log2(double(s))))] += 1;
    auto* bars = new QCPBars(m_exponents->xAxis, m_exponents->yAxis);
    bars->setName(m_result->rules[i].name);
    bars->setWidth(0.8 / n);
    bars->setBarsGroup(group);
    bars->setPen(Qt::NoPen);
    bars->setBrush(palette::color(int(i)));
    for (const auto& [e, c] : counts) {
      bars->addData(e, c);
      lo = std::min(lo, e), hi = std::max(hi, e), top = std::max(top, c);
    }
  }
  if (lo <= hi) m_exponents->xAxis->setRange(lo - 1, hi + 1);
  m_exponents->yAxis->setRange(0, top * 1.1);
  m_exponents->replot(QCustomPlot::rpQueuedReplot);
}

void BlockScalesPanel::showMap(int rule, int quantity) {
  m_mapRule = std::max(0, rule);
  m_mapQuantity = std::clamp(quantity, 0, 2);
  if (!m_result || m_result->rules.empty()) return;
  const Rule& r = m_result->rules[std::size_t(std::min<int>(m_mapRule, int(m_result->rules.size()) - 1))];
  const int nx = int(m_result->blocksPerRow), ny = int(m_result->rows);
  m_map->data()->setSize(std::max(nx, 2), std::max(ny, 2));
  m_map->data()->setRange(QCPRange(0, std::max(nx, 2) - 1), QCPRange(0, std::max(ny, 2) - 1));
  m_map->data()->fill(std::nan(""));
  for (int row = 0; row < ny; ++row)
    for (int j = 0; j < nx; ++j) {
      const std::size_t b = std::size_t(row) * m_result->blocksPerRow + std::size_t(j);
      const double v = m_mapQuantity == 0   ? double(r.clipped[b])
                       : m_mapQuantity == 1 ? double(r.flushed[b])
                                            : (r.scale[b] > 0 ? std::log2(double(r.scale[b])) : std::nan(""));
      m_map->data()->setCell(j, row, v);
    }
  m_map->rescaleDataRange(true);
  m_map->colorScale()->axis()->setLabel(m_mapQuantity == 0 ? QStringLiteral("clipped") : m_mapQuantity == 1 ? QStringLiteral("flushed") : QStringLiteral("log2 scale"));
  m_mapPlot->xAxis->setRange(-0.5, std::max(nx, 1) - 0.5);
  m_mapPlot->yAxis->setRange(-0.5, std::max(ny, 1) - 0.5);
  plotstyle::setText(qobject_cast<QCPTextElement*>(m_mapPlot->plotLayout()->element(0, 0)),
                     QStringLiteral("Every block · %1 under %2").arg(m_mapQuantityBox->itemText(m_mapQuantity), r.name));
  if (m_mapRuleBox->currentIndex() != m_mapRule) {
    const QSignalBlocker block(m_mapRuleBox);
    m_mapRuleBox->setCurrentIndex(m_mapRule);
  }
  if (m_mapQuantityBox->currentIndex() != m_mapQuantity) {
    const QSignalBlocker block(m_mapQuantityBox);
    m_mapQuantityBox->setCurrentIndex(m_mapQuantity);
  }
  m_mapPlot->replot(QCustomPlot::rpQueuedReplot);
}

void BlockScalesPanel::selectBlock(std::size_t index) {
  if (!m_result || m_result->rules.empty() || index >= m_result->rows * m_result->blocksPerRow) return;
  const std::size_t row = index / m_result->blocksPerRow, j = index % m_result->blocksPerRow;
  const std::size_t off = row * m_result->cols + j * std::size_t(m_result->block);
  const std::size_t len = std::min<std::size_t>(std::size_t(m_result->block), m_result->cols - j * std::size_t(m_result->block));
  const auto& rules = m_result->rules;
  m_inspector->clear();
  m_inspector->setColumnCount(int(rules.size()) + 1);
  m_inspector->setRowCount(int(len));
  QStringList headers{QStringLiteral("x (row %1, block %2)").arg(row).arg(j)};
  for (const Rule& r : rules) headers << QStringLiteral("%1\nscale %2").arg(r.name, scaleText(r.scale[index]));
  m_inspector->setHorizontalHeaderLabels(headers);
  const float* x = m_tensor.values->data();
  for (std::size_t k = 0; k < len; ++k) {
    auto* xi = new QTableWidgetItem(floatText(x[off + k]));
    xi->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    m_inspector->setItem(int(k), 0, xi);
    for (std::size_t i = 0; i < rules.size(); ++i) {
      const float q = rules[i].q[off + k];
      auto* item = new QTableWidgetItem(floatText(q));
      item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      const double bound = qs::clip_bound(rules[i].scheme.format, rules[i].scale[index]);
      if (std::isfinite(x[off + k]) && qs::scale_is_usable(rules[i].scale[index]) && std::abs(double(x[off + k])) > bound) {
        item->setForeground(theme::errorColor(this));
        item->setToolTip(QStringLiteral("clipped: |x| beyond %1").arg(shortNumber(bound)));
      } else if (x[off + k] != 0 && q == 0) {
        item->setForeground(theme::warningColor(this));
        item->setToolTip(QStringLiteral("flushed to zero"));
      }
      m_inspector->setItem(int(k), int(i) + 1, item);
    }
  }
}

QByteArray BlockScalesPanel::csv() const {
  QByteArray out("rule,scheme,block,sqnr_db,bits_per_value,clipped,flushed,blocks,blocks_clipping\n");
  if (!m_result) return out;
  for (const Rule& r : m_result->rules) {
    uint64_t flushed = 0, clipBlocks = 0;
    for (uint32_t f : r.flushed) flushed += f;
    for (uint32_t c : r.clipped) clipBlocks += c > 0;
    out += QByteArray::fromStdString(qs::csv_field(r.name.toStdString())) + ',' +
           QByteArray::fromStdString(qs::csv_field(r.scheme.text)) + ',' + QByteArray::number(m_result->block) + ',' +
           plotexport::number(r.view.metrics.sqnr_db()) + ',' + plotexport::number(r.view.bits_per_value) + ',' +
           QByteArray::number(qulonglong(r.view.clipped)) + ',' + QByteArray::number(qulonglong(flushed)) + ',' +
           QByteArray::number(qulonglong(r.scale.size())) + ',' + QByteArray::number(qulonglong(clipBlocks)) + '\n';
  }
  return out;
}

bool BlockScalesPanel::exportAll(const QString& dir, QString* error) {
  if (!m_result) return true;
  return plotexport::exportAll(m_sweep, dir, QStringLiteral("block-sqnr-sweep"), [this] { return csv(); },
                               QStringLiteral("SQNR against the block size"), error, QSize(900, 500)) &&
         plotexport::exportAll(m_exponents, dir, QStringLiteral("block-scale-exponents"), [this] { return csv(); },
                               QStringLiteral("Chosen block scales"), error, QSize(900, 500));
}

QString BlockScalesPanel::reportStage() const { return QString(); }

bool BlockScalesPanel::writeReportSection(const ReportSection::Context& ctx, QString* error) {
  // The comparison, when one was computed.
  return exportAll(ctx.dir, error);
}
