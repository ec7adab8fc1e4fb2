// TrainingPanel: controls, the run on a JobRunner (pause = QFuture suspension checked between steps,
// stop = cancel), whose coalesced rowsReady turns streamed StepMetrics into curves, the run
// list, comparison presets, exports and the report's flip-counts run.
// Exercise: the Training tab of `quantscope`, `QT_QPA_PLATFORM=offscreen ./build/tests/tst_trainingpanel`.
#include "trainingpanel.h"
#include "shared/palette.h"
#include "shared/theme.h"

#include "shared/plotstyle.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QEventLoop>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QPainter>
#include <QPixmap>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QStyle>
#include <QToolButton>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <qcustomplot.h>

#include <cmath>
#include <exception>

#include "codeusagemap.h"
#include "cuda/device.h"
#include "cuda/train_cuda.cuh"
#include "shared/elidedlabel.h"
#include "shared/plotexport.h"
#include "train/dataset.h"
#include "trainingrun.h"

namespace {

// Data sets are loaded once per process (on a worker thread) and shared by every run.
std::shared_ptr<const qs::DataSplit> cachedData(bool synthetic) {
  static QMutex mutex;
  static std::shared_ptr<const qs::DataSplit> fashion, synth;
  QMutexLocker lock(&mutex);
  auto& slot = synthetic ? synth : fashion;
  if (!slot)
    slot = std::make_shared<const qs::DataSplit>(synthetic ? qs::make_synthetic_dataset(6000, 1000, 1) : qs::load_fashion_mnist());
  return slot;
}

QString runName(int id, const qs::TrainConfig& c) {
  // Names go into legends, plot titles and the status line: a long custom spec is shortened here.
  QString w = elide::middle(QString::fromStdString(c.weights), 40), a = elide::middle(QString::fromStdString(c.acts), 40);
  if (c.optimizer == qs::OptimizerKind::Grid && w.isEmpty()) w = QStringLiteral("e4m3fn");
  QString name = QStringLiteral("#%1 %2").arg(id).arg(QString::fromLatin1(qs::to_string(c.optimizer)));
  if (w.isEmpty() && a.isEmpty()) return name + QStringLiteral(" fp32");
  name += u' ' + (w.isEmpty() ? QStringLiteral("fp32") : w);
  if (!a.isEmpty()) name += QStringLiteral(" / acts ") + a;
  if (c.rounding == qs::Rounding::Stochastic) name += QStringLiteral(" sr");
  if (c.scaling == qs::ScalingMode::Delayed) name += QStringLiteral(" delayed");
  return name;
}

QIcon swatch(const QColor& c) {
  QPixmap p(12, 12);
  p.fill(c);
  return QIcon(p);
}

QComboBox* schemeCombo(const QString& tip) {
  auto* c = new QComboBox;
  c->setEditable(true);
  c->setInsertPolicy(QComboBox::NoInsert);
  c->addItem(QString());
  for (const char* s : {"e4m3fn/tensor", "e5m2/tensor", "int8/tensor", "int8/channel:0", "e2m1fn/block:32:e8m0fnu",
                        "e2m1fn/block:16:e4m3fn", "e3m2fn/block:32:e8m0fnu", "bf16/tensor"})
    c->addItem(QString::fromLatin1(s));
  c->lineEdit()->setPlaceholderText(QStringLiteral("fp32"));
  c->setToolTip(tip);
  return c;
}

}  // namespace

TrainingPanel::TrainingPanel(QWidget* parent) : QWidget(parent) {
  m_plots = new TrainingPlots(&m_runs);
  buildUi();
  connect(&m_job, &JobRunnerBase::rowsReady, this, &TrainingPanel::flush);
  connect(&m_job, &JobRunnerBase::progressRangeChanged, m_progress, &QProgressBar::setRange);
  connect(&m_job, &JobRunnerBase::progressValueChanged, m_progress, &QProgressBar::setValue);
  connect(&m_job, &JobRunnerBase::finished, this, &TrainingPanel::onFinished);
}

// Quitting waits for a layer, not for a whole step: the cancel flag reaches Trainer::run, and a
// suspended worker is woken.
TrainingPanel::~TrainingPanel() { m_job.cancelAndWait(); }

