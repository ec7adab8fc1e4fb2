// ObserversPanel: observers animated over a stream of batches, see observerspanel.h.
#include "observerspanel.h"

#include "shared/elidedlabel.h"
#include "shared/errortext.h"
#include "shared/formatpicker.h"
#include "shared/plotexport.h"
#include "shared/plotstyle.h"
#include "shared/palette.h"
#include "shared/theme.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QEventLoop>
#include <QFileDialog>
#include <QFormLayout>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QToolButton>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QStyle>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "io/csv.h"

bool ObserversPanel::Config::operator==(const Config& o) const {
  return format == o.format && observers == o.observers && batches == o.batches && fromTensor == o.fromTensor &&
         stream.dist == o.stream.dist && stream.batch_size == o.stream.batch_size && stream.drift == o.stream.drift &&
         stream.spikes == o.stream.spikes && stream.spike_scale == o.stream.spike_scale && stream.seed == o.stream.seed;
}

ObserversPanel::ObserversPanel(QWidget* parent) : QWidget(parent) {
  m_config.stream.spikes = {60};
  m_config.stream.drift = 0.005;
  buildUi();
  syncControls(m_config);
  m_timer.setInterval(16);
  connect(&m_timer, &QTimer::timeout, this, &ObserversPanel::tick);
  connect(&m_work, &JobRunnerBase::finished, this, &ObserversPanel::onBatchDone);
  clearPlots();
  setStatus(QStringLiteral("Press Start to stream %1 batches through the observers.").arg(m_config.batches));
}