void TrainingPanel::buildUi() {
  m_dataset = new QComboBox;
  m_dataset->setObjectName(QStringLiteral("datasetCombo"));
  m_dataset->addItem(QStringLiteral("Fashion-MNIST"), false);
  m_dataset->addItem(QStringLiteral("Synthetic (6000 images)"), true);
  if (!fashionMnistAvailable()) {
    // Disabled with the install hint; the synthetic set keeps the demo running.
    auto* model = qobject_cast<QStandardItemModel*>(m_dataset->model());
    if (QStandardItem* item = model ? model->item(0) : nullptr) {
      item->setEnabled(false);
      item->setToolTip(QString::fromUtf8(qs::fashion_mnist_install_hint()));
    }
    m_dataset->setCurrentIndex(1);
  }
  m_epochs = new QSpinBox;
  m_epochs->setObjectName(QStringLiteral("epochsSpin"));
  m_epochs->setRange(1, 1000);
  m_epochs->setValue(15);
  m_batch = new QSpinBox;
  m_batch->setObjectName(QStringLiteral("batchSpin"));
  m_batch->setRange(1, 65536);
  m_batch->setValue(128);
  m_lr = new QLineEdit;
  m_lr->setObjectName(QStringLiteral("lrEdit"));
  m_lr->setPlaceholderText(QStringLiteral("default"));
  m_lr->setToolTip(QStringLiteral("Learning rate; empty: adam 0.001, sgd 0.05, grid 6 (GridOptim's rungs per unit velocity)"));
  m_optimizer = new QComboBox;
  m_optimizer->setObjectName(QStringLiteral("optimizerCombo"));
  m_optimizer->addItems({QStringLiteral("adam"), QStringLiteral("sgd"), QStringLiteral("grid")});
  m_optimizer->setToolTip(QStringLiteral("grid: GridOptim keeps every weight on the grid of the weight format (default e4m3fn)"));
  m_weights = schemeCombo(QStringLiteral("Weight scheme (empty: fp32). With grid: the grid's format"));
  m_weights->setObjectName(QStringLiteral("weightsCombo"));
  m_acts = schemeCombo(QStringLiteral("Activation scheme for every layer's input (empty: fp32)"));
  m_acts->setObjectName(QStringLiteral("actsCombo"));
  m_rounding = new QComboBox;
  m_rounding->setObjectName(QStringLiteral("roundingCombo"));
  m_rounding->addItems({QStringLiteral("nearest"), QStringLiteral("stochastic")});
  m_scaling = new QComboBox;
  m_scaling->setObjectName(QStringLiteral("scalingCombo"));
  m_scaling->addItems({QStringLiteral("current"), QStringLiteral("delayed")});
  m_scaling->setToolTip(QStringLiteral("delayed: the scale comes from the amax history of the last 16 steps (/tensor schemes)"));
  m_steZero = new QCheckBox(QStringLiteral("STE: zero gradient if clipped"));
  m_steZero->setObjectName(QStringLiteral("steZeroCheck"));
  m_device = new QComboBox;
  m_device->setObjectName(QStringLiteral("deviceCombo"));
  m_device->addItems({QStringLiteral("CPU"), QStringLiteral("GPU (CUDA)")});
  {
    const qs::cuda::DeviceInfo& d = qs::cuda::device_info();
    auto* model = qobject_cast<QStandardItemModel*>(m_device->model());
    if (QStandardItem* gpu = model ? model->item(1) : nullptr) {
      gpu->setEnabled(d.available);
      gpu->setToolTip(d.available ? QStringLiteral("Train on %1: the CPU lab's run bit for bit (fp32, fake "
                                                   "quantization, the optimizers), or int8 layers")
                                        .arg(QString::fromStdString(d.name))
                                  : QString::fromStdString(d.message));
      if (d.available) gpu->setText(QStringLiteral("GPU: %1").arg(QString::fromStdString(d.name)));
    }
    m_device->setToolTip(d.available ? QStringLiteral("Where runs train") : QString::fromStdString(d.message));
  }
  m_int8 = new QCheckBox(QStringLiteral("int8 layers (GPU)"));
  m_int8->setObjectName(QStringLiteral("int8Check"));
  m_int8->setToolTip(QStringLiteral("int8 linear layers: activations per tensor and weights per channel quantized in "
                                    "every forward, int8 GEMM, float32 backward (no weight / activation scheme)"));
  m_int8->setEnabled(false);
  connect(m_device, &QComboBox::currentIndexChanged, this, [this](int i) { m_int8->setEnabled(i == 1); });
  m_seed = new QSpinBox;
  m_seed->setObjectName(QStringLiteral("seedSpin"));
  m_seed->setRange(0, 1'000'000);
  m_seed->setValue(1);

  m_startButton = new QPushButton(QStringLiteral("Start"));
  m_startButton->setObjectName(QStringLiteral("startButton"));
  m_pauseButton = new QPushButton(QStringLiteral("Pause"));
  m_pauseButton->setObjectName(QStringLiteral("pauseButton"));
  m_pauseButton->setCheckable(true);
  m_pauseButton->setEnabled(false);
  m_stopButton = new QPushButton(QStringLiteral("Stop"));
  m_stopButton->setObjectName(QStringLiteral("stopButton"));
  m_stopButton->setEnabled(false);
  QMenu* menu = nullptr;
  m_exportButton = plotexport::makeExportButton(&menu);
  for (int p = 0; p < TrainingPlots::kPlotCount; ++p) {
    const Plot which = Plot(p);
    menu->addAction(m_plots->title(which).section(u',', 0, 0) + QStringLiteral("…"), this, [this, which] {
      plotexport::exportInteractive(this, plot(which), TrainingPlots::stem(which), [this, which] { return m_plots->csv(which); },
                                    m_plots->title(which));
    });
  }

  m_presetCombo = new QComboBox;
  m_presetCombo->setObjectName(QStringLiteral("presetCombo"));
  m_presetCombo->addItems(presetNames());
  m_presetCombo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);  // long names: elided
  m_presetCombo->setMinimumContentsLength(16);
  m_presetCombo->setToolTip(QStringLiteral("Runs one after another with the epochs, batch, seed and data set above"));
  m_presetButton = new QPushButton(QStringLiteral("Run comparison"));
  m_presetButton->setObjectName(QStringLiteral("presetButton"));

  m_progress = new QProgressBar;
  m_progress->setObjectName(QStringLiteral("trainProgress"));
  m_progress->setRange(0, 1);
  m_progress->setValue(0);
  m_progress->setFormat(QStringLiteral("step %v / %m"));
  m_status = new ElidedLabel(fashionMnistAvailable()
                            ? QStringLiteral("Configure a run and press Start.")
                            : QStringLiteral("Fashion-MNIST is not installed (sudo apt-get install dataset-fashion-mnist): "
                                             "the synthetic set is selected."));
  m_status->setObjectName(QStringLiteral("trainStatus"));
  m_status->setWordWrap(true);  // run names and error messages quote what was typed: never widen the tab
  m_status->setMaximumLines(4);
  m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);

  m_runList = new QListWidget;
  m_runList->setObjectName(QStringLiteral("runList"));
  m_runList->setToolTip(QStringLiteral("Tick to show a run; select one for the heatmap"));
  m_clearButton = new QPushButton(QStringLiteral("Clear runs"));
  m_clearButton->setObjectName(QStringLiteral("clearButton"));

  auto* form = new QFormLayout;
  form->addRow(QStringLiteral("Data:"), m_dataset);
  form->addRow(QStringLiteral("Epochs:"), m_epochs);
  form->addRow(QStringLiteral("Batch:"), m_batch);
  form->addRow(QStringLiteral("Learning rate:"), m_lr);
  form->addRow(QStringLiteral("Optimizer:"), m_optimizer);
  form->addRow(QStringLiteral("Weights:"), m_weights);
  form->addRow(QStringLiteral("Activations:"), m_acts);
  form->addRow(QStringLiteral("Rounding:"), m_rounding);
  form->addRow(QStringLiteral("Scaling:"), m_scaling);
  form->addRow(m_steZero);  // both columns: the whole text shows in the side column
  form->addRow(QStringLiteral("Seed:"), m_seed);
  form->addRow(QStringLiteral("Device:"), m_device);
  form->addRow(m_int8);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(m_startButton);
  buttons->addWidget(m_pauseButton);
  buttons->addWidget(m_stopButton);
  // The comparison's name has the whole width; the button sits on the label's line.
  auto* presets = new QHBoxLayout;
  presets->addWidget(new QLabel(QStringLiteral("Comparisons:")));
  presets->addStretch(1);
  presets->addWidget(m_presetButton);
  auto* runButtons = new QHBoxLayout;
  runButtons->addWidget(m_clearButton);
  runButtons->addWidget(m_exportButton);

  auto* controls = new QVBoxLayout;
  controls->setContentsMargins(0, 0, 0, 0);
  controls->addLayout(form);
  controls->addLayout(buttons);
  controls->addWidget(m_progress);
  controls->addWidget(m_status);
  controls->addLayout(presets);
  controls->addWidget(m_presetCombo);
  controls->addWidget(new QLabel(QStringLiteral("Runs:")));
  controls->addWidget(m_runList, 1);
  controls->addLayout(runButtons);
  auto* sideContent = new QWidget;
  sideContent->setLayout(controls);
  sideContent->setFixedWidth(276);
  // The column of controls scrolls when the window is short, so the tab fits a 1280 x 720 screen.
  auto* side = new QScrollArea;
  side->setWidget(sideContent);
  side->setWidgetResizable(true);
  side->setFrameShape(QFrame::NoFrame);
  side->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  side->setFixedWidth(sideContent->width() + side->style()->pixelMetric(QStyle::PM_ScrollBarExtent));

  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(10, 8, 10, 4);
  layout->addWidget(side);
  layout->addWidget(m_plots, 1);

  connect(m_startButton, &QPushButton::clicked, this, [this] { start(); });
  connect(m_pauseButton, &QPushButton::toggled, this, &TrainingPanel::setPaused);
  connect(m_stopButton, &QPushButton::clicked, this, &TrainingPanel::stop);
  connect(m_clearButton, &QPushButton::clicked, this, &TrainingPanel::clearRuns);
  connect(m_presetButton, &QPushButton::clicked, this, [this] { runPreset(m_presetCombo->currentIndex()); });
  connect(m_runList, &QListWidget::itemChanged, this, [this](QListWidgetItem* item) {
    const int id = item->data(Qt::UserRole).toInt();
    for (auto& r : m_runs)
      if (r->id == id && r->visible != (item->checkState() == Qt::Checked)) {
        r->visible = item->checkState() == Qt::Checked;
        m_plots->setRunVisible(*r, r->visible);
        m_plots->rescale();
        m_plots->replotAll();
      }
  });
  connect(m_runList, &QListWidget::currentItemChanged, this, [this] {
    m_plots->setCodeUsageRun(currentHeatmapRun());
  });
}

QStringList TrainingPanel::presetNames() {
  return {QStringLiteral("Nearest vs stochastic rounding (E4M3FN, Adam)"), QStringLiteral("GridOptim vs STE with Adam (E4M3FN)"),
          QStringLiteral("E4M3FN vs E5M2 weights (Adam, STE)"), QStringLiteral("8-bit sweep on the grid (GridOptim)")};
}

bool TrainingPanel::fashionMnistAvailable() { return qs::fashion_mnist_present(qs::default_fashion_mnist_dir()); }

bool TrainingPanel::gpuSelected() const { return m_device->currentIndex() == 1; }

bool TrainingPanel::syntheticSelected() const { return m_dataset->currentData().toBool(); }

bool TrainingPanel::isPaused() const { return m_job.isPaused(); }

QString TrainingPanel::statusText() const { return m_status->text(); }

qs::TrainConfig TrainingPanel::config(QString* error) const {
  qs::TrainConfig c;
  c.epochs = m_epochs->value();
  c.batch = m_batch->value();
  const QString lr = m_lr->text().trimmed();
  if (!lr.isEmpty()) {
    bool ok = false;
    c.lr = lr.toDouble(&ok);
    if (!ok || !(c.lr > 0) || !std::isfinite(c.lr)) {
      if (error) *error = QStringLiteral("learning rate '%1' is not a positive number").arg(lr);
      return {};
    }
  }
  c.optimizer = qs::parse_optimizer(m_optimizer->currentText().toStdString());
  c.weights = m_weights->currentText().trimmed().toStdString();
  c.acts = m_acts->currentText().trimmed().toStdString();
  c.rounding = m_rounding->currentIndex() == 1 ? qs::Rounding::Stochastic : qs::Rounding::Nearest;
  c.scaling = m_scaling->currentIndex() == 1 ? qs::ScalingMode::Delayed : qs::ScalingMode::Current;
  c.ste_zero_clipped = m_steZero->isChecked();
  c.seed = uint64_t(m_seed->value());
  c.int8 = gpuSelected() && m_int8->isChecked();
  try {
    qs::validate(c);
  } catch (const std::exception& e) {
    if (error) *error = QString::fromUtf8(e.what());
    return {};
  }
  if (error) error->clear();
  return c;
}