void ObserversPanel::buildUi() {
  m_format = new FormatPicker(QStringLiteral("observers"), true);
  m_format->setToolTip(QStringLiteral("Element format the scales are for: scale = clip / max finite value"));
  m_source = new QComboBox;
  m_source->setObjectName(QStringLiteral("observerSource"));
  m_source->addItems({QStringLiteral("synthetic stream"), QStringLiteral("rows of the current tensor")});
  m_dist = new QComboBox;
  m_dist->setObjectName(QStringLiteral("observerDist"));
  for (qs::Distribution d : qs::all_distributions())
    m_dist->addItem(QString::fromLatin1(qs::distribution_name(d).data()), int(d));
  m_batchSize = new QSpinBox;
  m_batchSize->setRange(16, 1 << 22);
  m_batchSize->setSingleStep(1024);
  m_batchCount = new QSpinBox;
  m_batchCount->setObjectName(QStringLiteral("observerBatches"));
  m_batchCount->setRange(1, 100000);
  m_drift = new QDoubleSpinBox;
  m_drift->setRange(-50, 50);
  m_drift->setDecimals(2);
  m_drift->setSuffix(QStringLiteral(" % / batch"));
  m_spikes = new QLineEdit;
  m_spikes->setObjectName(QStringLiteral("observerSpikes"));
  m_spikes->setPlaceholderText(QStringLiteral("batch indices, e.g. 40,80"));
  m_spikeScale = new QDoubleSpinBox;
  m_spikeScale->setRange(0.001, 1e6);
  m_spikeScale->setDecimals(2);
  m_spikeScale->setPrefix(QStringLiteral("× "));
  m_seed = new QSpinBox;
  m_seed->setRange(0, 1'000'000);

  m_useCurrent = new QCheckBox(QStringLiteral("current amax"));
  m_useCurrent->setToolTip(QStringLiteral("Current scaling: each batch's own amax (the reference: what an oracle would use)"));
  m_useMinMax = new QCheckBox(QStringLiteral("MinMax"));
  m_useMinMax->setToolTip(QStringLiteral("PyTorch MinMaxObserver: the running max |x| over every batch so far"));
  m_useMovAvg = new QCheckBox(QStringLiteral("moving avg"));
  m_useMovAvg->setToolTip(QStringLiteral("PyTorch MovingAverageMinMaxObserver: range += c · (batch range − range)"));
  m_movAvgC = new QDoubleSpinBox;
  m_movAvgC->setRange(0.0001, 1);
  m_movAvgC->setDecimals(4);
  m_movAvgC->setSingleStep(0.01);
  m_movAvgC->setPrefix(QStringLiteral("c = "));
  m_usePercentile = new QCheckBox(QStringLiteral("percentile"));
  m_usePercentile->setToolTip(QStringLiteral("Histogram percentile of |x| over the batches so far (outliers clipped)"));
  m_percentile = new QDoubleSpinBox;
  m_percentile->setRange(50, 100);
  m_percentile->setDecimals(3);
  m_percentile->setSuffix(QStringLiteral(" %"));
  m_useMse = new QCheckBox(QStringLiteral("MSE search"));
  m_useMse->setToolTip(QStringLiteral("The clip that minimises the quantization MSE of the histogram so far"));
  m_useDelayed = new QCheckBox(QStringLiteral("delayed"));
  m_useDelayed->setToolTip(QStringLiteral("Transformer Engine's delayed scaling: the batch is quantized with the scale "
                                          "from the amax history of the batches before it, then its amax is pushed"));
  m_history = new QSpinBox;
  m_history->setRange(1, 1024);
  m_history->setPrefix(QStringLiteral("history "));
  m_historyRule = new QComboBox;
  m_historyRule->addItems({QStringLiteral("max"), QStringLiteral("most recent")});
  m_margin = new QSpinBox;
  m_margin->setRange(-8, 8);
  m_margin->setPrefix(QStringLiteral("margin "));
  m_margin->setToolTip(QStringLiteral("scale = amax_history · 2^margin / max finite"));
  m_specLabel = new ElidedLabel;
  m_specLabel->setObjectName(QStringLiteral("observerSpec"));
  m_specLabel->setWordWrap(true);
  m_specLabel->setMaximumLines(3);
  m_specLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_specLabel->setToolTip(QStringLiteral("The same stream from the command line: quantscope-cli observe --observers …"));

  m_speedBox = new QComboBox;
  m_speedBox->setObjectName(QStringLiteral("observerSpeed"));
  for (int s : {2, 5, 20, 60, 0}) m_speedBox->addItem(s ? QStringLiteral("%1 batches / s").arg(s) : QStringLiteral("as fast as possible"), s);
  m_speedBox->setCurrentIndex(2);
  m_startButton = new QPushButton(QStringLiteral("Start"));
  m_startButton->setObjectName(QStringLiteral("observerStart"));
  m_pauseButton = new QPushButton(QStringLiteral("Pause"));
  m_pauseButton->setObjectName(QStringLiteral("observerPause"));
  m_pauseButton->setCheckable(true);
  m_stepButton = new QPushButton(QStringLiteral("Step"));
  m_stepButton->setObjectName(QStringLiteral("observerStep"));
  m_stepButton->setToolTip(QStringLiteral("One batch (pauses)"));
  QMenu* menu = nullptr;
  m_exportButton = plotexport::makeExportButton(&menu);
  m_exportButton->setObjectName(QStringLiteral("observerExport"));
  m_progress = new QProgressBar;
  m_progress->setFormat(QStringLiteral("batch %v / %m"));
  m_status = new ElidedLabel;
  m_status->setObjectName(QStringLiteral("observerStatus"));
  m_status->setWordWrap(true);
  m_status->setMaximumLines(4);

  auto* form = new QFormLayout;
  form->addRow(QStringLiteral("Format:"), m_format);
  form->addRow(QStringLiteral("Batches:"), m_batchCount);
  form->addRow(QStringLiteral("Data:"), m_source);
  form->addRow(QStringLiteral("Distribution:"), m_dist);
  form->addRow(QStringLiteral("Batch size:"), m_batchSize);
  form->addRow(QStringLiteral("Drift:"), m_drift);
  form->addRow(QStringLiteral("Spikes at:"), m_spikes);
  form->addRow(QStringLiteral("Spike size:"), m_spikeScale);
  form->addRow(QStringLiteral("Seed:"), m_seed);
  auto* obs = new QGridLayout;
  obs->addWidget(new QLabel(QStringLiteral("<b>Observers</b>")), 0, 0, 1, 3);
  obs->addWidget(m_useCurrent, 1, 0, 1, 3);
  obs->addWidget(m_useMinMax, 2, 0, 1, 3);
  obs->addWidget(m_useMovAvg, 3, 0);
  obs->addWidget(m_movAvgC, 3, 1, 1, 2);
  obs->addWidget(m_usePercentile, 4, 0);
  obs->addWidget(m_percentile, 4, 1, 1, 2);
  obs->addWidget(m_useMse, 5, 0, 1, 3);
  obs->addWidget(m_useDelayed, 6, 0);
  obs->addWidget(m_history, 6, 1, 1, 2);
  obs->addWidget(m_historyRule, 7, 1);
  obs->addWidget(m_margin, 7, 2);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(m_startButton);
  buttons->addWidget(m_pauseButton);
  buttons->addWidget(m_stepButton);
  auto* controls = new QVBoxLayout;
  controls->setContentsMargins(0, 0, 0, 0);
  controls->addLayout(form);
  controls->addLayout(obs);
  controls->addWidget(m_specLabel);
  controls->addWidget(m_speedBox);
  controls->addLayout(buttons);
  controls->addWidget(m_progress);
  controls->addWidget(m_status);
  controls->addWidget(m_exportButton);
  controls->addStretch(1);
  auto* sideContent = new QWidget;
  sideContent->setLayout(controls);
  sideContent->setFixedWidth(276);
  auto* side = new QScrollArea;  // scrolls on a short screen: the tab fits 1280 x 720
  side->setWidget(sideContent);
  side->setWidgetResizable(true);
  side->setFrameShape(QFrame::NoFrame);
  side->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  side->setFixedWidth(sideContent->width() + side->style()->pixelMetric(QStyle::PM_ScrollBarExtent));

  // The clip trajectory across the top (with the one legend), SQNR and clipped values side by side below:
  // two rows leave each plot room for its data at 1280 x 720.
  auto* plots = new QGridLayout;
  plots->setSpacing(4);
  const char* names[] = {"observerScalePlot", "observerSqnrPlot", "observerClippedPlot"};
  const char* yLabels[] = {"clip magnitude (log)", "SQNR of the batch (dB)", "clipped values (log)"};
  for (int i = 0; i < kPlotCount; ++i) {
    auto* p = new QCustomPlot;
    p->setObjectName(QString::fromLatin1(names[i]));
    p->setMinimumSize(i == int(Plot::Scale) ? 300 : 200, 130);
    plotstyle::addTitle(p, title(Plot(i)));
    p->xAxis->setLabel(QStringLiteral("batch"));
    p->yAxis->setLabel(QString::fromUtf8(yLabels[i]));
    for (QCPAxis* a : {p->xAxis, p->yAxis}) plotstyle::styleGrid(a);
    if (i != int(Plot::Sqnr)) {
      p->yAxis->setScaleType(QCPAxis::stLogarithmic);
      auto ticker = QSharedPointer<QCPAxisTickerLog>::create();
      p->yAxis->setTicker(ticker);
      p->yAxis->setNumberFormat(QStringLiteral("gb"));
    }
    plotstyle::styleLegend(p, 7);
    p->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    if (i == int(Plot::Scale)) {  // one legend for the three plots (the same colours), in a row under the first
      plotstyle::placeLegendBelow(p, 6);
      connect(p, &QCustomPlot::beforeReplot, p, [p] { p->legend->setVisible(p->legend->itemCount() > 0); });
    } else {
      p->legend->setVisible(false);
    }
    const Plot which = Plot(i);
    plotexport::installContextMenu(p, stem(which), [this] { return csv(); }, title(which));
    m_plots[i] = p;
    if (i == int(Plot::Scale)) plots->addWidget(p, 0, 0, 1, 2);
    else plots->addWidget(p, 1, i - 1);
  }
  m_plots[int(Plot::Scale)]->setWhatsThis(
      QStringLiteral("The clipping magnitude each observer chose for each batch (the scale is it over the format's "
                     "largest value); grey dots: the batch's own amax. An observer below the dots clips that batch."));
  m_plots[int(Plot::Sqnr)]->setWhatsThis(QStringLiteral("SQNR of each batch quantized with each observer's scale: a "
                                                        "spike the observer missed shows as a dip."));
  m_plots[int(Plot::Clipped)]->setWhatsThis(QStringLiteral("Values of each batch beyond the observer's clip (log scale; "
                                                           "no point: none clipped)."));

  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(10, 8, 10, 4);
  layout->addWidget(side);
  layout->addLayout(plots, 1);

  for (int i = 0; i < kPlotCount; ++i) {
    const Plot which = Plot(i);
    menu->addAction(title(which) + QStringLiteral("…"), this, [this, which] {
      plotexport::exportInteractive(this, plot(which), stem(which), [this] { return csv(); }, title(which));
    });
  }
  menu->addAction(QStringLiteral("Trajectories as CSV…"), this, [this] {
    plotexport::exportInteractive(this, plot(Plot::Scale), QStringLiteral("observers"), [this] { return csv(); },
                                  title(Plot::Scale), true);
  });

  connect(m_startButton, &QPushButton::clicked, this, [this] {
    QString why;
    if (!start(&why)) setStatus(why, true);
  });
  connect(m_pauseButton, &QPushButton::toggled, this, &ObserversPanel::setPaused);
  connect(m_stepButton, &QPushButton::clicked, this, &ObserversPanel::stepOnce);
  connect(m_speedBox, &QComboBox::currentIndexChanged, this, [this] { setSpeed(m_speedBox->currentData().toInt()); });
  const auto specChanged = [this] {
    m_specLabel->setText(QStringLiteral("observers: ") + observerSpecText());
  };
  for (QCheckBox* c : {m_useCurrent, m_useMinMax, m_useMovAvg, m_usePercentile, m_useMse, m_useDelayed})
    connect(c, &QCheckBox::toggled, this, specChanged);
  for (QDoubleSpinBox* b : {m_movAvgC, m_percentile}) connect(b, &QDoubleSpinBox::valueChanged, this, specChanged);
  for (QSpinBox* b : {m_history, m_margin}) connect(b, &QSpinBox::valueChanged, this, specChanged);
  connect(m_historyRule, &QComboBox::currentIndexChanged, this, specChanged);
  const auto sourceChanged = [this] {
    const bool synthetic = m_source->currentIndex() == 0;
    for (QWidget* w : std::initializer_list<QWidget*>{m_dist, m_batchSize, m_drift, m_spikes, m_spikeScale, m_seed})
      w->setEnabled(synthetic);
  };
  connect(m_source, &QComboBox::currentIndexChanged, this, sourceChanged);
}