void TrainingPanel::setConfig(const qs::TrainConfig& c, bool synthetic) {
  m_dataset->setCurrentIndex(synthetic || !fashionMnistAvailable() ? 1 : 0);
  m_epochs->setValue(c.epochs);
  m_batch->setValue(c.batch);
  m_lr->setText(c.lr > 0 ? QString::number(c.lr) : QString());
  m_optimizer->setCurrentText(QString::fromLatin1(qs::to_string(c.optimizer)));
  m_weights->setEditText(QString::fromStdString(c.weights));
  m_acts->setEditText(QString::fromStdString(c.acts));
  m_rounding->setCurrentIndex(c.rounding == qs::Rounding::Stochastic ? 1 : 0);
  m_scaling->setCurrentIndex(c.scaling == qs::ScalingMode::Delayed ? 1 : 0);
  m_steZero->setChecked(c.ste_zero_clipped);
  m_seed->setValue(int(std::min<uint64_t>(c.seed, 1'000'000)));
  m_int8->setChecked(c.int8);
}

void TrainingPanel::showStatus(const QString& text, bool error) {
  m_status->setStyleSheet(error ? theme::errorCss(this) : QString());
  m_status->setText(text);
}

bool TrainingPanel::start() {
  QString error;
  const qs::TrainConfig c = config(&error);
  if (!error.isEmpty()) {
    showStatus(error, true);
    return false;
  }
  return startRun(c, syntheticSelected());
}

bool TrainingPanel::startRun(const qs::TrainConfig& cfgIn, bool synthetic) {
  if (isRunning()) {
    showStatus(QStringLiteral("A run is in progress: stop it first"), true);
    return false;
  }
  try {
    qs::validate(cfgIn);
  } catch (const std::exception& e) {
    showStatus(QString::fromUtf8(e.what()), true);
    return false;
  }
  if (!synthetic && !fashionMnistAvailable()) {
    showStatus(QStringLiteral("Fashion-MNIST is not installed: %1").arg(QString::fromUtf8(qs::fashion_mnist_install_hint())), true);
    return false;
  }
  if (gpuSelected()) {  // no device (or no CUDA build): one line, nothing started
    if (const std::string why = qs::cuda::training_unsupported(cfgIn); !why.empty()) {
      showStatus(QStringLiteral("GPU training: %1").arg(QString::fromStdString(why)), true);
      return false;
    }
  } else if (cfgIn.int8) {
    showStatus(QStringLiteral("int8 layers train on the GPU: choose the GPU as the device"), true);
    return false;
  }
  auto run = std::make_unique<TrainingRun>();
  run->id = m_nextId++;
  run->config = cfgIn;
  run->name = runName(run->id, cfgIn);
  if (cfgIn.int8) run->name = QStringLiteral("#%1 %2 int8 layers").arg(run->id).arg(QString::fromLatin1(qs::to_string(cfgIn.optimizer)));
  const bool gpu = gpuSelected();
  if (gpu) run->name += QStringLiteral(" (GPU)");
  run->dataset = synthetic ? QStringLiteral("synthetic") : QStringLiteral("fashion-mnist");
  run->color = palette::color(run->id - 1);
  run->status = QStringLiteral("running");
  const std::string wf = cfgIn.weight_format_name();
  if (!wf.empty()) {
    run->format = qs::parse_format(wf);
    run->hasFormat = run->format.bits <= 8;  // a heatmap row per code: 8-bit formats at most
  }
  m_plots->addRun(*run);
  auto* item = new QListWidgetItem(swatch(run->color), run->name, m_runList);
  item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsUserCheckable);
  item->setCheckState(Qt::Checked);
  item->setData(Qt::UserRole, run->id);
  m_active = run.get();
  m_runs.push_back(std::move(run));
  m_runList->setCurrentItem(item);
  m_plots->setCodeUsageRun(m_active);

  const qs::TrainConfig cfg = cfgIn;
  const bool wantHistograms = m_active->hasFormat;
  using Job = JobRunner<qs::StepMetrics, qs::TrainResult>;
  auto job = [cfg, synthetic, wantHistograms, gpu](Job::Sink& sink) {
    const std::shared_ptr<const qs::DataSplit> data = cachedData(synthetic);
    qs::TrainConfig c = cfg;
    const uint64_t total = uint64_t(c.epochs) * ((data->train->size() + uint64_t(c.batch) - 1) / uint64_t(c.batch));
    c.histogram_every = wantHistograms ? int(std::max<uint64_t>(1, total / 300)) : 0;  // about 300 heatmap columns
    auto on_step = [&](qs::StepMetrics m) {
      const int step = int(m.step);
      sink.post(std::move(m));
      sink.setProgressValue(step);
      sink.suspendIfRequested();  // Pause
      return !sink.isCanceled();  // Stop
    };
    if (gpu) {  // the same loop, metrics and callback on the device (cuda/train_cuda.cuh)
      sink.setProgressRange(0, int(std::min<uint64_t>(total, INT32_MAX)));
      sink.setResult(qs::cuda::train_cuda(c, data->train, data->test, on_step, sink.cancelFlag()));
      return;
    }
    qs::Trainer trainer(c, data->train, data->test);
    sink.setProgressRange(0, int(std::min<uint64_t>(total, INT32_MAX)));
    // Stop within the step in progress (a large batch's step can take seconds)
    sink.setResult(trainer.run(on_step, sink.cancelFlag()));
  };
  m_stopping = false;
  m_progress->setRange(0, 1);
  m_progress->setValue(0);
  setControlsRunning(true);
  showStatus(QStringLiteral("%1: loading data and starting…").arg(m_active->name));
  m_job.start(job);
  emit runStarted(m_active->id);
  return true;
}