QString ObserversPanel::title(Plot which) const {
  switch (which) {
    case Plot::Scale: return QStringLiteral("Clip magnitude per batch");
    case Plot::Sqnr: return QStringLiteral("SQNR per batch");
    case Plot::Clipped: return QStringLiteral("Clipped values per batch");
  }
  return {};
}

QString ObserversPanel::stem(Plot which) {
  switch (which) {
    case Plot::Scale: return QStringLiteral("observer-scale");
    case Plot::Sqnr: return QStringLiteral("observer-sqnr");
    case Plot::Clipped: return QStringLiteral("observer-clipped");
  }
  return {};
}

void ObserversPanel::syncControls(const Config& c) {
  m_format->setSpec(c.format);
  m_batchCount->setValue(c.batches);
  m_source->setCurrentIndex(c.fromTensor ? 1 : 0);
  m_dist->setCurrentIndex(std::max(0, m_dist->findData(int(c.stream.dist))));
  m_batchSize->setValue(int(c.stream.batch_size));
  m_drift->setValue(c.stream.drift * 100);
  QStringList spikes;
  for (uint64_t s : c.stream.spikes) spikes << QString::number(s);
  m_spikes->setText(spikes.join(u','));
  m_spikeScale->setValue(c.stream.spike_scale);
  m_seed->setValue(int(c.stream.seed));
  // Observer check boxes from the spec text (validated by setConfig before).
  for (QCheckBox* b : {m_useCurrent, m_useMinMax, m_useMovAvg, m_usePercentile, m_useMse, m_useDelayed}) b->setChecked(false);
  m_movAvgC->setValue(0.01);
  m_percentile->setValue(99.99);
  m_history->setValue(16);
  m_historyRule->setCurrentIndex(0);
  m_margin->setValue(0);
  for (const qs::ObserverSpec& s : qs::parse_observer_specs(c.observers.toStdString())) {
    switch (s.kind) {
      case qs::ObserverSpec::Kind::Current: m_useCurrent->setChecked(true); break;
      case qs::ObserverSpec::Kind::MinMax: m_useMinMax->setChecked(true); break;
      case qs::ObserverSpec::Kind::MovingAverage:
        m_useMovAvg->setChecked(true);
        m_movAvgC->setValue(s.param);
        break;
      case qs::ObserverSpec::Kind::Percentile:
        m_usePercentile->setChecked(true);
        m_percentile->setValue(s.param);
        break;
      case qs::ObserverSpec::Kind::Mse: m_useMse->setChecked(true); break;
      case qs::ObserverSpec::Kind::Delayed:
        m_useDelayed->setChecked(true);
        m_history->setValue(s.history);
        m_historyRule->setCurrentIndex(s.most_recent ? 1 : 0);
        m_margin->setValue(s.margin);
        break;
    }
  }
  m_specLabel->setText(QStringLiteral("observers: ") + observerSpecText());
}