void TrainingPanel::setPaused(bool paused) {
  if (!isRunning() || m_stopping) {
    const QSignalBlocker block(m_pauseButton);
    m_pauseButton->setChecked(false);
    return;
  }
  m_job.setPaused(paused);
  {
    const QSignalBlocker block(m_pauseButton);
    m_pauseButton->setChecked(paused);
  }
  m_pauseButton->setText(paused ? QStringLiteral("Resume") : QStringLiteral("Pause"));
  if (m_active) {
    m_active->status = paused ? QStringLiteral("paused") : QStringLiteral("running");
    updateRunItem(*m_active);
    showStatus(paused ? QStringLiteral("%1: paused at step %2").arg(m_active->name).arg(m_active->steps.size())
                      : QStringLiteral("%1: running…").arg(m_active->name));
  }
}

void TrainingPanel::stop() {
  m_queue.clear();
  if (!isRunning() || m_stopping) return;
  m_stopping = true;
  m_stopButton->setEnabled(false);
  m_pauseButton->setEnabled(false);
  showStatus(QStringLiteral("Stopping…"));
  m_job.cancel();  // ends the step in progress between two layers; wakes a paused worker too
}

void TrainingPanel::flush() {
  const std::vector<qs::StepMetrics> steps = m_job.takeRows();
  if (!m_active || steps.empty()) return;
  const std::size_t from = m_active->steps.size();
  for (const qs::StepMetrics& m : steps) m_active->append(m);
  m_plots->appendData(*m_active, from);
  if (currentHeatmapRun() == m_active) m_plots->setCodeUsageRun(m_active);
  m_plots->rescale();
  m_plots->replotAll();
  const qs::StepMetrics& last = steps.back();
  const QString test = m_active->testAcc.empty() ? QString() : QStringLiteral(", test acc %1").arg(m_active->testAcc.back(), 0, 'f', 4);
  if (!m_stopping && !isPaused())
    showStatus(QStringLiteral("%1: epoch %2/%3, step %4, loss %5%6")
                   .arg(m_active->name)
                   .arg(last.epoch)
                   .arg(m_active->config.epochs)
                   .arg(last.step)
                   .arg(m_active->lossEma.back(), 0, 'f', 4)
                   .arg(test));
  emit stepsAppended(m_active->id, int(m_active->steps.size()));
}

void TrainingPanel::onFinished() {  // the last steps are drawn already (JobRunner's final rowsReady)
  setControlsRunning(false);
  TrainingRun* r = m_active;
  m_active = nullptr;
  if (!r) return;
  const QString error = m_job.error();
  const std::optional<qs::TrainResult> outcome = m_job.result();
  const bool done = outcome.has_value();
  const qs::TrainResult result = outcome.value_or(qs::TrainResult{});
  r->finished = true;
  bool failed = false;
  if (error.isEmpty() && !done && m_stopping) {
    // Stopped before the job even started (QtConcurrent skips a task whose future is already cancelled):
    // a stop with no steps, not a failure.
    r->status = QString::fromLatin1(qs::to_string(qs::TrainResult::Status::Stopped));
    showStatus(QStringLiteral("%1 stopped before its first step").arg(r->name));
  } else if (!error.isEmpty() || !done) {
    r->status = QStringLiteral("failed: ") + (error.isEmpty() ? QStringLiteral("no result") : error);
    showStatus(QStringLiteral("%1 failed: %2").arg(r->name, error), true);
    failed = true;
  } else {
    r->finalTestAcc = result.test_acc;
    r->status = QString::fromLatin1(qs::to_string(result.status));
    const QString acc = QStringLiteral("test accuracy %1").arg(result.test_acc, 0, 'f', 4);
    if (result.status == qs::TrainResult::Status::Diverged) {
      showStatus(QStringLiteral("%1 diverged: %2 (its steps are kept)").arg(r->name, QString::fromStdString(result.message)), true);
      failed = true;
    } else if (result.status == qs::TrainResult::Status::Stopped) {
      showStatus(QStringLiteral("%1 stopped after %2 steps: %3").arg(r->name).arg(result.steps).arg(acc));
    } else {
      showStatus(QStringLiteral("%1 finished in %2 s: %3").arg(r->name).arg(result.seconds, 0, 'f', 1).arg(acc));
    }
  }
  updateRunItem(*r);
  m_plots->setCodeUsageRun(currentHeatmapRun());
  m_plots->rescale();
  m_plots->replotAll();
  const bool stopped = m_stopping;
  m_stopping = false;
  emit runFinished(r->id, r->status);
  if (!stopped && !failed) startNextQueued();
  else m_queue.clear();
}

void TrainingPanel::updateRunItem(const TrainingRun& r) {
  for (int i = 0; i < m_runList->count(); ++i) {
    QListWidgetItem* item = m_runList->item(i);
    if (item->data(Qt::UserRole).toInt() != r.id) continue;
    QString text = r.name;
    if (r.finished && r.finalTestAcc >= 0) text += QStringLiteral("  (%1, acc %2)").arg(r.status).arg(r.finalTestAcc, 0, 'f', 4);
    else if (r.status != u"running") text += QStringLiteral("  (%1)").arg(r.status);
    const QSignalBlocker block(m_runList);
    item->setText(text);
    item->setToolTip(r.status);
  }
}

TrainingRun* TrainingPanel::currentHeatmapRun() const {
  if (QListWidgetItem* item = m_runList->currentItem()) {
    const int id = item->data(Qt::UserRole).toInt();
    for (const auto& r : m_runs)
      if (r->id == id) return r.get();
  }
  return m_active;
}

void TrainingPanel::setControlsRunning(bool running) {
  m_startButton->setEnabled(!running);
  m_presetButton->setEnabled(!running);
  m_clearButton->setEnabled(!running);
  m_pauseButton->setEnabled(running);
  m_stopButton->setEnabled(running);
  if (!running) {
    const QSignalBlocker block(m_pauseButton);
    m_pauseButton->setChecked(false);
    m_pauseButton->setText(QStringLiteral("Pause"));
  }
}

void TrainingPanel::clearRuns() {
  if (isRunning()) {
    showStatus(QStringLiteral("Stop the run before clearing"), true);
    return;
  }
  m_plots->clear();
  m_runList->clear();
  m_runs.clear();
  m_plots->replotAll();
  showStatus(QStringLiteral("Runs cleared."));
}

void TrainingPanel::runPreset(int index) {
  QString error;
  const qs::TrainConfig base = config(&error);
  if (!error.isEmpty()) {
    showStatus(error, true);
    return;
  }
  const bool synthetic = syntheticSelected();
  auto with = [&](auto&& edit) {
    qs::TrainConfig c = base;
    c.lr = 0;
    c.weights.clear();
    c.acts.clear();
    c.rounding = qs::Rounding::Nearest;
    c.scaling = qs::ScalingMode::Current;
    edit(c);
    return Queued{c, synthetic};
  };
  QList<Queued> q;
  switch (index) {
    case 0:
      for (qs::Rounding r : {qs::Rounding::Nearest, qs::Rounding::Stochastic})
        q << with([r](qs::TrainConfig& c) { c.optimizer = qs::OptimizerKind::Adam; c.weights = c.acts = "e4m3fn"; c.rounding = r; });
      break;
    case 1:
      q << with([](qs::TrainConfig& c) { c.optimizer = qs::OptimizerKind::Grid; c.weights = "e4m3fn"; });
      q << with([](qs::TrainConfig& c) { c.optimizer = qs::OptimizerKind::Adam; c.weights = "e4m3fn"; });
      break;
    case 2:
      for (const char* f : {"e4m3fn", "e5m2"})
        q << with([f](qs::TrainConfig& c) { c.optimizer = qs::OptimizerKind::Adam; c.weights = f; });
      break;
    case 3:
      for (const std::string& f : qs::sweep_8bit_specs())
        q << with([f](qs::TrainConfig& c) { c.optimizer = qs::OptimizerKind::Grid; c.weights = f; });
      break;
    default:
      showStatus(QStringLiteral("No such comparison"), true);
      return;
  }
  if (isRunning()) {
    showStatus(QStringLiteral("A run is in progress: stop it first"), true);
    return;
  }
  m_queue = q;
  startNextQueued();
}

void TrainingPanel::startNextQueued() {
  if (m_queue.isEmpty()) return;
  const Queued next = m_queue.takeFirst();
  if (!startRun(next.config, next.synthetic)) m_queue.clear();
}

bool TrainingPanel::exportPlot(Plot which, const QString& path, QString* error) const {
  return plotexport::exportPlot(plot(which), path, [this, which] { return m_plots->csv(which); }, m_plots->title(which), error);
}