QString ObserversPanel::observerSpecText() const {
  QStringList parts;
  if (m_useCurrent->isChecked()) parts << QStringLiteral("current");
  if (m_useMinMax->isChecked()) parts << QStringLiteral("minmax");
  if (m_useMovAvg->isChecked()) parts << QStringLiteral("movavg:%1").arg(m_movAvgC->value(), 0, 'g', 6);
  if (m_usePercentile->isChecked()) parts << QStringLiteral("p%1").arg(m_percentile->value(), 0, 'g', 8);
  if (m_useMse->isChecked()) parts << QStringLiteral("mse");
  if (m_useDelayed->isChecked())
    parts << QStringLiteral("delayed:%1:%2:%3")
                 .arg(m_history->value())
                 .arg(m_historyRule->currentIndex() == 1 ? QStringLiteral("recent") : QStringLiteral("max"))
                 .arg(m_margin->value());
  return parts.join(u',');
}

ObserversPanel::Config ObserversPanel::config() const {
  Config c;
  c.format = m_format->spec();
  c.observers = observerSpecText();
  c.batches = m_batchCount->value();
  c.fromTensor = m_source->currentIndex() == 1;
  c.stream.dist = qs::Distribution(m_dist->currentData().toInt());
  c.stream.batch_size = std::size_t(m_batchSize->value());
  c.stream.drift = m_drift->value() / 100;
  try {
    c.stream.spikes = qs::parse_batch_list(m_spikes->text().trimmed().toStdString());
  } catch (const std::exception&) {
    c.stream.spikes = {};  // start() reports it
  }
  c.stream.spike_scale = m_spikeScale->value();
  c.stream.seed = uint64_t(m_seed->value());
  return c;
}