void TrainingPanel::exportInteractive() { m_exportButton->showMenu(); }

bool TrainingPanel::writeReport(const QString& dir, QString* error, bool* usedRuns) {
  bool trained = false;
  for (const auto& r : m_runs) trained |= !r->steps.empty();
  if (usedRuns) *usedRuns = trained;
  if (!trained) return writeFlipCountsReport(dir, error);
  for (int p = 0; p < TrainingPlots::kPlotCount; ++p) {
    const Plot which = Plot(p);
    if (!plotexport::exportAll(plot(which), dir, TrainingPlots::stem(which), [this, which] { return m_plots->csv(which); },
                               m_plots->title(which), error, QSize(1200, 700)))
      return false;
  }
  return true;
}

bool TrainingPanel::writeFlipCountsReport(const QString& dir, QString* error) {
  // Two seeded runs, computed off the GUI thread; the plot is built and written here.
  struct Out {
    std::vector<qs::StepMetrics> steps[2];
    qs::TrainConfig cfg[2];
    QString error;
  };
  auto out = std::make_shared<Out>();
  for (int i = 0; i < 2; ++i) {
    qs::TrainConfig& c = out->cfg[i];
    c.epochs = 8;
    c.batch = 64;  // 2000 images: 32 steps per epoch, 256 steps
    c.seed = 1;
    c.weights = "e4m3fn";
    c.optimizer = i == 0 ? qs::OptimizerKind::Adam : qs::OptimizerKind::Grid;
    c.evaluate_epochs = false;
  }
  QFutureWatcher<void> watcher;
  QEventLoop loop;
  QObject::connect(&watcher, &QFutureWatcher<void>::finished, &loop, &QEventLoop::quit);
  watcher.setFuture(QtConcurrent::run(JobRunnerBase::threadPool(), [out] {
    try {
      const qs::DataSplit data = qs::make_synthetic_dataset(2000, 500, 1);
      for (int i = 0; i < 2; ++i) {
        qs::Trainer t(out->cfg[i], data.train, data.test);
        t.run([&](qs::StepMetrics m) {
          out->steps[i].push_back(std::move(m));
          return true;
        });
      }
    } catch (const std::exception& e) {
      out->error = QString::fromUtf8(e.what());
    }
  }));
  if (!watcher.isFinished()) loop.exec();
  if (!out->error.isEmpty()) {
    if (error) *error = QStringLiteral("flip-counts: the training run failed: %1").arg(out->error);
    return false;
  }
  std::vector<std::unique_ptr<TrainingRun>> runs;
  TrainingPlots plots(&runs);
  plots.resize(1200, 700);
  for (int i = 0; i < 2; ++i) {
    auto r = std::make_unique<TrainingRun>();
    r->id = i + 1;
    r->config = out->cfg[i];
    r->name = i == 0 ? QStringLiteral("Adam + STE, E4M3FN weights") : QStringLiteral("GridOptim on the E4M3FN grid");
    r->color = palette::color(i);
    r->dataset = QStringLiteral("synthetic");
    for (const qs::StepMetrics& m : out->steps[i]) r->append(m);
    plots.addRun(*r);
    plots.appendData(*r, 0);
    runs.push_back(std::move(r));
  }
  plots.rescale();
  QCustomPlot* p = plots.plot(Plot::Flips);
  for (const auto& r : runs) {  // run colours in the legend, next to the layer key
    QCPGraph* key = p->addGraph();
    key->setPen(QPen(r->color, 2.0));
    key->setName(r->name);
  }
  if (auto* t = qobject_cast<QCPTextElement*>(p->plotLayout()->element(0, 0)))
    plotstyle::setText(t, QStringLiteral("Weights whose E4M3FN code changed, per step and layer (synthetic set, batch 64, seed 1)"));
  return plotexport::exportAll(p, dir, TrainingPlots::stem(Plot::Flips), [&plots] { return plots.csv(Plot::Flips); },
                               plots.title(Plot::Flips), error, QSize(1200, 700));
}

QString TrainingPanel::reportStage() const { return QStringLiteral("training figures"); }

bool TrainingPanel::writeReportSection(const ReportSection::Context& ctx, QString* error) {
  // The runs the user trained; a short synthetic run only when there are none.
  bool usedRuns = false;
  if (!writeReport(ctx.dir, error, &usedRuns)) return false;
  ctx.message(usedRuns ? QStringLiteral("report: the training tab's runs written")
                       : QStringLiteral("report: flip-counts written (a short synthetic run: no run was trained)"));
  return true;
}