bool ObserversPanel::setConfig(const Config& c, QString* error) {
  auto fail = [&](const QString& why) {
    if (error) *error = why;
    return false;
  };
  try {
    qs::parse_format(c.format.toStdString());
    if (qs::parse_observer_specs(c.observers.toStdString()).empty()) return fail(QStringLiteral("no observer chosen"));
  } catch (const std::exception& e) {
    return fail(QString::fromUtf8(e.what()));
  }
  if (c.batches < 1 || c.batches > 100000) return fail(QStringLiteral("batches must be in [1, 100000]"));
  if (c.stream.batch_size < 16 || c.stream.batch_size > (1u << 22)) return fail(QStringLiteral("batch size must be in [16, 4194304]"));
  if (!(std::abs(c.stream.drift) <= 0.5)) return fail(QStringLiteral("drift must be within ±50 % per batch"));
  if (!(c.stream.spike_scale > 0 && c.stream.spike_scale <= 1e6)) return fail(QStringLiteral("spike size must be in (0, 1e6]"));
  m_config = c;
  syncControls(c);
  return true;
}

void ObserversPanel::setTensor(const TensorData& tensor) {
  m_tensor = tensor;
  if (m_stream && m_config.fromTensor && isRunning()) start();
}

QStringList ObserversPanel::observerNames() const {
  QStringList out;
  for (const qs::ObserverSpec& s : m_specs) out << QString::fromStdString(s.text);
  return out;
}

bool ObserversPanel::batchOf(const Config& c, const TensorData& t, std::size_t batches, std::size_t b,
                             std::vector<float>* out, QString* error) {
  if (!c.fromTensor) {
    *out = qs::synthetic_batch(c.stream, b);
    return true;
  }
  const std::size_t rows = t.shape.empty() ? t.size() : std::size_t(t.shape[0]);
  if (t.isEmpty() || rows < batches) {
    if (error) *error = QStringLiteral("the current tensor has %1 rows: fewer than %2 batches").arg(rows).arg(batches);
    return false;
  }
  const std::size_t row = t.size() / rows;
  const std::size_t r0 = rows * b / batches, r1 = rows * (b + 1) / batches;
  out->assign(t.values->begin() + std::ptrdiff_t(r0 * row), t.values->begin() + std::ptrdiff_t(r1 * row));
  return true;
}

bool ObserversPanel::start(QString* error) {
  auto fail = [&](const QString& why) {
    if (error) *error = why;
    setStatus(why, true);
    return false;
  };
  Config c = config();
  try {
    c.stream.spikes = qs::parse_batch_list(m_spikes->text().trimmed().toStdString());
  } catch (const std::exception& e) {
    return fail(QStringLiteral("spikes: %1").arg(QString::fromUtf8(e.what())));
  }
  if (!m_format->isValid()) return fail(QStringLiteral("the format is not valid"));
  std::vector<qs::ObserverSpec> specs;
  try {
    specs = qs::parse_observer_specs(c.observers.toStdString());
  } catch (const std::exception& e) {
    return fail(QString::fromUtf8(e.what()));
  }
  if (c.observers.isEmpty()) return fail(QStringLiteral("choose at least one observer"));
  if (c.fromTensor) {
    const std::size_t rows = m_tensor.shape.empty() ? m_tensor.size() : std::size_t(m_tensor.shape[0]);
    if (m_tensor.isEmpty()) return fail(QStringLiteral("no tensor: open one in the Setup dock, or stream synthetic batches"));
    if (rows < std::size_t(c.batches))
      return fail(QStringLiteral("%1 has %2 rows: fewer than %3 batches").arg(m_tensor.name).arg(rows).arg(c.batches));
  }
  m_config = c;
  m_specs = specs;
  m_stream = std::make_shared<qs::ObserveStream>(m_format->format(), specs);
  ++m_generation;
  m_rows.clear();
  m_next = 0;
  m_batches = std::size_t(c.batches);
  m_credit = 0;
  clearPlots();
  m_progress->setRange(0, c.batches);
  m_progress->setValue(0);
  setPaused(m_pauseButton->isChecked());
  m_clock.start();
  m_timer.start();
  setStatus(QStringLiteral("Streaming %1 batches of %2 through %3 observers.")
                .arg(c.batches)
                .arg(c.fromTensor ? m_tensor.name : QString::fromLatin1(qs::distribution_name(c.stream.dist).data()))
                .arg(specs.size()));
  emit message(QStringLiteral("Observers: %1 batches, %2, observers %3").arg(c.batches).arg(c.format, c.observers));
  return true;
}

void ObserversPanel::setPaused(bool paused) {
  m_paused = paused;
  if (m_pauseButton->isChecked() != paused) {
    const QSignalBlocker block(m_pauseButton);
    m_pauseButton->setChecked(paused);
  }
  m_credit = 0;
  m_clock.restart();
}

void ObserversPanel::setSpeed(int batchesPerSecond) {
  m_speed = std::max(0, batchesPerSecond);
  const int i = m_speedBox->findData(m_speed);
  if (i >= 0 && i != m_speedBox->currentIndex()) {
    const QSignalBlocker block(m_speedBox);
    m_speedBox->setCurrentIndex(i);
  }
}

void ObserversPanel::stepOnce() {
  if (!isRunning()) {
    setPaused(true);
    if (!start()) return;
  }
  setPaused(true);
  launch();
}

bool ObserversPanel::runToEnd(int ms) {
  if (!isRunning()) return m_stream != nullptr;
  setSpeed(0);
  setPaused(false);
  QEventLoop loop;
  QTimer timeout;
  timeout.setSingleShot(true);
  connect(this, &ObserversPanel::finished, &loop, &QEventLoop::quit);
  connect(&timeout, &QTimer::timeout, &loop, &QEventLoop::quit);
  timeout.start(ms);
  if (isRunning()) loop.exec();
  return !isRunning();
}

void ObserversPanel::tick() {
  if (!isRunning() || m_paused) {
    m_clock.restart();
    return;
  }
  if (m_speed > 0) {
    m_credit += double(m_clock.restart()) / 1000.0 * m_speed;
    m_credit = std::min(m_credit, double(m_speed));  // after a stall, no burst
  }
  if (!m_work.isRunning() && (m_speed == 0 || m_credit >= 1)) {
    if (m_speed > 0) m_credit -= 1;
    launch();
  }
}

void ObserversPanel::launch() {
  if (m_work.isRunning() || !isRunning()) return;
  const std::shared_ptr<qs::ObserveStream> stream = m_stream;
  const Config c = m_config;
  const TensorData t = m_tensor;
  const std::size_t batches = m_batches, b = m_next;
  const int generation = m_generation;
  m_work.start([stream, c, t, batches, b, generation](JobRunner<std::monostate, BatchResult>::Sink& sink) {
    BatchResult r;
    r.generation = generation;
    std::vector<float> x;
    if (batchOf(c, t, batches, b, &x, &r.error)) r.rows = stream->step(x.data(), x.size());
    sink.setResult(std::move(r));
  });
}

void ObserversPanel::onBatchDone() {
  std::optional<BatchResult> got = m_work.takeResult();
  if (!got) {  // the batch threw: its message, as a batch's own error would show
    got.emplace();
    got->generation = m_generation;
    got->error = m_work.error();
  }
  const BatchResult r = std::move(*got);
  if (r.generation != m_generation) {  // a batch of a stream that was started again: dropped
    if (isRunning() && !m_paused && m_speed == 0) launch();
    return;
  }
  if (!r.error.isEmpty()) {
    m_timer.stop();
    m_rows.clear();  // they point into the stream's specs
    m_stream.reset();
    setStatus(r.error, true);
    return;
  }
  apply(r.rows);
  for (QCustomPlot* p : m_plots) p->replot(QCustomPlot::rpQueuedReplot);
  if (isRunning() && !m_paused && m_speed == 0) launch();  // as fast as possible: the next one at once
}

void ObserversPanel::apply(const std::vector<qs::ObserveRow>& rows) {
  const double b = double(m_next);
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const qs::ObserveRow& r = rows[k];
    m_plots[int(Plot::Scale)]->graph(int(k) + 1)->addData(b, r.clip > 0 ? r.clip : std::nan(""));
    m_plots[int(Plot::Sqnr)]->graph(int(k))->addData(b, std::isfinite(r.sqnr_db) ? r.sqnr_db : std::nan(""));
    m_plots[int(Plot::Clipped)]->graph(int(k))->addData(b, r.clipped ? double(r.clipped) : std::nan(""));
  }
  if (!rows.empty()) m_plots[int(Plot::Scale)]->graph(0)->addData(b, rows.front().batch_amax > 0 ? rows.front().batch_amax : std::nan(""));
  m_rows.insert(m_rows.end(), rows.begin(), rows.end());
  ++m_next;
  m_progress->setValue(int(m_next));
  for (QCustomPlot* p : m_plots) {
    p->xAxis->setRange(-0.5, std::max<double>(double(m_batches), 2.0) - 0.5);
    bool found = false;
    const QCPRange y = [&] {
      QCPRange r;
      bool any = false;
      for (int g = 0; g < p->graphCount(); ++g) {
        const QCPRange gr = p->graph(g)->getValueRange(found, QCP::sdBoth);
        if (!found) continue;
        r = any ? QCPRange(std::min(r.lower, gr.lower), std::max(r.upper, gr.upper)) : gr;
        any = true;
      }
      found = any;
      return r;
    }();
    if (found) {
      if (p->yAxis->scaleType() == QCPAxis::stLogarithmic)
        p->yAxis->setRange(y.lower / 1.5, y.upper * 1.5);
      else
        p->yAxis->setRange(y.lower - 1, y.upper + 1);
    }
  }
  if (!isRunning()) {
    m_timer.stop();
    // The summary: mean SQNR per observer, and the worst batch.
    QStringList parts;
    for (std::size_t k = 0; k < m_specs.size(); ++k) {
      double sum = 0, worst = INFINITY;
      std::size_t worstAt = 0, n = 0;
      uint64_t clipped = 0;
      for (const qs::ObserveRow& r : m_rows)
        if (r.observer == &m_stream->specs()[k]) {
          if (std::isfinite(r.sqnr_db)) sum += r.sqnr_db, ++n;
          if (r.sqnr_db < worst) worst = r.sqnr_db, worstAt = r.batch;
          clipped += r.clipped;
        }
      parts << QStringLiteral("%1: mean %2 dB, worst %3 dB at batch %4, %5 clipped")
                   .arg(QString::fromStdString(m_specs[k].text), errortext::decibel(n ? sum / double(n) : std::nan("")),
                        errortext::decibel(worst))
                   .arg(worstAt)
                   .arg(errortext::count(clipped));
    }
    setStatus(QStringLiteral("Done. ") + parts.join(QStringLiteral("; ")));
    emit message(QStringLiteral("Observers: ") + parts.join(QStringLiteral("; ")));
    emit finished();
  }
}

void ObserversPanel::clearPlots() {
  for (QCustomPlot* p : m_plots) {
    p->clearGraphs();
    p->xAxis->setRange(-0.5, std::max(m_batches, std::size_t(2)) - 0.5);
  }
  // Scale plot: the batch amax first (grey dots), then one line per observer; the other plots one per observer.
  QCPGraph* amax = m_plots[int(Plot::Scale)]->addGraph();
  amax->setName(QStringLiteral("batch amax"));
  amax->setLineStyle(QCPGraph::lsNone);
  amax->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, QColor(150, 150, 150), 4));
  amax->setPen(QPen(QColor(150, 150, 150)));
  for (std::size_t k = 0; k < m_specs.size(); ++k)
    for (QCustomPlot* p : m_plots) {
      QCPGraph* g = p->addGraph();
      g->setName(QString::fromStdString(m_specs[k].text));
      QPen pen(palette::color(int(k)), 1.6);
      if (m_specs[k].kind == qs::ObserverSpec::Kind::Delayed) pen.setStyle(Qt::DashLine);
      g->setPen(pen);
      if (p == m_plots[int(Plot::Clipped)]) {
        g->setLineStyle(QCPGraph::lsNone);
        g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, palette::color(int(k)), 4));
      }
    }
  for (QCustomPlot* p : m_plots) p->replot(QCustomPlot::rpQueuedReplot);
}

void ObserversPanel::setStatus(const QString& text, bool error) {
  m_status->setStyleSheet(error ? theme::errorCss(this) : QString());
  m_status->setText(text);
}

QString ObserversPanel::statusText() const { return m_status->text(); }

QByteArray ObserversPanel::csv() const {
  QByteArray out("batch,observer,batch_amax,clip,scale,sqnr_db,clipped\n");
  for (const qs::ObserveRow& r : m_rows)
    out += QByteArray::number(qulonglong(r.batch)) + ',' + QByteArray::fromStdString(qs::csv_field(r.observer->text)) + ',' +
           plotexport::number(r.batch_amax) + ',' + plotexport::number(r.clip) + ',' + plotexport::number(r.scale) + ',' +
           plotexport::number(r.sqnr_db) + ',' + QByteArray::number(qulonglong(r.clipped)) + '\n';
  return out;
}

bool ObserversPanel::exportAll(const QString& dir, QString* error) {
  for (int i = 0; i < kPlotCount; ++i) {
    const Plot which = Plot(i);
    if (!plotexport::exportAll(plot(which), dir, stem(which), [this] { return csv(); }, title(which), error, QSize(1200, 500)))
      return false;
  }
  return true;
}

QString ObserversPanel::reportStage() const { return QString(); }

bool ObserversPanel::writeReportSection(const ReportSection::Context& ctx, QString* error) {
  // The stream, when one ran.
  if (batchesDone() == 0) return true;
  if (!exportAll(ctx.dir, error)) return false;
  ctx.message(QStringLiteral("report: observer trajectories written"));
  return true;
}
